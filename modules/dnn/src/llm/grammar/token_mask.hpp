// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Which tokens of a vocabulary can continue a grammar's text. The tokens' byte strings are
// stored once as a trie in depth-first order (each node: its byte, its depth, the index just past
// its subtree, the tokens ending there); masking walks it once per state, advancing the parse
// stacks one byte per node, so that tokens sharing a prefix share that work, and a dead node
// skips its whole subtree. Tokens may end inside a UTF-8 character (their bytes must be able
// to start one the grammar allows).

#ifndef OPENCV_DNN_SRC_LLM_GRAMMAR_TOKEN_MASK_HPP
#define OPENCV_DNN_SRC_LLM_GRAMMAR_TOKEN_MASK_HPP

#include "grammar_matcher.hpp"

#include <map>
#include <unordered_map>

namespace cv {
namespace dnn {
namespace llm {

class CV_EXPORTS TokenTrie
{
public:
    //! pieces[id]: the bytes of token id; empty pieces (control tokens) are never allowed.
    explicit TokenTrie(const std::vector<std::string>& pieces);

    //! Working memory of mask(), kept between calls (one per user: the trie itself is shared).
    struct Scratch
    {
        // The distinct parse states met in one walk, and the transitions between them: most
        // nodes repeat a transition already made (inside a JSON string every ordinary character
        // leads back to the same state), which then costs one hash lookup.
        std::vector<GrammarMatcher::Stacks> states;
        std::map<GrammarMatcher::Stacks, int> ids;
        std::unordered_map<uint64_t, int> next;         // (state, code point) -> state, -1: dead
        std::unordered_map<uint64_t, bool> feasible;    // (state, partial character) -> alive
        std::vector<int> stateAt;                       // per depth
        std::vector<Utf8Partial> partial;               // per depth
        GrammarMatcher::Stacks advanced;
        // Whole masks of recent states (states repeat from step to step: every token inside a
        // JSON string starts from the same state), at most maxCachedMasks of them.
        struct CachedMask
        {
            GrammarMatcher::Stacks stacks;
            Utf8Partial partial;
            std::vector<uint8_t> allowed;
            int count;
            uint64_t lastUse;
        };
        std::vector<CachedMask> masks;
        size_t maxCachedMasks = 16;
        uint64_t clock = 0;
    };

    /** allowed[id] = 1 for each token whose bytes can continue the matcher's text, else 0
        (resized to the vocabulary). Returns how many are allowed. End-of-generation is the
        caller's (GrammarMatcher::canEnd()). Thread-safe for distinct scratch objects. */
    int mask(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed, Scratch& scratch) const;
    int mask(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed) const
    {
        Scratch scratch;
        return mask(matcher, allowed, scratch);
    }

    //! Whether token id's bytes can continue the matcher's text.
    static bool allows(const GrammarMatcher& matcher, const std::string& piece);

    int vocabSize() const { return vocab_; }
    size_t nodeCount() const { return nodes_.size(); }

private:
    struct Node
    {
        uint8_t byte;
        uint16_t depth;        // 1 for the first byte
        uint32_t skip;         // index of the first node after this subtree
        uint32_t tokenBegin, tokenEnd;  // into tokens_
    };
    std::vector<Node> nodes_;
    std::vector<int> tokens_;
    int vocab_ = 0;
    size_t maxDepth_ = 0;
};

}}} // namespace cv::dnn::llm

#endif
