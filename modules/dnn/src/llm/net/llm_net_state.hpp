// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The state a language model's Net carries between forwards: its paged KV cache and the plan
// of each forward. The Net calls planForward() before it plans its buffers (patch 0009), so a
// forward's plan exists before any layer runs; the layers only read it.

#ifndef OPENCV_DNN_SRC_LLM_NET_LLM_NET_STATE_HPP
#define OPENCV_DNN_SRC_LLM_NET_LLM_NET_STATE_HPP

#include "../../net_impl.hpp"
#include "../kv_cache/batch_planner.hpp"
#include "../kv_cache/paged_kv_cache.hpp"
#include "lora_adapter.hpp"

#include <memory>

namespace cv {
namespace dnn {
namespace llm {

class LLMNetState CV_FINAL : public Net::Impl::ForwardPlanner
{
public:
    /** @param cache the Net's KV cache.
        @param tokenWidth elements of the Net's first input per token (1 for token ids).
        @param allLogits whether a forward returns every token's logits (else one row per sequence).
        @param sourcePath the model file the Net was read from ("" for a Net built by hand). */
    LLMNetState(const Ptr<PagedKVCache>& cache, int tokenWidth, bool allLogits, const std::string& sourcePath);

    //! The state of a Net assembled with one (net_assembly.hpp), or nullptr.
    static Ptr<LLMNetState> of(Net& net);

    PagedKVCache& cache() { return *cache_; }
    const Ptr<PagedKVCache>& cachePtr() const { return cache_; }
    //! The model file the Net was read from: TextGenerationModel(net) finds the tokenizer there.
    const std::string& sourcePath() const { return sourcePath_; }
    //! The plan of the forward being run (or of the last one).
    const BatchPlan& plan() const { return planner_.current(); }

    //! setLLMBatch(): the sequence of each token of the next forward.
    void setNextBatch(const std::vector<int>& sequenceIds, const std::vector<int>& logitTokens)
    {
        planner_.setNextBatch(sequenceIds, logitTokens);
    }

    //! The next forward's non-causal spans (BatchPlanner::setNextNonCausal).
    void setNextNonCausal(const std::vector<Range>& spans) { planner_.setNextNonCausal(spans); }

    //! Rows of logits a forward of `tokens` tokens returns: those of the plan when it is for `tokens` tokens.
    int outputRows(int tokens) const;

    //! Net::Impl::ForwardPlanner: plans the forward of `inputs`; true when the logit rows change.
    bool planForward(const std::vector<Mat>& inputs) CV_OVERRIDE;

    //! The GGUF architecture of the model ("" when it did not come from a GGUF file): an adapter must name it.
    void setArchitecture(const std::string& architecture) { architecture_ = architecture; }
    const std::string& architecture() const { return architecture_; }

    // LoRA adapters (lora_adapters.cpp attaches them to the layers). The state owns an adapter's
    // pairs; the layers point into them until removeAdapter().
    //! Keeps an adapter and returns its id (0, 1, ... never reused).
    int addAdapter(std::unique_ptr<LoRAAdapter> adapter);
    //! Forgets an adapter (after its layers dropped it) and the sequences' uses of it.
    void removeAdapter(int id);
    const LoRAAdapter* adapter(int id) const;
    std::vector<int> adapterIds() const;
    //! Throws naming `caller` when a set names an adapter that is not loaded.
    void checkAdapterSet(const AdapterSet& set, const char* caller) const;
    /** The adapters a sequence's tokens run with from the next forward on (an empty set: none).
        The set stays with the sequence id until set again or the cache is reset (resetAdapters). */
    void setSequenceAdapters(int sequenceId, const AdapterSet& set);
    const AdapterSet& sequenceAdapters(int sequenceId) const;
    //! Every sequence runs without adapters.
    void resetSequenceAdapters() { sequenceAdapters_.clear(); planAdapters_.clear(); }
    /** Per sequence of the planned forward (BatchPlan::sequenceIds): its adapters, or nullptr
        without. Empty when no sequence of the forward has any. */
    const std::vector<const AdapterSet*>& planAdapters() const { return planAdapters_; }

private:
    void planAdapterSets();

    Ptr<PagedKVCache> cache_;
    BatchPlanner planner_;
    int tokenWidth_;
    bool allLogits_;
    std::string sourcePath_;
    int plannedRows_ = -1;  // logit rows of the last plan (the Net's shapes were made for them)
    std::string architecture_;
    std::map<int, std::unique_ptr<LoRAAdapter>> adapters_;
    int nextAdapterId_ = 0;
    std::map<int, AdapterSet> sequenceAdapters_;   // sequences with a non-empty set
    std::vector<const AdapterSet*> planAdapters_;
};

}}} // namespace cv::dnn::llm

#endif
