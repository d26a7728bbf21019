# Tests are defined by the apps project (test/tests.cmake); ctest in build/ runs them too.
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_BINARY_DIR}/apps/CTestTestfile.cmake")
