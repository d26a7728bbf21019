// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "../../net_impl.hpp"
#include "net_assembly.hpp"
#include "llm_net_state.hpp"
#include "llm_state_layers.hpp"
#include "../kv_cache/kv_sequence_file.hpp"

#include <sstream>

namespace cv {
namespace dnn {
namespace llm {

namespace {

void hashString(uint64& h, const std::string& s)
{
    h = kvChecksum(s.data(), s.size(), h ^ s.size());
}

void hashValue(uint64& h, uint64 v)
{
    h = kvChecksum(&v, sizeof(v), h);
}

/** What sequence files record as the model (kv_sequence_file.hpp): a hash of the Net's layers
    (type, name, every parameter, the shape and type of every weight blob) and one of a sample of
    every weight blob's bytes (all of a small blob; 3 windows of 64 bytes of a large one), so that
    another model of the same shape is told apart without reading all of its weights. */
KVModelIdentity computeModelIdentity(const Net& net)
{
    KVModelIdentity id;
    CV_Assert(!net.empty());
    uint64 layout = 0x6c61796f7574ULL, weights = 0x77656967687473ULL;
    size_t blobs = 0, blobBytes = 0;
    const Net::Impl* impl = net.getImpl();
    for (const auto& entry : impl->layers)
    {
        const LayerData& ld = entry.second;
        hashValue(layout, (uint64)entry.first);
        hashString(layout, ld.type);
        hashString(layout, ld.name);
        for (const auto& kv : ld.params)
        {
            std::ostringstream value;
            value << kv.second;
            hashString(layout, kv.first);
            hashString(layout, value.str());
        }
        for (const Mat& m : ld.params.blobs)
        {
            hashValue(layout, (uint64)m.type());
            hashValue(layout, (uint64)m.dims);
            for (int d = 0; d < m.dims; d++)
                hashValue(layout, (uint64)m.size[d]);
            if (m.empty())
                continue;
            blobs++;
            // A continuous blob is sampled over its whole length; another over its first row.
            const size_t bytes = m.isContinuous() ? m.total() * m.elemSize() : m.step[0];
            blobBytes += m.total() * m.elemSize();
            const uchar* p = m.ptr();
            const size_t window = 64;
            if (bytes <= 4 * window)
                weights = kvChecksum(p, bytes, weights);
            else
            {
                weights = kvChecksum(p, window, weights);
                weights = kvChecksum(p + (bytes / 2 - window / 2), window, weights);
                weights = kvChecksum(p + (bytes - window), window, weights);
            }
        }
    }
    id.layout = layout;
    id.weights = weights;
    id.description = format("%zu Net layers, %zu weight blobs of %.1f MB", impl->layers.size(), blobs,
                             blobBytes / 1048576.0);
    return id;
}

} // namespace

void installLLMState(Net& net, const std::vector<int>& attentionLayers, int logitRowsLayer,
                     const std::string& sourcePath, int tokenWidth)
{
    CV_Assert(!net.empty());
    if (attentionLayers.empty())
        CV_Error(Error::StsBadArg, "LLM: a language model's Net needs at least one attention layer");
    std::vector<Ptr<KVCacheUser>> attention;
    for (int id : attentionLayers)
    {
        Ptr<KVCacheUser> layer = net.getLayer(id).dynamicCast<KVCacheUser>();
        CV_Assert(layer);
        attention.push_back(layer);
    }
    // One cache for all layers: they must agree on what a token's keys and values are.
    int context = attention[0]->maxContext();
    for (const Ptr<KVCacheUser>& layer : attention)
    {
        CV_CheckEQ(layer->kvHeads(), attention[0]->kvHeads(), "LLM: attention layers differ in KV head count");
        CV_CheckEQ(layer->headDim(), attention[0]->headDim(), "LLM: attention layers differ in head size");
        context = std::min(context, layer->maxContext());
    }
    bool allLogits = false;
    Ptr<LogitRowsSelector> logitRows;
    if (logitRowsLayer >= 0)
    {
        logitRows = net.getLayer(logitRowsLayer).dynamicCast<LogitRowsSelector>();
        CV_Assert(logitRows);
        allLogits = logitRows->allLogits();
    }
    Ptr<PagedKVCache> cache = makePtr<PagedKVCache>((int)attention.size(), attention[0]->kvHeads(),
                                                    attention[0]->headDim(), context);
    std::vector<int> windows;
    for (const Ptr<KVCacheUser>& layer : attention)
        windows.push_back(layer->slidingWindow());
    cache->setLayerWindows(windows);
    // Recurrent layers (hybrid models), in the Net's order: a state block per sequence.
    std::vector<Ptr<RecurrentStateUser>> recurrent;
    std::vector<size_t> stateFloats;
    for (const auto& entry : net.getImpl()->layers)
    {
        if (entry.first == 0)
            continue;  // the input layer
        Ptr<RecurrentStateUser> layer = net.getLayer(entry.first).dynamicCast<RecurrentStateUser>();
        if (layer)
        {
            recurrent.push_back(layer);
            stateFloats.push_back(layer->stateFloats());
        }
    }
    cache->setRecurrentLayers(stateFloats);
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
    for (size_t i = 0; i < recurrent.size(); i++)
        recurrent[i]->attachState(state, (int)i);
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
