// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The element-wise layer's hot loops (SwiGLU's gate, the residual additions), compiled per
// dispatched ISA (elementwise_kernels.simd.hpp): in the layer's own file they got the baseline's
// 4-lane vectors (SiLU ~1.7 ns an element, a scalar add ~1 ns).

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_ELEMENTWISE_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_ELEMENTWISE_KERNELS_HPP

namespace cv {
namespace dnn {
namespace llm {

/** y[i] = silu(a[i]) * b[i] (SwiGLU), or silu(a[i]) where b is null, for i in [begin, end). Every
    element takes the same arithmetic wherever a range starts or ends (a batch's rows equal lone
    runs'). */
void siluRange(const float* a, const float* b, float* y, int begin, int end);

enum class BinaryOp { Add, Sub, Mul, Div };

//! y[i] = a[i] op b[i] for i in [begin, end): IEEE single-precision results, as scalar code gives.
void binaryRange(BinaryOp op, const float* a, const float* b, float* y, int begin, int end);

}}} // namespace cv::dnn::llm

#endif
