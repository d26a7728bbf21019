// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "llm_net_state.hpp"

namespace cv {
namespace dnn {
namespace llm {

LLMNetState::LLMNetState(const Ptr<PagedKVCache>& cache, int tokenWidth, bool allLogits, const std::string& sourcePath)
    : cache_(cache), tokenWidth_(tokenWidth), allLogits_(allLogits), sourcePath_(sourcePath)
{
    CV_Assert(cache_);
    CV_CheckGT(tokenWidth, 0, "LLMNetState: token width must be positive");
}

Ptr<LLMNetState> LLMNetState::of(Net& net)
{
    return net.empty() ? Ptr<LLMNetState>() : net.getImpl()->forwardPlanner.dynamicCast<LLMNetState>();
}

int LLMNetState::outputRows(int tokens) const
{
    if (allLogits_)
        return tokens;
    const BatchPlan& p = plan();
    return p.tokens == tokens && p.tokens > 0 ? (int)p.logitTokens.size() : 1;
}

bool LLMNetState::planForward(const std::vector<Mat>& inputs)
{
    CV_Assert(!inputs.empty());
    const Mat& first = inputs[0];
    if (first.empty())
        CV_Error(Error::StsBadArg, "LLM: the Net's input is empty (setInput() a 1 x T matrix of token ids)");
    if (first.total() % tokenWidth_ != 0)
        CV_Error(Error::StsBadArg, format("LLM: the Net's input has %zu elements, not a multiple of %d per token",
                                          first.total(), tokenWidth_));
    const int tokens = (int)(first.total() / tokenWidth_);
    planner_.plan(*cache_, tokens);
    const int rows = outputRows(tokens);
    const bool changed = rows != plannedRows_;
    plannedRows_ = rows;
    return changed;
}

}}} // namespace cv::dnn::llm
