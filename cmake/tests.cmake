# Tests are defined by the apps project (test/tests.cmake); ctest in build/ runs them too.
if(LLM_SANITIZE)
  # ctest reads this first; the environment it sets is inherited by every test process
  # (including the listing of the GoogleTest cases). A value the user has set wins.
  file(WRITE "${CMAKE_BINARY_DIR}/sanitizer_env.cmake"
       "if(NOT DEFINED ENV{ASAN_OPTIONS})\n  set(ENV{ASAN_OPTIONS} \"${LLM_SANITIZER_ASAN_OPTIONS}\")\nendif()\n"
       "if(NOT DEFINED ENV{UBSAN_OPTIONS})\n  set(ENV{UBSAN_OPTIONS} \"${LLM_SANITIZER_UBSAN_OPTIONS}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_BINARY_DIR}/sanitizer_env.cmake")
endif()
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_BINARY_DIR}/apps/CTestTestfile.cmake")
