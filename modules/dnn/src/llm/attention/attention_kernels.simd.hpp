// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Compiled once per dispatched ISA with OpenCV's universal intrinsics at that ISA's width.
// Results differ between ISAs only by float rounding (reduction order, exp approximation).

#include <opencv2/core/hal/intrin.hpp>
#include "../common/vector_ops.hpp"
#include "attention_kernels.hpp"

#include <type_traits>

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void attentionScoresSimd(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                         float scale, float* scores, int ld);
void attentionSoftmaxRowsSimd(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut);
void attentionAccumulateSimd(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                             float* acc, size_t accStride);
void attentionScoresHalfSimd(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                             float scale, float* scores, int ld);
void attentionAccumulateHalfSimd(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

// Keys and values are float rows or half-precision ones: a vector of either as floats (the
// conversion is exact, so both give the same results), and a whole row as floats for the
// scalar paths (half rows converted on the stack: headDim <= kMaxHalfKernelHeadDim).
#if CV_SIMD
static inline v_float32 loadFloats(const float* p) { return vx_load(p); }
static inline v_float32 loadFloats(const hfloat* p) { return vx_load_expand(p); }
#endif

struct FloatRow
{
    const float* data;
    explicit FloatRow(const float* row, int) : data(row) {}
};

struct HalfRow
{
    float buffer[kMaxHalfKernelHeadDim];
    const float* data;
    HalfRow(const hfloat* row, int n) : data(buffer)
    {
        for (int i = 0; i < n; i++)
            buffer[i] = (float)row[i];
    }
};

template <typename T>
using RowAsFloats = typename std::conditional<std::is_same<T, float>::value, FloatRow, HalfRow>::type;

template <typename T>
static void attentionScoresOf(const float* q, int group, int headDim, const T* k, size_t kStride, int n, float scale,
                              float* scores, int ld)
{
    int j = 0;
#if CV_SIMD
    // Four keys at a time: four dot products share the query's loads and end in one
    // v_reduce_sum4 (sums of each 4-lane group of the four accumulators), whose groups are then
    // added: a quarter of the horizontal reductions of one dot product per key.
    const int lanes = VTraits<v_float32>::vlanes();
    if (headDim % lanes == 0)
    {
        for (; j + 4 <= n; j += 4)
        {
            const T* k0 = k + (size_t)j * kStride;
            for (int h = 0; h < group; h++)
            {
                const float* qh = q + (size_t)h * headDim;
                v_float32 s0 = vx_setzero_f32(), s1 = vx_setzero_f32(), s2 = vx_setzero_f32(), s3 = vx_setzero_f32();
                for (int i = 0; i < headDim; i += lanes)
                {
                    const v_float32 qv = vx_load(qh + i);
                    s0 = v_fma(qv, loadFloats(k0 + i), s0);
                    s1 = v_fma(qv, loadFloats(k0 + kStride + i), s1);
                    s2 = v_fma(qv, loadFloats(k0 + 2 * kStride + i), s2);
                    s3 = v_fma(qv, loadFloats(k0 + 3 * kStride + i), s3);
                }
                float sums[VTraits<v_float32>::max_nlanes];
                v_store(sums, v_reduce_sum4(s0, s1, s2, s3));
                for (int t = 0; t < 4; t++)
                {
                    float dot = sums[t];
                    for (int g = 4; g < lanes; g += 4)
                        dot += sums[g + t];
                    scores[h * ld + j + t] = dot * scale;
                }
            }
        }
    }
#endif
    for (k += (size_t)j * kStride; j < n; j++, k += kStride)
    {
        const RowAsFloats<T> row(k, headDim);
        for (int h = 0; h < group; h++)
            scores[h * ld + j] = dotF32(q + (size_t)h * headDim, row.data, headDim) * scale;
    }
}

void attentionScoresSimd(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                         float scale, float* scores, int ld)
{
    attentionScoresOf(q, group, headDim, k, kStride, n, scale, scores, ld);
}

void attentionScoresHalfSimd(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                             float scale, float* scores, int ld)
{
    attentionScoresOf(q, group, headDim, k, kStride, n, scale, scores, ld);
}


#if (CV_SIMD || CV_SIMD_SCALABLE)
// exp(x) for x <= 0 (scores minus their maximum): 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2],
// p a degree-6 polynomial (relative error ~2e-7); below -87 the result is 0.
static inline v_float32 expNonPositive(const v_float32& x0)
{
    const v_float32 x = v_max(x0, vx_setall_f32(-87.f));
    const v_float32 n = v_cvt_f32(v_round(v_mul(x, vx_setall_f32(1.44269504088896341f))));
    v_float32 r = v_fma(n, vx_setall_f32(-0.693359375f), x);
    r = v_fma(n, vx_setall_f32(2.12194440e-4f), r);
    v_float32 p = vx_setall_f32(1.f / 720);
    p = v_fma(p, r, vx_setall_f32(1.f / 120));
    p = v_fma(p, r, vx_setall_f32(1.f / 24));
    p = v_fma(p, r, vx_setall_f32(1.f / 6));
    p = v_fma(p, r, vx_setall_f32(0.5f));
    p = v_fma(p, r, vx_setall_f32(1.f));
    p = v_fma(p, r, vx_setall_f32(1.f));
    const v_int32 e = v_shl<23>(v_add(v_round(n), vx_setall_s32(127)));
    const v_float32 y = v_mul(p, v_reinterpret_as_f32(e));
    return v_select(v_lt(x0, vx_setall_f32(-87.f)), vx_setzero_f32(), y);
}
#endif

void attentionSoftmaxRowsSimd(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut)
{
    for (int h = 0; h < rows; h++)
    {
        float* s = scores + (size_t)h * ld;
        float m = -FLT_MAX;
        int j = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
        {
            v_float32 vmax = vx_setall_f32(-FLT_MAX);
            for (; j + VTraits<v_float32>::vlanes() <= n; j += VTraits<v_float32>::vlanes())
                vmax = v_max(vmax, vx_load(s + j));
            m = v_reduce_max(vmax);
        }
#endif
        for (; j < n; j++)
            m = std::max(m, s[j]);
        j = 0;
        float sum = 0.f;
#if (CV_SIMD || CV_SIMD_SCALABLE)
        const int lanes = VTraits<v_float32>::vlanes();
        const v_float32 vm = vx_setall_f32(m);
        v_float32 vsum = vx_setzero_f32();
        for (; j + lanes <= n; j += lanes)
        {
            const v_float32 e = expNonPositive(v_sub(vx_load(s + j), vm));
            v_store(s + j, e);
            vsum = v_add(vsum, e);
        }
        sum = v_reduce_sum(vsum);
#endif
        for (; j < n; j++)
        {
            s[j] = std::exp(s[j] - m);
            sum += s[j];
        }
        maxOut[h] = m;
        sumOut[h] = sum;
    }
}

#if CV_SIMD
// acc[0, NV * lanes) += sum over j of p[j] * v[j * vStride + ...], the accumulators held in
// registers over all n rows (the same fused multiply-adds in the same order as row by row).
template <int NV, typename T>
static inline void accumulateSlice(const float* p, int n, const T* v, size_t vStride, float* acc)
{
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 a[NV];
    for (int k = 0; k < NV; k++)
        a[k] = vx_load(acc + k * lanes);
    for (int j = 0; j < n; j++, v += vStride)
    {
        const v_float32 w = vx_setall_f32(p[j]);
        for (int k = 0; k < NV; k++)
            a[k] = v_fma(w, loadFloats(v + k * lanes), a[k]);
    }
    for (int k = 0; k < NV; k++)
        v_store(acc + k * lanes, a[k]);
}
#endif

template <typename T>
static void attentionAccumulateOf(const float* p, int group, int n, int ld, const T* v, size_t vStride, int headDim,
                                  float* acc, size_t accStride)
{
#if CV_SIMD
    // Per query head, slices of up to 8 vectors of the head's accumulator stay in registers over
    // the rows (instead of a load and a store per row and head).
    const int lanes = VTraits<v_float32>::vlanes();
    if (headDim % lanes == 0)
    {
        for (int h = 0; h < group; h++)
        {
            const float* ph = p + (size_t)h * ld;
            float* a = acc + (size_t)h * accStride;
            int i = 0;
            for (; i + 8 * lanes <= headDim; i += 8 * lanes)
                accumulateSlice<8>(ph, n, v + i, vStride, a + i);
            switch ((headDim - i) / lanes)
            {
            case 7: accumulateSlice<7>(ph, n, v + i, vStride, a + i); break;
            case 6: accumulateSlice<6>(ph, n, v + i, vStride, a + i); break;
            case 5: accumulateSlice<5>(ph, n, v + i, vStride, a + i); break;
            case 4: accumulateSlice<4>(ph, n, v + i, vStride, a + i); break;
            case 3: accumulateSlice<3>(ph, n, v + i, vStride, a + i); break;
            case 2: accumulateSlice<2>(ph, n, v + i, vStride, a + i); break;
            case 1: accumulateSlice<1>(ph, n, v + i, vStride, a + i); break;
            default: break;
            }
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++, v += vStride)
    {
        const RowAsFloats<T> row(v, headDim);
        for (int h = 0; h < group; h++)
        {
            const float w = p[h * ld + j];
            float* a = acc + (size_t)h * accStride;
            int i = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
            const int lanes = VTraits<v_float32>::vlanes();
            const v_float32 vw = vx_setall_f32(w);
            for (; i + lanes <= headDim; i += lanes)
                v_store(a + i, v_fma(vw, vx_load(row.data + i), vx_load(a + i)));
#endif
            for (; i < headDim; i++)
                a[i] += w * row.data[i];
        }
    }
}

void attentionAccumulateSimd(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                             float* acc, size_t accStride)
{
    attentionAccumulateOf(p, group, n, ld, v, vStride, headDim, acc, accStride);
}

void attentionAccumulateHalfSimd(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride)
{
    attentionAccumulateOf(p, group, n, ld, v, vStride, headDim, acc, accStride);
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
