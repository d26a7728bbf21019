// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The Jinja engine's pieces (lexer and whitespace control, parser and precedence, values and
// their Python formatting, statements, filters, tests, methods, globals) against what Python's
// jinja2 renders for the same small templates: test/data/jinja/engine_cases.json, made by
// tools/chat_template/make_engine_cases.py with python3-jinja2 set up as transformers does.
// Then what jinja2 cannot tell us: error positions and the limits that keep untrusted
// templates from running away.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/chat_template.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "test_common.hpp"
#include "jinja_test_common.hpp"

using cv::dnn::llm::jinja::RenderLimits;
using cv::dnn::llm::jinja::RenderOptions;
using cv::dnn::llm::jinja::Template;

namespace {

using Json = nlohmann::ordered_json;

Json readJson(const std::string& path)
{
    const std::vector<char> bytes = llm_test::readFileBytes(path);
    if (bytes.empty())
        throw std::runtime_error("cannot read " + path);
    return Json::parse(bytes.begin(), bytes.end());
}

std::string render(const std::string& source, const std::string& variablesJson = "{}",
                   const RenderOptions& options = RenderOptions())
{
    return Template(source).renderJson(variablesJson, options);
}

// The message of the cv::Exception rendering raises ("" when it does not raise).
std::string renderError(const std::string& source, const RenderOptions& options = RenderOptions(), int* code = nullptr)
{
    try
    {
        render(source, "{}", options);
    }
    catch (const cv::Exception& e)
    {
        if (code)
            *code = e.code;
        return e.err;
    }
    return std::string();
}

RenderOptions smallLimits()
{
    RenderOptions options;
    options.limits.maxOutputBytes = 1 << 16;
    options.limits.maxSteps = 200000;
    options.limits.maxLoopIterations = 1000;
    options.limits.maxCallDepth = 20;
    return options;
}

} // namespace

TEST(JinjaEngine, rendersAsJinja2)
{
    const Json data = readJson(llm_test::projectRoot() + "/test/data/jinja/engine_cases.json");
    const RenderOptions options = llm_test::jinjaOptionsAt(data["now"].get<std::string>());
    std::map<std::string, std::pair<int, int> > byGroup;  // group -> (identical, total)
    ASSERT_GT(data["cases"].size(), 100u);
    for (const Json& c : data["cases"])
    {
        const std::string name = c["name"], source = c["template"];
        SCOPED_TRACE(name + ": " + source);
        std::string output, error;
        int code = 0;
        try
        {
            output = render(source, c["variables"].dump(), options);
        }
        catch (const cv::Exception& e)
        {
            error = e.err;
            code = e.code;
        }
        bool same;
        if (c.contains("error"))
        {
            // jinja2's compile-time errors are syntax errors here; its runtime errors are not.
            const bool compileError = c["compile_error"].get<bool>();
            same = !error.empty() && (code == cv::Error::StsParseError) == compileError;
            EXPECT_TRUE(same) << "jinja2 raised " << c["error"].get<std::string>() << (compileError ? " compiling" : " rendering")
                              << "; we " << (error.empty() ? "rendered \"" + output + "\"" : "raised: " + error);
        }
        else
        {
            same = error.empty() && output == c["output"].get<std::string>();
            EXPECT_TRUE(same) << "expected \"" << c["output"].get<std::string>() << "\"\n got "
                              << (error.empty() ? "\"" + output + "\"" : "error: " + error);
        }
        std::pair<int, int>& counts = byGroup[c["group"].get<std::string>()];
        counts.first += same;
        counts.second++;
    }
    for (const auto& g : byGroup)
        std::cout << "[ jinja2 cases ] " << g.first << ": " << g.second.first << " of " << g.second.second << " identical\n";
}

TEST(JinjaEngine, errorsNameTheLineAndColumn)
{
    int code = 0;
    // Runtime errors point at the operation that failed (columns count characters).
    std::string err = renderError("Hello\n{% if true %}\n  {{ 1 + 'a' }}\n{% endif %}", RenderOptions(), &code);
    EXPECT_NE(err.find("line 3, column 8"), std::string::npos) << err;
    EXPECT_NE(err.find("TypeError"), std::string::npos) << err;
    EXPECT_EQ(code, cv::Error::StsError);
    err = renderError("\xC3\xA9{{ 1/0 }}");  // "é{{ 1/0 }}"
    EXPECT_NE(err.find("line 1, column 6"), std::string::npos) << err;
    // Syntax errors are StsParseError, at the token the parser could not take.
    err = renderError("a\nb {{ x | }}", RenderOptions(), &code);
    EXPECT_NE(err.find("line 2, column 10"), std::string::npos) << err;
    EXPECT_EQ(code, cv::Error::StsParseError);
    err = renderError("{% for x in [1] %}\n{% endif %}");
    EXPECT_NE(err.find("line 2"), std::string::npos) << err;
    // A template's raise_exception: its message, where it was called.
    err = renderError("{% for m in [1] %}\n    {{- raise_exception('System role not supported') }}{% endfor %}");
    EXPECT_NE(err.find("line 2, column 9"), std::string::npos) << err;
    EXPECT_NE(err.find("System role not supported"), std::string::npos) << err;
    // Errors inside a macro name the macro's line, not the call's.
    err = renderError("{% macro m() %}\n{{ none.x.y }}{% endmacro %}\n\n{{ m() }}");
    EXPECT_NE(err.find("line 2"), std::string::npos) << err;
}

