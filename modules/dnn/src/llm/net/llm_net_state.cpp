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
    planAdapterSets();
    const int rows = outputRows(tokens);
    const bool changed = rows != plannedRows_;
    plannedRows_ = rows;
    return changed;
}

void LLMNetState::planAdapterSets()
{
    planAdapters_.clear();  // (keeps its capacity: a steady step allocates nothing)
    if (sequenceAdapters_.empty())
        return;
    const BatchPlan& p = plan();
    bool any = false;
    for (int s = 0; s < p.sequences(); s++)
    {
        const auto it = sequenceAdapters_.find(p.sequenceIds[s]);
        planAdapters_.push_back(it == sequenceAdapters_.end() ? nullptr : &it->second);
        any = any || it != sequenceAdapters_.end();
    }
    if (!any)
        planAdapters_.clear();
}

int LLMNetState::addAdapter(std::unique_ptr<LoRAAdapter> adapter)
{
    CV_Assert(adapter);
    const int id = nextAdapterId_++;
    adapters_[id] = std::move(adapter);
    return id;
}

void LLMNetState::removeAdapter(int id)
{
    adapters_.erase(id);
    for (auto it = sequenceAdapters_.begin(); it != sequenceAdapters_.end();)
    {
        AdapterSet& set = it->second;
        for (size_t i = 0; i < set.size();)
            if (set[i].id == id)
                set.erase(set.begin() + i);
            else
                i++;
        it = set.empty() ? sequenceAdapters_.erase(it) : std::next(it);
    }
    planAdapters_.clear();
}

const LoRAAdapter* LLMNetState::adapter(int id) const
{
    const auto it = adapters_.find(id);
    return it == adapters_.end() ? nullptr : it->second.get();
}

std::vector<int> LLMNetState::adapterIds() const
{
    std::vector<int> ids;
    for (const auto& a : adapters_)
        ids.push_back(a.first);
    return ids;
}

void LLMNetState::checkAdapterSet(const AdapterSet& set, const char* caller) const
{
    for (const AdapterUse& u : set)
        if (!adapters_.count(u.id))
            CV_Error(Error::StsBadArg, format("%s: LoRA adapter %d is not loaded", caller, u.id));
}

void LLMNetState::setSequenceAdapters(int sequenceId, const AdapterSet& set)
{
    CV_CheckGE(sequenceId, 0, "LLM: sequence ids are not negative");
    checkAdapterSet(set, "setLLMSequenceAdapters");
    if (set.empty())
        sequenceAdapters_.erase(sequenceId);
    else
        sequenceAdapters_[sequenceId] = set;
}

const AdapterSet& LLMNetState::sequenceAdapters(int sequenceId) const
{
    static const AdapterSet none;
    const auto it = sequenceAdapters_.find(sequenceId);
    return it == sequenceAdapters_.end() ? none : it->second;
}

}}} // namespace cv::dnn::llm
