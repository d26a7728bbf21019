// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "batch_planner.hpp"

namespace cv {
namespace dnn {
namespace llm {

void BatchPlanner::setNextBatch(const std::vector<int>& sequenceIds)
{
    setNextBatch(sequenceIds, std::vector<int>());
}

void BatchPlanner::setNextBatch(const std::vector<int>& sequenceIds, const std::vector<int>& logitTokens)
{
    if (sequenceIds.empty())
        CV_Error(Error::StsBadArg, "setLLMBatch: the batch has no tokens");
    for (int id : sequenceIds)
        if (id < 0)
            CV_Error(Error::StsOutOfRange, format("setLLMBatch: sequence id %d is negative", id));
    for (size_t i = 0; i < logitTokens.size(); i++)
    {
        const int t = logitTokens[i];
        if (t < 0 || t >= (int)sequenceIds.size())
            CV_Error(Error::StsOutOfRange, format("setLLMBatch: logit token %d is not in [0, %zu)", t,
                                                  sequenceIds.size()));
        if (i > 0 && t <= logitTokens[i - 1])
            CV_Error(Error::StsBadArg, "setLLMBatch: logit tokens must be strictly ascending");
    }
    next_ = sequenceIds;
    nextLogits_ = logitTokens;
    hasNext_ = true;
}

const BatchPlan& BatchPlanner::plan(PagedKVCache& cache, int tokens)
{
    const bool named = hasNext_;
    hasNext_ = false;
    if (named && (int)next_.size() != tokens)
        CV_Error(Error::StsBadArg, format("setLLMBatch: the batch names %zu tokens but the input has %d",
                                          next_.size(), tokens));
    // Sequences in order of first appearance; each token's place in its sequence.
    BatchPlan& p = plan_;
    p.tokens = tokens;
    p.batchSequence.resize(tokens);
    p.position.resize(tokens);
    p.sequenceIds.clear();
    p.newTokens.clear();
    p.lastToken.clear();
    for (int t = 0; t < tokens; t++)
    {
        const int id = named ? next_[t] : 0;
        int b = 0;
        while (b < p.sequences() && p.sequenceIds[b] != id)
            b++;
        if (b == p.sequences())
        {
            p.sequenceIds.push_back(id);
            p.newTokens.push_back(0);
            p.lastToken.push_back(t);
        }
        p.batchSequence[t] = b;
        p.position[t] = cache.getSequenceLength(id) + p.newTokens[b]++;
        p.lastToken[b] = t;
    }
    if (named && !nextLogits_.empty())
        p.logitTokens = nextLogits_;
    else
        p.logitTokens = p.lastToken;
    // Each sequence's tokens in batch order (a counting sort by sequence).
    p.sequenceTokenStart.assign(p.sequences() + 1, 0);
    for (int b = 0; b < p.sequences(); b++)
        p.sequenceTokenStart[b + 1] = p.sequenceTokenStart[b] + p.newTokens[b];
    p.sequenceTokens.resize(tokens);
    for (int b = 0; b < p.sequences(); b++)
        p.newTokens[b] = 0;
    for (int t = 0; t < tokens; t++)
    {
        const int b = p.batchSequence[t];
        p.sequenceTokens[p.sequenceTokenStart[b] + p.newTokens[b]++] = t;
    }
    p.lastAttended.clear();
    if (!nextSpans_.empty())
    {
        std::vector<Range> spans;
        spans.swap(nextSpans_);
        p.lastAttended.assign(p.position.begin(), p.position.end());
        int previousEnd = 0;
        for (const Range& r : spans)
        {
            if (r.start < previousEnd || r.end <= r.start || r.end > tokens)
            {
                p.tokens = 0;
                CV_Error(Error::StsBadArg, format("LLM: non-causal span [%d, %d) of a batch of %d tokens is empty, "
                                                  "out of the batch or not after the previous span", r.start, r.end, tokens));
            }
            for (int t = r.start; t < r.end; t++)
            {
                if (p.batchSequence[t] != p.batchSequence[r.start])
                {
                    p.tokens = 0;
                    CV_Error(Error::StsBadArg, format("LLM: non-causal span [%d, %d) holds tokens of several sequences",
                                                      r.start, r.end));
                }
                p.lastAttended[t] = p.position[r.end - 1];
            }
            previousEnd = r.end;
        }
    }
    try
    {
        cache.reserve(p, named && !nextLogits_.empty());
    }
    catch (...)
    {
        p.tokens = 0;  // no half-made plan survives a refusal
        throw;
    }
    return p;
}

}}} // namespace cv::dnn::llm
