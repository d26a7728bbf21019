// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "paged_kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

PagedKVCache::PagedKVCache(int layers, int kvHeads, int headDim, int maxSequenceLength, int pageSize)
    : layers_(layers), kvHeads_(kvHeads), headDim_(headDim),
      maxSequenceLength_(maxSequenceLength), pageSize_(pageSize), codec_(CV_32F, std::max(headDim, 1))
{
    CV_CheckGT(layers, 0, "KVCache: layer count must be positive");
    CV_CheckGT(kvHeads, 0, "KVCache: KV head count must be positive");
    CV_CheckGT(headDim, 0, "KVCache: head size must be positive");
    CV_CheckGT(maxSequenceLength, 0, "KVCache: context length must be positive");
    CV_CheckGT(pageSize, 0, "KVCache: page size must be positive");
    keyShift_.resize(layers);
    setLayerWindows(std::vector<int>(layers, 0));
    // Default budget: the model's context or 4096 tokens, whichever is more (llama.cpp's
    // default context), in every layer; pages are only allocated as sequences grow.
    const int64 pages = std::min<int64>(INT_MAX / 2, pagesFor(std::max(maxSequenceLength, 4096)));
    budget_ = (size_t)pages * fullPageBytes();
}

void PagedKVCache::setLayerWindows(const std::vector<int>& windows)
{
    CV_CheckEQ((int)windows.size(), layers_, "KVCache: one window per layer");
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: sliding windows can only be set while the cache is empty");
    freeAllPages();
    const size_t budget = budget_;
    const size_t oldFull = groups_.empty() ? 0 : fullPageBytes();
    groups_.clear();
    layerGroup_.assign(layers_, -1);
    layerSlot_.assign(layers_, 0);
    // A window as long as the context is none. Sorted sizes: group 0 holds the full-context
    // layers when there are any.
    std::vector<int> window(windows);
    for (int& w : window)
    {
        CV_CheckGE(w, 0, "KVCache: a sliding window must not be negative");
        w = w >= maxSequenceLength_ ? 0 : w;
    }
    std::vector<int> sizes(window);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (int w : sizes)
    {
        PageGroup g;
        g.window = w;
        for (int l = 0; l < layers_; l++)
            if (window[l] == w)
            {
                layerGroup_[l] = (int)groups_.size();
                layerSlot_[l] = g.layers++;
            }
        groups_.push_back(g);
    }
    setCodec(codec_.type());
    if (oldFull > 0)
        budget_ = budget / oldFull * fullPageBytes();
}

void PagedKVCache::setCodec(int type)
{
    codec_ = KVStorageCodec(type, headDim_);
    for (PageGroup& g : groups_)
        g.pageBytes = (size_t)g.layers * 2 * kvHeads_ * pageSize_ * codec_.rowBytes();
}

size_t PagedKVCache::fullPageBytes() const
{
    size_t bytes = 0;
    for (const PageGroup& g : groups_)
        bytes += g.pageBytes;
    return bytes;
}

void PagedKVCache::freeAllPages()
{
    for (PageGroup& g : groups_)
    {
        for (uchar* slab : g.slabs)
            fastFree(slab);
        g.slabs.clear();
        g.pages.clear();
        g.refCount.clear();
        g.freePages.clear();
    }
}

PagedKVCache::~PagedKVCache()
{
    freeAllPages();
}

size_t PagedKVCache::getBytesInUse() const
{
    size_t bytes = recurrent_.bytesInUse();
    for (const PageGroup& g : groups_)
        bytes += (size_t)g.inUse() * g.pageBytes;
    return bytes;
}

int PagedKVCache::getPagesInUse() const
{
    int n = 0;
    for (const PageGroup& g : groups_)
        n += g.inUse();
    return n;
}

int PagedKVCache::getPagesFree() const
{
    return (int)((budget_ - std::min(budget_, getBytesInUse())) / fullPageBytes());
}