TEST(JinjaEngine, limitsStopRunawayTemplates)
{
    const RenderOptions options = smallLimits();
    int code = 0;
    // Loop iterations, all loops together.
    EXPECT_NE(renderError("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", options, &code)
                  .find("loop iterations"), std::string::npos);
    EXPECT_EQ(code, cv::Error::StsOutOfRange);
    // Recursion of macros and of recursive loops.
    EXPECT_NE(renderError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", options).find("nested deeper"), std::string::npos);
    EXPECT_NE(renderError("{% set x = [[]] %}{% for a in x recursive %}{{ loop(x) }}{% endfor %}", options).find("deeper"),
              std::string::npos);
    // Output and string sizes: a doubling string, repetition, a long output.
    EXPECT_NE(renderError("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                          options).find("longer than"), std::string::npos);
    EXPECT_NE(renderError("{{ 'x' * 100000000 }}", options).find("longer than"), std::string::npos);
    EXPECT_NE(renderError("{% for i in range(900) %}{{ 'abcdefghijklmnopqrstuvwxyz' * 10 }}{% endfor %}", options)
                  .find("wrote more than"), std::string::npos);
    // Steps: work that neither loops much nor writes much.
    EXPECT_NE(renderError("{% for i in range(1000) %}{% if 'a' * 60000 in 'b' * 60000 %}{% endif %}{% endfor %}", options)
                  .find("evaluation steps"), std::string::npos);
    // Nesting: the parser refuses trees the interpreter could not walk without a deep stack.
    EXPECT_NE(renderError("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}", options, &code)
                  .find("deeper than"), std::string::npos);
    EXPECT_EQ(code, cv::Error::StsParseError);
    std::string chain = "{{ 1";
    for (int i = 0; i < 5000; i++)
        chain += " + 1";
    EXPECT_NE(renderError(chain + " }}", options).find("deeper than"), std::string::npos);
    std::string nestedIfs;
    for (int i = 0; i < 500; i++)
        nestedIfs += "{% if true %}";
    EXPECT_NE(renderError(nestedIfs, options).find("deeper than"), std::string::npos);
    // Values: lists nested through a namespace, and a namespace that holds itself.
    EXPECT_NE(renderError("{% set ns = namespace(x=[]) %}{% for i in range(500) %}{% set ns.x = [ns.x] %}{% endfor %}", options)
                  .find("nested deeper"), std::string::npos);
    EXPECT_NE(renderError("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", options).find("nested deeper"),
              std::string::npos);
    // Templates themselves are bounded in size.
    EXPECT_THROW(Template(std::string(cv::dnn::llm::jinja::kMaxTemplateBytes + 1, 'x')), cv::Exception);
}

TEST(JinjaEngine, limitsLeaveRealWorkAlone)
{
    // Defaults are far above what chat templates need: 100 turns through a loop with a macro.
    std::string messages = "[";
    for (int i = 0; i < 100; i++)
        messages += std::string(i ? "," : "") + "{\"role\": \"" + (i % 2 ? "assistant" : "user") + "\", \"content\": \"turn " +
                    std::to_string(i) + "\"}";
    messages += "]";
    const std::string out = render("{% macro turn(m) %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endmacro %}"
                                   "{% for m in messages %}{{ turn(m) }}{% endfor %}",
                                   "{\"messages\": " + messages + "}");
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 100);
    EXPECT_EQ(out.substr(0, 15), "<|user|>turn 0\n");
}

TEST(JinjaEngine, variablesMustBeAJsonObject)
{
    EXPECT_THROW(render("{{ x }}", "[1, 2]"), cv::Exception);
    EXPECT_THROW(render("{{ x }}", "{\"x\": "), cv::Exception);
    EXPECT_EQ(render("{{ x.y[1] }}", "{\"x\": {\"y\": [1, \"\xC3\xA9\"]}}"), "\xC3\xA9");
}
