// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Every chat template of the shared test data (../shared/testdata/chat-templates/*.jinja,
// whatever is there) rendered by our Jinja engine for a set of conversations, byte for byte
// against Python's jinja2 set up as transformers renders chat templates. The expected strings
// are made at test time by the ctest fixture make_chat_template_reference
// (tools/chat_template/render_reference.py -> build/test-models/chat_templates/reference.json);
// a template that raises on a conversation in jinja2 must raise here too.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/chat_template.hpp>

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "test_common.hpp"
#include "jinja_test_common.hpp"

using cv::dnn::llm::jinja::RenderOptions;
using cv::dnn::llm::jinja::Template;

namespace {

using Json = nlohmann::ordered_json;

Json readReference()
{
    const std::string path = llm_test::testModel("chat_templates/reference.json");
    const std::vector<char> bytes = llm_test::readFileBytes(path);
    if (bytes.empty())
        throw std::runtime_error(path + " is missing: run the fixtures first (ctest --test-dir build -R make_)");
    return Json::parse(bytes.begin(), bytes.end());
}

// The variables transformers passes: messages, tools and documents (None unless given),
// add_generation_prompt, the special tokens, and the case's other variables.
Json variablesOf(const Json& rendering)
{
    Json vars = rendering["extra"];
    vars["messages"] = rendering["messages"];
    vars["add_generation_prompt"] = rendering["add_generation_prompt"];
    vars["bos_token"] = rendering["bos_token"];
    vars["eos_token"] = rendering["eos_token"];
    if (!vars.contains("tools"))
        vars["tools"] = nullptr;
    if (!vars.contains("documents"))
        vars["documents"] = nullptr;
    return vars;
}

std::string firstDifference(const std::string& expected, const std::string& got)
{
    size_t i = 0;
    while (i < expected.size() && i < got.size() && expected[i] == got[i])
        i++;
    const size_t from = i > 60 ? i - 60 : 0;
    return "first difference at byte " + std::to_string(i) + ":\n  jinja2: " + Json(expected.substr(from, 160)).dump() +
           "\n  ours:   " + Json(got.substr(from, 160)).dump();
}

} // namespace

TEST(JinjaReference, everySharedTemplateRendersAsJinja2)
{
    const Json reference = readReference();
    const Json& templates = reference["templates"];
    const RenderOptions options = llm_test::jinjaOptionsAt(reference["now"].get<std::string>());
    ASSERT_FALSE(reference["renderings"].empty());
    std::map<std::string, std::unique_ptr<Template> > compiled;
    std::map<std::string, std::string> compileErrors;
    std::map<std::string, bool> templateIdentical;
    int identical = 0, raisedInBoth = 0, total = 0;
    for (const Json& r : reference["renderings"])
    {
        const std::string name = r["template"], caseName = r["case"];
        SCOPED_TRACE(name + " / " + caseName);
        if (!compiled.count(name) && !compileErrors.count(name))
        {
            try
            {
                compiled[name].reset(new Template(templates[name].get<std::string>()));
            }
            catch (const cv::Exception& e)
            {
                compileErrors[name] = e.err;
            }
        }
        std::string output, error;
        if (compileErrors.count(name))
            error = compileErrors[name];
        else
        {
            try
            {
                output = compiled[name]->renderJson(variablesOf(r).dump(), options);
            }
            catch (const cv::Exception& e)
            {
                error = e.err;
            }
        }
        bool same;
        if (r.contains("error"))
        {
            same = !error.empty();
            raisedInBoth += same;
            EXPECT_TRUE(same) << "jinja2 raised " << r["error"].get<std::string>() << "; we rendered "
                              << Json(output).dump();
        }
        else
        {
            same = error.empty() && output == r["output"].get<std::string>();
            EXPECT_TRUE(same) << (error.empty() ? firstDifference(r["output"], output) : "we raised: " + error);
        }
        identical += same;
        total++;
        if (!templateIdentical.count(name))
            templateIdentical[name] = true;
        templateIdentical[name] = templateIdentical[name] && same;
    }
    int templatesIdentical = 0;
    for (const auto& t : templateIdentical)
        templatesIdentical += t.second;
    std::cout << "[ chat templates ] " << templateIdentical.size() << " templates, " << total << " renderings: "
              << identical << " identical to jinja2 " << reference["jinja2_version"].get<std::string>() << " ("
              << raisedInBoth << " raise in both); " << templatesIdentical << " of " << templateIdentical.size()
              << " templates identical on every conversation\n";
}

// The public API on the same data: ChatTemplate::applyJSON with the messages and the extra
// variables as JSON text. Templates that read the clock (strftime_now) are left to the test
// above, which fixes it.
TEST(JinjaReference, chatTemplateApplyJsonRendersAsJinja2)
{
    const Json reference = readReference();
    const Json& templates = reference["templates"];
    int checked = 0;
    for (const Json& r : reference["renderings"])
    {
        const std::string name = r["template"], source = templates[name];
        if (source.find("strftime_now") != std::string::npos)
            continue;
        SCOPED_TRACE(name + " / " + r["case"].get<std::string>());
        std::string output;
        bool raised = false;
        try
        {
            const cv::Ptr<cv::dnn::ChatTemplate> t = cv::dnn::ChatTemplate::create(source, r["bos_token"].get<std::string>(),
                                                                                   r["eos_token"].get<std::string>());
            EXPECT_EQ(t->getName(), "jinja");
            output = t->applyJSON(r["messages"].dump(), r["add_generation_prompt"].get<bool>(), r["extra"].dump());
        }
        catch (const cv::Exception&)
        {
            raised = true;
        }
        if (r.contains("error"))
            EXPECT_TRUE(raised);
        else
            EXPECT_EQ(output, r["output"].get<std::string>());
        checked++;
    }
    EXPECT_GT(checked, 0);
}
