// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The pre-tokenizer of BPE models: splits text into words with the regular expressions of the
// model's tokenizer (tokenizer.ggml.pre names them), before merges run within each word.
//
// The words are llama.cpp's (whose test vectors are the acceptance test), which runs each
// pattern with std::regex on a simplified text or with a hand-written splitter. The rules that
// follow from it, reproduced here on top of PCRE2:
//   - every non-ASCII White_Space character counts as U+000B (\s: the ASCII six plus those);
//   - \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo} all mean \p{L}; \d, \w, \b are ASCII;
//   - an empty match cuts the text where it is (std::regex_iterator);
//   - the patterns are llama.cpp's spellings, which differ from some tokenizer.json ones
//     (e.g. GPT-4o's upper/lower case classes are "letter that is not a-z / A-Z").

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_BPE_PRE_TOKENIZER_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_BPE_PRE_TOKENIZER_HPP

#include <opencv2/core/cvdef.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

// Exported (though internal) so that the C++ tests can reach it through libopencv_dnn.
class CV_EXPORTS BpePreTokenizer
{
public:
    /** @brief The pre-tokenizer that tokenizer.ggml.pre names.

    Every name that llama.cpp knows is accepted (knownNames()). An empty name is llama.cpp's
    "default" (with a warning, as llama.cpp gives). Any other name is an error (cv::Exception
    naming it), as in llama.cpp.
    */
    explicit BpePreTokenizer(const std::string& preName);
    ~BpePreTokenizer();

    //! Every tokenizer.ggml.pre value accepted, in the order of the rule table.
    static std::vector<std::string> knownNames();

    /** @brief The tokenizer.ggml.pre name of the pre-tokenizer that applies exactly these regexes
    in this order (as tokenizer.json files spell them), or "" when none does. Among equal rules,
    one whose ignoresMerges() agrees is preferred. (Used to map Hugging Face tokenizer.json files.)
    */
    static std::string findName(const std::vector<std::string>& patterns, bool ignoresMerges);
    //! GPT-2's regex: what a ByteLevel pre-tokenizer with use_regex applies.
    static const char* gpt2Pattern();
    //! The run of punctuation that HF's Punctuation pre-tokenizer isolates (ASCII symbols included).
    static const char* punctuationPattern();

    //! Words of a valid UTF-8 text, in order; they concatenate to the text.
    std::vector<std::string_view> split(std::string_view text) const;

    //! The rule's name ("default" for an empty tokenizer.ggml.pre).
    const std::string& name() const { return name_; }
    //! Llama-3-style models look a whole word up in the vocabulary before merging.
    bool ignoresMerges() const { return ignoresMerges_; }
    //! Whether the model family adds BOS when tokenizer.ggml.add_bos_token is absent.
    bool addsBosByDefault() const { return addsBosByDefault_; }
    //! Gemma 4 adds BOS even when tokenizer.ggml.add_bos_token is false (as llama.cpp does).
    bool forcesBos() const { return forcesBos_; }
    /** GPT-2's byte-to-character map spells the words (true), or the words are merged as raw
    UTF-8 characters with "<0xXX>" byte tokens for what the vocabulary lacks (Gemma 4 style). */
    bool byteEncoded() const { return byteEncoded_; }
    //! Spaces become U+2581 "▁" before the text is split (SentencePiece-style BPE).
    bool escapesSpaces() const { return escapesSpaces_; }
    //! A word made only of newlines that is a token is not merged (Gemma 4).
    bool keepsNewlineTokens() const { return keepsNewlineTokens_; }

private:
    class Splitter;

    std::string name_;
    bool ignoresMerges_ = false;
    bool addsBosByDefault_ = false;
    bool forcesBos_ = false;
    bool byteEncoded_ = true;
    bool escapesSpaces_ = false;
    bool keepsNewlineTokens_ = false;
    // Applied in turn: each one splits the pieces the previous ones produced.
    std::vector<std::unique_ptr<Splitter>> splitters_;
};

}}} // namespace cv::dnn::llm

#endif
