// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_BATCH_GENERATION_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_BATCH_GENERATION_HPP

#include <opencv2/dnn.hpp>

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Feeds `tokens` (token i continues sequence sequenceIds[i]) and returns one row of logits per
    distinct sequence, in order of first appearance, or one per token named in `logitTokens`.
    `input`: the caller's reusable input Mat. */
Mat forwardTokens(Net& net, const std::vector<int>& tokens, const std::vector<int>& sequenceIds, Mat& input,
                  const std::vector<int>& logitTokens = std::vector<int>());

}}} // namespace cv::dnn::llm

#endif
