// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// TextGenerationModel: prompt -> tokens -> Net forward -> sampler -> text.
//
// generate(), the step API and chat() run on sequence 0 of the Net's KV cache, which keeps the
// keys and values of every token fed so far (`fed`). A new prompt that starts with those tokens
// only feeds the rest, which is what makes multi-turn chat cheap; a prompt that diverges
// rewinds the sequence to the common prefix first. generateBatch() uses other sequences
// (batch_generation.cpp).
//
// Speculative decoding (GenerationConfig::draftTokens): a step feeds the sampled token with
// the tokens a drafter guesses after it, gets the logits of every one of them from one
// forward, keeps the drafts that the sampler accepts and rewinds the cache over the rest.

#include "../../precomp.hpp"
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "../kv_cache/paged_kv_cache.hpp"
#include "../net/net_assembly.hpp"
#include "../model/model_bundle.hpp"
#include "../tokenizer/tokenizer.hpp"
#include "chat_template.hpp"
#include "chat_template_api.hpp"
#include "batch_generation.hpp"
#include "completion.hpp"
#include "drafter.hpp"
#include "session_file.hpp"
#include "../vision/multimodal_prompt.hpp"

#include <atomic>
#include <climits>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

struct TextGenerationModel::Impl
{
    // One call at a time: the Net, its buffers and its KV cache serve one call, so a second
    // thread's call while one runs is refused (separate models are independent and may run in
    // parallel).
    std::atomic<bool> busy{false};
    struct Busy
    {
        explicit Busy(Impl& impl) : flag(impl.busy)
        {
            if (flag.exchange(true))
                CV_Error(Error::StsError, "TextGenerationModel: called from two threads at once; "
                                          "use one model per thread");
        }
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
    std::vector<int> fed;         // tokens of sequence 0 whose keys and values the cache holds
    int lastPrefillCount = 0;     // tokens of the last prompt that prefill() ran through the Net
    int contextLength = 0;

    // Conversation for chat().
    std::vector<llm::ChatMessage> conversation;
    bool replyPending = false;    // the current generation answers the conversation's last turn

    // Current generation (step API and the loops built on it), on sequence 0 of the cache.
    std::unique_ptr<llm::Completion> completion;
    std::vector<int> prompt;
    Mat logits;                   // of the next token
    bool done = true;
    bool contextShift = false;
    int maxParallel = 16;         // sequences per forward in generateBatch
    std::vector<int> sequenceZero;  // forward()'s scratch
    Mat input;

    // Speculative decoding.
    std::unique_ptr<llm::DraftModelDrafter> draftModel;  // setDraftModel()
    std::unique_ptr<llm::PromptLookupDrafter> lookup;
    llm::Drafter* drafter = nullptr;  // of the current generation (nullptr: no drafts)
    int draftTokens = 0;
    int pending = -1;  // a sampled token not fed yet (after a rejected draft), or -1: `logits` is next
    std::vector<int> stepTokens, draft, logitTokens;  // scratch of a step
    int drafted = 0, draftsKept = 0;

    // TextGenerationModel(model, mmproj): images at the prompt's markers (vision/), and the
    // images of the conversation's turns, in order.
    std::shared_ptr<llm::MultimodalPrompter> vision;
    std::vector<Mat> conversationImages;
    std::vector<std::string> conversationDigests;  // per image: its digest when it came from a loaded session

    std::vector<int> encodePrompt(const std::string& text, bool addSpecial, bool parseSpecial)
    {
        return vision ? vision->encode(text, addSpecial, parseSpecial) : tokenizer->encode(text, addSpecial, parseSpecial);
    }

    void load(const llm::ModelBundle& bundle)
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
    }

    // The model's template is compiled once; one that does not compile is reported when a chat
    // needs it, so that the model still generates.
    void loadChatTemplate(const std::string& jinja)
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

