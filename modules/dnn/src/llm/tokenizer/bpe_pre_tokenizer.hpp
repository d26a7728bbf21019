// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The pre-tokenizer of byte-level BPE models: splits text into words with the regular
// expressions of the model's tokenizer (tokenizer.ggml.pre names them), before merges run
// within each word. Matching uses PCRE2 with Unicode properties (\p{L}, \p{N}, ...).

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_BPE_PRE_TOKENIZER_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_BPE_PRE_TOKENIZER_HPP

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class BpePreTokenizer
{
public:
    /** @brief The pre-tokenizer that tokenizer.ggml.pre names.

    Names that llama.cpp knows for these patterns are accepted (e.g. "gpt-2", "llama-bpe",
    "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "mpt", "starcoder", "refact",
    "smollm", "default"). An empty or unknown name falls back to GPT-2's pattern with a
    warning: right for ASCII prose, wrong around digits and non-Latin scripts for many models.
    */
    explicit BpePreTokenizer(const std::string& preName);
    ~BpePreTokenizer();

    /** @brief The tokenizer.ggml.pre name of the pre-tokenizer that applies exactly these regexes
    in this order (PCRE2 syntax as in this file), or "" when none does. Among equal rules, one
    whose ignoresMerges() agrees is preferred. (Used to map Hugging Face tokenizer.json files.)
    */
    static std::string findName(const std::vector<std::string>& patterns, bool ignoresMerges);
    //! GPT-2's regex: what a ByteLevel pre-tokenizer with use_regex applies.
    static const char* gpt2Pattern();
    //! The run of punctuation that HF's Punctuation pre-tokenizer isolates (ASCII symbols included).
    static const char* punctuationPattern();

    //! Words of a valid UTF-8 text, in order; they concatenate to the text.
    std::vector<std::string_view> split(std::string_view text) const;

    //! The name the patterns were chosen for ("gpt-2" after a fallback).
    const std::string& name() const { return name_; }
    //! Llama-3-style models look a whole word up in the vocabulary before merging.
    bool ignoresMerges() const { return ignoresMerges_; }
    //! Whether the model family adds BOS when tokenizer.ggml.add_bos_token is absent.
    bool addsBosByDefault() const { return addsBosByDefault_; }

private:
    class Regex;

    std::string name_;
    bool ignoresMerges_ = false;
    bool addsBosByDefault_ = false;
    // Applied in turn: each one splits the pieces the previous ones produced.
    std::vector<std::unique_ptr<Regex>> regexes_;
};

}}} // namespace cv::dnn::llm

#endif
