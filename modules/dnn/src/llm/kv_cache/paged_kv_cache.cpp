// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "paged_kv_cache.hpp"

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
    setCodec(CV_32F);
    // Default budget: the model's context or 4096 tokens, whichever is more (llama.cpp's
    // default context); pages are only allocated as sequences grow.
    const int64 tokens = std::max(maxSequenceLength, 4096);
    maxPages_ = (int)std::min<int64>(INT_MAX / 2, (tokens + pageSize - 1) / pageSize);
    keyShift_.resize(layers);
}

void PagedKVCache::setCodec(int type)
{
    codec_ = KVStorageCodec(type, headDim_);
    pageBytes_ = (size_t)layers_ * 2 * kvHeads_ * pageSize_ * codec_.rowBytes();
}

PagedKVCache::~PagedKVCache()
{
    for (uchar* p : pages_)
        fastFree(p);
}

void PagedKVCache::setMemoryBudget(size_t bytes)
{
    const size_t pages = bytes / pageBytes_;
    if (pages < (size_t)getPagesInUse())
        CV_Error(Error::StsBadArg, format("KVCache: a budget of %zu bytes holds %zu pages; %d are in use",
                                          bytes, pages, getPagesInUse()));
    maxPages_ = (int)std::min<size_t>(pages, INT_MAX / 2);
}

