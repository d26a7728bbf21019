// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "net_assembly.hpp"
#include "llm_net_state.hpp"

namespace cv {
namespace dnn {
namespace llm {

void installLLMState(Net& net, const std::vector<int>& attentionLayers, int logitRowsLayer,
                     const std::string& sourcePath, int tokenWidth)
{
    CV_Assert(!net.empty());
    if (attentionLayers.empty())
        CV_Error(Error::StsBadArg, "LLM: a language model's Net needs at least one attention layer");
    std::vector<Ptr<LLMAttentionLayer>> attention;
    for (int id : attentionLayers)
    {
        Ptr<LLMAttentionLayer> layer = net.getLayer(id).dynamicCast<LLMAttentionLayer>();
        CV_Assert(layer);
        attention.push_back(layer);
    }
    // One cache for all layers: they must agree on what a token's keys and values are.
    int context = attention[0]->maxContext();
    for (const Ptr<LLMAttentionLayer>& layer : attention)
    {
        CV_CheckEQ(layer->kvHeads(), attention[0]->kvHeads(), "LLM: attention layers differ in KV head count");
        CV_CheckEQ(layer->headDim(), attention[0]->headDim(), "LLM: attention layers differ in head size");
        context = std::min(context, layer->maxContext());
    }
    bool allLogits = false;
    Ptr<LLMLogitRowsLayer> logitRows;
    if (logitRowsLayer >= 0)
    {
        logitRows = net.getLayer(logitRowsLayer).dynamicCast<LLMLogitRowsLayer>();
        CV_Assert(logitRows);
        allLogits = logitRows->allLogits();
    }
    Ptr<PagedKVCache> cache = makePtr<PagedKVCache>((int)attention.size(), attention[0]->kvHeads(),
                                                    attention[0]->headDim(), context);
    std::vector<int> windows;
    for (const Ptr<LLMAttentionLayer>& layer : attention)
        windows.push_back(layer->slidingWindow());
    cache->setLayerWindows(windows);
    // What sequence files record as the model (kv_sequence_file.hpp): its layers (with their
    // parameters, the context among them) and a sample of its weights.
    KVModelIdentity identity = computeModelIdentity(net);
    const size_t slash = sourcePath.find_last_of("/\\");
    identity.description = (sourcePath.empty() ? std::string("a Net built by hand")
                                               : sourcePath.substr(slash == std::string::npos ? 0 : slash + 1)) +
                           format(" (context %d, ", context) + identity.description + ")";
    cache->setModelIdentity(identity);
    Ptr<LLMNetState> state = makePtr<LLMNetState>(cache, tokenWidth, allLogits, sourcePath);
    for (size_t i = 0; i < attention.size(); i++)
        attention[i]->attachState(state, (int)i);
    if (logitRows)
        logitRows->attachState(state);
    net.getImpl()->forwardPlanner = state;
}

void setLLMNonCausalSpans(Net& net, const std::vector<Range>& spans)
{
    Ptr<LLMNetState> state = LLMNetState::of(net);
    if (!state)
        CV_Error(Error::StsBadArg, "setLLMNonCausalSpans: the Net is not a language model");
    state->setNextNonCausal(spans);
}

}}} // namespace cv::dnn::llm
