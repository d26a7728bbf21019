// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "short_convolution.hpp"
#include "../kernels/elementwise_kernels.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

// Channels are independent: the loops run over channels innermost, which the compiler
// vectorizes; the sums take the taps in order, as ggml_ssm_conv does.
void shortConvolutionToken(const float* x, const float* taps, size_t tapStride, int K, const float* bias,
                           float* state, size_t stateStride, int n, bool silu, float* out)
{
    CV_DbgAssert(K >= 2);
    for (int c = 0; c < n; c++)
        out[c] = 0.f;
    for (int j = 0; j < K - 1; j++)
    {
        const float* w = taps + (size_t)j * tapStride;
        const float* s = state + (size_t)j * stateStride;
        for (int c = 0; c < n; c++)
            out[c] += w[c] * s[c];
    }
    const float* wLast = taps + (size_t)(K - 1) * tapStride;
    for (int c = 0; c < n; c++)
        out[c] += wLast[c] * x[c];
    if (bias)
        for (int c = 0; c < n; c++)
            out[c] += bias[c];
    if (silu)
        siluRange(out, nullptr, out, 0, n);  // the dispatched SiLU (a vector exp within ~2e-7 of expf)
    for (int j = 0; j + 1 < K - 1; j++)
        std::memcpy(state + (size_t)j * stateStride, state + (size_t)(j + 1) * stateStride, n * sizeof(float));
    std::memcpy(state + (size_t)(K - 2) * stateStride, x, n * sizeof(float));
}

}}} // namespace cv::dnn::llm
