// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Compiled once per dispatched ISA with OpenCV's universal intrinsics at that ISA's width.
// Results differ between ISAs only by float rounding (the order of the sums).

#include <opencv2/core/hal/intrin.hpp>
#include "gated_delta_rule_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void deltaRuleRecurrentHeadSimd(const DeltaRuleHeadTokens& head, float* state);
void addWeightedRowsSimd(const float* c, size_t cRowStride, size_t cTermStride, const float* x, size_t xStride,
                         int rows, int terms, WeightedRowsTerms which, int width, float* y, size_t yStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

static inline float dotRows(const float* a, const float* b, int n)
{
    int i = 0;
    float sum = 0.f;
#if CV_SIMD
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 s0 = vx_setzero_f32(), s1 = vx_setzero_f32();
    for (; i + 2 * lanes <= n; i += 2 * lanes)
    {
        s0 = v_fma(vx_load(a + i), vx_load(b + i), s0);
        s1 = v_fma(vx_load(a + i + lanes), vx_load(b + i + lanes), s1);
    }
    for (; i + lanes <= n; i += lanes)
        s0 = v_fma(vx_load(a + i), vx_load(b + i), s0);
    sum = v_reduce_sum(v_add(s0, s1));
#endif
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

#if CV_SIMD
// The sums of the lanes of a, b, c, d as out[0..3] (one transposing reduction for the four).
static inline void reduceFour(const v_float32& a, const v_float32& b, const v_float32& c, const v_float32& d, float* out)
{
#if CV_SIMD512 && CV_AVX512_SKX
    // v_reduce_sum4 leaves each 128-bit quarter's sums of the four vectors; the quarters are added.
    const __m512 r = v_reduce_sum4(a, b, c, d).val;
    const __m128 s = _mm_add_ps(_mm_add_ps(_mm512_castps512_ps128(r), _mm512_extractf32x4_ps(r, 1)),
                                _mm_add_ps(_mm512_extractf32x4_ps(r, 2), _mm512_extractf32x4_ps(r, 3)));
    _mm_storeu_ps(out, s);
#elif CV_SIMD256 && CV_AVX2
    const __m256 r = v_reduce_sum4(a, b, c, d).val;
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1)));
#else
    out[0] = v_reduce_sum(a);
    out[1] = v_reduce_sum(b);
    out[2] = v_reduce_sum(c);
    out[3] = v_reduce_sum(d);
#endif
}

// Rows of exactly NV vectors held in registers between the dot products and the update: each
// row is loaded and stored once. (Two rows at a time measured no faster.)
template<int NV>
static inline void recurrentRowsInRegisters(float* state, const float* k, const float* q, const float* v, float* o,
                                            int valueDim, float decay, float beta, float kq, float scale)
{
    const int lanes = VTraits<v_float32>::vlanes();
    const v_float32 va = vx_setall_f32(decay);
    for (int j = 0; j < valueDim; j++)
    {
        float* row = state + (size_t)j * NV * lanes;
        v_float32 s[NV];
        v_float32 k0 = vx_setzero_f32(), k1 = vx_setzero_f32(), q0 = vx_setzero_f32(), q1 = vx_setzero_f32();
        for (int i = 0; i < NV; i += 2)
        {
            s[i] = vx_load(row + i * lanes);
            s[i + 1] = vx_load(row + (i + 1) * lanes);
            k0 = v_fma(s[i], vx_load(k + i * lanes), k0);
            k1 = v_fma(s[i + 1], vx_load(k + (i + 1) * lanes), k1);
            q0 = v_fma(s[i], vx_load(q + i * lanes), q0);
            q1 = v_fma(s[i + 1], vx_load(q + (i + 1) * lanes), q1);
        }
        float sums[4];
        reduceFour(v_add(k0, k1), v_add(q0, q1), vx_setzero_f32(), vx_setzero_f32(), sums);
        const float d = beta * (v[j] - decay * sums[0]);
        const v_float32 vd = vx_setall_f32(d);
        for (int i = 0; i < NV; i++)
            vx_store(row + i * lanes, v_fma(vd, vx_load(k + i * lanes), v_mul(va, s[i])));
        o[j] = scale * (decay * sums[1] + d * kq);
    }
}
#endif