    Ptr<ChatTemplate> chatTemplate() const
    {
        if (chosenTemplate)
            return chosenTemplate;
        if (!modelTemplate)
            CV_Error(Error::StsError, "TextGenerationModel: " + modelTemplateProblem +
                                      "; choose one with setChatTemplate() (e.g. \"chatml\")");
        return modelTemplate;
    }

    void checkLoaded() const
    {
        if (net.empty() || !tokenizer)
            CV_Error(Error::StsError, "TextGenerationModel: no model loaded");
    }

    Mat forward(const std::vector<int>& ids, const std::vector<int>& rows = std::vector<int>())
    {
        sequenceZero.assign(ids.size(), 0);  // reused, as is `input`: a decode step allocates nothing here
        const Mat out = llm::forwardTokens(net, ids, sequenceZero, input, rows);
        fed.insert(fed.end(), ids.begin(), ids.end());
        // One row of vocabulary logits per token asked for (every token's with allLogits).
        return out.reshape(1, (int)(out.total() / out.size[out.dims - 1]));
    }

    // Brings the Net to `prompt`, feeding only what it does not hold yet; returns the logits
    // of the prompt's last token.
    Mat prefill(const std::vector<int>& prompt)
    {
        CV_Assert(!prompt.empty());
        if ((int)prompt.size() >= contextLength)
            CV_Error(Error::StsOutOfRange, format("TextGenerationModel: the prompt has %zu tokens; the context holds %d",
                                                  prompt.size(), contextLength));
        size_t common = 0;
        while (common < fed.size() && common < prompt.size() && fed[common] == prompt[common])
            common++;
        if (vision)  // image rows whose image changed since they were fed are not a common prefix
            for (size_t i = 0; i < common; i++)
                if (llm::MultimodalPrompter::isImageId(fed[i]) && -1 - fed[i] >= vision->firstChangedRow())
                {
                    common = i;
                    break;
                }
        common = std::min(common, prompt.size() - 1);  // the last token must be fed for its logits
        // Sliding-window layers may have released what a shorter sequence would attend to:
        // then the prompt is fed again from the start.
        common = (size_t)cache->getResumableLength(0, (int)common);
        truncateLLMState(net, (int)common);
        fed.resize(common);
        lastPrefillCount = (int)(prompt.size() - common);
        const std::vector<int> rest(prompt.begin() + common, prompt.end());
        // Gemma 3's images attend among themselves both ways (libmtmd decodes them with causal
        // attention off); an image's rows go through one forward, as libmtmd requires.
        if (vision)
            llm::setLLMNonCausalSpans(net, vision->nonCausalSpans(rest));
        const Mat rows = forward(rest);
        if (vision)
            vision->commit();
        return rows.row(rows.rows - 1);  // a Net read with allLogits gives every token's row
    }

    void start(const std::vector<int>& promptIds, const GenerationConfig& cfg, const std::vector<String>& extraStops)
    {
        checkLoaded();
        cancel();  // an unfinished chat reply still joins the conversation
        std::vector<int> textIds = promptIds;  // image rows (negative ids) are not tokens to sample after
        textIds.erase(std::remove_if(textIds.begin(), textIds.end(), llm::MultimodalPrompter::isImageId), textIds.end());
        if (textIds.size() != promptIds.size())
            refuseDraftModelWithImages(cfg);
        completion.reset(new llm::Completion(*tokenizer, textIds.empty() ? promptIds : textIds, cfg,
                                             std::vector<std::string>(extraStops.begin(), extraStops.end())));
        prompt = promptIds;
        contextShift = cfg.contextShift;
        chooseDrafter(cfg);
        done = true;
        pending = -1;
        logits = prefill(promptIds);
        done = completion->done();
    }

    void startText(const String& text, const GenerationConfig& cfg)
    {
        checkLoaded();
        start(encodePrompt(text, true, false), cfg, std::vector<String>());
    }

