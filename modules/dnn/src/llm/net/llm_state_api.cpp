// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The public functions of opencv2/dnn/llm.hpp: a language model's Net state (KV cache, next
// batch) and the single-sequence helpers (which act on sequence 0).

#include "../../precomp.hpp"
#include <opencv2/dnn/llm.hpp>
#include "llm_net_state.hpp"
#include "lora_adapters.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

KVCache::~KVCache() {}

namespace {

Ptr<llm::LLMNetState> netState(Net& net, const char* caller)
{
    Ptr<llm::LLMNetState> state = llm::LLMNetState::of(net);
    if (!state)
        CV_Error(Error::StsBadArg, format("%s: the Net is not a language model (read one with readNet "
                                          "from a GGUF file or an ONNX decoder)", caller));
    return state;
}

} // namespace

Ptr<KVCache> getLLMKVCache(Net& net)
{
    return netState(net, "getLLMKVCache")->cachePtr();
}

void setLLMBatch(Net& net, const std::vector<int>& sequenceIds)
{
    netState(net, "setLLMBatch")->setNextBatch(sequenceIds, std::vector<int>());
}

void setLLMBatch(Net& net, const std::vector<int>& sequenceIds, const std::vector<int>& logitTokens)
{
    netState(net, "setLLMBatch")->setNextBatch(sequenceIds, logitTokens);
}

void resetLLMState(Net& net)
{
    Ptr<llm::LLMNetState> state = netState(net, "resetLLMState");
    state->cache().clear();
    state->resetSequenceAdapters();
}

void truncateLLMState(Net& net, int length)
{
    CV_CheckGE(length, 0, "truncateLLMState: length must not be negative");
    llm::PagedKVCache& cache = netState(net, "truncateLLMState")->cache();
    if (cache.hasSequence(0))
        cache.truncateSequence(0, length);
}

int getLLMSequenceLength(Net& net)
{
    return netState(net, "getLLMSequenceLength")->cache().getSequenceLength(0);
}

void unloadLLMAdapter(Net& net, int adapterId)
{
    llm::detachLoRAAdapter(net, adapterId);
}

void setLLMSequenceAdapters(Net& net, int sequenceId, const std::vector<int>& adapterIds, const std::vector<float>& scales)
{
    netState(net, "setLLMSequenceAdapters")->setSequenceAdapters(
        sequenceId, llm::normalizeAdapterSet(adapterIds, scales, "setLLMSequenceAdapters"));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
