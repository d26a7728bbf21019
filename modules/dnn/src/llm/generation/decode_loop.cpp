// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "decode_loop.hpp"
#include "batch_generation.hpp"
#include "../net/llm_net_state.hpp"
#include "../tokenizer/tokenizer.hpp"
#include <opencv2/dnn/llm.hpp>

#include <climits>

namespace cv {
namespace dnn {
namespace llm {

GenerationResult LoopSequence::result() const
{
    GenerationResult r;
    r.finishReason = finishReasonName(finishReason);
    r.error = error;
    updateResult(r);
    if (completion)
        r.text = completion->text();
    return r;
}

// The completion's vectors only grow: what `r` lacks is their tail.
template <typename T>
static void appendTail(std::vector<T>& to, const std::vector<T>& from)
{
    if (to.size() < from.size())
        to.insert(to.end(), from.begin() + to.size(), from.end());
}

void LoopSequence::updateResult(GenerationResult& r) const
{
    r.requestId = request.id;
    r.promptTokens = (int)request.prompt.size();
    r.cachedPromptTokens = cachedPromptTokens;
    r.draftedTokens = drafted;
    r.acceptedDraftTokens = draftsKept;
    if (!completion)
        return;
    appendTail(r.tokenIds, completion->generated());
    appendTail(r.tokenLogprobs, completion->tokenLogprobs());
    appendTail(r.topLogprobTokenIds, completion->topLogprobTokenIds());
    appendTail(r.topLogprobs, completion->topLogprobs());
    r.generatedTokens = (int)r.tokenIds.size();
}

// One row of vocabulary logits per row the forward returned.
static Mat logitRows(const Mat& out)
{
    return out.reshape(1, (int)(out.total() / out.size[out.dims - 1]));
}

static std::string messageOf(const std::exception_ptr& failure)
{
    try
    {
        std::rethrow_exception(failure);
    }
    catch (const cv::Exception& e)
    {
        return e.err;
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    catch (...)
    {
        return "unknown error";
    }
}

DecodeLoop::DecodeLoop(Net& net, PagedKVCache& cache, const Tokenizer& tokenizer)
    : net_(net), state_(LLMNetState::of(net)), cache_(cache), tokenizer_(tokenizer), prefixCache_(cache)
{
    CV_Assert(state_);
}

void DecodeLoop::setAdapterScale(int id, float scale)
{
    if (!state_->adapter(id))
        CV_Error(Error::StsBadArg, format("TextGenerationModel: LoRA adapter %d is not loaded", id));
    if (!std::isfinite(scale))
        CV_Error(Error::StsBadArg, format("TextGenerationModel: the scale of LoRA adapter %d is not finite", id));
    adapterScales_[id] = scale;
}

float DecodeLoop::adapterScale(int id) const
{
    const auto it = adapterScales_.find(id);
    if (it == adapterScales_.end())
        CV_Error(Error::StsBadArg, format("TextGenerationModel: LoRA adapter %d is not loaded", id));
    return it->second;
}

void DecodeLoop::releaseAdapter(int id)
{
    if (!adapterScales_.count(id))
        CV_Error(Error::StsBadArg, format("TextGenerationModel: LoRA adapter %d is not loaded", id));
    for (const auto& s : running_)
        for (const AdapterUse& u : s->adapters)
            if (u.id == id)
                CV_Error(Error::StsError, format("TextGenerationModel: LoRA adapter %d is in use by a running "
                                                 "request; unload it when the request has ended", id));
    prefixCache_.releaseAdapter(id);
    adapterScales_.erase(id);
}

AdapterSet DecodeLoop::adaptersFor(const GenerationConfig& cfg) const
{
    AdapterSet set;
    if (cfg.adapterIds.empty())
    {
        if (!cfg.adapterScales.empty())
            CV_Error(Error::StsBadArg, "TextGenerationModel: GenerationConfig::adapterScales without adapterIds");
        for (const auto& kv : adapterScales_)
            if (kv.second != 0.f)
                set.push_back(AdapterUse{kv.first, kv.second});
        return set;
    }
    set = normalizeAdapterSet(cfg.adapterIds, cfg.adapterScales, "TextGenerationModel");
    state_->checkAdapterSet(set, "TextGenerationModel");
    return set;
}

void DecodeLoop::setMaxRunning(int n)
{
    CV_CheckGT(n, 0, "TextGenerationModel: the number of parallel sequences must be positive");
    maxRunning_ = n;
}

void DecodeLoop::setSequenceTokens(int sequenceId, const std::vector<int>& tokens, const AdapterSet& adapters)
{
    PrefixCache::Entry& e = prefixCache_.track(sequenceId, PrefixCache::Holder::Caller);
    e.tokens = tokens;
    e.adapters = adapters;
}

const AdapterSet& DecodeLoop::sequenceAdapters(int sequenceId)
{
    static const AdapterSet none;
    const PrefixCache::Entry* e = prefixCache_.find(sequenceId);
    return e ? e->adapters : none;
}

int DecodeLoop::newSequenceId()
{
    while (cache_.hasSequence(nextSequenceId_) || prefixCache_.find(nextSequenceId_))
        nextSequenceId_ = nextSequenceId_ == INT_MAX ? 1 : nextSequenceId_ + 1;
    return nextSequenceId_++;
}

std::shared_ptr<LoopSequence> DecodeLoop::admitNow(const LoopRequest& request)
{
    const GenerationConfig& cfg = request.config;
    std::shared_ptr<LoopSequence> s = std::make_shared<LoopSequence>();
    s->request = request;
    // Image rows (negative ids) are not tokens to sample after: the completion sees the text.
    std::vector<int> text;
    for (int id : request.prompt)
        if (id >= 0)
            text.push_back(id);
    s->completion.reset(new Completion(tokenizer_, text.empty() ? request.prompt : text, cfg, request.extraStops));
    s->adapters = adaptersFor(cfg);
    if ((int)request.prompt.size() >= cache_.getMaxSequenceLength())
        CV_Error(Error::StsOutOfRange, format("TextGenerationModel: the prompt has %zu tokens; the context holds %d",
                                              request.prompt.size(), cache_.getMaxSequenceLength()));
    CV_CheckGE(cfg.draftTokens, 0, "TextGenerationModel: draftTokens must not be negative");
    CV_CheckGE(cfg.lookupNgram, 0, "TextGenerationModel: lookupNgram must not be negative");
    if (cfg.draftTokens > 0 && cfg.lookupNgram > 0)
    {
        s->lookup.reset(new PromptLookupDrafter(cfg.lookupNgram));
        s->drafter = s->lookup.get();
    }
    else if (cfg.draftTokens > 0)
    {
        if (!request.draftModel)
            CV_Error(Error::StsBadArg, "TextGenerationModel: GenerationConfig::draftTokens needs a drafter: set "
                                       "lookupNgram (prompt lookup) or a draft model (setDraftModel)");
        s->drafter = request.draftModel;
    }
    prefill(*s);
    running_.push_back(s);
    return s;
}

// The prompt after the prefix it can reuse, in one forward of its own.
void DecodeLoop::prefill(LoopSequence& s)
{
    const std::vector<int>& prompt = s.request.prompt;
    const int64 start = getTickCount();
    const std::vector<float>* reusedLogits = nullptr;
    int keep = 0;
    if (s.request.sequenceId >= 0)
    {
        // The caller's sequence: it chose how much of it to keep.
        s.sequenceId = s.request.sequenceId;
        std::vector<int> held = prefixCache_.tokens(s.sequenceId);
        const PrefixCache::Entry* before = prefixCache_.find(s.sequenceId);
        const bool sameAdapters = before && before->adapters == s.adapters;
        keep = cache_.hasSequence(s.sequenceId) && sameAdapters ? std::min(s.request.keepLength, (int)held.size()) : 0;
        if (cache_.hasSequence(s.sequenceId))
            cache_.truncateSequence(s.sequenceId, keep);
        held.resize(keep);
        prefixCache_.track(s.sequenceId, PrefixCache::Holder::Running).tokens = held;
    }
    else
    {
        const PrefixCache::Match match = prefixCache_.longestPrefix(prompt, s.adapters);
        s.sequenceId = newSequenceId();
        if (match.source >= 0)
        {
            cache_.forkSequence(match.source, s.sequenceId);
            try
            {
                if (cache_.getSequenceLength(s.sequenceId) > match.length)
                    cache_.truncateSequence(s.sequenceId, match.length);
            }
            catch (...)
            {
                cache_.removeSequence(s.sequenceId);
                throw;
            }
            keep = match.length;
            reusedLogits = match.logits;
            s.sharedPages = keep / cache_.getPageSize();
        }
        PrefixCache::Entry& e = prefixCache_.track(s.sequenceId, PrefixCache::Holder::Running);
        e.tokens.assign(prompt.begin(), prompt.begin() + keep);
        if (match.source >= 0)
        {
            prefixCache_.find(match.source)->lastUse = e.lastUse;  // used now: released last
            if (reusedLogits)
                s.logits = *reusedLogits;
        }
    }
    prefixCache_.find(s.sequenceId)->adapters = s.adapters;
    state_->setSequenceAdapters(s.sequenceId, s.adapters);
    s.cachedPromptTokens = keep;
    if (!reusedLogits)
    {
        const std::vector<int> rest(prompt.begin() + keep, prompt.end());
        try
        {
            if (s.request.prepare)
                s.request.prepare(rest);
            const Mat rows = logitRows(forwardTokens(net_, rest, std::vector<int>(rest.size(), s.sequenceId), input_));
            const float* last = rows.ptr<float>(rows.rows - 1);
            s.logits.assign(last, last + rows.cols);
        }
        catch (...)
        {
            if (s.request.sequenceId >= 0)
                prefixCache_.finished(s.sequenceId, true, false);
            else
                prefixCache_.remove(s.sequenceId);
            throw;
        }
        feed(s, rest);
        if (s.request.prefilled)
            s.request.prefilled();
        s.prefilledTokens = (int)rest.size();
    }
    PrefixCache::Entry& e = *prefixCache_.find(s.sequenceId);
    e.promptLength = (int)prompt.size();
    e.promptLogits = s.logits;
    stats_.promptTokens += (double)prompt.size();
    stats_.cachedPromptTokens += keep;
    stats_.prefilledTokens += s.prefilledTokens;
    stats_.cacheHits += keep > 0;
    stats_.prefillSeconds += (getTickCount() - start) / getTickFrequency();
}

void DecodeLoop::feed(LoopSequence& s, const std::vector<int>& tokens)
{
    std::vector<int>& held = prefixCache_.find(s.sequenceId)->tokens;
    held.insert(held.end(), tokens.begin(), tokens.end());
}

void DecodeLoop::enqueue(const LoopRequest& request)
{
    waiting_.push_back(request);
}

int DecodeLoop::recurrentPages(int drafts) const
{
    const size_t state = cache_.getRecurrentStateBytes();
    if (state == 0)
        return 0;
    const size_t blocks = 1 + (size_t)cache_.recurrentStates().maxDurableCheckpoints() + (size_t)std::max(drafts, 0);
    const size_t page = cache_.getBytesPerToken() * cache_.getPageSize();
    return (int)((blocks * state + page - 1) / page);
}

// Pages the running sequences may still take: what each reserved at admission less what it holds.
int DecodeLoop::outstandingPages() const
{
    int pages = 0;
    for (const std::shared_ptr<LoopSequence>& s : running_)
    {
        const size_t page = cache_.getBytesPerToken() * cache_.getPageSize();
        const int held = pagesFor(cache_.getSequenceLength(s->sequenceId)) - s->sharedPages +
                         (int)((cache_.recurrentStates().bytesHeld(s->sequenceId) + page - 1) / page);
        pages += std::max(0, s->reservedPages - held);
    }
    return pages;
}

// Whether the cache can hold the request's prompt and all its new tokens (and drafts) on top of
// what the running sequences may still take, releasing cached sequences as needed.
bool DecodeLoop::fits(const LoopRequest& request, int& reservation)
{
    const GenerationConfig& cfg = request.config;
    const size_t context = (size_t)cache_.getMaxSequenceLength();
    const size_t longest = cfg.contextShift ? context
                         : std::min(request.prompt.size() + (size_t)std::max(cfg.maxNewTokens, 0) +
                                    (size_t)std::max(cfg.draftTokens, 0), context);
    const int page = cache_.getPageSize();
    AdapterSet adapters;
    try
    {
        adapters = adaptersFor(cfg);
    }
    catch (const cv::Exception&)
    {
        // (an adapter that is not loaded: its admission fails and says so)
    }
    for (;;)
    {
        const PrefixCache::Match match = prefixCache_.longestPrefix(request.prompt, adapters);
        // + 1: a partly filled last page shared with the source is copied when written.
        reservation = pagesFor(longest) - match.length / page + (match.length % page ? 1 : 0) +
                      recurrentPages(cfg.draftTokens);
        const int needed = reservation + outstandingPages();
        if (needed <= cache_.getPagesFree())
            return true;
        // Cached sequences go (least recently used first) only when that can make room.
        if (needed > cache_.getPagesFree() + prefixCache_.cachedPages() || !prefixCache_.releaseOldest())
            return false;
    }
}

bool DecodeLoop::admitWaiting()
{
    bool admitted = false;
    while (!waiting_.empty() && (int)running_.size() < maxRunning_)
    {
        LoopRequest& request = waiting_.front();
        int reservation = 0;
        const bool fit = fits(request, reservation);
        if (!fit && !running_.empty())
            break;  // joins when a running sequence has finished
        std::shared_ptr<LoopSequence> s;
        try
        {
            if (!fit)
                CV_Error(Error::StsNoMem, format(
                    "TextGenerationModel: the KV cache budget (%zu bytes, %d pages free) cannot hold a prompt of %zu "
                    "tokens and %d new tokens; raise it with KVCache::setMemoryBudget",
                    cache_.getMemoryBudget(), cache_.getPagesFree(), request.prompt.size(), request.config.maxNewTokens));
            s = admitNow(request);
            s->reservedPages = reservation;
        }
        catch (...)
        {
            s = std::make_shared<LoopSequence>();
            s->request = request;
            s->failure = std::current_exception();
            s->error = messageOf(s->failure);
            s->finishReason = FinishReason::Error;
        }
        waiting_.pop_front();
        admitted = true;
        if (s->done())  // failed at admission
        {
            stats_.finishedRequests++;
            notifyFinish(*s);
        }
        // Its first token at once, from its prefill's logits: a request's time to first token
        // does not wait for the prompts admitted after it.
        else if (!sampleNext(*s))
            retire(running_.size() - 1);
    }
    return admitted;
}

bool DecodeLoop::step()
{
    admitWaiting();
    decode();
    return !idle();
}

bool DecodeLoop::cancel(int requestId)
{
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
        if (it->id == requestId)
        {
            LoopSequence s;
            s.request = *it;
            s.finishReason = FinishReason::Cancelled;
            waiting_.erase(it);
            stats_.finishedRequests++;
            notifyFinish(s);
            return true;
        }
    for (size_t i = 0; i < running_.size(); i++)
        if (running_[i]->request.id == requestId)
        {
            emit(*running_[i], running_[i]->completion->finish());  // the held-back tail
            end(*running_[i], running_[i]->completion->finishReason());
            retire(i);
            return true;
        }
    return false;
}

void DecodeLoop::emit(LoopSequence& s, const String& piece)
{
    if (s.request.onTokens)
        s.request.onTokens(s);
    if (piece.empty() || !s.request.onPiece)
        return;
    bool goOn = false;
    try
    {
        goOn = s.request.onPiece(piece);
    }
    catch (...)  // the caller's callback failed: this request ends, no other
    {
        s.failure = std::current_exception();
        s.error = messageOf(s.failure);
    }
    if (!goOn)
        s.completion->finish();
}

void DecodeLoop::end(LoopSequence& s, FinishReason reason)
{
    if (!s.done())
        s.finishReason = s.failure ? FinishReason::Error : reason;
}

// Samples the sequence's next token from its logits and streams its text; false once it has
// ended (finished, or failed), for the caller to retire.
bool DecodeLoop::sampleNext(LoopSequence& s)
{
    const int length = cache_.getSequenceLength(s.sequenceId);
    const int room = s.request.config.contextShift ? INT_MAX : cache_.getMaxSequenceLength() - length;
    try
    {
        emit(s, s.completion->accept(s.logits.data(), (int)s.logits.size(), room));
    }
    catch (...)  // e.g. a grammar that nothing in the vocabulary can continue
    {
        s.failure = std::current_exception();
        s.error = messageOf(s.failure);
    }
    if (s.completion->done() || s.failure)
    {
        end(s, s.completion->finishReason());
        return false;
    }
    s.pending = s.completion->lastToken();
    return true;
}

// Every running sequence samples its next token (unless a rejected draft left one pending);
// those that go on are fed in one forward, each with its drafts, which are then kept as far as
// the sampler accepts them.
void DecodeLoop::decode()
{
    const int64 start = getTickCount();
    const int context = cache_.getMaxSequenceLength();
    for (size_t i = 0; i < running_.size();)
    {
        LoopSequence& s = *running_[i];
        if (s.pending < 0 && !sampleNext(s))
        {
            retire(i);
            continue;
        }
        if (s.request.config.contextShift && cache_.getSequenceLength(s.sequenceId) >= context)
        {
            try
            {
                shiftContext(s);
            }
            catch (...)  // e.g. the budget cannot hold the pages the shift unshares: this request ends
            {
                s.failure = std::current_exception();
                s.error = messageOf(s.failure);
                end(s, FinishReason::Error);
                retire(i);
                continue;
            }
        }
        i++;
    }
    if (!running_.empty())
    {
        try
        {
            proposeDrafts();
            tokens_.clear();
            sequenceIds_.clear();
            logitTokens_.clear();
            bool anyDraft = false;
            for (const std::shared_ptr<LoopSequence>& s : running_)
                anyDraft = anyDraft || !s->draft.empty();
            for (size_t i = 0; i < running_.size(); i++)
            {
                LoopSequence& s = *running_[i];
                s.length = cache_.getSequenceLength(s.sequenceId);
                // Without drafts, the forward's own rows (each sequence's last token) are these.
                s.firstRow = anyDraft ? (int)tokens_.size() : (int)i;
                for (size_t j = 0; j <= s.draft.size(); j++)
                {
                    if (anyDraft)
                        logitTokens_.push_back((int)tokens_.size());
                    tokens_.push_back(j == 0 ? s.pending : s.draft[j - 1]);
                    sequenceIds_.push_back(s.sequenceId);
                }
            }
            const Mat out = logitRows(forwardTokens(net_, tokens_, sequenceIds_, input_, logitTokens_));
            for (const std::shared_ptr<LoopSequence>& s : running_)
            {
                std::vector<int>& held = prefixCache_.find(s->sequenceId)->tokens;
                held.push_back(s->pending);
                held.insert(held.end(), s->draft.begin(), s->draft.end());
            }
            for (size_t i = 0; i < running_.size();)
            {
                if (keepDrafts(*running_[i], out))
                    i++;
                else
                    retire(i);
            }
        }
        catch (...)
        {
            failRunning(std::current_exception());
        }
    }
    stats_.decodeSeconds += (getTickCount() - start) / getTickFrequency();
}

// Each sequence's guesses after its pending token (up to config.draftTokens, within the
// context and maxNewTokens), drafted together per drafter.
void DecodeLoop::proposeDrafts()
{
    const int context = cache_.getMaxSequenceLength();
    for (const std::shared_ptr<LoopSequence>& s : running_)
        s->draft.clear();
    drafting_.assign(running_.size(), 0);  // 1: the sequence was looked at
    for (size_t first = 0; first < running_.size(); first++)
    {
        LoopSequence& f = *running_[first];
        if (!f.drafter || drafting_[first])
            continue;
        // One call per drafter (and, for a draft model, per minimum probability): the sequences
        // from `first` on that share them.
        draftIds_.clear();
        draftContexts_.clear();
        draftLimits_.clear();
        drafts_.clear();
        for (size_t i = first; i < running_.size(); i++)
        {
            LoopSequence& s = *running_[i];
            if (drafting_[i] || s.drafter != f.drafter ||
                s.request.config.draftMinProbability != f.request.config.draftMinProbability)
                continue;
            drafting_[i] = 1;
            const GenerationConfig& cfg = s.request.config;
            const int length = cache_.getSequenceLength(s.sequenceId);
            const int wanted = std::min(std::min(cfg.draftTokens, context - length - 1),
                                        cfg.maxNewTokens - (int)s.completion->generated().size());
            if (wanted <= 0)
                continue;
            // The drafter sees the sequence as fed (image rows included) and the pending token.
            const std::vector<int>& held = prefixCache_.tokens(s.sequenceId);
            s.context.assign(held.begin(), held.end());
            s.context.push_back(s.pending);
            draftIds_.push_back(s.sequenceId);
            draftContexts_.push_back(&s.context);
            draftLimits_.push_back(wanted);
            drafts_.push_back(&s.draft);
        }
        if (drafts_.empty())
            continue;
        if (f.drafter == f.request.draftModel)
            static_cast<DraftModelDrafter*>(f.drafter)->setMinProbability(f.request.config.draftMinProbability);
        f.drafter->proposeAll(draftIds_, draftContexts_, draftLimits_, drafts_);
    }
    for (const std::shared_ptr<LoopSequence>& s : running_)
        s->drafted += (int)s->draft.size();
}

// After the forward: row firstRow + j holds the logits after the step's token j; the sampler's
// choice there is draft[j] (kept) or replaces it, and the cache keeps the tokens before it.
// False when the completion has ended.
bool DecodeLoop::keepDrafts(LoopSequence& s, const Mat& out)
{
    const int context = cache_.getMaxSequenceLength();
    s.pending = -1;
    for (size_t j = 0; j < s.draft.size(); j++)
    {
        const int length = s.length + (int)j + 1;
        const int room = s.request.config.contextShift ? INT_MAX : context - length;
        try
        {
            emit(s, s.completion->accept(out.ptr<float>(s.firstRow + (int)j), out.cols, room, s.draft[j]));
        }
        catch (...)  // this request's grammar: it ends, the others go on
        {
            s.failure = std::current_exception();
            s.error = messageOf(s.failure);
            s.completion->finish();
        }
        const bool kept = s.completion->lastSampled() == s.draft[j] && !s.failure;
        s.draftsKept += kept;
        if (kept && !s.completion->done())
            continue;
        cache_.truncateSequence(s.sequenceId, length);
        prefixCache_.find(s.sequenceId)->tokens.resize(length);
        if (s.completion->done())
        {
            end(s, s.completion->finishReason());
            return false;
        }
        s.pending = s.completion->lastToken();
        return true;
    }
    const float* row = out.ptr<float>(s.firstRow + (int)s.draft.size());
    s.logits.assign(row, row + out.cols);
    return true;
}

// llama.cpp's context shift: keep the first token when it is BOS, drop the older half of the
// rest; the cache moves the later tokens back and re-rotates their keys.
void DecodeLoop::shiftContext(LoopSequence& s)
{
    std::vector<int>& held = prefixCache_.find(s.sequenceId)->tokens;
    const int keep = tokenizer_.addBos() ? 1 : 0;
    int discard = ((int)held.size() - keep) / 2;
    // Sliding-window layers have released the kept tokens' pages: keep the window's worth of
    // tokens after them, so the next token attends to none of the released ones.
    const int window = cache_.largestWindow();
    if (window > 0)
        discard = std::max(1, std::min(discard, (int)held.size() - keep - window + 1));
    cache_.discardTokens(s.sequenceId, keep, discard);
    held.erase(held.begin() + keep, held.begin() + keep + discard);
    // Its rows were computed attending to the dropped tokens: no other prompt may reuse them.
    prefixCache_.find(s.sequenceId)->reusable = false;
    // The moved rows were written to pages of its own; it may fill the context again.
    s.sharedPages = 0;
    if (s.reservedPages > 0)
        s.reservedPages = pagesFor(cache_.getMaxSequenceLength()) + 1;
}

// A finished sequence leaves the batch; its pages stay for prefix reuse (or its caller).
void DecodeLoop::retire(size_t index)
{
    std::shared_ptr<LoopSequence> s = running_[index];
    running_.erase(running_.begin() + index);
    // A draft model keeps the caller's sequence (sequence 0: a chat's next turn drafts after it).
    if (s->drafter && s->request.sequenceId < 0)
        s->drafter->forget(s->sequenceId);
    if (s->failure && s->request.sequenceId < 0)
        prefixCache_.remove(s->sequenceId);  // its cache rows may not match its tokens
    else
        prefixCache_.finished(s->sequenceId, s->request.sequenceId >= 0, s->request.keepForReuse);
    stats_.finishedRequests++;
    generatedByRetired_ += (double)s->completion->generated().size();
    notifyFinish(*s);
}

// A forward failed (an internal error: admission reserved the pages): every running request
// ends with it.
void DecodeLoop::failRunning(const std::exception_ptr& failure)
{
    while (!running_.empty())
    {
        LoopSequence& s = *running_.back();
        s.failure = failure;
        s.error = messageOf(failure);
        end(s, FinishReason::Error);
        retire(running_.size() - 1);
    }
}

}}} // namespace cv::dnn::llm

namespace cv {
namespace dnn {
namespace llm {

// The caller's end-of-request callback; its failure is its own (the loop goes on).
void DecodeLoop::notifyFinish(const LoopSequence& s)
{
    if (!s.request.onFinish)
        return;
    try
    {
        s.request.onFinish(s);
    }
    catch (...)
    {
    }
}

GenerationEngineStats DecodeLoop::stats() const
{
    GenerationEngineStats st = stats_;
    st.generatedTokens = generatedByRetired_;
    for (const std::shared_ptr<LoopSequence>& s : running_)
        st.generatedTokens += (double)s->completion->generated().size();
    st.waitingRequests = (int)waiting_.size();
    st.runningRequests = (int)running_.size();
    st.prefillTokensPerSecond = st.prefillSeconds > 0 ? st.prefilledTokens / st.prefillSeconds : 0;
    st.decodeTokensPerSecond = st.decodeSeconds > 0 ? st.generatedTokens / st.decodeSeconds : 0;
    st.cachedSequences = prefixCache_.cachedCount();
    st.kvPagesInUse = cache_.getPagesInUse();
    st.kvPagesFree = cache_.getPagesFree();
    return st;
}

}}} // namespace cv::dnn::llm
