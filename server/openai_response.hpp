// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Replies in OpenAI's shapes: whole completions, stream chunks, usage, logprobs and errors.

#ifndef OPENCV_DNN_LLM_SERVER_OPENAI_RESPONSE_HPP
#define OPENCV_DNN_LLM_SERVER_OPENAI_RESPONSE_HPP

#include "openai_request.hpp"
#include "tool_calls.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace llm_server {

//! Text of one token id (for logprobs).
typedef std::function<std::string(int)> TokenText;

//! What one reply carries everywhere: its id, creation time and model name.
struct ReplyHeader
{
    std::string id;       //!< "chatcmpl-..." / "cmpl-..."
    long long created = 0;
    std::string model;
};

//! The end of one choice: its engine result, and for chat with tools the calls read out of it.
struct FinishedChoice
{
    cv::dnn::GenerationResult result;
    ReplyWithCalls reply;        //!< content and calls (chat); content alone otherwise
    std::string echoed;          //!< /v1/completions with echo: its prompt, before its text
    bool countsPrompt = true;    //!< the first choice of its prompt (usage counts each prompt once)
};

//! Compact JSON text (invalid UTF-8 replaced, never thrown on).
std::string dumpJson(const nlohmann::json& j);

//! {"error": {"message", "type", "param", "code"}}.
std::string errorBody(const ApiError& error);

//! OpenAI's finish_reason of a finished choice ("stop", "length", "tool_calls").
std::string finishReasonOf(const FinishedChoice& choice);

//! usage: prompt / completion / total tokens, prompt_tokens_details.cached_tokens (each prompt once).
nlohmann::json usageOf(const std::vector<FinishedChoice>& choices);

/** Per-token logprobs of tokens [first, last) of a result. Chat: {"content": [{"token",
"logprob", "bytes", "top_logprobs": [...]}]}; completions: {"tokens", "token_logprobs",
"top_logprobs", "text_offset"}. */
nlohmann::json logprobsOf(const cv::dnn::GenerationResult& result, size_t first, size_t last, bool chat,
                          const TokenText& tokenText);

//! A whole /v1/chat/completions or /v1/completions reply.
std::string completionBody(const ParsedRequest& request, const ReplyHeader& header,
                           const std::vector<FinishedChoice>& choices, const TokenText& tokenText);

/** One stream chunk (without the SSE framing). Chat: `delta` is the chat delta object;
completions: delta["text"] is the text. finishReason "" for none; logprobs null for none. */
std::string chunkBody(const ParsedRequest& request, const ReplyHeader& header, int index, const nlohmann::json& delta,
                      const std::string& finishReason, const nlohmann::json& logprobs);

//! The last chunk of stream_options.include_usage: no choices, the usage.
std::string usageChunkBody(const ParsedRequest& request, const ReplyHeader& header, const nlohmann::json& usage);

//! The chat delta that carries tool calls (index i of the reply's calls).
nlohmann::json toolCallsDelta(const std::vector<ToolCall>& calls);

} // namespace llm_server

#endif
