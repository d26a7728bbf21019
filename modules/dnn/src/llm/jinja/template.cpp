// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "template.hpp"
#include "json_bridge.hpp"
#include "lexer.hpp"
#include "parser.hpp"
#include "text.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

[[noreturn]] void raiseAsCvException(const std::string& source, const TemplateError& e)
{
    const int code = e.kind == ErrorKind::Syntax ? Error::StsParseError
                   : e.kind == ErrorKind::Limit ? Error::StsOutOfRange : Error::StsError;
    std::string where = e.offset == kNoPosition ? std::string() : ", " + describeLocation(source, e.offset);
    CV_Error(code, "Jinja template" + where + ": " + errorKindName(e.kind) + ": " + e.message);
}

} // namespace

std::string describeLocation(const std::string& text, size_t offset)
{
    offset = std::min(offset, text.size());
    size_t line = 1, lineStart = 0;
    for (size_t i = 0; i < offset; i++)
        if (text[i] == '\n')
        {
            line++;
            lineStart = i + 1;
        }
    const size_t column = codePointCount(text.substr(lineStart, offset - lineStart)) + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Template::Template(const std::string& source)
{
    if (source.size() > kMaxTemplateBytes)
        CV_Error(Error::StsOutOfRange, format("Jinja template: %zu bytes is more than the %zu accepted", source.size(),
                                              kMaxTemplateBytes));
    source_ = normalizeNewlines(source);
    try
    {
        body_ = parseTemplate(tokenize(source_));
    }
    catch (const TemplateError& e)
    {
        raiseAsCvException(source_, e);
    }
}

Template::~Template() {}

std::string Template::render(const std::vector<std::pair<std::string, Value> >& variables, const RenderOptions& options) const
{
    try
    {
        Interpreter interpreter(options);
        return interpreter.render(body_, variables);
    }
    catch (const TemplateError& e)
    {
        raiseAsCvException(source_, e);
    }
}

std::string Template::renderJson(const std::string& variablesJson, const RenderOptions& options) const
{
    const Value variables = parseJsonValue(variablesJson, "Jinja template variables");
    if (!variables.isDict())
        CV_Error(Error::StsBadArg, "Jinja template variables: expected a JSON object, got " + variables.typeName());
    std::vector<std::pair<std::string, Value> > vars;
    for (const auto& entry : variables.entries())
        vars.emplace_back(entry.first.str(), entry.second);
    return render(vars, options);
}

}}}} // namespace cv::dnn::llm::jinja
