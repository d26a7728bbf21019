// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Chat template families: recognition from Jinja text, role checks and formatting.
// Each format*() function reproduces its family's reference template (named above it) as
// transformers renders it; the tests hold those templates and their rendered output.

#include "../../precomp.hpp"
#include "chat_template.hpp"

#include <algorithm>
#include <cctype>

namespace cv {
namespace dnn {
namespace llm {

namespace {

struct FamilyInfo
{
    ChatTemplateFamily family;
    std::string name;
    std::string turnEnd;
};

const std::vector<FamilyInfo>& families()
{
    static const std::vector<FamilyInfo> table = {
        {ChatTemplateFamily::Llama2, "llama2", "</s>"},
        {ChatTemplateFamily::Llama3, "llama3", "<|eot_id|>"},
        {ChatTemplateFamily::ChatML, "chatml", "<|im_end|>"},
        {ChatTemplateFamily::Mistral, "mistral", "</s>"},
        {ChatTemplateFamily::Phi3, "phi3", "<|end|>"},
        {ChatTemplateFamily::Gemma, "gemma", "<end_of_turn>"},
        {ChatTemplateFamily::Zephyr, "zephyr", "</s>"},
    };
    return table;
}

const FamilyInfo& infoOf(ChatTemplateFamily family)
{
    for (const FamilyInfo& info : families())
        if (info.family == family)
            return info;
    CV_Error(Error::StsBadArg, cv::format("ChatTemplate: unknown family %d", (int)family));
}

const char* const kTemplateNames = "llama2, llama3, chatml, mistral, phi3, gemma, zephyr";

bool contains(const std::string& text, const char* marker)
{
    return text.find(marker) != std::string::npos;
}

// Jinja's trim and Python's str.strip(), for the ASCII whitespace that prompts contain.
std::string trimmed(const std::string& text)
{
    const char* const whitespace = " \t\n\r\f\v";
    const size_t begin = text.find_first_not_of(whitespace);
    if (begin == std::string::npos)
        return std::string();
    const size_t end = text.find_last_not_of(whitespace);
    return text.substr(begin, end - begin + 1);
}

bool hasSystemMessage(const std::vector<ChatMessage>& messages)
{
    return !messages.empty() && messages[0].role == "system";
}

// Roles every family shares: system (first only), user, assistant.
void checkRoles(const std::vector<ChatMessage>& messages, const std::string& templateName)
{
    if (messages.empty())
        CV_Error(Error::StsBadArg, "ChatTemplate(" + templateName + "): no messages to format");
    for (size_t i = 0; i < messages.size(); i++)
    {
        const std::string& role = messages[i].role;
        if (role != "system" && role != "user" && role != "assistant")
            CV_Error(Error::StsBadArg, cv::format("ChatTemplate(%s): message %zu has unknown role '%s'; "
                                                  "expected 'system', 'user' or 'assistant'",
                                                  templateName.c_str(), i, role.c_str()));
        if (role == "system" && i > 0)
            CV_Error(Error::StsBadArg, cv::format("ChatTemplate(%s): message %zu is a system message; "
                                                  "only the first message may be one",
                                                  templateName.c_str(), i));
    }
}

// Llama 2, Mistral and Gemma fold the system message into the first user turn and their
// templates raise_exception unless user and assistant alternate from there.
void checkAlternation(const std::vector<ChatMessage>& messages, const std::string& templateName)
{
    const size_t first = hasSystemMessage(messages) ? 1 : 0;
    if (first == messages.size())
        CV_Error(Error::StsBadArg, "ChatTemplate(" + templateName + "): the system message needs a user "
                                   "message after it (this format puts it into the first user turn)");
    for (size_t i = first; i < messages.size(); i++)
    {
        const char* expected = (i - first) % 2 == 0 ? "user" : "assistant";
        if (messages[i].role != expected)
            CV_Error(Error::StsBadArg, cv::format("ChatTemplate(%s): roles must alternate user/assistant "
                                                  "after the optional system message, but message %zu is "
                                                  "'%s' (expected '%s')", templateName.c_str(), i,
                                                  messages[i].role.c_str(), expected));
    }
}

// meta-llama/Llama-2-7b-chat-hf. Each user turn opens a new BOS-delimited sequence.
std::string formatLlama2(const std::vector<ChatMessage>& messages, const std::string& bosText)
{
    const std::string innerBos = bosText.empty() ? std::string("<s>") : bosText;
    const bool hasSystem = hasSystemMessage(messages);
    const size_t first = hasSystem ? 1 : 0;
    std::string prompt;
    for (size_t i = first; i < messages.size(); i++)
    {
        std::string content = messages[i].content;
        if (i == first && hasSystem)
            content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + content;
        // The template strips the whole turn, system block included.
        if (messages[i].role == "user")
            prompt += (i == first ? bosText : innerBos) + "[INST] " + trimmed(content) + " [/INST]";
        else
            prompt += " " + trimmed(content) + " </s>";
    }
    return prompt;
}

// meta-llama/Meta-Llama-3-8B-Instruct.
std::string formatLlama3(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                         const std::string& bosText)
{
    std::string prompt = bosText;
    for (const ChatMessage& message : messages)
        prompt += "<|start_header_id|>" + message.role + "<|end_header_id|>\n\n" + trimmed(message.content) + "<|eot_id|>";
    if (addGenerationPrompt)
        prompt += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return prompt;
}

// teknium/OpenHermes-2.5-Mistral-7B; Qwen2-Instruct with a system message (without one, Qwen2's
// template inserts its own default system message, which we leave to the caller).
std::string formatChatML(const std::vector<ChatMessage>& messages, bool addGenerationPrompt)
{
    std::string prompt;
    for (const ChatMessage& message : messages)
        prompt += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
    if (addGenerationPrompt)
        prompt += "<|im_start|>assistant\n";
    return prompt;
}

// mistralai/Mistral-7B-Instruct-v0.2 (2024 revision, with system message). The spaces around
// [INST] are those SentencePiece adds when mistral-common encodes each turn on its own.
std::string formatMistral(const std::vector<ChatMessage>& messages, const std::string& bosText)
{
    const bool hasSystem = hasSystemMessage(messages);
    const size_t first = hasSystem ? 1 : 0;
    std::string prompt = bosText;
    for (size_t i = first; i < messages.size(); i++)
    {
        if (messages[i].role == "user")
        {
            const std::string systemPrefix = (i == first && hasSystem) ? messages[0].content + "\n\n" : std::string();
            prompt += " [INST] " + systemPrefix + messages[i].content + " [/INST]";
        }
        else
        {
            prompt += " " + messages[i].content + "</s>";
        }
    }
    return prompt;
}

// microsoft/Phi-3.5-mini-instruct (also Phi-3-mini's 2024-07 revision).
std::string formatPhi3(const std::vector<ChatMessage>& messages, bool addGenerationPrompt)
{
    std::string prompt;
    for (const ChatMessage& message : messages)
    {
        if (message.role == "system" && message.content.empty())
            continue;  // the template tests the content's truth value
        prompt += "<|" + message.role + "|>\n" + message.content + "<|end|>\n";
    }
    prompt += addGenerationPrompt ? "<|assistant|>\n" : "<|endoftext|>";
    return prompt;
}

// google/gemma-3-*-it: the system message opens the first user turn. (Gemma 1 and 2 templates
// reject system messages; otherwise they render the same.)
std::string formatGemma(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                        const std::string& bosText)
{
    const bool hasSystem = hasSystemMessage(messages);
    const size_t first = hasSystem ? 1 : 0;
    std::string prompt = bosText;
    for (size_t i = first; i < messages.size(); i++)
    {
        const char* role = messages[i].role == "assistant" ? "model" : "user";
        const std::string systemPrefix = (i == first && hasSystem) ? messages[0].content + "\n\n" : std::string();
        prompt += std::string("<start_of_turn>") + role + "\n" + systemPrefix + trimmed(messages[i].content) + "<end_of_turn>\n";
    }
    if (addGenerationPrompt)
        prompt += "<start_of_turn>model\n";
    return prompt;
}

// HuggingFaceH4/zephyr-7b-beta, TinyLlama/TinyLlama-1.1B-Chat-v1.0.
std::string formatZephyr(const std::vector<ChatMessage>& messages, bool addGenerationPrompt)
{
    std::string prompt;
    for (const ChatMessage& message : messages)
        prompt += "<|" + message.role + "|>\n" + message.content + "</s>\n";
    if (addGenerationPrompt)
        prompt += "<|assistant|>\n";
    return prompt;
}

} // namespace

ChatTemplate::ChatTemplate(ChatTemplateFamily family) : family_(family)
{
    infoOf(family);  // validates the value
}

ChatTemplate ChatTemplate::fromJinja(const std::string& jinja)
{
    // The special tokens of Llama 3, ChatML and Gemma belong to one family each, so they are
    // tested first; "<|user|>" and "[INST]" are shared by several families and come last.
    if (contains(jinja, "<|start_header_id|>"))
        return ChatTemplate(ChatTemplateFamily::Llama3);
    // Phi-4 puts <|im_sep|> between the ChatML role and content: a format of its own.
    if (contains(jinja, "<|im_start|>") && !contains(jinja, "<|im_sep|>"))
        return ChatTemplate(ChatTemplateFamily::ChatML);
    if (contains(jinja, "<start_of_turn>"))
        return ChatTemplate(ChatTemplateFamily::Gemma);
    // Phi-3 ends turns with <|end|>, Zephyr with EOS. Phi-4-mini also uses <|end|> but writes no
    // newline after the role tag; its templates declare tools with <|tool|>.
    if (contains(jinja, "<|assistant|>") && contains(jinja, "<|end|>") && !contains(jinja, "<|tool|>"))
        return ChatTemplate(ChatTemplateFamily::Phi3);
    if (contains(jinja, "<|user|>") && contains(jinja, "<|assistant|>") &&
        (contains(jinja, "eos_token") || contains(jinja, "</s>")))
        return ChatTemplate(ChatTemplateFamily::Zephyr);
    if (contains(jinja, "[INST]"))
    {
        if (contains(jinja, "<<SYS>>"))
            return ChatTemplate(ChatTemplateFamily::Llama2);
        // Mistral v1 writes "content [/INST]"; the v3 and Tekken tokenizers' templates write
        // "content[/INST]" and would get wrong spaces from the v1 format.
        if (contains(jinja, " [/INST]"))
            return ChatTemplate(ChatTemplateFamily::Mistral);
    }
    CV_Error(Error::StsNotImplemented,
             std::string("chat template not recognised; pass a template name: ") + kTemplateNames);
}

ChatTemplate ChatTemplate::fromName(const std::string& name)
{
    std::string lowerName = name;
    std::transform(lowerName.begin(), lowerName.end(), lowerName.begin(),
                   [](unsigned char c) { return (char)std::tolower(c); });
    if (lowerName == "qwen2")
        return ChatTemplate(ChatTemplateFamily::ChatML);
    for (const FamilyInfo& info : families())
        if (info.name == lowerName)
            return ChatTemplate(info.family);
    CV_Error(Error::StsBadArg, "ChatTemplate: unknown template name '" + name + "'; known names: " +
                               kTemplateNames + " (qwen2 is chatml)");
}

const std::string& ChatTemplate::name() const
{
    return infoOf(family_).name;
}

std::string ChatTemplate::format(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                                 const std::string& bosText) const
{
    checkRoles(messages, name());
    switch (family_)
    {
    case ChatTemplateFamily::Llama2:
        checkAlternation(messages, name());
        return formatLlama2(messages, bosText);
    case ChatTemplateFamily::Llama3:
        return formatLlama3(messages, addGenerationPrompt, bosText);
    case ChatTemplateFamily::ChatML:
        return formatChatML(messages, addGenerationPrompt);
    case ChatTemplateFamily::Mistral:
        checkAlternation(messages, name());
        return formatMistral(messages, bosText);
    case ChatTemplateFamily::Phi3:
        return formatPhi3(messages, addGenerationPrompt);
    case ChatTemplateFamily::Gemma:
        checkAlternation(messages, name());
        return formatGemma(messages, addGenerationPrompt, bosText);
    case ChatTemplateFamily::Zephyr:
        return formatZephyr(messages, addGenerationPrompt);
    }
    CV_Error(Error::StsInternal, "ChatTemplate: unhandled family " + name());
}

std::vector<std::string> ChatTemplate::turnEndMarkers() const
{
    return std::vector<std::string>(1, infoOf(family_).turnEnd);
}

}}} // namespace cv::dnn::llm
