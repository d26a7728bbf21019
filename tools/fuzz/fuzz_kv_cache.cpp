// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as a sequence of KV-cache operations (ragged batches with
// attention, rewind, fork, remove, context shift, budget and storage changes, clear) on a small
// paged cache with 4-token pages, one layer of which has a sliding window. The cache and the attention kernel are compiled into the
// target (instrumented). Anything but a cv::Exception is a bug, and so is a broken invariant:
// page accounting, sequence lengths, or a non-finite attention output.

#include "precomp.hpp"  // dnn's, from -I build/opencv-src/modules/dnn/src
#include "llm/kv_cache/batch_planner.hpp"
#include "llm/kv_cache/paged_kv_cache.hpp"
#include "llm/attention/rotary_embedding.hpp"
#include "llm/attention/paged_attention.hpp"

#include <cmath>
#include <cstdlib>
#include <map>

using namespace cv;
using namespace cv::dnn::llm;

namespace {

struct Input
{
    const uint8_t* data;
    size_t size, pos = 0;
    int next(int n) { return pos < size ? data[pos++] % n : 0; }
    bool done() const { return pos >= size; }
};

const int kLayers = 3, kKVHeads = 2, kHeads = 4, kHeadDim = 8, kMaxLength = 48, kPageSize = 4;

void check(bool ok, const char* what)
{
    if (!ok)
    {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

void checkInvariants(const PagedKVCache& cache, const std::map<int, int>& lengths)
{
    check(cache.getPagesInUse() >= 0 && cache.getPagesFree() >= 0, "page counts");
    check(cache.getPagesShared() <= cache.getPagesInUse(), "shared pages");
    int pagesNeeded = 0;
    for (const auto& s : lengths)
    {
        check(cache.getSequenceLength(s.first) == s.second, "sequence length");
        check(s.second <= kMaxLength, "context limit");
        pagesNeeded = std::max(pagesNeeded, (s.second + kPageSize - 1) / kPageSize);
    }
    check(cache.getSequenceIds().size() == lengths.size(), "sequence set");
    check(cache.getPagesInUse() >= pagesNeeded, "a sequence without its pages");
    check(cache.getBytesInUse() <= cache.getMemoryBudget(), "bytes within the budget");
    for (const auto& s : lengths)
    {
        const int resumable = cache.getResumableLength(s.first, s.second);
        check(resumable == s.second || resumable == 0, "a sequence can be continued or restarted");
    }
}

// discardTokens() re-rotates keys with the layers' rotary embedding.
struct RotaryShift : KeyPositionShift
{
    RotaryEmbedding rope;
    explicit RotaryShift(const RotaryEmbedding& r) : rope(r) {}
    void shift(float* key, int delta) const override { rope.apply(key, 1, kHeadDim, 1, kHeadDim, &delta); }
};

void runBatch(PagedKVCache& cache, BatchPlanner& planner, PagedAttention& attention, Input& in,
              std::map<int, int>& lengths)
{
    const int tokens = 1 + in.next(8);
    std::vector<int> ids(tokens);
    for (int& id : ids)
        id = in.next(4);
    planner.setNextBatch(ids);
    const BatchPlan& plan = planner.plan(cache, tokens);  // may refuse: budget, context
    for (int id : ids)
        lengths[id]++;
    std::vector<float> k(kKVHeads * kHeadDim), v(k.size());
    std::vector<float> q((size_t)tokens * kHeads * kHeadDim), out(q.size());
    for (int layer = 0; layer < kLayers; layer++)
    {
        for (int t = 0; t < tokens; t++)
        {
            for (size_t i = 0; i < k.size(); i++)
            {
                k[i] = (in.next(256) - 128) / 16.f;
                v[i] = (in.next(256) - 128) / 16.f;
            }
            cache.store(layer, *plan.pageTables[cache.layerGroup(layer)][plan.batchSequence[t]], plan.position[t], k.data(), v.data());
        }
        for (float& x : q)
            x = (in.next(256) - 128) / 16.f;
        // layer 0: attention sinks (gpt-oss), whose weight takes a share of the softmax's
        float sinks[kHeads];
        for (float& s : sinks)
            s = (in.next(256) - 128) / 4.f;
        attention.run(cache, layer, plan, q.data(), kHeads, 1.f / std::sqrt((float)kHeadDim), layer == 1 ? 5.f : 0.f,
                      layer == 0 ? sinks : nullptr, out.data());
        for (float x : out)
            // (to rounding: the softmax weights may sum to 1 + a few ulp; with sinks, to less)
            check(std::isfinite(x) && std::abs(x) <= 8.001f, "attention output is a convex mix of values in [-8, 8]");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    cv::setNumThreads(1);
    PagedKVCache cache(kLayers, kKVHeads, kHeadDim, kMaxLength, kPageSize);
    cache.setLayerWindows({0, 0, 6});  // the last layer attends to its last 6 positions only
    for (int l = 0; l < kLayers; l++)
        cache.setKeyPositionShift(l, makePtr<RotaryShift>(RotaryEmbedding(kHeadDim, 10000.f, l == 1)));
    BatchPlanner planner;
    PagedAttention attention;
    std::map<int, int> lengths;  // what the cache should hold
    Input in{data, size};
    while (!in.done())
    {
        const int op = in.next(9);
        const int a = in.next(5) - 1, b = in.next(5) - 1, c = in.next(kMaxLength + 2) - 1;
        try
        {
            switch (op)
            {
            case 0: case 1: runBatch(cache, planner, attention, in, lengths); break;
            case 2:
                cache.truncateSequence(a, c);
                lengths[a] = std::min(lengths[a], std::max(c, 0));
                break;
            case 3:
                cache.forkSequence(a, b);
                lengths[b] = lengths.at(a);
                break;
            case 4:
                cache.removeSequence(a);
                lengths.erase(a);
                break;
            case 5:
            {
                const int count = in.next(kMaxLength + 1);
                cache.discardTokens(a, c, count);
                lengths[a] -= count;
                break;
            }
            case 6: cache.setMemoryBudget((size_t)in.next(64) * kPageSize * cache.getBytesPerToken()); break;
            case 7: cache.clear(); lengths.clear(); break;
            case 8: cache.setStorageType(in.next(3) == 0 ? CV_32F : in.next(2) ? CV_16F : CV_8S); break;
            }
        }
        catch (const cv::Exception&)
        {
            // Refused operations change nothing: the shadow state stays as it was. A batch
            // refused by the plan leaves no trace either (checked below).
        }
        checkInvariants(cache, lengths);
    }
    return 0;
}
