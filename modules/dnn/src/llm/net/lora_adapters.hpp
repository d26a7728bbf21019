// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// LoRA adapters on a Net: attached to its matmul layers, kept by its state (llm_net_state.hpp).

#ifndef OPENCV_DNN_SRC_LLM_NET_LORA_ADAPTERS_HPP
#define OPENCV_DNN_SRC_LLM_NET_LORA_ADAPTERS_HPP

#include "llm_net_state.hpp"
#include "lora_adapter.hpp"

#include <memory>

namespace cv {
namespace dnn {
namespace llm {

/** Gives the Net's matmul layers the adapter's pairs, after checking that it fits the model
    (architecture, a projection for each tensor, shapes); returns its id. A refused adapter
    leaves the Net as it was. */
CV_EXPORTS int attachLoRAAdapter(Net& net, std::unique_ptr<LoRAAdapter> adapter);
//! Removes an adapter from the layers and the state (and from every sequence's set).
CV_EXPORTS void detachLoRAAdapter(Net& net, int id);

}}} // namespace cv::dnn::llm

#endif