int PagedKVCache::getPagesShared() const
{
    int n = 0;
    for (const PageGroup& g : groups_)
        for (int c : g.refCount)
            n += c > 1;
    return n;
}

void PagedKVCache::setMemoryBudget(size_t bytes)
{
    const size_t full = fullPageBytes();
    const size_t budget = std::min<size_t>(bytes / full, INT_MAX / 2) * full;
    if (budget < getBytesInUse())
        CV_Error(Error::StsBadArg, format("KVCache: a budget of %zu bytes holds %zu pages; %zu bytes (%d pages) are in use",
                                          bytes, bytes / full, getBytesInUse(), getPagesInUse()));
    budget_ = budget;
}

void PagedKVCache::setStorageType(int type)
{
    KVStorageCodec(type, headDim_);  // checks the type
    if (type == codec_.type())
        return;
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: the storage type can only change while the cache is empty");
    const size_t pages = budget_ / fullPageBytes();
    freeAllPages();
    setCodec(type);
    budget_ = pages * fullPageBytes();
}

std::vector<int> PagedKVCache::getSequenceIds() const
{
    std::vector<int> ids;
    for (const auto& s : sequences_)
        ids.push_back(s.first);
    return ids;
}

bool PagedKVCache::hasSequence(int sequenceId) const
{
    return sequences_.count(sequenceId) != 0;
}

int PagedKVCache::getSequenceLength(int sequenceId) const
{
    const auto it = sequences_.find(sequenceId);
    return it == sequences_.end() ? 0 : it->second.length;
}

// Whether a token appended at `length` finds every position it attends to (the released
// pages of a window group are a prefix of its table).
bool PagedKVCache::resumable(const Sequence& s, int length) const
{
    for (size_t g = 0; g < groups_.size(); g++)
    {
        const int first = firstAttended((int)g, length);
        if (first < length && (s.pages[g][first / pageSize_] == kReleased ||
                               (g < s.firstHeld.size() && first < s.firstHeld[g])))
            return false;
    }
    return true;
}

int PagedKVCache::getResumableLength(int sequenceId, int length) const
{
    CV_CheckGE(length, 0, "KVCache::getResumableLength: length must not be negative");
    const auto it = sequences_.find(sequenceId);
    if (it == sequences_.end())
        return 0;
    length = std::min(length, it->second.length);
    // Recurrent layers: the sequence's length or a checkpoint's.
    if (recurrent_.has(sequenceId))
        length = recurrent_.rewindableAtOrBefore(sequenceId, it->second.length, length);
    // Resumable lengths are 0 and every length from some point on: the window moves forward.
    return resumable(it->second, length) ? length : 0;
}

void PagedKVCache::checkId(int sequenceId, const char* what) const
{
    if (sequenceId < 0)
        CV_Error(Error::StsOutOfRange, format("KVCache::%s: sequence id %d is negative", what, sequenceId));
}

PagedKVCache::Sequence& PagedKVCache::sequence(int sequenceId, const char* what)
{
    checkId(sequenceId, what);
    const auto it = sequences_.find(sequenceId);
    if (it == sequences_.end())
        CV_Error(Error::StsObjectNotFound, format("KVCache::%s: no sequence %d", what, sequenceId));
    return it->second;
}

PagedKVCache::Sequence PagedKVCache::newSequence() const
{
    Sequence s;
    s.pages.resize(groups_.size());
    return s;
}

