// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Whether this process may run AMX tile instructions (Intel Sapphire Rapids and later). The CPU
// having them is not enough: Linux (5.16+) keeps a process's 8 KB tile state only once the
// process asks for it (arch_prctl ARCH_REQ_XCOMP_PERM); before that a tile instruction faults.
// The weight-type table (ggml_kernels.dispatch.cpp) offers the AMX kernels only when this says
// yes.

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_AMX_TILES_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_AMX_TILES_HPP

#include <opencv2/core.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** True when the CPU has AMX-TILE and AMX-INT8, the OS saves the tile state, the process was
    granted it (asked once, on the first call) and OPENCV_DNN_LLM_AMX is not "0" (for comparing
    with the AVX-512 kernels, and a way out should a system misbehave). */
CV_EXPORTS bool amxTilesGranted();

}}} // namespace cv::dnn::llm

#endif
