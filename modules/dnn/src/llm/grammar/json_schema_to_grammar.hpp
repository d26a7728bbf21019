// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// JSON Schema -> GBNF, with the behaviour of llama.cpp's converter (its test cases are our
// acceptance test): object properties (required ones first in their order, then any subset of
// the optional ones in order), additionalProperties (absent or false: none; true or a schema:
// other keys), arrays (items, prefixItems, minItems, maxItems), enum, const, strings (minLength,
// maxLength, pattern, formats date / time / date-time / uuid), integers with minimum / maximum /
// exclusive bounds, anyOf / oneOf / allOf (of objects), local $ref into $defs / definitions, and
// type lists. Whitespace between tokens: none, or llama.cpp's rule (JsonWhitespace). The schema
// is untrusted: errors are cv::Exception naming the schema path.

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_TO_GRAMMAR_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_TO_GRAMMAR_HPP

#include <opencv2/core.hpp>

#include <string>

namespace cv {
namespace dnn {
namespace llm {

/** Where JSON texts may have whitespace: nowhere (compact, as OpenAI's structured output), or
    where llama.cpp's grammars allow it (after punctuation: nothing, a space, or one or two
    newlines and up to 20 spaces or tabs; GenerationConfig::jsonFreeWhitespace). */
enum class JsonWhitespace
{
    Compact,
    LlamaCpp
};

//! The GBNF text (start rule "root") of the JSON texts that a schema (JSON text) accepts.
CV_EXPORTS std::string jsonSchemaToGbnf(const std::string& schemaJson,
                                        JsonWhitespace whitespace = JsonWhitespace::LlamaCpp);
//! The GBNF text of any JSON value (jsonMode).
CV_EXPORTS std::string anyJsonValueGbnf(JsonWhitespace whitespace = JsonWhitespace::LlamaCpp);

}}} // namespace cv::dnn::llm

#endif
