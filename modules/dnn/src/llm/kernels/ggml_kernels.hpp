// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Row kernels of the quantized matmul and the embedding, dispatched by CPU features
// (ggml_kernels.simd.hpp, compiled for the baseline and for AVX2; patch 0003 registers it).

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_GGML_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_GGML_KERNELS_HPP

#include "../ggml/ggml_types.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! dequantizeRow() with the fastest code the CPU runs; results are those of dequantizeRow().
void dequantizeRowFast(GGMLType type, const void* src, float* dst, int64 n);

//! sum a[i] * b[i] with the widest vectors the CPU has.
float dotF32Fast(const float* a, const float* b, int n);

}}} // namespace cv::dnn::llm

#endif
