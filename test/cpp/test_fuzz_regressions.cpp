// Inputs the fuzzers (tools/fuzz) found to crash, kept as regression tests: each must now be
// refused with a cv::Exception that says what is wrong.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

std::string fuzzInput(const std::string& name)
{
    return llm_test::projectRoot() + "/test/data/fuzz/" + name;
}

// fuzz_onnx: an initializer whose raw data is shorter than its dims made OpenCV's ONNX importer
// read past the buffer (heap-buffer-overflow in getMatFromTensor). Patch 0007 checks the size.
TEST(FuzzRegressions, onnxTensorDataShorterThanItsDims)
{
    try
    {
        readNetFromONNX(fuzzInput("onnx_tensor_data_shorter_than_dims.onnx"));
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("but its dims need"), std::string::npos) << e.msg;
    }
}

} // namespace
