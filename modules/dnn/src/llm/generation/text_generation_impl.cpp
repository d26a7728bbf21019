// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// TextGenerationModel's loading, chat templates and the turning of requests into token ids.

#include "../../precomp.hpp"
#include "text_generation_impl.hpp"
#include <opencv2/dnn/llm.hpp>

#include "../net/net_assembly.hpp"
#include "chat_template_api.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

TextGenerationModel::Impl::Busy::Busy(Impl& impl) : flag(impl.busy)
{
    if (flag.exchange(true))
        CV_Error(Error::StsError, "TextGenerationModel: called from two threads at once; use one model per thread "
                                  "(or a GenerationEngine, which takes requests from any thread)");
}

void TextGenerationModel::Impl::load(const llm::ModelBundle& bundle)
{
    net = bundle.net;
    tokenizer = bundle.tokenizer;
    loadChatTemplate(bundle.chatTemplate);
    generationDefaults = bundle.generationDefaults;
    publicTokenizer = llm::makePublicTokenizer(tokenizer);
    cache = getLLMKVCache(net).dynamicCast<llm::PagedKVCache>();
    CV_Assert(cache);
    contextLength = cache->getMaxSequenceLength();
    resetLLMState(net);
    loop.reset(new llm::DecodeLoop(net, *cache, *tokenizer));
}

void TextGenerationModel::Impl::load(const String& modelPath, const LLMLoadOptions& options)
{
    llm::LoadOptions netOptions = llm::LoadOptions::fromEnvironment(false, options.contextLength);
    if (options.integerDot >= 0)
        netOptions.integerDot = options.integerDot != 0;
    load(llm::loadModelBundle(modelPath, netOptions));
    if (options.kvStorageType >= 0)
        cache->setStorageType(options.kvStorageType);
    if (options.kvMemoryBudget < 0)
        CV_Error(Error::StsBadArg, "TextGenerationModel: LLMLoadOptions::kvMemoryBudget must not be negative");
    if (options.kvMemoryBudget > 0)
        cache->setMemoryBudget((size_t)options.kvMemoryBudget);
    loop->setMaxRunning(options.maxParallelSequences);
    if (!options.mmprojPath.empty())
        vision = std::make_shared<llm::MultimodalPrompter>(options.mmprojPath, net, tokenizer);
    if (!options.draftModelPath.empty())
    {
        netOptions.contextLength = contextLength;  // the draft model drafts within this model's context
        setDraftModel(llm::loadModelBundle(options.draftModelPath, netOptions));
    }
}

// The model's template is compiled once; one that does not compile is reported when a chat
// needs it, so that the model still generates.
void TextGenerationModel::Impl::loadChatTemplate(const std::string& jinja)
{
    if (jinja.empty())
    {
        modelTemplateProblem = "the model has no chat template";
        return;
    }
    auto tokenText = [&](int id) { return id >= 0 ? tokenizer->tokenText(id) : std::string(); };
    try
    {
        modelTemplate = ChatTemplate::create(jinja, tokenText(tokenizer->bosId()), tokenText(tokenizer->eosId()));
    }
    catch (const cv::Exception& e)
    {
        modelTemplateProblem = "the model's chat template cannot be used: " + e.err;
    }
}

Ptr<ChatTemplate> TextGenerationModel::Impl::chatTemplate() const
{
    if (chosenTemplate)
        return chosenTemplate;
    if (!modelTemplate)
        CV_Error(Error::StsError, "TextGenerationModel: " + modelTemplateProblem +
                                  "; choose one with setChatTemplate() (e.g. \"chatml\")");
    return modelTemplate;
}

void TextGenerationModel::Impl::checkLoaded() const
{
    if (net.empty() || !tokenizer)
        CV_Error(Error::StsError, "TextGenerationModel: no model loaded");
}

llm::MultimodalPrompter& TextGenerationModel::Impl::visionOrError() const
{
    if (!vision)
        CV_Error(Error::StsError, "TextGenerationModel: images need a model loaded with its mmproj file "
                                  "(TextGenerationModel(modelPath, mmprojPath))");
    return *vision;
}

std::vector<int> TextGenerationModel::Impl::encodePrompt(const std::string& text, const std::vector<Mat>& images,
                                                         bool parseSpecial, const std::vector<std::string>& digests)
{
    if (!vision)
    {
        if (!images.empty())
            visionOrError();
        return tokenizer->encode(text, true, parseSpecial);
    }
    vision->setImages(images, digests);
    std::vector<int> ids;
    try
    {
        ids = vision->encode(text, true, parseSpecial);
    }
    catch (...)
    {
        vision->setImages(std::vector<Mat>());
        throw;
    }
    vision->setImages(std::vector<Mat>());
    return ids;
}

std::string TextGenerationModel::Impl::renderChat(const std::vector<llm::ChatMessage>& messages,
                                                  std::vector<std::string>& stops) const
{
    std::vector<String> roles, contents;
    for (const llm::ChatMessage& m : messages)
    {
        roles.push_back(m.role);
        contents.push_back(m.content);
    }
    const Ptr<ChatTemplate> tmpl = chatTemplate();
    return withoutTemplateBos(*tmpl, tmpl->apply(roles, contents, true), stops);
}

std::string TextGenerationModel::Impl::renderChatJSON(const std::string& messagesJson, const std::string& contextJson,
                                                      std::vector<std::string>& stops) const
{
    const Ptr<ChatTemplate> tmpl = chatTemplate();
    return withoutTemplateBos(*tmpl, tmpl->applyJSON(messagesJson, true, contextJson), stops);
}

