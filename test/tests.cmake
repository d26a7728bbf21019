# Included by apps/CMakeLists.txt. LLM_PROJECT_ROOT is the repository root.
include(GoogleTest)

set(test_root "${LLM_PROJECT_ROOT}/test")
set(test_models "${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/../test-models")  # build/test-models
set(opencv_python_dir "${OpenCV_DIR}/lib/python3")
# The shared test data (test.sh exports LLM_SHARED_TESTDATA; default: beside the project).
if(DEFINED ENV{LLM_SHARED_TESTDATA})
  set(shared_testdata "$ENV{LLM_SHARED_TESTDATA}")
else()
  set(shared_testdata "${LLM_PROJECT_ROOT}/../shared/testdata")
endif()

file(GLOB cpp_test_sources CONFIGURE_DEPENDS "${test_root}/cpp/*.cpp")
add_executable(llm_tests ${cpp_test_sources})
# llm_server_api: the server's request and tool-call reading (test_server_tool_calls.cpp).
target_link_libraries(llm_tests PRIVATE ${OpenCV_LIBS} llm_server_api GTest::gtest GTest::gtest_main)
target_compile_definitions(llm_tests PRIVATE LLM_SHARED_TESTDATA_DIR="${shared_testdata}")

# Data the tests make themselves (ONNX files with python3-onnx, ggml blocks, GGUF models with
# tools/gguf) before the C++ tests run.
add_test(NAME make_test_onnx_models
         COMMAND "${LLM_PYTHON}" "${test_root}/tools/make_test_onnx_models.py" "${test_models}")
set_tests_properties(make_test_onnx_models PROPERTIES FIXTURES_SETUP generated_test_data)
add_test(NAME make_quant_vectors
         COMMAND "${LLM_PYTHON}" "${LLM_PROJECT_ROOT}/tools/gguf/make_quant_vectors.py" "${test_models}/quant_vectors")
set_tests_properties(make_quant_vectors PROPERTIES FIXTURES_SETUP generated_test_data)
add_test(NAME make_synthetic_models
         COMMAND "${LLM_PYTHON}" "${test_root}/tools/make_synthetic_models.py" "${test_models}/synthetic")
set_tests_properties(make_synthetic_models PROPERTIES FIXTURES_SETUP generated_test_data
                     ENVIRONMENT "LLM_SHARED_TESTDATA=${shared_testdata}")
add_test(NAME make_vision_models
         COMMAND "${LLM_PYTHON}" "${test_root}/tools/make_vision_models.py" "${test_models}/vision")
set_tests_properties(make_vision_models PROPERTIES FIXTURES_SETUP "generated_test_data;vision_test_models")
add_test(NAME make_hf_tokenizers
         COMMAND "${LLM_PYTHON}" "${LLM_PROJECT_ROOT}/tools/tokenizer/gguf_vocab_to_tokenizer_json.py" --all
                 "${shared_testdata}/llama.cpp-vocab" "${test_models}/hf_tokenizers")
set_tests_properties(make_hf_tokenizers PROPERTIES FIXTURES_SETUP generated_test_data)
add_test(NAME make_tokenizer_vocabs
         COMMAND "${LLM_PYTHON}" "${LLM_PROJECT_ROOT}/tools/tokenizer/make_vocab_variants.py"
                 "${shared_testdata}/llama.cpp-vocab" "${test_models}/tokenizer_vocabs")
set_tests_properties(make_tokenizer_vocabs PROPERTIES FIXTURES_SETUP generated_test_data)

# Builder-style ONNX decoders (test/data/oracle/onnx/README.md): remade and checked byte for
# byte against the models ONNX Runtime's stored outputs were computed on.
add_test(NAME make_onnx_llm_models
         COMMAND "${LLM_PYTHON}" "${test_root}/tools/check_onnx_llm_models.py" --keep "${test_models}/onnx_llm")