    // A draft model cannot see the images: the projector maps them into the target model's
    // embedding space, which the draft model was not trained on even where its width is the
    // same (llama.cpp's server refuses a draft model with an mmproj too). Its
    // drafts of an image prompt would be guesses from the text alone, so it is refused by name
    // rather than silently drafting blind; prompt lookup sees the image rows and skips them.
    void refuseDraftModelWithImages(const GenerationConfig& cfg) const
    {
        if (cfg.draftTokens > 0 && cfg.lookupNgram == 0 && draftModel)
            CV_Error(Error::StsNotImplemented, "TextGenerationModel: speculative decoding with a draft model "
                                               "(setDraftModel) of a prompt with images is not supported: the draft "
                                               "model cannot see the images; use prompt lookup (lookupNgram) instead");
    }

    std::vector<llm::BatchCompletion> runBatch(const std::vector<std::vector<int>>& prompts, const GenerationConfig& cfg,
                                               const std::function<bool(int, const String&)>& onPiece,
                                               const llm::BatchImages* images = nullptr)
    {
        std::unique_ptr<llm::PromptLookupDrafter> batchLookup;  // the step API's stays as it is
        llm::Drafter* batchDrafter = drafterFor(cfg, batchLookup);
        std::vector<llm::BatchCompletion> results = llm::generateBatch(net, *cache, *tokenizer, prompts, cfg,
                                                                       maxParallel, onPiece, batchDrafter, images);
        drafted = draftsKept = 0;
        for (const llm::BatchCompletion& c : results)
        {
            drafted += c.drafted;
            draftsKept += c.draftsKept;
        }
        return results;
    }

    /** generateBatch() with images: each prompt is encoded with its own images into a table of
        its own (ids -1, -2, ... per prompt); before prompt i's prefill (a forward of its own)
        the token-embedding layer gets prompt i's table and the planner its non-causal spans.
        Decode steps feed sampled text tokens only, so the table matters at prefill alone. */
    std::vector<llm::BatchCompletion> runBatchWithImages(const std::vector<String>& prompts,
                                                         const std::vector<std::vector<Mat>>& images,
                                                         const GenerationConfig& cfg,
                                                         const std::function<bool(int, const String&)>& onPiece)
    {
        if (images.size() != prompts.size())
            CV_Error(Error::StsBadArg, format("TextGenerationModel::generateBatch: %zu prompts but %zu lists of images "
                                              "(one per prompt, empty for a prompt without images)",
                                              prompts.size(), images.size()));
        llm::MultimodalPrompter& v = *vision;
        std::vector<std::vector<int>> ids;
        std::vector<Mat> tables;
        std::vector<std::vector<Range>> spans;
        llm::BatchImages batchImages;
        bool anyImage = false;
        try
        {
            for (size_t i = 0; i < prompts.size(); i++)
            {
                v.setImages(images[i]);
                ids.push_back(v.encode(prompts[i], true, false));
                tables.push_back(v.table());
                spans.push_back(v.nonCausalSpans(ids.back()));
                std::string key;
                for (const auto& image : v.tableImages())
                    key += image.first + format("/%d;", image.second);
                batchImages.keys.push_back(key);
                anyImage = anyImage || !images[i].empty();
            }
        }
        catch (...)
        {
            v.setImages(std::vector<Mat>());
            throw;
        }
        v.setImages(std::vector<Mat>());
        if (anyImage)
            refuseDraftModelWithImages(cfg);
        batchImages.prepare = [&](int i) {
            v.useTable(tables[i]);
            llm::setLLMNonCausalSpans(net, spans[i]);
        };
        struct RestoreTable  // the step API's rows again, whatever happens
        {
            llm::MultimodalPrompter& v;
            ~RestoreTable() { v.useTable(v.committedTable()); }
        } restore{v};
        return runBatch(ids, cfg, onPiece, &batchImages);
    }

