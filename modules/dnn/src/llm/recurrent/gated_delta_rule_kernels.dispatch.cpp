// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "gated_delta_rule_kernels.hpp"

#include "gated_delta_rule_kernels.simd.hpp"
#include "llm/recurrent/gated_delta_rule_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

void deltaRuleRecurrentHead(const DeltaRuleHeadTokens& head, float* state)
{
    CV_CPU_DISPATCH(deltaRuleRecurrentHeadSimd, (head, state), CV_CPU_DISPATCH_MODES_ALL);
}

void addWeightedRows(const float* c, size_t cRowStride, size_t cTermStride, const float* x, size_t xStride,
                     int rows, int terms, WeightedRowsTerms which, int width, float* y, size_t yStride)
{
    CV_CPU_DISPATCH(addWeightedRowsSimd, (c, cRowStride, cTermStride, x, xStride, rows, terms, which, width, y, yStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