// A new slab for the group: kSlabPages pages, or as many as the budget's unallocated bytes
// hold (at least one: callers check the budget against the pages in use).
void PagedKVCache::addSlab(int group)
{
    PageGroup& g = groups_[group];
    size_t allocated = 0;
    for (const PageGroup& other : groups_)
        allocated += other.pages.size() * other.pageBytes;
    const size_t unallocated = budget_ - std::min(budget_, allocated);
    const int count = (int)std::max<size_t>(1, std::min<size_t>(kSlabPages, unallocated / g.pageBytes));
    uchar* slab = (uchar*)fastMalloc((size_t)count * g.pageBytes);
    g.slabs.push_back(slab);
    const size_t runBytes = (size_t)pageSize_ * codec_.rowBytes();
    for (int i = 0; i < count; i++)
    {
        g.freePages.push_back((int)g.pages.size());
        std::push_heap(g.freePages.begin(), g.freePages.end(), std::greater<int>());
        g.pages.push_back(PageAddress{slab + i * runBytes, count * runBytes});
        g.refCount.push_back(0);
    }
}

int PagedKVCache::takePage(int group)
{
    PageGroup& g = groups_[group];
    if (g.freePages.empty())
    {
        CV_Assert(getBytesInUse() + g.pageBytes <= budget_);  // callers check the budget first
        addSlab(group);
    }
    std::pop_heap(g.freePages.begin(), g.freePages.end(), std::greater<int>());
    const int p = g.freePages.back();
    g.freePages.pop_back();
    g.refCount[p] = 1;
    return p;
}

void PagedKVCache::releasePage(int group, int page)
{
    PageGroup& g = groups_[group];
    CV_DbgAssert(g.refCount[page] > 0);
    if (--g.refCount[page] == 0)
    {
        g.freePages.push_back(page);
        std::push_heap(g.freePages.begin(), g.freePages.end(), std::greater<int>());
    }
}

void PagedKVCache::copyPage(int group, int from, int to, int slots)
{
    forEachRun(group, [&](int layer, bool values, int kvHead) {
        std::memcpy(headRow(group, to, layer, values, kvHead, 0), headRow(group, from, layer, values, kvHead, 0),
                    (size_t)slots * codec_.rowBytes());
    });
}

void PagedKVCache::clearPage(int group, int page)
{
    forEachRun(group, [&](int layer, bool values, int kvHead) {
        std::memset(headRow(group, page, layer, values, kvHead, 0), 0, (size_t)pageSize_ * codec_.rowBytes());
    });
}

// Gives a sequence its own copy of a page it shares (the first `slots` slots are copied).
void PagedKVCache::unsharePage(int group, int& page, int slots)
{
    const int copy = takePage(group);
    copyPage(group, page, copy, slots);
    releasePage(group, page);
    page = copy;
}

// Releases the pages of window groups that no token appended at `length` or later attends to.
void PagedKVCache::releaseOutOfWindow(Sequence& s, int length)
{
    for (size_t g = 0; g < groups_.size(); g++)
    {
        if (groups_[g].window == 0)
            continue;
        const int pages = firstAttended((int)g, length) / pageSize_;
        for (int i = 0; i < pages && i < (int)s.pages[g].size(); i++)
            if (s.pages[g][i] != kReleased)
            {
                releasePage((int)g, s.pages[g][i]);
                s.pages[g][i] = kReleased;
            }
    }
}

// Drops the positions from `length` on.
void PagedKVCache::shrink(Sequence& s, int length)
{
    for (size_t g = 0; g < groups_.size(); g++)
    {
        std::vector<int>& pages = s.pages[g];
        for (size_t i = pagesFor(length); i < pages.size(); i++)
            if (pages[i] != kReleased)
                releasePage((int)g, pages[i]);
        pages.resize(pagesFor(length));
    }
    s.length = length;
    if (length == 0)
        s.firstHeld.clear();  // empty: whatever comes is written from position 0
}

void PagedKVCache::removeSequence(int sequenceId)
{
    shrink(sequence(sequenceId, "removeSequence"), 0);
    sequences_.erase(sequenceId);
    recurrent_.remove(sequenceId);
}

