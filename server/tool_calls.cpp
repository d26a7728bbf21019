// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "tool_calls.hpp"
#include "openai_request.hpp"

#include <nlohmann/json.hpp>

#include <random>

namespace llm_server {

using nlohmann::json;

namespace {

const char* argumentsKey(ToolCallFormat format)
{
    return format == ToolCallFormat::Llama3 ? "parameters" : "arguments";
}

std::string newCallId()
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = "call_";
    for (int i = 0; i < 24; i++)
        id += alphabet[rng() % (sizeof(alphabet) - 1)];
    return id;
}

//! A call from its JSON object, or false when the object is not one.
bool callFromObject(const json& object, ToolCall& call)
{
    if (!object.is_object() || !object.contains("name") || !object["name"].is_string())
        return false;
    json arguments = json::object();
    for (const char* key : {"arguments", "parameters"})
        if (object.contains(key))
            arguments = object[key];
    if (arguments.is_string())  // some models write the arguments as a JSON string
        arguments = json::parse(arguments.get<std::string>(), nullptr, false);
    if (!arguments.is_object())
        return false;
    call.id = newCallId();
    call.name = object["name"].get<std::string>();
    call.argumentsJson = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    return true;
}

std::string trimmed(const std::string& s)
{
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return std::string();
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

ReplyWithCalls hermesCalls(const std::string& reply)
{
    static const std::string open = "<tool_call>", close = "</tool_call>";
    ReplyWithCalls out;
    size_t pos = 0;
    for (;;)
    {
        const size_t start = reply.find(open, pos);
        if (start == std::string::npos)
            break;
        const size_t bodyStart = start + open.size();
        const size_t end = reply.find(close, bodyStart);  // a reply cut by max_tokens may lack it
        const size_t bodyEnd = end == std::string::npos ? reply.size() : end;
        ToolCall call;
        if (!callFromObject(json::parse(reply.substr(bodyStart, bodyEnd - bodyStart), nullptr, false), call))
            break;  // not a call: the rest stays text
        out.content += reply.substr(pos, start - pos);
        out.calls.push_back(call);
        pos = end == std::string::npos ? reply.size() : end + close.size();
    }
    out.content += reply.substr(pos);
    out.content = trimmed(out.content);
    return out;
}

ReplyWithCalls llama3Calls(const std::string& reply)
{
    std::string text = trimmed(reply);
    static const std::string pythonTag = "<|python_tag|>";
    if (text.compare(0, pythonTag.size(), pythonTag) == 0)
        text = text.substr(pythonTag.size());
    ReplyWithCalls out;
    // One call, or several separated by ';' (Llama 3.2's form); all of them or none.
    size_t pos = 0;
    while (pos < text.size())
    {
        size_t end = text.find(';', pos);
        const std::string part = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        ToolCall call;
        if (!callFromObject(json::parse(part, nullptr, false), call))
        {
            out.calls.clear();
            out.content = trimmed(reply);
            return out;
        }
        out.calls.push_back(call);
        pos = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

} // namespace

ToolCallFormat toolCallFormatOf(const std::string& templateSource)
{
    if (templateSource.find("<tool_call>") != std::string::npos)
        return ToolCallFormat::Hermes;
    if (templateSource.find("<|python_tag|>") != std::string::npos ||
        templateSource.find("\"parameters\": ") != std::string::npos)
        return ToolCallFormat::Llama3;
    return ToolCallFormat::Hermes;
}

std::string forcedCallSchema(const std::string& toolsJson, const std::string& namedTool, ToolCallFormat format)
{
    const json tools = json::parse(toolsJson, nullptr, false);
    json choices = json::array();
    bool namedFound = false;
    for (const json& tool : tools)
    {
        const json& function = tool.value("function", json::object());
        if (!function.contains("name") || !function["name"].is_string())
            throw ApiError(400, "every tool needs function.name (a string)", "tools");
        const std::string name = function["name"].get<std::string>();
        if (!namedTool.empty() && name != namedTool)
            continue;
        namedFound = true;
        json parameters = function.value("parameters", json{{"type", "object"}});
        if (!parameters.is_object())
            throw ApiError(400, "tool '" + name + "': function.parameters must be a JSON schema object", "tools");
        choices.push_back({{"type", "object"},
                           {"properties", {{"name", {{"const", name}}}, {argumentsKey(format), parameters}}},
                           {"required", {"name", argumentsKey(format)}},
                           {"additionalProperties", false}});
    }
    if (!namedTool.empty() && !namedFound)
        throw ApiError(400, "tool_choice names '" + namedTool + "', which is not among the tools", "tool_choice");
    if (choices.empty())
        throw ApiError(400, "tool_choice requires a call but no tool is given", "tool_choice");
    const json schema = choices.size() == 1 ? choices[0] : json{{"anyOf", choices}};
    return schema.dump();
}

ReplyWithCalls parseToolCalls(const std::string& reply, ToolCallFormat format, bool forced)
{
    if (forced)
    {
        ReplyWithCalls out;
        ToolCall call;
        if (callFromObject(json::parse(reply, nullptr, false), call))
            out.calls.push_back(call);
        else
            out.content = reply;  // cut short by max_tokens: what there is, as text
        return out;
    }
    return format == ToolCallFormat::Llama3 ? llama3Calls(reply) : hermesCalls(reply);
}

StreamedToolCalls::StreamedToolCalls(ToolCallFormat format, bool forced)
    : format_(format), forced_(forced), holding_(forced)
{
}

std::string StreamedToolCalls::push(const std::string& piece)
{
    reply_ += piece;
    if (holding_)
        return std::string();
    size_t end = reply_.size();  // what may go out: reply_[sent_, end)
    if (format_ == ToolCallFormat::Llama3)
    {
        // The whole reply is calls or none: decided by how it opens.
        const size_t first = reply_.find_first_not_of(" \t\r\n");
        if (first == std::string::npos)
            return std::string();
        static const std::string pythonTag = "<|python_tag|>";
        const std::string opening = reply_.substr(first, pythonTag.size());
        if (reply_[first] == '{' || pythonTag.compare(0, opening.size(), opening) == 0)
        {
            holding_ = sent_ == 0;  // content already sent: not a reply of calls
            if (holding_)
                return std::string();
        }
    }
    else
    {
        static const std::string open = "<tool_call>";
        const size_t call = reply_.find(open, sent_);
        if (call != std::string::npos)
        {
            end = call;
            holding_ = true;
        }
        else  // keep back a tail that may grow into "<tool_call>"
            for (size_t k = std::min(open.size() - 1, reply_.size() - sent_); k > 0; k--)
                if (reply_.compare(reply_.size() - k, k, open, 0, k) == 0)
                {
                    end = reply_.size() - k;
                    break;
                }
    }
    const std::string out = reply_.substr(sent_, end - sent_);
    sent_ = end;
    return out;
}

ReplyWithCalls StreamedToolCalls::finish()
{
    const std::string rest = reply_.substr(sent_);
    sent_ = reply_.size();
    if (!holding_)
    {
        ReplyWithCalls out;
        out.content = rest;
        return out;
    }
    return parseToolCalls(rest, format_, forced_);
}

} // namespace llm_server
