// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The generation options an OpenAI-compatible server passes through (issue 40), end to end on
// real models: frequency / presence penalties and log-probabilities (against llama.cpp's stored
// probabilities, ../shared/testdata/reference, and the softmax of the Net's own logits).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/generation_engine.hpp>
#include <opencv2/dnn/llm.hpp>

#include <cmath>
#include <set>

#include "test_common.hpp"

namespace {

using namespace cv;
using namespace cv::dnn;

std::string storiesModel()
{
    return llm_test::sharedTestData("stories260K.gguf");
}

// A presence penalty far above any logit gap forbids every token of the window: greedy text
// over a window holding everything never repeats a token (stories260K repeats without it).
TEST(OpenAIGenerationOptions, presencePenaltyForbidsRepeatsInItsWindow)
{
    TextGenerationModel model(storiesModel());
    GenerationConfig c;
    c.maxNewTokens = 40;
    c.ignoreEndOfGeneration = true;
    model.generate("Once upon a time", c);
    const std::vector<int> plain = model.getGeneratedTokenIds();
    ASSERT_LT(std::set<int>(plain.begin(), plain.end()).size(), plain.size());

    c.presencePenalty = 1000.f;
    c.repetitionWindow = -1;
    model.generate("Once upon a time", c);
    const std::vector<int> prompt = model.getPromptTokenIds();
    const std::vector<int> penalized = model.getGeneratedTokenIds();
    ASSERT_EQ(penalized.size(), 40u);
    std::set<int> seen(prompt.begin(), prompt.end());
    for (int id : penalized)
        EXPECT_TRUE(seen.insert(id).second) << "token " << id << " repeated";

    // The frequency penalty counts occurrences: the same holds for it alone.
    c.presencePenalty = 0.f;
    c.frequencyPenalty = 1000.f;
    model.generate("Once upon a time", c);
    EXPECT_EQ(model.getGeneratedTokenIds(), penalized);
}

GenerationResult runAlone(const String& prompt, const GenerationConfig& c)
{
    Ptr<GenerationEngine> engine = GenerationEngine::create(storiesModel());
    GenerationRequest r;
    r.prompt = prompt;
    r.config = c;
    return engine->wait(engine->submit(r));
}

GenerationConfig withLogprobs(int top, int maxNewTokens)
{
    GenerationConfig c;
    c.topLogprobs = top;
    c.maxNewTokens = maxNewTokens;
    return c;
}

// The first step's top-5 is what llama.cpp computed (node-llama-cpp 3.21.1) for the same prompt.
TEST(OpenAIGenerationOptions, logprobsOfTheFirstStepMatchLlamaCpp)
{
    FileStorage fs(llm_test::sharedTestData("reference/stories260K.nlc.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened());
    std::vector<int> promptIds, greedyIds;
    fs["promptIds"] >> promptIds;
    fs["greedyIds"] >> greedyIds;
    const FileNode top5 = fs["top5"];
    ASSERT_EQ(top5.size(), 5u);

    const GenerationResult r = runAlone((std::string)fs["prompt"], withLogprobs(5, 16));
    ASSERT_EQ(r.promptTokens, (int)promptIds.size());
    ASSERT_EQ(r.tokenIds, greedyIds);
    ASSERT_EQ(r.tokenLogprobs.size(), 16u);
    ASSERT_EQ(r.topLogprobTokenIds.size(), 16u * 5);
    ASSERT_EQ(r.topLogprobs.size(), 16u * 5);
    for (int i = 0; i < 5; i++)
    {
        EXPECT_EQ(r.topLogprobTokenIds[i], (int)top5[i][0]) << "rank " << i;
        // llama.cpp computes in float32 too; 1e-4 absolute in probability, as the model tests
        EXPECT_NEAR(std::exp(r.topLogprobs[i]), (double)top5[i][1], 1e-4) << "rank " << i;
    }
    // Greedy: the chosen token is the most likely one.
    for (size_t t = 0; t < r.tokenIds.size(); t++)
    {
        EXPECT_EQ(r.topLogprobTokenIds[t * 5], r.tokenIds[t]);
        EXPECT_EQ(r.topLogprobs[t * 5], r.tokenLogprobs[t]);
        for (int i = 1; i < 5; i++)
            EXPECT_LE(r.topLogprobs[t * 5 + i], r.topLogprobs[t * 5 + i - 1]);
    }
}

// Every step (sampled, with penalties and top-k that do not change what is reported): the
// log-softmax of the logits the Net gives for the same prefix in one forward.
TEST(OpenAIGenerationOptions, logprobsAreTheLogSoftmaxOfTheRawLogits)
{
    GenerationConfig c = withLogprobs(3, 12);
    c.temperature = 1.3f;
    c.topK = 5;
    c.repetitionPenalty = 1.5f;
    c.presencePenalty = 0.5f;
    c.seed = 11;
    const GenerationResult r = runAlone("Once upon a time", c);
    ASSERT_EQ(r.tokenIds.size(), 12u);
    ASSERT_EQ(r.tokenLogprobs.size(), 12u);
    Net net = readNet(storiesModel());
    std::vector<int> prefix = {1, 403, 407, 261, 378};  // "Once upon a time" with BOS
    for (size_t t = 0; t < r.tokenIds.size(); t++)
    {
        resetLLMState(net);
        net.setInput(llm_test::idsToMat(prefix));
        const Mat out = net.forward();
        const Mat rows = out.reshape(1, (int)(out.total() / out.size[out.dims - 1]));
        const Mat last = rows.row(rows.rows - 1);
        const std::vector<double> p = llm_test::softmax(last);
        EXPECT_NEAR(r.tokenLogprobs[t], std::log(p[r.tokenIds[t]]), 1e-3) << "step " << t;
        std::vector<int> order(p.size());
        for (size_t i = 0; i < order.size(); i++)
            order[i] = (int)i;
        std::partial_sort(order.begin(), order.begin() + 3, order.end(), [&](int a, int b) { return p[a] > p[b]; });
        for (int i = 0; i < 3; i++)
        {
            EXPECT_EQ(r.topLogprobTokenIds[t * 3 + i], order[i]) << "step " << t << " rank " << i;
            EXPECT_NEAR(r.topLogprobs[t * 3 + i], std::log(p[order[i]]), 1e-3) << "step " << t << " rank " << i;
        }
        prefix.push_back(r.tokenIds[t]);
    }
}

// The server streams log-probabilities: a running request's result, taken inside onPiece, has
// them for every token so far, and they are those of the final result.
TEST(OpenAIGenerationOptions, runningResultHasLogprobsSoFar)
{
    Ptr<GenerationEngine> engine = GenerationEngine::create(storiesModel());
    GenerationRequest r;
    r.prompt = "Once upon a time";
    r.config = withLogprobs(2, 20);
    std::vector<GenerationResult> snapshots;
    int id = -1;
    r.onPiece = [&](int requestId, const String&) {
        snapshots.push_back(engine->takeResult(requestId));
        return true;
    };
    id = engine->submit(r);
    const GenerationResult final = engine->wait(id);
    ASSERT_EQ(final.tokenIds.size(), 20u);
    ASSERT_GE(snapshots.size(), 10u);
    size_t previous = 0;
    for (const GenerationResult& s : snapshots)
    {
        EXPECT_FALSE(s.isDone());
        EXPECT_EQ(s.requestId, id);
        const size_t n = s.tokenIds.size();
        EXPECT_GT(n, previous);
        previous = n;
        EXPECT_EQ(s.generatedTokens, (int)n);
        ASSERT_EQ(s.tokenLogprobs.size(), n);
        ASSERT_EQ(s.topLogprobTokenIds.size(), 2 * n);
        ASSERT_EQ(s.topLogprobs.size(), 2 * n);
        EXPECT_TRUE(std::equal(s.tokenIds.begin(), s.tokenIds.end(), final.tokenIds.begin()));
        EXPECT_TRUE(std::equal(s.tokenLogprobs.begin(), s.tokenLogprobs.end(), final.tokenLogprobs.begin()));
        EXPECT_TRUE(std::equal(s.topLogprobs.begin(), s.topLogprobs.end(), final.topLogprobs.begin()));
    }
}

// Tokens kept from speculative drafts get theirs from the verifying forward: the same as
// without drafts. A stop string that cuts the text keeps one log-probability per token id.
TEST(OpenAIGenerationOptions, logprobsWithDraftsAndStopStrings)
{
    const String prompt = "Once upon a time, there was a little girl named Lily. She loved to play. "
                          "Once upon a time, there was a little girl named";
    GenerationConfig c = withLogprobs(4, 24);
    const GenerationResult plain = runAlone(prompt, c);
    c.draftTokens = 4;
    c.lookupNgram = 3;
    const GenerationResult drafted = runAlone(prompt, c);
    ASSERT_GT(drafted.acceptedDraftTokens, 0);
    ASSERT_EQ(drafted.tokenIds, plain.tokenIds);
    ASSERT_EQ(drafted.tokenLogprobs.size(), plain.tokenLogprobs.size());
    ASSERT_EQ(drafted.topLogprobTokenIds, plain.topLogprobTokenIds);
    for (size_t i = 0; i < plain.tokenLogprobs.size(); i++)
        EXPECT_NEAR(drafted.tokenLogprobs[i], plain.tokenLogprobs[i], 1e-4) << "token " << i;
    for (size_t i = 0; i < plain.topLogprobs.size(); i++)
        EXPECT_NEAR(drafted.topLogprobs[i], plain.topLogprobs[i], 1e-4) << "entry " << i;

    GenerationConfig stop = withLogprobs(1, 24);
    stop.stopStrings = {"ly"};  // inside " Lily": the token holding it is generated, its text cut
    const GenerationResult cut = runAlone(prompt, stop);
    EXPECT_EQ(cut.finishReason, "stop");
    EXPECT_EQ(cut.text.find("ly"), std::string::npos);
    EXPECT_EQ(cut.tokenLogprobs.size(), cut.tokenIds.size());
    EXPECT_EQ(cut.topLogprobs.size(), cut.tokenIds.size());
    EXPECT_EQ(cut.topLogprobTokenIds.size(), cut.tokenIds.size());
}

TEST(OpenAIGenerationOptions, logprobsOffByDefaultAndRangeChecked)
{
    const GenerationResult r = runAlone("Once upon a time", withLogprobs(-1, 4));
    EXPECT_EQ(r.tokenIds.size(), 4u);
    EXPECT_TRUE(r.tokenLogprobs.empty() && r.topLogprobTokenIds.empty() && r.topLogprobs.empty());
    const GenerationResult own = runAlone("Once upon a time", withLogprobs(0, 4));
    EXPECT_EQ(own.tokenLogprobs.size(), 4u);
    EXPECT_TRUE(own.topLogprobTokenIds.empty() && own.topLogprobs.empty());
    EXPECT_EQ(GenerationConfig().topLogprobs, -1);
    for (int bad : {-2, 21})
    {
        const GenerationResult e = runAlone("Once upon a time", withLogprobs(bad, 4));
        EXPECT_EQ(e.finishReason, "error");
        EXPECT_NE(e.error.find("GenerationConfig::topLogprobs"), std::string::npos) << e.error;
    }
}

} // namespace
