// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "paged_kv_cache.hpp"

#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

KVCache::~KVCache() {}

CV__DNN_INLINE_NS_END

namespace llm {

// A head row: the keys (or values) of one token in one layer for one KV head. float32: headDim
// floats; float16: headDim halves; 8-bit: headDim int8 then one float scale.
void PagedKVCache::computeRowBytes()
{
    if (storageType_ == CV_32F)
        headRowBytes_ = (size_t)headDim_ * sizeof(float);
    else if (storageType_ == CV_16F)
        headRowBytes_ = (size_t)headDim_ * sizeof(hfloat);
    else
        headRowBytes_ = (size_t)headDim_ + sizeof(float);
    headRowBytes_ = alignSize(headRowBytes_, 4);
    pageBytes_ = (size_t)layers_ * 2 * kvHeads_ * pageSize_ * headRowBytes_;
}

PagedKVCache::PagedKVCache(int layers, int kvHeads, int headDim, int maxSequenceLength, int pageSize)
    : layers_(layers), kvHeads_(kvHeads), headDim_(headDim),
      maxSequenceLength_(maxSequenceLength), pageSize_(pageSize)
{
    CV_CheckGT(layers, 0, "KVCache: layer count must be positive");
    CV_CheckGT(kvHeads, 0, "KVCache: KV head count must be positive");
    CV_CheckGT(headDim, 0, "KVCache: head size must be positive");
    CV_CheckGT(maxSequenceLength, 0, "KVCache: context length must be positive");
    CV_CheckGT(pageSize, 0, "KVCache: page size must be positive");
    computeRowBytes();
    // Default budget: the model's context or 4096 tokens, whichever is more (llama.cpp's
    // default context); pages are only allocated as sequences grow.
    const int64 tokens = std::max(maxSequenceLength, 4096);
    maxPages_ = (int)std::min<int64>(INT_MAX / 2, (tokens + pageSize - 1) / pageSize);
    rotary_.resize(layers);
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
    if (type != CV_32F && type != CV_16F && type != CV_8S)
        CV_Error(Error::StsBadArg, format("KVCache: storage type %s is not supported (CV_32F, CV_16F, CV_8S are)",
                                          typeToString(type).c_str()));
    if (type == storageType_)
        return;
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: the storage type can only change while the cache is empty");
    const size_t budget = getMemoryBudget();
    for (uchar* p : pages_)
        fastFree(p);
    pages_.clear();
    refCount_.clear();
    freePages_.clear();
    storageType_ = type;
    computeRowBytes();
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
                std::memcpy(headRow(to, l, kv != 0, g, 0), headRow(from, l, kv != 0, g, 0), (size_t)slots * headRowBytes_);
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
        if (!rotary_[l].isConfigured())
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
            const int copy = takePage();
            copyPage(p, copy, pageSize_);
            releasePage(p);
            p = copy;
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
                decodeHead(headRow(sp, l, false, g, ss), buf.data());
                rotary_[l].apply(buf.data(), 1, headDim_, 1, headDim_, &delta);
                encodeHead(buf.data(), headRow(dp, l, false, g, ds));
                std::memmove(headRow(dp, l, true, g, ds), headRow(sp, l, true, g, ss), headRowBytes_);
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

void PagedKVCache::setLayerRotary(int layer, const RotaryEmbedding& rope)
{
    CV_Assert(layer >= 0 && layer < layers_);
    rotary_[layer] = rope;
}

void PagedKVCache::setPendingBatch(const std::vector<int>& sequenceIds)
{
    if (sequenceIds.empty())
        CV_Error(Error::StsBadArg, "setLLMBatch: the batch has no tokens");
    for (int id : sequenceIds)
        checkId(id, "setLLMBatch");
    pending_ = sequenceIds;
    hasPending_ = true;
}

int PagedKVCache::plannedOutputRows(int tokens, bool allLogits) const
{
    if (allLogits)
        return tokens;
    if (!hasPending_)
        return 1;
    int distinct = 0;
    for (size_t i = 0; i < pending_.size(); i++)
        distinct += std::find(pending_.begin(), pending_.begin() + i, pending_[i]) == pending_.begin() + i;
    return distinct;
}

const BatchPlan& PagedKVCache::beginForward(int tokens)
{
    BatchPlan& p = plan_;
    const bool planned = hasPending_;
    hasPending_ = false;  // a plan serves one forward, even one that fails
    if (planned && (int)pending_.size() != tokens)
        CV_Error(Error::StsBadArg, format("setLLMBatch: the batch names %zu tokens but the input has %d",
                                          pending_.size(), tokens));
    // Sequences of the batch in order of first appearance, and each token's place.
    p.tokens = tokens;
    p.batchSequence.resize(tokens);
    p.position.resize(tokens);
    p.sequenceIds.clear();
    p.lastToken.clear();
    newTokens_.clear();
    for (int t = 0; t < tokens; t++)
    {
        const int id = planned ? pending_[t] : 0;
        int b = 0;
        while (b < (int)p.sequenceIds.size() && p.sequenceIds[b] != id)
            b++;
        if (b == (int)p.sequenceIds.size())
        {
            p.sequenceIds.push_back(id);
            p.lastToken.push_back(t);
            newTokens_.push_back(0);
        }
        p.batchSequence[t] = b;
        p.position[t] = getSequenceLength(id) + newTokens_[b]++;
        p.lastToken[b] = t;
    }

    // Check the context and the budget before anything changes.
    int needed = 0;
    cowPages_.clear();
    for (size_t b = 0; b < p.sequenceIds.size(); b++)
    {
        const int id = p.sequenceIds[b];
        const int length = getSequenceLength(id), grown = length + newTokens_[b];
        if (grown > maxSequenceLength_)
            CV_Error(Error::StsOutOfRange, format(
                "KVCache: the context is full for sequence %d: %d cached + %d new tokens exceed the maximum of %d "
                "(rewind, discard tokens or start a new sequence)", id, length, newTokens_[b], maxSequenceLength_));
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

    // Reserve the slots.
    p.pageTables.resize(p.sequenceIds.size());
    for (size_t b = 0; b < p.sequenceIds.size(); b++)
    {
        Sequence& s = sequences_[p.sequenceIds[b]];
        if (s.length % pageSize_ != 0 && refCount_[s.pages.back()] > 1)
        {
            const int copy = takePage();
            copyPage(s.pages.back(), copy, s.length % pageSize_);
            releasePage(s.pages.back());
            s.pages.back() = copy;
        }
        s.length += newTokens_[b];
        while ((int)s.pages.size() * pageSize_ < s.length)
            s.pages.push_back(takePage());
        p.pageTables[b] = &s.pages;
    }
    return p;
}

void PagedKVCache::encodeHead(const float* src, uchar* dst) const
{
    if (storageType_ == CV_32F)
    {
        std::memcpy(dst, src, (size_t)headDim_ * sizeof(float));
    }
    else if (storageType_ == CV_16F)
    {
        hfloat* d = reinterpret_cast<hfloat*>(dst);
        for (int i = 0; i < headDim_; i++)
            d[i] = hfloat(src[i]);
    }
    else
    {
        // 8 bits per element and one scale: scale = max|x| / 127.
        float amax = 0.f;
        for (int i = 0; i < headDim_; i++)
            amax = std::max(amax, std::abs(src[i]));
        const float scale = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
        signed char* q = reinterpret_cast<signed char*>(dst);
        for (int i = 0; i < headDim_; i++)
            q[i] = (signed char)cvRound(src[i] * inv);
        std::memcpy(dst + headDim_, &scale, sizeof(float));
    }
}

void PagedKVCache::decodeHead(const uchar* src, float* dst) const
{
    if (storageType_ == CV_32F)
    {
        std::memcpy(dst, src, (size_t)headDim_ * sizeof(float));
    }
    else if (storageType_ == CV_16F)
    {
        const hfloat* h = reinterpret_cast<const hfloat*>(src);
        for (int i = 0; i < headDim_; i++)
            dst[i] = float(h[i]);
    }
    else
    {
        const signed char* q = reinterpret_cast<const signed char*>(src);
        float scale;
        std::memcpy(&scale, src + headDim_, sizeof(float));
        for (int i = 0; i < headDim_; i++)
            dst[i] = q[i] * scale;
    }
}

void PagedKVCache::store(int layer, int t, const float* key, const float* value)
{
    const BatchPlan& p = plan_;
    const int pos = p.position[t];
    const int page = (*p.pageTables[p.batchSequence[t]])[pos / pageSize_], slot = pos % pageSize_;
    for (int g = 0; g < kvHeads_; g++)
    {
        encodeHead(key + (size_t)g * headDim_, headRow(page, layer, false, g, slot));
        encodeHead(value + (size_t)g * headDim_, headRow(page, layer, true, g, slot));
    }
}

const float* PagedKVCache::rows(int layer, bool values, int page, int kvHead, int count,
                                float* buffer, size_t* stride) const
{
    const uchar* first = headRow(page, layer, values, kvHead, 0);
    *stride = headDim_;
    if (storageType_ == CV_32F)
        return reinterpret_cast<const float*>(first);
    for (int s = 0; s < count; s++)
        decodeHead(first + (size_t)s * headRowBytes_, buffer + (size_t)s * headDim_);
    return buffer;
}

}}} // namespace cv::dnn::llm
