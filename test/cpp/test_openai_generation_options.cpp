// The generation options an OpenAI-compatible server passes through (issue 40), end to end on
// real models: frequency / presence penalties.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/generation_engine.hpp>

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

} // namespace
