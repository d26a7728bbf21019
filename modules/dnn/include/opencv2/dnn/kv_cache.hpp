// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_KV_CACHE_HPP
#define OPENCV_DNN_KV_CACHE_HPP

#include <opencv2/dnn.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief The keys and values of a language model's Net: one paged cache shared by all its
attention layers.

Memory is a pool of pages of getPageSize() tokens (all layers' keys and values of those
tokens); each sequence has a page table. A sequence grows by taking pages, so nothing is copied
or moved as it grows. Sequences are named by non-negative ids of the caller's choice; a
sequence exists once it holds a token (see setLLMBatch()) or is made by forkSequence().
Models with sliding-window attention layers (Gemma 2/3) keep those layers in pages of their
own, released once their tokens are out of the window.

Memory is bounded by a budget (setMemoryBudget()); a forward that would exceed it, or a
sequence that would exceed the model's context, raises a cv::Exception before anything in the
cache changes.

Methods must not be called while the Net runs a forward.
*/
class CV_EXPORTS_W KVCache
{
public:
    virtual ~KVCache();

    //! Tokens per page.
    CV_WRAP virtual int getPageSize() const = 0;
    //! Tokens one sequence may hold: the model's context length.
    CV_WRAP virtual int getMaxSequenceLength() const = 0;
    //! Bytes one token takes in the cache (all layers, keys and values).
    CV_WRAP virtual size_t getBytesPerToken() const = 0;

    /** @brief Limits the memory of the pages (bytes; rounded down to whole pages).
    A budget below the pages in use is an error. */
    CV_WRAP virtual void setMemoryBudget(size_t bytes) = 0;
    CV_WRAP virtual size_t getMemoryBudget() const = 0;
    /** @brief Bytes of the pages holding tokens. With sliding-window layers (Gemma 2/3) it
    grows more slowly than getBytesPerToken() times the tokens: their pages are released once
    out of every window. */
    CV_WRAP virtual size_t getBytesInUse() const = 0;

    /** @brief Element type of the stored keys and values: CV_32F (default), CV_16F (half
    precision) or CV_8S (8-bit blocks with one float scale per head and token). Only while
    the cache is empty. */
    CV_WRAP virtual void setStorageType(int type) = 0;
    CV_WRAP virtual int getStorageType() const = 0;

    //! Sequence ids the cache holds, ascending.
    CV_WRAP virtual std::vector<int> getSequenceIds() const = 0;
    CV_WRAP virtual bool hasSequence(int sequenceId) const = 0;
    //! Tokens a sequence holds (0 when it does not exist).
    CV_WRAP virtual int getSequenceLength(int sequenceId) const = 0;
    /** @brief The longest length up to `length` that truncateSequence() can keep and a forward
    can continue from: `length` (capped at the sequence's), or 0 when sliding-window layers
    have already released positions that a token at `length` would attend to; with recurrent
    layers, the sequence's length or the longest checkpoint up to `length` (see
    setRecurrentCheckpoints()). */
    CV_WRAP virtual int getResumableLength(int sequenceId, int length) const = 0;

    //! Forgets a sequence and frees the pages no other sequence shares.
    CV_WRAP virtual void removeSequence(int sequenceId) = 0;
    /** @brief Keeps the first `length` tokens of a sequence (rewind); a longer length changes
    nothing. A length that getResumableLength() does not allow is an error. */
    CV_WRAP virtual void truncateSequence(int sequenceId, int length) = 0;
    /** @brief Makes `destinationId` a copy of `sourceId` that shares its pages (nothing is copied:
    a shared page that is partly filled is copied when one of them writes to it).
    `destinationId` must not exist. */
    CV_WRAP virtual void forkSequence(int sourceId, int destinationId) = 0;
    /** @brief Context shifting: drops tokens [first, first + count) of a sequence; the tokens
    after them move back by `count` positions (their keys are re-rotated accordingly). */
    CV_WRAP virtual void discardTokens(int sequenceId, int first, int count) = 0;
    //! Removes every sequence.
    CV_WRAP virtual void clear() = 0;

    //! Pages holding tokens (with sliding-window layers: the pages of every page group).
    CV_WRAP virtual int getPagesInUse() const = 0;
    //! Pages of getPageSize() tokens of every layer that the budget still allows.
    CV_WRAP virtual int getPagesFree() const = 0;
    //! Pages in use by more than one sequence.
    CV_WRAP virtual int getPagesShared() const = 0;

    /** @brief Saves a sequence to a file: its keys and values in the storage type, the
    identity of the model (see below), optionally its token ids, a format version and a
    checksum. The file is written atomically (a temporary file in the same folder, then renamed).

    @param sequenceId the sequence to save (it must exist).
    @param path the file.
    @param tokens the sequence's token ids (getSequenceLength() of them), or empty: the cache
    does not know them, loadSequence() gives them back.

    A sequence with sliding-window layers (Gemma 2/3) is saved as far as it can continue: the
    window layers' rows that a next token still attends to. Its loaded copy continues exactly
    but cannot be truncated to a length whose rows were not saved (getResumableLength()).

    "The same model" is: the same Net layers (type, name, every parameter, the shape and type of
    every weight), which includes the context length chosen at load, and the same bytes in a
    sample of every weight (all of a small weight, three 64-byte windows of a large one). */
    CV_WRAP virtual void saveSequence(int sequenceId, const String& path,
                                      const std::vector<int>& tokens = std::vector<int>()) const = 0;
    /** @brief Loads a file of saveSequence() into sequence `sequenceId` (which it replaces if it
    exists) and returns the number of tokens it holds.

    Rows saved in another storage type are converted to this cache's (decoded to float and
    stored again: exact from CV_32F, and from a type to itself). A file that is not whole (truncated,
    a checksum that does not match), of another format version, or of another model, a sequence
    longer than the context or beyond the memory budget: a cv::Exception naming the problem,
    and the cache is left unchanged.
    @param path the file.
    @param sequenceId the sequence to load into (a non-negative id).
    @param tokens receives the token ids the file holds (empty when saved without them). */
    CV_WRAP virtual int loadSequence(const String& path, int sequenceId, CV_OUT std::vector<int>& tokens) = 0;

    /** @brief Bytes of one sequence's recurrent state: the fixed-size state of a hybrid model's
    recurrent layers (short convolutions, gated delta nets, Mamba-2 scans), held beside the keys
    and values of its attention layers; 0 for a model without such layers. Each checkpoint of
    a sequence takes as much again; states and checkpoints count in getBytesInUse() and against
    the budget. */
    CV_WRAP virtual size_t getRecurrentStateBytes() const = 0;
    /** @brief How a sequence's recurrent state can be rewound. A state cannot be cut back to a
    position, so copies (checkpoints) are kept: at the end of every forward that appends several
    tokens (a prompt, a chat turn), at every multiple of `interval` positions (0: never), the
    last `maxCheckpoints` of them, and transiently after each token whose logits a forward
    returns when the batch names them (speculative decoding's verification). truncateSequence()
    reaches the sequence's length, 0 and those lengths only; getResumableLength() names the
    checkpoint to recompute from. Defaults: 4 checkpoints, interval 256. */
    CV_WRAP virtual void setRecurrentCheckpoints(int maxCheckpoints, int interval) = 0;
};

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
