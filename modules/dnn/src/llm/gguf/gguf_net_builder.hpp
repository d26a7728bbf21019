// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GGUF_GGUF_NET_BUILDER_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_GGUF_NET_BUILDER_HPP

#include "gguf_model_file.hpp"
#include "../net/load_options.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! The Net of an already parsed GGUF file (readNetFromGGUF() parses, then calls this).
Net buildNetFromGGUF(const GGUFModelFile& file, const LoadOptions& options);

}}} // namespace cv::dnn::llm

#endif
