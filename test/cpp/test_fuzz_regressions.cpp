// Inputs the fuzzers (tools/fuzz) found to crash, remade by the test fixtures
// (test/tools/make_test_onnx_models.py, test/tools/make_onnx_llm_error_models.py): each must
// now be refused with a cv::Exception that says what is wrong.

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

// fuzz_onnx_llm: a packed-QKV GroupQueryAttention with num_heads = kv_num_heads = 2^30 made
// num_heads + 2 * kv_num_heads overflow int (UBSan: signed-integer-overflow in
// importAttention). Computed in int64 now.
TEST(FuzzRegressions, onnxLlmPackedHeadCountOverflow)
{
    const std::string msg = llm_test::onnxLlmError("fuzz_packed_head_overflow");
    EXPECT_NE(msg.find("does not split into 1073741824 heads"), std::string::npos) << msg;
}

// fuzz_onnx_llm: genai_config.json's context_length 1e+30 went through json's get<int>(), a
// float-to-int cast out of range (UBSan: float-cast-overflow); integers beyond int wrapped.
TEST(FuzzRegressions, onnxLlmGenAIConfigNumberOutOfIntRange)
{
    const std::string msg = llm_test::onnxLlmError("fuzz_config_float_int");
    EXPECT_NE(msg.find("field 'context_length': 1e+30 is not an integer in int's range"), std::string::npos) << msg;
}

// fuzz_onnx_llm: a SkipSimplifiedLayerNormalization without its first input: the importer looked
// the input's width up before checking the input (std::out_of_range, not a cv::Exception).
TEST(FuzzRegressions, onnxLlmSkipNormWithoutInput)
{
    const std::string msg = llm_test::onnxLlmError("fuzz_skip_norm_no_input");
    EXPECT_NE(msg.find("input 0 is missing"), std::string::npos) << msg;
}

} // namespace
