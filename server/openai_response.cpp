// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "openai_response.hpp"

namespace llm_server {

using nlohmann::json;

std::string dumpJson(const json& j)
{
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string errorBody(const ApiError& error)
{
    return dumpJson({{"error",
                      {{"message", error.what()},
                       {"type", error.type},
                       {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                       {"code", error.status}}}});
}

std::string finishReasonOf(const FinishedChoice& choice)
{
    if (!choice.reply.calls.empty())
        return "tool_calls";
    return choice.result.finishReason == "length" ? "length" : "stop";
}

json usageOf(const std::vector<FinishedChoice>& choices)
{
    // A prompt's n choices share it: counted once, as OpenAI does.
    int completion = 0, prompt = 0, cached = 0;
    for (const FinishedChoice& c : choices)
    {
        completion += c.result.generatedTokens;
        if (c.countsPrompt)
        {
            prompt += c.result.promptTokens;
            cached += c.result.cachedPromptTokens;
        }
    }
    return {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

namespace {

json bytesOf(const std::string& s)
{
    json bytes = json::array();
    for (unsigned char c : s)
        bytes.push_back((int)c);
    return bytes;
}

} // namespace

json logprobsOf(const cv::dnn::GenerationResult& r, size_t first, size_t last, bool chat, const TokenText& tokenText)
{
    last = std::min(last, std::min(r.tokenIds.size(), r.tokenLogprobs.size()));
    const size_t perToken = r.tokenLogprobs.empty() ? 0 : r.topLogprobs.size() / r.tokenLogprobs.size();
    if (chat)
    {
        json content = json::array();
        for (size_t i = first; i < last; i++)
        {
            const std::string token = tokenText(r.tokenIds[i]);
            json top = json::array();
            for (size_t k = 0; k < perToken; k++)
            {
                const std::string alt = tokenText(r.topLogprobTokenIds[i * perToken + k]);
                top.push_back({{"token", alt}, {"logprob", r.topLogprobs[i * perToken + k]}, {"bytes", bytesOf(alt)}});
            }
            content.push_back({{"token", token}, {"logprob", r.tokenLogprobs[i]}, {"bytes", bytesOf(token)},
                               {"top_logprobs", top}});
        }
        return {{"content", content}};
    }
    json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
    size_t offset = 0;
    for (size_t i = first; i < last; i++)
    {
        const std::string token = tokenText(r.tokenIds[i]);
        tokens.push_back(token);
        logprobs.push_back(r.tokenLogprobs[i]);
        json alternatives = json::object();
        for (size_t k = 0; k < perToken; k++)
            alternatives[tokenText(r.topLogprobTokenIds[i * perToken + k])] = r.topLogprobs[i * perToken + k];
        top.push_back(alternatives);
        offsets.push_back(offset);
        offset += token.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json toolCallsDelta(const std::vector<ToolCall>& calls)
{
    json out = json::array();
    for (size_t i = 0; i < calls.size(); i++)
        out.push_back({{"index", (int)i},
                       {"id", calls[i].id},
                       {"type", "function"},
                       {"function", {{"name", calls[i].name}, {"arguments", calls[i].argumentsJson}}}});
    return out;
}

std::string completionBody(const ParsedRequest& request, const ReplyHeader& header,
                           const std::vector<FinishedChoice>& choices, const TokenText& tokenText)
{
    json out = {{"id", header.id},
                {"object", request.chat ? "chat.completion" : "text_completion"},
                {"created", header.created},
                {"model", header.model},
                {"system_fingerprint", "opencv-dnn-llm"}};
    json list = json::array();
    for (size_t i = 0; i < choices.size(); i++)
    {
        const FinishedChoice& c = choices[i];
        json choice = {{"index", (int)i}, {"finish_reason", finishReasonOf(c)}};
        const json logprobs = request.logprobs ? logprobsOf(c.result, 0, c.result.tokenIds.size(), request.chat,
                                                            tokenText)
                                               : json(nullptr);
        choice["logprobs"] = logprobs;
        if (request.chat)
        {
            json message = {{"role", "assistant"}};
            message["content"] = c.reply.calls.empty() || !c.reply.content.empty() ? json(c.reply.content) : json(nullptr);
            if (!c.reply.calls.empty())
            {
                json calls = toolCallsDelta(c.reply.calls);
                for (json& call : calls)
                    call.erase("index");  // a delta's field, not a message's
                message["tool_calls"] = calls;
            }
            choice["message"] = message;
        }
        else
            choice["text"] = c.echoed + c.reply.content;
        list.push_back(choice);
    }
    out["choices"] = list;
    out["usage"] = usageOf(choices);
    return dumpJson(out);
}

std::string chunkBody(const ParsedRequest& request, const ReplyHeader& header, int index, const json& delta,
                      const std::string& finishReason, const json& logprobs)
{
    json choice = {{"index", index},
                   {"finish_reason", finishReason.empty() ? json(nullptr) : json(finishReason)},
                   {"logprobs", logprobs}};
    if (request.chat)
        choice["delta"] = delta;
    else
        choice["text"] = delta.value("text", std::string());
    return dumpJson({{"id", header.id},
                     {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
                     {"created", header.created},
                     {"model", header.model},
                     {"system_fingerprint", "opencv-dnn-llm"},
                     {"choices", json::array({choice})}});
}

std::string usageChunkBody(const ParsedRequest& request, const ReplyHeader& header, const json& usage)
{
    return dumpJson({{"id", header.id},
                     {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
                     {"created", header.created},
                     {"model", header.model},
                     {"system_fingerprint", "opencv-dnn-llm"},
                     {"choices", json::array()},
                     {"usage", usage}});
}

} // namespace llm_server
