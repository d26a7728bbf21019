// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "elementwise_kernels.hpp"

#include "elementwise_kernels.simd.hpp"
#include "llm/kernels/elementwise_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

void siluRange(const float* a, const float* b, float* y, int begin, int end)
{
    CV_CPU_DISPATCH(siluRangeSimd, (a, b, y, begin, end), CV_CPU_DISPATCH_MODES_ALL);
}

void binaryRange(BinaryOp op, const float* a, const float* b, float* y, int begin, int end)
{
    CV_CPU_DISPATCH(binaryRangeSimd, (op, a, b, y, begin, end), CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
