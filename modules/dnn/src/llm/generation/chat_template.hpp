// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Chat templates: the prompt text an instruction-tuned model expects for a conversation.
//
// Models ship their template as Jinja (tokenizer.chat_template in GGUF, chat_template in HF's
// tokenizer_config.json). Instead of interpreting Jinja, we recognise which well-known family a
// template belongs to and format conversations with plain code that reproduces, byte for byte,
// what that family's reference template renders (transformers' apply_chat_template).
//
// BOS rule: the tokenizer adds BOS as a token when it encodes with addSpecial (as llama.cpp
// does), so format() writes no BOS at the start of the prompt unless the caller passes bosText
// (for encoding without addSpecial, as HF's apply_chat_template does). bosText is written only
// by the families whose reference template starts with bos_token: llama2, llama3, mistral,
// gemma; chatml, phi3 and zephyr templates never write it and ignore bosText. Llama 2 also
// repeats BOS before every later "[INST]"; no tokenizer adds those, so format() always writes
// them (bosText, or "<s>" when bosText is empty). EOS texts inside the conversation ("</s>"
// after a Llama 2 / Mistral / Zephyr turn) are written as text: encode with parseSpecial so
// that they become tokens.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_CHAT_TEMPLATE_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_CHAT_TEMPLATE_HPP

#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

//! One turn of a conversation.
struct ChatMessage
{
    std::string role;     //!< "system" (first message only), "user" or "assistant"
    std::string content;
};

enum class ChatTemplateFamily
{
    Llama2,   //!< Llama 2 chat: "<s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s>"
    Llama3,   //!< Llama 3 instruct: "<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>"
    ChatML,   //!< ChatML (OpenHermes, Qwen2, Yi, ...): "<|im_start|>role\n...<|im_end|>\n"
    Mistral,  //!< Mistral v1 tokenizer (7B v0.1/v0.2, Mixtral 8x7B): "<s> [INST] ... [/INST] ...</s>"
    Phi3,     //!< Phi-3 / Phi-3.5: "<|user|>\n...<|end|>\n<|assistant|>\n"
    Gemma,    //!< Gemma: "<start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n"
    Zephyr    //!< Zephyr, TinyLlama chat: "<|user|>\n...</s>\n<|assistant|>\n"
};

// Exported (though internal) so that the C++ tests can reach it through libopencv_dnn.
class CV_EXPORTS ChatTemplate
{
public:
    explicit ChatTemplate(ChatTemplateFamily family);

    /** @brief The family of a model's Jinja chat template (tokenizer.chat_template / chat_template).

    Throws cv::Exception when the text is empty or belongs to no known family.
    */
    static ChatTemplate fromJinja(const std::string& jinja);

    /** @brief A family by name: "llama2", "llama3", "chatml" (also "qwen2"), "mistral", "phi3",
    "gemma", "zephyr". Throws cv::Exception listing the names for any other. */
    static ChatTemplate fromName(const std::string& name);

    ChatTemplateFamily family() const { return family_; }
    //! The canonical name ("chatml" for a template made from "qwen2").
    const std::string& name() const;

    /** @brief The prompt text for a conversation.

    @param messages an optional "system" message first, then "user" / "assistant" turns. Llama 2,
           Mistral and Gemma fold the system message into the first user turn and need the turns
           to alternate starting with "user", as their templates demand (cv::Exception otherwise).
    @param addGenerationPrompt end with the header that opens the assistant's reply. Llama 2 and
           Mistral have none ("[/INST]" already opens it), so it changes nothing there; Phi-3's
           template writes its EOS text "<|endoftext|>" instead when this is false.
    @param bosText the BOS token's text; see the BOS rule at the top of this file.
    */
    std::string format(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                       const std::string& bosText = std::string()) const;

    //! Texts that end an assistant turn in this format, for use as stop strings.
    std::vector<std::string> turnEndMarkers() const;

private:
    ChatTemplateFamily family_;
};

}}} // namespace cv::dnn::llm

#endif