    void setDraftModel(const llm::ModelBundle& bundle)
    {
        if (bundle.net.empty() || !bundle.tokenizer)
            CV_Error(Error::StsBadArg, "TextGenerationModel::setDraftModel: the draft model has no tokenizer");
        cancel();  // a generation in progress keeps no pointer to the old drafter
        drafter = nullptr;
        draftModel.reset(new llm::DraftModelDrafter(bundle.net, *bundle.tokenizer, *tokenizer));
    }

    // The drafter `cfg` asks for: prompt lookup (made in `lookupDrafter`), the draft model, or none.
    llm::Drafter* drafterFor(const GenerationConfig& cfg, std::unique_ptr<llm::PromptLookupDrafter>& lookupDrafter)
    {
        CV_CheckGE(cfg.draftTokens, 0, "TextGenerationModel: draftTokens must not be negative");
        CV_CheckGE(cfg.lookupNgram, 0, "TextGenerationModel: lookupNgram must not be negative");
        if (cfg.draftTokens == 0)
            return nullptr;
        if (cfg.lookupNgram > 0)
        {
            lookupDrafter.reset(new llm::PromptLookupDrafter(cfg.lookupNgram));
            return lookupDrafter.get();
        }
        if (!draftModel)
            CV_Error(Error::StsBadArg, "TextGenerationModel: GenerationConfig::draftTokens needs a drafter: set "
                                       "lookupNgram (prompt lookup) or a draft model (setDraftModel)");
        draftModel->setMinProbability(cfg.draftMinProbability);
        return draftModel.get();
    }

    void chooseDrafter(const GenerationConfig& cfg)
    {
        drafter = drafterFor(cfg, lookup);
        draftTokens = cfg.draftTokens;
        drafted = draftsKept = 0;
    }

    // One step: samples the next token (unless a rejected draft left one pending), feeds it with
    // the drafts that follow it, and keeps the drafts the sampler accepts. Returns the text of
    // every token kept.
    String next()
    {
        if (done)
            return String();
        String piece;
        if (pending < 0)
        {
            piece = accept(logits, -1, fed.size());
            if (completion->done())
                return finish(piece);
            pending = completion->lastToken();
        }
        if ((int)fed.size() >= contextLength)
            shiftContext();
        proposeDrafts();
        stepTokens.assign(1, pending);
        stepTokens.insert(stepTokens.end(), draft.begin(), draft.end());
        logitTokens.clear();
        for (size_t i = 0; !draft.empty() && i < stepTokens.size(); i++)
            logitTokens.push_back((int)i);
        const size_t before = fed.size();
        const Mat rows = forward(stepTokens, logitTokens);
        pending = -1;
        drafted += (int)draft.size();
        // Row j holds the logits after stepTokens[j]: the sampler's choice there either is
        // draft[j] (kept, go on) or replaces it, and the cache keeps the tokens before it.
        for (size_t j = 0; j < draft.size(); j++)
        {
            piece += accept(rows.row((int)j), draft[j], before + j + 1);
            const bool kept = completion->lastSampled() == draft[j];
            draftsKept += kept;
            if (kept && !completion->done())
                continue;
            truncateLLMState(net, (int)(before + j + 1));
            fed.resize(before + j + 1);
            if (completion->done())
                return finish(piece);
            pending = completion->lastToken();
            return piece;
        }
        logits = rows.row((int)draft.size());
        return piece;
    }

    // The sampler's next token from `row` (1 x vocabulary logits) after `length` tokens of the
    // sequence, the draft being a guess of it.
    String accept(const Mat& row, int draftToken, size_t length)
    {
        const int room = contextShift ? INT_MAX : contextLength - (int)length;
        return completion->accept(row.ptr<float>(), row.cols, room, draftToken);
    }

