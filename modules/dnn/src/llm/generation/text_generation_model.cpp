// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// TextGenerationModel: prompt -> tokens -> Net forward -> sampler -> text.
//
// The Net keeps the keys and values of every token fed so far (`fed_`). A new prompt that
// starts with those tokens only feeds the rest, which is what makes multi-turn chat cheap; a
// prompt that diverges rewinds the Net to the common prefix first.

#include "../../precomp.hpp"
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "../llm_layers.hpp"
#include "../gguf/gguf_model_file.hpp"
#include "../tokenizer/tokenizer.hpp"
#include "chat_template.hpp"
#include "sampler.hpp"
#include "text_stream.hpp"

#include <atomic>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

struct TextGenerationModel::Impl
{
    // One call at a time: a Net holds one sequence and its buffers, so a second thread's call
    // while one runs is refused (separate models are independent and may run in parallel).
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
    String chatTemplateText;      // the model's tokenizer.chat_template ("" if none)
    String chatTemplateName;      // chosen by the user; overrides the model's
    std::vector<int> fed;         // tokens whose keys and values the Net holds
    int contextLength = 0;

    // Conversation for chat().
    std::vector<llm::ChatMessage> conversation;
    bool replyPending = false;    // the current generation answers the conversation's last turn

    // Current generation (step API and the loops built on it).
    GenerationConfig config;
    std::unique_ptr<llm::Sampler> sampler;
    std::unique_ptr<llm::TextStream> stream;
    std::vector<int> prompt;
    std::vector<int> history;     // prompt and generated tokens, for the repetition penalty
    std::vector<int> generated;
    Mat logits;                   // of the next token
    bool done = true;

    void load(const String& path, Net network)
    {
        // One parse serves the tokenizer, the chat template and (when not given) the Net.
        const llm::GGUFModelFile file(path);
        tokenizer = llm::Tokenizer::fromGGUF(file);
        publicTokenizer = llm::makePublicTokenizer(tokenizer);
        if (file.hasMetadata("tokenizer.chat_template"))
            chatTemplateText = file.getString("tokenizer.chat_template");
        net = network.empty() ? llm::buildNetFromGGUF(file, false) : network;
        const String arch = file.getString("general.architecture");
        contextLength = (int)file.getInt(arch + ".context_length");
        resetLLMState(net);
    }

    void checkLoaded() const
    {
        if (net.empty() || !tokenizer)
            CV_Error(Error::StsError, "TextGenerationModel: no model loaded");
    }

    Mat forward(const std::vector<int>& ids)
    {
        Mat input(1, (int)ids.size(), CV_32F);
        for (size_t i = 0; i < ids.size(); i++)
            input.at<float>((int)i) = (float)ids[i];
        net.setInput(input);
        Mat out = net.forward();
        fed.insert(fed.end(), ids.begin(), ids.end());
        return out;
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
        common = std::min(common, prompt.size() - 1);  // the last token must be fed for its logits
        truncateLLMState(net, (int)common);
        fed.resize(common);
        return forward(std::vector<int>(prompt.begin() + common, prompt.end()));
    }

    void start(const std::vector<int>& promptIds, const GenerationConfig& cfg, const std::vector<String>& extraStops)
    {
        checkLoaded();
        cancel();  // an unfinished chat reply still joins the conversation
        if (promptIds.empty())
            CV_Error(Error::StsBadArg, "TextGenerationModel: the prompt has no tokens");
        for (int id : promptIds)
            if (id < 0 || id >= tokenizer->vocabSize())
                CV_Error(Error::StsOutOfRange, format("TextGenerationModel: prompt token id %d is not in [0, %d)",
                                                      id, tokenizer->vocabSize()));
        CV_CheckGE(cfg.maxNewTokens, 0, "TextGenerationModel: maxNewTokens must not be negative");
        for (int id : cfg.stopTokenIds)
            CV_Check(id, id >= 0 && id < tokenizer->vocabSize(), "TextGenerationModel: stop token id out of range");
        llm::SamplingParams sp;
        sp.temperature = cfg.temperature;
        sp.topK = cfg.topK;
        sp.topP = cfg.topP;
        sp.minP = cfg.minP;
        sp.repetitionPenalty = cfg.repetitionPenalty;
        sp.repetitionWindow = cfg.repetitionWindow;
        sampler.reset(new llm::Sampler(sp, (uint64)(int64)cfg.seed));
        std::vector<std::string> stops(cfg.stopStrings.begin(), cfg.stopStrings.end());
        stops.insert(stops.end(), extraStops.begin(), extraStops.end());
        stream.reset(new llm::TextStream(stops));
        config = cfg;
        prompt = promptIds;
        history = promptIds;
        generated.clear();
        done = false;
        logits = prefill(promptIds);
        if (config.maxNewTokens == 0)
            done = true;
    }

