// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// elementwise_kernels.hpp's loops in universal intrinsics, compiled for the baseline, AVX2 and
// AVX-512 (patch 0003).

#include "elementwise_kernels.hpp"
#include "../common/vector_ops.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void siluRangeSimd(const float* a, const float* b, float* y, int begin, int end);
void binaryRangeSimd(BinaryOp op, const float* a, const float* b, float* y, int begin, int end);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

void siluRangeSimd(const float* a, const float* b, float* y, int begin, int end)
{
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    int i = begin;
    for (; i + lanes <= end; i += lanes)
    {
        const v_float32 s = siluF32(vx_load(a + i));
        v_store(y + i, b ? v_mul(s, vx_load(b + i)) : s);
    }
    if (i < end)
    {
        // The last partial vector through padded copies: the same arithmetic as a full one.
        float pa[VTraits<v_float32>::max_nlanes] = {}, pb[VTraits<v_float32>::max_nlanes] = {};
        float py[VTraits<v_float32>::max_nlanes];
        std::copy(a + i, a + end, pa);
        if (b)
            std::copy(b + i, b + end, pb);
        const v_float32 s = siluF32(vx_load(pa));
        v_store(py, b ? v_mul(s, vx_load(pb)) : s);
        std::copy(py, py + (end - i), y + i);
    }
#else
    for (int i = begin; i < end; i++)
    {
        const float s = a[i] / (1.f + std::exp(-a[i]));
        y[i] = b ? s * b[i] : s;
    }
#endif
}

template <typename VectorOp, typename ScalarOp>
static void binaryLoop(const float* a, const float* b, float* y, int begin, int end, VectorOp vop, ScalarOp sop)
{
    int i = begin;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    for (; i + lanes <= end; i += lanes)
        v_store(y + i, vop(vx_load(a + i), vx_load(b + i)));
#endif
    for (; i < end; i++)
        y[i] = sop(a[i], b[i]);
}

void binaryRangeSimd(BinaryOp op, const float* a, const float* b, float* y, int begin, int end)
{
#if (CV_SIMD || CV_SIMD_SCALABLE)
#define LLM_BINARY(vfn, expr) binaryLoop(a, b, y, begin, end, [](const v_float32& u, const v_float32& v) { return vfn(u, v); }, \
                                         [](float u, float v) { return expr; })
#else
#define LLM_BINARY(vfn, expr) binaryLoop(a, b, y, begin, end, 0, [](float u, float v) { return expr; })
#endif
    switch (op)
    {
    case BinaryOp::Add: LLM_BINARY(v_add, u + v); break;
    case BinaryOp::Sub: LLM_BINARY(v_sub, u - v); break;
    case BinaryOp::Mul: LLM_BINARY(v_mul, u * v); break;
    case BinaryOp::Div: LLM_BINARY(v_div, u / v); break;
    }
#undef LLM_BINARY
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
