// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// generate(), the step API and chat() run as a request of the decode loop on sequence 0 of the
// Net's KV cache, which keeps the keys and values of every token fed so far. A new prompt that
// starts with those tokens only feeds the rest, which is what makes multi-turn chat cheap; a
// prompt that diverges rewinds the sequence to the common prefix first.

#include "../../precomp.hpp"
#include "text_generation_impl.hpp"
#include "../net/net_assembly.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {
const int kSequenceZeroRequest = -1;  // the decode loop's id of the model's own requests (the engine's are positive)
}

void TextGenerationModel::Impl::start(const std::vector<int>& promptIds, const GenerationConfig& cfg,
                                      const std::vector<std::string>& extraStops)
{
    checkLoaded();
    std::lock_guard<std::mutex> lock(loopMutex);
    cancelLocked();  // an unfinished chat reply still joins the conversation
    startLocked(promptIds, cfg, extraStops);
}

void TextGenerationModel::Impl::startText(const String& text, const std::vector<Mat>& images, const GenerationConfig& cfg)
{
    checkLoaded();
    // Encoding and prefill under one lock: a GenerationEngine's requests, encoded on the
    // thread that steps the loop, use the same image prompter.
    std::lock_guard<std::mutex> lock(loopMutex);
    cancelLocked();
    startLocked(encodePrompt(text, images, false), cfg, std::vector<std::string>());
}

// Sequence 0 continues from what it already holds of the prompt. Called with loopMutex held.
void TextGenerationModel::Impl::startLocked(const std::vector<int>& promptIds, const GenerationConfig& cfg,
                                            const std::vector<std::string>& extraStops)
{
    CV_Assert(!promptIds.empty());
    if ((int)promptIds.size() >= contextLength)
        CV_Error(Error::StsOutOfRange, format("TextGenerationModel: the prompt has %zu tokens; the context holds %d",
                                              promptIds.size(), contextLength));
    llm::LoopRequest r;
    r.id = kSequenceZeroRequest;
    r.prompt = promptIds;
    r.config = cfg;
    r.extraStops = extraStops;
    const bool hasImages = std::any_of(promptIds.begin(), promptIds.end(), llm::MultimodalPrompter::isImageId);
    r.draftModel = draftModelFor(cfg, hasImages);
    const std::vector<int>& held = fed();
    size_t common = 0;
    while (common < held.size() && common < promptIds.size() && held[common] == promptIds[common])
        common++;
    if (vision)  // image rows whose image changed since they were fed are not a common prefix
        for (size_t i = 0; i < common; i++)
            if (llm::MultimodalPrompter::isImageId(held[i]) && -1 - held[i] >= vision->firstChangedRow())
            {
                common = i;
                break;
            }
    common = std::min(common, promptIds.size() - 1);  // the last token must be fed for its logits
    // Sliding-window layers may have released what a shorter sequence would attend to: then
    // the prompt is fed again from the start.
    r.sequenceId = 0;
    r.keepLength = cache->hasSequence(0) ? cache->getResumableLength(0, (int)common) : 0;
    // Gemma 3's images attend among themselves both ways (libmtmd decodes them with causal
    // attention off); an image's rows go through one forward, as libmtmd requires.
    if (vision)
    {
        std::shared_ptr<llm::MultimodalPrompter> v = vision;
        Net languageModel = net;
        r.prepare = [v, languageModel](const std::vector<int>& rest) mutable {
            llm::setLLMNonCausalSpans(languageModel, v->nonCausalSpans(rest));
        };
        r.prefilled = [v]() { v->commit(); };
    }
    r.onPiece = [this](const String& piece) {
        stepText += piece;
        return true;
    };
    done = true;
    current.reset();
    stepText.clear();
    prompt = promptIds;
    drafted = draftsKept = 0;
    current = loop->admitNow(r);
    lastPrefillCount = current->prefilledTokens;
    done = current->completion->done();
    if (done)
        loop->cancel(kSequenceZeroRequest);  // nothing to generate (maxNewTokens 0): it leaves the loop
}

// One step of the decode loop (other requests of a GenerationEngine run in the same forward).
// Returns the text of every token sequence 0 kept.
String TextGenerationModel::Impl::next()
{
    if (done)
        return String();
    String piece;
    bool ended = false;
    {
        // A GenerationEngine's run() thread may have stepped the loop since the last call:
        // what it produced for sequence 0 is returned first.
        std::lock_guard<std::mutex> lock(loopMutex);
        if (stepText.empty() && !current->done())
            loop->step();
        piece.swap(stepText);
        ended = current->done();
        drafted = current->drafted;
        draftsKept = current->draftsKept;
    }
    if (ended && current->failure)
    {
        finish(String());
        std::rethrow_exception(current->failure);
    }
    return ended ? finish(piece) : piece;
}

String TextGenerationModel::Impl::finish(const String& piece)
{
    done = true;
    if (replyPending)
    {
        conversation.push_back(llm::ChatMessage{"assistant", current->completion->text()});
        replyPending = false;
    }
    return piece;
}

void TextGenerationModel::Impl::cancel()
{
    std::lock_guard<std::mutex> lock(loopMutex);
    cancelLocked();
}

void TextGenerationModel::Impl::cancelLocked()
{
    if (done)
        return;
    loop->cancel(kSequenceZeroRequest);
    finish(String());
}

String TextGenerationModel::Impl::run(const std::function<bool(const String&)>& onPiece)
{
    while (!done)
    {
        const String piece = next();
        if (!piece.empty() && onPiece && !onPiece(piece))
            cancel();
    }
    return current->completion->text();
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
