# Tests are defined by the apps project (test/tests.cmake); ctest in build/ runs them too.
if(LLM_SANITIZE)
  # Sanitizer options for every test (cmake/sanitizer_test_env.cmake), read before the rest.
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_SOURCE_DIR}/cmake/sanitizer_test_env.cmake")
endif()
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_BINARY_DIR}/apps/CTestTestfile.cmake")