void PagedKVCache::truncateSequence(int sequenceId, int length)
{
    CV_CheckGE(length, 0, "KVCache::truncateSequence: length must not be negative");
    Sequence& s = sequence(sequenceId, "truncateSequence");
    if (length >= s.length)
        return;
    if (!resumable(s, length))
        CV_Error(Error::StsBadArg, format(
            "KVCache::truncateSequence: sequence %d cannot be truncated to %d tokens: its sliding-window layers "
            "have released positions a token at %d attends to (see getResumableLength; 0 is always possible)",
            sequenceId, length, length));
    if (recurrent_.has(sequenceId))
    {
        if (!recurrent_.canRewind(sequenceId, s.length, length))
        {
            std::string held;
            for (int c : recurrent_.checkpointLengths(sequenceId))
                held += format(" %d", c);
            CV_Error(Error::StsBadArg, format(
                "KVCache::truncateSequence: sequence %d cannot be truncated to %d tokens: its recurrent layers' state "
                "is kept only at its length (%d), 0 and its checkpoints (%s); truncate to the checkpoint "
                "getResumableLength() gives (%d) and feed the tokens after it again",
                sequenceId, length, s.length, held.empty() ? " none" : held.c_str(),
                recurrent_.rewindableAtOrBefore(sequenceId, s.length, length)));
        }
        recurrent_.rewind(sequenceId, s.length, length);
    }
    shrink(s, length);
}

void PagedKVCache::forkSequence(int sourceId, int destinationId)
{
    checkId(destinationId, "forkSequence");
    if (sequences_.count(destinationId))
        CV_Error(Error::StsBadArg, format("KVCache::forkSequence: sequence %d exists already", destinationId));
    const Sequence src = sequence(sourceId, "forkSequence");
    for (size_t g = 0; g < groups_.size(); g++)
        for (int p : src.pages[g])
            if (p != kReleased)
                groups_[g].refCount[p]++;
    sequences_[destinationId] = src;
    if (recurrent_.has(sourceId))
        recurrent_.fork(sourceId, destinationId);
}

void PagedKVCache::discardTokens(int sequenceId, int first, int count)
{
    Sequence& s = sequence(sequenceId, "discardTokens");
    if (first < 0 || count < 0 || first > s.length - count)
        CV_Error(Error::StsOutOfRange, format("KVCache::discardTokens: tokens [%d, %d) are not inside the %d of sequence %d",
                                              first, first + count, s.length, sequenceId));
    if (count == 0)
        return;
    if (recurrent_.enabled())
        CV_Error(Error::StsNotImplemented, format(
            "KVCache::discardTokens: the model has recurrent layers, whose state sums up every token of sequence %d: "
            "tokens cannot be taken out of it (no context shift; start a new sequence or rewind)", sequenceId));
    for (int l = 0; l < layers_; l++)
        if (!keyShift_[l])
            CV_Error(Error::StsError, "KVCache::discardTokens: the attention layers did not register their rotary embedding");
    const int newLength = s.length - count;
    // The rows a token at newLength attends to, per group: kept ones (before `first`) must
    // still be there; moved ones come from positions the window still holds.
    size_t needed = 0;
    for (size_t g = 0; g < groups_.size(); g++)
    {
        const int attended = firstAttended((int)g, newLength);
        if (attended < std::min(first, newLength) && s.pages[g][attended / pageSize_] == kReleased)
            CV_Error(Error::StsBadArg, format(
                "KVCache::discardTokens: sequence %d's sliding-window layers have released position %d, which the "
                "shifted sequence would attend to; discard fewer tokens", sequenceId, attended));
        // Pages that receive moved rows are rewritten: unshare them (or take back a released one).
        for (int i = std::max(first, attended) / pageSize_; i < pagesFor(newLength); i++)
        {
            const int p = s.pages[g][i];
            if (p == kReleased || groups_[g].refCount[p] > 1)
                needed += groups_[g].pageBytes;
        }
    }
    if (getBytesInUse() + needed > budget_)
        CV_Error(Error::StsNoMem, "KVCache::discardTokens: the budget has no room left to unshare the pages it rewrites");
    std::vector<float> buf(headDim_);
    const int delta = -count;
    for (size_t g = 0; g < groups_.size(); g++)
    {
        const int from = std::max(first, firstAttended((int)g, newLength));
        for (int i = from / pageSize_; i < pagesFor(newLength); i++)
        {
            int& p = s.pages[g][i];
            if (p == kReleased)
                p = takePage((int)g);
            else if (groups_[g].refCount[p] > 1)
                unsharePage((int)g, p, pageSize_);
        }
        for (int j = from; j < newLength; j++)
        {
            const int src = j + count;
            const int sp = s.pages[g][src / pageSize_], ss = src % pageSize_;
            const int dp = s.pages[g][j / pageSize_], ds = j % pageSize_;
            CV_Assert(sp != kReleased);
            for (int l = 0; l < layers_; l++)
            {
                if (layerGroup_[l] != (int)g)
                    continue;
                for (int h = 0; h < kvHeads_; h++)
                {
                    // Keys carry their position's rotation: turn them back by `count` positions.
                    codec_.decode(headRow((int)g, sp, l, false, h, ss), buf.data());
                    keyShift_[l]->shift(buf.data(), delta);
                    codec_.encode(buf.data(), headRow((int)g, dp, l, false, h, ds));
                    std::memmove(headRow((int)g, dp, l, true, h, ds), headRow((int)g, sp, l, true, h, ss), codec_.rowBytes());
                }
            }
        }
    }
    shrink(s, newLength);
    releaseOutOfWindow(s, newLength);
}

