// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The selective scan's inner loop over a block of rows of one head, dispatched by CPU features
// (selective_scan_kernels.simd.hpp: baseline, AVX2, AVX-512). A call covers all the tokens of
// its rows, so the dispatch costs nothing per token.

#ifndef OPENCV_DNN_SRC_LLM_RECURRENT_SELECTIVE_SCAN_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_RECURRENT_SELECTIVE_SCAN_KERNELS_HPP

#include "selective_scan.hpp"

namespace cv {
namespace dnn {
namespace llm {

/** selectiveScan() for head `head`'s rows p in [rowBegin, rowEnd) and every token of `in`
    (inputs already checked): state is the whole H x P x N state, y as selectiveScan's. */
void selectiveScanRows(const SelectiveScanInputs& in, int head, int rowBegin, int rowEnd, float* state,
                       float* y, size_t yTokenStride);

}}} // namespace cv::dnn::llm

#endif
