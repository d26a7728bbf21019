// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_BATCH_PLAN_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_BATCH_PLAN_HPP

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** What one forward of a language model does (FlashInfer's plan, llama.cpp's ubatch): which
    sequence each token continues, at which position, where its keys and values go, and which
    rows give logits. Made by BatchPlanner before the forward; every layer reads it, none
    changes it. The vectors keep their capacity, so a steady decode step plans without
    allocating. */
struct BatchPlan
{
    int tokens = 0;
    // Per token.
    std::vector<int> batchSequence;  //!< index into the per-sequence arrays below
    std::vector<int> position;       //!< position of the token in its sequence
    //! The last position of its sequence each token attends to; empty: its own for every token
    //! (causal). Larger for the tokens of a non-causal span (BatchPlanner::setNextNonCausal).
    std::vector<int> lastAttended;
    // Per distinct sequence of the batch, in order of first appearance.
    std::vector<int> sequenceIds;
    std::vector<int> newTokens;      //!< tokens the batch appends to the sequence
    std::vector<int> lastToken;      //!< index of the sequence's last token in the batch
    //! Tokens whose logits the forward returns, ascending: each sequence's last token unless
    //! the batch named others (speculative decoding verifies every drafted token).
    std::vector<int> logitTokens;
    //! The sequences' page tables, grown for the batch: pageTables[page group][sequence]
    //! (PagedKVCache::layerGroup(); one group unless some layers have a sliding window).
    std::vector<std::vector<const std::vector<int>*>> pageTables;
    //! The batch's tokens of each sequence in order: sequenceTokens[sequenceTokenStart[b] ..
    //! sequenceTokenStart[b + 1]) (recurrent layers run a sequence's tokens one after another).
    std::vector<int> sequenceTokenStart, sequenceTokens;

    // Recurrent layers (recurrent_state_store.hpp; empty without them).
    //! Per sequence: its state block; a recurrent layer's part is at the store's layer offset.
    std::vector<float*> recurrentState;
    //! Checkpoints this forward takes: once `token` (a batch index) is processed, each
    //! recurrent layer copies its part of the state into `state` (a block of the same layout).
    struct StateSnapshot
    {
        int sequence;
        int token;
        float* state;
    };
    std::vector<StateSnapshot> snapshots;  //!< by sequence, then token

    int sequences() const { return (int)sequenceIds.size(); }
    int lastAttendedPosition(int token) const { return lastAttended.empty() ? position[token] : lastAttended[token]; }
};

}}} // namespace cv::dnn::llm

#endif
