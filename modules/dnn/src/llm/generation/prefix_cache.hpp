// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Which tokens each sequence of the decode loop holds in the KV cache, and the prefix reuse
// built on that (vLLM's prefix caching, llama-server's cache_prompt): a new prompt forks the
// sequence sharing its longest prefix of whole pages, and finished sequences stay in the cache
// until their pages are needed (least recently used first).

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_PREFIX_CACHE_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_PREFIX_CACHE_HPP

#include "../kv_cache/paged_kv_cache.hpp"
#include "../net/lora_adapter.hpp"

#include <map>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class PrefixCache
{
public:
    //! Who holds a sequence: a running request, the prefix cache (releasable), or the caller (sequence 0).
    enum class Holder { Running, Cached, Caller };

    struct Entry
    {
        std::vector<int> tokens;          //!< what the KV cache holds, in order (image rows negative)
        Holder holder = Holder::Running;
        uint64 lastUse = 0;
        std::vector<float> promptLogits;  //!< the logits after the prompt's last token
        int promptLength = 0;             //!< tokens of that prompt (0: no logits kept)
        bool reusable = true;             //!< false once its rows no longer match a fresh run (context shift)
        AdapterSet adapters;              //!< the LoRA adapters its keys and values were computed with
    };

    //! Where a prompt's prefix can come from.
    struct Match
    {
        int source = -1;                  //!< the sequence to fork (-1: none)
        int length = 0;                   //!< its tokens to keep
        const std::vector<float>* logits = nullptr;  //!< the whole prompt's logits when it equals the source's prompt
    };

    explicit PrefixCache(PagedKVCache& cache) : cache_(cache) {}

    //! Starts recording a sequence (replacing what was recorded for its id).
    Entry& track(int sequenceId, Holder holder);
    Entry* find(int sequenceId);
    //! The recorded tokens of a sequence (empty when not recorded).
    const std::vector<int>& tokens(int sequenceId) const;

    /** The longest prefix of `prompt` another sequence computed with the same adapters holds in
        whole pages (text tokens only; an image row ends the comparison), up to the prompt's last
        token, which must be fed for its logits, unless the prompt is a sequence's whole prompt
        with its logits kept. */
    Match longestPrefix(const std::vector<int>& prompt, const AdapterSet& adapters) const;

    /** A running sequence has finished: it goes back to the caller who named it (sequence 0 of
        TextGenerationModel), stays for reuse (`keepForReuse`), or leaves the KV cache. */
    void finished(int sequenceId, bool callers, bool keepForReuse);
    //! Removes a sequence from the KV cache and from the records.
    void remove(int sequenceId);
    //! Releases the least recently used cached sequence; false when there is none.
    bool releaseOldest();
    //! Releases every cached sequence.
    void clear();
    //! Releases the cached sequences computed with LoRA adapter `id`.
    void releaseAdapter(int id);

    int cachedCount() const;
    //! Pages the cached sequences hold (at most what releasing them all frees).
    int cachedPages() const;

private:
    PagedKVCache& cache_;
    std::map<int, Entry> entries_;
    uint64 clock_ = 0;
};

}}} // namespace cv::dnn::llm

#endif
