// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Runs a Grammar over text, byte by byte: the state is the set of parse stacks (each a stack of
// positions in the grammar's rules whose top is a character class still to match) that the
// input so far leaves, plus the bytes of an unfinished UTF-8 character. A top-down pushdown
// recognizer, as llama.cpp's: left recursion is refused by the parser, and the number of stacks
// and their depth are bounded (cv::Exception instead of exploding on ambiguous grammars).
//
// The state is a value: copying a matcher (e.g. to try several tokens ahead, for speculative
// decoding) copies its stacks and shares the grammar.

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_GRAMMAR_MATCHER_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_GRAMMAR_MATCHER_HPP

#include "grammar.hpp"

#include <memory>

namespace cv {
namespace dnn {
namespace llm {

//! The lead bits of an unfinished UTF-8 character and how many bytes it still needs.
struct CV_EXPORTS Utf8Partial
{
    uint32_t value = 0;
    int remaining = 0;
    int length = 0;  //!< bytes of the whole character

    /** Feeds one byte: 1 when it completes code point `cp`, 0 when more bytes are needed,
        -1 for invalid UTF-8 (a stray continuation byte, a bad lead byte, a missing continuation,
        an overlong form, a surrogate, a code point above U+10FFFF): a model must not spell
        '{' as F0 80 81 BB to get around the grammar. */
    int feed(unsigned char b, uint32_t& cp);
    //! The code points the character may still become (empty when lo > hi).
    void range(uint32_t& lo, uint32_t& hi) const;
};

struct GrammarLimits
{
    size_t maxStacks = 4096;    //!< parse stacks alive at once
    size_t maxDepth = 4096;     //!< elements on one stack (grammar nesting)
    size_t maxExpansions = 1 << 22;  //!< stack expansions for one character
};

class CV_EXPORTS GrammarMatcher
{
public:
    using Stack = std::vector<const GrammarElement*>;
    using Stacks = std::vector<Stack>;

    using Limits = GrammarLimits;

    explicit GrammarMatcher(const std::shared_ptr<const Grammar>& grammar, const Limits& limits = Limits());

    //! Consumes bytes; false (and a dead matcher) when they cannot continue a valid text.
    bool accept(const std::string& bytes);
    bool acceptByte(unsigned char b);
    //! The input so far is a whole sentence of the grammar (it may also go on).
    bool canEnd() const;
    //! No text can follow: the input so far is a whole sentence and nothing may be added.
    bool isComplete() const;
    bool isDead() const { return stacks_.empty(); }

    const Stacks& stacks() const { return stacks_; }
    const Utf8Partial& partial() const { return partial_; }
    const Grammar& grammar() const { return *grammar_; }

    //! The stacks after code point cp (out is cleared first).
    void advance(const Stacks& in, uint32_t cp, Stacks& out) const;
    //! Whether some character starting with the partial bytes can continue one of the stacks.
    bool partialFeasible(const Stacks& stacks, const Utf8Partial& partial) const;

private:
    using ExpansionPath = std::vector<std::pair<uint32_t, const Stack*> >;
    void expand(Stack& stack, Stacks& out, size_t& work, ExpansionPath& path) const;
    void expandRule(const Stack& base, uint32_t rule, Stacks& out, size_t& work, ExpansionPath& path) const;
    void finish(Stacks& out) const;

    std::shared_ptr<const Grammar> grammar_;
    Limits limits_;
    Stacks stacks_;
    Utf8Partial partial_;
};

}}} // namespace cv::dnn::llm

#endif
