// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Integer schemas with minimum / maximum as GBNF: GBNF has no arithmetic, so a range of
// integers becomes alternatives of digit classes over its decimal texts, as llama.cpp's
// converter writes them (json_schema_to_grammar.cpp reads and checks the bounds).

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_INTEGER_RANGES_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_JSON_SCHEMA_INTEGER_RANGES_HPP

#include <cstdint>
#include <string>

namespace cv {
namespace dnn {
namespace llm {

/** A GBNF expression of the decimal integers (without leading zeros) in [minValue, maxValue];
    a missing bound leaves that side open, up to 16 digits. Bounds must be within 16 digits.
    Returns "" when no integer is in the range. */
std::string integerRangeGbnf(bool hasMin, int64_t minValue, bool hasMax, int64_t maxValue);

}}} // namespace cv::dnn::llm

#endif
