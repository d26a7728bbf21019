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
#include "kv_sequence_file.hpp"
#include "recurrent_state_store.hpp"

#include "batch_plan.hpp"

#include <algorithm>
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
    size_t getMemoryBudget() const CV_OVERRIDE { return budget_; }
    size_t getBytesInUse() const CV_OVERRIDE;
    void setStorageType(int type) CV_OVERRIDE;
    int getStorageType() const CV_OVERRIDE { return codec_.type(); }
    std::vector<int> getSequenceIds() const CV_OVERRIDE;
    bool hasSequence(int sequenceId) const CV_OVERRIDE;
    int getSequenceLength(int sequenceId) const CV_OVERRIDE;
    int getResumableLength(int sequenceId, int length) const CV_OVERRIDE;
    void removeSequence(int sequenceId) CV_OVERRIDE;
    void truncateSequence(int sequenceId, int length) CV_OVERRIDE;
    void forkSequence(int sourceId, int destinationId) CV_OVERRIDE;
    void discardTokens(int sequenceId, int first, int count) CV_OVERRIDE;
    void clear() CV_OVERRIDE;
    int getPagesInUse() const CV_OVERRIDE;
    int getPagesFree() const CV_OVERRIDE;
    int getPagesShared() const CV_OVERRIDE;
    void saveSequence(int sequenceId, const String& path, const std::vector<int>& tokens) const CV_OVERRIDE;
    int loadSequence(const String& path, int sequenceId, std::vector<int>& tokens) CV_OVERRIDE;
    size_t getRecurrentStateBytes() const CV_OVERRIDE { return recurrent_.bytesPerState(); }
    void setRecurrentCheckpoints(int maxCheckpoints, int interval) CV_OVERRIDE;

    int layers() const { return layers_; }
    int kvHeads() const { return kvHeads_; }
    int headDim() const { return headDim_; }

    /** Sliding-window attention: layer l attends only to its last windows[l] positions (the
        token itself included; 0: all). Layers of each window size keep their keys and values
        in a page group of their own, whose pages go back to the pool once no token that can
        still come attends to them (llama.cpp's SWA cache). Only while the cache is empty. */
    void setLayerWindows(const std::vector<int>& windows);
    int layerWindow(int layer) const { return groups_[layerGroup_[layer]].window; }
    //! The page group holding a layer's keys and values: the index into BatchPlan::pageTables.
    int layerGroup(int layer) const { return layerGroup_[layer]; }
    int pageGroups() const { return (int)groups_.size(); }
    //! The longest sliding window of the layers (0: none).
    int largestWindow() const
    {
        int w = 0;
        for (const PageGroup& g : groups_)
            w = std::max(w, g.window);
        return w;
    }

    /** Recurrent layers (short convolutions, delta nets, scans): the floats of each one's state
        per sequence (recurrent_state_store.hpp). Only while the cache is empty; the default
        budget grows by 16 sequences' states and checkpoints. */
    void setRecurrentLayers(const std::vector<size_t>& floatsPerLayer);
    const RecurrentStateStore& recurrentStates() const { return recurrent_; }

    //! Each attention layer gives the shift of its keys (its rotary embedding) for discardTokens().
    void setKeyPositionShift(int layer, const Ptr<const KeyPositionShift>& shift);

    /** Grows sequences sequenceIds[i] by newTokens[i] slots (a sequence that does not exist
        starts empty; a shared, partly filled last page is copied first) and gives their page
        tables, pageTables[group][i]. Pages of sliding-window groups that the new tokens no
        longer attend to are released first. The context of every sequence and the memory
        budget are checked before anything else changes. */
    void reserve(const std::vector<int>& sequenceIds, const std::vector<int>& newTokens,
                 std::vector<std::vector<const std::vector<int>*>>& pageTables, size_t extraBytes = 0);
    /** reserve() for a plan (its sequences, new tokens and each sequence's tokens made): fills
        its page tables and, with recurrent layers, its states and the checkpoints it takes
        (`namedLogits`: the batch named its logit tokens), all within the budget. */
    void reserve(BatchPlan& plan, bool namedLogits);

    //! Stores the keys and values (kvHeads * headDim floats each) of one token at `position` of
    //! the page table of the layer's group.
    void store(int layer, const std::vector<int>& pageTable, int position, const float* key, const float* value);
    /** Keys or values of the first `count` slots of a page of the layer's group for one KV
        head, as float rows of headDim with stride `*stride`: points into the page (float32
        storage) or decodes into `buffer` (pageSize * headDim floats). */
    const float* rows(int layer, bool values, int page, int kvHead, int count, float* buffer, size_t* stride) const;
    /** The same rows in place when they are stored in half precision (stride `*stride`
        elements), for attention kernels that read them directly; nullptr otherwise. */
    const hfloat* halfRows(int layer, bool values, int page, int kvHead, size_t* stride) const
    {
        if (codec_.type() != CV_16F)
            return nullptr;
        *stride = codec_.rowBytes() / sizeof(hfloat);
        return reinterpret_cast<const hfloat*>(headRow(layerGroup_[layer], page, layer, values, kvHead, 0));
    }
    /** The same rows in place when they are stored in 8 bits (stride `*stride` bytes; a row is
        headDim int8 elements, then its float scale), for the attention kernels; nullptr otherwise. */
    const schar* int8Rows(int layer, bool values, int page, int kvHead, size_t* stride) const
    {
        if (codec_.type() != CV_8S)
            return nullptr;
        *stride = codec_.rowBytes();
        return reinterpret_cast<const schar*>(headRow(layerGroup_[layer], page, layer, values, kvHead, 0));
    }

    /** Whether page b's rows directly follow page a's in memory, for every layer, K/V and KV
        head of the group (consecutive pages of a slab): attention reads both in one run. */
    bool pagesAdjacent(int group, int a, int b) const
    {
        const PageAddress &pa = groups_[group].pages[a], &pb = groups_[group].pages[b];
        return pb.rows == pa.rows + (size_t)pageSize_ * codec_.rowBytes() && pb.headStride == pa.headStride;
    }

    // Sequence files (kv_sequence_file.cpp).
    //! The identity of the Net whose cache this is (net_assembly.cpp sets it); sequence files record it.
    void setModelIdentity(const KVModelIdentity& identity) { identity_ = identity; }
    const KVModelIdentity& modelIdentity() const { return identity_; }
    //! saveSequence() with opaque `extra` bytes (a session's conversation) in the file.
    void saveSequence(int sequenceId, const String& path, const std::vector<int>& tokens,
                      const std::vector<uchar>& extra) const;
    /** loadSequence() of a file checked already (readKVSequenceFile()): replaces the sequence
        only when everything fits (model, context, budget); nothing changes otherwise. */
    void loadSequence(const KVSequenceFile& file, const std::string& path, int sequenceId);

