// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Text <-> token ids for GGUF language models, from the model's own tokenizer.ggml.* metadata.
//
// Four models, chosen by tokenizer.ggml.model:
//   "llama"  SentencePiece-style: score-ordered merges with byte fallback (Llama 1/2, Mistral,
//            TinyLlama, Phi-3, Gemma 1/2/3, ...)
//   "gpt2"   byte-level BPE: a pre-tokenizer regex (tokenizer.ggml.pre) then ranked merges
//            (GPT-2, Llama 3, Qwen2, DeepSeek, Falcon, StarCoder, ...)
//   "gemma4" ranked merges on SentencePiece-style text ("▁" spaces, <0xXX> byte tokens)
//   "bert"   WordPiece: BERT's basic pre-tokenization then longest-match pieces
// The others llama.cpp knows ("t5", "rwkv", "plamo2", "hybriddna", "whitespace", "none") are
// refused by name.
// They reproduce llama.cpp's tokenization (its test vectors are the acceptance test), which
// in turn follows HF tokenizers.
//
// Encoding is shared: special tokens are cut out of the text first (SpecialTokenSplitter),
// BOS / EOS / SEP are added as the model asks, and each run of plain text goes to the model.
// Any byte string can be encoded; only ids outside the vocabulary are errors.

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_TOKENIZER_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_TOKENIZER_HPP

#include <opencv2/core.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/tokenizer.hpp>

#include <memory>
#include <string>
#include <vector>

#include "vocabulary.hpp"

namespace cv {
namespace dnn {
namespace llm {

class SpecialTokenSplitter;

//! What a tokenizer model assumes when the GGUF metadata does not say.
struct TokenizerDefaults
{
    int bos = -1, eos = -1, unknown = -1, separator = -1;
    bool addBos = false, addEos = false, addSeparator = false;
    //! BOS is added even when tokenizer.ggml.add_bos_token is false (Gemma 4, as llama.cpp does)
    bool forceAddBos = false;
    //! decode() drops a leading space at the start and after special tokens
    bool dropsImpliedSpace = false;
};

// Exported (though internal) so that the C++ tests can reach it through libopencv_dnn.
class CV_EXPORTS Tokenizer
{
public:
    //! Builds the tokenizer that tokenizer.ggml.model names. Throws cv::Exception for other
    //! models and for missing or inconsistent tokenizer metadata.
    static std::shared_ptr<Tokenizer> fromGGUF(const GGUFFile& file);

    //! Builds the tokenizer of a Hugging Face tokenizer.json (a model folder holding one, or
    //! the file itself; tokenizer_config.json beside it is read too). See hf_tokenizer.hpp,
    //! whose loadHuggingFaceTokenizer() also returns the chat template.
    static std::shared_ptr<Tokenizer> fromHuggingFace(const std::string& folderOrTokenizerJsonPath);

    //! A stand-in for a model without a tokenizer (an ONNX folder without tokenizer.json):
    //! vocabSize placeholder tokens; encoding text and decoding ids are errors that give `why`.
    static std::shared_ptr<Tokenizer> idsOnly(int vocabSize, const std::string& why);

    virtual ~Tokenizer();

    //! False for idsOnly(): the tokenizer has no text (ids in, ids out).
    virtual bool hasText() const { return true; }

    /** @brief Token ids of a text.
    @param text any bytes; malformed UTF-8 is tokenized (as bytes or U+FFFD), never rejected.
    @param addSpecial add BOS / EOS / SEP as the model asks (addBos(), addEos()).
    @param parseSpecial recognise control tokens written in the text ("<|im_end|>"); when false
           they are tokenized as plain text. User-defined tokens are always recognised.
    */
    std::vector<int> encode(const std::string& text, bool addSpecial, bool parseSpecial) const;

    //! The bytes one token stands for (may be part of a UTF-8 character). Control and unknown
    //! tokens give their text only with renderSpecial, else nothing.
    std::string tokenToPiece(int id, bool renderSpecial) const;

    //! The text of a sequence of ids: the pieces joined, less the space that SentencePiece /
    //! WordPiece encoding implies at the start of the text and after each special token.
    std::string decode(const std::vector<int>& ids, bool renderSpecial) const;

    //! "llama", "gpt2", "gemma4" or "bert".
    const std::string& model() const { return model_; }
    int vocabSize() const { return vocab_.size(); }
    int bosId() const { return bosId_; }            //!< -1 when the model has none
    int eosId() const { return eosId_; }            //!< -1 when the model has none
    int unknownId() const { return unknownId_; }    //!< -1 when the model has none
    int separatorId() const { return separatorId_; }  //!< -1 when the model has none
    bool addBos() const { return addBos_; }
    bool addEos() const { return addEos_; }
    //! EOS, EOT, EOM and the tokens llama.cpp ends a generation at: turn ends of chat formats
    //! (<|eot_id|>, <|im_end|>, <turn|>, ...) and fill-in-the-middle pad / repo / file separators.
    bool isEndOfGeneration(int id) const;
    const std::vector<int>& endOfGenerationIds() const { return endOfGenerationIds_; }
    //! Adds tokens that end a generation (e.g. genai_config.json's eos_token_id list); ids
    //! outside the vocabulary are an error.
    void addEndOfGenerationIds(const std::vector<int>& ids);
    //! The token's text in the vocabulary ("▁Hello", "Ġworld", "<0x0A>").
    std::string tokenText(int id) const;
    //! Control, user-defined or unknown token.
    bool isSpecial(int id) const;

protected:
    Tokenizer(const GGUFFile& file, const std::string& model, const TokenizerDefaults& defaults, bool requireScores);

    //! Appends the ids of one run of text without special tokens. startsSegment: the run
    //! begins the input or follows a special token.
    virtual void encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const = 0;
    //! The bytes of a normal token (its text, with the model's escaping undone).
    virtual std::string normalTokenPiece(int id) const = 0;

    const Vocabulary& vocab() const { return vocab_; }
    void checkId(int id) const;

private:
    void readSpecialIds(const GGUFFile& file, const TokenizerDefaults& defaults);
    void findEndOfGenerationTokens(const GGUFFile& file, int eotId, int eomId);
    void applyModelQuirks(const GGUFFile& file);
    void readAddedTokenStrip(const GGUFFile& file);

    std::string model_;
    Vocabulary vocab_;
    std::unique_ptr<SpecialTokenSplitter> splitter_;
    int bosId_ = -1, eosId_ = -1, unknownId_ = -1, separatorId_ = -1;
    bool addBos_ = false, addEos_ = false, addSeparator_ = false;
    bool dropsImpliedSpace_ = false;
    std::vector<int> endOfGenerationIds_;  // sorted
};

//! The public cv::dnn::Tokenizer face of a tokenizer (tokenizer_api.cpp).
Ptr<cv::dnn::Tokenizer> makePublicTokenizer(const std::shared_ptr<Tokenizer>& tokenizer);

}}} // namespace cv::dnn::llm

#endif
