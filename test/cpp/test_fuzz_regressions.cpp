// Inputs the fuzzers (tools/fuzz) found to crash, remade by the test fixtures
// (test/tools/make_test_onnx_models.py): each must now be refused with a cv::Exception that
// says what is wrong.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

// fuzz_onnx: an initializer whose raw data is shorter than its dims made OpenCV's ONNX importer
// read past the buffer (heap-buffer-overflow in getMatFromTensor). Patch 0007 checks the size.
TEST(FuzzRegressions, onnxTensorDataShorterThanItsDims)
{
    try
    {
        readNetFromONNX(llm_test::testModel("fuzz_tensor_data_shorter_than_dims.onnx"));
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("but its dims need"), std::string::npos) << e.msg;
    }
}

} // namespace