set_tests_properties(make_onnx_llm_models PROPERTIES FIXTURES_SETUP "generated_test_data;onnx_llm_test_models")
# Python's jinja2 (Debian's python3-jinja2) renders every chat template of the shared test data
# as transformers does; test_jinja_reference.cpp compares our engine with it byte for byte.
add_test(NAME make_chat_template_reference
         COMMAND "${LLM_PYTHON}" "${LLM_PROJECT_ROOT}/tools/chat_template/render_reference.py"
                 "${shared_testdata}/chat-templates" "${test_models}/chat_templates/reference.json")
set_tests_properties(make_chat_template_reference PROPERTIES FIXTURES_SETUP generated_test_data)
add_test(NAME make_onnx_llm_error_models
         COMMAND "${LLM_PYTHON}" "${test_root}/tools/make_onnx_llm_error_models.py" "${test_models}/onnx_llm_errors")
set_tests_properties(make_onnx_llm_error_models PROPERTIES FIXTURES_SETUP generated_test_data)

gtest_discover_tests(llm_tests
  DISCOVERY_MODE PRE_TEST
  TEST_FILTER "-WithoutAVX2.*:WithoutVNNI.*:WithoutAMX.*"  # only meaningful in the runs below
  PROPERTIES
    ENVIRONMENT "LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT}"  # one variable: gtest_discover_tests splits lists
    FIXTURES_REQUIRED generated_test_data)

# The kernels' baseline builds (CPUs without AVX2): the quantized-matmul, dequantization,
# attention and whole-model tests again with AVX2 and AVX-512 turned off in OpenCV's dispatch, so
# that the baseline's decoders, float path and attention run on this machine too.
add_test(NAME llm_tests_without_avx2
         COMMAND llm_tests "--gtest_filter=WithoutAVX2.*:QuantizedMatMul.*:GGMLDequantize.*:GGUFSynthetic.*:*BatchEqualsAlone*:*AttentionMath*:GatedDeltaRule.*:ShortConvolution.*:SelectiveScan.*:GatedGroupRMSNorm.*:HybridModels.*:Gemma4.*")
set_tests_properties(llm_tests_without_avx2 PROPERTIES
  ENVIRONMENT "LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT};OPENCV_CPU_DISABLE=AVX512-CLX,AVX512-SKX,AVX2"
  FIXTURES_REQUIRED generated_test_data)

# The kernels' AVX2 builds on a CPU with AVX-512 (which the other runs take there): the same tests
# and attention with the AVX512_CLX (weights) and AVX512_SKX (attention, float GEMM) levels turned
# off. On CPUs without AVX-512 both runs take AVX2.
add_test(NAME llm_tests_without_vnni
         COMMAND llm_tests "--gtest_filter=WithoutVNNI.*:QuantizedMatMul.*:GGUFSynthetic.*:*BatchEqualsAlone*:*AttentionMath*:GatedDeltaRule.*:ShortConvolution.*:SelectiveScan.*:GatedGroupRMSNorm.*:HybridModels.*:Gemma4.*")
set_tests_properties(llm_tests_without_vnni PROPERTIES
  ENVIRONMENT "LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT};OPENCV_CPU_DISABLE=AVX512-CLX,AVX512-SKX"
  FIXTURES_REQUIRED generated_test_data)

# The AVX-512 kernels on batches where the CPU has AMX tiles (which the other runs take there
# from 5 activation rows on): the same tests with the tiles turned off. Without AMX it repeats
# the default run's kernels.
add_test(NAME llm_tests_without_amx
         COMMAND llm_tests "--gtest_filter=WithoutAMX.*:QuantizedMatMul.*:GGUFSynthetic.*:*BatchEqualsAlone*")
set_tests_properties(llm_tests_without_amx PROPERTIES
  ENVIRONMENT "LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT};OPENCV_DNN_LLM_AMX=0"
  FIXTURES_REQUIRED generated_test_data)

