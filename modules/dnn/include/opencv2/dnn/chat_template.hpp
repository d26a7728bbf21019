// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_CHAT_TEMPLATE_HPP
#define OPENCV_DNN_CHAT_TEMPLATE_HPP

#include <opencv2/dnn.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief A chat template: the prompt text an instruction-tuned model expects for a conversation.

Models carry their template as Jinja (GGUF `tokenizer.chat_template`, Hugging Face
`tokenizer_config.json` / `chat_template.jinja`). create() compiles such a template with
OpenCV's own Jinja interpreter (no Python involved), which renders it as Hugging Face
transformers' `apply_chat_template` does: jinja2 with `trim_blocks` and `lstrip_blocks`,
`tojson` without ASCII escaping, `raise_exception(message)`, `strftime_now(format)`, and the
variables `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, `tools` and
`documents` (None unless given). Templates are treated as untrusted: recursion, output size and
loop iterations are bounded, and every syntax or runtime error (also a template's own
`raise_exception`) is a cv::Exception naming the template's line and column.

@code
Ptr<ChatTemplate> t = ChatTemplate::create(jinja, "<s>", "</s>");
String prompt = t->apply({"system", "user"}, {"Be brief.", "Hello!"}, true);
String withTools = t->applyJSON(R"([{"role": "user", "content": "Weather in Paris?"}])", true,
                                R"({"tools": [{"type": "function", "function": {"name": "get_weather"}}]})");
@endcode
*/
class CV_EXPORTS_W ChatTemplate
{
public:
    virtual ~ChatTemplate();

    /** @brief Compiles a Jinja chat template.
    @param jinjaSource the template text.
    @param bosToken the text of the model's BOS token (the template's `bos_token`).
    @param eosToken the text of the model's EOS token (the template's `eos_token`).
    Throws cv::Exception (StsParseError) with the line and column of a syntax error.
    */
    CV_WRAP static Ptr<ChatTemplate> create(const String& jinjaSource, const String& bosToken = String(),
                                            const String& eosToken = String());

    /** @brief One of the built-in template families, for models whose files carry no template:
    "llama2", "llama3", "chatml" (also "qwen2"), "mistral", "phi3", "gemma", "zephyr". They
    format role / content conversations as those families' templates do, without BOS (which the
    tokenizer adds). */
    CV_WRAP static Ptr<ChatTemplate> createBuiltin(const String& name);

    /** @brief The prompt text of a conversation.
    @param roles the role of each message ("system", "user", "assistant", "tool", ...).
    @param contents the text of each message.
    @param addGenerationPrompt end with what opens the assistant's reply.
    */
    CV_WRAP virtual String apply(const std::vector<String>& roles, const std::vector<String>& contents,
                                 bool addGenerationPrompt = true) const = 0;

    /** @brief The prompt text of messages given as JSON (as Hugging Face's apply_chat_template takes them).
    @param messagesJson a JSON array of message objects: "role", "content" (text or a list of
           parts) and whatever else the template reads ("tool_calls", "reasoning_content", ...).
    @param addGenerationPrompt end with what opens the assistant's reply.
    @param extraContextJson a JSON object of further template variables, e.g. {"tools": [...]},
           {"documents": [...]}, {"enable_thinking": false}; empty for none.
    */
    CV_WRAP virtual String applyJSON(const String& messagesJson, bool addGenerationPrompt = true,
                                     const String& extraContextJson = String()) const = 0;

    //! "jinja" for a template made by create(), the family name for a built-in one.
    CV_WRAP virtual String getName() const = 0;
    //! The Jinja text of the template (newlines normalized); empty for a built-in family.
    CV_WRAP virtual String getSource() const = 0;
    //! The BOS text the template is rendered with.
    CV_WRAP virtual String getBosToken() const = 0;
    //! The EOS text the template is rendered with.
    CV_WRAP virtual String getEosToken() const = 0;
};

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
