// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Constructors of the tokenizer models, each defined next to its model.

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_TOKENIZER_MODELS_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_TOKENIZER_MODELS_HPP

#include "tokenizer.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! tokenizer.ggml.model = "llama" (sentencepiece_tokenizer.cpp)
std::shared_ptr<Tokenizer> createSentencePieceTokenizer(const GGUFFile& file);
//! tokenizer.ggml.model = "gpt2" (bpe_tokenizer.cpp)
std::shared_ptr<Tokenizer> createByteLevelBpeTokenizer(const GGUFFile& file);
//! tokenizer.ggml.model = "gemma4" (bpe_tokenizer.cpp)
std::shared_ptr<Tokenizer> createGemma4Tokenizer(const GGUFFile& file);
//! tokenizer.ggml.model = "bert" (wordpiece_tokenizer.cpp)
std::shared_ptr<Tokenizer> createWordPieceTokenizer(const GGUFFile& file);

}}} // namespace cv::dnn::llm

#endif
