// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// TextGenerationModel's public methods: each takes the model (one caller at a time) and hands
// the work to its parts (text_generation_impl.hpp lists them).

#include "../../precomp.hpp"
#include "text_generation_impl.hpp"
#include "session_file.hpp"
#include "../net/llm_net_state.hpp"
#include <opencv2/dnn/llm.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

TextGenerationModel::TextGenerationModel() : impl(makePtr<Impl>()) {}

// The cv2 bindings hold a TextGenerationModel by value and run its destructor even when its
// constructor threw, after C++ has already destroyed the members: a failing constructor
// leaves `impl` empty first, so that second destructor finds nothing to free (AddressSanitizer
// saw a use-after-free there otherwise).
TextGenerationModel::TextGenerationModel(const String& modelPath) : TextGenerationModel(modelPath, LLMLoadOptions()) {}

static LLMLoadOptions withContextLength(int contextLength)
{
    LLMLoadOptions options;
    options.contextLength = contextLength;
    return options;
}

static LLMLoadOptions withProjector(const String& mmprojPath)
{
    LLMLoadOptions options;
    options.mmprojPath = mmprojPath;
    return options;
}

TextGenerationModel::TextGenerationModel(const String& modelPath, int contextLength)
    : TextGenerationModel(modelPath, withContextLength(contextLength))
{
}

TextGenerationModel::TextGenerationModel(const String& modelPath, const String& mmprojPath)
    : TextGenerationModel(modelPath, withProjector(mmprojPath))
{
}

TextGenerationModel::TextGenerationModel(const String& modelPath, const LLMLoadOptions& options) : impl(makePtr<Impl>())
{
    try
    {
        impl->load(modelPath, options);
    }
    catch (...)
    {
        impl.release();
        throw;
    }
}

TextGenerationModel::TextGenerationModel(const Net& network) : impl(makePtr<Impl>())
{
    try
    {
        impl->load(llm::loadModelBundle(network));
    }
    catch (...)
    {
        impl.release();
        throw;
    }
}

String TextGenerationModel::generate(const String& prompt, const std::vector<Mat>& images, const GenerationConfig& config)
{
    return generate(prompt, images, config, nullptr);
}

String TextGenerationModel::chat(const String& userMessage, const std::vector<Mat>& images, const GenerationConfig& config)
{
    return chat(userMessage, images, config, nullptr);
}

