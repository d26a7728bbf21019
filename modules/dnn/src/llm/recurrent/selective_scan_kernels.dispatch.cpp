// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "selective_scan_kernels.hpp"

#include "selective_scan_kernels.simd.hpp"
#include "llm/recurrent/selective_scan_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

void selectiveScanRows(const SelectiveScanInputs& in, int head, int rowBegin, int rowEnd, float* state,
                       float* y, size_t yTokenStride)
{
    CV_CPU_DISPATCH(selectiveScanRowsSimd, (in, head, rowBegin, rowEnd, state, y, yTokenStride),
                    CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
