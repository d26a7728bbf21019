// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "paged_attention.hpp"
#include "attention_kernels.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// One query token's attention for the query heads of one KV head.
struct AttentionTask
{
    int token, kvHead;
};

// Everything a parallel body needs; the lambdas capture only a reference to it (a closure that
// small fits std::function's inline storage, so parallel_for_ does not allocate).
// Query heads per KV head this kernel takes (GQA ratios in use are at most 16).
const int kMaxGroup = 64;

struct AttentionContext
{
    const PagedKVCache* cache;
    const BatchPlan* plan;
    int layer, heads, group, headDim, pageSize, kvHeads;
    int pageGroup;             // the layer's page group in the cache and the plan
    int window;                // 0: every earlier position; else the last `window` ones
    int storage;               // the cache's storage type
    bool inPlaceRows;          // rows the kernels read in place (float32; half and 8-bit ones up to
                               // kMaxConvertedHeadDim): runs over pages, no decoded copy
    float scale, softCap;
    const float* sinks;        // per query head, or null
    const float* q;
    float* out;
    size_t partialFloats;      // one partial: group * (2 + headDim)
    size_t scratchFloats;      // per stripe
    float* scratch;            // per stripe: scores, decoded rows, a partial and the running state
    float* partials;           // split-KV: one partial per (token, KV head, chunk)
    const int* taskStart;      // split-KV: first partial of each (token, KV head)
    const int* stripeStart;    // whole tasks: first task of each stripe
    int stripes, tasks;

    // The first position a token attends to; its chunks are those of [first, last attended]
    // (its own position, or a non-causal span's last one; the window counts back from its own).
    int firstPosition(int token) const
    {
        return window > 0 ? std::max(0, plan->position[token] - window + 1) : 0;
    }

    //! The positions the token attends to.
    int attended(int token) const { return plan->lastAttendedPosition(token) - firstPosition(token) + 1; }

    int chunks(int token) const
    {
        return plan->lastAttendedPosition(token) / PagedAttention::kChunkTokens - firstPosition(token) / PagedAttention::kChunkTokens + 1;
    }

    /* The positions from j (before end) whose rows the kernels read as one run: the rest of
       j's page, and the pages after it that lie back to back in the cache, when rows are read in
       place (decoded rows come a page at a time). */
    int rowRun(const std::vector<int>& pages, int j, int end) const
    {
        int n = std::min(pageSize - j % pageSize, end - j);
        if (!inPlaceRows)
            return n;
        while (j + n < end && cache->pagesAdjacent(pageGroup, pages[(j + n) / pageSize - 1], pages[(j + n) / pageSize]))
            n += std::min(pageSize, end - j - n);
        return n;
    }

    /* Calls f(rows, stride) with the keys or values of `count` slots from `slot` of a page for
       one KV head, as the kernels take them: half and 8-bit rows in place (hfloat / schar), float32
       rows in place or decoded into rowBuf (float). */
    template <typename F>
    void withRows(bool values, int page, int kvHead, int slot, int count, float* rowBuf, F f) const
    {
        size_t stride = 0;
        if (inPlaceRows && storage == CV_16F)
        {
            const hfloat* rows = cache->halfRows(layer, values, page, kvHead, &stride);
            f(rows + slot * stride, stride);
        }
        else if (inPlaceRows && storage == CV_8S)
        {
            const schar* rows = cache->int8Rows(layer, values, page, kvHead, &stride);
            f(rows + slot * stride, stride);
        }
        else
        {
            const float* rows = cache->rows(layer, values, page, kvHead, slot + count, rowBuf, &stride);
            f(rows + slot * stride, stride);
        }
    }

