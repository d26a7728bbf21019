// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "load_options.hpp"

#include <cstdlib>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

LoadOptions LoadOptions::fromEnvironment(bool allLogits, int contextLength)
{
    CV_CheckGE(contextLength, 0, "LLM: the context length must not be negative (0: the model's)");
    LoadOptions options;
    options.allLogits = allLogits;
    options.contextLength = contextLength;
    const char* v = std::getenv("OPENCV_DNN_LLM_INTEGER_DOT");
    options.integerDot = !(v && std::strcmp(v, "0") == 0);
    return options;
}

}}} // namespace cv::dnn::llm
