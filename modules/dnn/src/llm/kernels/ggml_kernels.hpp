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

/** The 8-bit path llama.cpp uses for GEMV: activations quantized to blocks of 32 int8 (one
    scale per block, as Q8_0) and integer dot products with the weight blocks. It rounds the
    activations (relative error ~1/254 per element), so results differ slightly from the float
    path. Available for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K weights on CPUs with AVX2. */
bool hasIntegerDot(GGMLType type);
//! x (n floats, n a multiple of 32) -> q (n int8), d (n/32 scales), sums (n/32 block sums).
void quantizeRowQ8(const float* x, signed char* q, float* d, int* sums, int n);
//! Dot product of a weight row of n elements (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) with a quantized activation row.
float dotQ8(GGMLType type, const void* w, const signed char* q, const float* d, const int* sums, int n);
/** dotQ8() of one weight row with `rows` consecutive quantized activation rows (q stride n, d
    and sums stride n/32): each result is bit-identical to dotQ8()'s, but Q4_0 and Q8_0 blocks
    are unpacked once for every 4 rows. */
void dotQ8Rows(GGMLType type, const void* w, const signed char* q, const float* d, const int* sums, int n,
               int rows, float* out);
//! True when dotQ8Rows() shares the weight unpacking between rows for this type (Q4_0, Q8_0).
bool hasMultiRowIntegerDot(GGMLType type);
/** dotQ8Rows() of two weight rows (w and w + wStride bytes) at once, sharing each activation
    block load: out[0 .. rows) and out[outStride ..]. Only where hasMultiRowIntegerDot(). */
void dotQ8Rows2(GGMLType type, const void* w, size_t wStride, const signed char* q, const float* d, const int* sums,
                int n, int rows, float* out, size_t outStride);

/** Dot products of one group of 8 weight rows interleaved by interleaveRows8()
    (interleaved_weights.hpp; Q4_0, Q8_0) with `rows` quantized activation rows (as for
    dotQ8Rows): out[r * outStride + j] for row j of the group. Each result depends only on its
    weight row and activation row, never on `rows`. */
void dotQ8Interleaved8(GGMLType type, const uchar* group, const signed char* q, const float* d, const int* sums,
                       int n, int rows, float* out, size_t outStride);

}}} // namespace cv::dnn::llm

#endif
