// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as a chat template and a conversation, through our Jinja
// engine (jinja::Template: lexer, parser, interpreter, filters, JSON bridge; and the public
// cv::dnn::ChatTemplate::applyJSON) and through the built-in families (llm::ChatTemplate::fromJinja,
// fromName, format, turnEndMarkers). A cv::Exception is the expected answer to a template that
// does not compile or raises, reaches a render limit, is not recognised as a family, or a
// conversation a family rejects; anything else (a crash, a sanitizer report, a leak, a timeout,
// another exception, a broken invariant below) is a bug.
//
// Input layout (so that the seeds in seeds/chat_template are plain text files):
//   byte 0            options: bit 0 addGenerationPrompt, bits 1-2 the BOS text
//                     ("", "<s>", "<bos>", the last content), bits 3-7 a family value
//                     (also out of range) for the ChatTemplate constructor
//   bytes 1..         fields separated by '\f': the Jinja template text, then role and content
//                     of each message in turn (at most kMaxMessages)
// The Jinja render gets add_generation_prompt from bit 0, a tools list when bit 1 is set, and
// the conversation (an odd last field becomes an assistant message with a tool call).

#include <opencv2/dnn/chat_template.hpp>

#include "llm/generation/chat_template.hpp"
#include "llm/jinja/template.hpp"
#include "llm/common/utf8.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using cv::dnn::llm::ChatMessage;
using cv::dnn::llm::ChatTemplate;
using cv::dnn::llm::ChatTemplateFamily;

const size_t kMaxMessages = 16;
const int kFamilyCount = 7;

// Limits small enough that every input renders in milliseconds.
cv::dnn::llm::jinja::RenderOptions fuzzOptions()
{
    cv::dnn::llm::jinja::RenderOptions options;
    options.limits.maxOutputBytes = 1 << 20;
    options.limits.maxSteps = 200000;
    options.limits.maxLoopIterations = 20000;
    options.limits.maxCallDepth = 32;
    options.fixedTime = true;
    options.time.tm_year = 126;
    options.time.tm_mday = 15;
    return options;
}

// A JSON string of the text (made valid UTF-8 first, as JSON must be).
std::string jsonString(const std::string& text)
{
    std::string out = "\"";
    for (unsigned char c : cv::dnn::llm::sanitizeUtf8(text))
    {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c < 0x20)
        {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        }
        else
            out += (char)c;
    }
    return out + "\"";
}

// An error of a template names its line and column; other errors (limits included) do too,
// except for a template that is too long and variables that are not valid JSON (here: text
// that is not valid UTF-8).
void checkTemplateError(const cv::Exception& e)
{
    // OpenCV prefixes each line of a multi-line message (a template's raise_exception text may
    // have several) with "> ".
    const std::string m = e.err.compare(0, 2, "> ") == 0 ? e.err.substr(2) : e.err;
    if (m.compare(0, 15, "Jinja template,") == 0 && m.find(", line ") == std::string::npos)
        std::abort();
    if (m.compare(0, 15, "Jinja template,") != 0 && m.compare(0, 15, "Jinja template:") != 0 &&
        m.find("not valid JSON") == std::string::npos && m.find("ChatTemplate") == std::string::npos)
        std::abort();
}

