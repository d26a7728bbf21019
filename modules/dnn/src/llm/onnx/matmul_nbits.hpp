// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// ONNX Runtime's MatMulNBits weights (com.microsoft): N rows of K elements quantized in blocks
// of `block_size` along K, w = scale * (q - zero_point), q packed LSB-first (4-bit: element 2i
// in the low nibble, 2i+1 in the high one). Converted once at load into the ggml block type
// the matmul kernels run fastest on, or into exact float32 rows when no such type fits.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_MATMUL_NBITS_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_MATMUL_NBITS_HPP

#include <opencv2/core.hpp>
#include "../ggml/ggml_types.hpp"
#include "onnx_model_file.hpp"

namespace cv {
namespace dnn {
namespace llm {

struct MatMulNBitsWeights
{
    int in = 0, out = 0, bits = 0, blockSize = 0;  // attributes K, N, bits, block_size
    const OnnxTensor* packed = nullptr;            // B: uint8 [N, blocks, block_size * bits / 8]
    const OnnxTensor* scales = nullptr;            // [N * blocks] (float, float16 or bfloat16)
    const OnnxTensor* zeroPoints = nullptr;        // optional: uint8 packed like B, or the scales' type
};

struct ConvertedWeights
{
    GGMLType type = GGML_F32;
    Mat rows;  // out x ggmlRowBytes(type, in), CV_8U
};

/** Validates the tensors against the attributes and converts them:
    - 4 bits, block size a multiple of 32, K a multiple of 32, no zero points -> Q4_0
      (exact: Q4_0 is scale * (q - 8), the default zero point);
    - the same with zero points -> Q4_1 (scale * q + min with min = -scale * zero_point; min
      rounds to float16, an error of at most 2^-11 * |min| per weight);
    - 8 bits, block size and K multiples of 32, no zero points -> Q8_0 (exact, q - 128);
    - anything else (other block sizes, 2 bits, 8 bits with zero points) -> float32 rows, exact.
    Q4_0 / Q4_1 / Q8_0 store the scale as float16: a float32 scale outside float16's normal
    range sends the tensor to float32 rows instead. Bad sizes or types throw cv::Exception. */
ConvertedWeights convertMatMulNBits(const MatMulNBitsWeights& w);

}}} // namespace cv::dnn::llm

#endif
