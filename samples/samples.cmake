# Included by apps/CMakeLists.txt. Samples land in build/bin. All share one command-line style
# (samples/command_line.hpp: cv::CommandLineParser, --key=value).
set(sample_root "${LLM_PROJECT_ROOT}/samples")
foreach(sample llm_hello llm_generate llm_chatbot llm_parallel llm_bench llm_soak llm_rmsnorm_bench llm_vision_chat
               llm_matmul_bench)
  add_executable(${sample} "${sample_root}/${sample}.cpp")
  target_link_libraries(${sample} PRIVATE ${OpenCV_LIBS})
endforeach()
# It replaces malloc (allocation_counter.cpp), which cannot work with AddressSanitizer's
# allocator: not built with LLM_SANITIZE (doc/robustness.md), like llm_alloc_tests.
if(NOT LLM_SANITIZE)
  add_executable(llm_kv_bench "${sample_root}/llm_kv_bench.cpp" "${sample_root}/allocation_counter.cpp")
  target_link_libraries(llm_kv_bench PRIVATE ${OpenCV_LIBS})
endif()
