// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "float_gemm.hpp"

#include "float_gemm.simd.hpp"
#include "llm/kernels/float_gemm.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

void gemmTokensByWeightRows(const float* x, size_t xStride, int tokens, int in, const float* w, size_t wStride,
                            int rows, float* y, size_t yStride)
{
    CV_CPU_DISPATCH(gemmTokensByWeightRowsSimd, (x, xStride, tokens, in, w, wStride, rows, y, yStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
