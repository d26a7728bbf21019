// Helpers shared by the C++ tests.
#ifndef OPENCV_DNN_LLM_TEST_COMMON_HPP
#define OPENCV_DNN_LLM_TEST_COMMON_HPP

#include <string>
#include <vector>

namespace llm_test {

// The repository root: $LLM_PROJECT_ROOT (ctest sets it), else two levels above the test
// executable (build/bin/llm_tests).
std::string projectRoot();

// ../shared/testdata relative to the project root.
std::string sharedTestData(const std::string& relative);

// Data made by the ctest fixtures (test/tests.cmake): $LLM_TEST_MODELS, else build/test-models
// (beside the bin/ folder holding the test executable).
std::string testModel(const std::string& relative);

// The whole content of a file (empty if it cannot be read).
std::vector<char> readFileBytes(const std::string& path);

} // namespace llm_test

#endif