void fuzzJinja(const std::string& jinja, const std::vector<ChatMessage>& messages, uint8_t options)
{
    using cv::dnn::llm::jinja::Template;
    std::string json = "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": ";
    json += (options & 1) ? "true" : "false";
    json += ", \"tools\": ";
    json += (options & 2) ? "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                            "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}}}}]"
                          : "null";
    std::string list = "[";
    for (size_t i = 0; i < messages.size(); i++)
    {
        list += (i ? ", " : "") + std::string("{\"role\": ") + jsonString(messages[i].role) + ", \"content\": " +
                jsonString(messages[i].content);
        if (i + 1 == messages.size() && (options & 4))
            list += ", \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
                    "\"arguments\": {\"a\": \"x\"}}}]";
        list += "}";
    }
    list += "]";
    json += ", \"messages\": " + list + "}";
    try
    {
        const Template compiled(jinja);
        std::string first;
        bool firstRaised = false, limitReached = false;
        try
        {
            first = compiled.renderJson(json, fuzzOptions());
            if (first.size() > fuzzOptions().limits.maxOutputBytes)
                std::abort();
        }
        catch (const cv::Exception& e)
        {
            checkTemplateError(e);
            firstRaised = true;
            limitReached = e.err.find("limit reached") != std::string::npos;
        }
        // Rendering is deterministic: a second render gives the same text or raises again.
        try
        {
            if (compiled.renderJson(json, fuzzOptions()) != first || firstRaised)
                std::abort();
        }
        catch (const cv::Exception&)
        {
            if (!firstRaised)
                std::abort();
        }
        if (limitReached)
            return;  // the public API's default limits are far higher: too slow for fuzzing
    }
    catch (const cv::Exception& e)
    {
        checkTemplateError(e);
        return;
    }
    // The public API on the same template, with role / content messages only.
    try
    {
        cv::dnn::ChatTemplate::create(jinja, "<s>", "</s>")->applyJSON(list, (options & 1) != 0, std::string());
    }
    catch (const cv::Exception& e)
    {
        checkTemplateError(e);
    }
}

std::vector<std::string> splitFields(const uint8_t* data, size_t size)
{
    std::vector<std::string> fields(1);
    for (size_t i = 0; i < size; i++)
    {
        if (data[i] == '\f')
            fields.emplace_back();
        else
            fields.back().push_back(static_cast<char>(data[i]));
    }
    return fields;
}

// Every family writes its turn-end marker after each assistant message.
void checkFormat(const ChatTemplate& chatTemplate, const std::vector<ChatMessage>& messages,
                 bool addGenerationPrompt, const std::string& bosText)
{
    try
    {
        const std::string prompt = chatTemplate.format(messages, addGenerationPrompt, bosText);
        const std::vector<std::string> markers = chatTemplate.turnEndMarkers();
        if (markers.empty() || markers[0].empty())
            std::abort();
        for (const ChatMessage& message : messages)
            if (message.role == "assistant" && prompt.find(markers[0]) == std::string::npos)
                std::abort();
    }
    catch (const cv::Exception&)
    {
    }
}

void checkName(const ChatTemplate& chatTemplate)
{
    // The canonical name leads back to the same family.
    if (ChatTemplate::fromName(chatTemplate.name()).family() != chatTemplate.family())
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t options = data[0];
    const std::vector<std::string> fields = splitFields(data + 1, size - 1);
    const std::string& jinja = fields[0];

    std::vector<ChatMessage> messages;
    for (size_t i = 1; i + 1 < fields.size() && messages.size() < kMaxMessages; i += 2)
        messages.push_back(ChatMessage{fields[i], fields[i + 1]});
    const bool addGenerationPrompt = (options & 1) != 0;
    std::string bosText;
    switch ((options >> 1) & 3)
    {
    case 1: bosText = "<s>"; break;
    case 2: bosText = "<bos>"; break;
    case 3: if (!messages.empty()) bosText = messages.back().content; break;
    default: break;
    }

    fuzzJinja(jinja, messages, options);

    // The template recognised from the text, if any.
    try
    {
        const ChatTemplate recognised = ChatTemplate::fromJinja(jinja);
        checkName(recognised);
        checkFormat(recognised, messages, addGenerationPrompt, bosText);
    }
    catch (const cv::Exception&)
    {
    }

    // Arbitrary names: the template text and each role.
    try { checkName(ChatTemplate::fromName(jinja)); } catch (const cv::Exception&) {}
    for (const ChatMessage& message : messages)
        try { checkName(ChatTemplate::fromName(message.role)); } catch (const cv::Exception&) {}

    // Every family formats the same conversation, whatever the text was recognised as.
    for (int family = 0; family < kFamilyCount; family++)
        checkFormat(ChatTemplate(static_cast<ChatTemplateFamily>(family)), messages, addGenerationPrompt, bosText);

    // A family value from the input, out of range for most values: rejected with cv::Exception.
    try
    {
        const ChatTemplate fromValue(static_cast<ChatTemplateFamily>(options >> 3));
        checkName(fromValue);
        checkFormat(fromValue, messages, addGenerationPrompt, bosText);
    }
    catch (const cv::Exception&)
    {
    }
    return 0;
}
