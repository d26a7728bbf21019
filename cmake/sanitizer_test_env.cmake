# Read by ctest in a LLM_SANITIZE build (a TEST_INCLUDE_FILE, before the tests are listed):
# ctest's own environment is inherited by every test process, so these defaults apply to all
# tests, including the listing of the GoogleTest cases. A value already set by the user wins.
if(NOT DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1")
endif()
if(NOT DEFINED ENV{UBSAN_OPTIONS})
  set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
endif()
