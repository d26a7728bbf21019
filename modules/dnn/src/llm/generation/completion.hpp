// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_COMPLETION_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_COMPLETION_HPP

#include <opencv2/dnn/text_generation.hpp>
#include "../tokenizer/tokenizer.hpp"
#include "sampler.hpp"
#include "text_stream.hpp"

#include <memory>

#include "../grammar/grammar_matcher.hpp"
#include "../grammar/token_mask.hpp"

namespace cv {
namespace dnn {
namespace llm {

/** Why a completion ended (OpenAI's finish_reason names, plus cancelled and error). */
enum class FinishReason
{
    None,       //!< still running
    Stop,       //!< an end-of-generation or stop token, a stop string, or the grammar's end
    Length,     //!< maxNewTokens or the context
    Cancelled,  //!< finish() before any of those (a cancel, a stream callback that said stop)
    Error       //!< a failure of this request (set by the engine, not by Completion)
};
//! "stop", "length", "cancelled", "error" ("" for None).
const char* finishReasonName(FinishReason reason);

/** One completion being generated: its sampler, stop conditions and text. The caller runs the
    model; accept() takes the logits of the next token and says whether to feed it. */
class Completion
{
public:
    Completion(const Tokenizer& tokenizer, const std::vector<int>& prompt, const GenerationConfig& config,
               const std::vector<std::string>& extraStops);

    /** Samples the next token from `logits` (vocabulary size). Returns the new piece of text
        (whole UTF-8 characters; possibly empty). After it, done() or lastToken() is to be fed.
        `roomLeft`: tokens the sequence may still take (at most 1 ends generation after this). */
    String accept(const float* logits, int vocab, int roomLeft);
    /** accept() given a drafted token (speculative decoding): the next token follows the same
        distribution (Sampler::sample with a draft); it is the draft when lastToken() == draft. */
    String accept(const float* logits, int vocab, int roomLeft, int draft);
    //! Ends generation now (cancel); returns the text held back so far.
    String finish();

    bool done() const { return done_; }
    FinishReason finishReason() const { return finishReason_; }
    int lastToken() const { return generated_.back(); }
    //! The token the last accept() chose, a stop token included (-1 before any).
    int lastSampled() const { return lastSampled_; }
    const std::vector<int>& prompt() const { return prompt_; }
    int maxNewTokens() const { return config_.maxNewTokens; }
    const std::vector<int>& generated() const { return generated_; }
    //! The prompt and the tokens generated so far.
    const std::vector<int>& history() const { return history_; }
    //! All text generated so far.
    String text() const { return stream_.text(); }
    /** GenerationConfig::topLogprobs >= 0: per generated token, its log-probability under the
        raw logits accept() was given; with topLogprobs > 0 also the most likely ids and their
        log-probabilities (flattened, topLogprobsPerToken() per token, most likely first). */
    const std::vector<float>& tokenLogprobs() const { return tokenLogprobs_; }
    const std::vector<int>& topLogprobTokenIds() const { return topLogprobIds_; }
    const std::vector<float>& topLogprobs() const { return topLogprobs_; }

    //! Whether the config constrains the text (grammar, jsonSchema or jsonMode).
    bool constrained() const { return matcher_ != nullptr; }
    /** Whether token `id` may come next: with a grammar, its bytes must continue the text (and
        end-of-generation needs the grammar to be able to end); without one, any id. Costs one
        copy of the matcher's state (for speculative decoding: checking drafted tokens). */
    bool allows(int id) const;
    //! The grammar's state (copy it to look ahead; nullptr without a grammar).
    const GrammarMatcher* grammarMatcher() const { return matcher_.get(); }

private:
    //! Ends generation for `reason` (the first reason stays); returns the text held back.
    String end(FinishReason reason);
    bool isStopToken(int id) const;
    //! Sets the logits of the tokens the grammar does not allow to -inf (into masked_).
    const float* maskByGrammar(const float* logits, int vocab, bool& anyAllowed);
    //! Appends the log-probabilities of token `id` (and the most likely ones) under `logits`.
    void recordLogprobs(const float* logits, int vocab, int id);

    const Tokenizer& tokenizer_;
    GenerationConfig config_;
    Sampler sampler_;
    TextStream stream_;
    std::vector<int> prompt_, history_, generated_;
    std::vector<int> endOfGeneration_;  // ids masked out with ignoreEndOfGeneration
    std::vector<float> masked_;         // logits with those ids at -inf
    int lastSampled_ = -1;
    bool done_ = false;
    FinishReason finishReason_ = FinishReason::None;

    // grammar-constrained generation
    std::unique_ptr<GrammarMatcher> matcher_;
    std::shared_ptr<const TokenTrie> trie_;
    TokenTrie::Scratch scratch_;
    std::vector<uint8_t> allowed_;

    // log-probabilities (config.topLogprobs >= 0)
    std::vector<float> tokenLogprobs_, topLogprobs_;
    std::vector<int> topLogprobIds_;
    std::vector<int> byLogit_;  // scratch: token ids, the most likely first
};

}}} // namespace cv::dnn::llm

#endif