    /* Partial of positions [begin, end) of the token's sequence: per query head of the group,
       [max score, sum of exp(score - max), sum of exp(score - max) * value]. */
    void chunkPartial(int token, int kvHead, int begin, int end, float* scores, float* rowBuf, float* partial) const
    {
        const std::vector<int>& pages = *plan->pageTables[pageGroup][plan->batchSequence[token]];
        const size_t qWidth = (size_t)heads * headDim;
        const float* qHead = q + token * qWidth + (size_t)kvHead * group * headDim;
        const int n = end - begin;
        const size_t partialStride = 2 + headDim;
        for (int j = begin; j < end;)
        {
            const int page = pages[j / pageSize], slot = j % pageSize;
            const int count = rowRun(pages, j, end);
            float* s = scores + (j - begin);
            withRows(false, page, kvHead, slot, count, rowBuf, [&](auto k, size_t stride) {
                attentionScores(qHead, group, headDim, k, stride, count, scale, s, n);
            });
            j += count;
        }
        if (softCap > 0.f)
            for (int h = 0; h < group; h++)
                for (int i = 0; i < n; i++)
                {
                    float& s = scores[(size_t)h * n + i];
                    s = softCap * std::tanh(s / softCap);
                }
        float maxes[kMaxGroup], sums[kMaxGroup];
        attentionSoftmaxRows(scores, group, n, n, maxes, sums);
        for (int h = 0; h < group; h++)
        {
            float* ph = partial + h * partialStride;
            ph[0] = maxes[h];
            ph[1] = sums[h];
            std::fill(ph + 2, ph + 2 + headDim, 0.f);
        }
        for (int j = begin; j < end;)
        {
            const int page = pages[j / pageSize], slot = j % pageSize;
            const int count = rowRun(pages, j, end);
            const float* p = scores + (j - begin);
            withRows(true, page, kvHead, slot, count, rowBuf, [&](auto v, size_t stride) {
                attentionAccumulate(p, group, count, n, v, stride, headDim, partial + 2, partialStride);
            });
            j += count;
        }
    }

    // state = merge(state, partial): log-sum-exp rescaling of both sides to the larger maximum.
    void merge(float* state, const float* partial) const
    {
        for (int h = 0; h < group; h++)
        {
            float* sh = state + (size_t)h * (2 + headDim);
            const float* ph = partial + (size_t)h * (2 + headDim);
            const float m = std::max(sh[0], ph[0]);
            const float a = std::exp(sh[0] - m), b = std::exp(ph[0] - m);
            sh[0] = m;
            sh[1] = sh[1] * a + ph[1] * b;
            float* acc = sh + 2;
            const float* pacc = ph + 2;
            for (int i = 0; i < headDim; i++)
                acc[i] = acc[i] * a + pacc[i] * b;
        }
    }

    void writeOutput(int token, int kvHead, const float* state) const
    {
        const size_t qWidth = (size_t)heads * headDim;
        for (int h = 0; h < group; h++)
        {
            const float* sh = state + (size_t)h * (2 + headDim);
            const int head = kvHead * group + h;
            float* o = out + token * qWidth + (size_t)head * headDim;
            float inv = 1.f / sh[1];
            if (sinks)
            {
                // the sink's exponential joins the sum, both taken from the larger maximum
                const float m = std::max(sh[0], sinks[head]), a = std::exp(sh[0] - m);
                inv = a / (sh[1] * a + std::exp(sinks[head] - m));
            }
            for (int i = 0; i < headDim; i++)
                o[i] = sh[2 + i] * inv;
        }
    }

    // The c-th chunk of a token: positions [begin, end). Chunks are aligned to kChunkTokens
    // positions, so a token's result does not depend on how many tokens share its forward.
    void chunkRange(int token, int c, int* begin, int* end) const
    {
        const int first = firstPosition(token);
        const int aligned = (first / PagedAttention::kChunkTokens + c) * PagedAttention::kChunkTokens;
        *begin = std::max(aligned, first);
        *end = std::min(aligned + PagedAttention::kChunkTokens, plan->lastAttendedPosition(token) + 1);
    }

