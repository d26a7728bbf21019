// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "completion.hpp"

#include "../grammar/gbnf_parser.hpp"
#include "../grammar/json_schema_to_grammar.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

namespace cv {
namespace dnn {
namespace llm {

static SamplingParams samplingParams(const GenerationConfig& c)
{
    SamplingParams sp;
    sp.temperature = c.temperature;
    sp.topK = c.topK;
    sp.topP = c.topP;
    sp.minP = c.minP;
    sp.repetitionPenalty = c.repetitionPenalty;
    sp.frequencyPenalty = c.frequencyPenalty;
    sp.presencePenalty = c.presencePenalty;
    sp.repetitionWindow = c.repetitionWindow;
    return sp;
}

static std::vector<std::string> stopStrings(const GenerationConfig& c, const std::vector<std::string>& extra)
{
    std::vector<std::string> stops(c.stopStrings.begin(), c.stopStrings.end());
    stops.insert(stops.end(), extra.begin(), extra.end());
    return stops;
}

// The token trie of a tokenizer, built once and shared by its completions (batches have one
// completion per sequence).
static std::shared_ptr<const TokenTrie> tokenTrieOf(const Tokenizer& tokenizer)
{
    static std::mutex mutex;
    static std::map<const Tokenizer*, std::weak_ptr<const TokenTrie> > cache;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(&tokenizer);
    if (it != cache.end())
    {
        std::shared_ptr<const TokenTrie> t = it->second.lock();
        if (t && t->vocabSize() == tokenizer.vocabSize())
            return t;
    }
    std::vector<std::string> pieces((size_t)tokenizer.vocabSize());
    for (int id = 0; id < tokenizer.vocabSize(); id++)
        // control tokens (BOS, EOS, chat markers) are not text: never allowed by the trie
        if (!tokenizer.isSpecial(id) && !tokenizer.isEndOfGeneration(id))
            pieces[(size_t)id] = tokenizer.tokenToPiece(id, false);
    std::shared_ptr<const TokenTrie> t = std::make_shared<TokenTrie>(pieces);
    for (auto i = cache.begin(); i != cache.end();)
        i = i->second.expired() ? cache.erase(i) : std::next(i);
    cache[&tokenizer] = t;
    return t;
}

static std::shared_ptr<const Grammar> configGrammar(const GenerationConfig& c)
{
    const int kinds = (int)!c.grammar.empty() + (int)!c.jsonSchema.empty() + (int)c.jsonMode;
    if (kinds == 0)
        return nullptr;
    if (kinds > 1)
        CV_Error(Error::StsBadArg, "TextGenerationModel: set only one of GenerationConfig::grammar, jsonSchema "
                                   "and jsonMode");
    if (!c.grammar.empty())
        return parseGbnf(c.grammar);
    const JsonWhitespace whitespace = c.jsonFreeWhitespace ? JsonWhitespace::LlamaCpp : JsonWhitespace::Compact;
    if (!c.jsonSchema.empty())
        return parseGbnf(jsonSchemaToGbnf(c.jsonSchema, whitespace));
    return parseGbnf(anyJsonValueGbnf(whitespace));
}

Completion::Completion(const Tokenizer& tokenizer, const std::vector<int>& prompt, const GenerationConfig& config,
                       const std::vector<std::string>& extraStops)
    : tokenizer_(tokenizer), config_(config), sampler_(samplingParams(config), (uint64)(int64)config.seed),
      stream_(stopStrings(config, extraStops)), prompt_(prompt), history_(prompt)
{
    if (prompt.empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: the prompt has no tokens");
    for (int id : prompt)
        if (id < 0 || id >= tokenizer.vocabSize())
            CV_Error(Error::StsOutOfRange, format("TextGenerationModel: prompt token id %d is not in [0, %d)",
                                                  id, tokenizer.vocabSize()));
    CV_CheckGE(config.maxNewTokens, 0, "TextGenerationModel: maxNewTokens must not be negative");
    if (config.topLogprobs < -1 || config.topLogprobs > 20)
        CV_Error(Error::StsOutOfRange, format("TextGenerationModel: GenerationConfig::topLogprobs must be in "
                                              "[-1, 20] (-1: no log-probabilities), not %d", config.topLogprobs));
    if (!tokenizer.hasText() && !stopStrings(config, extraStops).empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: stop strings need a tokenizer (the model has none); "
                                   "use stop token ids");
    for (int id : config.stopTokenIds)
        CV_Check(id, id >= 0 && id < tokenizer.vocabSize(), "TextGenerationModel: stop token id out of range");
    if (config.maxNewTokens == 0)
        end(FinishReason::Length);
    if (std::shared_ptr<const Grammar> grammar = configGrammar(config))
    {
        if (!tokenizer.hasText())
            CV_Error(Error::StsBadArg, "TextGenerationModel: a grammar or JSON schema needs a tokenizer "
                                       "(the model has none)");
        matcher_.reset(new GrammarMatcher(grammar));
        trie_ = tokenTrieOf(tokenizer);
    }
    if (config.ignoreEndOfGeneration)
        for (int id = 0; id < tokenizer.vocabSize(); id++)
            if (tokenizer.isEndOfGeneration(id))
                endOfGeneration_.push_back(id);
}

bool Completion::isStopToken(int id) const
{
    return tokenizer_.isEndOfGeneration(id) ||
           std::find(config_.stopTokenIds.begin(), config_.stopTokenIds.end(), id) != config_.stopTokenIds.end();
}

bool Completion::allows(int id) const
{
    if (!matcher_)
        return true;
    if (id < 0 || id >= tokenizer_.vocabSize())
        return false;
    if (isStopToken(id))
        return matcher_->canEnd() && !(config_.ignoreEndOfGeneration && tokenizer_.isEndOfGeneration(id));
    if (tokenizer_.isSpecial(id))
        return false;
    return TokenTrie::allows(*matcher_, tokenizer_.tokenToPiece(id, false));
}

const float* Completion::maskByGrammar(const float* logits, int vocab, bool& anyAllowed)
{
    trie_->mask(*matcher_, allowed_, scratch_);
    const bool canEnd = matcher_->canEnd();
    if (masked_.data() != logits)
        masked_.assign(logits, logits + vocab);
    const float minusInf = -std::numeric_limits<float>::infinity();
    anyAllowed = false;
    for (int id = 0; id < vocab; id++)
    {
        bool ok = id < (int)allowed_.size() && allowed_[(size_t)id];
        // end of generation (and the config's stop tokens) only where the grammar may end
        // (and not when ignoreEndOfGeneration masked it already)
        if (isStopToken(id))
            ok = canEnd && masked_[(size_t)id] != minusInf;
        if (!ok)
            masked_[(size_t)id] = minusInf;
        anyAllowed = anyAllowed || ok;
    }
    return masked_.data();
}

String Completion::accept(const float* logits, int vocab, int roomLeft)
{
    return accept(logits, vocab, roomLeft, -1);
}

String Completion::accept(const float* logits, int vocab, int roomLeft, int draft)
{
    if (done_)
        return String();
    const float* raw = logits;  // log-probabilities are reported before any mask or penalty
    if (!endOfGeneration_.empty())
    {
        masked_.assign(logits, logits + vocab);
        for (int id : endOfGeneration_)
            if (id < vocab)
                masked_[id] = -std::numeric_limits<float>::infinity();
        logits = masked_.data();
    }
    if (matcher_)
    {
        bool anyAllowed = false;
        logits = maskByGrammar(logits, vocab, anyAllowed);
        if (!anyAllowed)
        {
            // The text is a whole sentence of the grammar and nothing can follow (EOS masked
            // by ignoreEndOfGeneration, or no EOS): generation ends as if EOS came.
            if (matcher_->canEnd())
            {
                lastSampled_ = -1;
                return end(FinishReason::Stop);
            }
            CV_Error(Error::StsError, "TextGenerationModel: no token of the vocabulary can continue the text "
                                      "under the grammar (after \"" + stream_.text() + "\")");
        }
    }
    // A drafted token the grammar does not allow has probability 0 here: the sampler's
    // acceptance rule rejects it.
    const int id = sampler_.sample(logits, vocab, history_, draft);
    lastSampled_ = id;
    if (isStopToken(id))
        return end(FinishReason::Stop);
    if (matcher_)
    {
        const bool ok = matcher_->accept(tokenizer_.tokenToPiece(id, false));
        CV_Assert(ok && "the sampler picked a token the grammar masked");
    }
    generated_.push_back(id);
    history_.push_back(id);
    if (config_.topLogprobs >= 0)
        recordLogprobs(raw, vocab, id);
    // Without a tokenizer (ids in, ids out) there is no text to stream.
    const String piece = tokenizer_.hasText() ? stream_.push(tokenizer_.tokenToPiece(id, false)) : String();
    if (stream_.stopped())
        return piece + end(FinishReason::Stop);
    if ((int)generated_.size() >= config_.maxNewTokens || roomLeft <= 1)
        return piece + end(FinishReason::Length);
    return piece;
}

void Completion::recordLogprobs(const float* logits, int vocab, int id)
{
    // log-softmax in double: log p(t) = z(t) - (max + log sum exp(z - max))
    const float maxLogit = *std::max_element(logits, logits + vocab);
    double sum = 0;
    for (int t = 0; t < vocab; t++)
        sum += std::exp((double)logits[t] - maxLogit);
    const double logNormalizer = maxLogit + std::log(sum);
    tokenLogprobs_.push_back((float)(logits[id] - logNormalizer));
    const int top = std::min(config_.topLogprobs, vocab);
    if (top == 0)
        return;
    byLogit_.resize((size_t)vocab);
    for (int t = 0; t < vocab; t++)
        byLogit_[(size_t)t] = t;
    std::partial_sort(byLogit_.begin(), byLogit_.begin() + top, byLogit_.end(), [logits](int a, int b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int i = 0; i < top; i++)
    {
        topLogprobIds_.push_back(byLogit_[(size_t)i]);
        topLogprobs_.push_back((float)(logits[byLogit_[(size_t)i]] - logNormalizer));
    }
}

String Completion::finish()
{
    return end(FinishReason::Cancelled);
}

String Completion::end(FinishReason reason)
{
    if (done_)
        return String();
    done_ = true;
    finishReason_ = reason;
    return stream_.flush();
}

const char* finishReasonName(FinishReason reason)
{
    switch (reason)
    {
    case FinishReason::None: return "";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    }
    return "";
}

}}} // namespace cv::dnn::llm