# Heap allocations per decode step: a process of its own, since it replaces malloc. Not built
# with LLM_SANITIZE: AddressSanitizer replaces malloc too (cmake/sanitizers.cmake).
if(NOT LLM_SANITIZE)
  add_executable(llm_alloc_tests "${test_root}/alloc/test_decode_allocations.cpp" "${test_root}/cpp/test_common.cpp"
                 "${LLM_PROJECT_ROOT}/samples/allocation_counter.cpp")
  target_link_libraries(llm_alloc_tests PRIVATE ${OpenCV_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(llm_alloc_tests PRIVATE LLM_SHARED_TESTDATA_DIR="${shared_testdata}")
  gtest_discover_tests(llm_alloc_tests
    DISCOVERY_MODE PRE_TEST
    PROPERTIES
      ENVIRONMENT "LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT}"
      FIXTURES_REQUIRED generated_test_data)
endif()

# The samples' tests (test_samples.py: every program's command line, README.md's command lines, the
# hello programs) are a test of their own, `ctest -R samples`; the vision models of README.md's
# lines come from the vision_test_models fixture.
set(python_test_environment "PYTHONPATH=${opencv_python_dir};LLM_PROJECT_ROOT=${LLM_PROJECT_ROOT};LLM_SHARED_TESTDATA=${shared_testdata};LLM_BIN_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};PYTHONDONTWRITEBYTECODE=1;LLM_REQUIRE_GENERATED_TEST_DATA=1")
# Under ctest a Python test that skips for a missing generated model fails instead
# (LLM_REQUIRE_GENERATED_TEST_DATA, test/python/conftest.py), and each test requires the fixtures
# that make what it reads (test_vision.py, test_onnx_llm.py); -rs prints every other skip's reason.
add_test(NAME python_tests
         COMMAND "${LLM_PYTHON}" -m pytest -q -rs -p no:cacheprovider --ignore=${test_root}/python/test_samples.py
                 "${test_root}/python")
set_tests_properties(python_tests PROPERTIES ENVIRONMENT "${python_test_environment}"
                     FIXTURES_REQUIRED "vision_test_models;onnx_llm_test_models")
add_test(NAME python_samples_tests
         COMMAND "${LLM_PYTHON}" -m pytest -q -rs -p no:cacheprovider "${test_root}/python/test_samples.py")
set_tests_properties(python_samples_tests PROPERTIES ENVIRONMENT "${python_test_environment}"
                     FIXTURES_REQUIRED vision_test_models)

# The sanitized part of CI: the fuzz targets (our GGUF reader and builder, tokenizers, chat
# templates, KV cache and attention, ONNX importers, compiled with clang's AddressSanitizer and
# UBSan) built and run for 10 s each on their seed corpora; any crash or report fails the test.
# The whole suite under sanitizers (tools/sanitize/run.sh) needs a cold OpenCV build of ~1.5 h,
# too long for CI; see doc/robustness.md.
if(NOT LLM_SANITIZE)
  add_test(NAME sanitized_fuzz_smoke
           COMMAND bash "${LLM_PROJECT_ROOT}/tools/fuzz/build_and_run.sh" 10
           WORKING_DIRECTORY "${LLM_PROJECT_ROOT}")
  set_tests_properties(sanitized_fuzz_smoke PROPERTIES
    ENVIRONMENT "LLM_BUILD_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/..;LLM_SHARED_TESTDATA=${shared_testdata}"
    FIXTURES_REQUIRED generated_test_data
    RUN_SERIAL TRUE)
endif()

# Soak: 10,000 tokens with context shifting (512-token context) in flat resident memory.
add_test(NAME soak_10000_tokens_flat_memory
         COMMAND llm_soak "--model=${shared_testdata}/stories260K.gguf" --gen-tokens=10000 --threads=1)
if(LLM_SANITIZE)  # a 1 MiB ASan quarantine, which fills before the first report (cmake/sanitizers.cmake)
  set_property(TEST soak_10000_tokens_flat_memory APPEND PROPERTY ENVIRONMENT ${LLM_SANITIZER_SOAK_ENV})
endif()
if(LLM_SANITIZE)  # the sanitizer runtimes preloaded into Python, no leak checks (cmake/sanitizers.cmake)
  set_property(TEST python_tests python_samples_tests APPEND PROPERTY ENVIRONMENT ${LLM_SANITIZER_PYTHON_ENV})
endif()

# The grammar mask benchmark (issue 20), small: it runs, and its record follows its schema token by
# token over LLaMA's 32k vocabulary (llm_grammar_bench exits non-zero otherwise). A tool beside the
# tests, not a sample: it times internals through private headers (tools/bench/llm_grammar_bench.cpp).
add_executable(llm_grammar_bench "${LLM_PROJECT_ROOT}/tools/bench/llm_grammar_bench.cpp")
target_link_libraries(llm_grammar_bench PRIVATE ${OpenCV_LIBS})
add_test(NAME llm_grammar_bench_smoke
         COMMAND llm_grammar_bench "--model=${shared_testdata}/llama.cpp-vocab/ggml-vocab-llama-spm.gguf" --repetitions=1)

# llm_bench's batched and long-context modes (issue 18), small: they run, every sequence ends
# holding its prompt and its steps (llm_bench checks the KV cache's lengths), and the result
# lines that tools/bench/compare_with_llama_bench.py reads are printed last.
add_test(NAME llm_bench_batch_mode
         COMMAND llm_bench "--model=${shared_testdata}/stories260K.gguf" --threads=1 --batch=3
                 --prompt-tokens=8 --gen-tokens=4 --repetitions=2)
set_tests_properties(llm_bench_batch_mode PROPERTIES
  PASS_REGULAR_EXPRESSION "prefill: one forward of 3 sequences x 8 tokens[^\n]*\n[^\n]*\nbatch3 pp8: [0-9.]+ tok/s\nbatch3 tg4: [0-9.]+ tok/s")
add_test(NAME llm_bench_depth_mode
         COMMAND llm_bench "--model=${shared_testdata}/stories260K.gguf" --threads=1 --depth=300
                 --gen-tokens=4 --repetitions=2)
set_tests_properties(llm_bench_depth_mode PROPERTIES
  PASS_REGULAR_EXPRESSION "\ntg4@d300: [0-9.]+ tok/s")

# Every quoted #include of modules/dnn/src/llm against the map of folders in doc/design.md (issue 39).
add_test(NAME check_includes COMMAND "${LLM_PYTHON}" "${LLM_PROJECT_ROOT}/tools/check_includes.py" "${LLM_PROJECT_ROOT}")

# llm_server (doc/server.md) with real clients, each test starting its own servers on loopback
# ports: raw HTTP (errors, hostile input, curl's SSE), the official openai SDK, Debian's chromium
# through puppeteer-core (test/server/package.json, installed by test.sh), a bounded load test,
# and nginx in front of two replicas.
set(server_test_environment "LLM_SERVER=$<TARGET_FILE:llm_server>;LLM_DEMO_MODEL=${LLM_PROJECT_ROOT}/models/demo/demo-stories.gguf;LLM_SHARED_TESTDATA=${shared_testdata};LLM_TEST_MODELS=${test_models};PYTHONDONTWRITEBYTECODE=1")
add_test(NAME server_http COMMAND "${LLM_PYTHON}" -m pytest -q -p no:cacheprovider "${test_root}/server/test_server_http.py")
add_test(NAME server_openai_sdk COMMAND node --test "${test_root}/server/openai_sdk.test.mjs")
add_test(NAME server_browser COMMAND node --test "${test_root}/server/browser.test.mjs")
add_test(NAME server_load COMMAND "${LLM_PYTHON}" "${test_root}/server/load_test.py")
add_test(NAME server_nginx COMMAND "${LLM_PYTHON}" "${test_root}/server/nginx_failover.py")
set_tests_properties(server_http server_openai_sdk server_browser server_load server_nginx PROPERTIES
                     ENVIRONMENT "${server_test_environment}" TIMEOUT 600)
set_tests_properties(server_openai_sdk PROPERTIES FIXTURES_REQUIRED vision_test_models)
