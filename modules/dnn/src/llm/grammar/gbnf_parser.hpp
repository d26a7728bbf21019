// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// GBNF (llama.cpp's grammar dialect) -> Grammar. The text is untrusted input: errors are
// cv::Exception naming the line and column; repetition counts, nesting and the grammar's size
// are bounded; undefined rules and left recursion (which a top-down matcher cannot run) are
// errors, as in llama.cpp.
//
//   rule    ::= name "::=" alternatives (newline | end)
//   alternatives: sequences separated by '|' (newlines allowed inside parentheses and after '|')
//   element: "literal" | [class] | [^class] | . | name | ( alternatives ), each optionally
//            followed by * + ? {m} {m,} {m,n}
//   escapes: \x.. \u.... \U........ \t \r \n \\ \" \[ \] \-   comments: # to end of line

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_GBNF_PARSER_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_GBNF_PARSER_HPP

#include "grammar.hpp"

#include <memory>

namespace cv {
namespace dnn {
namespace llm {

struct GbnfLimits
{
    size_t maxTextBytes = 1 << 20;      //!< grammar text
    size_t maxElements = 1 << 20;       //!< elements of all rules together, after expansion
    int maxRepetition = 2000;           //!< {m,n}: m above it is an error, n above it means unbounded (llama.cpp)
    int maxNesting = 256;               //!< nested parentheses
};

/** Parses GBNF text; `rootName` is the start rule. Throws cv::Exception
    "GBNF grammar: line L, column C: <problem>". */
CV_EXPORTS std::shared_ptr<const Grammar> parseGbnf(const std::string& text, const std::string& rootName = "root",
                                                    const GbnfLimits& limits = GbnfLimits());

}}} // namespace cv::dnn::llm

#endif
