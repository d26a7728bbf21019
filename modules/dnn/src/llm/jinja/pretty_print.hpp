// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_PRETTY_PRINT_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_PRETTY_PRINT_HPP

#include "value.hpp"

#include <string>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! Python's pprint.pformat(value): the pprint filter.
std::string prettyFormat(const Value& value, Budget& budget);

}}}} // namespace cv::dnn::llm::jinja

#endif