    // The drafter's guesses after the pending token, no more than the context, maxNewTokens
    // and the drafter allow.
    void proposeDrafts()
    {
        draft.clear();
        if (!drafter)
            return;
        const int room = contextLength - (int)fed.size() - 1;
        const int wanted = std::min(std::min(draftTokens, room),
                                    completion->maxNewTokens() - (int)completion->generated().size());
        if (wanted <= 0)
            return;
        // The drafter sees the sequence with the pending token: appended for the call, not copied.
        fed.push_back(pending);
        try
        {
            drafter->propose(0, fed, wanted, draft);
        }
        catch (...)
        {
            fed.pop_back();
            throw;
        }
        fed.pop_back();
    }

    // llama.cpp's context shift: keep the first token when it is BOS, drop the older half of
    // the rest; the cache moves the later tokens back and re-rotates their keys.
    void shiftContext()
    {
        const int keep = tokenizer->addBos() ? 1 : 0;
        int discard = ((int)fed.size() - keep) / 2;
        // Sliding-window layers have released the kept tokens' pages: keep the window's worth of
        // tokens after them, so the next token attends to none of the released ones.
        const int window = cache->largestWindow();
        if (window > 0)
            discard = std::max(1, std::min(discard, (int)fed.size() - keep - window + 1));
        cache->discardTokens(0, keep, discard);
        fed.erase(fed.begin() + keep, fed.begin() + keep + discard);
    }

    String finish(const String& piece)
    {
        done = true;
        const String rest = piece + completion->finish();
        if (replyPending)
        {
            conversation.push_back(llm::ChatMessage{"assistant", completion->text()});
            replyPending = false;
        }
        return rest;
    }

    void cancel()
    {
        if (!done)
            finish(String());
    }

    String run(const std::function<bool(const String&)>& onPiece)
    {
        while (!done)
        {
            const String piece = next();
            if (!piece.empty() && onPiece && !onPiece(piece))
                cancel();
        }
        return completion->text();
    }

    void startChat(const String& message, const GenerationConfig& cfg)
    {
        checkLoaded();
        cancel();  // the previous reply joins the conversation before the new turn is formatted
        const Ptr<ChatTemplate> tmpl = chatTemplate();
        std::vector<llm::ChatMessage> messages = conversation;
        messages.push_back(llm::ChatMessage{"user", message});
        std::vector<String> roles, contents;
        for (const llm::ChatMessage& m : messages)
        {
            roles.push_back(m.role);
            contents.push_back(m.content);
        }
        std::string text = tmpl->apply(roles, contents, true);
        // The tokenizer adds BOS as a token: a BOS text the template wrote first is dropped, as
        // llama.cpp does, so that the prompt does not start with two.
        const std::string bos = tmpl->getBosToken();
        if (tokenizer->addBos() && !bos.empty() && text.compare(0, bos.size(), bos) == 0)
            text.erase(0, bos.size());
        if (vision)
            vision->setImages(conversationImages, conversationDigests);
        const std::vector<int> ids = encodePrompt(text, true, true);
        const std::vector<std::string> markers = llm::chatTemplateStopStrings(*tmpl);
        start(ids, cfg, std::vector<String>(markers.begin(), markers.end()));
        conversation = messages;
        replyPending = true;
        if (done)
            finish(String());
    }
};

TextGenerationModel::TextGenerationModel() : impl(makePtr<Impl>()) {}

// The cv2 bindings hold a TextGenerationModel by value and run its destructor even when its
// constructor threw, after C++ has already destroyed the members: a failing constructor
// leaves `impl` empty first, so that second destructor finds nothing to free (AddressSanitizer
// saw a use-after-free there otherwise).
TextGenerationModel::TextGenerationModel(const String& modelPath) : TextGenerationModel(modelPath, 0) {}

