// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "completion.hpp"

#include <limits>

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
    sp.repetitionWindow = c.repetitionWindow;
    return sp;
}

static std::vector<std::string> stopStrings(const GenerationConfig& c, const std::vector<std::string>& extra)
{
    std::vector<std::string> stops(c.stopStrings.begin(), c.stopStrings.end());
    stops.insert(stops.end(), extra.begin(), extra.end());
    return stops;
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
    if (!tokenizer.hasText() && !stopStrings(config, extraStops).empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: stop strings need a tokenizer (the model has none); "
                                   "use stop token ids");
    for (int id : config.stopTokenIds)
        CV_Check(id, id >= 0 && id < tokenizer.vocabSize(), "TextGenerationModel: stop token id out of range");
    done_ = config.maxNewTokens == 0;
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

String Completion::accept(const float* logits, int vocab, int roomLeft)
{
    return accept(logits, vocab, roomLeft, -1);
}

String Completion::accept(const float* logits, int vocab, int roomLeft, int draft)
{
    if (done_)
        return String();
    if (!endOfGeneration_.empty())
    {
        masked_.assign(logits, logits + vocab);
        for (int id : endOfGeneration_)
            if (id < vocab)
                masked_[id] = -std::numeric_limits<float>::infinity();
        logits = masked_.data();
    }
    const int id = sampler_.sample(logits, vocab, history_, draft);
    lastSampled_ = id;
    if (isStopToken(id))
        return finish();
    generated_.push_back(id);
    history_.push_back(id);
    // Without a tokenizer (ids in, ids out) there is no text to stream.
    const String piece = tokenizer_.hasText() ? stream_.push(tokenizer_.tokenToPiece(id, false)) : String();
    if (stream_.stopped() || (int)generated_.size() >= config_.maxNewTokens || roomLeft <= 1)
        return piece + finish();
    return piece;
}

String Completion::finish()
{
    if (done_)
        return String();
    done_ = true;
    return stream_.flush();
}

}}} // namespace cv::dnn::llm
