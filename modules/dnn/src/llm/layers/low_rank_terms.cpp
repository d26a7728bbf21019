// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "low_rank_terms.hpp"
#include "../common/vector_ops.hpp"

namespace cv {
namespace dnn {
namespace llm {

void LowRankTerms::add(int id, int weight, const LowRankWeight* pair)
{
    CV_Assert(pair);
    pairs_.push_back(Pair{id, weight, pair});
}

void LowRankTerms::remove(int id)
{
    pairs_.erase(std::remove_if(pairs_.begin(), pairs_.end(), [id](const Pair& p) { return p.id == id; }),
                 pairs_.end());
    terms_.clear();
}

bool LowRankTerms::prepare(const LLMNetState& state, const float* x, int rows, int in)
{
    terms_.clear();
    const std::vector<const AdapterSet*>& sets = state.planAdapters();
    if (sets.empty() || pairs_.empty())
        return false;
    const BatchPlan& plan = state.plan();
    const bool logitRows = rows != plan.tokens;
    if (logitRows)
        CV_CheckEQ(rows, (int)plan.logitTokens.size(), "LLMMatMul: LoRA terms need rows of the plan's tokens or logit rows");
    size_t t = 0;
    for (int r = 0; r < rows; r++)
    {
        const AdapterSet* set = sets[plan.batchSequence[logitRows ? plan.logitTokens[r] : r]];
        if (!set)
            continue;
        for (const AdapterUse& use : *set)      // ascending adapter ids: the order the terms are added in
            for (const Pair& p : pairs_)
                if (p.id == use.id)
                {
                    terms_.push_back(Term{p.weight, r, p.w, use.scale * p.w->alphaScale, t});
                    t += p.w->rank;
                }
    }
    if (terms_.empty())
        return false;
    if (t_.size() < t)
        t_.resize(t);
    // A x of every term: in parallel when there is enough of it (prompts, large batches).
    int64 work = 0;
    for (const Term& term : terms_)
        work += (int64)term.w->rank * in;
    const int n = (int)terms_.size();
    if (work < (int64)1 << 18 || getNumThreads() <= 1)
    {
        for (const Term& term : terms_)
            computeAx(term, x, in);
    }
    else
    {
        // (one captured reference: small enough for std::function not to allocate)
        struct Job
        {
            LowRankTerms* self;
            const float* x;
            int in;
        } job{this, x, in};
        parallel_for_(Range(0, n), [&job](const Range& range) {
            for (int i = range.start; i < range.end; i++)
                job.self->computeAx(job.self->terms_[i], job.x, job.in);
        });
    }
    return true;
}

void LowRankTerms::computeAx(const Term& term, const float* x, int in)
{
    // As llama.cpp: x rounded to A's input type, A x rounded to B's, then B (A x) times the scale
    // (the scale applied to A x here: the same up to float rounding).
    // (F32 pairs, the common case, read x and keep A x as they are: no copies.)
    static thread_local std::vector<float> rounded;
    const LowRankWeight& w = *term.w;
    if ((int)rounded.size() < std::max(in, w.rank))
        rounded.resize(std::max(in, w.rank));
    const float* input = x + (size_t)term.row * in;
    if (w.aInput != AdapterRounding::None)
    {
        roundAdapterInput(input, rounded.data(), in, w.aInput);
        input = rounded.data();
    }
    float* t = t_.data() + term.t;
    for (int k = 0; k < w.rank; k++)
        t[k] = dotF32(w.a.ptr<float>(k), input, in);
    if (w.bInput != AdapterRounding::None)
        roundAdapterInput(t, t, w.rank, w.bInput);
    for (int k = 0; k < w.rank; k++)
        t[k] *= term.scale;
}

void LowRankTerms::addTo(int weight, float* y, int out, int begin, int end) const
{
    for (const Term& term : terms_)
    {
        if (term.weight != weight)
            continue;
        const LowRankWeight& w = *term.w;
        const float* t = t_.data() + term.t;
        float* row = y + (size_t)term.row * out;
        for (int k = 0; k < w.rank; k++)
            axpyF32(t[k], w.bt.ptr<float>(k) + begin, row + begin, end - begin);
    }
}

}}} // namespace cv::dnn::llm
