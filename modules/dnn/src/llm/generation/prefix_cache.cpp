// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "prefix_cache.hpp"

namespace cv {
namespace dnn {
namespace llm {

PrefixCache::Entry& PrefixCache::track(int sequenceId, Holder holder)
{
    Entry& e = entries_[sequenceId];
    e = Entry();
    e.holder = holder;
    e.lastUse = ++clock_;
    return e;
}

PrefixCache::Entry* PrefixCache::find(int sequenceId)
{
    auto it = entries_.find(sequenceId);
    return it == entries_.end() ? nullptr : &it->second;
}

const std::vector<int>& PrefixCache::tokens(int sequenceId) const
{
    static const std::vector<int> none;
    auto it = entries_.find(sequenceId);
    return it == entries_.end() ? none : it->second.tokens;
}

PrefixCache::Match PrefixCache::longestPrefix(const std::vector<int>& prompt, const AdapterSet& adapters) const
{
    Match best;
    if (prompt.empty())
        return best;
    const int page = cache_.getPageSize();
    for (const auto& kv : entries_)
    {
        const Entry& e = kv.second;
        if (!e.reusable || !cache_.hasSequence(kv.first) || cache_.getSequenceLength(kv.first) != (int)e.tokens.size())
            continue;  // shifted, or changed outside the loop (KVCache calls by the user): not trusted
        if (e.adapters != adapters)
            continue;  // other adapters give other keys and values
        size_t common = 0;
        while (common < prompt.size() && common < e.tokens.size() && prompt[common] >= 0 &&
               prompt[common] == e.tokens[common])
            common++;
        if (common == prompt.size() && e.promptLength == (int)prompt.size() && !e.promptLogits.empty() &&
            cache_.getResumableLength(kv.first, (int)prompt.size()) == (int)prompt.size())
        {
            // The same prompt: its pages and its logits, nothing to run.
            best.source = kv.first;
            best.length = (int)prompt.size();
            best.logits = &e.promptLogits;
            return best;
        }
        // Whole pages only (vLLM's blocks): a shared page is never written, and a prompt shorter
        // than a page is not worth a fork.
        int length = (int)(std::min(common, prompt.size() - 1) / page * page);
        if (length <= best.length)
            continue;
        length = cache_.getResumableLength(kv.first, length);  // sliding windows may have released it
        if (length > best.length && length % page == 0)
        {
            best.source = kv.first;
            best.length = length;
        }
    }
    return best;
}

void PrefixCache::finished(int sequenceId, bool callers, bool keepForReuse)
{
    Entry* e = find(sequenceId);
    if (!e)
        return;
    if (callers)
        e->holder = Holder::Caller;
    else if (keepForReuse && e->reusable && !e->tokens.empty())
    {
        e->holder = Holder::Cached;
        e->lastUse = ++clock_;
    }
    else
        remove(sequenceId);
}

void PrefixCache::remove(int sequenceId)
{
    if (cache_.hasSequence(sequenceId))
        cache_.removeSequence(sequenceId);
    entries_.erase(sequenceId);
}

bool PrefixCache::releaseOldest()
{
    int oldest = -1;
    uint64 when = 0;
    for (const auto& kv : entries_)
        if (kv.second.holder == Holder::Cached && (oldest < 0 || kv.second.lastUse < when))
        {
            oldest = kv.first;
            when = kv.second.lastUse;
        }
    if (oldest < 0)
        return false;
    remove(oldest);
    return true;
}

void PrefixCache::clear()
{
    while (releaseOldest())
    {
    }
}

void PrefixCache::releaseAdapter(int id)
{
    std::vector<int> release;
    for (const auto& kv : entries_)
        if (kv.second.holder == Holder::Cached)
            for (const AdapterUse& u : kv.second.adapters)
                if (u.id == id)
                    release.push_back(kv.first);
    for (int sequenceId : release)
        remove(sequenceId);
}

int PrefixCache::cachedPages() const
{
    int pages = 0;
    for (const auto& kv : entries_)
        if (kv.second.holder == Holder::Cached)
            pages += (int)((kv.second.tokens.size() + cache_.getPageSize() - 1) / cache_.getPageSize());
    return pages;
}

int PrefixCache::cachedCount() const
{
    int n = 0;
    for (const auto& kv : entries_)
        n += kv.second.holder == Holder::Cached;
    return n;
}

}}} // namespace cv::dnn::llm
