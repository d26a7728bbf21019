// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_TEXT_GENERATION_HPP
#define OPENCV_DNN_TEXT_GENERATION_HPP

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/chat_template.hpp>
#include <opencv2/dnn/tokenizer.hpp>

#include <functional>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief How TextGenerationModel picks and stops tokens. The defaults give greedy decoding. */
struct CV_EXPORTS_W_SIMPLE GenerationConfig
{
    CV_WRAP GenerationConfig() {}

    CV_PROP_RW int maxNewTokens = 256;        //!< stop after this many generated tokens
    CV_PROP_RW float temperature = 0.f;       //!< 0: greedy; otherwise sample at this temperature
    CV_PROP_RW int topK = 0;                  //!< keep the k most likely tokens (0: all)
    CV_PROP_RW float topP = 1.f;              //!< nucleus sampling threshold (1: off)
    CV_PROP_RW float minP = 0.f;              //!< drop tokens below minP * p(best) (0: off)
    CV_PROP_RW float repetitionPenalty = 1.f; //!< > 1 discourages recent tokens (1: off)
    /** Subtracted from a recent token's logit once per time it occurs (OpenAI's and llama.cpp's
    frequency penalty; 0: off; negative values encourage repeats). */
    CV_PROP_RW float frequencyPenalty = 0.f;
    //! Subtracted once from the logit of every recent token (presence penalty; 0: off).
    CV_PROP_RW float presencePenalty = 0.f;
    //! Recent tokens (prompt included) the three penalties look at (-1: all)
    CV_PROP_RW int repetitionWindow = 64;
    CV_PROP_RW int seed = 0;                  //!< random seed for sampling
    CV_PROP_RW std::vector<String> stopStrings;  //!< generation ends before any of these texts
    CV_PROP_RW std::vector<int> stopTokenIds;    //!< extra tokens that end generation
    /** When the context is full: false ends generation; true drops the older half of the
    tokens after the first (llama.cpp's context shift) and goes on (in a batch or a
    GenerationEngine, such a sequence reserves the whole context's KV pages when it joins). */
    CV_PROP_RW bool contextShift = false;
    //! Never pick end-of-generation tokens (EOS, end of turn): generate until another limit.
    CV_PROP_RW bool ignoreEndOfGeneration = false;
    /** Speculative decoding: tokens drafted per step (0: off), drafted by prompt lookup when
    lookupNgram > 0, else by the draft model (TextGenerationModel::setDraftModel()). The model
    checks the drafts in one forward and keeps those it would have generated itself: greedy
    output is the same token for token; sampled output follows the same distribution and is
    reproducible for a seed (though not the same text as without drafts). */
    CV_PROP_RW int draftTokens = 0;
    /** Prompt lookup drafting: the tokens that followed the latest earlier occurrence of the
    last n tokens, n = lookupNgram down to 1 (0: use the draft model). */
    CV_PROP_RW int lookupNgram = 0;
    /** A draft model stops drafting at a token it gives less than this probability (llama.cpp's
    --draft-p-min): unlikely drafts are mostly rejected and only cost time. 0: always draft
    draftTokens tokens. */
    CV_PROP_RW float draftMinProbability = 0.75f;
    /** A GBNF grammar (llama.cpp's dialect, start rule "root") the completion must follow: tokens
    that cannot continue a valid text are never sampled, and end-of-generation comes only where
    the grammar may end. maxNewTokens or a stop string may still cut the text short. */
    CV_PROP_RW String grammar;
    //! A JSON Schema (as JSON text) the completion must follow (converted to a grammar, as llama.cpp does).
    CV_PROP_RW String jsonSchema;
    //! The completion is one JSON value (any). Only one of grammar, jsonSchema and jsonMode may be set.
    CV_PROP_RW bool jsonMode = false;
    /** JSON of jsonSchema / jsonMode: false: compact, no whitespace between tokens (as OpenAI's
    structured output; a small model spends its tokens on values); true: llama.cpp's rule (a
    space, or newlines and indentation, after punctuation). */
    CV_PROP_RW bool jsonFreeWhitespace = false;
    /** Log-probabilities in GenerationResult (OpenAI's logprobs / top_logprobs): -1: none; 0: each
    generated token's own; 1..20: also that many most likely tokens at each step. */
    CV_PROP_RW int topLogprobs = -1;
    /** LoRA adapters this generation runs with (ids of TextGenerationModel::loadAdapter()), the
    others off, as llama-server's per-request `lora`. Empty: the adapters loaded with a non-zero
    default scale (loadAdapter(), setAdapterScale()). */
    CV_PROP_RW std::vector<int> adapterIds;
    //! The scales of adapterIds (empty: 1 each; 0 turns an adapter off).
    CV_PROP_RW std::vector<float> adapterScales;
};

