// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "sampler.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// cv::RNG is a multiply-with-carry generator whose first outputs for nearby states are nearly
// equal (seeds s and s + 33 drew the same first token 98% of the time); generateBatch gives
// completion i seed + i. splitmix64's finalizer spreads consecutive seeds over the whole state.
uint64 mixSeed(uint64 seed)
{
    uint64 z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z ? z : 0x9E3779B97F4A7C15ull;  // cv::RNG treats state 0 as "use the default"
}

} // namespace

Sampler::Sampler(const SamplingParams& params, uint64 seed) : params_(params), rng_(mixSeed(seed))
{
    CV_CheckGE(params.topK, 0, "Sampler: top-k must not be negative");
    CV_Check(params.topP, params.topP > 0.f && params.topP <= 1.f, "Sampler: top-p must be in (0, 1]");
    CV_Check(params.minP, params.minP >= 0.f && params.minP < 1.f, "Sampler: min-p must be in [0, 1)");
    CV_CheckGT(params.repetitionPenalty, 0.f, "Sampler: repetition penalty must be positive");
    CV_Check(params.frequencyPenalty, std::isfinite(params.frequencyPenalty), "Sampler: frequency penalty must be finite");
    CV_Check(params.presencePenalty, std::isfinite(params.presencePenalty), "Sampler: presence penalty must be finite");
    CV_Check(params.temperature, std::isfinite(params.temperature), "Sampler: temperature must be finite");
}

int Sampler::sample(const float* logits, int n, const std::vector<int>& history)
{
    return sample(logits, n, history, -1);
}

int Sampler::sample(const float* logits, int n, const std::vector<int>& history, int draft)
{
    CV_Assert(n > 0);
    const float* z = penalize(logits, n, history);
    if (params_.temperature <= 0.f)
        return (int)(std::max_element(z, z + n) - z);  // a draft is kept exactly when it is this one
    const size_t keep = keepSurvivors(z, n);
    double total = 0;
    for (size_t i = 0; i < keep; i++)
        total += weights_[i];
    if (draft < 0)
        return draw(keep, total, -1);
    // The draft was chosen without looking at this distribution (q = 1 at the draft): keeping
    // it with probability p(draft) and otherwise drawing from p without it gives p exactly
    // (speculative sampling's min(1, p / q) rule and its residual max(0, p - q)).
    double draftWeight = 0;
    for (size_t i = 0; i < keep; i++)
        if (candidates_[i].second == draft)
            draftWeight = weights_[i];
    if (rng_.uniform(0.0, total) < draftWeight)
        return draft;
    return draw(keep, total - draftWeight, draft);
}

const float* Sampler::penalize(const float* logits, int n, const std::vector<int>& history)
{
    if ((params_.repetitionPenalty == 1.f && params_.frequencyPenalty == 0.f && params_.presencePenalty == 0.f) ||
        history.empty())
        return logits;
    penalized_.assign(logits, logits + n);
    const size_t window = params_.repetitionWindow < 0 ? history.size()
                                                       : std::min(history.size(), (size_t)params_.repetitionWindow);
    counts_.assign(n, 0);
    for (size_t i = history.size() - window; i < history.size(); i++)
        if (history[i] >= 0 && history[i] < n)
            counts_[history[i]]++;
    for (int t = 0; t < n; t++)
    {
        const int count = counts_[t];
        if (count == 0)
            continue;
        // The repetition penalty makes the token less likely whatever its sign.
        float& v = penalized_[t];
        v = v > 0 ? v / params_.repetitionPenalty : v * params_.repetitionPenalty;
        v -= (float)count * params_.frequencyPenalty + params_.presencePenalty;
    }
    return penalized_.data();
}

size_t Sampler::keepSurvivors(const float* z, int n)
{
    candidates_.resize(n);
    for (int i = 0; i < n; i++)
        candidates_[i] = std::make_pair(z[i], i);
    auto byLogit = [](const std::pair<float, int>& a, const std::pair<float, int>& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    size_t keep = candidates_.size();
    if (params_.topK > 0 && (size_t)params_.topK < keep)
    {
        std::partial_sort(candidates_.begin(), candidates_.begin() + params_.topK, candidates_.end(), byLogit);
        keep = params_.topK;
    }
    else
        std::sort(candidates_.begin(), candidates_.end(), byLogit);
    candidates_.resize(keep);

    // Probabilities at temperature 1 for the nucleus and min-p cuts.
    const float maxLogit = candidates_[0].first;
    std::vector<double>& p = weights_;
    p.resize(keep);
    double sum = 0;
    for (size_t i = 0; i < keep; i++)
        sum += p[i] = std::exp((double)candidates_[i].first - maxLogit);
    if (params_.topP < 1.f)
    {
        double cumulative = 0;
        size_t i = 0;
        while (i < keep && cumulative < params_.topP * sum)
            cumulative += p[i++];
        keep = std::max<size_t>(i, 1);
    }
    if (params_.minP > 0.f)
    {
        size_t i = 1;
        while (i < keep && p[i] >= params_.minP * p[0])
            i++;
        keep = i;
    }

    // Weights at the requested temperature among the survivors.
    for (size_t i = 0; i < keep; i++)
        p[i] = std::exp(((double)candidates_[i].first - maxLogit) / params_.temperature);
    return keep;
}

int Sampler::draw(size_t keep, double total, int excluded)
{
    double r = rng_.uniform(0.0, total);
    int last = -1;
    for (size_t i = 0; i < keep; i++)
    {
        if (candidates_[i].second == excluded)
            continue;
        last = candidates_[i].second;
        r -= weights_[i];
        if (r < 0)
            return last;
    }
    CV_Assert(last >= 0);
    return last;
}

}}} // namespace cv::dnn::llm
