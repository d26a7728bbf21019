// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Mamba-2's selective scan (the SSM of Granite 4 hybrids, Nemotron-H, Falcon-H1) for one
// sequence, and the gated group RMS norm Mamba-2 applies to its output, with llama.cpp's
// arithmetic (ggml_ssm_scan with a scalar A per head; build_mamba2_layer's dt bias, D skip,
// swiglu_split(z, y) and grouped build_norm).

#ifndef OPENCV_DNN_SRC_LLM_RECURRENT_SELECTIVE_SCAN_HPP
#define OPENCV_DNN_SRC_LLM_RECURRENT_SELECTIVE_SCAN_HPP

#include <opencv2/core.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** One sequence's T tokens, in order, for selectiveScan(). H heads of P elements, G groups of
    B / C rows of N elements; head h reads group h / (H / G) (ggml's repeat_interleave: H % G
    == 0). Every input is float32; within a token the elements are contiguous as listed, tokens
    are `...TokenStride` floats apart, so views of llama.cpp's fused xBC / zxBCdt rows serve
    as they are (x: xBC + 0, B: xBC + H*P, C: xBC + H*P + G*N, all with xBC's row stride). */
struct SelectiveScanInputs
{
    int tokens = 0;      //!< T >= 1
    int heads = 0;       //!< H (GGUF ssm.time_step_rank)
    int headDim = 0;     //!< P = d_inner / H
    int groups = 1;      //!< G (ssm.group_count), H % G == 0
    int stateSize = 0;   //!< N (ssm.state_size)

    const float* x = nullptr;      //!< x[t * xTokenStride + h * P + p]
    size_t xTokenStride = 0;
    const float* dt = nullptr;     //!< dt[t * dtTokenStride + h]: raw, before bias and softplus
    size_t dtTokenStride = 0;
    const float* B = nullptr;      //!< B[t * bTokenStride + g * N + n]
    size_t bTokenStride = 0;
    const float* C = nullptr;      //!< C[t * cTokenStride + g * N + n]
    size_t cTokenStride = 0;

    const float* dtBias = nullptr; //!< [H] ssm_dt.bias, added to dt before the softplus; null: none
    const float* A = nullptr;      //!< [H] ssm_a as GGUF stores it: already -exp(A_log) (< 0)
    const float* D = nullptr;      //!< [H] ssm_d, the skip y += D[h] * x; null: no skip
};

/** Runs the scan over the T tokens, updating `state` in place and writing y.

    For each token t, head h, row p (dt' = dt[t, h] + dtBias[h] in float, then as ggml):
        delta  = dt' > 20 ? dt' : logf(1 + expf(dt'))        (ggml_compute_softplus_f32)
        dA     = expf(delta * A[h])
        s[h, p, n] = s[h, p, n] * dA + B[t, g, n] * (x[t, h, p] * delta)   for n < N
        y[t, h, p] = sum_n s[h, p, n] * C[t, g, n]  +  x[t, h, p] * D[h]

    state: H x P x N floats, s[(h * P + p) * N + n] (llama.cpp's {d_state, head_dim, n_head}
    ssm state), read as the state before token 0 and left as the state after token T-1, so a
    sequence may be scanned in pieces (1 + 98 + 201 tokens give the 300-token call's results).
    y: y[t * yTokenStride + h * P + p] (yTokenStride >= H * P); it must not overlap the inputs
    or the state.

    Rounding: the vector builds (baseline / AVX2 / AVX-512, CV_CPU_DISPATCH) use fused
    multiply-adds and sum the N products in an order fixed per build (one accumulator of a
    vector's lanes, then across lanes), so they differ from ggml and from each other by float
    rounding only; delta and dA are the same scalar expressions (libm's expf / logf) in every
    build, and a token's arithmetic does not depend on where a call starts.
    Rows (h, p) are independent: they are split across threads by blocks of rows of a head
    (cv::parallel_for_) when the call has enough work; the results do not depend on the thread
    count. Allocation-free (token-chunk scratch on the stack). Shapes and pointers are checked
    with CV_Check* ("SelectiveScan: ..."). */
CV_EXPORTS void selectiveScan(const SelectiveScanInputs& in, float* state, float* y, size_t yTokenStride);

/** Mamba-2's gated RMS norm of the scan's output (llama.cpp: ggml_swiglu_split(z, y), then
    build_norm(LLM_NORM_RMS) over rows of width / G elements and the weight):
        g[i]  = silu(z[t, i]) * y[t, i]                      (i < width = H * P)
        out[t, k * W + j] = g[k * W + j] * (1 / sqrtf(mean_j g^2 + eps)) * weight[k * W + j]
    with W = width / groups, the mean of group k summed in double as ggml_rms_norm does.
    y[t * yTokenStride + i], z[t * zTokenStride + i] (z: the first d_inner elements of the
    fused in_proj row), weight: ssm_norm as stored ({W, G}: group k's W weights at k * W),
    out[t * outTokenStride + i]; out may be y itself (same stride), never z. SiLU is the
    element-wise layer's (llm::siluRange: a polynomial exp, within ~2e-7 relative of expf).
    Tokens run in parallel when there are many; allocation-free. */
CV_EXPORTS void gatedGroupRMSNorm(const float* y, size_t yTokenStride, const float* z, size_t zTokenStride,
                                  const float* weight, int tokens, int width, int groups, float eps,
                                  float* out, size_t outTokenStride);

}}} // namespace cv::dnn::llm

#endif