/** @brief A LoRA adapter loaded by TextGenerationModel::loadAdapter(). */
struct CV_EXPORTS_W_SIMPLE LoRAAdapterInfo
{
    CV_WRAP LoRAAdapterInfo() {}

    CV_PROP_RW int id = -1;
    CV_PROP_RW String path;
    CV_PROP_RW float scale = 0.f;  //!< its default scale (requests that name no adapters)
    CV_PROP_RW float alpha = 0.f;  //!< the file's adapter.lora.alpha (0: absent)
};

/** @brief How a language model is loaded (TextGenerationModel, GenerationEngine::create). The
defaults are those of TextGenerationModel(modelPath). */
struct CV_EXPORTS_W_SIMPLE LLMLoadOptions
{
    CV_WRAP LLMLoadOptions() {}

    /** Tokens one sequence may hold, as llama.cpp's n_ctx (0: the model's training context): the
    KV cache's limit per sequence and what context-dependent rotary scaling (phi3's LongRoPE)
    chooses by. */
    CV_PROP_RW int contextLength = 0;
    //! Element type of the KV cache: CV_32F, CV_16F or CV_8S (see KVCache::setStorageType; -1: CV_32F).
    CV_PROP_RW int kvStorageType = -1;
    //! The KV cache's memory budget in bytes (KVCache::setMemoryBudget; 0: the cache's default).
    CV_PROP_RW double kvMemoryBudget = 0;
    /** Quantized matmuls quantize their activations to 8 bits for integer dot products
    (llama.cpp's path, faster): 1; the exact float path: 0; -1: the environment variable
    OPENCV_DNN_LLM_INTEGER_DOT decides ("0": off), on by default. */
    CV_PROP_RW int integerDot = -1;
    //! A llama.cpp `mmproj` GGUF (vision encoder and projector) for images in prompts ("": none).
    CV_PROP_RW String mmprojPath;
    //! A smaller model of the same vocabulary for speculative decoding (TextGenerationModel::setDraftModel; "": none).
    CV_PROP_RW String draftModelPath;
    //! Most sequences generating in one forward (generateBatch, GenerationEngine).
    CV_PROP_RW int maxParallelSequences = 16;
};

class GenerationEngine;

/** @brief Text generation with a language model: tokenizer, sampling, stop conditions,
streaming, chat and batches over a cv::dnn::Net.

@code
cv::dnn::TextGenerationModel model("model.gguf");
std::cout << model.generate("Once upon a time") << std::endl;
@endcode

Streaming pieces are always whole UTF-8 characters. Languages without callbacks (Python) use
the step API: start(), then next() until isDone().
*/
class CV_EXPORTS_W_SIMPLE TextGenerationModel
{
public:
    CV_WRAP TextGenerationModel();
    /** @brief Loads a model and its tokenizer: a GGUF file (architectures: see readNetFromGGUF) or
    an ONNX decoder (`folder/model.onnx` with tokenizer.json beside it). */
    CV_WRAP explicit TextGenerationModel(const String& modelPath);
    //! Loads a model as `options` say (context length, KV cache, projector, draft model, ...).
    CV_WRAP TextGenerationModel(const String& modelPath, const LLMLoadOptions& options);
    /** Loads a model with a context of `contextLength` tokens instead of its training context
        (0: that one), as llama.cpp's n_ctx: the KV cache's limit per sequence and what
        context-dependent rotary scaling (phi3's LongRoPE) chooses by. */
    CV_WRAP TextGenerationModel(const String& modelPath, int contextLength);
    //! Uses a Net made by readNet/readNetFromGGUF (its tokenizer is read from the same file).
    CV_WRAP explicit TextGenerationModel(const Net& network);
    /** @brief Loads a vision-language model: a GGUF language model and its llama.cpp `mmproj`
    GGUF (vision encoder and projector; supported projectors: `mlp` for LLaVA 1.5 and 1.6,
    `gemma3`, `idefics3` for SmolVLM). The projector's output width must be the language model's
    embedding width. */
    CV_WRAP TextGenerationModel(const String& modelPath, const String& mmprojPath);

