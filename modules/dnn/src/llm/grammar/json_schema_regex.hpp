// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// A JSON schema's "pattern" (a regular expression) as GBNF over the characters of a JSON
// string, since a grammar, not a regex engine, constrains generation. The subset llama.cpp's
// converter takes: ^ and $ at the ends only, | and groups ( ) (?: ), classes [..] [^..] with
// ranges and \d \w \s, ., the escapes \d \w \s \D \W \S \n \t \r and escaped punctuation, and
// the quantifiers * + ? {m} {m,} {m,n} (lazy ones match the same strings). Anything else
// (backreferences, lookarounds, \b, \u....) is refused with a cv::Exception.

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_REGEX_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_REGEX_HPP

#include <string>

namespace cv {
namespace dnn {
namespace llm {

/** The parenthesised GBNF expression of the JSON string contents (between the quotes) that
    `pattern` matches. Throws cv::Exception "JSON schema: <path>: <problem>". */
std::string patternToGbnf(const std::string& pattern, const std::string& path);

}}} // namespace cv::dnn::llm

#endif
