// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "batch_generation.hpp"
#include <opencv2/dnn/llm.hpp>

#include <deque>
#include <map>

namespace cv {
namespace dnn {
namespace llm {

Mat forwardTokens(Net& net, const std::vector<int>& tokens, const std::vector<int>& sequenceIds, Mat& input,
                  const std::vector<int>& logitTokens)
{
    CV_Assert(!tokens.empty() && tokens.size() == sequenceIds.size());
    input.create(1, (int)tokens.size(), CV_32F);  // reused: no allocation while the count stays
    for (size_t i = 0; i < tokens.size(); i++)
        input.at<float>((int)i) = (float)tokens[i];
    setLLMBatch(net, sequenceIds, logitTokens);
    net.setInput(input);
    return net.forward();
}

namespace {

struct Active
{
    int index;       // of the prompt
    int sequenceId;
    std::unique_ptr<Completion> completion;
    std::vector<float> logits;  // of the next token, unless `pending` is set
    int pending = -1;           // a sampled token not fed yet (after a rejected draft)
    std::vector<int> draft;     // of the step being run
    int length = 0;             // tokens the sequence held before the step
    int firstRow = 0;           // its first logit row in the step's output
    int drafted = 0, draftsKept = 0;
    bool hasImages = false;
    std::vector<int> context;   // the drafter's context when the prompt has image rows
};

// A prompt shared by several requests: prefilled once into a sequence of its own, then forked.
struct SharedPrompt
{
    int sequenceId = -1;
    int usersLeft = 0;
    std::vector<float> logits;
};

class BatchRun
{
public:
    BatchRun(Net& net, PagedKVCache& cache, const Tokenizer& tokenizer, const std::vector<std::vector<int>>& prompts,
             const GenerationConfig& config, int maxParallel, const std::function<bool(int, const String&)>& onPiece,
             Drafter* drafter, const BatchImages* images)
        : net_(net), cache_(cache), tokenizer_(tokenizer), prompts_(prompts), config_(config),
          maxParallel_(maxParallel), onPiece_(onPiece), drafter_(drafter), images_(images), results_(prompts.size())
    {
        CV_Assert(!images || images->keys.size() == prompts.size());
        CV_CheckGT(maxParallel, 0, "TextGenerationModel: the number of parallel sequences must be positive");
        const std::vector<int> used = cache.getSequenceIds();
        nextId_ = used.empty() ? 0 : used.back() + 1;
        for (size_t i = 0; i < prompts.size(); i++)
        {
            if ((int)prompts[i].size() >= cache.getMaxSequenceLength())
                CV_Error(Error::StsOutOfRange, format("TextGenerationModel: prompt %zu has %zu tokens; the context holds %d",
                                                      i, prompts[i].size(), cache.getMaxSequenceLength()));
            shared_[keyOf((int)i)].usersLeft++;
            waiting_.push_back((int)i);
        }
    }

    std::vector<BatchCompletion> run()
    {
        try
        {
            while (!waiting_.empty() || !active_.empty())
            {
                admit();
                step();
            }
        }
        catch (...)
        {
            cleanUp();
            throw;
        }
        cleanUp();
        return results_;
    }

private:
    int pagesFor(size_t tokens) const
    {
        return (int)((tokens + cache_.getPageSize() - 1) / cache_.getPageSize());
    }

    // Prompts are shared by their ids and, with images, what the images are.
    std::pair<std::vector<int>, std::string> keyOf(int index) const
    {
        return std::make_pair(prompts_[index], images_ ? images_->keys[index] : std::string());
    }

    std::vector<float> forwardOne(int index, int sequenceId)
    {
        const std::vector<int>& prompt = prompts_[index];
        if (images_ && images_->prepare)
            images_->prepare(index);
        const Mat out = forwardTokens(net_, prompt, std::vector<int>(prompt.size(), sequenceId), input_);
        return std::vector<float>(out.ptr<float>(), out.ptr<float>() + out.cols);
    }