    /** @brief The completion of a prompt with images: each `<__media__>` marker of the prompt
    (llama.cpp's default marker) stands for the next image, in order; the counts must agree.
    Images are BGR (as imread gives), CV_8UC3, or CV_32FC3 / CV_64FC3 with values in [0, 1],
    any size. Each image is encoded once and its embeddings go through the KV cache like
    prompt text. */
    CV_WRAP String generate(const String& prompt, const std::vector<Mat>& images,
                            const GenerationConfig& config = GenerationConfig());
    /** @brief chat() with images: the message's `<__media__>` markers stand for `images`; the
    conversation keeps them for later turns. */
    CV_WRAP String chat(const String& userMessage, const std::vector<Mat>& images,
                        const GenerationConfig& config = GenerationConfig());
    //! Streaming form of generate() with images (onPiece as for generate()).
    String generate(const String& prompt, const std::vector<Mat>& images, const GenerationConfig& config,
                    const std::function<bool(const String& piece)>& onPiece);
    //! Streaming form of chat() with images.
    String chat(const String& userMessage, const std::vector<Mat>& images, const GenerationConfig& config,
                const std::function<bool(const String& piece)>& onPiece);
    //! The image embeddings the language model receives for `image` (image tokens x embedding width).
    CV_WRAP Mat getImageEmbeddings(const Mat& image);

    //! The completion of a prompt (the prompt is encoded with BOS as the model asks).
    CV_WRAP String generate(const String& prompt, const GenerationConfig& config = GenerationConfig());
    //! The greedy completion of a prompt: at most maxNewTokens new tokens.
    CV_WRAP String generate(const String& prompt, int maxNewTokens);

    /** @brief Streams the completion: onPiece receives each new piece of text (whole UTF-8
    characters) and returns false to stop early. Returns the whole completion. */
    String generate(const String& prompt, const GenerationConfig& config,
                    const std::function<bool(const String& piece)>& onPiece);

    /** @brief One completion per prompt, generated together with continuous batching.

    Up to getMaxParallelSequences() sequences decode in one forward; a finished one leaves and
    a waiting prompt joins between steps, when the KV cache's budget holds its prompt and
    maxNewTokens. Identical prompts are prefilled once and share their pages. Completion i
    samples with seed config.seed + i, so it equals a lone generate() with that seed. The
    conversation of chat() is kept. */
    CV_WRAP std::vector<String> generateBatch(const std::vector<String>& prompts,
                                              const GenerationConfig& config = GenerationConfig());
    /** @brief Streaming form of generateBatch(): onPiece(i, piece) receives the pieces of
    completion i as they come and returns false to end that completion. */
    std::vector<String> generateBatch(const std::vector<String>& prompts, const GenerationConfig& config,
                                      const std::function<bool(int index, const String& piece)>& onPiece);
    /** @brief generateBatch() with images (a model loaded with its mmproj): images[i] are the
    images of prompt i, at its `<__media__>` markers as in generate(). Each prompt's image rows
    belong to its own sequence, so completion i equals a lone generate(prompts[i], images[i])
    with seed config.seed + i. Prompt lookup drafting (lookupNgram) works with images; a draft
    model does not (it cannot see the images). */
    CV_WRAP std::vector<String> generateBatch(const std::vector<String>& prompts,
                                              const std::vector<std::vector<Mat> >& images,
                                              const GenerationConfig& config = GenerationConfig());
    //! Streaming form of generateBatch() with images.
    std::vector<String> generateBatch(const std::vector<String>& prompts, const std::vector<std::vector<Mat> >& images,
                                      const GenerationConfig& config,
                                      const std::function<bool(int index, const String& piece)>& onPiece);
    //! generateBatch() with images: the generated ids of each completion (stop tokens excluded; C++ only).
    std::vector<std::vector<int> > generateBatchTokenIds(const std::vector<String>& prompts,
                                                         const std::vector<std::vector<Mat> >& images,
                                                         const GenerationConfig& config = GenerationConfig());
    //! generateBatch() on token ids: the generated ids of each completion (stop tokens excluded; C++ only).
    std::vector<std::vector<int> > generateBatchTokenIds(const std::vector<std::vector<int> >& promptIds,
                                                         const GenerationConfig& config = GenerationConfig());
    //! Most sequences generateBatch() runs in one forward (default 16).
    CV_WRAP void setMaxParallelSequences(int n);

