// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The Net-level paged KV cache (public interface: opencv2/dnn/kv_cache.hpp) and the per-forward
// batch plan its attention layers run against (FlashInfer's plan/run split).

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_PAGED_KV_CACHE_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_PAGED_KV_CACHE_HPP

#include <opencv2/dnn/kv_cache.hpp>
#include "../kernels/rotary_embedding.hpp"

#include <map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Which sequence each token of a forward continues and where its keys and values go. Made
    once per forward (by the first attention layer) and read by every attention layer. The
    vectors keep their capacity, so a steady decode step plans without allocating. */
struct BatchPlan
{
    int tokens = 0;
    // Per token.
    std::vector<int> batchSequence;  // index into the per-sequence arrays below
    std::vector<int> position;       // position of the token in its sequence
    // Per distinct sequence of the batch, in order of first appearance.
    std::vector<int> sequenceIds;
    std::vector<const std::vector<int>*> pageTables;  // the sequences' page tables (after the plan)
    std::vector<int> lastToken;      // index of the sequence's last token in the batch
};

class PagedKVCache CV_FINAL : public KVCache
{
public:
    PagedKVCache(int layers, int kvHeads, int headDim, int maxSequenceLength, int pageSize = 16);
    ~PagedKVCache();

    // KVCache
    int getPageSize() const CV_OVERRIDE { return pageSize_; }
    int getMaxSequenceLength() const CV_OVERRIDE { return maxSequenceLength_; }
    size_t getBytesPerToken() const CV_OVERRIDE { return (size_t)layers_ * 2 * kvHeads_ * headRowBytes_; }
    void setMemoryBudget(size_t bytes) CV_OVERRIDE;
    size_t getMemoryBudget() const CV_OVERRIDE { return (size_t)maxPages_ * pageBytes_; }
    void setStorageType(int type) CV_OVERRIDE;
    int getStorageType() const CV_OVERRIDE { return storageType_; }
    std::vector<int> getSequenceIds() const CV_OVERRIDE;
    bool hasSequence(int sequenceId) const CV_OVERRIDE;
    int getSequenceLength(int sequenceId) const CV_OVERRIDE;
    void removeSequence(int sequenceId) CV_OVERRIDE;
    void truncateSequence(int sequenceId, int length) CV_OVERRIDE;
    void forkSequence(int sourceId, int destinationId) CV_OVERRIDE;
    void discardTokens(int sequenceId, int first, int count) CV_OVERRIDE;
    void clear() CV_OVERRIDE;
    int getPagesInUse() const CV_OVERRIDE { return (int)pages_.size() - (int)freePages_.size(); }
    int getPagesFree() const CV_OVERRIDE { return maxPages_ - getPagesInUse(); }
    int getPagesShared() const CV_OVERRIDE;

    int layers() const { return layers_; }
    int kvHeads() const { return kvHeads_; }
    int headDim() const { return headDim_; }

    //! An attention layer registers its rotary embedding, used to re-rotate keys on discardTokens().
    void setLayerRotary(int layer, const RotaryEmbedding& rope);

    //! The plan for the next forward (setLLMBatch()).
    void setPendingBatch(const std::vector<int>& sequenceIds);
    //! Logit rows the next forward of `tokens` tokens returns (one per sequence, or every token).
    int plannedOutputRows(int tokens, bool allLogits) const;

    /** Plans a forward of `tokens` tokens: the pending batch or, without one, all tokens to
        sequence 0. Reserves their slots (sequences grow; shared partly filled pages are copied
        first). Checks the context and the budget before changing anything. */
    const BatchPlan& beginForward(int tokens);
    const BatchPlan& plan() const { return plan_; }

    //! Stores the keys and values (kvHeads * headDim floats each) of token `t` of the plan.
    void store(int layer, int t, const float* key, const float* value);
    /** Keys or values of the first `count` slots of a page for one KV head, as float rows of
        headDim with stride `*stride`: points into the page (float32 storage) or decodes into
        `buffer` (pageSize * headDim floats). */
    const float* rows(int layer, bool values, int page, int kvHead, int count, float* buffer, size_t* stride) const;

private:
    struct Sequence
    {
        std::vector<int> pages;
        int length = 0;
    };

    // A page holds, for each layer, keys then values, for each KV head its pageSize rows of
    // headDim elements: one head's rows are contiguous, as attention reads them.
    uchar* headRow(int page, int layer, bool values, int kvHead, int slot) const
    {
        return pages_[page] + ((((size_t)layer * 2 + (values ? 1 : 0)) * kvHeads_ + kvHead) * pageSize_ + slot) * headRowBytes_;
    }
    void encodeHead(const float* src, uchar* dst) const;
    void decodeHead(const uchar* src, float* dst) const;
    int takePage();
    void releasePage(int page);
    void copyPage(int from, int to, int slots);
    void checkId(int sequenceId, const char* what) const;
    Sequence& sequence(int sequenceId, const char* what);
    void computeRowBytes();

    int layers_, kvHeads_, headDim_, maxSequenceLength_, pageSize_;
    int storageType_ = CV_32F;
    size_t headRowBytes_ = 0, pageBytes_ = 0;
    int maxPages_ = 0;
    std::vector<uchar*> pages_;      // allocated pages (never moved or freed before the cache)
    std::vector<int> refCount_;      // sequences using each page (0: free)
    std::vector<int> freePages_;
    std::map<int, Sequence> sequences_;
    std::vector<RotaryEmbedding> rotary_;  // per layer (empty when unknown)
    std::vector<int> pending_;
    bool hasPending_ = false;
    BatchPlan plan_;
    std::vector<int> newTokens_;     // scratch of beginForward: new tokens per batch sequence
    std::vector<int> cowPages_;      // scratch of beginForward: shared pages counted for copying
};

}}} // namespace cv::dnn::llm

#endif
