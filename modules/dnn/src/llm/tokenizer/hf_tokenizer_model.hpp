// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The "model", "added_tokens", "normalizer" and "pre_tokenizer" of a Hugging Face
// tokenizer.json as tokenizer.ggml.* metadata (see hf_tokenizer.hpp for the mapping).

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_HF_TOKENIZER_MODEL_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_HF_TOKENIZER_MODEL_HPP

#include <string>
#include <unordered_map>
#include <vector>

#include "../common/json_document.hpp"
#include "metadata_only_gguf.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! The token table written, for looking up the special tokens other files name by text.
struct HuggingFaceTokenTable
{
    std::vector<std::string> texts;  //!< by id, as stored in tokenizer.ggml.tokens
    std::unordered_map<std::string, int> addedTokenIds;  //!< added_tokens' content -> id
    std::unordered_map<std::string, int> vocabIds;       //!< model.vocab
    int unknownId = -1;

    //! The id of a token named by its text (added tokens first, as HF looks them up), or -1.
    int find(const std::string& text) const;
};

/** @brief Writes tokenizer.ggml.model, .pre, .tokens, .token_type, .scores or .merges,
.unknown_token_id and .add_space_prefix (and the tokenizer.hf.* keys) for a tokenizer.json.
Throws cv::Exception naming the field for what it cannot represent. */
HuggingFaceTokenTable convertTokenizerJsonModel(const JsonDocument& tokenizerJson, MetadataOnlyGGUF& out);

}}} // namespace cv::dnn::llm

#endif