    /** @brief Loads a smaller model with the same vocabulary to draft tokens for speculative
    decoding (GenerationConfig::draftTokens). Its context is this model's. */
    CV_WRAP void setDraftModel(const String& modelPath);
    //! Uses a Net made by readNet() as the draft model (its tokenizer is read from the same file).
    CV_WRAP void setDraftModel(const Net& network);
    /** @brief Speculative decoding since the last start (or generateBatch()): {tokens drafted,
    drafted tokens the model kept}. */
    CV_WRAP std::vector<int> getDraftCounts() const;

    /** @brief Loads a LoRA adapter (a GGUF adapter file of this model's architecture, as
    llama.cpp's `--lora` takes: F32, F16, BF16 or Q8_0 pairs) and returns its id. `scale` is its
    default: generations whose GenerationConfig names no adapters run with every adapter of
    non-zero default scale (1: applied, as `--lora`; 0: loaded only, for the requests that name
    it, as llama-server's `--lora-init-without-apply`). The adapter's terms are added to the
    weights' results (llama.cpp's scale * alpha / rank * B (A x)) without merging, per sequence:
    a batch or a GenerationEngine runs sequences of different adapters in one forward, each
    with the numbers it would have alone. Prefix reuse and chat turns reuse only keys and values
    computed with the same adapters. A file that does not fit the model throws a cv::Exception
    naming the problem and changes nothing. */
    CV_WRAP int loadAdapter(const String& path, float scale = 1.f);
    //! Sets an adapter's default scale (0: off unless a request names it).
    CV_WRAP void setAdapterScale(int adapterId, float scale);
    /** @brief Unloads an adapter; refused while a running request uses it. Cached sequences
    computed with it are released. */
    CV_WRAP void unloadAdapter(int adapterId);
    //! The loaded adapters, by increasing id.
    CV_WRAP std::vector<LoRAAdapterInfo> getAdapters() const;

    //! Step API: starts generating after a prompt.
    CV_WRAP void start(const String& prompt, const GenerationConfig& config = GenerationConfig());
    //! Step API: starts generating after a prompt given as token ids (no tokenizer involved).
    CV_WRAP void startWithTokenIds(const std::vector<int>& promptIds,
                                   const GenerationConfig& config = GenerationConfig());
    //! Step API: the next piece of text (possibly empty while a character is incomplete).
    CV_WRAP String next();
    //! Step API: true once generation has stopped (limit, end token, stop string, cancel).
    CV_WRAP bool isDone() const;

