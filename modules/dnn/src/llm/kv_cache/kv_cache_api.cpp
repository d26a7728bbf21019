// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Net-level entry points of the KV cache: finding a Net's cache, planning a batch, and the
// single-sequence helpers of gguf.hpp (which act on sequence 0).

#include "../../precomp.hpp"
#include "../../net_impl.hpp"
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include "../llm_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

template <typename T>
T* findLayer(Net& net)
{
    Net::Impl* impl = net.getImpl();
    for (auto& it : impl->layers)
        if (T* layer = dynamic_cast<T*>(impl->getLayerInstance(it.second).get()))
            return layer;
    return nullptr;
}

Ptr<llm::PagedKVCache> netCache(Net& net, const char* caller)
{
    LLMAttentionLayer* attention = net.empty() ? nullptr : findLayer<LLMAttentionLayer>(net);
    if (!attention)
        CV_Error(Error::StsBadArg, format("%s: the Net has no LLM attention layer (read a language model "
                                          "with readNet or readNetFromGGUF)", caller));
    return attention->kvCache();
}

} // namespace

Ptr<KVCache> getLLMKVCache(Net& net)
{
    return netCache(net, "getLLMKVCache");
}

void setLLMBatch(Net& net, const std::vector<int>& sequenceIds)
{
    Ptr<llm::PagedKVCache> cache = netCache(net, "setLLMBatch");
    cache->setPendingBatch(sequenceIds);
    // The logit rows are part of the Net's shapes: a new count re-plans them on the next forward.
    LLMLogitRowsLayer* rows = findLayer<LLMLogitRowsLayer>(net);
    if (rows && rows->needsReplanning((int)sequenceIds.size()))
        net.getImpl()->netWasAllocated = false;
}

void resetLLMState(Net& net)
{
    netCache(net, "resetLLMState")->clear();
}

void truncateLLMState(Net& net, int length)
{
    CV_CheckGE(length, 0, "truncateLLMState: length must not be negative");
    Ptr<llm::PagedKVCache> cache = netCache(net, "truncateLLMState");
    if (cache->hasSequence(0))
        cache->truncateSequence(0, length);
}

int getLLMSequenceLength(Net& net)
{
    return netCache(net, "getLLMSequenceLength")->getSequenceLength(0);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
