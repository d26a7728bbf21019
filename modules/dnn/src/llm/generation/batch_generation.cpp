// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// generateBatch(): one request of the decode loop per prompt (continuous batching: up to
// maxRunning sequences decode in one forward; a finished one leaves and a waiting one joins
// between steps), run until all of them have ended. Completion i samples with seed
// config.seed + i, so it equals a lone generate() with that seed.

#include "../../precomp.hpp"
#include "batch_generation.hpp"
#include "text_generation_impl.hpp"
#include <opencv2/dnn/llm.hpp>

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

} // namespace llm

CV__DNN_INLINE_NS_BEGIN

namespace {
// The decode loop's ids of generateBatch()'s requests: below sequence 0's (-1) and the engine's (> 0).
int batchRequestId(size_t index) { return -2 - (int)index; }
}

std::vector<GenerationResult> TextGenerationModel::Impl::runBatch(std::vector<llm::LoopRequest> requests,
                                                                 const GenerationConfig& cfg,
                                                                 const std::function<bool(int, const String&)>& onPiece)
{
    for (size_t i = 0; i < requests.size(); i++)
    {
        llm::LoopRequest& r = requests[i];
        if ((int)r.prompt.size() >= contextLength)
            CV_Error(Error::StsOutOfRange, format("TextGenerationModel: prompt %zu has %zu tokens; the context holds %d",
                                                  i, r.prompt.size(), contextLength));
        r.id = batchRequestId(i);
        r.config.seed = cfg.seed + (int)i;
        if (onPiece)
            r.onPiece = [&onPiece, i](const String& piece) { return onPiece((int)i, piece); };
    }
    std::vector<GenerationResult> results(requests.size());
    std::exception_ptr failure;
    size_t remaining = requests.size();
    for (llm::LoopRequest& r : requests)
        r.onFinish = [&](const llm::LoopSequence& s) {
            results[(size_t)(-2 - s.request.id)] = s.result();
            if (s.failure && !failure)
                failure = s.failure;
            remaining--;
        };
    std::lock_guard<std::mutex> lock(loopMutex);
    for (const llm::LoopRequest& r : requests)
        loop->enqueue(r);
    try
    {
        while (remaining > 0)
        {
            const bool more = loop->step();
            if (failure)  // the batch ends with the first failure, as one call
                std::rethrow_exception(failure);
            CV_Assert(more || remaining == 0);
        }
    }
    catch (...)
    {
        // None of the batch's requests may outlive this call: their callbacks refer to it.
        for (size_t i = 0; i < requests.size(); i++)
            loop->cancel(batchRequestId(i));
        throw;
    }
    drafted = draftsKept = 0;
    for (const GenerationResult& r : results)
    {
        drafted += r.draftedTokens;
        draftsKept += r.acceptedDraftTokens;
    }
    return results;
}

std::vector<llm::LoopRequest> TextGenerationModel::Impl::batchRequests(const std::vector<std::vector<int>>& prompts,
                                                                       const GenerationConfig& cfg) const
{
    std::vector<llm::LoopRequest> requests(prompts.size());
    for (size_t i = 0; i < prompts.size(); i++)
    {
        requests[i].prompt = prompts[i];
        requests[i].config = cfg;
        requests[i].draftModel = draftModelFor(cfg, false);
    }
    return requests;
}

std::vector<llm::LoopRequest> TextGenerationModel::Impl::batchRequests(const std::vector<String>& prompts,
                                                                       const std::vector<std::vector<Mat>>& images,
                                                                       const GenerationConfig& cfg)
{
    visionOrError();
    if (images.size() != prompts.size())
        CV_Error(Error::StsBadArg, format("TextGenerationModel::generateBatch: %zu prompts but %zu lists of images "
                                          "(one per prompt, empty for a prompt without images)",
                                          prompts.size(), images.size()));
    std::vector<llm::LoopRequest> requests;
    for (size_t i = 0; i < prompts.size(); i++)
    {
        GenerationRequest g;  // each prompt encoded with its own images into a table of its own
        g.prompt = prompts[i];
        g.images = images[i];
        g.config = cfg;
        requests.push_back(makeLoopRequest(g));
    }
    return requests;
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
