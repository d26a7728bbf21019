// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// chat(): the conversation's turns, each rendered whole with the chat template and generated
// on sequence 0 (sequence_runner.cpp), whose cache already holds the earlier turns.

#include "../../precomp.hpp"
#include "text_generation_impl.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

void TextGenerationModel::Impl::startChat(const String& message, const std::vector<Mat>& images,
                                          const GenerationConfig& cfg)
{
    checkLoaded();
    if (!images.empty())
        visionOrError();
    std::lock_guard<std::mutex> lock(loopMutex);  // see startText()
    cancelLocked();  // the previous reply joins the conversation before the new turn is formatted
    std::vector<llm::ChatMessage> messages = conversation;
    messages.push_back(llm::ChatMessage{"user", message});
    const size_t imagesBefore = conversationImages.size();
    conversationImages.insert(conversationImages.end(), images.begin(), images.end());
    conversationDigests.resize(conversationImages.size());
    try
    {
        std::vector<std::string> stops;
        const std::string text = renderChat(messages, stops);
        // The conversation's images, all of them: the earlier turns' too, at their markers.
        startLocked(encodePrompt(text, conversationImages, true, conversationDigests), cfg, stops);
    }
    catch (...)
    {
        conversationImages.resize(imagesBefore);
        conversationDigests.resize(imagesBefore);
        throw;
    }
    conversation = messages;
    replyPending = true;
    if (done)
        finish(String());
}

void TextGenerationModel::Impl::resetConversation(const String& systemMessage)
{
    std::lock_guard<std::mutex> lock(loopMutex);
    cancelLocked();
    conversation.clear();
    conversationImages.clear();
    conversationDigests.clear();
    if (!systemMessage.empty())
        conversation.push_back(llm::ChatMessage{"system", systemMessage});
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