// Any row length: both dot products in one pass over the row, then the update (a second pass
// over the row, from L1).
static inline void recurrentRow(float* row, const float* k, const float* q, float vj, float* oj, int n,
                                float decay, float beta, float kq, float scale)
{
    int i = 0;
    float sk = 0.f, sq = 0.f;
#if CV_SIMD
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 k0 = vx_setzero_f32(), k1 = vx_setzero_f32(), q0 = vx_setzero_f32(), q1 = vx_setzero_f32();
    for (; i + 2 * lanes <= n; i += 2 * lanes)
    {
        const v_float32 s0 = vx_load(row + i), s1 = vx_load(row + i + lanes);
        k0 = v_fma(s0, vx_load(k + i), k0);
        k1 = v_fma(s1, vx_load(k + i + lanes), k1);
        q0 = v_fma(s0, vx_load(q + i), q0);
        q1 = v_fma(s1, vx_load(q + i + lanes), q1);
    }
    for (; i + lanes <= n; i += lanes)
    {
        const v_float32 s0 = vx_load(row + i);
        k0 = v_fma(s0, vx_load(k + i), k0);
        q0 = v_fma(s0, vx_load(q + i), q0);
    }
    float sums[4];
    reduceFour(v_add(k0, k1), v_add(q0, q1), vx_setzero_f32(), vx_setzero_f32(), sums);
    sk = sums[0];
    sq = sums[1];
#endif
    for (; i < n; i++)
    {
        sk += row[i] * k[i];
        sq += row[i] * q[i];
    }
    const float d = beta * (vj - decay * sk);
    i = 0;
#if CV_SIMD
    const v_float32 va = vx_setall_f32(decay), vd = vx_setall_f32(d);
    for (; i + lanes <= n; i += lanes)
        vx_store(row + i, v_fma(vd, vx_load(k + i), v_mul(va, vx_load(row + i))));
#endif
    for (; i < n; i++)
        row[i] = decay * row[i] + d * k[i];
    *oj = scale * (decay * sq + d * kq);
}

void deltaRuleRecurrentHeadSimd(const DeltaRuleHeadTokens& head, float* state)
{
    const int keyDim = head.keyDim, valueDim = head.valueDim;
    for (int t = 0; t < head.tokens; t++)
    {
        const float* q = head.q + t * head.qStride;
        const float* k = head.k + t * head.kStride;
        const float* v = head.v + t * head.vStride;
        float* o = head.o + t * head.oStride;
        const float decay = std::exp(head.g[t * head.gStride]);
        const float beta = head.beta[t * head.betaStride];
        const float kq = dotRows(k, q, keyDim);
        // Row j of the state is column j of S: its update needs d_j only, so each row is read
        // and written once per token. The output uses the row before the update:
        // (a S_j + d_j k).q = a S_j.q + d_j k.q.
        int j = 0;
#if CV_SIMD
        const int lanes = VTraits<v_float32>::vlanes();
        j = valueDim;
        if (keyDim == 2 * lanes)
            recurrentRowsInRegisters<2>(state, k, q, v, o, valueDim, decay, beta, kq, head.scale);
        else if (keyDim == 4 * lanes)
            recurrentRowsInRegisters<4>(state, k, q, v, o, valueDim, decay, beta, kq, head.scale);
#if CV_SIMD512
        else if (keyDim == 8 * lanes)  // 32 registers: a row of 8 vectors, k, q and the sums
            recurrentRowsInRegisters<8>(state, k, q, v, o, valueDim, decay, beta, kq, head.scale);
#endif
        else
            j = 0;
#endif
        for (; j < valueDim; j++)
            recurrentRow(state + (size_t)j * keyDim, k, q, v[j], o + j, keyDim, decay, beta, kq, head.scale);
    }
}

