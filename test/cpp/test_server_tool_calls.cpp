// llm_server's tool calls (server/tool_calls.cpp) and chat messages (server/openai_request.cpp):
// the form a real chat template asks for, calls read back from replies in that form (whole or
// streamed), and OpenAI-shaped messages rendered by the real templates as they expect them.

#include <gtest/gtest.h>
#include <opencv2/dnn/chat_template.hpp>

#include "../../server/openai_request.hpp"
#include "../../server/tool_calls.hpp"
#include "test_common.hpp"

#include <fstream>
#include <sstream>

namespace {

using namespace llm_server;

std::string sharedTemplate(const std::string& name)
{
    std::ifstream f(llm_test::sharedTestData("chat-templates/" + name + ".jinja"));
    std::stringstream s;
    s << f.rdbuf();
    EXPECT_FALSE(s.str().empty()) << name;
    return s.str();
}

TEST(ServerToolCalls, formatFromTheRealTemplates)
{
    for (const char* hermes : {"Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
                               "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use"})
        EXPECT_EQ(toolCallFormatOf(sharedTemplate(hermes)), ToolCallFormat::Hermes) << hermes;
    for (const char* llama3 : {"meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.3-70B-Instruct"})
        EXPECT_EQ(toolCallFormatOf(sharedTemplate(llama3)), ToolCallFormat::Llama3) << llama3;
    EXPECT_EQ(toolCallFormatOf(""), ToolCallFormat::Hermes);
}

TEST(ServerToolCalls, hermesCallsAmidText)
{
    const ReplyWithCalls r = parseToolCalls(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
        ToolCallFormat::Hermes, false);
    EXPECT_EQ(r.content, "Let me check.");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].argumentsJson, "{\"city\":\"Paris\"}");
    EXPECT_EQ(r.calls[1].name, "get_time");
    EXPECT_EQ(r.calls[1].argumentsJson, "{}");
    EXPECT_EQ(r.calls[0].id.compare(0, 5, "call_"), 0);
    EXPECT_EQ(r.calls[0].id.size(), 29u);
    EXPECT_NE(r.calls[0].id, r.calls[1].id);

    // Cut by max_tokens before the closing tag: still a call; arguments written as a string: parsed.
    const ReplyWithCalls cut = parseToolCalls("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}",
                                              ToolCallFormat::Hermes, false);
    ASSERT_EQ(cut.calls.size(), 1u);
    EXPECT_EQ(cut.calls[0].argumentsJson, "{\"a\":1}");
    // Not a call: text.
    for (const char* text : {"<tool_call>{\"name\": 5}</tool_call>", "<tool_call>not json</tool_call>",
                             "<tool_call>{\"arguments\": {}}</tool_call>", "no call here"})
    {
        const ReplyWithCalls none = parseToolCalls(text, ToolCallFormat::Hermes, false);
        EXPECT_TRUE(none.calls.empty()) << text;
        EXPECT_EQ(none.content, text);
    }
}

TEST(ServerToolCalls, llama3Calls)
{
    ReplyWithCalls r = parseToolCalls("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
                                      ToolCallFormat::Llama3, false);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].argumentsJson, "{\"city\":\"Oslo\"}");
    EXPECT_EQ(r.content, "");
    r = parseToolCalls(" {\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"x\": [1]}}",
                       ToolCallFormat::Llama3, false);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[1].name, "g");
    EXPECT_EQ(r.calls[1].argumentsJson, "{\"x\":[1]}");
    r = parseToolCalls("The weather is {\"name\": \"f\"}", ToolCallFormat::Llama3, false);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.content, "The weather is {\"name\": \"f\"}");
}

TEST(ServerToolCalls, forcedCallSchemaNamesTheTools)
{
    const std::string tools = R"([{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                                  {"type": "function", "function": {"name": "b"}}])";
    EXPECT_NE(forcedCallSchema(tools, "", ToolCallFormat::Hermes).find("\"anyOf\""), std::string::npos);
    const std::string named = forcedCallSchema(tools, "b", ToolCallFormat::Llama3);
    EXPECT_NE(named.find("{\"const\":\"b\"}"), std::string::npos) << named;
    EXPECT_NE(named.find("\"parameters\""), std::string::npos) << named;
    EXPECT_THROW(forcedCallSchema(tools, "c", ToolCallFormat::Hermes), ApiError);
    const ReplyWithCalls forced = parseToolCalls("{\"name\":\"b\",\"parameters\":{\"k\":true}}", ToolCallFormat::Llama3, true);
    ASSERT_EQ(forced.calls.size(), 1u);
    EXPECT_EQ(forced.calls[0].argumentsJson, "{\"k\":true}");
}

