// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The Net-level paged KV cache (public interface: opencv2/dnn/kv_cache.hpp): a pool of pages
// and a table of sequences (llama.cpp's cells). How a forward's tokens are placed is the batch
// planner's job (batch_planner.hpp); how a row is stored, the codec's (kv_storage_codec.hpp).

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_PAGED_KV_CACHE_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_PAGED_KV_CACHE_HPP

#include <opencv2/dnn/kv_cache.hpp>
#include "kv_storage_codec.hpp"

#include <map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Moves a stored key to another position: the rotary embedding of an attention layer, which
    discardTokens() needs (keys carry their position's rotation; values do not). */
class KeyPositionShift
{
public:
    virtual ~KeyPositionShift() {}
    //! Turns one key row (headDim floats of one KV head) by `delta` positions.
    virtual void shift(float* keyRow, int delta) const = 0;
};

class PagedKVCache CV_FINAL : public KVCache
{
public:
    PagedKVCache(int layers, int kvHeads, int headDim, int maxSequenceLength, int pageSize = 16);
    ~PagedKVCache();

    // KVCache
    int getPageSize() const CV_OVERRIDE { return pageSize_; }
    int getMaxSequenceLength() const CV_OVERRIDE { return maxSequenceLength_; }
    size_t getBytesPerToken() const CV_OVERRIDE { return (size_t)layers_ * 2 * kvHeads_ * codec_.rowBytes(); }
    void setMemoryBudget(size_t bytes) CV_OVERRIDE;
    size_t getMemoryBudget() const CV_OVERRIDE { return (size_t)maxPages_ * pageBytes_; }
    void setStorageType(int type) CV_OVERRIDE;
    int getStorageType() const CV_OVERRIDE { return codec_.type(); }
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

    //! Each attention layer gives the shift of its keys (its rotary embedding) for discardTokens().
    void setKeyPositionShift(int layer, const Ptr<const KeyPositionShift>& shift);

    /** Grows sequences sequenceIds[i] by newTokens[i] slots (a sequence that does not exist
        starts empty; a shared, partly filled last page is copied first) and gives their page
        tables. The context of every sequence and the memory budget are checked before
        anything changes. */
    void reserve(const std::vector<int>& sequenceIds, const std::vector<int>& newTokens,
                 std::vector<const std::vector<int>*>& pageTables);

    //! Stores the keys and values (kvHeads * headDim floats each) of one token at `position` of a page table.
    void store(int layer, const std::vector<int>& pageTable, int position, const float* key, const float* value);
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
        return pages_[page] + ((((size_t)layer * 2 + (values ? 1 : 0)) * kvHeads_ + kvHead) * pageSize_ + slot) * codec_.rowBytes();
    }
    int takePage();
    void releasePage(int page);
    void copyPage(int from, int to, int slots);
    void unsharePage(int& page, int slots);
    void checkId(int sequenceId, const char* what) const;
    Sequence& sequence(int sequenceId, const char* what);
    void setCodec(int type);

    int layers_, kvHeads_, headDim_, maxSequenceLength_, pageSize_;
    KVStorageCodec codec_;
    size_t pageBytes_ = 0;
    int maxPages_ = 0;
    std::vector<uchar*> pages_;      // allocated pages (never moved or freed before the cache)
    std::vector<int> refCount_;      // sequences using each page (0: free)
    std::vector<int> freePages_;
    std::map<int, Sequence> sequences_;
    std::vector<Ptr<const KeyPositionShift>> keyShift_;  // per layer
    std::vector<int> cowPages_;      // reserve()'s scratch: shared pages counted for copying
};

}}} // namespace cv::dnn::llm

#endif