    float* stripeScratch(int stripe) const { return scratch + (size_t)stripe * scratchFloats; }

    /* Tasks run KV head by KV head: task i is token i % tokens of KV head i / tokens. A
       sequence's (layer, K/V, head) rows lie just before the next sequence's in the cache's
       slabs (pages are taken lowest first), so the rows the kernels ask for ahead of a task are
       the ones its stripe's next task reads; token by token they were the next sequence's rows
       of the same head, read by another stripe, often on another core. */
    int taskToken(int task) const { return task % plan->tokens; }
    int taskKVHead(int task) const { return task / plan->tokens; }

    // Whole tokens per task: chunks computed and merged in order.
    void runTokens(int stripe) const
    {
        float* scores = stripeScratch(stripe);
        float* rowBuf = scores + (size_t)group * PagedAttention::kChunkTokens;
        float* partial = rowBuf + (size_t)pageSize * headDim;
        float* state = partial + partialFloats;
        for (int task = stripeStart[stripe]; task < stripeStart[stripe + 1]; task++)
        {
            const int token = taskToken(task), kvHead = taskKVHead(task);
            for (int c = 0; c < chunks(token); c++)
            {
                int begin, end;
                chunkRange(token, c, &begin, &end);
                chunkPartial(token, kvHead, begin, end, scores, rowBuf, c == 0 ? state : partial);
                if (c > 0)
                    merge(state, partial);
            }
            writeOutput(token, kvHead, state);
        }
    }
};

/* Stripe boundaries that give the stripes equal shares of the positions their tasks attend to
   (plus a constant per task for its fixed costs): a prompt's tokens attend to 1 .. n positions,
   so equal task counts left the stripes of its last tokens several times the work of its first,
   and the threads waiting on them. */
void balanceStripes(AttentionContext& ctx, std::vector<int>& stripeStart)
{
    const int64 kTaskOverhead = 16;  // positions' worth of a task's fixed costs
    int64 total = 0;
    for (int task = 0; task < ctx.tasks; task++)
        total += ctx.attended(ctx.taskToken(task)) + kTaskOverhead;
    stripeStart.assign(ctx.stripes + 1, ctx.tasks);
    stripeStart[0] = 0;
    int64 done = 0;
    int stripe = 1;
    for (int task = 0; task < ctx.tasks && stripe < ctx.stripes; task++)
    {
        done += ctx.attended(ctx.taskToken(task)) + kTaskOverhead;
        while (stripe < ctx.stripes && done * ctx.stripes >= total * stripe)
            stripeStart[stripe++] = task + 1;
    }
    ctx.stripeStart = stripeStart.data();
}

} // namespace

