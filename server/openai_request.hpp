// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The bodies of OpenAI's /v1/chat/completions and /v1/completions read into engine requests.
// Pure: no model, no network, so that the fuzz target (tools/fuzz/fuzz_openai_request.cpp) runs
// it on any bytes. Everything wrong in a body is an ApiError (HTTP 400) naming the field.

#ifndef OPENCV_DNN_LLM_SERVER_OPENAI_REQUEST_HPP
#define OPENCV_DNN_LLM_SERVER_OPENAI_REQUEST_HPP

#include <opencv2/dnn/generation_engine.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace llm_server {

//! An error answered in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error
{
    ApiError(int status, const std::string& message, const std::string& param = std::string(),
             const std::string& type = std::string());
    int status;
    std::string type;   //!< "invalid_request_error", "authentication_error", ...
    std::string param;  //!< the request field at fault ("" for none)
};

//! How a request may call the tools it lists.
enum class ToolChoice
{
    None,      //!< no tools (none given, or tool_choice "none")
    Auto,      //!< the model decides; calls in its output are parsed back
    Required,  //!< the reply is one call of one of the tools (enforced by a grammar)
    Named      //!< the reply is one call of the tool named (enforced by a grammar)
};

//! What the HTTP layer needs to know of the model to read a request.
struct RequestLimits
{
    bool hasProjector = false;   //!< images allowed (a model loaded with its mmproj)
    int vocabSize = 0;           //!< token ids must be below it
    int maxImages = 16;          //!< per request
    bool templateKnowsToolRole = true;  //!< false: "tool" messages are given to the template as "user" ones
    std::vector<int> adapterIds; //!< the loaded LoRA adapters (ids a `lora` list may name)
};

struct ParsedRequest
{
    bool chat = false;          //!< /v1/chat/completions (else /v1/completions)
    bool stream = false;
    bool includeUsage = false;  //!< stream_options.include_usage
    bool echo = false;          //!< /v1/completions: the prompt before the completion
    int n = 1;                  //!< choices
    bool logprobs = false;      //!< per-token log probabilities in the reply
    int topLogprobs = 0;        //!< alternatives per token (with logprobs)
    std::string model;          //!< as the client named it (answered back)

    ToolChoice toolChoice = ToolChoice::None;
    std::string toolsJson;      //!< the "tools" array (JSON) when toolChoice != None
    std::string namedTool;      //!< ToolChoice::Named: the function's name
    std::string responseFormat; //!< "", "json_object" or "json_schema"

    //! The engine request (messagesJson, images, config; the prompt of /v1/completions is in
    //! prompts). For n > 1 choice i runs it with seed + i.
    cv::dnn::GenerationRequest request;

    //! /v1/completions: its prompts (OpenAI's list of prompts: one request each), as text or
    //! token ids. Prompt k's choice i is the reply's choice k * n + i.
    struct Prompt
    {
        std::string text;
        std::vector<int> tokenIds;
    };
    std::vector<Prompt> prompts;

    //! The engine requests of the reply's choices, in order (a prompt's n choices together).
    std::vector<cv::dnn::GenerationRequest> choiceRequests() const;
};

//! Most prompts in one /v1/completions request, and most choices (prompts x n) in any request.
constexpr int kMaxPrompts = 16;
constexpr int kMaxChoices = 16;

/** Reads a /v1/chat/completions body. Messages keep their extra fields (tool_calls,
tool_call_id, name); content parts become text, with `<__media__>` where an image was, and the
images (base64 data URLs) are decoded into request.images. */
ParsedRequest parseChatRequest(const std::string& body, const RequestLimits& limits);

//! Reads a /v1/completions body: prompt as text, token ids, or a list of one of them.
ParsedRequest parseCompletionRequest(const std::string& body, const RequestLimits& limits);

//! Reads the bodies of /tokenize ({"content", "add_special"}) and /detokenize ({"tokens"}).
struct TokenizeRequest
{
    std::string content;
    bool addSpecial = false;
    bool parseSpecial = true;
};
TokenizeRequest parseTokenizeRequest(const std::string& body);
std::vector<int> parseDetokenizeRequest(const std::string& body, int vocabSize);

/** Reads a llama-server LoRA list, [{"id": N, "scale": S}, ...] (POST /lora-adapters' body and the
`lora` field of a generation request): every id one of limits.adapterIds, at most once, and a
finite scale. Returns (id, scale) pairs in the list's order. */
std::vector<std::pair<int, float>> parseLoraList(const std::string& body, const RequestLimits& limits);

//! Nesting deeper than this is refused before parsing (a bound on the parser's and the
//! destructor's recursion, whatever the body).
constexpr int kMaxJsonDepth = 64;

} // namespace llm_server

#endif
