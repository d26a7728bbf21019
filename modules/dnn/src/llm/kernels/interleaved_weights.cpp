// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interleaved_weights.hpp"
#include "ggml_kernels.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

bool hasInterleavedLayout(GGMLType type)
{
    return (type == GGML_Q4_0 || type == GGML_Q8_0) && hasIntegerDot(type);
}

Mat interleaveRows8(GGMLType type, const uchar* rows, size_t rowBytes, int groups, int blocks)
{
    CV_Assert(type == GGML_Q4_0 || type == GGML_Q8_0);
    const size_t blockBytes = type == GGML_Q4_0 ? 18 : 34, quantBytes = blockBytes - 2;
    const size_t groupBlockBytes = 8 * blockBytes;
    Mat packed(groups, (int)(blocks * groupBlockBytes), CV_8U);
    for (int g = 0; g < groups; g++)
    {
        uchar* dst = packed.ptr<uchar>(g);
        for (int b = 0; b < blocks; b++, dst += groupBlockBytes)
            for (int j = 0; j < 8; j++)
            {
                const uchar* block = rows + (size_t)(8 * g + j) * rowBytes + (size_t)b * blockBytes;
                std::memcpy(dst + 2 * j, block, 2);  // the float16 scale
                for (size_t c = 0; c < quantBytes / 4; c++)
                    std::memcpy(dst + 16 + 32 * c + 4 * j, block + 2 + 4 * c, 4);
            }
    }
    return packed;
}

}}} // namespace cv::dnn::llm