void PagedAttention::run(const PagedKVCache& cache, int layer, const BatchPlan& plan, const float* q, int heads,
                         float scale, float softCap, const float* sinks, float* out)
{
    AttentionContext ctx;
    ctx.cache = &cache;
    ctx.plan = &plan;
    ctx.layer = layer;
    ctx.heads = heads;
    ctx.kvHeads = cache.kvHeads();
    ctx.group = heads / ctx.kvHeads;
    CV_CheckLE(ctx.group, kMaxGroup, "LLMAttention: too many query heads per KV head");
    ctx.headDim = cache.headDim();
    ctx.storage = cache.getStorageType();
    ctx.inPlaceRows = ctx.storage == CV_32F || ctx.headDim <= kMaxConvertedHeadDim;
    ctx.pageSize = cache.getPageSize();
    ctx.scale = scale;
    ctx.softCap = softCap;
    ctx.sinks = sinks;
    ctx.pageGroup = cache.layerGroup(layer);
    ctx.window = cache.layerWindow(layer);
    ctx.q = q;
    ctx.out = out;
    ctx.partialFloats = (size_t)ctx.group * (2 + ctx.headDim);
    ctx.scratchFloats = (size_t)ctx.group * kChunkTokens + (size_t)ctx.pageSize * ctx.headDim + 2 * ctx.partialFloats;
    ctx.tasks = plan.tokens * ctx.kvHeads;
    const int threads = std::max(1, getNumThreads());

    int chunkTasks = 0;
    for (int t = 0; t < plan.tokens; t++)
        chunkTasks += ctx.chunks(t) * ctx.kvHeads;
    const bool splitKV = ctx.tasks < 2 * threads && chunkTasks > ctx.tasks;

    if (!splitKV)
    {
        ctx.stripes = std::min(ctx.tasks, 4 * threads);
        balanceStripes(ctx, stripeStart_);
        if (partials_.size() < ctx.stripes * ctx.scratchFloats)
            partials_.resize(ctx.stripes * ctx.scratchFloats);
        ctx.scratch = partials_.data();
        parallel_for_(Range(0, ctx.stripes), [&ctx](const Range& r) {
            for (int s = r.start; s < r.end; s++)
                ctx.runTokens(s);
        }, ctx.stripes);
        return;
    }

    // Split-KV: one task per (token, KV head, chunk) writes its partial; then the partials of
    // each (token, KV head) are merged in chunk order, exactly as runTokens() merges them.
    taskStart_.resize(ctx.tasks + 1);
    taskStart_[0] = 0;
    for (int task = 0; task < ctx.tasks; task++)
        taskStart_[task + 1] = taskStart_[task] + ctx.chunks(ctx.taskToken(task));
    const int total = taskStart_[ctx.tasks];
    ctx.stripes = std::min(total, 4 * threads);
    const size_t need = (size_t)total * ctx.partialFloats + ctx.stripes * ctx.scratchFloats;
    if (partials_.size() < need)
        partials_.resize(need);
    ctx.partials = partials_.data();
    ctx.scratch = partials_.data() + (size_t)total * ctx.partialFloats;
    ctx.taskStart = taskStart_.data();
    struct Split
    {
        AttentionContext* ctx;
        int total;
    } split{&ctx, total};
    parallel_for_(Range(0, ctx.stripes), [&split](const Range& r) {
        const AttentionContext& c = *split.ctx;
        for (int s = r.start; s < r.end; s++)
        {
            float* scores = c.stripeScratch(s);
            float* rowBuf = scores + (size_t)c.group * kChunkTokens;
            const int i0 = (int)((int64)split.total * s / c.stripes), i1 = (int)((int64)split.total * (s + 1) / c.stripes);
            int task = (int)(std::upper_bound(c.taskStart, c.taskStart + c.tasks + 1, i0) - c.taskStart) - 1;
            for (int i = i0; i < i1; i++)
            {
                while (c.taskStart[task + 1] <= i)
                    task++;
                const int token = c.taskToken(task), kvHead = c.taskKVHead(task), chunk = i - c.taskStart[task];
                int begin, end;
                c.chunkRange(token, chunk, &begin, &end);
                c.chunkPartial(token, kvHead, begin, end, scores, rowBuf, c.partials + (size_t)i * c.partialFloats);
            }
        }
    }, ctx.stripes);
    // The merges, a (group x headDim) multiply-add per chunk of a (token, KV head), in this
    // thread: a chunk's partial costs 2 x 256 of them, and split-KV runs for fewer (token, KV
    // head) tasks than 2 x threads only, so a second parallel_for_ would cost the pool a wake-up
    // and a wait per layer for little parallel work.
    for (int task = 0; task < ctx.tasks; task++)
    {
        float* state = ctx.partials + (size_t)ctx.taskStart[task] * ctx.partialFloats;
        for (int i = ctx.taskStart[task] + 1; i < ctx.taskStart[task + 1]; i++)
            ctx.merge(state, ctx.partials + (size_t)i * ctx.partialFloats);
        ctx.writeOutput(ctx.taskToken(task), ctx.taskKVHead(task), state);
    }
}

}}} // namespace cv::dnn::llm
