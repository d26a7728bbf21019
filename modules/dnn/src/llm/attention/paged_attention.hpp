// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_ATTENTION_PAGED_ATTENTION_HPP
#define OPENCV_DNN_SRC_LLM_ATTENTION_PAGED_ATTENTION_HPP

#include "../kv_cache/batch_plan.hpp"
#include "../kv_cache/paged_kv_cache.hpp"

namespace cv {
namespace dnn {
namespace llm {

/** Causal grouped-query attention of a batch plan's tokens over their sequences' pages.

    Each token attends to positions 0 .. its own of its sequence (a sliding-window layer: the
    last window positions up to its own, PagedKVCache::layerWindow()); a token of a non-causal
    span (BatchPlan::lastAttended) up to the span's last position instead, in chunks of kChunkTokens
    positions. A chunk gives a partial result per query head (max score, sum of exponentials,
    weighted sum of values; an online softmax, so no score row longer than a chunk exists); the
    partials are merged in chunk order with log-sum-exp rescaling. The chunking depends on
    positions only, so a token's result does not depend on the thread count or on the other
    tokens of the batch. The query heads that share a KV head are processed together, so each
    key and value row is read once for all of them. Few tokens (decoding) are split across
    threads by chunk as well (split-KV); many tokens by (token, KV head) task, taken KV head by
    KV head, in stripes of equal shares of attended positions.
*/
class PagedAttention
{
public:
    static constexpr int kChunkTokens = 256;

    /** q: tokens x heads*headDim, rotated. out: same shape. The keys and values of the plan's
        tokens must be stored in the cache already. A score is scale * q.k, or with a soft cap
        c > 0 (Gemma 2) c * tanh(scale * q.k / c). sinks: null, or one logit per query head that
        joins the softmax's denominator and attends to nothing (gpt-oss's attention sinks, as
        ggml's soft_max with sinks: exp(sink - max) added to the sum, the max taken with it). */
    void run(const PagedKVCache& cache, int layer, const BatchPlan& plan, const float* q, int heads,
             float scale, float softCap, const float* sinks, float* out);

private:
    std::vector<float> partials_;   // split-KV scratch: per (token, KV head, chunk) task
    std::vector<int> taskStart_;    // first task of each token's chunk list
    std::vector<int> stripeStart_;  // first (token, KV head) task of each stripe
};

}}} // namespace cv::dnn::llm

#endif
