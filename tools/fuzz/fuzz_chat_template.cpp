// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as a chat template and a conversation, through
// ChatTemplate::fromJinja, fromName, format and turnEndMarkers. A cv::Exception is the expected
// answer to a template that is not recognised, a name that is not known or a conversation whose
// roles a family rejects; anything else (a crash, a sanitizer report, a leak, a timeout, a broken
// invariant below) is a bug.
//
// Input layout (so that the seeds in seeds/chat_template are plain text files):
//   byte 0            options: bit 0 addGenerationPrompt, bits 1-2 the BOS text
//                     ("", "<s>", "<bos>", the last content), bits 3-7 a family value
//                     (also out of range) for the ChatTemplate constructor
//   bytes 1..         fields separated by '\f': the Jinja template text, then role and content
//                     of each message in turn (at most kMaxMessages)

#include "llm/generation/chat_template.hpp"

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