    // Waiting prompts join while there is room in the batch and in the cache's budget (enough
    // pages for the prompt and all its new tokens, so a running sequence never runs out).
    void admit()
    {
        while (!waiting_.empty() && (int)active_.size() < maxParallel_)
        {
            const int index = waiting_.front();
            const std::vector<int>& prompt = prompts_[index];
            SharedPrompt& shared = shared_[keyOf(index)];
            const bool share = shared.usersLeft > 1 || shared.sequenceId >= 0;
            const size_t maxLength = std::min<size_t>(prompt.size() + config_.maxNewTokens, cache_.getMaxSequenceLength());
            const int needed = pagesFor(maxLength) + (share && shared.sequenceId < 0 ? pagesFor(prompt.size()) : 0);
            if (needed > cache_.getPagesFree())
            {
                if (active_.empty())
                    CV_Error(Error::StsNoMem, format(
                        "TextGenerationModel: the KV cache budget (%zu bytes, %d pages free) cannot hold prompt %d "
                        "(%zu tokens) and %d new tokens; raise it with KVCache::setMemoryBudget",
                        cache_.getMemoryBudget(), cache_.getPagesFree(), index, prompt.size(), config_.maxNewTokens));
                return;  // joins when a running sequence has finished
            }
            waiting_.pop_front();
            Active a;
            a.index = index;
            a.sequenceId = nextId_++;
            GenerationConfig cfg = config_;
            cfg.seed = config_.seed + index;
            // Image rows (negative ids) are not tokens to sample after: the completion sees the
            // text, as TextGenerationModel's own start() does.
            std::vector<int> text;
            for (int id : prompt)
                if (id >= 0 || !images_)  // without images, the completion refuses a negative id
                    text.push_back(id);
            a.hasImages = text.size() != prompt.size();
            a.completion.reset(new Completion(tokenizer_, text.empty() ? prompt : text, cfg, std::vector<std::string>()));
            if (share)
            {
                if (shared.sequenceId < 0)
                {
                    shared.sequenceId = nextId_++;
                    shared.logits = forwardOne(index, shared.sequenceId);
                }
                cache_.forkSequence(shared.sequenceId, a.sequenceId);
                a.logits = shared.logits;
                if (--shared.usersLeft == 0)
                {
                    cache_.removeSequence(shared.sequenceId);
                    shared.sequenceId = -1;
                }
            }
            else
            {
                shared.usersLeft--;
                a.logits = forwardOne(index, a.sequenceId);
            }
            active_.push_back(std::move(a));
        }
    }

    // Every active sequence samples its next token (unless a rejected draft left one pending);
    // those that go on are fed in one forward, each with its drafts, which are then kept as far
    // as the sampler accepts them.
    void step()
    {
        for (size_t i = 0; i < active_.size();)
        {
            Active& a = active_[i];
            if (a.pending < 0)
            {
                const int room = cache_.getMaxSequenceLength() - cache_.getSequenceLength(a.sequenceId);
                emit(a, a.completion->accept(a.logits.data(), (int)a.logits.size(), room));
                if (a.completion->done())
                {
                    retire(i);
                    continue;
                }
                a.pending = a.completion->lastToken();
            }
            i++;
        }
        if (active_.empty())
            return;
        proposeDrafts();
        tokens_.clear();
        sequenceIds_.clear();
        logitTokens_.clear();
        for (size_t i = 0; i < active_.size(); i++)
        {
            Active& a = active_[i];
            a.length = cache_.getSequenceLength(a.sequenceId);
            // Without a drafter, the forward's own rows (each sequence's last token) are these.
            a.firstRow = drafter_ ? (int)tokens_.size() : (int)i;
            for (size_t j = 0; j <= a.draft.size(); j++)
            {
                if (drafter_)
                    logitTokens_.push_back((int)tokens_.size());
                tokens_.push_back(j == 0 ? a.pending : a.draft[j - 1]);
                sequenceIds_.push_back(a.sequenceId);
            }
        }
        const Mat out = forwardTokens(net_, tokens_, sequenceIds_, input_, logitTokens_);
        for (size_t i = 0; i < active_.size();)
        {
            if (keepDrafts(active_[i], out))
                i++;
            else
                retire(i);
        }
    }

