# LLM_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer build of OpenCV (our code is
# compiled into opencv_dnn) and of the apps. Use a build folder of its own:
#   cmake -S . -B build-asan -G Ninja -DLLM_SANITIZE=ON && cmake --build build-asan
#   ctest --test-dir build-asan
# Included by the superbuild (compiler flags for both external projects, the tests' runtime
# options) and by apps/ (the extra environment of the Python tests and of the soak).
# GCC (Debian's default compiler); see doc/robustness.md, "Sanitizers".
option(LLM_SANITIZE "Build OpenCV and the apps with -fsanitize=address,undefined (use a separate build folder)" OFF)

# -g1: line tables only, so that reports show file:line at a small cost in build time.
set(LLM_SANITIZE_FLAGS "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g1")

# Superbuild: extra arguments for the two external projects (empty when LLM_SANITIZE is off,
# so the normal build's configuration is unchanged).
set(LLM_SANITIZE_OPENCV_ARGS "")
set(LLM_SANITIZE_APPS_ARGS "")
if(LLM_SANITIZE)
  set(LLM_SANITIZE_APPS_ARGS
      "-DCMAKE_C_FLAGS=${LLM_SANITIZE_FLAGS}" "-DCMAKE_CXX_FLAGS=${LLM_SANITIZE_FLAGS}" -DLLM_SANITIZE=ON)
  set(LLM_SANITIZE_OPENCV_ARGS ${LLM_SANITIZE_APPS_ARGS}
      -DENABLE_OMIT_FRAME_POINTER=OFF          # OpenCV adds -fomit-frame-pointer after our flags otherwise
      -DOPENCV_ENABLE_MEMORY_SANITIZER=ON)     # AutoBuffer/BufferArea: one heap block each, so ASan sees overflows
endif()

# Runtime options of every test (ctest's environment, see cmake/tests.cmake; a value the user
# has set already wins): leaks, use of a returned function's stack and static initialization
# order are checked; a UBSan report prints its stack.
set(LLM_SANITIZER_ASAN_OPTIONS "detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1")
set(LLM_SANITIZER_UBSAN_OPTIONS "print_stacktrace=1:halt_on_error=1")

# apps/: extra ENVIRONMENT entries of two tests (test/tests.cmake); empty when LLM_SANITIZE is off.
#  - LLM_SANITIZER_PYTHON_ENV: a test that runs the (uninstrumented) Python interpreter on the
#    sanitized cv2 module: the sanitizer runtimes must be loaded first (LD_PRELOAD), and
#    LeakSanitizer is off (CPython does not free everything at exit, by design).
#  - LLM_SANITIZER_SOAK_ENV: the flat-memory soak. ASan keeps freed blocks in a quarantine
#    (256 MiB by default) to catch use after free, which the soak would see as growth (~2.4 KiB
#    freed per token); a 1 MiB quarantine fills before the soak's first report.
set(LLM_SANITIZER_PYTHON_ENV "")
set(LLM_SANITIZER_SOAK_ENV "")
if(LLM_SANITIZE AND CMAKE_CXX_COMPILER)
  set(preload "")
  foreach(rt libasan.so libubsan.so)
    execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=${rt}
                    OUTPUT_VARIABLE rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${rt_path}" OR NOT EXISTS "${rt_path}")
      message(FATAL_ERROR "LLM_SANITIZE: ${CMAKE_CXX_COMPILER} has no ${rt} (GCC is required: apt-get install g++)")
    endif()
    get_filename_component(rt_path "${rt_path}" REALPATH)
    list(APPEND preload "${rt_path}")
  endforeach()
  string(REPLACE ";" ":" preload "${preload}")
  set(LLM_SANITIZER_PYTHON_ENV "LD_PRELOAD=${preload}" "ASAN_OPTIONS=${LLM_SANITIZER_ASAN_OPTIONS}:detect_leaks=0")
  set(LLM_SANITIZER_SOAK_ENV "ASAN_OPTIONS=${LLM_SANITIZER_ASAN_OPTIONS}:quarantine_size_mb=1")
endif()
