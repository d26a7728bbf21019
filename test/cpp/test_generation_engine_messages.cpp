// GenerationRequest::messagesJson: chat messages as JSON (what an OpenAI-style server receives),
// rendered through the model's own template like roles / contents, with template variables
// (tools) beside them.

#include <gtest/gtest.h>
#include <opencv2/dnn/generation_engine.hpp>

#include "test_common.hpp"

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
