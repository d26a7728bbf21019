// readNetFromONNX's first look (patch 0008): a scan of the file's bytes decides, without
// parsing, that a file is not a language model, so that dnn's importer is the only one to parse
// it. Every ONNX test file that is not a decoder must be ruled out by the scan; every decoder
// (the builder-style variants and the shared ONNX Runtime GenAI models) must pass it.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "test_common.hpp"
#include "../../modules/dnn/src/llm/onnx/onnx_llm_importer.hpp"

using cv::dnn::llm::mayBeONNXLanguageModel;

TEST(ONNXLanguageModelScan, otherModelsAreRuledOutWithoutParsing)
{
    std::vector<cv::String> files;
    cv::glob(llm_test::testModel("*.onnx"), files);  // RMSNorm graphs and a malformed file
    ASSERT_FALSE(files.empty());
    for (const cv::String& f : files)
        EXPECT_FALSE(mayBeONNXLanguageModel(f)) << f;
}

TEST(ONNXLanguageModelScan, decodersPassTheScan)
{
    std::vector<cv::String> files;
    cv::glob(llm_test::testModel("onnx_llm/model.onnx"), files, /*recursive=*/true);
    ASSERT_FALSE(files.empty());
    files.push_back(llm_test::sharedTestData("onnx/tiny-random-LlamaForCausalLM-fp16/model.onnx"));
    files.push_back(llm_test::sharedTestData("onnx/tiny-graph-capture-gqa/model.onnx"));
    for (const cv::String& f : files)
        EXPECT_TRUE(mayBeONNXLanguageModel(f)) << f;
}

TEST(ONNXLanguageModelScan, unreadableFileIsAnError)
{
    EXPECT_THROW(mayBeONNXLanguageModel(llm_test::testModel("no_such_file.onnx")), cv::Exception);
}
