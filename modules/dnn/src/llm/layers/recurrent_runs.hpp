// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// How a recurrent layer walks a forward's batch plan (kv_cache/batch_plan.hpp): each sequence's
// tokens in order on that sequence's state, in runs of consecutive batch rows that end where the
// plan takes a checkpoint, whose copy of the layer's state part follows the run.

#ifndef OPENCV_DNN_SRC_LLM_LAYERS_RECURRENT_RUNS_HPP
#define OPENCV_DNN_SRC_LLM_LAYERS_RECURRENT_RUNS_HPP

#include "../kv_cache/batch_plan.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

/** Calls run(state, firstRow, rows) for each run: `state` is the sequence's block plus
    `offset` (the layer's part, `floats` floats), the run's tokens are batch rows
    [firstRow, firstRow + rows), in the sequence's order. After a run that ends at a checkpoint,
    the layer's part is copied into it. */
template <typename Run>
void forEachRecurrentRun(const BatchPlan& plan, size_t offset, size_t floats, Run run)
{
    size_t snap = 0;
    for (int s = 0; s < plan.sequences(); s++)
    {
        float* state = plan.recurrentState[s] + offset;
        const int first = plan.sequenceTokenStart[s], last = plan.sequenceTokenStart[s + 1];
        while (snap < plan.snapshots.size() && plan.snapshots[snap].sequence < s)
            snap++;
        auto snapshotAfter = [&](int token) {
            return snap < plan.snapshots.size() && plan.snapshots[snap].sequence == s &&
                   plan.snapshots[snap].token == token;
        };
        for (int i = first; i < last;)
        {
            int j = i + 1;
            while (j < last && plan.sequenceTokens[j] == plan.sequenceTokens[j - 1] + 1 &&
                   !snapshotAfter(plan.sequenceTokens[j - 1]))
                j++;
            run(state, plan.sequenceTokens[i], j - i);
            for (; snapshotAfter(plan.sequenceTokens[j - 1]); snap++)
                std::memcpy(plan.snapshots[snap].state + offset, state, floats * sizeof(float));
            i = j;
        }
    }
}

}}} // namespace cv::dnn::llm

#endif
