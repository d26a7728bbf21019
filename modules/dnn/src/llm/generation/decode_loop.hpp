// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The one decode loop of a model: every generation (TextGenerationModel's generate / step API /
// chat, generateBatch, GenerationEngine's requests) is a sequence of it. A step samples the next
// token of every running sequence, feeds them (with their drafts, for speculative decoding) in
// one forward, and keeps the drafts the sampler accepts. Requests join between steps: each
// prompt is prefilled in a forward of its own (so its logits are those of a lone run), after the
// longest prefix of whole KV pages that another sequence holds (prefix reuse, prefix_cache.hpp).

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_DECODE_LOOP_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_DECODE_LOOP_HPP

#include <opencv2/dnn/generation_engine.hpp>
#include "../kv_cache/paged_kv_cache.hpp"
#include "../net/lora_adapter.hpp"
#include "completion.hpp"
#include "drafter.hpp"
#include "prefix_cache.hpp"

#include <deque>
#include <exception>
#include <functional>
#include <memory>

namespace cv {
namespace dnn {
namespace llm {

struct LoopSequence;
class LLMNetState;

/** A request as the loop runs it: the prompt already turned into token ids. */
struct LoopRequest
{
    int id = 0;                       //!< the caller's id (GenerationResult::requestId)
    std::vector<int> prompt;          //!< token ids; image rows are negative (-1 - row of `prepare`'s table)
    GenerationConfig config;
    std::vector<std::string> extraStops;  //!< the chat template's end-of-turn markers
    /** Readies the Net for this prompt's prefill forward, which feeds `rest` (the prompt after
        the reused prefix): the image table and non-causal spans of a prompt with images. */
    std::function<void(const std::vector<int>& rest)> prepare;
    //! Called after the prefill forward (the vision prompter commits its table).
    std::function<void()> prefilled;
    /** >= 0: continue this sequence of the cache, keeping its first `keepLength` tokens
        (TextGenerationModel's sequence 0, a chat's earlier turns); the sequence stays in the
        cache when the request ends. -1: the loop takes a sequence of its own. */
    int sequenceId = -1;
    int keepLength = 0;
    //! Its sequence stays in the cache for prefix reuse once it has ended (GenerationEngine's requests).
    bool keepForReuse = false;
    //! Each new piece of text; false cancels.
    std::function<bool(const String& piece)> onPiece;
    /** After each sampled token, before onPiece (which hears only non-empty pieces): for a
        snapshot of the running request (LoopSequence::updateResult). */
    std::function<void(const LoopSequence& sequence)> onTokens;
    //! The end (any reason), after the sequence has left the loop.
    std::function<void(const LoopSequence& sequence)> onFinish;
    Drafter* draftModel = nullptr;    //!< the draft model when config.draftTokens asks for it
};

/** A sequence of the loop: its request, sampler state and counts. Shared with the caller, who
    may read it after the request has ended. */
struct LoopSequence
{
    LoopRequest request;
    int sequenceId = -1;
    AdapterSet adapters;              //!< the LoRA adapters it runs with (its config's, or the loop's defaults)
    std::unique_ptr<Completion> completion;
    std::vector<float> logits;        //!< of the next token, unless `pending` is set
    int pending = -1;                 //!< a sampled token not fed yet (after a rejected draft)
    std::vector<int> draft;           //!< of the step being run
    std::vector<int> context;         //!< the drafter's view: the sequence's tokens and the pending one
    Drafter* drafter = nullptr;
    std::unique_ptr<PromptLookupDrafter> lookup;
    int length = 0;                   //!< tokens the sequence held before the step
    int firstRow = 0;                 //!< its first logit row in the step's output
    int reservedPages = 0;            //!< pages it may still take (prompt and maxNewTokens)
    int sharedPages = 0;              //!< pages it shares with the sequence its prefix came from
    int cachedPromptTokens = 0, prefilledTokens = 0;
    int drafted = 0, draftsKept = 0;
    FinishReason finishReason = FinishReason::None;
    std::string error;
    std::exception_ptr failure;       //!< what ended it with FinishReason::Error

    bool done() const { return finishReason != FinishReason::None; }
    GenerationResult result() const;
    /** Brings a result taken earlier of this sequence up to date: the counts, and the tokens and
        log-probabilities generated since (appended; the text is left to the caller). */
    void updateResult(GenerationResult& r) const;
};

class DecodeLoop
{
public:
    DecodeLoop(Net& net, PagedKVCache& cache, const Tokenizer& tokenizer);

