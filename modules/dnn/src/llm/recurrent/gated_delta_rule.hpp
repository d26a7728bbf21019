// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_RECURRENT_GATED_DELTA_RULE_HPP
#define OPENCV_DNN_SRC_LLM_RECURRENT_GATED_DELTA_RULE_HPP

#include <opencv2/core.hpp>

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Heads of one input or output, token by token: element i of head h of token t is
    data[t * tokenStride + h * headStride + i] (strides in floats), so views of a fused
    projection's rows can be passed as they are. Rows (i) are contiguous. */
struct GatedDeltaRuleRows
{
    const float* data;
    size_t tokenStride;
    size_t headStride;
};

struct GatedDeltaRuleOutputRows
{
    float* data;
    size_t tokenStride;
    size_t headStride;
};

/** The inputs of one sequence's tokens, in order. q, k: keyHeads heads of keyDim, each
    l2-normalized by the caller and NOT scaled (the rule scales q by 1 / sqrt(keyDim) itself, as
    ggml's gated_delta_net does). v: valueHeads heads of valueDim. g: one float per value head (at
    head * headStride): the log decay, the state is multiplied by exp(g); g <= 0 as Qwen3.5 makes
    it (-exp(A_log) softplus(alpha + dt_bias)); the chunked form takes exp of sums of g within a
    chunk, so positive g beyond ~88 / chunk length would overflow there. beta: one float per
    value head, already through the sigmoid. */
struct GatedDeltaRuleInputs
{
    GatedDeltaRuleRows q, k, v, g, beta;
    int tokens;
};

/** The gated delta rule of Qwen3.5 / Qwen3-Next linear attention (llama.cpp's
    build_delta_net_* and ggml_gated_delta_net), for one sequence. Per value head h, with key
    head kh = h % keyHeads (ggml_repeat's tiling, as llama.cpp: value heads 0, keyHeads,
    2 keyHeads, ... share key head 0; not interleaved), per token t in order:

        S   = exp(g_t) * S
        d   = beta_t * (v_t - S^T k_t)        (valueDim)
        S   = S + k_t d^T
        o_t = S^T q_t / sqrt(keyDim)

    S is keyDim x valueDim. Layout of the state, per value head, contiguous: valueDim rows of
    keyDim floats, state[h * valueDim * keyDim + j * keyDim + i] = S[i][j] (llama.cpp's layout,
    ggml [S_v, S_v, H_v] when the dims are equal): a decode step reads and writes each row once
    (the two dot products and the update of row j need only row j).

    Two forms with the same results up to float rounding: recurrent (token by token, decode) and
    chunked (chunkTokens() tokens at a time, the WY / UT form of llama.cpp's
    build_delta_net_chunking: the in-chunk dependencies as one triangular solve, the state's
    contributions as matrix products). run() takes the chunked form from kChunkedMinTokens
    tokens (on 16 heads of 128 x 128 the two cost the same per token at 8-12 tokens; the
    chunked form is ~25% cheaper per token from 16 on). Heads are split between threads
    (parallel_for_, contiguous ranges of value heads) when the call has at least 2^17 state
    element updates (tokens x heads x keyDim x valueDim); results do not depend on the split.

    Chunks of 32 tokens by default: llama.cpp's graph uses 64, but on a CPU the chunk's
    triangular work grows with its length while the products with the state do not shrink, and
    32 measured ~25% faster than 64 on 512-token prompts (16 heads, 128 x 128, AVX-512).

    The object holds the scratch of the chunked form (per thread), grown on first use; after
    that, calls do not allocate. Not thread-safe: one object per concurrent caller. */
class CV_EXPORTS GatedDeltaRule
{
public:
    static constexpr int kDefaultChunkTokens = 32;
    static constexpr int kMaxChunkTokens = 128;
    static constexpr int kChunkedMinTokens = 16;

    /** chunkTokens: the chunked form's chunk length, 1 .. kMaxChunkTokens. */
    GatedDeltaRule(int keyHeads, int valueHeads, int keyDim, int valueDim, int chunkTokens = kDefaultChunkTokens);

    /** Advances state (valueHeads x valueDim x keyDim floats, updated in place) over
        in.tokens tokens (0 is allowed) and writes each token's output (valueHeads heads of
        valueDim floats). The output must not overlap the inputs or the state. Calls may split a
        sequence anywhere: the state carries it. runRecurrent / runChunked take one form
        whatever the token count (tests, benchmarks); run() chooses. */
    void run(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out);
    void runRecurrent(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out);
    void runChunked(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out);

    int keyHeads() const { return keyHeads_; }
    int valueHeads() const { return valueHeads_; }
    int keyDim() const { return keyDim_; }
    int valueDim() const { return valueDim_; }
    int chunkTokens() const { return chunkTokens_; }
    size_t stateFloats() const { return (size_t)valueHeads_ * valueDim_ * keyDim_; }

private:
    void check(const GatedDeltaRuleInputs& in, const float* state, const GatedDeltaRuleOutputRows& out) const;
    int stripes(int tokens) const;

    int keyHeads_, valueHeads_, keyDim_, valueDim_, chunkTokens_;
    std::vector<float> chunkScratch_;  // per stripe: the chunked form's matrices
    std::vector<double> decayScratch_; // per stripe: cumulative log decays of a chunk
};

}}} // namespace cv::dnn::llm

#endif
