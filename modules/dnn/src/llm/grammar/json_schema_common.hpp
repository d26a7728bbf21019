// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What the JSON-schema converter's parts share: its error format, and the escaping of GBNF
// string literals and character classes. The schema walk (json_schema_to_grammar.cpp) and the
// pattern translation (json_schema_regex.cpp) both write literals and classes, and their errors
// must read alike.

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_COMMON_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_COMMON_HPP

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>

namespace cv {
namespace dnn {
namespace llm {

//! Throws cv::Exception "JSON schema: <path>: <problem>"; `path` is a JSON pointer ("#/properties/a").
[[noreturn]] inline void failSchema(const std::string& path, const std::string& problem)
{
    CV_Error(Error::StsParseError, "JSON schema: " + path + ": " + problem);
}

//! A GBNF string literal of UTF-8 bytes.
inline std::string gbnfLiteral(const std::string& s)
{
    std::string out = "\"";
    for (unsigned char c : s)
    {
        if (c == '"' || c == '\\') { out += '\\'; out += (char)c; }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) out += format("\\x%02X", c);
        else out += (char)c;
    }
    return out + "\"";
}

//! A code point inside a GBNF character class.
inline std::string gbnfClassChar(uint32_t cp)
{
    if (cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '"' || cp == '^') return std::string("\\") + (char)cp;
    if (cp < 0x20 || cp == 0x7F) return format("\\x%02X", cp);
    if (cp < 0x80) return std::string(1, (char)cp);
    return cp <= 0xFFFF ? format("\\u%04X", cp) : format("\\U%08X", cp);
}

}}} // namespace cv::dnn::llm

#endif
