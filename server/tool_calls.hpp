// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Tool calls: the form a model writes them in (its chat template tells), the JSON schema that
// forces one call when tool_choice requires it, and the calls read back out of a reply.

#ifndef OPENCV_DNN_LLM_SERVER_TOOL_CALLS_HPP
#define OPENCV_DNN_LLM_SERVER_TOOL_CALLS_HPP

#include <string>
#include <vector>

namespace llm_server {

enum class ToolCallFormat
{
    Hermes,  //!< <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Hermes, Qwen 2.5 / 3, and the default)
    Llama3   //!< {"name": ..., "parameters": {...}} as the whole reply, maybe after <|python_tag|> (Llama 3.x)
};

//! The form a chat template asks for ("" or a template that names neither: Hermes).
ToolCallFormat toolCallFormatOf(const std::string& templateSource);

/** The JSON schema of a reply that is exactly one call: {"name": one of the tools' names (or
`namedTool`), "arguments" / "parameters": that tool's parameters schema}. Throws ApiError (400)
when a tool is malformed or `namedTool` is not among the tools. */
std::string forcedCallSchema(const std::string& toolsJson, const std::string& namedTool, ToolCallFormat format);

struct ToolCall
{
    std::string id;             //!< "call_" and 24 random characters
    std::string name;
    std::string argumentsJson;  //!< the arguments object as JSON text (OpenAI sends it as a string)
};

struct ReplyWithCalls
{
    std::string content;  //!< the reply's text outside the calls
    std::vector<ToolCall> calls;
};

/** The calls in a reply. `forced`: the reply is the JSON object of forcedCallSchema(). Otherwise
calls are looked for in the format's own markup; text that is not a well-formed call stays
content. */
ReplyWithCalls parseToolCalls(const std::string& reply, ToolCallFormat format, bool forced);

/** A reply read for calls while it streams: text that cannot be part of a call goes out as
content at once; from where a call may begin (`<tool_call>`, or a Llama 3 reply that opens with
`{` or `<|python_tag|>`) it is held back and read at the end. */
class StreamedToolCalls
{
public:
    StreamedToolCalls(ToolCallFormat format, bool forced);
    //! Appends a piece of the reply; returns the content that can be sent now.
    std::string push(const std::string& piece);
    //! At the reply's end: the calls, and the content not sent yet.
    ReplyWithCalls finish();

private:
    ToolCallFormat format_;
    bool forced_;
    std::string reply_;
    size_t sent_ = 0;       //!< reply_[0, sent_) went out as content
    bool holding_ = false;  //!< a call may have begun at sent_: the rest waits for finish()
};

} // namespace llm_server

#endif
