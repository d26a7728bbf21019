// GenerationRequest::messagesJson: chat messages as JSON (what an OpenAI-style server receives),
// rendered through the model's own template like roles / contents, with template variables
// (tools) beside them.

#include <gtest/gtest.h>
#include <opencv2/dnn/generation_engine.hpp>

#include "test_common.hpp"

#include <chrono>

namespace {

using namespace cv;
using namespace cv::dnn;

GenerationResult runAlone(const Ptr<GenerationEngine>& engine, const GenerationRequest& request)
{
    return engine->wait(engine->submit(request));
}

GenerationConfig greedy()
{
    GenerationConfig c;
    c.maxNewTokens = 16;
    return c;
}

TEST(GenerationEngineMessages, jsonMessagesEqualRolesAndContents)
{
    TextGenerationModel model(llm_test::projectRoot() + "/models/demo/demo-stories.gguf");
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);

    GenerationRequest byRoles;
    byRoles.roles = {"system", "user"};
    byRoles.contents = {"You tell short stories.", "Tell me about a \"brave\" cat."};
    byRoles.config = greedy();
    GenerationRequest byJson;
    byJson.messagesJson = R"([{"role": "system", "content": "You tell short stories."},
                              {"role": "user", "content": "Tell me about a \"brave\" cat."}])";
    byJson.config = greedy();

    const GenerationResult a = runAlone(engine, byRoles), b = runAlone(engine, byJson);
    ASSERT_EQ(a.finishReason, "length") << a.error;
    EXPECT_EQ(a.promptTokens, b.promptTokens);
    EXPECT_EQ(a.tokenIds, b.tokenIds);
    // The same prompt as the template's own rendering, tokenized with BOS once.
    const String rendered = model.getChatTemplate()->applyJSON(byJson.messagesJson, true);
    EXPECT_EQ(model.getTokenizer()->encode(rendered, true, true).size(), (size_t)b.promptTokens);
}

TEST(GenerationEngineMessages, contextAndFormsAreChecked)
{
    TextGenerationModel model(llm_test::projectRoot() + "/models/demo/demo-stories.gguf");
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);

    GenerationRequest both;
    both.prompt = "Hello";
    both.messagesJson = R"([{"role": "user", "content": "Hello"}])";
    EXPECT_EQ(runAlone(engine, both).finishReason, "error");

    GenerationRequest contextAlone;
    contextAlone.prompt = "Hello";
    contextAlone.chatContextJson = R"({"tools": []})";
    const GenerationResult r = runAlone(engine, contextAlone);
    EXPECT_EQ(r.finishReason, "error");
    EXPECT_NE(r.error.find("chatContextJson"), std::string::npos) << r.error;

    GenerationRequest notJson;
    notJson.messagesJson = "[{\"role\": ";
    EXPECT_EQ(runAlone(engine, notJson).finishReason, "error");

    GenerationRequest withTools;
    withTools.messagesJson = R"([{"role": "user", "content": "Weather?"}])";
    withTools.chatContextJson = R"({"tools": [{"type": "function", "function": {"name": "get_weather"}}]})";
    withTools.config = greedy();
    EXPECT_EQ(runAlone(engine, withTools).finishReason, "length");
}

} // namespace

namespace {

// A request's first token comes from its own prefill's logits, before the prompts admitted after
// it run: a short prompt admitted with a long one streams its first piece while the long one is
// still being prefilled (the time to first token of a server's early requests).
TEST(GenerationEngineMessages, firstTokenDoesNotWaitForLaterPrompts)
{
    TextGenerationModel model(llm_test::projectRoot() + "/models/demo/demo-stories.gguf");
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    std::string longPrompt = "Once upon a time";
    for (int i = 0; i < 40; i++)
        longPrompt += ", a cat and a dog played in the park";
    typedef std::chrono::steady_clock Clock;
    Clock::time_point firstPiece[2];
    bool seen[2] = {false, false};
    int ids[2] = {0, 0};
    for (int k = 0; k < 2; k++)
    {
        GenerationRequest r;
        r.prompt = k == 0 ? "Once upon a time" : longPrompt;
        r.config.maxNewTokens = 4;
        r.onPiece = [&, k](int, const String&) {
            if (!seen[k])
                firstPiece[k] = Clock::now();
            seen[k] = true;
            return true;
        };
        ids[k] = engine->submit(r);
    }
    const Clock::time_point start = Clock::now();
    engine->step();  // admits both: the short one first
    ASSERT_TRUE(seen[0] && seen[1]);
    const double shortWait = std::chrono::duration<double>(firstPiece[0] - start).count();
    const double longWait = std::chrono::duration<double>(firstPiece[1] - start).count();
    EXPECT_LT(shortWait, 0.5 * longWait) << shortWait << " s vs " << longWait << " s";
    while (engine->step())
    {
    }
    for (int id : ids)
    {
        const GenerationResult r = engine->takeResult(id);
        EXPECT_TRUE(r.finishReason == "length" || r.finishReason == "stop") << r.finishReason << " " << r.error;
    }
}

} // namespace
