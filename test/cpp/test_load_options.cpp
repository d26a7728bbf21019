// LLMLoadOptions: each field does what the matching call or environment variable does.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cstdlib>

#include "test_common.hpp"

namespace {

using namespace cv;
using namespace cv::dnn;

Mat promptLogits(const TextGenerationModel& model)
{
    Net net = model.getNetwork();
    resetLLMState(net);
    net.setInput(llm_test::idsToMat({1, 15, 300, 42, 7}));
    return net.forward().clone();
}

TEST(LLMLoadOptions, fieldsActAsTheirCalls)
{
    const std::string path = llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf");
    LLMLoadOptions options;
    options.contextLength = 96;
    options.kvStorageType = CV_16F;
    options.kvMemoryBudget = 1 << 20;
    options.maxParallelSequences = 3;
    TextGenerationModel model(path, options);
    Net net = model.getNetwork();
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_EQ(cache->getMaxSequenceLength(), 96);
    EXPECT_EQ(cache->getStorageType(), CV_16F);
    EXPECT_LE(cache->getMemoryBudget(), (size_t)1 << 20);
    EXPECT_GT(cache->getMemoryBudget(), ((size_t)1 << 20) - cache->getBytesPerToken() * cache->getPageSize());

    // integerDot = 0 is the exact float path that OPENCV_DNN_LLM_INTEGER_DOT=0 chose; 1 is the default.
    LLMLoadOptions exact;
    exact.integerDot = 0;
    const Mat exactLogits = promptLogits(TextGenerationModel(path, exact));
    setenv("OPENCV_DNN_LLM_INTEGER_DOT", "0", 1);
    const Mat envLogits = promptLogits(TextGenerationModel(path));
    unsetenv("OPENCV_DNN_LLM_INTEGER_DOT");
    EXPECT_EQ(cv::norm(exactLogits, envLogits, NORM_INF), 0.0);
    LLMLoadOptions integer;
    integer.integerDot = 1;
    const Mat integerLogits = promptLogits(TextGenerationModel(path, integer));
    EXPECT_EQ(cv::norm(integerLogits, promptLogits(TextGenerationModel(path)), NORM_INF), 0.0);
    EXPECT_GT(cv::norm(integerLogits, exactLogits, NORM_INF), 0.0);  // the 8-bit activations round

    LLMLoadOptions bad;
    bad.kvStorageType = CV_8U;
    EXPECT_THROW(TextGenerationModel(path, bad), cv::Exception);
    bad = LLMLoadOptions();
    bad.maxParallelSequences = 0;
    EXPECT_THROW(TextGenerationModel(path, bad), cv::Exception);
    bad = LLMLoadOptions();
    bad.mmprojPath = "/nonexistent/mmproj.gguf";
    EXPECT_THROW(TextGenerationModel(path, bad), cv::Exception);
}

} // namespace
