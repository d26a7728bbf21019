// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Weights repacked once at load for the integer matmul kernel: groups of 8 output rows, block
// by block (32 inputs), the 8 rows' data side by side. Per group and block:
//   8 float16 scales (row j at bytes 2j), then the quants in 4-byte chunks: chunk c holds
//   bytes 4c..4c+3 of every row's block, row j at offset 4j (Q4_0: 4 chunks of packed nibbles,
//   element k in the low and k + 16 in the high nibble, as in Q4_0; Q8_0: 8 chunks of int8;
//   Q4_1: the 8 float16 mins follow the scales, then the Q4_0-style chunks; Q5_0 / Q5_1:
//   also 32-bit words of the fifth bits per chunk).
// A 256-bit load then feeds 8 rows with the same 4 activations, and lane j of every vector
// is row j: no horizontal sums. The group has exactly the bytes of its 8 blocks.
// Q4_K (super-blocks of 256): the float16 d and dmin of the 8 rows, their 6-bit sub-block
// scales and mins unpacked to bytes, and the nibbles in the same 4-byte chunks (2.8% larger;
// Q5_K adds 32-bit words of fifth bits per chunk, the size of its qh).
// Q6_K: the float16 d of the 8 rows, their int8 scales, and the low-nibble and 2-bit planes in
// 4-byte chunks (the same size as the 8 blocks). interleaved_weights.cpp has the exact layouts.

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_INTERLEAVED_WEIGHTS_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_INTERLEAVED_WEIGHTS_HPP

#include "../ggml/ggml_types.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K (with an integer kernel on this CPU).
bool hasInterleavedLayout(GGMLType type);

/** Rows [0, 8 * groups) of a weight matrix (`rowBytes` per row, `blocks` blocks of 32 each)
    as a groups x (blocks * 8 * block bytes) CV_8U Mat in the layout above. */
Mat interleaveRows8(GGMLType type, const uchar* rows, size_t rowBytes, int groups, int blocks);

}}} // namespace cv::dnn::llm

#endif
