// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// A context-free grammar over Unicode code points, as data: the parsed form of a GBNF text
// (llama.cpp's grammar dialect; gbnf_parser.hpp) that GrammarMatcher runs.
//
// Each rule is a list of alternatives, each alternative a sequence of elements, laid out
// flat: seq0 ALT seq1 ALT ... seqN END. A character class is one CHAR / CHAR_NOT element (its
// first code point) followed by CHAR_RANGE_UPPER (the upper end of a range starting at the
// previous code point) and CHAR_ALT (one more code point or range start) elements.
// Repetitions (* + ? {m,n}) and groups are rewritten by the parser into generated rules.

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_GRAMMAR_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_GRAMMAR_HPP

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

enum class GrammarElementType : uint8_t
{
    End,             //!< end of a rule
    Alt,             //!< start of the next alternative
    RuleRef,         //!< value: rule index
    Char,            //!< value: code point; starts a character class
    CharNot,         //!< value: code point; starts a negated character class
    CharRangeUpper,  //!< value: upper end (inclusive) of the range that starts at the previous element
    CharAlt,         //!< value: another code point (or range start) of the class
    CharAny          //!< any code point ('.')
};

struct GrammarElement
{
    GrammarElementType type;
    uint32_t value;
};

inline bool isEndOfSequence(const GrammarElement* e)
{
    return e->type == GrammarElementType::End || e->type == GrammarElementType::Alt;
}

inline bool isCharElement(const GrammarElement* e)
{
    return e->type == GrammarElementType::Char || e->type == GrammarElementType::CharNot ||
           e->type == GrammarElementType::CharAny;
}

/** Whether code point `cp` is in the class starting at `e` (a Char, CharNot or CharAny element).
    `next` (optional) receives the element after the class. */
CV_EXPORTS bool matchCharClass(const GrammarElement* e, uint32_t cp, const GrammarElement** next = nullptr);
//! Whether the class starting at `e` contains any code point in [lo, hi].
CV_EXPORTS bool charClassIntersects(const GrammarElement* e, uint32_t lo, uint32_t hi);

struct CV_EXPORTS Grammar
{
    std::vector<std::vector<GrammarElement> > rules;
    std::vector<std::string> names;  //!< rule names (generated ones: "name_3")
    int root = -1;

    int ruleId(const std::string& name) const;
    //! The rules in GBNF form (for messages and debugging).
    std::string toString() const;
};

}}} // namespace cv::dnn::llm

#endif
