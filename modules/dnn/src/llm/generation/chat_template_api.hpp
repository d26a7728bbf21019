// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_CHAT_TEMPLATE_API_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_CHAT_TEMPLATE_API_HPP

#include <opencv2/dnn/chat_template.hpp>

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Texts that end an assistant turn of a chat template, as extra stop strings: a built-in
    family's markers, or those of the family a model's template belongs to; none for other
    templates (the tokenizer's end-of-generation tokens end their turns). */
std::vector<std::string> chatTemplateStopStrings(const cv::dnn::ChatTemplate& chatTemplate);

}}} // namespace cv::dnn::llm

#endif