    // Each sequence's guesses after its pending token (up to config.draftTokens, within the
    // context and maxNewTokens), all drafted together.
    void proposeDrafts()
    {
        draftIds_.clear();
        draftContexts_.clear();
        draftLimits_.clear();
        drafts_.clear();
        for (Active& a : active_)
        {
            a.draft.clear();
            const int room = cache_.getMaxSequenceLength() - cache_.getSequenceLength(a.sequenceId) - 1;
            const int wanted = std::min(std::min(config_.draftTokens, room),
                                        config_.maxNewTokens - (int)a.completion->generated().size());
            if (!drafter_ || wanted <= 0)
                continue;
            draftIds_.push_back(a.sequenceId);
            if (a.hasImages)  // the sequence as fed, image rows included (as a lone run's drafter sees it)
            {
                const std::vector<int>& prompt = prompts_[a.index];
                const std::vector<int>& history = a.completion->history();
                a.context.assign(prompt.begin(), prompt.end());
                a.context.insert(a.context.end(), history.begin() + a.completion->prompt().size(), history.end());
                draftContexts_.push_back(&a.context);
            }
            else
                draftContexts_.push_back(&a.completion->history());
            draftLimits_.push_back(wanted);
            drafts_.push_back(&a.draft);
        }
        if (!drafts_.empty())
            drafter_->proposeAll(draftIds_, draftContexts_, draftLimits_, drafts_);
        for (Active& a : active_)
            a.drafted += (int)a.draft.size();
    }

    // After the forward: row firstRow + j holds the logits after the step's token j; the
    // sampler's choice there is draft[j] (kept) or replaces it, and the cache keeps the tokens
    // before it. False when the completion has ended.
    bool keepDrafts(Active& a, const Mat& out)
    {
        a.pending = -1;
        for (size_t j = 0; j < a.draft.size(); j++)
        {
            const int length = a.length + (int)j + 1;
            emit(a, a.completion->accept(out.ptr<float>(a.firstRow + (int)j), out.cols,
                                         cache_.getMaxSequenceLength() - length, a.draft[j]));
            const bool kept = a.completion->lastSampled() == a.draft[j];
            a.draftsKept += kept;
            if (kept && !a.completion->done())
                continue;
            cache_.truncateSequence(a.sequenceId, length);
            if (a.completion->done())
                return false;
            a.pending = a.completion->lastToken();
            return true;
        }
        const float* row = out.ptr<float>(a.firstRow + (int)a.draft.size());
        std::copy(row, row + out.cols, a.logits.begin());
        return true;
    }

    void emit(Active& a, const String& piece)
    {
        if (!piece.empty() && onPiece_ && !onPiece_(a.index, piece))
            a.completion->finish();
    }

    // A finished sequence leaves the batch and the cache.
    void retire(size_t i)
    {
        Active& a = active_[i];
        BatchCompletion& r = results_[a.index];
        r.text = a.completion->text();
        r.generated = a.completion->generated();
        r.drafted = a.drafted;
        r.draftsKept = a.draftsKept;
        cache_.removeSequence(a.sequenceId);
        if (drafter_)
            drafter_->forget(a.sequenceId);
        active_.erase(active_.begin() + i);
    }

    // Whatever happens, the sequences of this run leave the cache.
    void cleanUp()
    {
        for (const Active& a : active_)
        {
            if (cache_.hasSequence(a.sequenceId))
                cache_.removeSequence(a.sequenceId);
            if (drafter_)
                drafter_->forget(a.sequenceId);
        }
        active_.clear();
        for (auto& s : shared_)
            if (s.second.sequenceId >= 0 && cache_.hasSequence(s.second.sequenceId))
                cache_.removeSequence(s.second.sequenceId);
    }

    Net& net_;
    PagedKVCache& cache_;
    const Tokenizer& tokenizer_;
    const std::vector<std::vector<int>>& prompts_;
    GenerationConfig config_;
    int maxParallel_;
    std::function<bool(int, const String&)> onPiece_;
    Drafter* drafter_;
    const BatchImages* images_;
    std::vector<BatchCompletion> results_;
    int nextId_ = 0;
    std::deque<int> waiting_;
    std::vector<Active> active_;
    std::map<std::pair<std::vector<int>, std::string>, SharedPrompt> shared_;
    std::vector<int> tokens_, sequenceIds_, logitTokens_;
    std::vector<int> draftIds_, draftLimits_;  // proposeDrafts()'s requests
    std::vector<const std::vector<int>*> draftContexts_;
    std::vector<std::vector<int>*> drafts_;
    Mat input_;
};

} // namespace

std::vector<BatchCompletion> generateBatch(Net& net, PagedKVCache& cache, const Tokenizer& tokenizer,
                                           const std::vector<std::vector<int>>& prompts,
                                           const GenerationConfig& config, int maxParallel,
                                           const std::function<bool(int, const String&)>& onPiece,
                                           Drafter* drafter, const BatchImages* images)
{
    return BatchRun(net, cache, tokenizer, prompts, config, maxParallel, onPiece, drafter, images).run();
}

}}} // namespace cv::dnn::llm
