// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Cuts text at the special tokens it contains, before any tokenizer model sees it.
//
// User-defined tokens (added tokens such as deepseek's single characters or mpt's runs of
// spaces) are always cut out, as HF tokenizers and llama.cpp do; control and unknown tokens
// ("<s>", "<|im_end|>") only when the caller asks to parse special tokens, so that user text
// cannot inject them by default.

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_SPECIAL_TOKEN_SPLITTER_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_SPECIAL_TOKEN_SPLITTER_HPP

#include <string>
#include <vector>

#include "vocabulary.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! A piece of the input: a special token, or a run of text [offset, offset + length).
struct TextFragment
{
    int tokenId;  //!< >= 0 for a special token, -1 for text
    size_t offset;
    size_t length;

    bool isText() const { return tokenId < 0; }
};

class SpecialTokenSplitter
{
public:
    explicit SpecialTokenSplitter(const Vocabulary& vocab);

    //! Fragments in text order; text fragments are never empty.
    std::vector<TextFragment> split(const std::string& text, bool parseSpecial) const;

private:
    void cutOut(const std::string& text, int tokenId, std::vector<TextFragment>& fragments) const;

    const Vocabulary& vocab_;
    // Longest first, so that "<|im_end|>" wins over a shorter token inside it; ties by id
    // keep the order deterministic.
    std::vector<int> specialIds_;
};

}}} // namespace cv::dnn::llm

#endif
