// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "ggml_kernels.hpp"

#include "ggml_kernels.simd.hpp"
#include "llm/kernels/ggml_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

static bool dequantizeRowDispatch(int type, const uchar* src, float* dst, int64 n)
{
    CV_CPU_DISPATCH(dequantizeRowSimd, (type, src, dst, n), CV_CPU_DISPATCH_MODES_ALL);
}

void dequantizeRowFast(GGMLType type, const void* src, float* dst, int64 n)
{
    if (!dequantizeRowDispatch((int)type, static_cast<const uchar*>(src), dst, n))
        dequantizeRow(type, src, dst, n);
}

float dotF32Fast(const float* a, const float* b, int n)
{
    CV_CPU_DISPATCH(dotF32Simd, (a, b, n), CV_CPU_DISPATCH_MODES_ALL);
}

static bool hasIntegerDotDispatch()
{
    CV_CPU_DISPATCH(hasIntegerDotSimd, (), CV_CPU_DISPATCH_MODES_ALL);
}

bool hasIntegerDot(GGMLType type)
{
    static const bool available = hasIntegerDotDispatch();
    return available && (type == GGML_Q4_0 || type == GGML_Q4_1 || type == GGML_Q5_0 || type == GGML_Q5_1 ||
                         type == GGML_Q8_0 || type == GGML_Q4_K || type == GGML_Q5_K || type == GGML_Q6_K);
}

void quantizeRowQ8(const float* x, signed char* q, float* d, int* sums, int n)
{
    CV_Assert(n % 32 == 0);
    CV_CPU_DISPATCH(quantizeRowQ8Simd, (x, q, d, sums, n), CV_CPU_DISPATCH_MODES_ALL);
}

float dotQ8(GGMLType type, const void* w, const signed char* q, const float* d, const int* sums, int n)
{
    CV_CPU_DISPATCH(dotQ8Simd, ((int)type, static_cast<const uchar*>(w), q, d, sums, n / 32), CV_CPU_DISPATCH_MODES_ALL);
}

bool hasMultiRowIntegerDot(GGMLType type)
{
    return hasIntegerDot(type) && (type == GGML_Q4_0 || type == GGML_Q8_0);
}

void dotQ8Rows(GGMLType type, const void* w, const signed char* q, const float* d, const int* sums, int n,
               int rows, float* out)
{
    CV_CPU_DISPATCH(dotQ8RowsSimd, ((int)type, static_cast<const uchar*>(w), q, d, sums, n / 32, rows, out),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void dotQ8Rows2(GGMLType type, const void* w, size_t wStride, const signed char* q, const float* d, const int* sums,
                int n, int rows, float* out, size_t outStride)
{
    CV_CPU_DISPATCH(dotQ8Rows2Simd, ((int)type, static_cast<const uchar*>(w), wStride, q, d, sums, n / 32, rows,
                                     out, outStride), CV_CPU_DISPATCH_MODES_ALL);
}

void dotQ8Interleaved8(GGMLType type, const uchar* group, const signed char* q, const float* d, const int* sums,
                       int n, int rows, float* out, size_t outStride)
{
    CV_CPU_DISPATCH(dotQ8Interleaved8Simd, ((int)type, group, q, d, sums, n / 32, rows, out, outStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
