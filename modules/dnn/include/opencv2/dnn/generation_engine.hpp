// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_GENERATION_ENGINE_HPP
#define OPENCV_DNN_GENERATION_ENGINE_HPP

#include <opencv2/dnn/text_generation.hpp>

#include <functional>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief What a GenerationEngine request has produced: its text so far, and once it has ended,
why (finishReason) and its token counts. */
struct CV_EXPORTS_W_SIMPLE GenerationResult
{
    CV_WRAP GenerationResult() {}

    CV_PROP_RW int requestId = -1;
    CV_PROP_RW String text;                //!< the completion (stop strings and stop tokens excluded)
    CV_PROP_RW std::vector<int> tokenIds;  //!< its token ids
    /** With GenerationConfig::topLogprobs >= 0, per token of tokenIds: its log-probability under
    the model's raw logits at that step (log-softmax before penalties, temperature, top-k / top-p /
    min-p and grammar masks, as OpenAI reports them). Filled as tokens come: a running request's
    result has them for every token so far. */
    CV_PROP_RW std::vector<float> tokenLogprobs;
    /** With GenerationConfig::topLogprobs = k > 0: per token of tokenIds, the k most likely token
    ids at that step, most likely first (flattened: tokenIds.size() * k entries; k is at most the
    vocabulary's size). */
    CV_PROP_RW std::vector<int> topLogprobTokenIds;
    //! The log-probabilities of topLogprobTokenIds, in the same order.
    CV_PROP_RW std::vector<float> topLogprobs;
    /** "" while the request waits or runs; then "stop" (an end-of-generation or stop token, a stop
    string, the grammar's end), "length" (maxNewTokens or the context), "cancelled" or "error". */
    CV_PROP_RW String finishReason;
    CV_PROP_RW String error;               //!< the message of a failed request ("error")
    CV_PROP_RW int promptTokens = 0;       //!< tokens of the prompt (image rows included)
    CV_PROP_RW int cachedPromptTokens = 0; //!< prompt tokens reused from the KV cache, not run again
    CV_PROP_RW int generatedTokens = 0;    //!< tokens generated (= tokenIds.size())
    CV_PROP_RW int draftedTokens = 0;      //!< speculative decoding: tokens drafted
    CV_PROP_RW int acceptedDraftTokens = 0; //!< drafted tokens the model kept

    //! True once the request has ended (finishReason is set).
    CV_WRAP bool isDone() const { return !finishReason.empty(); }
};

/** @brief One request to a GenerationEngine: a prompt (text, chat messages or token ids), its
settings, and (C++) callbacks for its pieces of text and its end. */
struct CV_EXPORTS_W_SIMPLE GenerationRequest
{
    CV_WRAP GenerationRequest() {}

    //! The prompt as text (BOS added as the model asks). Give one of prompt, roles + contents, messagesJson, promptTokenIds.
    CV_PROP_RW String prompt;
    /** Chat messages (roles[i], contents[i]: "system", "user", "assistant"), rendered with the
    model's chat template (TextGenerationModel::getChatTemplate()) and a generation prompt; the
    template's end-of-turn markers stop generation. */
    CV_PROP_RW std::vector<String> roles;
    CV_PROP_RW std::vector<String> contents;
    /** Chat messages as a JSON array (ChatTemplate::applyJSON: "role", "content", and whatever
    else the template reads, e.g. "tool_calls"), rendered like roles / contents. */
    CV_PROP_RW String messagesJson;
    //! Further template variables for messagesJson, a JSON object (e.g. {"tools": [...]}); empty: none.
    CV_PROP_RW String chatContextJson;
    //! The prompt as token ids (no tokenizer involved).
    CV_PROP_RW std::vector<int> promptTokenIds;
    //! Images at the prompt's `<__media__>` markers (a model loaded with its mmproj), in order.
    CV_PROP_RW std::vector<Mat> images;
    CV_PROP_RW GenerationConfig config;

    /** Receives each new piece of text (whole UTF-8 characters) on the thread that runs the
    engine; returning false cancels the request. C++ only (Python reads takeText()). Callbacks
    run while the engine steps: they may submit(), cancel() and read results, but must not
    step the loop (step(), wait(), getStats(), the model's generate() / next() / chat()). */
    std::function<bool(int requestId, const String& piece)> onPiece;
    /** Receives the result once the request has ended, on the thread that runs the engine. With
    it, the engine keeps no result for takeResult(). C++ only. */
    std::function<void(const GenerationResult& result)> onFinish;
};

/** @brief Counters of a GenerationEngine, for monitoring. Token counts and times since the
engine was made. */
struct CV_EXPORTS_W_SIMPLE GenerationEngineStats
{
    CV_WRAP GenerationEngineStats() {}

    CV_PROP_RW int waitingRequests = 0;   //!< submitted, not admitted yet
    CV_PROP_RW int runningRequests = 0;   //!< admitted, generating
    CV_PROP_RW double finishedRequests = 0; //!< ended (any reason)
    CV_PROP_RW double promptTokens = 0;   //!< prompt tokens of admitted requests
    CV_PROP_RW double cachedPromptTokens = 0; //!< of those, reused from the cache (prefix reuse)
    CV_PROP_RW double prefilledTokens = 0; //!< prompt tokens run through the Net
    CV_PROP_RW double generatedTokens = 0;
    CV_PROP_RW double prefillSeconds = 0; //!< time in prompt forwards
    CV_PROP_RW double decodeSeconds = 0;  //!< time in decode steps (sampling included)
    CV_PROP_RW double prefillTokensPerSecond = 0; //!< prefilledTokens / prefillSeconds
    CV_PROP_RW double decodeTokensPerSecond = 0;  //!< generatedTokens / decodeSeconds
    CV_PROP_RW double cacheHits = 0;      //!< requests that reused a cached prefix
    CV_PROP_RW int cachedSequences = 0;   //!< finished sequences kept for prefix reuse
    CV_PROP_RW int kvPagesInUse = 0;      //!< KVCache::getPagesInUse()
    CV_PROP_RW int kvPagesFree = 0;       //!< KVCache::getPagesFree()
};