std::string TextGenerationModel::Impl::withoutTemplateBos(const ChatTemplate& tmpl, std::string text,
                                                          std::vector<std::string>& stops) const
{
    // The tokenizer adds BOS as a token: a BOS text the template wrote first is dropped, as
    // llama.cpp does, so that the prompt does not start with two.
    const std::string bos = tmpl.getBosToken();
    if (tokenizer->addBos() && !bos.empty() && text.compare(0, bos.size(), bos) == 0)
        text.erase(0, bos.size());
    stops = llm::chatTemplateStopStrings(tmpl);
    return text;
}

// A draft model cannot see the images: the projector maps them into the target model's
// embedding space, which the draft model was not trained on even where its width is the same
// (llama.cpp's server refuses a draft model with an mmproj too). Its drafts of an image prompt
// would be guesses from the text alone, so it is refused by name rather than silently drafting
// blind; prompt lookup sees the image rows and skips them.
llm::Drafter* TextGenerationModel::Impl::draftModelFor(const GenerationConfig& cfg, bool hasImages) const
{
    if (cfg.draftTokens <= 0 || cfg.lookupNgram != 0)
        return nullptr;
    if (hasImages && draftModel)
        CV_Error(Error::StsNotImplemented, "TextGenerationModel: speculative decoding with a draft model "
                                           "(setDraftModel) of a prompt with images is not supported: the draft "
                                           "model cannot see the images; use prompt lookup (lookupNgram) instead");
    return draftModel.get();
}

void TextGenerationModel::Impl::setDraftModel(const llm::ModelBundle& bundle)
{
    if (bundle.net.empty() || !bundle.tokenizer)
        CV_Error(Error::StsBadArg, "TextGenerationModel::setDraftModel: the draft model has no tokenizer");
    std::unique_ptr<llm::DraftModelDrafter> drafter(new llm::DraftModelDrafter(bundle.net, *bundle.tokenizer, *tokenizer));
    std::lock_guard<std::mutex> lock(loopMutex);
    cancelLocked();  // a generation in progress keeps no pointer to the old drafter
    if (loop->runningCount() + loop->waitingCount() > 0)  // a GenerationEngine's requests may draft with it
        CV_Error(Error::StsError, "TextGenerationModel::setDraftModel: requests of the model's GenerationEngine are "
                                  "waiting or running; set the draft model before submitting, or when they have ended");
    draftModel = std::move(drafter);
}

llm::LoopRequest TextGenerationModel::Impl::makeLoopRequest(const GenerationRequest& request)
{
    checkLoaded();
    const int forms = (int)!request.prompt.empty() + (int)!request.roles.empty() + (int)!request.messagesJson.empty() +
                      (int)!request.promptTokenIds.empty();
    if (forms != 1)
        CV_Error(Error::StsBadArg, "GenerationEngine: a request needs exactly one of prompt, roles and contents "
                                   "(chat messages), messagesJson, promptTokenIds");
    if (!request.chatContextJson.empty() && request.messagesJson.empty())
        CV_Error(Error::StsBadArg, "GenerationEngine: chatContextJson goes with messagesJson");
    llm::LoopRequest r;
    r.config = request.config;
    if (!request.prompt.empty())
        r.prompt = encodePrompt(request.prompt, request.images, false);
    else if (!request.roles.empty())
    {
        if (request.roles.size() != request.contents.size())
            CV_Error(Error::StsBadArg, format("GenerationEngine: %zu roles but %zu contents", request.roles.size(),
                                              request.contents.size()));
        std::vector<llm::ChatMessage> messages;
        for (size_t i = 0; i < request.roles.size(); i++)
            messages.push_back(llm::ChatMessage{request.roles[i], request.contents[i]});
        r.prompt = encodePrompt(renderChat(messages, r.extraStops), request.images, true);
    }
    else if (!request.messagesJson.empty())
        r.prompt = encodePrompt(renderChatJSON(request.messagesJson, request.chatContextJson, r.extraStops),
                                request.images, true);
    else
    {
        if (!request.images.empty())
            CV_Error(Error::StsBadArg, "GenerationEngine: images need a text prompt with <__media__> markers, not "
                                      "token ids");
        r.prompt = request.promptTokenIds;
    }
    const bool hasImages = std::any_of(r.prompt.begin(), r.prompt.end(), llm::MultimodalPrompter::isImageId);
    r.draftModel = draftModelFor(r.config, hasImages);
    if (hasImages)
    {
        // Its own table of image rows, in the token-embedding layer for its prefill only; the
        // spans where its images attend both ways, moved by the prefix its prefill skips.
        std::shared_ptr<llm::MultimodalPrompter> v = vision;
        const Mat table = v->table();
        const std::vector<Range> spans = v->nonCausalSpans(r.prompt);
        const int promptLength = (int)r.prompt.size();
        Net languageModel = net;
        r.prepare = [v, table, spans, promptLength, languageModel](const std::vector<int>& rest) mutable {
            const int skipped = promptLength - (int)rest.size();
            std::vector<Range> moved;
            for (const Range& s : spans)
                moved.emplace_back(s.start - skipped, s.end - skipped);  // reuse ends before the first image
            v->useTable(table);
            llm::setLLMNonCausalSpans(languageModel, moved);
        };
        r.prefilled = [v]() { v->useTable(v->committedTable()); };  // sequence 0's rows again
    }
    return r;
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
