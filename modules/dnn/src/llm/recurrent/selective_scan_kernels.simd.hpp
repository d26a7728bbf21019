// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Compiled once per dispatched ISA with OpenCV's universal intrinsics at that ISA's width.
// Results differ between ISAs only by float rounding (the lanes' order of summation).

#include <opencv2/core/hal/intrin.hpp>
#include "selective_scan_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void selectiveScanRowsSimd(const SelectiveScanInputs& in, int head, int rowBegin, int rowEnd, float* state,
                           float* y, size_t yTokenStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

namespace {

// Tokens are taken in chunks whose B and C rows (2 x chunk x N floats) stay in L1 while every
// row of the block runs through the chunk; a row's N state floats stay in L1 across the chunk.
const int kMaxChunkTokens = 64;

inline int chunkTokens(int stateSize)
{
    return std::max(1, std::min(kMaxChunkTokens, 2048 / std::max(1, stateSize)));
}

// ggml_compute_softplus_f32, the same expression in every build.
inline float softplus(float v)
{
    return v > 20.0f ? v : std::log(1.0f + std::exp(v));
}

// Everything a row needs from one token: its B and C rows, dt after softplus and exp(dt * A).
struct TokenTerms
{
    const float* B;
    const float* C;
    const float* x;   // x[t, head, 0]
    float* y;         // y[t, head, 0]
    float delta, decay;
};

// One row's state update and output for one token, scalar (the vector builds' tail and the
// build without vectors).
inline float scanRowTail(float* s, const TokenTerms& tk, float xdt, int from, int N)
{
    float sum = 0.f;
    for (int n = from; n < N; n++)
    {
        const float v = s[n] * tk.decay + tk.B[n] * xdt;
        s[n] = v;
        sum += v * tk.C[n];
    }
    return sum;
}

// Rows p .. p + 3 of a head for one token: they share the token's B and C loads (1.5 loads a
// state vector instead of 3), and their four sums are independent chains of fused multiply-adds
// (18% faster on 512-token prompts than pairs of rows with two accumulators each, 11% on decode).
inline void scanFourRows(float* s, const TokenTerms& tk, int p, float D, int N)
{
    float* s0 = s;
    float* s1 = s + N;
    float* s2 = s + 2 * N;
    float* s3 = s + 3 * N;
    const float x0 = tk.x[p], x1 = tk.x[p + 1], x2 = tk.x[p + 2], x3 = tk.x[p + 3];
    const float xdt0 = x0 * tk.delta, xdt1 = x1 * tk.delta, xdt2 = x2 * tk.delta, xdt3 = x3 * tk.delta;
    float sum0 = 0.f, sum1 = 0.f, sum2 = 0.f, sum3 = 0.f;
    int n = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    const v_float32 vdecay = vx_setall_f32(tk.decay);
    const v_float32 vx0 = vx_setall_f32(xdt0), vx1 = vx_setall_f32(xdt1);
    const v_float32 vx2 = vx_setall_f32(xdt2), vx3 = vx_setall_f32(xdt3);
    v_float32 acc0 = vx_setzero_f32(), acc1 = vx_setzero_f32(), acc2 = vx_setzero_f32(), acc3 = vx_setzero_f32();
    for (; n + lanes <= N; n += lanes)
    {
        const v_float32 b = vx_load(tk.B + n), c = vx_load(tk.C + n);
        const v_float32 v0 = v_fma(vx_load(s0 + n), vdecay, v_mul(b, vx0));
        const v_float32 v1 = v_fma(vx_load(s1 + n), vdecay, v_mul(b, vx1));
        const v_float32 v2 = v_fma(vx_load(s2 + n), vdecay, v_mul(b, vx2));
        const v_float32 v3 = v_fma(vx_load(s3 + n), vdecay, v_mul(b, vx3));
        v_store(s0 + n, v0);
        v_store(s1 + n, v1);
        v_store(s2 + n, v2);
        v_store(s3 + n, v3);
        acc0 = v_fma(v0, c, acc0);
        acc1 = v_fma(v1, c, acc1);
        acc2 = v_fma(v2, c, acc2);
        acc3 = v_fma(v3, c, acc3);
    }
    sum0 = v_reduce_sum(acc0);
    sum1 = v_reduce_sum(acc1);
    sum2 = v_reduce_sum(acc2);
    sum3 = v_reduce_sum(acc3);
#endif
    sum0 += scanRowTail(s0, tk, xdt0, n, N);
    sum1 += scanRowTail(s1, tk, xdt1, n, N);
    sum2 += scanRowTail(s2, tk, xdt2, n, N);
    sum3 += scanRowTail(s3, tk, xdt3, n, N);
    // llama.cpp adds the skip after the scan: y + x * D.
    tk.y[p] = sum0 + x0 * D;
    tk.y[p + 1] = sum1 + x1 * D;
    tk.y[p + 2] = sum2 + x2 * D;
    tk.y[p + 3] = sum3 + x3 * D;
}

// The rows after the last four of a block.
inline void scanOneRow(float* s, const TokenTerms& tk, int p, float D, int N)
{
    const float x0 = tk.x[p];
    const float xdt = x0 * tk.delta;
    float sum = 0.f;
    int n = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    const v_float32 vdecay = vx_setall_f32(tk.decay), vx = vx_setall_f32(xdt);
    v_float32 acc = vx_setzero_f32();
    for (; n + lanes <= N; n += lanes)
    {
        const v_float32 v = v_fma(vx_load(s + n), vdecay, v_mul(vx_load(tk.B + n), vx));
        v_store(s + n, v);
        acc = v_fma(v, vx_load(tk.C + n), acc);
    }
    sum = v_reduce_sum(acc);
#endif
    sum += scanRowTail(s, tk, xdt, n, N);
    tk.y[p] = sum + x0 * D;
}

} // namespace

void selectiveScanRowsSimd(const SelectiveScanInputs& in, int head, int rowBegin, int rowEnd, float* state,
                           float* y, size_t yTokenStride)
{
    const int N = in.stateSize, P = in.headDim;
    const int group = head / (in.heads / in.groups);
    const float A = in.A[head];
    const float D = in.D ? in.D[head] : 0.f;
    const int chunk = chunkTokens(N);
    TokenTerms terms[kMaxChunkTokens];
    float* headState = state + (size_t)head * P * N;

    for (int t0 = 0; t0 < in.tokens; t0 += chunk)
    {
        const int count = std::min(chunk, in.tokens - t0);
        for (int j = 0; j < count; j++)
        {
            const size_t t = (size_t)(t0 + j);
            TokenTerms& tk = terms[j];
            float dt = in.dt[t * in.dtTokenStride + head];
            if (in.dtBias)
                dt += in.dtBias[head];  // llama.cpp: ggml_add(dt, ssm_dt_b) before the scan
            tk.delta = softplus(dt);
            tk.decay = std::exp(tk.delta * A);
            tk.B = in.B + t * in.bTokenStride + (size_t)group * N;
            tk.C = in.C + t * in.cTokenStride + (size_t)group * N;
            tk.x = in.x + t * in.xTokenStride + (size_t)head * P;
            tk.y = y + t * yTokenStride + (size_t)head * P;
        }
        int p = rowBegin;
        for (; p + 3 < rowEnd; p += 4)
        {
            float* s = headState + (size_t)p * N;
            for (int j = 0; j < count; j++)
                scanFourRows(s, terms[j], p, D, N);
        }
        for (; p < rowEnd; p++)
        {
            float* s = headState + (size_t)p * N;
            for (int j = 0; j < count; j++)
                scanOneRow(s, terms[j], p, D, N);
        }
    }
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
