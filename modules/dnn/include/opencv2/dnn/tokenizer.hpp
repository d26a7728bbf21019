// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_TOKENIZER_HPP
#define OPENCV_DNN_TOKENIZER_HPP

#include <opencv2/dnn.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief Text to token ids and back, with a language model's own tokenizer.

Built from a GGUF file's `tokenizer.ggml.*` metadata (a vocabulary-only GGUF is enough):
SentencePiece-style (`llama`), byte-level BPE (`gpt2`, with the pre-tokenizer that
`tokenizer.ggml.pre` names) and WordPiece (`bert`). Results match llama.cpp's tokenizer.

Also built from a Hugging Face `tokenizer.json` (as found next to ONNX models exported by
ONNX Runtime GenAI's model builder), with `tokenizer_config.json` beside it for BOS/EOS:
BPE models with byte fallback and "▁" spaces (Llama 2, Mistral, TinyLlama, Phi-3) and
byte-level BPE models whose pre-tokenizer is one llama.cpp knows (GPT-2, Llama 3, Qwen2, ...).
Other tokenizer.json models raise a cv::Exception naming the unsupported field.
*/
class CV_EXPORTS_W Tokenizer
{
public:
    virtual ~Tokenizer();

    /** @brief Reads a tokenizer.
    @param path a GGUF file; or a Hugging Face `tokenizer.json` (any path ending in `.json`);
           or a model folder holding `tokenizer.json`. With tokenizer.json, `tokenizer_config.json`
           in the same folder is read too (bos_token, eos_token, add_bos_token, add_eos_token).
    */
    CV_WRAP static Ptr<Tokenizer> create(const String& path);

    /** @brief Token ids of a text (any bytes).
    @param text the text.
    @param addSpecial add BOS/EOS (or [CLS]/[SEP]) as the model asks.
    @param parseSpecial recognise control tokens written in the text (e.g. "<|im_end|>").
    */
    CV_WRAP virtual std::vector<int> encode(const String& text, bool addSpecial = true,
                                            bool parseSpecial = false) const = 0;

    /** @brief The text of token ids (control tokens only with renderSpecial); bytes that form no
    UTF-8 character come out as U+FFFD, so the text is valid UTF-8. */
    CV_WRAP virtual String decode(const std::vector<int>& ids, bool renderSpecial = false) const = 0;

    /** @brief The bytes one token stands for; may be part of a UTF-8 character. */
    virtual String tokenToPiece(int id, bool renderSpecial = false) const = 0;

    CV_WRAP virtual int getVocabSize() const = 0;
    //! BOS id, or -1 when the model has none.
    CV_WRAP virtual int getBosId() const = 0;
    //! EOS id, or -1 when the model has none.
    CV_WRAP virtual int getEosId() const = 0;
    //! True for EOS and the other tokens that end a turn (<|eot_id|>, <|im_end|>, ...).
    CV_WRAP virtual bool isEndOfGeneration(int id) const = 0;
};

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