private:
    // The pages of the layers that share a window size. A page holds, for each of the group's
    // layers, keys then values, for each KV head pageSize rows of headDim elements. Pages live
    // in slabs of up to kSlabPages pages, laid out by (layer, keys or values, KV head) first and
    // page second: a run of (layer, K/V, head) rows of consecutive pages of a slab is contiguous
    // memory, so attention, which reads one layer's head over a sequence's pages, streams it
    // (pages holding all layers side by side made it jump every pageSize rows, where hardware
    // prefetchers stop). Free pages are taken lowest first, so a growing sequence's pages follow
    // each other.
    struct PageAddress
    {
        uchar* rows;        // the page's first (layer, K/V, head) run in its slab
        size_t headStride;  // bytes from one (layer, K/V, head) run of the slab to the next
    };
    struct PageGroup
    {
        int window = 0;          // 0: the whole context
        int layers = 0;
        size_t pageBytes = 0;
        std::vector<uchar*> slabs;         // allocations (kept until freeAllPages())
        std::vector<PageAddress> pages;    // per page
        std::vector<int> refCount;         // sequences using each page (0: free)
        std::vector<int> freePages;        // a min-heap (std::greater)
        int inUse() const { return (int)pages.size() - (int)freePages.size(); }
    };
    static const int kSlabPages = 16;
    static const int kReleased = -1;  // a page-table entry whose positions left the window
    struct Sequence
    {
        std::vector<std::vector<int>> pages;  // per group, one entry per pageSize positions
        int length = 0;
        // Per group, the first position whose rows the sequence holds (a loaded window group
        // holds only what the file saved; its first page's earlier slots are zeros).
        std::vector<int> firstHeld;
    };

    uchar* headRow(int group, int page, int layer, bool values, int kvHead, int slot) const
    {
        const PageAddress& a = groups_[group].pages[page];
        return a.rows + (((size_t)layerSlot_[layer] * 2 + (values ? 1 : 0)) * kvHeads_ + kvHead) * a.headStride +
               (size_t)slot * codec_.rowBytes();
    }
    //! Calls f(layer, values, kvHead) for each (layer, K/V, KV head) run of the group's pages.
    template <typename F>
    void forEachRun(int group, F f) const
    {
        for (int l = 0; l < layers_; l++)
            if (layerGroup_[l] == group)
                for (int v = 0; v < 2; v++)
                    for (int h = 0; h < kvHeads_; h++)
                        f(l, v == 1, h);
    }
    int pagesFor(int positions) const { return (positions + pageSize_ - 1) / pageSize_; }
    //! The first position a token appended at `length` attends to in a group.
    int firstAttended(int group, int length) const
    {
        const int w = groups_[group].window;
        return w > 0 ? std::max(0, length - w + 1) : 0;
    }
    size_t fullPageBytes() const;  // a page's worth of tokens in every layer
    bool resumable(const Sequence& s, int length) const;
    void releaseOutOfWindow(Sequence& s, int length);
    void shrink(Sequence& s, int length);
    Sequence newSequence() const;
    void addSlab(int group);
    int takePage(int group);
    void releasePage(int group, int page);
    void copyPage(int group, int from, int to, int slots);
    void clearPage(int group, int page);
    void unsharePage(int group, int& page, int slots);
    void checkId(int sequenceId, const char* what) const;
    Sequence& sequence(int sequenceId, const char* what);
    void freeAllPages();
    void setCodec(int type);

    int layers_, kvHeads_, headDim_, maxSequenceLength_, pageSize_;
    KVStorageCodec codec_;
    size_t budget_ = 0;               // whole pages of every layer
    std::vector<PageGroup> groups_;
    std::vector<int> layerGroup_, layerSlot_;  // per layer: its group and its place in the group's pages
    std::map<int, Sequence> sequences_;
    std::vector<Ptr<const KeyPositionShift>> keyShift_;  // per layer
    std::vector<std::pair<int, int>> cowPages_;  // reserve()'s scratch: (group, shared page) counted for copying
    KVModelIdentity identity_;  // of the Net whose cache this is (sequence files)
    RecurrentStateStore recurrent_;
    std::vector<int> lengthsBefore_;  // reserve()'s scratch
};

}}} // namespace cv::dnn::llm

#endif
