// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What the GGUF and ONNX builders share when they assemble a language model's Net: adding a
// layer with its inputs connected, and installing the Net's LLM state (KV cache and forward plan).

#ifndef OPENCV_DNN_SRC_LLM_NET_NET_ASSEMBLY_HPP
#define OPENCV_DNN_SRC_LLM_NET_NET_ASSEMBLY_HPP

#include <opencv2/dnn.hpp>
#include <string>
#include <vector>

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

/** Makes `net` a language model's Net: one paged KV cache for its attention layers (the i-th of
    `attentionLayers` is cache layer i, sized from the layers' KV heads, head size and context)
    and the state that plans each forward before it runs (llm_net_state.hpp), read by the
    attention layers and the logit-row layer (`logitRowsLayer`, or -1 for none).
    `sourcePath`: the model file (TextGenerationModel(net) reads the tokenizer from it).
    `tokenWidth`: elements of the Net's first input per token (1 for token ids). Exported for
    the tests that build such a Net by hand. */
CV_EXPORTS void installLLMState(Net& net, const std::vector<int>& attentionLayers, int logitRowsLayer,
                                const std::string& sourcePath, int tokenWidth = 1);

/** The next forward's non-causal spans (token ranges of its batch whose tokens attend to each
    other both ways, BatchPlanner::setNextNonCausal): libmtmd's Gemma 3 images. Exported for the
    tests; TextGenerationModel sets them for its prompts' images. */
CV_EXPORTS void setLLMNonCausalSpans(Net& net, const std::vector<Range>& spans);

}}} // namespace cv::dnn::llm

#endif
