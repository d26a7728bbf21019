// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The causal depthwise convolution over time of hybrid models (ggml_ssm_conv): LFM2's short
// convolution, the convolution before Qwen3.5's gated delta net and before Mamba-2's scan.
// Each channel sees its last K inputs: the K - 1 held in the state (oldest first), then the
// current one.

#ifndef OPENCV_DNN_SRC_LLM_RECURRENT_SHORT_CONVOLUTION_HPP
#define OPENCV_DNN_SRC_LLM_RECURRENT_SHORT_CONVOLUTION_HPP

#include <opencv2/core.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** One token of one sequence for channels [0, n):
    out[c] = bias[c] + sum_{j < K} taps[j * tapStride + c] * window_j[c], where window_0 ..
    window_{K-2} are the state's rows (state[j * stateStride + c], oldest first) and
    window_{K-1} = x[c]; then silu(out) when `silu`. The state then moves on by one token (its
    rows shift up, x becomes its last row). `taps`: the kernel transposed to K rows of channels
    (row j multiplies window_j: ggml's conv1d weight column j). `bias` may be null. `out` may
    not alias x or the state. */
CV_EXPORTS void shortConvolutionToken(const float* x, const float* taps, size_t tapStride, int K, const float* bias,
                                      float* state, size_t stateStride, int n, bool silu, float* out);

}}} // namespace cv::dnn::llm

#endif
