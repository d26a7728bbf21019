# Included by apps/CMakeLists.txt. Samples land in build/bin.
set(sample_root "${LLM_PROJECT_ROOT}/samples")
add_executable(llm_demo "${sample_root}/llm_demo.cpp")
target_link_libraries(llm_demo PRIVATE ${OpenCV_LIBS})
add_executable(llm_generate "${sample_root}/llm_generate.cpp")
target_link_libraries(llm_generate PRIVATE ${OpenCV_LIBS})
