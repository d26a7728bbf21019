// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The fixed-size state of a model's recurrent layers (short convolutions, gated delta nets,
// Mamba-2 scans), one block per sequence, beside the paged keys and values of its attention
// layers (llama.cpp's recurrent memory inside its hybrid memory). PagedKVCache owns it, so a
// sequence's state follows the sequence: created zeroed, forked by copy, removed, budgeted.
//
// A state cannot be cut back to an earlier position, so the store keeps checkpoints: copies
// of a sequence's state at chosen lengths. Rewinding to a checkpoint's length restores it;
// rewinding anywhere else is refused, and getResumableLength() names the checkpoint to
// recompute from. Checkpoints are taken during a forward (the layers copy their state after
// the planned token): after the last token of a forward that appends several tokens (a
// prompt, a chat turn), after every `interval`-th position, and after each token whose logits
// the forward returns when it names them (speculative decoding's verification: any rejected
// draft can be rewound to). The last kind is transient: dropped when the sequence's next
// forward is planned.

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_RECURRENT_STATE_STORE_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_RECURRENT_STATE_STORE_HPP

#include <opencv2/core.hpp>

#include <map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

struct BatchPlan;

class RecurrentStateStore
{
public:
    //! The recurrent layers' state sizes in floats, in the order of their index (only while empty).
    void setLayers(const std::vector<size_t>& floatsPerLayer);
    bool enabled() const { return floats_ > 0; }
    int layers() const { return (int)offsets_.size(); }
    //! Floats of one sequence's state block, and where layer r's part starts in it.
    size_t floats() const { return floats_; }
    size_t layerOffset(int r) const { return offsets_[r]; }
    size_t layerFloats(int r) const { return sizes_[r]; }
    size_t bytesPerState() const { return floats_ * sizeof(float); }

    /** Durable checkpoints kept per sequence (the oldest go first) and the interval of
        positions at which they are taken (0: only at the end of multi-token forwards). */
    void setCheckpointPolicy(int maxDurable, int interval);
    int maxDurableCheckpoints() const { return maxDurable_; }
    int checkpointInterval() const { return interval_; }

    //! State blocks held: sequences' states and their checkpoints.
    size_t bytesInUse() const;
    //! Of those, one sequence's (its state and checkpoints; 0 when it has none).
    size_t bytesHeld(int id) const
    {
        const auto it = sequences_.find(id);
        return it == sequences_.end() ? 0 : (1 + it->second.checkpoints.size()) * bytesPerState();
    }
    bool has(int id) const { return sequences_.count(id) != 0; }

    //! A zeroed state for a new sequence.
    void create(int id);
    void remove(int id);
    void clear();
    //! `destination` gets a copy of `source`'s state and durable checkpoints.
    void fork(int source, int destination);
    /** Whether a sequence of `currentLength` tokens can be rewound to `length` (its current
        length, 0, or a checkpoint's length). */
    bool canRewind(int id, int currentLength, int length) const;
    //! The longest rewindable length up to `length` (0 when no checkpoint is at or before it).
    int rewindableAtOrBefore(int id, int currentLength, int length) const;
    //! Checkpoint lengths of a sequence, ascending (for error messages).
    std::vector<int> checkpointLengths(int id) const;
    //! Restores the state for `length` (canRewind() must hold) and drops later checkpoints.
    void rewind(int id, int currentLength, int length);
    float* state(int id);
    const float* state(int id) const;

    /** Bytes the snapshots of a forward will take (before the cache changes anything: the
        budget check), for the sequences of `plan` (sequenceIds, newTokens, positions, tokens
        of each sequence) with `namedLogits` (the batch named its logit tokens). */
    size_t snapshotBytes(const BatchPlan& plan, const std::vector<int>& lengths, bool namedLogits) const;
    /** Fills plan.recurrentState and plan.snapshots for a reserved forward: drops each
        sequence's transient checkpoints, then adds the checkpoints this forward takes
        (buffers the layers fill), evicting the oldest durable ones beyond the maximum.
        `lengths`: each sequence's length before the forward. */
    void plan(BatchPlan& plan, const std::vector<int>& lengths, bool namedLogits);

private:
    struct Checkpoint
    {
        int length = 0;
        bool transient = false;
        std::vector<float> state;
    };
    struct Slot
    {
        std::vector<float> state;
        std::vector<Checkpoint> checkpoints;  // ascending length
    };
    //! Whether the token at `position` of a forward appending `count` tokens to a sequence of
    //! `length` gets a checkpoint (`logit`: the batch named it for logits), and of which kind.
    bool wantsSnapshot(int length, int count, int position, bool logit, bool* transient) const;
    //! Calls f(token, transient) for each checkpoint a forward takes after one of sequence b's tokens.
    template <typename F>
    void forEachSnapshot(const BatchPlan& p, int b, int length, bool namedLogits, F f) const;
    std::vector<float> takeBuffer();
    void giveBack(std::vector<float>& buffer);
    const Slot& slot(int id) const;

    std::vector<size_t> offsets_, sizes_;
    size_t floats_ = 0;
    int maxDurable_ = 4;
    int interval_ = 256;
    std::map<int, Slot> sequences_;
    std::vector<std::vector<float>> spare_;  // released blocks, reused without allocating
    std::vector<char> snapshotTransient_;    // plan()'s scratch
};

}}} // namespace cv::dnn::llm

#endif