    void startText(const String& text, const GenerationConfig& cfg)
    {
        checkLoaded();
        start(tokenizer->encode(text, true, false), cfg, std::vector<String>());
    }

    bool isStopToken(int id) const
    {
        return tokenizer->isEndOfGeneration(id) ||
               std::find(config.stopTokenIds.begin(), config.stopTokenIds.end(), id) != config.stopTokenIds.end();
    }

    String next()
    {
        if (done)
            return String();
        const Mat row = logits.reshape(1, 1);
        const int id = sampler->sample(row.ptr<float>(), row.cols, history);
        if (isStopToken(id))
            return finish(String());
        generated.push_back(id);
        history.push_back(id);
        String piece = stream->push(tokenizer->tokenToPiece(id, false));
        const bool full = (int)fed.size() + 1 >= contextLength;
        if (stream->stopped() || (int)generated.size() >= config.maxNewTokens || full)
            return finish(piece);
        logits = forward({id});
        return piece;
    }

    String finish(const String& piece)
    {
        done = true;
        const String rest = piece + stream->flush();
        if (replyPending)
        {
            conversation.push_back(llm::ChatMessage{"assistant", stream->text()});
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
        return stream->text();
    }

    std::vector<llm::ChatMessage> messagesFrom(const std::vector<String>& roles, const std::vector<String>& contents) const
    {
        CV_CheckEQ(roles.size(), contents.size(), "TextGenerationModel: one role per message");
        std::vector<llm::ChatMessage> messages;
        for (size_t i = 0; i < roles.size(); i++)
            messages.push_back(llm::ChatMessage{roles[i], contents[i]});
        return messages;
    }

    llm::ChatTemplate chatTemplate() const
    {
        if (!chatTemplateName.empty())
            return llm::ChatTemplate::fromName(chatTemplateName);
        if (chatTemplateText.empty())
            CV_Error(Error::StsError, "TextGenerationModel: the model has no chat template; "
                                      "choose one with setChatTemplate()");
        return llm::ChatTemplate::fromJinja(chatTemplateText);
    }

    void startChat(const String& message, const GenerationConfig& cfg)
    {
        checkLoaded();
        cancel();  // the previous reply joins the conversation before the new turn is formatted
        const llm::ChatTemplate tmpl = chatTemplate();
        std::vector<llm::ChatMessage> messages = conversation;
        messages.push_back(llm::ChatMessage{"user", message});
        const std::vector<int> ids = tokenizer->encode(tmpl.format(messages, true), true, true);
        const std::vector<std::string> markers = tmpl.turnEndMarkers();
        start(ids, cfg, std::vector<String>(markers.begin(), markers.end()));
        conversation = messages;
        replyPending = true;
        if (done)
            finish(String());
    }
};

TextGenerationModel::TextGenerationModel() : impl(makePtr<Impl>()) {}

TextGenerationModel::TextGenerationModel(const String& modelPath) : impl(makePtr<Impl>())
{
    impl->load(modelPath, Net());
}

TextGenerationModel::TextGenerationModel(const Net& network) : impl(makePtr<Impl>())
{
    Net net = network;
    String path;
    for (const String& name : net.getLayerNames())
        if (LLMTokenEmbeddingLayer* e = dynamic_cast<LLMTokenEmbeddingLayer*>(net.getLayer(net.getLayerId(name)).get()))
            path = e->sourcePath();
    if (path.empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: the Net was not made by readNet/readNetFromGGUF "
                                   "(no token embedding that names its model file)");
    impl->load(path, net);
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
    std::vector<String> out;
    for (const String& p : prompts)
        out.push_back(generate(p, config));
    return out;
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
    return impl->generated;
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
    if (!systemMessage.empty())
        impl->conversation.push_back(llm::ChatMessage{"system", systemMessage});
}

String TextGenerationModel::applyChatTemplate(const std::vector<String>& roles, const std::vector<String>& contents,
                                              bool addGenerationPrompt) const
{
    impl->checkLoaded();
    return impl->chatTemplate().format(impl->messagesFrom(roles, contents), addGenerationPrompt);
}

void TextGenerationModel::setChatTemplate(const String& name)
{
    llm::ChatTemplate::fromName(name);  // validates the name
    impl->chatTemplateName = name;
}

Ptr<Tokenizer> TextGenerationModel::getTokenizer() const
{
    impl->checkLoaded();
    return impl->publicTokenizer;
}

Net TextGenerationModel::getNetwork() const
{
    return impl->net;
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