// Pieces as a model streams them: content goes out at once, except what may begin a call.
TEST(ServerToolCalls, streamedHermesRepliesHoldBackOnlyWhatMayBeACall)
{
    StreamedToolCalls s(ToolCallFormat::Hermes, false);
    EXPECT_EQ(s.push("Sure"), "Sure");
    EXPECT_EQ(s.push(". <tool"), ". ");  // "<tool" may grow into "<tool_call>"
    EXPECT_EQ(s.push("_call>{\"name\": \"f\", "), "");
    EXPECT_EQ(s.push("\"arguments\": {\"q\": 1}}</tool_call>"), "");
    const ReplyWithCalls r = s.finish();
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].argumentsJson, "{\"q\":1}");
    EXPECT_EQ(r.content, "");

    StreamedToolCalls text(ToolCallFormat::Hermes, false);
    EXPECT_EQ(text.push("a <"), "a ");
    EXPECT_EQ(text.push("b> c"), "<b> c");  // not a call after all
    const ReplyWithCalls end = text.finish();
    EXPECT_TRUE(end.calls.empty());
    EXPECT_EQ(end.content, "");
}

TEST(ServerToolCalls, streamedLlama3RepliesAreCallsOrTextFromTheStart)
{
    StreamedToolCalls call(ToolCallFormat::Llama3, false);
    EXPECT_EQ(call.push(" {\"name\": \"f\", "), "");
    EXPECT_EQ(call.push("\"parameters\": {}}"), "");
    EXPECT_EQ(call.finish().calls.size(), 1u);

    StreamedToolCalls text(ToolCallFormat::Llama3, false);
    EXPECT_EQ(text.push("Hello"), "Hello");
    EXPECT_EQ(text.push(" {\"name\": \"f\"}"), " {\"name\": \"f\"}");
    EXPECT_TRUE(text.finish().calls.empty());

    StreamedToolCalls forced(ToolCallFormat::Hermes, true);
    EXPECT_EQ(forced.push("{\"name\": \"f\", \"arguments\": {}}"), "");
    EXPECT_EQ(forced.finish().calls.size(), 1u);
}

// OpenAI's messages (tool_calls with arguments as a JSON string, a tool result) as the real
// Qwen 2.5 template expects them: arguments as an object, written by its tojson.
TEST(ServerToolCalls, openaiMessagesRenderThroughTheRealTemplate)
{
    RequestLimits limits;
    limits.vocabSize = 100;
    const ParsedRequest p = parseChatRequest(R"({
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})",
                                             limits);
    EXPECT_EQ(p.toolChoice, ToolChoice::Auto);
    cv::Ptr<cv::dnn::ChatTemplate> t = cv::dnn::ChatTemplate::create(sharedTemplate("Qwen-Qwen2.5-7B-Instruct"));
    const std::string prompt = t->applyJSON(p.request.messagesJson, true, p.request.chatContextJson);
    EXPECT_NE(prompt.find("<|im_start|>user\nWeather in Paris?<|im_end|>"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("\"name\": \"get_weather\""), std::string::npos);  // the tools' list
}

TEST(ServerRequests, fieldsAndErrors)
{
    RequestLimits limits;
    limits.vocabSize = 50;
    const ParsedRequest p = parseCompletionRequest(
        R"({"prompt": [[1, 2, 3]], "max_tokens": 7, "temperature": 0.5, "top_k": 4, "seed": -3, "stop": "x",
            "n": 3, "logprobs": 2, "echo": true, "presence_penalty": 0.5})", limits);
    const std::vector<cv::dnn::GenerationRequest> choices = p.choiceRequests();
    ASSERT_EQ(choices.size(), 3u);  // one prompt, n = 3: seeds s, s + 1, s + 2
    for (int i = 0; i < 3; i++)
    {
        EXPECT_EQ(choices[i].promptTokenIds, std::vector<int>({1, 2, 3}));
        EXPECT_EQ(choices[i].config.seed, p.request.config.seed + i);
    }
    EXPECT_EQ(p.request.config.maxNewTokens, 7);
    EXPECT_FLOAT_EQ(p.request.config.temperature, 0.5f);
    EXPECT_EQ(p.request.config.topK, 4);
    EXPECT_GE(p.request.config.seed, 0);
    EXPECT_EQ(p.request.config.stopStrings.size(), 1u);
    EXPECT_EQ(p.n, 3);
    EXPECT_EQ(p.request.config.topLogprobs, 2);
    EXPECT_TRUE(p.echo);
    EXPECT_FLOAT_EQ(p.request.config.presencePenalty, 0.5f);
    const ParsedRequest two = parseCompletionRequest(R"({"prompt": ["a", "b"], "n": 2})", limits);
    const std::vector<cv::dnn::GenerationRequest> four = two.choiceRequests();
    ASSERT_EQ(four.size(), 4u);  // prompt k's choice i at k * n + i
    EXPECT_EQ(four[1].prompt, "a");
    EXPECT_EQ(four[2].prompt, "b");
    EXPECT_THROW(parseCompletionRequest(R"({"prompt": ["a", "b", "c"], "n": 6})", limits), ApiError);
    EXPECT_THROW(parseCompletionRequest(R"({"prompt": ["a", {}]})", limits), ApiError);
    try
    {
        parseCompletionRequest(R"({"prompt": [1, 50]})", limits);
        FAIL();
    }
    catch (const ApiError& e)
    {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.param, "prompt");
        EXPECT_NE(std::string(e.what()).find("0..49"), std::string::npos) << e.what();
    }
}

} // namespace
