// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "token_mask.hpp"

#include <algorithm>
#include <numeric>

namespace cv {
namespace dnn {
namespace llm {

static const size_t kMaxPieceBytes = 65535;

// Bytes the sorted piece `p` shares with the one before it (none for the first).
static size_t sharedPrefix(const std::string* previous, const std::string& p)
{
    size_t n = 0;
    if (previous)
        while (n < p.size() && n < previous->size() && p[n] == (*previous)[n])
            n++;
    return n;
}

TokenTrie::TokenTrie(const std::vector<std::string>& pieces) : vocab_((int)pieces.size())
{
    std::vector<int> order;
    order.reserve(pieces.size());
    for (int id = 0; id < (int)pieces.size(); id++)
        if (!pieces[id].empty() && pieces[id].size() <= kMaxPieceBytes)
            order.push_back(id);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return pieces[a] != pieces[b] ? pieces[a] < pieces[b] : a < b; });
    std::vector<uint32_t> path;  // node indices of the current path
    const std::string* prev = nullptr;
    auto closeTo = [&](size_t depth) {
        while (path.size() > depth)
        {
            nodes_[path.back()].skip = (uint32_t)nodes_.size();
            path.pop_back();
        }
    };
    for (int id : order)
    {
        const std::string& p = pieces[id];
        const size_t common = sharedPrefix(prev, p);
        closeTo(common);
        for (size_t i = common; i < p.size(); i++)
        {
            Node n;
            n.byte = (uint8_t)p[i];
            n.depth = (uint16_t)(i + 1);
            n.skip = 0;
            n.tokenBegin = n.tokenEnd = 0;
            path.push_back((uint32_t)nodes_.size());
            nodes_.push_back(n);
        }
        maxDepth_ = std::max(maxDepth_, p.size());
        prev = &p;
    }
    closeTo(0);
    // tokens ending at each node, in node order
    std::vector<std::vector<int> > ends(nodes_.size());
    {
        // walk again to find each piece's last node
        prev = nullptr;
        std::vector<uint32_t> pathNodes;
        uint32_t next = 0;
        for (int id : order)
        {
            const std::string& p = pieces[id];
            const size_t common = sharedPrefix(prev, p);
            pathNodes.resize(common);
            for (size_t i = common; i < p.size(); i++)
                pathNodes.push_back(next++);
            ends[pathNodes.back()].push_back(id);
            prev = &p;
        }
        CV_Assert(next == nodes_.size());
    }
    for (size_t i = 0; i < nodes_.size(); i++)
    {
        nodes_[i].tokenBegin = (uint32_t)tokens_.size();
        tokens_.insert(tokens_.end(), ends[i].begin(), ends[i].end());
        nodes_[i].tokenEnd = (uint32_t)tokens_.size();
    }
}

int TokenTrie::mask(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed, Scratch& scratch) const
{
    if (matcher.isDead())
    {
        allowed.assign((size_t)vocab_, 0);
        return 0;
    }
    Scratch& sc = scratch;
    const Utf8Partial& mp = matcher.partial();
    sc.clock++;
    for (Scratch::CachedMask& c : sc.masks)
        if (c.partial.remaining == mp.remaining && c.partial.value == mp.value && c.partial.length == mp.length &&
            c.stacks == matcher.stacks())
        {
            c.lastUse = sc.clock;
            allowed = c.allowed;
            return c.count;
        }
    allowed.assign((size_t)vocab_, 0);
    sc.states.clear();
    sc.ids.clear();
    sc.next.clear();
    sc.feasible.clear();
    sc.stateAt.assign(maxDepth_ + 1, 0);
    sc.partial.assign(maxDepth_ + 1, Utf8Partial());
    sc.states.push_back(matcher.stacks());
    sc.ids.emplace(matcher.stacks(), 0);
    sc.partial[0] = matcher.partial();
    int count = 0;
    size_t i = 0;
    while (i < nodes_.size())
    {
        const Node& n = nodes_[i];
        const size_t d = n.depth;
        const int parent = sc.stateAt[d - 1];
        Utf8Partial p = sc.partial[d - 1];
        uint32_t cp = 0;
        const int r = p.feed(n.byte, cp);
        int state = -1;
        if (r == 0)
        {
            // an unfinished character: the parent's stacks, if some class can hold it
            const uint64_t key = ((uint64_t)parent << 32) | ((uint64_t)p.length << 28) |
                                 ((uint64_t)p.remaining << 24) | p.value;
            auto it = sc.feasible.find(key);
            bool ok;
            if (it != sc.feasible.end())
                ok = it->second;
            else
            {
                ok = matcher.partialFeasible(sc.states[(size_t)parent], p);
                sc.feasible.emplace(key, ok);
            }
            state = ok ? parent : -1;
        }
        else if (r > 0)
        {
            const uint64_t key = ((uint64_t)parent << 32) | cp;
            auto it = sc.next.find(key);
            if (it != sc.next.end())
                state = it->second;
            else
            {
                matcher.advance(sc.states[(size_t)parent], cp, sc.advanced);
                if (!sc.advanced.empty())
                {
                    auto found = sc.ids.find(sc.advanced);
                    if (found != sc.ids.end())
                        state = found->second;
                    else
                    {
                        state = (int)sc.states.size();
                        sc.ids.emplace(sc.advanced, state);
                        sc.states.push_back(sc.advanced);
                    }
                }
                sc.next.emplace(key, state);
            }
        }
        if (state < 0)
        {
            i = n.skip;
            continue;
        }
        sc.stateAt[d] = state;
        sc.partial[d] = p;
        for (uint32_t t = n.tokenBegin; t < n.tokenEnd; t++)
        {
            allowed[(size_t)tokens_[t]] = 1;
            count++;
        }
        i++;
    }
    if (sc.maxCachedMasks > 0)
    {
        Scratch::CachedMask* slot = nullptr;
        if (sc.masks.size() < sc.maxCachedMasks)
        {
            sc.masks.emplace_back();
            slot = &sc.masks.back();
        }
        else
        {
            slot = &sc.masks[0];
            for (Scratch::CachedMask& c : sc.masks)
                if (c.lastUse < slot->lastUse)
                    slot = &c;
        }
        slot->stacks = matcher.stacks();
        slot->partial = mp;
        slot->allowed = allowed;
        slot->count = count;
        slot->lastUse = sc.clock;
    }
    return count;
}

bool TokenTrie::allows(const GrammarMatcher& matcher, const std::string& piece)
{
    if (piece.empty())
        return false;
    GrammarMatcher m(matcher);
    return m.accept(piece);
}

}}} // namespace cv::dnn::llm