String TextGenerationModel::generate(const String& prompt, const std::vector<Mat>& images, const GenerationConfig& config,
                                     const std::function<bool(const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->visionOrError();
    impl->startText(prompt, images, config);
    return impl->run(onPiece);
}

String TextGenerationModel::chat(const String& userMessage, const std::vector<Mat>& images, const GenerationConfig& config,
                                 const std::function<bool(const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->visionOrError();
    impl->startChat(userMessage, images, config);
    return impl->run(onPiece);
}

Mat TextGenerationModel::getImageEmbeddings(const Mat& image)
{
    Impl::Busy busy(*impl);
    llm::MultimodalPrompter& vision = impl->visionOrError();
    std::lock_guard<std::mutex> lock(impl->loopMutex);  // the prompter's recent images are shared with the engine
    return vision.embed(image);
}

String TextGenerationModel::generate(const String& prompt, const GenerationConfig& config)
{
    return generate(prompt, config, nullptr);
}

String TextGenerationModel::generate(const String& prompt, int maxNewTokens)
{
    GenerationConfig config;
    config.maxNewTokens = maxNewTokens;
    return generate(prompt, config, nullptr);
}

String TextGenerationModel::generate(const String& prompt, const GenerationConfig& config,
                                     const std::function<bool(const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->startText(prompt, std::vector<Mat>(), config);
    return impl->run(onPiece);
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts, const GenerationConfig& config)
{
    return generateBatch(prompts, config, nullptr);
}

static std::vector<String> textsOf(const std::vector<GenerationResult>& results)
{
    std::vector<String> texts;
    for (const GenerationResult& r : results)
        texts.push_back(r.text);
    return texts;
}

static std::vector<std::vector<int>> tokenIdsOf(const std::vector<GenerationResult>& results)
{
    std::vector<std::vector<int>> ids;
    for (const GenerationResult& r : results)
        ids.push_back(r.tokenIds);
    return ids;
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts, const GenerationConfig& config,
                                                       const std::function<bool(int, const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    std::vector<std::vector<int>> ids;
    for (const String& p : prompts)
        ids.push_back(impl->tokenizer->encode(p, true, false));
    return textsOf(impl->runBatch(impl->batchRequests(ids, config), config, onPiece));
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts,
                                                       const std::vector<std::vector<Mat>>& images,
                                                       const GenerationConfig& config)
{
    return generateBatch(prompts, images, config, nullptr);
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts,
                                                       const std::vector<std::vector<Mat>>& images,
                                                       const GenerationConfig& config,
                                                       const std::function<bool(int, const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    return textsOf(impl->runBatch(impl->batchRequests(prompts, images, config), config, onPiece));
}

std::vector<std::vector<int>> TextGenerationModel::generateBatchTokenIds(const std::vector<String>& prompts,
                                                                         const std::vector<std::vector<Mat>>& images,
                                                                         const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    return tokenIdsOf(impl->runBatch(impl->batchRequests(prompts, images, config), config, nullptr));
}

std::vector<std::vector<int>> TextGenerationModel::generateBatchTokenIds(const std::vector<std::vector<int>>& promptIds,
                                                                         const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    return tokenIdsOf(impl->runBatch(impl->batchRequests(promptIds, config), config, nullptr));
}

void TextGenerationModel::setMaxParallelSequences(int n)
{
    CV_CheckGT(n, 0, "TextGenerationModel: the number of parallel sequences must be positive");
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    impl->loop->setMaxRunning(n);
}

void TextGenerationModel::setDraftModel(const String& modelPath)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    impl->setDraftModel(llm::loadModelBundle(modelPath, impl->contextLength));
}

void TextGenerationModel::setDraftModel(const Net& network)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    impl->setDraftModel(llm::loadModelBundle(network));
}

int TextGenerationModel::loadAdapter(const String& path, float scale)
{
    impl->checkLoaded();
    if (!std::isfinite(scale))
        CV_Error(Error::StsBadArg, "TextGenerationModel::loadAdapter: the scale is not finite");
    std::lock_guard<std::mutex> lock(impl->loopMutex);  // no forward runs while the layers change
    const int id = loadLLMAdapter(impl->net, path);
    impl->loop->setAdapterScale(id, scale);
    return id;
}

void TextGenerationModel::setAdapterScale(int adapterId, float scale)
{
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    impl->loop->setAdapterScale(adapterId, scale);
}

void TextGenerationModel::unloadAdapter(int adapterId)
{
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    impl->loop->releaseAdapter(adapterId);
    unloadLLMAdapter(impl->net, adapterId);
}

std::vector<LoRAAdapterInfo> TextGenerationModel::getAdapters() const
{
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    const Ptr<llm::LLMNetState> state = llm::LLMNetState::of(impl->net);
    std::vector<LoRAAdapterInfo> adapters;
    for (int id : state->adapterIds())
    {
        LoRAAdapterInfo info;
        info.id = id;
        info.path = state->adapter(id)->path;
        info.scale = impl->loop->adapterScale(id);
        info.alpha = state->adapter(id)->alpha;
        adapters.push_back(info);
    }
    return adapters;
}

std::vector<int> TextGenerationModel::getDraftCounts() const
{
    return std::vector<int>{impl->drafted, impl->draftsKept};
}

void TextGenerationModel::start(const String& prompt, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->startText(prompt, std::vector<Mat>(), config);
}

void TextGenerationModel::startWithTokenIds(const std::vector<int>& promptIds, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->start(promptIds, config, std::vector<std::string>());
}

std::vector<int> TextGenerationModel::getPromptTokenIds() const
{
    return impl->prompt;
}

std::vector<int> TextGenerationModel::getGeneratedTokenIds() const
{
    std::lock_guard<std::mutex> lock(impl->loopMutex);  // a GenerationEngine's run() may be extending them
    return impl->current ? impl->current->completion->generated() : std::vector<int>();
}

int TextGenerationModel::getLastPrefillTokenCount() const
{
    return impl->lastPrefillCount;
}

String TextGenerationModel::next()
{
    Impl::Busy busy(*impl);
    return impl->next();
}

bool TextGenerationModel::isDone() const
{
    return impl->done;
}

String TextGenerationModel::chat(const String& userMessage, const GenerationConfig& config)
{
    return chat(userMessage, config, nullptr);
}

String TextGenerationModel::chat(const String& userMessage, const GenerationConfig& config,
                                 const std::function<bool(const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->startChat(userMessage, std::vector<Mat>(), config);
    return impl->run(onPiece);
}

void TextGenerationModel::startChat(const String& userMessage, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->startChat(userMessage, std::vector<Mat>(), config);
}

void TextGenerationModel::resetConversation(const String& systemMessage)
{
    Impl::Busy busy(*impl);
    impl->resetConversation(systemMessage);
}

String TextGenerationModel::applyChatTemplate(const std::vector<String>& roles, const std::vector<String>& contents,
                                              bool addGenerationPrompt) const
{
    impl->checkLoaded();
    return impl->chatTemplate()->apply(roles, contents, addGenerationPrompt);
}

void TextGenerationModel::setChatTemplate(const String& name)
{
    Ptr<ChatTemplate> chosen = ChatTemplate::createBuiltin(name);  // validates the name
    std::lock_guard<std::mutex> lock(impl->loopMutex);  // an engine step may be rendering a chat
    impl->chosenTemplate = chosen;
}

void TextGenerationModel::setCustomChatTemplate(const Ptr<ChatTemplate>& chatTemplate)
{
    if (!chatTemplate)
        CV_Error(Error::StsNullPtr, "TextGenerationModel::setCustomChatTemplate: the template is empty");
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    impl->chosenTemplate = chatTemplate;
}

Ptr<ChatTemplate> TextGenerationModel::getChatTemplate() const
{
    impl->checkLoaded();
    return impl->chatTemplate();
}

Ptr<Tokenizer> TextGenerationModel::getTokenizer() const
{
    impl->checkLoaded();
    return impl->publicTokenizer;
}

GenerationConfig TextGenerationModel::getGenerationDefaults() const
{
    impl->checkLoaded();
    return impl->generationDefaults;
}

Net TextGenerationModel::getNetwork() const
{
    return impl->net;
}

// Sessions on disk: a KV sequence file of sequence 0 with the tokens it holds and, as its extra
// data, the conversation and its images (session_file.hpp).

void TextGenerationModel::saveSession(const String& path) const
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->loopMutex);  // sequence 0 as no engine step changes it
    if (impl->fed().empty() || !impl->cache->hasSequence(0))
        CV_Error(Error::StsError, "TextGenerationModel::saveSession: no token was fed yet; there is no session to save");
    CV_CheckEQ((int)impl->fed().size(), impl->cache->getSequenceLength(0),
               "TextGenerationModel::saveSession: the KV cache's sequence 0 was changed outside the model");
    // The adapters its keys and values were computed with, named by their contents.
    const Ptr<llm::LLMNetState> state = llm::LLMNetState::of(impl->net);
    std::vector<llm::SessionAdapter> adapters;
    for (const llm::AdapterUse& use : impl->loop->sequenceAdapters(0))
    {
        const llm::LoRAAdapter* adapter = state->adapter(use.id);
        if (!adapter)
            CV_Error(Error::StsError, format("TextGenerationModel::saveSession: the session was computed with LoRA "
                                             "adapter %d, which has been unloaded", use.id));
        adapters.push_back(llm::SessionAdapter{adapter->digest, use.scale, adapter->path});
    }
    const bool fedImages = std::any_of(impl->fed().begin(), impl->fed().end(), llm::MultimodalPrompter::isImageId);
    if (!impl->vision || (!fedImages && impl->conversationImages.empty()))
    {
        impl->cache->saveSequence(0, path, impl->fed(), llm::encodeSession(impl->conversation, nullptr, adapters));
        return;
    }
    // The images the session refers to, each once: those of the table the fed image ids mean
    // (the last prompt fed), and the conversation's (encoded again if they left the cache of
    // recent images).
    llm::MultimodalPrompter& v = *impl->vision;
    llm::SessionImages images;
    if (fedImages)
    {
        int rows = 0;
        for (const llm::MultimodalPrompter::ImageEntry& e : v.committedEntries())
        {
            images.table.push_back(images.add(e));
            rows += e.rows.rows;
        }
        int lowest = 0;
        for (int t : impl->fed())
            lowest = std::min(lowest, t);
        CV_CheckLE(-1 - lowest, rows - 1, "TextGenerationModel::saveSession: a fed image row is not in the image table");
    }
    for (size_t i = 0; i < impl->conversationImages.size(); i++)
    {
        const std::string known = i < impl->conversationDigests.size() ? impl->conversationDigests[i] : std::string();
        images.conversation.push_back(images.add(v.entryOf(impl->conversationImages[i], known)));
    }
    impl->cache->saveSequence(0, path, impl->fed(), llm::encodeSession(impl->conversation, &images, adapters));
}

int TextGenerationModel::loadSession(const String& path)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    // Everything is checked before the session changes.
    const llm::KVSequenceFile file = llm::readKVSequenceFile(path);
    if (!file.hasTokens)
        CV_Error(Error::StsBadArg, format("TextGenerationModel::loadSession: '%s' holds no token ids (saved by "
                                          "KVCache::saveSequence without them)", path.c_str()));
    llm::SessionImages images;
    const int vocab = impl->tokenizer->vocabSize();
    std::vector<llm::SessionAdapter> savedAdapters;
    std::vector<llm::ChatMessage> conversation = llm::decodeSession(file.extra, path, vocab, images, savedAdapters);
    // Its LoRA adapters must be loaded (the same contents, any id): the next prompt reuses the
    // session's keys and values only under the same adapters.
    const Ptr<llm::LLMNetState> state = llm::LLMNetState::of(impl->net);
    std::vector<int> adapterIds;
    std::vector<float> adapterScales;
    for (const llm::SessionAdapter& saved : savedAdapters)
    {
        int found = -1;
        for (int id : state->adapterIds())
            if (state->adapter(id)->digest == saved.digest)
                found = id;
        if (found < 0)
            CV_Error(Error::StsBadArg, format("TextGenerationModel::loadSession: '%s' was computed with LoRA adapter "
                                              "'%s' (scale %g), which is not loaded (loadAdapter() it first)",
                                              path.c_str(), saved.path.c_str(), saved.scale));
        adapterIds.push_back(found);
        adapterScales.push_back(saved.scale);
    }
    const llm::AdapterSet adapters = llm::normalizeAdapterSet(adapterIds, adapterScales, "TextGenerationModel::loadSession");
    if (!images.images.empty())
    {
        if (!impl->vision)
            CV_Error(Error::StsBadArg, format("TextGenerationModel::loadSession: '%s' is a session with images; load "
                                              "it into a model made with its mmproj (TextGenerationModel(modelPath, "
                                              "mmprojPath))", path.c_str()));
        const int width = impl->vision->encoder().outputEmbd();
        for (size_t i = 0; i < images.images.size(); i++)
            if (images.images[i].rows.cols != width)
                CV_Error(Error::StsBadArg, format("TextGenerationModel::loadSession: image %zu of '%s' has embeddings "
                                                  "of width %d; this model's images have %d", i, path.c_str(),
                                                  images.images[i].rows.cols, width));
    }
    int tableRows = 0;
    for (uint32_t index : images.table)
        tableRows += images.images[index].rows.rows;
    for (int t : file.tokens)
    {
        if (t >= vocab)
            CV_Error(Error::StsOutOfRange, format("TextGenerationModel::loadSession: '%s' holds token id %d; the "
                                                  "vocabulary has %d", path.c_str(), t, vocab));
        if (t < 0 && -1 - (int64)t >= tableRows)
            CV_Error(Error::StsOutOfRange, format("TextGenerationModel::loadSession: '%s' holds image row id %d; its "
                                                  "images have %d rows", path.c_str(), t, tableRows));
    }
    if (file.length >= impl->contextLength)
        CV_Error(Error::StsOutOfRange, format("TextGenerationModel::loadSession: '%s' holds %d tokens; the context "
                                              "holds %d and generation needs room for one more", path.c_str(),
                                              file.length, impl->contextLength));
    std::lock_guard<std::mutex> lock(impl->loopMutex);
    impl->cancelLocked();  // a generation in progress on sequence 0 ends before the sequence is replaced
    impl->cache->loadSequence(file, path, 0);
    impl->loop->setSequenceTokens(0, file.tokens, adapters);
    impl->conversation = std::move(conversation);
    impl->conversationImages.clear();
    impl->conversationDigests.clear();
    if (impl->vision)
    {
        // The fed image ids mean the rows of the saved table; the conversation's images are
        // known by digest, with their saved embeddings and layouts.
        std::vector<llm::MultimodalPrompter::ImageEntry> table;
        for (uint32_t index : images.table)
            table.push_back(images.images[index]);
        impl->vision->restore(table, images.images);
        for (uint32_t index : images.conversation)
        {
            impl->conversationImages.push_back(Mat());
            impl->conversationDigests.push_back(images.images[index].digest);
        }
    }
    impl->current.reset();
    impl->prompt.clear();
    impl->done = true;
    impl->replyPending = false;
    impl->lastPrefillCount = 0;
    return file.length;
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
