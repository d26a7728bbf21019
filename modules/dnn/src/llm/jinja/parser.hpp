// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Jinja's parser: tokens -> syntax tree, with jinja2's grammar and operator precedence
// (jinja2/parser.py): `~` binds tighter than `+`, `**` is left-associative, filters and tests
// bind tighter than unary minus's operand chain, `not x is y` is `not (x is y)`. Statements: if,
// for (else, `if` filter, recursive), set (also block set and namespace attributes), macro,
// call, filter, with, block, print, autoescape, break / continue (the loopcontrols extension)
// and transformers' generation. As in jinja2, an unknown filter or test is a syntax error
// unless it sits inside an if statement or an inline if, where it fails only when reached.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_PARSER_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_PARSER_HPP

#include "ast.hpp"
#include "lexer.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! Nesting (expressions, operator chains, statements) the parser accepts: the interpreter
//! walks the tree recursively, so a deeper tree is refused rather than overflowing the stack.
const int kMaxParseDepth = 200;

//! The statements of a template. Throws TemplateError (Syntax) with the offset of the problem.
NodeList parseTemplate(const std::vector<Token>& tokens);

}}}} // namespace cv::dnn::llm::jinja

#endif
