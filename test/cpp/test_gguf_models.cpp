// GGUF models end to end against llama.cpp (node-llama-cpp 3.21.1): the stored outputs in
// ../shared/testdata/reference/ (see its MANIFEST.md).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>

#include <cmath>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

std::vector<int> greedy(Net& net, const std::vector<int>& prompt, int n)
{
    std::vector<int> out;
    net.setInput(llm_test::idsToMat(prompt));
    Mat logits = net.forward();
    for (int i = 0; i < n; i++)
    {
        out.push_back(llm_test::argmax(logits));
        if (i + 1 < n)
        {
            net.setInput(llm_test::idsToMat({out.back()}));
            logits = net.forward();
        }
    }
    return out;
}

struct Reference
{
    std::vector<int> promptIds, greedyIds;
    std::vector<std::pair<int, double>> top5;
};

Reference readReference(const std::string& name)
{
    FileStorage fs(llm_test::sharedTestData("reference/" + name), FileStorage::READ | FileStorage::FORMAT_JSON);
    CV_Assert(fs.isOpened());
    Reference r;
    fs["promptIds"] >> r.promptIds;
    fs["greedyIds"] >> r.greedyIds;
    for (const FileNode& e : fs["top5"])
        r.top5.emplace_back((int)e[0], (double)e[1]);
    return r;
}

TEST(GGUFStories260K, greedyIdsMatchLlamaCpp)
{
    const Reference ref = readReference("stories260K.nlc.json");
    ASSERT_EQ(ref.greedyIds.size(), 16u);
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    EXPECT_EQ(greedy(net, ref.promptIds, 16), ref.greedyIds);
    EXPECT_EQ(getLLMSequenceLength(net), (int)(ref.promptIds.size() + 15));
}

TEST(GGUFStories260K, firstStepProbabilitiesMatchLlamaCpp)
{
    const Reference ref = readReference("stories260K.nlc.json");
    Net net = readNetFromGGUF(llm_test::sharedTestData("stories260K.gguf"));
    net.setInput(llm_test::idsToMat(ref.promptIds));
    const std::vector<double> p = llm_test::softmax(net.forward());
    // llama.cpp computes in float32 too; 1e-4 absolute covers accumulation order.
    for (const auto& e : ref.top5)
        EXPECT_NEAR(p[e.first], e.second, 1e-4) << "token " << e.first;
}

TEST(GGUFStories260K, resetStartsANewSequence)
{
    const Reference ref = readReference("stories260K.nlc.json");
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    const std::vector<int> first = greedy(net, ref.promptIds, 4);
    resetLLMState(net);
    EXPECT_EQ(getLLMSequenceLength(net), 0);
    EXPECT_EQ(greedy(net, ref.promptIds, 4), first);
}

// Token-by-token decoding and one prefill of the same tokens compute the same function.
TEST(GGUFStories260K, incrementalEqualsPrefill)
{
    const std::vector<int> ids = {1, 403, 407, 261, 378, 432, 383, 286};
    Net all = readNetFromGGUF(llm_test::sharedTestData("stories260K.gguf"), true);
    all.setInput(llm_test::idsToMat(ids));
    const Mat prefill = all.forward().clone();
    ASSERT_EQ(prefill.rows, (int)ids.size());

    Net step = readNetFromGGUF(llm_test::sharedTestData("stories260K.gguf"));
    for (size_t i = 0; i < ids.size(); i++)
    {
        step.setInput(llm_test::idsToMat({ids[i]}));
        const Mat logits = step.forward();
        EXPECT_LE(cv::norm(logits.reshape(1, 1), prefill.row((int)i), NORM_INF), 1e-4) << "position " << i;
    }
}

TEST(GGUFTinyRandomF16, probabilitiesMatchLlamaCpp)
{
    const Reference ref = readReference("llama-2-tiny-random.nlc.json");
    Net net = readNet(llm_test::sharedTestData("llama-2-tiny-random.gguf"));
    net.setInput(llm_test::idsToMat(ref.promptIds));
    const std::vector<double> p = llm_test::softmax(net.forward());
    ASSERT_EQ(p.size(), 32000u);
    // The distribution is nearly flat (p ~ 3.8e-5): compare each reference probability with
    // a relative tolerance of 1e-3, well below the 4e-3 relative gap between the top two
    // tokens that the greedy choice depends on.
    for (const auto& e : ref.top5)
        EXPECT_NEAR(p[e.first], e.second, e.second * 1e-3) << "token " << e.first;
}

TEST(GGUFErrors, tokenIdOutOfRange)
{
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    net.setInput(llm_test::idsToMat({1, 512}));
    EXPECT_THROW(net.forward(), cv::Exception);
}

TEST(GGUFErrors, contextFullIsAnError)
{
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    std::vector<int> ids(512, 5);
    net.setInput(llm_test::idsToMat(ids));
    net.forward();
    net.setInput(llm_test::idsToMat({5}));
    try
    {
        net.forward();
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("context is full"), std::string::npos) << e.msg;
    }
}

TEST(GGUFMetadata, readsStories260K)
{
    Ptr<GGUFFile> f = GGUFFile::open(llm_test::sharedTestData("stories260K.gguf"));
    EXPECT_EQ(f->getVersion(), 3);
    EXPECT_EQ(f->getString("general.architecture"), "llama");
    EXPECT_EQ(f->getMetadataType("llama.embedding_length"), "uint32");
    EXPECT_EQ(f->getInt("llama.embedding_length"), 64);
    EXPECT_EQ(f->getInt("llama.block_count"), 5);
    EXPECT_EQ(f->getMetadataType("tokenizer.ggml.tokens"), "array[string]");
    EXPECT_EQ(f->getStringArray("tokenizer.ggml.tokens").size(), 512u);
    EXPECT_EQ(f->getNumberArray("tokenizer.ggml.scores").size(), 512u);
    EXPECT_EQ(f->getTensorType("token_embd.weight"), "F32");
    EXPECT_EQ(f->getTensorShape("token_embd.weight"), (std::vector<int>{64, 512}));
    EXPECT_THROW(f->getString("llama.embedding_length"), cv::Exception);
    EXPECT_THROW(f->getInt("no.such.key"), cv::Exception);
}

} // namespace

namespace {

// Sum over positions of -log p(next token): llama.cpp's 54.409 for the golden sentence
// (test/data/oracle/stories260K_golden_nll.nlc.json; llama2.c's run.c gives 54.404).
TEST(GGUFStories260K, teacherForcedNLLMatchesLlamaCpp)
{
    FileStorage fs(llm_test::projectRoot() + "/test/data/oracle/stories260K_golden_nll.nlc.json",
                   FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened());
    std::vector<int> ids;
    fs["ids"] >> ids;
    const double expected = (double)fs["nll"];
    ASSERT_EQ(ids.size(), 35u);

    Net net = readNetFromGGUF(llm_test::sharedTestData("stories260K.gguf"), true);
    net.setInput(llm_test::idsToMat(ids));
    const Mat logits = net.forward();
    ASSERT_EQ(logits.rows, (int)ids.size());
    double nll = 0;
    for (size_t i = 0; i + 1 < ids.size(); i++)
        nll -= std::log(llm_test::softmax(logits.row((int)i))[ids[i + 1]]);
    EXPECT_NEAR(nll, expected, expected * 1e-3);
}

} // namespace
