// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What the GGUF and ONNX builders share when they assemble a language model's Net: adding a
// layer with its inputs connected, and giving the attention layers and the logit-row layer
// one paged KV cache.

#ifndef OPENCV_DNN_SRC_LLM_NET_ASSEMBLY_HPP
#define OPENCV_DNN_SRC_LLM_NET_ASSEMBLY_HPP

#include <opencv2/dnn.hpp>
#include <vector>

#include "llm_layers.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! One output of a layer of the Net being built (layer 0: the Net's input).
struct LayerPin
{
    int layer = -1, output = 0;
};

//! Adds a layer whose inputs are `inputs`, in order; returns its first output.
inline LayerPin addConnectedLayer(Net& net, LayerParams& lp, const std::vector<LayerPin>& inputs)
{
    const int id = net.addLayer(lp.name, lp.type, lp);
    for (size_t i = 0; i < inputs.size(); i++)
        net.connect(inputs[i].layer, inputs[i].output, id, (int)i);
    return LayerPin{id, 0};
}

//! Attaches `cache` to the attention layers (the i-th as cache layer i) and the logit-row layer.
inline void attachSharedKVCache(Net& net, const Ptr<PagedKVCache>& cache, const std::vector<int>& attentionLayers,
                                int logitRowsLayer)
{
    for (size_t i = 0; i < attentionLayers.size(); i++)
        net.getLayer(attentionLayers[i]).dynamicCast<LLMAttentionLayer>()->attachKVCache(cache, (int)i);
    net.getLayer(logitRowsLayer).dynamicCast<LLMLogitRowsLayer>()->attachKVCache(cache);
}

}}} // namespace cv::dnn::llm

#endif
