// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "recurrent_state_store.hpp"
#include "batch_plan.hpp"

#include <algorithm>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

void RecurrentStateStore::setLayers(const std::vector<size_t>& floatsPerLayer)
{
    if (!sequences_.empty())
        CV_Error(Error::StsError, "KVCache: recurrent layers can only be set while the cache is empty");
    offsets_.clear();
    sizes_ = floatsPerLayer;
    floats_ = 0;
    // A sequence's block is allocated whole: a bound well above real models' (Qwen3.5-27B-sized
    // delta nets take ~150 MB) keeps a hostile file's sizes from asking for terabytes.
    const size_t kMaxFloats = (size_t)1 << 31;
    for (size_t n : floatsPerLayer)
    {
        CV_CheckGT(n, (size_t)0, "KVCache: a recurrent layer's state must not be empty");
        if (n > kMaxFloats - floats_)
            CV_Error(Error::StsOutOfRange, format("KVCache: the recurrent layers' state would take more than %zu bytes "
                                                  "per sequence; the model's recurrent sizes are implausible",
                                                  kMaxFloats * sizeof(float)));
        offsets_.push_back(floats_);
        floats_ += n;
    }
    spare_.clear();
}

void RecurrentStateStore::setCheckpointPolicy(int maxDurable, int interval)
{
    CV_CheckGE(maxDurable, 0, "KVCache: the number of recurrent-state checkpoints must not be negative");
    CV_CheckGE(interval, 0, "KVCache: the recurrent-state checkpoint interval must not be negative");
    maxDurable_ = maxDurable;
    interval_ = interval;
    for (auto& kv : sequences_)
    {
        std::vector<Checkpoint>& c = kv.second.checkpoints;
        int durable = 0;
        for (const Checkpoint& k : c)
            durable += !k.transient;
        for (size_t i = 0; i < c.size() && durable > maxDurable_;)
            if (!c[i].transient)
            {
                giveBack(c[i].state);
                c.erase(c.begin() + i);
                durable--;
            }
            else
                i++;
    }
}

size_t RecurrentStateStore::bytesInUse() const
{
    size_t blocks = 0;
    for (const auto& kv : sequences_)
        blocks += 1 + kv.second.checkpoints.size();
    return blocks * bytesPerState();
}

std::vector<float> RecurrentStateStore::takeBuffer()
{
    std::vector<float> b;
    if (!spare_.empty())
    {
        b.swap(spare_.back());
        spare_.pop_back();
    }
    b.resize(floats_);
    return b;
}

void RecurrentStateStore::giveBack(std::vector<float>& buffer)
{
    // A bounded pool, so that steady decoding (checkpoints replaced, drafts' transient ones
    // dropped and retaken) allocates nothing: up to 64 blocks or 256 MB, at least 4 blocks.
    const size_t keep = std::max<size_t>(4, std::min<size_t>(64, ((size_t)256 << 20) / std::max<size_t>(1, bytesPerState())));
    if (buffer.size() == floats_ && spare_.size() < keep)
    {
        spare_.emplace_back();
        spare_.back().swap(buffer);
    }
    std::vector<float>().swap(buffer);
}

const RecurrentStateStore::Slot& RecurrentStateStore::slot(int id) const
{
    const auto it = sequences_.find(id);
    CV_Assert(it != sequences_.end());
    return it->second;
}

void RecurrentStateStore::create(int id)
{
    Slot& s = sequences_[id];
    s.state = takeBuffer();
    std::fill(s.state.begin(), s.state.end(), 0.f);
}

void RecurrentStateStore::remove(int id)
{
    const auto it = sequences_.find(id);
    if (it == sequences_.end())
        return;
    giveBack(it->second.state);
    for (Checkpoint& c : it->second.checkpoints)
        giveBack(c.state);
    sequences_.erase(it);
}

void RecurrentStateStore::clear()
{
    while (!sequences_.empty())
        remove(sequences_.begin()->first);
}

void RecurrentStateStore::fork(int source, int destination)
{
    const Slot& src = slot(source);
    Slot copy;
    copy.state = takeBuffer();
    std::copy(src.state.begin(), src.state.end(), copy.state.begin());
    for (const Checkpoint& c : src.checkpoints)
        if (!c.transient)
        {
            Checkpoint k;
            k.length = c.length;
            k.state = takeBuffer();
            std::copy(c.state.begin(), c.state.end(), k.state.begin());
            copy.checkpoints.push_back(std::move(k));
        }
    sequences_[destination] = std::move(copy);
}

bool RecurrentStateStore::canRewind(int id, int currentLength, int length) const
{
    if (length == currentLength || length == 0)
        return true;
    for (const Checkpoint& c : slot(id).checkpoints)
        if (c.length == length)
            return true;
    return false;
}

int RecurrentStateStore::rewindableAtOrBefore(int id, int currentLength, int length) const
{
    if (length >= currentLength)
        return currentLength;
    int best = 0;
    for (const Checkpoint& c : slot(id).checkpoints)
        if (c.length <= length)
            best = std::max(best, c.length);
    return best;
}

std::vector<int> RecurrentStateStore::checkpointLengths(int id) const
{
    std::vector<int> lengths;
    for (const Checkpoint& c : slot(id).checkpoints)
        lengths.push_back(c.length);
    return lengths;
}

