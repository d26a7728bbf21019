// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Chat templates against the models' own Jinja templates (chat_template_reference_data.cpp):
// the family each is recognised as renders what Python's jinja2 renders with it, and so does
// the Jinja engine. The families' own rules: test_chat_template.cpp.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/chat_template.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <string>
#include <vector>

#include "test_common.hpp"
#include "chat_template_reference_data.hpp"
#include "../../modules/dnn/src/llm/generation/chat_template.hpp"

using cv::dnn::llm::ChatMessage;
using cv::dnn::llm::ChatTemplate;
using cv::dnn::llm::ChatTemplateFamily;
using llm_test::Conversation;
using llm_test::ReferenceRendering;
using llm_test::ReferenceTemplate;

namespace {

const char* conversationName(Conversation which)
{
    switch (which)
    {
    case Conversation::WithSystem: return "system, user, assistant, user";
    case Conversation::NoSystem: return "user, assistant, user";
    case Conversation::EndsWithAssistant: return "system, user, assistant";
    case Conversation::EmptySystem: return "empty system, user, assistant, user";
    }
    return "?";
}

// The assistant's reply has spaces around it: families that trim content and families that
// keep it differ there.
std::vector<ChatMessage> conversation(Conversation which)
{
    const ChatMessage system{"system", "You are a helpful assistant."};
    const ChatMessage user1{"user", "Hello! Gr\xC3\xBC\xC3\x9F dich \xF0\x9F\x91\x8B"};  // "Grüß dich 👋"
    const ChatMessage assistant1{"assistant", "  Hi there, how can I help?  "};
    const ChatMessage user2{"user", "What is 2+2?"};
    switch (which)
    {
    case Conversation::WithSystem: return {system, user1, assistant1, user2};
    case Conversation::NoSystem: return {user1, assistant1, user2};
    case Conversation::EndsWithAssistant: return {system, user1, assistant1};
    case Conversation::EmptySystem: return {ChatMessage{"system", ""}, user1, assistant1, user2};
    }
    return {};
}

// The families whose reference templates write bos_token at the start (see chat_template.hpp).
bool formatWritesBos(const std::string& familyName)
{
    return familyName == "llama2" || familyName == "llama3" || familyName == "mistral" || familyName == "gemma";
}

std::string withoutLeadingText(const std::string& text, const std::string& prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0 ? text.substr(prefix.size()) : text;
}

} // namespace

TEST(ChatTemplate, recognisesReferenceTemplates)
{
    for (const ReferenceTemplate* reference : llm_test::referenceTemplates())
    {
        SCOPED_TRACE(reference->source);
        EXPECT_EQ(ChatTemplate::fromJinja(reference->jinja).name(), reference->familyName);
    }
}

TEST(ChatTemplate, formatsLikeReferenceTemplates)
{
    for (const ReferenceRendering& rendering : llm_test::referenceRenderings())
    {
        const ReferenceTemplate& reference = *rendering.reference;
        SCOPED_TRACE(std::string(reference.source) + " / " + conversationName(rendering.conversation) +
                     (rendering.addGenerationPrompt ? " / generation prompt" : " / no generation prompt"));
        const ChatTemplate chatTemplate = ChatTemplate::fromName(reference.familyName);
        const std::vector<ChatMessage> messages = conversation(rendering.conversation);
        const std::string expectedWithoutBos = withoutLeadingText(rendering.expected, reference.bosToken);

        // BOS left to the tokenizer: the reference output less its leading BOS.
        EXPECT_EQ(chatTemplate.format(messages, rendering.addGenerationPrompt), expectedWithoutBos);
        // BOS asked for: the reference output itself where the family's template writes BOS.
        EXPECT_EQ(chatTemplate.format(messages, rendering.addGenerationPrompt, reference.bosToken),
                  formatWritesBos(reference.familyName) ? std::string(rendering.expected) : expectedWithoutBos);
    }
}

TEST(ChatTemplate, recognisesTemplateStoredInGGUF)
{
    // The only vocabulary of llama.cpp's test set that carries a chat template.
    const cv::Ptr<cv::dnn::GGUFFile> file =
        cv::dnn::GGUFFile::open(llm_test::sharedTestData("llama.cpp-vocab/ggml-vocab-phi-3.gguf"));
    ASSERT_TRUE(file->hasMetadata("tokenizer.chat_template"));
    const std::string jinja = file->getString("tokenizer.chat_template");
    EXPECT_EQ(jinja, llm_test::kPhi3MiniGGUF.jinja);
    EXPECT_EQ(ChatTemplate::fromJinja(jinja).family(), ChatTemplateFamily::Phi3);
}

// The Jinja engine (cv::dnn::ChatTemplate::create) renders each reference template exactly as
// Python's jinja2 did, BOS and EOS texts included; the families above only imitate them.
TEST(ChatTemplate, jinjaEngineRendersReferenceTemplatesAsJinja2)
{
    for (const ReferenceRendering& rendering : llm_test::referenceRenderings())
    {
        const ReferenceTemplate& reference = *rendering.reference;
        SCOPED_TRACE(std::string(reference.source) + ", " + conversationName(rendering.conversation));
        const cv::Ptr<cv::dnn::ChatTemplate> jinja = cv::dnn::ChatTemplate::create(reference.jinja, reference.bosToken,
                                                                                  reference.eosToken);
        std::vector<cv::String> roles, contents;
        for (const ChatMessage& m : conversation(rendering.conversation))
        {
            roles.push_back(m.role);
            contents.push_back(m.content);
        }
        EXPECT_EQ(jinja->apply(roles, contents, rendering.addGenerationPrompt), std::string(rendering.expected));
    }
}
