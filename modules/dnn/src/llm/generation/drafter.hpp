// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Speculative decoding's drafters: cheap guesses of the next tokens, which the model then
// checks all at once in one forward (the append stage of attention: several new tokens of a
// sequence against its cache). A guess never changes what is generated, only how fast.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_DRAFTER_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_DRAFTER_HPP

#include <opencv2/dnn.hpp>
#include "../kv_cache/paged_kv_cache.hpp"

#include <map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class Tokenizer;

class Drafter
{
public:
    virtual ~Drafter() {}
    /** Up to `maxTokens` tokens likely to follow `context` (every token of the sequence so far,
        the one about to be fed included) into `draft`, which is cleared first and may stay
        empty. Drafts are deterministic: the same context gives the same draft. `sequence`:
        the caller's id of the sequence, for drafters that keep state per sequence. */
    virtual void propose(int sequence, const std::vector<int>& context, int maxTokens, std::vector<int>& draft) = 0;
    /** propose() for several sequences at once (a batch): request i is sequence sequences[i]
        with contexts[i], maxTokens[i] and drafts[i]. The same drafts as one by one. */
    virtual void proposeAll(const std::vector<int>& sequences, const std::vector<const std::vector<int>*>& contexts,
                            const std::vector<int>& maxTokens, const std::vector<std::vector<int>*>& drafts)
    {
        for (size_t i = 0; i < sequences.size(); i++)
            propose(sequences[i], *contexts[i], maxTokens[i], *drafts[i]);
    }
    //! The caller is done with a sequence (its state may go).
    virtual void forget(int sequence) { CV_UNUSED(sequence); }
};

/** Prompt lookup: the tokens that followed the latest earlier occurrence of the context's last
    n tokens, for n = `ngram` down to 1 (the longest match wins). Pays where the output repeats
    its input: summaries, edits, code, extraction. */
class PromptLookupDrafter CV_FINAL : public Drafter
{
public:
    explicit PromptLookupDrafter(int ngram);
    void propose(int sequence, const std::vector<int>& context, int maxTokens, std::vector<int>& draft) CV_OVERRIDE;

private:
    int ngram_;
};

/** A smaller model with the same vocabulary drafts greedily. Each sequence keeps its tokens in
    the draft model's own KV cache under the caller's sequence id; a new context that starts
    with them feeds only the rest (as TextGenerationModel's prompts do). */
class DraftModelDrafter CV_FINAL : public Drafter
{
public:
    /** `net`: the draft model's Net; `draftVocabulary`: its tokenizer, checked against the
        target's (`targetVocabulary`): the same tokens with the same ids, or an error naming
        the first difference. */
    DraftModelDrafter(const Net& net, const Tokenizer& draftVocabulary, const Tokenizer& targetVocabulary);
    void propose(int sequence, const std::vector<int>& context, int maxTokens, std::vector<int>& draft) CV_OVERRIDE;
    //! Drafts every sequence in the same forwards of the draft model (ragged batches).
    void proposeAll(const std::vector<int>& sequences, const std::vector<const std::vector<int>*>& contexts,
                    const std::vector<int>& maxTokens, const std::vector<std::vector<int>*>& drafts) CV_OVERRIDE;
    void forget(int sequence) CV_OVERRIDE;

    //! Drafting stops at a token the draft model gives less than this probability (0: never).
    void setMinProbability(float p);

    //! Tokens a sequence may hold in the draft model's cache.
    int contextLength() const { return cache_->getMaxSequenceLength(); }

private:
    /** Rewinds a sequence's cache to what it shares with `context` and appends the rest of
        `context` to tokens_ / sequenceIds_ (the next forward's batch). */
    void queueContext(int sequence, const std::vector<int>& context);
    //! Runs the queued batch: one row of logits per sequence, in order of first appearance.
    void feedQueued();
    //! Takes the best token of `logits` into `draft` unless it is too unlikely; false when drafting ends.
    bool takeBest(const float* logits, std::vector<int>& draft) const;

    Net net_;
    Ptr<PagedKVCache> cache_;
    std::map<int, std::vector<int>> fed_;  // per sequence: the tokens its cache holds
    std::vector<int> tokens_, sequenceIds_, drafting_;
    Mat input_, logits_;
    int vocab_;
    float minProbability_ = 0.f;
};

}}} // namespace cv::dnn::llm

#endif