    /** Admits a request now: its completion, prefix reuse and prefill (one forward). Throws on
        a bad request, leaving other sequences as they were. No budget check (the caller's
        sequence-0 generation may use what the cache holds, as it always could). */
    std::shared_ptr<LoopSequence> admitNow(const LoopRequest& request);
    /** Queues a request: step() admits it when there is room (maxRunning and pages for its
        prompt and maxNewTokens, after releasing cached sequences). A request that can never
        fit, or whose admission fails, ends with FinishReason::Error. */
    void enqueue(const LoopRequest& request);

    /** Admits what fits, then one decode step of every running sequence. False when nothing
        waits or runs. A forward that fails ends the running sequences with FinishReason::Error. */
    bool step();
    //! Ends a waiting or running request (FinishReason::Cancelled); false if unknown.
    bool cancel(int requestId);

    bool idle() const { return waiting_.empty() && running_.empty(); }
    int waitingCount() const { return (int)waiting_.size(); }
    int runningCount() const { return (int)running_.size(); }

    void setMaxRunning(int n);
    int maxRunning() const { return maxRunning_; }
    PrefixCache& prefixCache() { return prefixCache_; }
    const PrefixCache& prefixCache() const { return prefixCache_; }
    //! The counters, with the waiting and running requests and the cache's pages now.
    GenerationEngineStats stats() const;

    /** The tokens the cache holds for a sequence (image rows negative), as the loop fed them;
        setSequenceTokens() records those of a sequence loaded from a file. */
    const std::vector<int>& sequenceTokens(int sequenceId) const { return prefixCache_.tokens(sequenceId); }
    void setSequenceTokens(int sequenceId, const std::vector<int>& tokens, const AdapterSet& adapters = AdapterSet());
    //! The LoRA adapters a sequence's keys and values were computed with.
    const AdapterSet& sequenceAdapters(int sequenceId);

    /** LoRA adapters: the scale an adapter has for requests whose config names none (0: off;
        TextGenerationModel::loadAdapter). */
    void setAdapterScale(int id, float scale);
    float adapterScale(int id) const;
    //! Before an adapter is unloaded: refused while a request runs with it; its cached sequences are released.
    void releaseAdapter(int id);
    //! The adapters of a request: its config's (the others off), or the defaults when it names none.
    AdapterSet adaptersFor(const GenerationConfig& cfg) const;

private:
    bool admitWaiting();
    bool fits(const LoopRequest& request, int& reservation);
    int outstandingPages() const;
    void prefill(LoopSequence& s);
    bool sampleNext(LoopSequence& s);
    void decode();
    void proposeDrafts();
    bool keepDrafts(LoopSequence& s, const Mat& out);
    void shiftContext(LoopSequence& s);
    void feed(LoopSequence& s, const std::vector<int>& tokens);
    void emit(LoopSequence& s, const String& piece);
    void end(LoopSequence& s, FinishReason reason);
    void retire(size_t index);
    void notifyFinish(const LoopSequence& s);
    void failRunning(const std::exception_ptr& failure);
    int newSequenceId();
    int pagesFor(size_t tokens) const { return (int)((tokens + cache_.getPageSize() - 1) / cache_.getPageSize()); }
    /** Pages' worth of bytes a sequence's recurrent state may take (hybrid models; 0 otherwise):
        the state, its durable checkpoints and a verification's transient ones for `drafts`. */
    int recurrentPages(int drafts) const;

    Net& net_;
    Ptr<LLMNetState> state_;          // the Net's: each sequence's adapters are set there
    PagedKVCache& cache_;
    std::map<int, float> adapterScales_;  // loaded adapters' default scales
    const Tokenizer& tokenizer_;
    PrefixCache prefixCache_;
    int maxRunning_ = 16;
    int nextSequenceId_ = 1;          // 0 is TextGenerationModel's
    std::deque<LoopRequest> waiting_;
    std::vector<std::shared_ptr<LoopSequence>> running_;
    GenerationEngineStats stats_;     // what the loop counts as it goes
    double generatedByRetired_ = 0;
    // a step's scratch, reused: a steady step allocates nothing here
    std::vector<int> tokens_, sequenceIds_, logitTokens_;
    std::vector<int> draftIds_, draftLimits_;
    std::vector<uchar> drafting_;
    std::vector<const std::vector<int>*> draftContexts_;
    std::vector<std::vector<int>*> drafts_;
    Mat input_;
};

}}} // namespace cv::dnn::llm

#endif
