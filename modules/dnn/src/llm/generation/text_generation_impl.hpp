// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// TextGenerationModel's state, shared by its parts:
//   text_generation_model.cpp  the public methods (a facade)
//   text_generation_impl.cpp   loading, templates, turning requests into token ids (images too)
//   sequence_runner.cpp        generate(), the step API: a request on sequence 0 of the decode loop
//   chat_session.cpp           chat(): the conversation and its turns
//   batch_generation.cpp       generateBatch(): requests of the decode loop on sequences of their own
//   generation_engine.cpp      GenerationEngine: requests at any time, on the same decode loop
//   session_file.cpp           saveSession() / loadSession()'s conversation and images

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_TEXT_GENERATION_IMPL_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_TEXT_GENERATION_IMPL_HPP

#include <opencv2/dnn/generation_engine.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "../kv_cache/paged_kv_cache.hpp"
#include "../model/model_bundle.hpp"
#include "../tokenizer/tokenizer.hpp"
#include "../vision/multimodal_prompt.hpp"
#include "chat_template.hpp"
#include "decode_loop.hpp"
#include "drafter.hpp"

#include <atomic>
#include <memory>
#include <mutex>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

struct TextGenerationModel::Impl
{
    // One call at a time: generate(), the step API and chat() serve one caller, so a second
    // thread's call while one runs is refused (a GenerationEngine takes requests from any thread).
    std::atomic<bool> busy{false};
    struct Busy
    {
        explicit Busy(Impl& impl);
        ~Busy() { flag = false; }
        std::atomic<bool>& flag;
    };

    Net net;
    std::shared_ptr<llm::Tokenizer> tokenizer;
    Ptr<Tokenizer> publicTokenizer;
    Ptr<ChatTemplate> modelTemplate;   // the model's own Jinja template, compiled at load (or empty)
    String modelTemplateProblem;       // why modelTemplate is empty
    Ptr<ChatTemplate> chosenTemplate;  // setChatTemplate(); overrides the model's
    GenerationConfig generationDefaults;  // the model's recommended sampling settings
    Ptr<llm::PagedKVCache> cache;
    int contextLength = 0;

    // The one decode loop of the model; whoever steps it holds loopMutex (callbacks run inside).
    std::unique_ptr<llm::DecodeLoop> loop;
    std::mutex loopMutex;
    std::weak_ptr<GenerationEngine> engine;  // GenerationEngine::create(model)'s, while it lives
    std::mutex engineMutex;

    // The current generation of generate(), the step API and chat(): a request on sequence 0.
    std::shared_ptr<llm::LoopSequence> current;
    std::vector<int> prompt;
    String stepText;              // pieces of sequence 0 that next() has not returned yet
    bool done = true;
    int lastPrefillCount = 0;     // tokens of the last prompt run through the Net
    int drafted = 0, draftsKept = 0;  // of the last generation or batch

    // Conversation for chat().
    std::vector<llm::ChatMessage> conversation;
    bool replyPending = false;    // the current generation answers the conversation's last turn

    std::unique_ptr<llm::DraftModelDrafter> draftModel;  // setDraftModel()

    // TextGenerationModel(model, mmproj): images at the prompt's markers (vision/), and the
    // images of the conversation's turns, in order.
    std::shared_ptr<llm::MultimodalPrompter> vision;
    std::vector<Mat> conversationImages;
    std::vector<std::string> conversationDigests;  // per image: its digest when it came from a loaded session

    // text_generation_impl.cpp
    void load(const llm::ModelBundle& bundle);
    void load(const String& modelPath, const LLMLoadOptions& options);
    void loadChatTemplate(const std::string& jinja);
    Ptr<ChatTemplate> chatTemplate() const;
    void checkLoaded() const;
    llm::MultimodalPrompter& visionOrError() const;
    //! The tokens sequence 0 holds in the KV cache.
    const std::vector<int>& fed() const { return loop->sequenceTokens(0); }
    /** `text` as token ids with `images` at its markers (a table of their rows in the
        token-embedding layer until the next encode), or plain tokens without images. */
    std::vector<int> encodePrompt(const std::string& text, const std::vector<Mat>& images, bool parseSpecial,
                                  const std::vector<std::string>& digests = std::vector<std::string>());
    //! A chat's prompt: `messages` rendered with the chat template (a BOS text the tokenizer adds is dropped).
    std::string renderChat(const std::vector<llm::ChatMessage>& messages, std::vector<std::string>& stops) const;
    //! GenerationRequest::messagesJson rendered with the chat template and chatContextJson.
    std::string renderChatJSON(const std::string& messagesJson, const std::string& contextJson,
                               std::vector<std::string>& stops) const;
    //! A rendered conversation without the BOS text the tokenizer adds as a token; stops: the
    //! template's turn-end markers.
    std::string withoutTemplateBos(const ChatTemplate& tmpl, std::string text, std::vector<std::string>& stops) const;
    /** A GenerationRequest as the decode loop runs it on a sequence of its own; images get a
        table of their own, put in the token-embedding layer for its prefill. */
    llm::LoopRequest makeLoopRequest(const GenerationRequest& request);
    //! The draft model when `cfg` asks for one, checked against images in the prompt.
    llm::Drafter* draftModelFor(const GenerationConfig& cfg, bool hasImages) const;
    void setDraftModel(const llm::ModelBundle& bundle);

    // sequence_runner.cpp (the *Locked functions: with loopMutex held)
    void start(const std::vector<int>& promptIds, const GenerationConfig& cfg, const std::vector<std::string>& extraStops);
    void startText(const String& text, const std::vector<Mat>& images, const GenerationConfig& cfg);
    void startLocked(const std::vector<int>& promptIds, const GenerationConfig& cfg,
                     const std::vector<std::string>& extraStops);
    String next();
    String run(const std::function<bool(const String&)>& onPiece);
    String finish(const String& piece);
    void cancel();
    void cancelLocked();

    // chat_session.cpp
    void startChat(const String& message, const std::vector<Mat>& images, const GenerationConfig& cfg);
    void resetConversation(const String& systemMessage);

    // batch_generation.cpp
    //! Runs the requests to their ends (request i samples with seed cfg.seed + i); the first failure is thrown.
    std::vector<GenerationResult> runBatch(std::vector<llm::LoopRequest> requests, const GenerationConfig& cfg,
                                           const std::function<bool(int, const String&)>& onPiece);
    std::vector<llm::LoopRequest> batchRequests(const std::vector<std::vector<int>>& prompts,
                                                const GenerationConfig& cfg) const;
    std::vector<llm::LoopRequest> batchRequests(const std::vector<String>& prompts,
                                                const std::vector<std::vector<Mat>>& images, const GenerationConfig& cfg);
};

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