TextGenerationModel::TextGenerationModel(const String& modelPath, int contextLength) : impl(makePtr<Impl>())
{
    try
    {
        impl->load(llm::loadModelBundle(modelPath, contextLength));
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

TextGenerationModel::TextGenerationModel(const String& modelPath, const String& mmprojPath) : impl(makePtr<Impl>())
{
    try
    {
        impl->load(llm::loadModelBundle(modelPath, 0));
        impl->vision = std::make_shared<llm::MultimodalPrompter>(mmprojPath, impl->net, impl->tokenizer);
    }
    catch (...)
    {
        impl.release();
        throw;
    }
}

// The model's image support (TextGenerationModel(modelPath, mmprojPath)), or an error.
static llm::MultimodalPrompter& visionOf(const Ptr<TextGenerationModel::Impl>& impl)
{
    if (!impl || !impl->vision)
        CV_Error(Error::StsError, "TextGenerationModel: images need a model loaded with its mmproj file "
                                  "(TextGenerationModel(modelPath, mmprojPath))");
    return *impl->vision;
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
    llm::MultimodalPrompter& vision = visionOf(impl);
    vision.setImages(images);
    try
    {
        impl->startText(prompt, config);
    }
    catch (...)
    {
        vision.setImages(std::vector<Mat>());
        throw;
    }
    vision.setImages(std::vector<Mat>());
    return impl->run(onPiece);
}

String TextGenerationModel::chat(const String& userMessage, const std::vector<Mat>& images, const GenerationConfig& config,
                                 const std::function<bool(const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    (void)visionOf(impl);
    const size_t before = impl->conversationImages.size();
    impl->conversationImages.insert(impl->conversationImages.end(), images.begin(), images.end());
    impl->conversationDigests.resize(impl->conversationImages.size());
    try
    {
        impl->startChat(userMessage, config);
    }
    catch (...)
    {
        impl->conversationImages.resize(before);
        impl->conversationDigests.resize(before);
        throw;
    }
    return impl->run(onPiece);
}

Mat TextGenerationModel::getImageEmbeddings(const Mat& image)
{
    Impl::Busy busy(*impl);
    return visionOf(impl).embed(image);
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
    impl->startText(prompt, config);
    return impl->run(onPiece);
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts, const GenerationConfig& config)
{
    return generateBatch(prompts, config, nullptr);
}

std::vector<String> TextGenerationModel::generateBatch(const std::vector<String>& prompts, const GenerationConfig& config,
                                                       const std::function<bool(int, const String&)>& onPiece)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    std::vector<std::vector<int>> ids;
    for (const String& p : prompts)
        ids.push_back(impl->tokenizer->encode(p, true, false));
    std::vector<String> out;
    for (const llm::BatchCompletion& c : impl->runBatch(ids, config, onPiece))
        out.push_back(c.text);
    return out;
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
    (void)visionOf(impl);
    std::vector<String> out;
    for (const llm::BatchCompletion& c : impl->runBatchWithImages(prompts, images, config, onPiece))
        out.push_back(c.text);
    return out;
}

std::vector<std::vector<int>> TextGenerationModel::generateBatchTokenIds(const std::vector<String>& prompts,
                                                                         const std::vector<std::vector<Mat>>& images,
                                                                         const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    (void)visionOf(impl);
    std::vector<std::vector<int>> out;
    for (const llm::BatchCompletion& c : impl->runBatchWithImages(prompts, images, config, nullptr))
        out.push_back(c.generated);
    return out;
}

std::vector<std::vector<int>> TextGenerationModel::generateBatchTokenIds(const std::vector<std::vector<int>>& promptIds,
                                                                         const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    std::vector<std::vector<int>> out;
    for (const llm::BatchCompletion& c : impl->runBatch(promptIds, config, nullptr))
        out.push_back(c.generated);
    return out;
}

void TextGenerationModel::setMaxParallelSequences(int n)
{
    CV_CheckGT(n, 0, "TextGenerationModel: the number of parallel sequences must be positive");
    impl->maxParallel = n;
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

std::vector<int> TextGenerationModel::getDraftCounts() const
{
    return std::vector<int>{impl->drafted, impl->draftsKept};
}

void TextGenerationModel::start(const String& prompt, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->startText(prompt, config);
}

void TextGenerationModel::startWithTokenIds(const std::vector<int>& promptIds, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->start(promptIds, config, std::vector<String>());
}

std::vector<int> TextGenerationModel::getPromptTokenIds() const
{
    return impl->prompt;
}

std::vector<int> TextGenerationModel::getGeneratedTokenIds() const
{
    return impl->completion ? impl->completion->generated() : std::vector<int>();
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
    impl->startChat(userMessage, config);
    return impl->run(onPiece);
}

void TextGenerationModel::startChat(const String& userMessage, const GenerationConfig& config)
{
    Impl::Busy busy(*impl);
    impl->startChat(userMessage, config);
}

void TextGenerationModel::resetConversation(const String& systemMessage)
{
    Impl::Busy busy(*impl);
    impl->cancel();
    impl->conversation.clear();
    impl->conversationImages.clear();
    impl->conversationDigests.clear();
    if (!systemMessage.empty())
        impl->conversation.push_back(llm::ChatMessage{"system", systemMessage});
}

String TextGenerationModel::applyChatTemplate(const std::vector<String>& roles, const std::vector<String>& contents,
                                              bool addGenerationPrompt) const
{
    impl->checkLoaded();
    return impl->chatTemplate()->apply(roles, contents, addGenerationPrompt);
}

void TextGenerationModel::setChatTemplate(const String& name)
{
    impl->chosenTemplate = ChatTemplate::createBuiltin(name);  // validates the name
}

void TextGenerationModel::setCustomChatTemplate(const Ptr<ChatTemplate>& chatTemplate)
{
    if (!chatTemplate)
        CV_Error(Error::StsNullPtr, "TextGenerationModel::setCustomChatTemplate: the template is empty");
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

// Sessions on disk: a KV sequence file of sequence 0 with the tokens in `fed` and, as its extra
// data, the conversation and its images (session_file.hpp).
void TextGenerationModel::saveSession(const String& path) const
{
    Impl::Busy busy(*impl);
    impl->checkLoaded();
    if (impl->fed.empty() || !impl->cache->hasSequence(0))
        CV_Error(Error::StsError, "TextGenerationModel::saveSession: no token was fed yet; there is no session to save");
    CV_CheckEQ((int)impl->fed.size(), impl->cache->getSequenceLength(0),
               "TextGenerationModel::saveSession: the KV cache's sequence 0 was changed outside the model");
    const bool fedImages = std::any_of(impl->fed.begin(), impl->fed.end(), llm::MultimodalPrompter::isImageId);
    if (!impl->vision || (!fedImages && impl->conversationImages.empty()))
    {
        impl->cache->saveSequence(0, path, impl->fed, llm::encodeSession(impl->conversation, nullptr));
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
        for (int t : impl->fed)
            lowest = std::min(lowest, t);
        CV_CheckLE(-1 - lowest, rows - 1, "TextGenerationModel::saveSession: a fed image row is not in the image table");
    }
    for (size_t i = 0; i < impl->conversationImages.size(); i++)
    {
        const std::string known = i < impl->conversationDigests.size() ? impl->conversationDigests[i] : std::string();
        images.conversation.push_back(images.add(v.entryOf(impl->conversationImages[i], known)));
    }
    impl->cache->saveSequence(0, path, impl->fed, llm::encodeSession(impl->conversation, &images));
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
    std::vector<llm::ChatMessage> conversation = llm::decodeSession(file.extra, path, vocab, images);
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
    impl->cache->loadSequence(file, path, 0);
    impl->fed = file.tokens;
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
    impl->completion.reset();
    impl->prompt.clear();
    impl->logits.release();
    impl->done = true;
    impl->pending = -1;
    impl->replyPending = false;
    impl->lastPrefillCount = 0;
    return file.length;
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
