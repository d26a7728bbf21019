// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Jinja's lexer: template text -> tokens, with jinja2's whitespace control. `{%- ... -%}`,
// `{{- ... -}}` and `{#- ... -#}` strip the whitespace next to them; trim_blocks drops the first
// newline after a block or comment tag, lstrip_blocks the spaces and tabs from the start of a line
// to a block or comment tag (`{%+` keeps them); transformers turns both on. `{% raw %}` passes
// its text through. As in jinja2, newlines are normalized to "\n" and one trailing newline of
// the template is dropped (keep_trailing_newline is off).

#ifndef OPENCV_DNN_SRC_LLM_JINJA_LEXER_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_LEXER_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

enum class TokenType
{
    Data,           //!< template text outside tags
    VariableBegin,  //!< {{
    VariableEnd,    //!< }}
    BlockBegin,     //!< {%
    BlockEnd,       //!< %}
    Name,
    String,         //!< text: the decoded value
    Integer,
    Float,
    Operator,       //!< text: the operator ("+", "//", "(", ...)
    Eof
};

struct Token
{
    TokenType type = TokenType::Eof;
    std::string text;
    int64_t integer = 0;
    double real = 0;
    size_t offset = 0;  //!< where the token starts in the normalized source
};

struct LexerOptions
{
    bool trimBlocks = true;
    bool lstripBlocks = true;
};

//! "\r\n" and "\r" -> "\n"; drops one trailing newline.
std::string normalizeNewlines(const std::string& source);

//! The tokens of a normalized template, ending with Eof. Throws TemplateError (Syntax).
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options = LexerOptions());

}}}} // namespace cv::dnn::llm::jinja

#endif