/** @brief One decode loop over a model that takes requests at any time (continuous batching).

submit() may be called from any thread and returns at once with the request's id. The loop --
run() on a thread of the caller's, or step() called repeatedly -- admits waiting requests while
there is room (getMaxRunningRequests() sequences, and KV pages for each admitted request's
prompt and maxNewTokens), runs every running request's next token (and drafts) in one forward,
and ends requests as they finish or are cancelled. A request's failure (a prompt too long for
the context, a bad grammar, images without a projector, ...) ends that request with
finishReason "error" and touches no other.

Prefix reuse: a prompt that starts with whole KV pages another request holds -- a running one,
or a finished one whose sequence the engine keeps while the memory budget allows (least
recently used released first) -- shares those pages (copy on write) instead of computing them
again; a prompt equal to another's is not run at all. GenerationResult::cachedPromptTokens
counts them.

With greedy settings a request's tokens equal those of a lone TextGenerationModel::generate()
of the same prompt (decode steps in a batch are bit-identical to lone ones; a prompt's part
after a reused prefix agrees within float rounding when it is over 32 tokens).

The engine shares its model's Net and KV cache with the TextGenerationModel it was made from:
TextGenerationModel's own calls are requests of the same loop (on sequence 0, which the engine
never uses for its own requests), so a step-API generation started with start() also advances
when the engine steps (next() then returns what was generated meanwhile). Destroying the engine
cancels its requests that have not ended; join a run() thread (stop()) before.

@code
Ptr<GenerationEngine> engine = GenerationEngine::create(model);
GenerationRequest r;
r.prompt = "Once upon a time";
r.onPiece = [](int id, const String& piece) { std::cout << piece; return true; };
int id = engine->submit(r);
while (engine->step()) {}
@endcode
*/
class CV_EXPORTS_W GenerationEngine
{
public:
    virtual ~GenerationEngine();

    //! The engine of a model (the same one each time for the same model).
    CV_WRAP static Ptr<GenerationEngine> create(const TextGenerationModel& model);
    //! Loads a model (as TextGenerationModel(modelPath, options)) and makes its engine.
    CV_WRAP static Ptr<GenerationEngine> create(const String& modelPath, const LLMLoadOptions& options = LLMLoadOptions());

    /** @brief Queues a request and returns its id (positive, increasing). The request is checked
    when it is admitted; its errors end it with finishReason "error". */
    CV_WRAP virtual int submit(const GenerationRequest& request) = 0;
    /** @brief Ends a waiting or running request (finishReason "cancelled"; it keeps the text it
    has). False when the id is unknown or has ended already. Any thread. */
    CV_WRAP virtual bool cancel(int requestId) = 0;

    /** @brief One step of the loop: admits what fits, then one forward of every running request.
    Returns true while requests wait or run. Callbacks run inside it. */
    CV_WRAP virtual bool step() = 0;
    /** @brief Runs the loop until stop(): steps while there is work, sleeps while there is none.
    Call it on a thread of your own; submit(), cancel() and the getters may be called meanwhile. */
    CV_WRAP virtual void run() = 0;
    //! Makes the run() calls now running return after their current step. Any thread.
    CV_WRAP virtual void stop() = 0;

    /** @brief The text produced since the last call for this request (Python's streaming).
    Empty while nothing new came; see isDone(). */
    CV_WRAP virtual String takeText(int requestId) = 0;
    //! Whether a request has ended (false for an unknown id).
    CV_WRAP virtual bool isDone(int requestId) const = 0;
    /** @brief The result of a request (finished or not: a running request's has its text, tokens
    and log-probabilities so far, also when called from its onPiece). Once a finished request's
    result is taken, the engine forgets it: results of requests without onFinish are kept until
    taken. */
    CV_WRAP virtual GenerationResult takeResult(int requestId) = 0;
    /** @brief Steps the loop (when no run() thread does) until the request ends, and takes its
    result. Not for a request with onFinish (its result goes there). */
    CV_WRAP virtual GenerationResult wait(int requestId) = 0;

    //! Most requests generating at once (default 16).
    CV_WRAP virtual void setMaxRunningRequests(int n) = 0;
    CV_WRAP virtual int getMaxRunningRequests() const = 0;
    /** @brief Whether finished requests' sequences stay in the KV cache for prefix reuse
    (default true; they are released, least recently used first, when a request needs the pages). */
    CV_WRAP virtual void setPrefixReuse(bool enabled) = 0;
    //! Releases every cached finished sequence.
    CV_WRAP virtual void clearPrefixCache() = 0;

    /** @brief The engine's counters. Any thread, at once: while a step runs (e.g. on a run()
    thread) they are those as of the end of the last step, plus the requests submitted since. */
    CV_WRAP virtual GenerationEngineStats getStats() const = 0;
};

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
