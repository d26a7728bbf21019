// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Small float vector kernels shared by the LLM layers (universal intrinsics).

#ifndef OPENCV_DNN_SRC_LLM_COMMON_VECTOR_OPS_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_VECTOR_OPS_HPP

#include <opencv2/core/hal/intrin.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** sum a[i] * b[i]: the one float dot product of the LLM code (float matmul rows through
    dotF32Fast, attention scores), at the vector width of the file that includes it. Four
    accumulators hide the FMA latency. `static`: the ISA-dispatched files include it, and each
    must keep its own copy (one compiled with AVX2 flags must not serve baseline callers). */
static inline float dotF32(const float* a, const float* b, int n)
{
    int i = 0;
    float sum = 0.f;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 s0 = vx_setzero_f32(), s1 = vx_setzero_f32(), s2 = vx_setzero_f32(), s3 = vx_setzero_f32();
    for (; i + 4 * lanes <= n; i += 4 * lanes)
    {
        s0 = v_fma(vx_load(a + i), vx_load(b + i), s0);
        s1 = v_fma(vx_load(a + i + lanes), vx_load(b + i + lanes), s1);
        s2 = v_fma(vx_load(a + i + 2 * lanes), vx_load(b + i + 2 * lanes), s2);
        s3 = v_fma(vx_load(a + i + 3 * lanes), vx_load(b + i + 3 * lanes), s3);
    }
    for (; i + lanes <= n; i += lanes)
        s0 = v_fma(vx_load(a + i), vx_load(b + i), s0);
    sum = v_reduce_sum(v_add(v_add(s0, s1), v_add(s2, s3)));
#endif
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

//! y[i] += alpha * x[i]
static inline void axpyF32(float alpha, const float* x, float* y, int n)
{
    int i = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    const v_float32 va = vx_setall_f32(alpha);
    for (; i + lanes <= n; i += lanes)
        v_store(y + i, v_fma(va, vx_load(x + i), vx_load(y + i)));
#endif
    for (; i < n; i++)
        y[i] += alpha * x[i];
}

//! y[i] *= alpha
static inline void scaleF32(float alpha, float* y, int n)
{
    int i = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    const v_float32 va = vx_setall_f32(alpha);
    for (; i + lanes <= n; i += lanes)
        v_store(y + i, v_mul(va, vx_load(y + i)));
#endif
    for (; i < n; i++)
        y[i] *= alpha;
}

#if (CV_SIMD || CV_SIMD_SCALABLE)
// exp(x) for x <= 0 (attention scores minus their maximum, -|x| of SiLU): 2^n * p(r), r = x - n ln2
// in [-ln2/2, ln2/2], p a degree-6 polynomial (relative error ~2e-7); below -87 the result is 0.
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

//! x * sigmoid(x) (SiLU) of each lane; the sigmoid from e = exp(-|x|) <= 1 (1 / (1 + e) or
//! e / (1 + e)), so nothing overflows.
static inline v_float32 siluF32(const v_float32& x)
{
    const v_float32 e = expNonPositive(v_sub(vx_setzero_f32(), v_abs(x)));
    const v_float32 r = v_div(vx_setall_f32(1.f), v_add(vx_setall_f32(1.f), e));
    return v_mul(x, v_select(v_ge(x, vx_setzero_f32()), r, v_mul(e, r)));
}
#endif

}}} // namespace cv::dnn::llm

#endif
