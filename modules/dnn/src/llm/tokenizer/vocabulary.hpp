// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The token table of a GGUF tokenizer: texts, types and scores (tokenizer.ggml.tokens,
// .token_type, .scores), with a text -> id index.

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_VOCABULARY_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_VOCABULARY_HPP

#include <opencv2/core.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

//! Values of tokenizer.ggml.token_type (SentencePiece's piece types).
enum TokenType
{
    TOKEN_TYPE_UNDEFINED = 0,
    TOKEN_TYPE_NORMAL = 1,
    TOKEN_TYPE_UNKNOWN = 2,
    TOKEN_TYPE_CONTROL = 3,
    TOKEN_TYPE_USER_DEFINED = 4,
    TOKEN_TYPE_UNUSED = 5,
    TOKEN_TYPE_BYTE = 6
};

class Vocabulary
{
public:
    //! Reads the token arrays. Scores are required by SentencePiece merging; without
    //! requireScores an absent array means all zero.
    Vocabulary(const GGUFFile& file, bool requireScores);

    // The text index points into texts_: a copy would dangle.
    Vocabulary(const Vocabulary&) = delete;
    Vocabulary& operator=(const Vocabulary&) = delete;

    int size() const { return (int)texts_.size(); }
    bool contains(int id) const { return id >= 0 && id < size(); }
    const std::string& text(int id) const { return texts_[id]; }
    TokenType type(int id) const { return (TokenType)types_[id]; }
    float score(int id) const { return scores_[id]; }
    size_t maxTokenLength() const { return maxTokenLength_; }
    //! Whether the file gave token types (tokenizer.ggml.token_type).
    bool hasTypes() const { return hasTypes_; }

    //! The id of the token whose text is exactly `text`, or -1.
    int find(std::string_view text) const
    {
        const auto it = idsByText_.find(text);
        return it == idsByText_.end() ? -1 : it->second;
    }

    //! The byte that a byte token "<0xXX>" stands for, or -1 for any other token.
    int byteValue(int id) const;

    //! Control, user-defined and unknown tokens: the ones matched as whole strings in text.
    bool isSpecial(int id) const
    {
        const TokenType t = type(id);
        return t == TOKEN_TYPE_CONTROL || t == TOKEN_TYPE_USER_DEFINED || t == TOKEN_TYPE_UNKNOWN;
    }

    void setType(int id, TokenType type) { types_[id] = (uint8_t)type; }

    // Whitespace that a special token swallows on its left / right when it is matched in
    // text (HF's lstrip / rstrip of added tokens; GGUF does not store them).
    void setStrip(int id, bool left, bool right) { strip_[id] = (uint8_t)((left ? 1 : 0) | (right ? 2 : 0)); }
    bool stripsLeft(int id) const { return (strip_[id] & 1) != 0; }
    bool stripsRight(int id) const { return (strip_[id] & 2) != 0; }

private:
    std::vector<std::string> texts_;
    std::vector<uint8_t> types_;
    std::vector<float> scores_;
    std::vector<uint8_t> strip_;
    std::unordered_map<std::string_view, int> idsByText_;
    size_t maxTokenLength_ = 0;
    bool hasTypes_ = false;
};

}}} // namespace cv::dnn::llm

#endif
