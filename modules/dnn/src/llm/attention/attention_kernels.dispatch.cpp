// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "attention_kernels.hpp"

#include "attention_kernels.simd.hpp"
#include "llm/attention/attention_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

void attentionScores(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                     float scale, float* scores, int ld)
{
    CV_CPU_DISPATCH(attentionScoresSimd, (q, group, headDim, k, kStride, n, scale, scores, ld),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void attentionSoftmaxRows(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut)
{
    CV_CPU_DISPATCH(attentionSoftmaxRowsSimd, (scores, rows, n, ld, maxOut, sumOut), CV_CPU_DISPATCH_MODES_ALL);
}

void attentionAccumulate(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                         float* acc, size_t accStride)
{
    CV_CPU_DISPATCH(attentionAccumulateSimd, (p, group, n, ld, v, vStride, headDim, acc, accStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void attentionScores(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                     float scale, float* scores, int ld)
{
    CV_Assert(headDim <= kMaxConvertedHeadDim);
    CV_CPU_DISPATCH(attentionScoresHalfSimd, (q, group, headDim, k, kStride, n, scale, scores, ld),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void attentionAccumulate(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                         float* acc, size_t accStride)
{
    CV_Assert(headDim <= kMaxConvertedHeadDim);
    CV_CPU_DISPATCH(attentionAccumulateHalfSimd, (p, group, n, ld, v, vStride, headDim, acc, accStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void attentionScores(const float* q, int group, int headDim, const schar* k, size_t kStride, int n,
                     float scale, float* scores, int ld)
{
    CV_Assert(headDim <= kMaxConvertedHeadDim);
    CV_CPU_DISPATCH(attentionScoresInt8Simd, (q, group, headDim, k, kStride, n, scale, scores, ld),
                    CV_CPU_DISPATCH_MODES_ALL);
}

void attentionAccumulate(const float* p, int group, int n, int ld, const schar* v, size_t vStride, int headDim,
                         float* acc, size_t accStride)
{
    CV_Assert(headDim <= kMaxConvertedHeadDim);
    CV_CPU_DISPATCH(attentionAccumulateInt8Simd, (p, group, n, ld, v, vStride, headDim, acc, accStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