void PagedKVCache::setStorageType(int type)
{
    KVStorageCodec(type, headDim_);  // checks the type
    if (type == codec_.type())
        return;
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: the storage type can only change while the cache is empty");
    const size_t budget = getMemoryBudget();
    for (uchar* p : pages_)
        fastFree(p);
    pages_.clear();
    refCount_.clear();
    freePages_.clear();
    setCodec(type);
    maxPages_ = (int)std::min<size_t>(budget / pageBytes_, INT_MAX / 2);
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

int PagedKVCache::takePage()
{
    if (!freePages_.empty())
    {
        const int p = freePages_.back();
        freePages_.pop_back();
        refCount_[p] = 1;
        return p;
    }
    CV_Assert(getPagesInUse() < maxPages_);  // callers check the budget first
    pages_.push_back((uchar*)fastMalloc(pageBytes_));
    refCount_.push_back(1);
    return (int)pages_.size() - 1;
}

void PagedKVCache::releasePage(int page)
{
    CV_DbgAssert(refCount_[page] > 0);
    if (--refCount_[page] == 0)
        freePages_.push_back(page);
}

void PagedKVCache::copyPage(int from, int to, int slots)
{
    for (int l = 0; l < layers_; l++)
        for (int kv = 0; kv < 2; kv++)
            for (int g = 0; g < kvHeads_; g++)
                std::memcpy(headRow(to, l, kv != 0, g, 0), headRow(from, l, kv != 0, g, 0), (size_t)slots * codec_.rowBytes());
}

// Gives a sequence its own copy of a page it shares (the first `slots` slots are copied).
void PagedKVCache::unsharePage(int& page, int slots)
{
    const int copy = takePage();
    copyPage(page, copy, slots);
    releasePage(page);
    page = copy;
}

void PagedKVCache::removeSequence(int sequenceId)
{
    Sequence& s = sequence(sequenceId, "removeSequence");
    for (int p : s.pages)
        releasePage(p);
    sequences_.erase(sequenceId);
}

void PagedKVCache::truncateSequence(int sequenceId, int length)
{
    CV_CheckGE(length, 0, "KVCache::truncateSequence: length must not be negative");
    Sequence& s = sequence(sequenceId, "truncateSequence");
    if (length >= s.length)
        return;
    const int keepPages = (length + pageSize_ - 1) / pageSize_;
    for (size_t i = keepPages; i < s.pages.size(); i++)
        releasePage(s.pages[i]);
    s.pages.resize(keepPages);
    s.length = length;
}

void PagedKVCache::forkSequence(int sourceId, int destinationId)
{
    checkId(destinationId, "forkSequence");
    if (sequences_.count(destinationId))
        CV_Error(Error::StsBadArg, format("KVCache::forkSequence: sequence %d exists already", destinationId));
    const Sequence src = sequence(sourceId, "forkSequence");
    for (int p : src.pages)
        refCount_[p]++;
    sequences_[destinationId] = src;
}

void PagedKVCache::discardTokens(int sequenceId, int first, int count)
{
    Sequence& s = sequence(sequenceId, "discardTokens");
    if (first < 0 || count < 0 || first > s.length - count)
        CV_Error(Error::StsOutOfRange, format("KVCache::discardTokens: tokens [%d, %d) are not inside the %d of sequence %d",
                                              first, first + count, s.length, sequenceId));
    if (count == 0)
        return;
    for (int l = 0; l < layers_; l++)
        if (!keyShift_[l])
            CV_Error(Error::StsError, "KVCache::discardTokens: the attention layers did not register their rotary embedding");
    // Pages from the one holding `first` on are rewritten: unshare them first.
    const int newLength = s.length - count;
    for (size_t i = first / pageSize_; i < s.pages.size(); i++)
    {
        int& p = s.pages[i];
        if (refCount_[p] > 1)
        {
            if (getPagesFree() <= 0)
                CV_Error(Error::StsNoMem, "KVCache::discardTokens: the budget has no page left to unshare a page");
            unsharePage(p, pageSize_);
        }
    }
    std::vector<float> buf(headDim_);
    const int delta = -count;
    for (int j = first; j < newLength; j++)
    {
        const int src = j + count;
        const int sp = s.pages[src / pageSize_], ss = src % pageSize_;
        const int dp = s.pages[j / pageSize_], ds = j % pageSize_;
        for (int l = 0; l < layers_; l++)
            for (int g = 0; g < kvHeads_; g++)
            {
                // Keys carry their position's rotation: turn them back by `count` positions.
                codec_.decode(headRow(sp, l, false, g, ss), buf.data());
                keyShift_[l]->shift(buf.data(), delta);
                codec_.encode(buf.data(), headRow(dp, l, false, g, ds));
                std::memmove(headRow(dp, l, true, g, ds), headRow(sp, l, true, g, ss), codec_.rowBytes());
            }
    }
    truncateSequence(sequenceId, newLength);
}

void PagedKVCache::clear()
{
    for (auto& s : sequences_)
        for (int p : s.second.pages)
            releasePage(p);
    sequences_.clear();
}

int PagedKVCache::getPagesShared() const
{
    int n = 0;
    for (int c : refCount_)
        n += c > 1;
    return n;
}

void PagedKVCache::setKeyPositionShift(int layer, const Ptr<const KeyPositionShift>& shift)
{
    CV_Assert(layer >= 0 && layer < layers_);
    keyShift_[layer] = shift;
}

void PagedKVCache::reserve(const std::vector<int>& sequenceIds, const std::vector<int>& newTokens,
                           std::vector<const std::vector<int>*>& pageTables)
{
    CV_Assert(sequenceIds.size() == newTokens.size());
    // Check the context and the budget before anything changes.
    int needed = 0;
    cowPages_.clear();
    for (size_t b = 0; b < sequenceIds.size(); b++)
    {
        const int id = sequenceIds[b];
        checkId(id, "reserve");
        const int length = getSequenceLength(id), grown = length + newTokens[b];
        if (newTokens[b] > maxSequenceLength_ - length)
            CV_Error(Error::StsOutOfRange, format(
                "KVCache: the context is full for sequence %d: %d cached + %d new tokens exceed the maximum of %d "
                "(rewind, discard tokens or start a new sequence)", id, length, newTokens[b], maxSequenceLength_));
        needed += (grown + pageSize_ - 1) / pageSize_ - (length + pageSize_ - 1) / pageSize_;
        if (length % pageSize_ != 0)
        {
            // Copy-on-write of a partly filled shared page; when all its sharers write in this
            // batch, the last one finds it unshared (counted by lowering the count as we go).
            const int last = sequences_.find(id)->second.pages.back();
            if (refCount_[last] > 1)
            {
                needed++;
                refCount_[last]--;
                cowPages_.push_back(last);
            }
        }
    }
    for (int page : cowPages_)
        refCount_[page]++;
    if (needed > getPagesFree())
        CV_Error(Error::StsNoMem, format(
            "KVCache: the memory budget is exhausted: this batch needs %d more pages of %d tokens, %d are free "
            "(budget %zu bytes, %d pages in use; raise it with KVCache::setMemoryBudget or remove sequences)",
            needed, pageSize_, getPagesFree(), getMemoryBudget(), getPagesInUse()));

    pageTables.resize(sequenceIds.size());
    for (size_t b = 0; b < sequenceIds.size(); b++)
    {
        Sequence& s = sequences_[sequenceIds[b]];
        if (s.length % pageSize_ != 0 && refCount_[s.pages.back()] > 1)
            unsharePage(s.pages.back(), s.length % pageSize_);
        s.length += newTokens[b];
        while ((int)s.pages.size() * pageSize_ < s.length)
            s.pages.push_back(takePage());
        pageTables[b] = &s.pages;
    }
}

void PagedKVCache::store(int layer, const std::vector<int>& pageTable, int position, const float* key, const float* value)
{
    const int page = pageTable[position / pageSize_], slot = position % pageSize_;
    for (int g = 0; g < kvHeads_; g++)
    {
        codec_.encode(key + (size_t)g * headDim_, headRow(page, layer, false, g, slot));
        codec_.encode(value + (size_t)g * headDim_, headRow(page, layer, true, g, slot));
    }
}

const float* PagedKVCache::rows(int layer, bool values, int page, int kvHead, int count,
                                float* buffer, size_t* stride) const
{
    const uchar* first = headRow(page, layer, values, kvHead, 0);
    *stride = headDim_;
    if (codec_.storesFloat32())
        return reinterpret_cast<const float*>(first);
    for (int s = 0; s < count; s++)
        codec_.decode(first + (size_t)s * codec_.rowBytes(), buffer + (size_t)s * headDim_);
    return buffer;
}

}}} // namespace cv::dnn::llm