void PagedKVCache::clear()
{
    for (auto& s : sequences_)
        shrink(s.second, 0);
    sequences_.clear();
    recurrent_.clear();
}

void PagedKVCache::setRecurrentLayers(const std::vector<size_t>& floatsPerLayer)
{
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: recurrent layers can only be set while the cache is empty");
    recurrent_.setLayers(floatsPerLayer);
    // Room for 16 sequences (the decode loop's default) with their checkpoints, in whole pages.
    const size_t states = 16 * (size_t)(1 + recurrent_.maxDurableCheckpoints()) * recurrent_.bytesPerState();
    const size_t full = fullPageBytes();
    budget_ += std::min<size_t>((states + full - 1) / full, INT_MAX / 4) * full;
}

void PagedKVCache::setRecurrentCheckpoints(int maxCheckpoints, int interval)
{
    recurrent_.setCheckpointPolicy(maxCheckpoints, interval);
}

void PagedKVCache::setKeyPositionShift(int layer, const Ptr<const KeyPositionShift>& shift)
{
    CV_Assert(layer >= 0 && layer < layers_);
    keyShift_[layer] = shift;
}

void PagedKVCache::reserve(BatchPlan& plan, bool namedLogits)
{
    lengthsBefore_.resize(plan.sequences());
    for (int b = 0; b < plan.sequences(); b++)
        lengthsBefore_[b] = getSequenceLength(plan.sequenceIds[b]);
    reserve(plan.sequenceIds, plan.newTokens, plan.pageTables, recurrent_.snapshotBytes(plan, lengthsBefore_, namedLogits));
    recurrent_.plan(plan, lengthsBefore_, namedLogits);
}

