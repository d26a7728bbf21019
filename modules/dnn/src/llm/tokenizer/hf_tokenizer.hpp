// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Tokenizers of Hugging Face model folders (tokenizer.json, optional tokenizer_config.json and
// chat_template.jinja), as ONNX Runtime GenAI's model builder exports them next to model.onnx.
//
// The files are converted into the tokenizer.ggml.* metadata that llama.cpp's
// convert_hf_to_gguf.py would have written, held in memory (MetadataOnlyGGUF), and the
// tokenizer is built from that like from any GGUF file:
//   BPE + byte_fallback + "▁" escaping (Prepend/Replace normalizer or Metaspace)
//       -> "llama" (SentencePiece-style); scores derived from the merge ranks
//   BPE + ByteLevel pre-tokenizer -> "gpt2", with the tokenizer.ggml.pre whose regexes equal
//       the file's Split / Digits / Punctuation / ByteLevel steps
//   BPE without normalizer and pre-tokenizer -> "llama" without whitespace escaping
// added_tokens become control (special) or user-defined tokens. Anything else raises a
// cv::Exception naming the file and the field.
//
// Keys outside GGUF's tokenizer.ggml.* set, read by our tokenizers only:
//   tokenizer.hf.escape_whitespace  bool: "llama" model turns ' ' into "▁" (default true)
//   tokenizer.hf.lstrip_token_ids / tokenizer.hf.rstrip_token_ids  array[int32]: added tokens
//       that swallow whitespace on their left / right (HF's lstrip / rstrip)

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_HF_TOKENIZER_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_HF_TOKENIZER_HPP

#include <opencv2/dnn/gguf.hpp>

#include <memory>
#include <string>

#include "tokenizer.hpp"

namespace cv {
namespace dnn {
namespace llm {

// Exported (though internal) so that the C++ tests can reach these through libopencv_dnn.

//! A Hugging Face tokenizer with what a text generator needs besides encoding.
struct HuggingFaceTokenizer
{
    std::shared_ptr<Tokenizer> tokenizer;
    //! The tokenizer.ggml.* (and tokenizer.chat_template) view it was built from.
    Ptr<GGUFFile> metadata;
    //! Jinja chat template ("" when the folder has none).
    std::string chatTemplate;
    int bosId = -1;  //!< -1 when none
    int eosId = -1;  //!< -1 when none
    std::string tokenizerJsonPath;
};

/** @brief Converts tokenizer.json (and tokenizer_config.json / chat_template.jinja found beside it)
into GGUF tokenizer metadata.
@param folderOrTokenizerJsonPath a model folder holding tokenizer.json, or the path of the
       tokenizer.json file itself.
*/
CV_EXPORTS Ptr<GGUFFile> readHuggingFaceTokenizerMetadata(const std::string& folderOrTokenizerJsonPath);

//! readHuggingFaceTokenizerMetadata() and the tokenizer built from it.
CV_EXPORTS HuggingFaceTokenizer loadHuggingFaceTokenizer(const std::string& folderOrTokenizerJsonPath);

//! Whether a path names a Hugging Face tokenizer: a *.json file or a folder (which should hold tokenizer.json).
CV_EXPORTS bool isHuggingFaceTokenizerPath(const std::string& path);

}}} // namespace cv::dnn::llm

#endif
