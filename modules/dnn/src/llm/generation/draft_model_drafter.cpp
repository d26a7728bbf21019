// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include <opencv2/dnn/llm.hpp>
#include "drafter.hpp"
#include "batch_generation.hpp"
#include "../tokenizer/tokenizer.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

// A draft token is only worth something when it means the same text to the target model.
static void checkSameVocabulary(const Tokenizer& draft, const Tokenizer& target)
{
    if (draft.vocabSize() != target.vocabSize())
        CV_Error(Error::StsBadArg, format("TextGenerationModel::setDraftModel: the draft model has %d tokens, the "
                                          "model %d; drafting needs the same vocabulary",
                                          draft.vocabSize(), target.vocabSize()));
    if (!draft.hasText() || !target.hasText())
        return;  // ids-only models: the ids are all there is to compare
    for (int id = 0; id < target.vocabSize(); id++)
        if (draft.tokenText(id) != target.tokenText(id))
            CV_Error(Error::StsBadArg, format("TextGenerationModel::setDraftModel: token %d is \"%s\" in the draft "
                                              "model but \"%s\" in the model; drafting needs the same vocabulary",
                                              id, draft.tokenText(id).c_str(), target.tokenText(id).c_str()));
}

// Softmax probability of token `t`.
static double probability(const float* logits, int n, int t)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += std::exp((double)logits[i] - logits[t]);
    return 1.0 / sum;
}

DraftModelDrafter::DraftModelDrafter(const Net& net, const Tokenizer& draftVocabulary, const Tokenizer& targetVocabulary)
    : net_(net), vocab_(targetVocabulary.vocabSize())
{
    checkSameVocabulary(draftVocabulary, targetVocabulary);
    cache_ = getLLMKVCache(net_).dynamicCast<PagedKVCache>();
    CV_Assert(cache_);
    resetLLMState(net_);
}

void DraftModelDrafter::queueContext(int sequence, const std::vector<int>& context)
{
    // Keep the cached prefix the new context shares (the last token is always fed again when
    // nothing follows it, for its logits).
    std::vector<int>& fed = fed_[sequence];
    size_t common = 0;
    while (common < fed.size() && common < context.size() && fed[common] == context[common])
        common++;
    common = std::min(common, context.size() - 1);
    common = (size_t)cache_->getResumableLength(sequence, (int)common);
    if (cache_->hasSequence(sequence))
        cache_->truncateSequence(sequence, (int)common);
    fed.resize(common);
    tokens_.insert(tokens_.end(), context.begin() + common, context.end());
    sequenceIds_.insert(sequenceIds_.end(), context.size() - common, sequence);
}

void DraftModelDrafter::feedQueued()
{
    logits_ = forwardTokens(net_, tokens_, sequenceIds_, input_);
    CV_CheckGE(logits_.cols, vocab_, "TextGenerationModel: the draft model's logits are narrower than its vocabulary");
    for (size_t i = 0; i < tokens_.size(); i++)
        fed_[sequenceIds_[i]].push_back(tokens_[i]);
    tokens_.clear();
    sequenceIds_.clear();
}

bool DraftModelDrafter::takeBest(const float* logits, std::vector<int>& draft) const
{
    const int best = (int)(std::max_element(logits, logits + vocab_) - logits);
    if (minProbability_ > 0.f && probability(logits, vocab_, best) < minProbability_)
        return false;
    draft.push_back(best);
    return true;
}

void DraftModelDrafter::propose(int sequence, const std::vector<int>& context, int maxTokens, std::vector<int>& draft)
{
    const std::vector<std::vector<int>*> drafts(1, &draft);
    proposeAll(std::vector<int>(1, sequence), std::vector<const std::vector<int>*>(1, &context),
               std::vector<int>(1, maxTokens), drafts);
}

void DraftModelDrafter::proposeAll(const std::vector<int>& sequences, const std::vector<const std::vector<int>*>& contexts,
                                   const std::vector<int>& maxTokens, const std::vector<std::vector<int>*>& drafts)
{
    // The first forward feeds what each context adds to the draft model's cache; each later
    // one feeds the token drafted last, for the sequences still drafting. One forward serves them all.
    auto wanted = [&](size_t i) { return std::min(maxTokens[i], contextLength() - (int)contexts[i]->size()); };
    drafting_.clear();
    for (size_t i = 0; i < sequences.size(); i++)
    {
        drafts[i]->clear();
        if (wanted(i) > 0 && !contexts[i]->empty())
        {
            queueContext(sequences[i], *contexts[i]);
            drafting_.push_back((int)i);
        }
    }
    while (!drafting_.empty())
    {
        feedQueued();
        size_t still = 0;
        for (size_t r = 0; r < drafting_.size(); r++)
        {
            const int i = drafting_[r];
            std::vector<int>& draft = *drafts[i];
            if (!takeBest(logits_.ptr<float>((int)r), draft) || (int)draft.size() >= wanted(i))
                continue;
            tokens_.push_back(draft.back());
            sequenceIds_.push_back(sequences[i]);
            drafting_[still++] = i;
        }
        drafting_.resize(still);
    }
}

void DraftModelDrafter::setMinProbability(float p)
{
    CV_Check(p, p >= 0.f && p <= 1.f, "TextGenerationModel: draftMinProbability must be in [0, 1]");
    minProbability_ = p;
}

void DraftModelDrafter::forget(int sequence)
{
    if (cache_->hasSequence(sequence))
        cache_->removeSequence(sequence);
    fed_.erase(sequence);
}

}}} // namespace cv::dnn::llm
