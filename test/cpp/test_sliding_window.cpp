// Sliding-window attention end to end against llama.cpp (test/data/oracle/swa_*.nlc.json):
// gemma2 (window 300 on layers 0 and 2 of 4: the window starts inside a 256-position chunk) and
// gemma3 (window 40 on 5 of 6 layers), F32, after a 400-token prompt fed in ragged pieces and
// decode steps, so the cache releases the local layers' pages while the sequence grows. Each
// oracle also holds llama.cpp's outputs for the same weights without the window ("unscaled"):
// the window visibly matters there. The KV memory in use is measured against a full cache.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

// The prompt in pieces of 1, 37, 100 and the rest: each piece's forward releases what the
// previous ones no longer need.
Mat feedInPieces(Net& net, const std::vector<int>& prompt)
{
    Mat logits;
    size_t at = 0;
    for (size_t piece : {(size_t)1, (size_t)37, (size_t)100, prompt.size()})
    {
        const size_t end = std::min(prompt.size(), at + piece);
        net.setInput(llm_test::idsToMat(std::vector<int>(prompt.begin() + at, prompt.begin() + end)));
        logits = net.forward().clone();
        at = end;
    }
    return logits;
}

TEST(SlidingWindow, matchesLlamaCppAndReleasesPages)
{
    std::vector<String> oracles;
    glob(llm_test::projectRoot() + "/test/data/oracle/swa_*.nlc.json", oracles);
    ASSERT_EQ(oracles.size(), 2u);
    std::printf("%-22s %10s %10s %12s %12s %14s %14s\n", "model", "max|dp|", "steps|dp|", "no-window|dp|",
                "ignored|dp|", "KV bytes/token", "full cache");
    for (const String& path : oracles)
    {
        FileStorage fs(path, FileStorage::READ | FileStorage::FORMAT_JSON);
        const std::string file = (std::string)fs["model_file"];
        SCOPED_TRACE(file);
        std::vector<int> prompt, greedyIds;
        fs["prompt_ids"] >> prompt;
        fs["greedy_ids"] >> greedyIds;
        ASSERT_EQ(prompt.size(), 400u);
        const int window = (int)fs["sliding_window"];

        const std::string model = llm_test::testModel("synthetic/" + file), arch = (std::string)fs["arch"];
        const int layers = (int)GGUFFile::open(model)->getInt(arch + ".block_count");
        Net net = readNet(model);
        const std::vector<double> p = llm_test::softmax(feedInPieces(net, prompt));
        const FileNode topK = fs["top_k"];
        // Gemma's half-precision GELU input makes 5e-4 the F32 tolerance (test_gguf_synthetic.cpp).
        const double diff = llm_test::maxDifference(p, topK);
        EXPECT_LE(diff, 5e-4);
        EXPECT_EQ((int)(std::max_element(p.begin(), p.end()) - p.begin()), (int)topK[0]["id"]);
        double stepsDiff = 0;
        const FileNode steps = fs["greedy_steps"];
        for (int step = 1; step < 8; step++)
        {
            net.setInput(Mat(1, 1, CV_32F, Scalar(greedyIds[step - 1])));
            const double d = llm_test::maxDifference(llm_test::softmax(net.forward()), steps[step]["top5"]);
            EXPECT_LE(d, 1e-3) << "step " << step;  // (the GELU flips add up over the steps: 5.5e-4 seen)
            stepsDiff = std::max(stepsDiff, d);
        }

        // Memory: the local layers hold the window of the last forward's tokens, in pages.
        Ptr<KVCache> cache = getLLMKVCache(net);
        const int length = cache->getSequenceLength(0);
        ASSERT_EQ(length, 407);
        const size_t full = cache->getBytesPerToken() * (size_t)((length + 15) / 16 * 16);
        const size_t used = cache->getBytesInUse();
        EXPECT_LT(used, full);
        // (gemma2: every other layer local; gemma3: five of every six)
        const int local = arch == "gemma2" ? layers / 2 : layers - layers / 6;
        const size_t perLayerToken = cache->getBytesPerToken() / layers;
        const size_t localPages = (size_t)(window - 1 + 1 + 15) / 16 + 1;  // last forward: 1 token
        EXPECT_LE(used, full / layers * (layers - local) + local * localPages * 16 * perLayerToken);

        // The same weights without the window: llama.cpp and we agree, and both are far from the
        // windowed result.
        const FileNode unwindowed = fs["unscaled"];
        Net plain = readNet(llm_test::testModel("synthetic/" + (std::string)unwindowed["model_file"]));
        const std::vector<double> q = llm_test::softmax(feedInPieces(plain, prompt));
        const double plainDiff = llm_test::maxDifference(q, unwindowed["top_k"]);
        EXPECT_LE(plainDiff, 5e-4);
        const double ignoredDiff = std::max(llm_test::maxDifference(q, topK), llm_test::maxDifference(p, unwindowed["top_k"]));
        EXPECT_GE(ignoredDiff, 0.05) << "the window barely matters here: the test would not see it ignored";
        std::printf("%-22s %10.2e %10.2e %12.2e %12.3f %14.0f %14zu\n", file.substr(0, file.size() - 5).c_str(), diff,
                    stepsDiff, plainDiff, ignoredDiff, (double)used / length, cache->getBytesPerToken());
    }
}

// TextGenerationModel on a model whose local layers have released pages: a second prompt that
// shares only an early prefix with the first is fed again from the start (the cache cannot
// rewind there) and gives what a fresh model gives; context shifting keeps a window's worth of
// tokens after the kept BOS (gemma3-shaped synthetic model: window 40, context 512).
TEST(SlidingWindow, textGenerationReusesOnlyWhatTheWindowHolds)
{
    const std::string model = llm_test::testModel("synthetic/swa_gemma3_window40.gguf");
    GenerationConfig config;
    config.maxNewTokens = 60;
    config.ignoreEndOfGeneration = true;
    TextGenerationModel reused(model);
    const std::string first = "Once upon a time there was a little girl named Lily. She liked to play outside.";
    reused.generate(first, config);
    const std::string second = "Once upon a time there was a big dog.";
    const String text = reused.generate(second, config);
    EXPECT_EQ(reused.getLastPrefillTokenCount(), (int)reused.getPromptTokenIds().size());  // fed from 0
    TextGenerationModel fresh(model);
    EXPECT_EQ(fresh.generate(second, config), text);
    EXPECT_EQ(fresh.getGeneratedTokenIds(), reused.getGeneratedTokenIds());

    config.maxNewTokens = 700;
    config.contextShift = true;
    reused.start(first, config);
    Net net = reused.getNetwork();
    int maxLength = 0;
    while (!reused.isDone())
    {
        reused.next();
        maxLength = std::max(maxLength, getLLMSequenceLength(net));
    }
    EXPECT_EQ(reused.getGeneratedTokenIds().size(), 700u);
    EXPECT_LE(maxLength, 512);
}

} // namespace