void RecurrentStateStore::rewind(int id, int currentLength, int length)
{
    CV_Assert(canRewind(id, currentLength, length));
    Slot& s = sequences_.at(id);
    if (length == 0)
        std::fill(s.state.begin(), s.state.end(), 0.f);
    for (size_t i = 0; i < s.checkpoints.size();)
    {
        Checkpoint& c = s.checkpoints[i];
        if (length != currentLength && c.length == length)
            std::copy(c.state.begin(), c.state.end(), s.state.begin());
        if (c.length > length)
        {
            giveBack(c.state);
            s.checkpoints.erase(s.checkpoints.begin() + i);
        }
        else
            i++;
    }
}

float* RecurrentStateStore::state(int id)
{
    const auto it = sequences_.find(id);
    CV_Assert(it != sequences_.end());
    return it->second.state.data();
}

const float* RecurrentStateStore::state(int id) const
{
    return slot(id).state.data();
}

bool RecurrentStateStore::wantsSnapshot(int length, int count, int position, bool logit, bool* transient) const
{
    const int after = position + 1;
    *transient = false;
    if (count > 1 && after == length + count)
        return true;  // the end of a prompt or chat turn
    if (interval_ > 0 && after % interval_ == 0)
        return true;
    *transient = true;
    return logit && after != length + count;  // a verified draft that may be rejected
}

template <typename F>
void RecurrentStateStore::forEachSnapshot(const BatchPlan& p, int b, int length, bool namedLogits, F f) const
{
    // The sequence's tokens ascend in the batch, and so do the logit tokens.
    size_t logit = 0;
    for (int i = p.sequenceTokenStart[b]; i < p.sequenceTokenStart[b + 1]; i++)
    {
        const int t = p.sequenceTokens[i];
        while (logit < p.logitTokens.size() && p.logitTokens[logit] < t)
            logit++;
        const bool isLogit = namedLogits && logit < p.logitTokens.size() && p.logitTokens[logit] == t;
        bool transient = false;
        if (wantsSnapshot(length, p.newTokens[b], p.position[t], isLogit, &transient))
            f(t, transient);
    }
}

size_t RecurrentStateStore::snapshotBytes(const BatchPlan& p, const std::vector<int>& lengths, bool namedLogits) const
{
    if (!enabled())
        return 0;
    size_t blocks = 0;
    for (int b = 0; b < p.sequences(); b++)
    {
        int durable = 0;
        forEachSnapshot(p, b, lengths[b], namedLogits, [&](int, bool transient) { transient ? blocks++ : durable++; });
        blocks += std::min(durable, maxDurable_);
        if (!sequences_.count(p.sequenceIds[b]))
            blocks++;  // its state
    }
    return blocks * bytesPerState();
}

void RecurrentStateStore::plan(BatchPlan& p, const std::vector<int>& lengths, bool namedLogits)
{
    p.recurrentState.clear();
    p.snapshots.clear();
    if (!enabled())
        return;
    for (int b = 0; b < p.sequences(); b++)
    {
        const int id = p.sequenceIds[b];
        if (!sequences_.count(id))
            create(id);
        Slot& s = sequences_[id];
        p.recurrentState.push_back(s.state.data());
        for (size_t i = 0; i < s.checkpoints.size();)
            if (s.checkpoints[i].transient)
            {
                giveBack(s.checkpoints[i].state);
                s.checkpoints.erase(s.checkpoints.begin() + i);
            }
            else
                i++;
        // This forward's checkpoints; of its durable ones only the last maxDurable_ are kept.
        const size_t first = p.snapshots.size();
        int durable = 0;
        forEachSnapshot(p, b, lengths[b], namedLogits, [&](int t, bool transient) {
            durable += !transient;
            p.snapshots.push_back(BatchPlan::StateSnapshot{b, t, nullptr});
            snapshotTransient_.push_back(transient);
        });
        int skip = std::max(0, durable - maxDurable_);
        size_t out = first;
        for (size_t i = first; i < p.snapshots.size(); i++)
        {
            BatchPlan::StateSnapshot snap = p.snapshots[i];
            const bool transient = snapshotTransient_[i - first] != 0;
            if (!transient && skip > 0)
            {
                skip--;
                continue;
            }
            Checkpoint c;
            c.length = p.position[snap.token] + 1;
            c.transient = transient;
            c.state = takeBuffer();
            // Checkpoints stay sorted: this forward's come after the sequence's earlier ones.
            s.checkpoints.push_back(std::move(c));
            snap.state = s.checkpoints.back().state.data();
            p.snapshots[out++] = snap;
        }
        p.snapshots.resize(out);
        snapshotTransient_.clear();
        int held = 0;
        for (const Checkpoint& c : s.checkpoints)
            held += !c.transient;
        for (size_t i = 0; i < s.checkpoints.size() && held > maxDurable_;)
            if (!s.checkpoints[i].transient)
            {
                giveBack(s.checkpoints[i].state);
                s.checkpoints.erase(s.checkpoints.begin() + i);
                held--;
            }
            else
                i++;
    }
}

}}} // namespace cv::dnn::llm