static inline int termLimit(WeightedRowsTerms which, int r, int terms)
{
    if (which == kAllTerms)
        return terms;
    return std::min(terms, which == kTermsBelowRow ? r : r + 1);
}

#if CV_SIMD
// Columns [col, col + NV lanes) of rows y0 and y1 (y1 may be null): the terms below lim0 for both
// rows (each x row loaded once for the two), y0 stored, then y1's terms from lim0 to lim1 (with
// kTermsBelowRow, term lim0 is y0's row itself, finished just before).
template<int NV>
static inline void weightedColumns(const float* c0, const float* c1, size_t cTermStride, const float* x, size_t xStride,
                                   int lim0, int lim1, float* y0, float* y1, int col)
{
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 a0[NV], a1[NV];
    for (int v = 0; v < NV; v++)
        a0[v] = vx_load(y0 + col + v * lanes);
    if (y1)
    {
        for (int v = 0; v < NV; v++)
            a1[v] = vx_load(y1 + col + v * lanes);
        for (int s = 0; s < lim0; s++)
        {
            const v_float32 w0 = vx_setall_f32(c0[s * cTermStride]), w1 = vx_setall_f32(c1[s * cTermStride]);
            const float* xr = x + s * xStride + col;
            for (int v = 0; v < NV; v++)
            {
                const v_float32 xv = vx_load(xr + v * lanes);
                a0[v] = v_fma(w0, xv, a0[v]);
                a1[v] = v_fma(w1, xv, a1[v]);
            }
        }
    }
    else
    {
        for (int s = 0; s < lim0; s++)
        {
            const v_float32 w0 = vx_setall_f32(c0[s * cTermStride]);
            const float* xr = x + s * xStride + col;
            for (int v = 0; v < NV; v++)
                a0[v] = v_fma(w0, vx_load(xr + v * lanes), a0[v]);
        }
    }
    for (int v = 0; v < NV; v++)
        vx_store(y0 + col + v * lanes, a0[v]);
    if (!y1)
        return;
    for (int s = lim0; s < lim1; s++)
    {
        const v_float32 w1 = vx_setall_f32(c1[s * cTermStride]);
        const float* xr = x + s * xStride + col;
        for (int v = 0; v < NV; v++)
            a1[v] = v_fma(w1, vx_load(xr + v * lanes), a1[v]);
    }
    for (int v = 0; v < NV; v++)
        vx_store(y1 + col + v * lanes, a1[v]);
}
#endif

void addWeightedRowsSimd(const float* c, size_t cRowStride, size_t cTermStride, const float* x, size_t xStride,
                         int rows, int terms, WeightedRowsTerms which, int width, float* y, size_t yStride)
{
    // Rows in pairs: each x row loaded serves both.
    for (int r = 0; r < rows; r += 2)
    {
        const bool pair = r + 1 < rows;
        const float* c0 = c + r * cRowStride;
        const float* c1 = pair ? c0 + cRowStride : nullptr;
        float* y0 = y + r * yStride;
        float* y1 = pair ? y0 + yStride : nullptr;
        const int lim0 = termLimit(which, r, terms);
        const int lim1 = pair ? termLimit(which, r + 1, terms) : lim0;
        int col = 0;
#if CV_SIMD
        const int lanes = VTraits<v_float32>::vlanes();
        for (; col + 4 * lanes <= width; col += 4 * lanes)
            weightedColumns<4>(c0, c1, cTermStride, x, xStride, lim0, lim1, y0, y1, col);
        for (; col + lanes <= width; col += lanes)
            weightedColumns<1>(c0, c1, cTermStride, x, xStride, lim0, lim1, y0, y1, col);
#endif
        for (; col < width; col++)
        {
            float a0 = y0[col];
            for (int s = 0; s < lim0; s++)
                a0 += c0[s * cTermStride] * x[s * xStride + col];
            y0[col] = a0;
            if (!pair)
                continue;
            float a1 = y1[col];
            for (int s = 0; s < lim1; s++)
                a1 += c1[s * cTermStride] * x[s * xStride + col];
            y1[col] = a1;
        }
    }
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