void PagedKVCache::reserve(const std::vector<int>& sequenceIds, const std::vector<int>& newTokens,
                           std::vector<std::vector<const std::vector<int>*>>& pageTables, size_t extraBytes)
{
    CV_Assert(sequenceIds.size() == newTokens.size());
    // Check the context and the budget before anything changes (but the release of pages the
    // new tokens do not attend to, which frees room and loses nothing that can be used).
    for (size_t b = 0; b < sequenceIds.size(); b++)
    {
        const int id = sequenceIds[b];
        checkId(id, "reserve");
        const int length = getSequenceLength(id);
        if (newTokens[b] > maxSequenceLength_ - length)
            CV_Error(Error::StsOutOfRange, format(
                "KVCache: the context is full for sequence %d: %d cached + %d new tokens exceed the maximum of %d "
                "(rewind, discard tokens or start a new sequence)", id, length, newTokens[b], maxSequenceLength_));
        const auto it = sequences_.find(id);
        if (it != sequences_.end())
            releaseOutOfWindow(it->second, length);
    }
    size_t needed = extraBytes;
    cowPages_.clear();
    for (size_t b = 0; b < sequenceIds.size(); b++)
    {
        const int id = sequenceIds[b];
        const int length = getSequenceLength(id), grown = length + newTokens[b];
        for (size_t g = 0; g < groups_.size(); g++)
        {
            PageGroup& group = groups_[g];
            needed += (size_t)(pagesFor(grown) - pagesFor(length)) * group.pageBytes;
            if (length % pageSize_ != 0)
            {
                // Copy-on-write of a partly filled shared page; when all its sharers write in
                // this batch, the last one finds it unshared (counted by lowering the count as
                // we go).
                const int last = sequences_.find(id)->second.pages[g].back();
                if (group.refCount[last] > 1)
                {
                    needed += group.pageBytes;
                    group.refCount[last]--;
                    cowPages_.emplace_back((int)g, last);
                }
            }
        }
    }
    for (const auto& gp : cowPages_)
        groups_[gp.first].refCount[gp.second]++;
    if (getBytesInUse() + needed > budget_)
        CV_Error(Error::StsNoMem, format(
            "KVCache: the memory budget is exhausted: this batch needs %zu more bytes (pages of %d tokens), %d pages "
            "are free (budget %zu bytes, %zu in use; raise it with KVCache::setMemoryBudget or remove sequences)",
            needed, pageSize_, getPagesFree(), getMemoryBudget(), getBytesInUse()));

    pageTables.resize(groups_.size());
    for (size_t g = 0; g < groups_.size(); g++)
        pageTables[g].resize(sequenceIds.size());
    for (size_t b = 0; b < sequenceIds.size(); b++)
    {
        auto it = sequences_.find(sequenceIds[b]);
        if (it == sequences_.end())
            it = sequences_.emplace(sequenceIds[b], newSequence()).first;
        Sequence& s = it->second;
        for (size_t g = 0; g < groups_.size(); g++)
        {
            std::vector<int>& pages = s.pages[g];
            if (s.length % pageSize_ != 0 && groups_[g].refCount[pages.back()] > 1)
                unsharePage((int)g, pages.back(), s.length % pageSize_);
            while ((int)pages.size() < pagesFor(s.length + newTokens[b]))
                pages.push_back(takePage((int)g));
            pageTables[g][b] = &pages;
        }
        s.length += newTokens[b];
    }
}

void PagedKVCache::store(int layer, const std::vector<int>& pageTable, int position, const float* key, const float* value)
{
    const int group = layerGroup_[layer];
    const int page = pageTable[position / pageSize_], slot = position % pageSize_;
    CV_DbgAssert(page != kReleased);
    for (int h = 0; h < kvHeads_; h++)
    {
        codec_.encode(key + (size_t)h * headDim_, headRow(group, page, layer, false, h, slot));
        codec_.encode(value + (size_t)h * headDim_, headRow(group, page, layer, true, h, slot));
    }
}

const float* PagedKVCache::rows(int layer, bool values, int page, int kvHead, int count,
                                float* buffer, size_t* stride) const
{
    const uchar* first = headRow(layerGroup_[layer], page, layer, values, kvHead, 0);
    *stride = headDim_;
    if (codec_.storesFloat32())
        return reinterpret_cast<const float*>(first);
    for (int s = 0; s < count; s++)
        codec_.decode(first + (size_t)s * codec_.rowBytes(), buffer + (size_t)s * headDim_);
    return buffer;
}

}}} // namespace cv::dnn::llm
