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

const float* DraftModelDrafter::feed(int sequence, const std::vector<int>& tokens)
{
    sequenceIds_.assign(tokens.size(), sequence);
    logits_ = forwardTokens(net_, tokens, sequenceIds_, input_);
    CV_CheckEQ(logits_.rows, 1, "TextGenerationModel: the draft model returned several logit rows");
    CV_CheckGE(logits_.cols, vocab_, "TextGenerationModel: the draft model's logits are narrower than its vocabulary");
    std::vector<int>& fed = fed_[sequence];
    fed.insert(fed.end(), tokens.begin(), tokens.end());
    return logits_.ptr<float>();
}

void DraftModelDrafter::propose(int sequence, const std::vector<int>& context, int maxTokens, std::vector<int>& draft)
{
    draft.clear();
    maxTokens = std::min(maxTokens, contextLength() - (int)context.size());
    if (maxTokens <= 0 || context.empty())
        return;
    // Keep the cached prefix the new context shares (the last token is always fed again
    // when nothing follows it, for its logits).
    std::vector<int>& fed = fed_[sequence];
    size_t common = 0;
    while (common < fed.size() && common < context.size() && fed[common] == context[common])
        common++;
    common = std::min(common, context.size() - 1);
    common = (size_t)cache_->getResumableLength(sequence, (int)common);
    if (cache_->hasSequence(sequence))
        cache_->truncateSequence(sequence, (int)common);
    fed.resize(common);
    tokens_.assign(context.begin() + common, context.end());
    const float* logits = feed(sequence, tokens_);
    for (;;)
    {
        const int best = (int)(std::max_element(logits, logits + vocab_) - logits);
        if (minProbability_ > 0.f && probability(logits, vocab_, best) < minProbability_)
            return;
        draft.push_back(best);
        if ((int)draft.size() >= maxTokens)
            return;
        tokens_.assign(1, best);
        logits = feed(sequence, tokens_);
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
