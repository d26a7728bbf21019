// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The float GEMM of prompts on float weights (F32, and F16 / BF16 / any type without an integer
// path, decoded tile by tile): Eigen's, compiled per dispatched ISA (float_gemm.simd.hpp).

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_FLOAT_GEMM_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_FLOAT_GEMM_HPP

#include <cstddef>

namespace cv {
namespace dnn {
namespace llm {

/** Tokens times the transpose of a tile of weight rows, on the calling thread:
    y[t * yStride + j] = sum_k x[t * xStride + k] * w[j * wStride + k], t < tokens, j < rows. */
void gemmTokensByWeightRows(const float* x, size_t xStride, int tokens, int in, const float* w, size_t wStride,
                            int rows, float* y, size_t yStride);

}}} // namespace cv::dnn::llm

#endif
