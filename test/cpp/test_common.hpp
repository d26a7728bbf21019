// Helpers shared by the C++ tests.
#ifndef OPENCV_DNN_LLM_TEST_COMMON_HPP
#define OPENCV_DNN_LLM_TEST_COMMON_HPP

#include <opencv2/core.hpp>

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

// Token ids as a Net input: a 1 x T float matrix.
cv::Mat idsToMat(const std::vector<int>& ids);

// The index of the largest value of a row of logits.
int argmax(const cv::Mat& row);

// The probabilities of a row of float logits, in double precision.
std::vector<double> softmax(const cv::Mat& logits);

// Largest |p[id] - entry.p| over the entries {id, p} of an oracle's top-k list.
double maxDifference(const std::vector<double>& p, const cv::FileNode& topK);

// A Net of one LLMElementwise layer with this operation applied to a (and b, for the operations
// of two activations); the output, copied.
cv::Mat runElementwise(const std::string& operation, const cv::Mat& a, const cv::Mat& b = cv::Mat());

// The cv::Exception message of readNet on an ONNX model that
// test/tools/make_onnx_llm_error_models.py made (onnx_llm_errors/<name>), or "(no error)".
std::string onnxLlmError(const std::string& name);

} // namespace llm_test

#endif
