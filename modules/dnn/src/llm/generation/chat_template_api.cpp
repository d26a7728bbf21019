// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// cv::dnn::ChatTemplate: a model's Jinja template rendered by our engine (jinja/), or one of
// the built-in families of chat_template.cpp for models whose files carry none.

#include "../../precomp.hpp"
#include "chat_template_api.hpp"
#include "chat_template.hpp"

#include "../jinja/json_bridge.hpp"
#include "../jinja/template.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

ChatTemplate::~ChatTemplate() {}

namespace {

using llm::jinja::Value;

Value messageList(const std::vector<String>& roles, const std::vector<String>& contents)
{
    CV_CheckEQ(roles.size(), contents.size(), "ChatTemplate::apply: one role per content");
    std::vector<Value> messages;
    for (size_t i = 0; i < roles.size(); i++)
        messages.push_back(Value::dict({{Value::string("role"), Value::string(roles[i])},
                                        {Value::string("content"), Value::string(contents[i])}}));
    return Value::sequence(std::move(messages));
}

Value parseMessages(const String& messagesJson)
{
    const Value messages = llm::jinja::parseJsonValue(messagesJson, "ChatTemplate::applyJSON: messagesJson");
    if (!messages.isList())
        CV_Error(Error::StsBadArg, "ChatTemplate::applyJSON: messagesJson must be a JSON array of messages, not " +
                                   messages.typeName());
    return messages;
}

class JinjaChatTemplate CV_FINAL : public ChatTemplate
{
public:
    JinjaChatTemplate(const String& source, const String& bosToken, const String& eosToken)
        : template_(source), bos_(bosToken), eos_(eosToken) {}

    String apply(const std::vector<String>& roles, const std::vector<String>& contents, bool addGenerationPrompt) const CV_OVERRIDE
    {
        return render(messageList(roles, contents), addGenerationPrompt, Value());
    }

    String applyJSON(const String& messagesJson, bool addGenerationPrompt, const String& extraContextJson) const CV_OVERRIDE
    {
        const Value messages = parseMessages(messagesJson);
        Value extra;
        if (!extraContextJson.empty())
        {
            extra = llm::jinja::parseJsonValue(extraContextJson, "ChatTemplate::applyJSON: extraContextJson");
            if (!extra.isDict())
                CV_Error(Error::StsBadArg, "ChatTemplate::applyJSON: extraContextJson must be a JSON object, not " +
                                           extra.typeName());
        }
        return render(messages, addGenerationPrompt, extra);
    }

    String getName() const CV_OVERRIDE { return "jinja"; }
    String getSource() const CV_OVERRIDE { return template_.source(); }
    String getBosToken() const CV_OVERRIDE { return bos_; }
    String getEosToken() const CV_OVERRIDE { return eos_; }

private:
    // The variables transformers passes: tools and documents are None unless given; the
    // extra variables may replace bos_token and eos_token as its template_kwargs may.
    String render(const Value& messages, bool addGenerationPrompt, const Value& extra) const
    {
        std::vector<std::pair<std::string, Value> > variables = {
            {"messages", messages}, {"tools", Value::none()}, {"documents", Value::none()},
            {"add_generation_prompt", Value::boolean(addGenerationPrompt)},
            {"bos_token", Value::string(bos_)}, {"eos_token", Value::string(eos_)}};
        for (const auto& entry : extra.entries())
        {
            const std::string& name = entry.first.str();
            if (name == "messages" || name == "add_generation_prompt")
                CV_Error(Error::StsBadArg, "ChatTemplate::applyJSON: '" + name + "' is an argument of its own, "
                                           "not an extra variable");
            bool replaced = false;
            for (auto& variable : variables)
                if (variable.first == name)
                {
                    variable.second = entry.second;
                    replaced = true;
                }
            if (!replaced)
                variables.emplace_back(name, entry.second);
        }
        return template_.render(variables);
    }

    llm::jinja::Template template_;
    String bos_, eos_;
};

class BuiltinChatTemplate CV_FINAL : public ChatTemplate
{
public:
    explicit BuiltinChatTemplate(const llm::ChatTemplate& family) : family_(family) {}

    String apply(const std::vector<String>& roles, const std::vector<String>& contents, bool addGenerationPrompt) const CV_OVERRIDE
    {
        CV_CheckEQ(roles.size(), contents.size(), "ChatTemplate::apply: one role per content");
        std::vector<llm::ChatMessage> messages;
        for (size_t i = 0; i < roles.size(); i++)
            messages.push_back(llm::ChatMessage{roles[i], contents[i]});
        return family_.format(messages, addGenerationPrompt);
    }

    String applyJSON(const String& messagesJson, bool addGenerationPrompt, const String&) const CV_OVERRIDE
    {
        std::vector<String> roles, contents;
        const Value messages = parseMessages(messagesJson);
        for (size_t i = 0; i < messages.items().size(); i++)
        {
            const Value& m = messages.items()[i];
            const Value* role = m.findKey("role");
            const Value* content = m.findKey("content");
            if (!role || !role->isString() || !content || !content->isString())
                CV_Error(Error::StsBadArg, format("ChatTemplate '%s' (built in): message %zu needs a text \"role\" and "
                                                  "\"content\"; tools and other fields need a Jinja template",
                                                  family_.name().c_str(), i));
            roles.push_back(role->str());
            contents.push_back(content->str());
        }
        return apply(roles, contents, addGenerationPrompt);
    }

    String getName() const CV_OVERRIDE { return family_.name(); }
    String getSource() const CV_OVERRIDE { return String(); }
    String getBosToken() const CV_OVERRIDE { return String(); }
    String getEosToken() const CV_OVERRIDE { return String(); }

    const llm::ChatTemplate& family() const { return family_; }

private:
    llm::ChatTemplate family_;
};

} // namespace

Ptr<ChatTemplate> ChatTemplate::create(const String& jinjaSource, const String& bosToken, const String& eosToken)
{
    return makePtr<JinjaChatTemplate>(jinjaSource, bosToken, eosToken);
}

Ptr<ChatTemplate> ChatTemplate::createBuiltin(const String& name)
{
    return makePtr<BuiltinChatTemplate>(llm::ChatTemplate::fromName(name));
}

CV__DNN_INLINE_NS_END

namespace llm {

std::vector<std::string> chatTemplateStopStrings(const cv::dnn::ChatTemplate& chatTemplate)
{
    if (const BuiltinChatTemplate* builtin = dynamic_cast<const BuiltinChatTemplate*>(&chatTemplate))
        return builtin->family().turnEndMarkers();
    // A model's own template: its turn-end marker when it is one of the known formats (the
    // tokenizer's end-of-generation tokens stop the others).
    try
    {
        return llm::ChatTemplate::fromJinja(chatTemplate.getSource()).turnEndMarkers();
    }
    catch (const cv::Exception&)
    {
        return std::vector<std::string>();
    }
}

} // namespace llm
}} // namespace cv::dnn
