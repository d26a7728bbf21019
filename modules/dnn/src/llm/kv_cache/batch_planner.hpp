// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_BATCH_PLANNER_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_BATCH_PLANNER_HPP

#include "batch_plan.hpp"
#include "paged_kv_cache.hpp"

namespace cv {
namespace dnn {
namespace llm {

/** Turns "token i continues sequence s_i" into a BatchPlan and reserves the plan's slots in
    the cache (llama.cpp's batch allocator and slot search). */
class BatchPlanner
{
public:
    /** The sequence of each token of the next forward (setLLMBatch()). Without it, the next
        forward continues sequence 0 with all its tokens. Ids are checked here; counts when
        the forward comes. */
    void setNextBatch(const std::vector<int>& sequenceIds);
    /** setNextBatch() naming the tokens whose logits the forward returns (indices into the
        batch, strictly ascending); empty: the last token of each sequence. */
    void setNextBatch(const std::vector<int>& sequenceIds, const std::vector<int>& logitTokens);

    /** Ranges [start, end) of the next forward's tokens (indices into its batch; ascending, not
        overlapping, each within one sequence) whose tokens attend to each other both ways: a
        token of a range attends to its sequence's positions up to the range's last token
        (sliding-window layers: from its own window's start), the other tokens stay causal.
        libmtmd decodes a Gemma 3 image's embeddings with causal attention off. Serves the next
        plan only, like setNextBatch(); checked when the forward comes. */
    void setNextNonCausal(const std::vector<Range>& spans) { nextSpans_ = spans; }

    /** Plans a forward of `tokens` tokens and reserves their slots in `cache` (sequences
        grow; a shared partly filled last page is copied first). The context and the memory
        budget are checked before anything changes. A next batch serves one plan, even one
        that fails. */
    const BatchPlan& plan(PagedKVCache& cache, int tokens);

    //! The last plan made.
    const BatchPlan& current() const { return plan_; }

private:
    std::vector<int> next_, nextLogits_;
    std::vector<Range> nextSpans_;
    bool hasNext_ = false;
    BatchPlan plan_;
};

}}} // namespace cv::dnn::llm

#endif