    /** @brief Multi-turn chat: adds the user's message to the conversation, formats it with the
    model's chat template (getChatTemplate()) and returns the reply. Earlier turns stay in the KV
    cache and are not processed again. When the tokenizer adds BOS itself, a BOS text at the start
    of the rendered prompt is dropped (as llama.cpp does). */
    CV_WRAP String chat(const String& userMessage, const GenerationConfig& config = GenerationConfig());
    //! Streaming form of chat().
    String chat(const String& userMessage, const GenerationConfig& config,
                const std::function<bool(const String& piece)>& onPiece);
    //! Step API form of chat(): then next() until isDone(); the reply joins the conversation.
    CV_WRAP void startChat(const String& userMessage, const GenerationConfig& config = GenerationConfig());
    //! Sets the system message and clears the conversation.
    CV_WRAP void resetConversation(const String& systemMessage = String());
    //! Formats messages with the chat template, getChatTemplate()->apply(roles, contents, addGenerationPrompt).
    CV_WRAP String applyChatTemplate(const std::vector<String>& roles, const std::vector<String>& contents,
                                     bool addGenerationPrompt = true) const;
    /** @brief Uses a built-in template family ("llama2", "llama3", "chatml", "mistral", "phi3",
    "gemma", "zephyr") instead of the model's own template: for files that carry none. */
    CV_WRAP void setChatTemplate(const String& name);
    //! Uses this template (e.g. ChatTemplate::create(jinja, bos, eos)) instead of the model's own.
    CV_WRAP void setCustomChatTemplate(const Ptr<ChatTemplate>& chatTemplate);
    /** @brief The chat template chat() uses: the model's own Jinja template (GGUF
    `tokenizer.chat_template`, or the ONNX folder's tokenizer_config.json / chat_template.jinja),
    rendered with the tokenizer's BOS and EOS texts, unless setChatTemplate() or setCustomChatTemplate() chose another.
    Throws cv::Exception when the model has none (or it does not compile) and none was chosen. */
    CV_WRAP Ptr<ChatTemplate> getChatTemplate() const;

    //! Token ids of the last prompt (with BOS when the model adds it).
    CV_WRAP std::vector<int> getPromptTokenIds() const;
    //! Token ids generated since the last start (stop tokens excluded).
    CV_WRAP std::vector<int> getGeneratedTokenIds() const;
    /** @brief How many tokens of the last prompt were run through the Net; the rest of the
    prompt (a prefix the KV cache already held, e.g. the earlier turns of a chat) was not
    processed again. */
    CV_WRAP int getLastPrefillTokenCount() const;

    /** @brief Saves the session to a file: the tokens fed so far (the prompts and replies of
    generate(), the step API and chat(), on sequence 0 of the KV cache), their keys and values
    in the cache's storage type, and the chat conversation (its completed turns, as role and
    content; a reply still being generated is not part of it). The file is a KVCache sequence
    file (KVCache::saveSequence()) and is written atomically. Throws when no token was fed yet.
    With images (a model loaded with its mmproj), the session also holds the embeddings of the
    images its tokens and its conversation refer to, each named by a digest of its
    preprocessed pixels: a loaded session's next chat turn reuses the cache's prefix without
    the image being given or encoded again, and another image is never taken for it. Keys and
    values computed with LoRA adapters record them (by a digest of their contents, with their
    scales). */
    CV_WRAP void saveSession(const String& path) const;
    /** @brief Restores a session of saveSession(): the tokens, their keys and values and the
    conversation. A following generate() or chat() whose prompt starts with those tokens only
    processes the rest (getLastPrefillTokenCount()). A file of another model (another
    architecture, shape, parameters or weights; see KVCache::saveSequence()), a truncated or
    corrupted file or one longer than the context: a cv::Exception naming the problem, and the
    model's session is left as it was. Keys and values saved in another storage type are
    converted to the cache's. A session computed with LoRA adapters needs the same adapters
    loaded (any ids; a cv::Exception names a missing one), and its keys and values serve only
    generations with those adapters and scales. Returns the number of tokens restored. */
    CV_WRAP int loadSession(const String& path);

    CV_WRAP Ptr<Tokenizer> getTokenizer() const;
    CV_WRAP Net getNetwork() const;
    /** @brief The sampling settings the model's authors recommend, as the file records them
    (GGUF `general.sampling.*`, genai_config.json's `search`); a default (greedy)
    GenerationConfig where it records none. Start from it to sample as the model card says:
    `config = model.getGenerationDefaults(); config.maxNewTokens = 64;` */
    CV_WRAP GenerationConfig getGenerationDefaults() const;

    struct Impl;

protected:
    Ptr<Impl> impl;
    friend class GenerationEngine;  // GenerationEngine::create(model) runs on the model's decode loop
};

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
