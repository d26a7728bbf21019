// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The built-in chat template families' rules: names and aliases, BOS between turns, roles and
// the order of turns, turn end markers, and templates that are none of the families. Against
// real models' templates: test_chat_template_reference.cpp.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../../modules/dnn/src/llm/generation/chat_template.hpp"

using cv::dnn::llm::ChatMessage;
using cv::dnn::llm::ChatTemplate;
using cv::dnn::llm::ChatTemplateFamily;

namespace {

// The message of the cv::Exception an action throws, or a note that it threw none.
std::string errorOf(const std::function<void()>& action)
{
    try
    {
        action();
    }
    catch (const cv::Exception& e)
    {
        return e.err;
    }
    return "(no exception)";
}

bool mentions(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

const char* const kNotRecognised = "chat template not recognised; pass a template name: "
                                   "llama2, llama3, chatml, mistral, phi3, gemma, zephyr";

} // namespace

TEST(ChatTemplate, llama2KeepsBosBetweenTurns)
{
    // No tokenizer adds the BOS of later turns, so it stays even when the first one is left out.
    const std::vector<ChatMessage> messages = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
    const ChatTemplate llama2 = ChatTemplate::fromName("llama2");
    EXPECT_EQ(llama2.format(messages, true), "[INST] a [/INST] b </s><s>[INST] c [/INST]");
    EXPECT_EQ(llama2.format(messages, true, "<BOS>"), "<BOS>[INST] a [/INST] b </s><BOS>[INST] c [/INST]");
}

TEST(ChatTemplate, chatmlIgnoresBosText)
{
    const std::vector<ChatMessage> messages = {{"user", "hi"}};
    EXPECT_EQ(ChatTemplate::fromName("chatml").format(messages, true, "<s>"),
              "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, rejectsUnknownTemplates)
{
    const char* const unknownTemplates[] = {
        "",
        // Alpaca-style instructions
        "{% for message in messages %}{% if message['role'] == 'user' %}{{ '### Instruction:\\n' + "
        "message['content'] + '\\n' }}{% else %}{{ '### Response:\\n' + message['content'] }}{% endif %}{% endfor %}",
        // Mistral v3 tokenizer: no space before [/INST]
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
        "message['content'] + '[/INST]' }}{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}{% endfor %}",
        // Phi-4: ChatML tokens with <|im_sep|>
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + "
        "'<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}",
    };
    for (const char* jinja : unknownTemplates)
    {
        SCOPED_TRACE(jinja);
        EXPECT_EQ(errorOf([&] { ChatTemplate::fromJinja(jinja); }), kNotRecognised);
    }
}

TEST(ChatTemplate, namesAndAliases)
{
    const std::pair<const char*, const char*> namesAndFamilies[] = {
        {"llama2", "llama2"}, {"llama3", "llama3"}, {"chatml", "chatml"}, {"qwen2", "chatml"},
        {"mistral", "mistral"}, {"phi3", "phi3"}, {"gemma", "gemma"}, {"zephyr", "zephyr"}, {"ChatML", "chatml"},
    };
    for (const auto& nameAndFamily : namesAndFamilies)
        EXPECT_EQ(ChatTemplate::fromName(nameAndFamily.first).name(), nameAndFamily.second);
    EXPECT_EQ(ChatTemplate(ChatTemplateFamily::Gemma).name(), "gemma");
}

TEST(ChatTemplate, rejectsUnknownNames)
{
    const std::string message = errorOf([] { ChatTemplate::fromName("vicuna"); });
    EXPECT_TRUE(mentions(message, "'vicuna'")) << message;
    EXPECT_TRUE(mentions(message, "llama2, llama3, chatml, mistral, phi3, gemma, zephyr")) << message;
    EXPECT_TRUE(mentions(errorOf([] { ChatTemplate::fromName(""); }), "unknown template name"));
}

TEST(ChatTemplate, rejectsBadRoles)
{
    for (const char* name : {"llama2", "llama3", "chatml", "mistral", "phi3", "gemma", "zephyr"})
    {
        SCOPED_TRACE(name);
        const ChatTemplate chatTemplate = ChatTemplate::fromName(name);
        std::string message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"tool", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 has unknown role 'tool'")) << message;
        message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"system", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is a system message")) << message;
        message = errorOf([&] { chatTemplate.format({}, true); });
        EXPECT_TRUE(mentions(message, "no messages")) << message;
    }
}

TEST(ChatTemplate, strictFamiliesNeedAlternatingTurns)
{
    for (const char* name : {"llama2", "mistral", "gemma"})
    {
        SCOPED_TRACE(name);
        const ChatTemplate chatTemplate = ChatTemplate::fromName(name);
        std::string message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"user", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is 'user' (expected 'assistant')")) << message;
        message = errorOf([&] { chatTemplate.format({{"system", "s"}, {"assistant", "a"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is 'assistant' (expected 'user')")) << message;
        message = errorOf([&] { chatTemplate.format({{"system", "s"}}, true); });
        EXPECT_TRUE(mentions(message, "needs a user message after it")) << message;
    }
}

TEST(ChatTemplate, lenientFamiliesAcceptAnyOrder)
{
    // Their templates write each message as it comes, as do we.
    const std::vector<ChatMessage> messages = {{"system", "s"}, {"assistant", "a"}, {"assistant", "b"}};
    EXPECT_EQ(ChatTemplate::fromName("chatml").format(messages, false),
              "<|im_start|>system\ns<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n");
    EXPECT_EQ(ChatTemplate::fromName("zephyr").format({{"system", "s"}}, true), "<|system|>\ns</s>\n<|assistant|>\n");
    EXPECT_NO_THROW(ChatTemplate::fromName("llama3").format(messages, true));
    EXPECT_NO_THROW(ChatTemplate::fromName("phi3").format(messages, true));
}

TEST(ChatTemplate, turnEndMarkers)
{
    const std::pair<const char*, const char*> namesAndMarkers[] = {
        {"llama2", "</s>"}, {"llama3", "<|eot_id|>"}, {"chatml", "<|im_end|>"}, {"mistral", "</s>"},
        {"phi3", "<|end|>"}, {"gemma", "<end_of_turn>"}, {"zephyr", "</s>"},
    };
    for (const auto& nameAndMarker : namesAndMarkers)
        EXPECT_EQ(ChatTemplate::fromName(nameAndMarker.first).turnEndMarkers(),
                  std::vector<std::string>(1, nameAndMarker.second)) << nameAndMarker.first;
}
