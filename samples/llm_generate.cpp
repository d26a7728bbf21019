// Text generation from the command line with cv::dnn::TextGenerationModel.
//
//   llm_generate --model=FILE (--prompt=TEXT | --prompt-ids=1,403,407) [--max-new-tokens=N]
//                [--threads=N] [--context=N] [--print-token-ids] [--tokenize-only]
//                [--temperature=T] [--top-k=K] [--top-p=P] [--min-p=P] [--repeat-penalty=R]
//                [--seed=S] [--stop=TEXT]... [--parallel=N] [--prompt-cache=FILE]
//                [--draft-tokens=N (--lookup-ngram=N | --draft-model=FILE [--draft-p-min=P])]
//                [--mmproj=FILE --image=PATH...]
//                [--grammar-file=F | --json-schema=TEXT|@FILE | --json]
//                [--lora=FILE[:SCALE][,FILE[:SCALE]...]]
//
// Greedy unless --temperature > 0. With --print-token-ids, the lines `prompt_ids: ...` and
// `generated_ids: ...` come before the text. --tokenize-only prints `prompt_ids: ...` and
// stops (it works on vocabulary-only GGUF files). --parallel=N generates N completions of the
// prompt in one batch (continuous batching; completion i samples with seed S+i, so it equals a
// single run with --seed=S+i) and prints `generated_ids[i]: ...` and `text[i]: ...` for each.
// --draft-tokens=N turns on speculative decoding (N tokens drafted per step by prompt lookup or
// a draft model; greedy output is unchanged) and prints `draft_accepted: A/B` (kept / drafted)
// to stderr.
// --prompt-cache=FILE (llama.cpp's --prompt-cache): when FILE holds a session of this model
// (TextGenerationModel::saveSession) whose tokens share a prefix with the prompt, it is loaded
// and only the rest of the prompt is processed; `prompt_cache_reused: N` (the tokens not processed
// again) goes to stderr. After the prompt, FILE is written with it. A FILE that cannot be used
// (another model, corrupted) is reported on stderr and ignored. The output equals a run without it.
// --mmproj=FILE loads llama.cpp's vision encoder and projector for the model; each
// <__media__> in --prompt stands for the next --image (any file imread reads: PNG, JPEG, PPM, ...);
// the answer streams, then `prompt_ids` / `generated_ids` with --print-token-ids
// (image positions show as negative ids).
// --grammar-file (GBNF, llama.cpp's dialect), --json-schema and --json constrain the completion
// (GenerationConfig::grammar, jsonSchema, jsonMode). Without --print-token-ids, standard output
// is the completion alone: `llm_generate ... --json | python3 -m json.tool` works.
// --lora loads LoRA adapters (GGUF, llama.cpp's --lora / --lora-scaled) and applies each with its
// SCALE (1 when left out; 0 loads it without applying it), --parallel completions included.
// Speed goes to stderr; errors go to stderr with a non-zero exit status (2 for the command line).

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"
#include "image_file.hpp"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

namespace {

const char* const keys =
    "{help h usage ?  |      | print this help }"
    "{model m         |      | GGUF file or ONNX model (required) }"
    "{prompt p        |      | the prompt text }"
    "{prompt-ids      |      | the prompt as comma-separated token ids, instead of --prompt }"
    "{max-new-tokens  | 32   | generated tokens at most }"
    "{threads         | -1   | threads (-1: OpenCV's default) }"
    "{context         | 0    | tokens a sequence may hold (0: the model's training context) }"
    "{print-token-ids | false| print the lines prompt_ids: and generated_ids: before the text }"
    "{tokenize-only   | false| print prompt_ids: and stop (works on vocabulary-only GGUF files) }"
    "{temperature     | 0    | 0: greedy; otherwise sample at this temperature }"
    "{top-k           | 0    | keep the k most likely tokens (0: all) }"
    "{top-p           | 1    | nucleus sampling threshold, in (0, 1] (1: off) }"
    "{min-p           | 0    | drop tokens below min-p * p(best), in [0, 1) (0: off) }"
    "{repeat-penalty  | 1    | > 1 discourages recent tokens (1: off) }"
    "{seed            | 0    | random seed for sampling }"
    "{stop            |      | generation ends before this text (repeat the key for several) }"
    "{parallel        | 0    | N completions of the prompt in one batch, seeds S..S+N-1 (0: one, streamed) }"
    "{draft-tokens    | 0    | speculative decoding: tokens drafted per step (0: off) }"
    "{lookup-ngram    | 0    | draft by prompt lookup, matching up to N tokens }"
    "{draft-model     |      | draft with this smaller model of the same vocabulary }"
    "{draft-p-min     | 0.75 | the draft model stops at a token it gives less probability, in [0, 1] }"
    "{prompt-cache    |      | session file: reuse the prompt prefix it holds, then save the prompt to it }"
    "{mmproj          |      | llama.cpp mmproj GGUF (vision encoder + projector) of the model }"
    "{image           |      | image for the prompt's next <__media__> marker (PNG, JPEG, PPM, ...; repeat the key for several) }"
    "{grammar-file    |      | a GBNF grammar file (llama.cpp's dialect) the completion must follow }"
    "{json-schema     |      | a JSON schema (its text, or @FILE) the completion must follow }"
    "{json            | false| the completion is one JSON value }"
    "{lora            |      | LoRA adapters, FILE[:SCALE] (scale 1 when left out), comma-separated or the key repeated }";

struct Options
{
    std::string model;
    std::string prompt;
    std::vector<int> promptIds;
    bool hasPromptIds = false;
    int threads = -1;
    int context = 0;
    bool printIds = false;
    bool tokenizeOnly = false;
    int parallel = 0;
    std::string draftModel;
    std::string promptCache;
    std::string mmproj;
    std::vector<std::string> images;
    std::vector<std::pair<std::string, float>> adapters;  //!< --lora: (file, scale)
    GenerationConfig config;
};

std::string readTextFile(SampleCommandLine& cl, const std::string& key, const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
        cl.fail("--" + key + ": cannot read " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

Options parseOptions(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Text generation with cv::dnn::TextGenerationModel", {"stop", "image", "lora"});
    Options o;
    o.model = cl.getString("model");
    o.prompt = cl.getString("prompt");
    o.hasPromptIds = cl.given("prompt-ids");
    if (o.hasPromptIds)
    {
        std::stringstream ss(cl.getString("prompt-ids"));
        for (std::string item; std::getline(ss, item, ',');)
            o.promptIds.push_back(cl.parseInt("prompt-ids", item, 0));
    }
    o.config.maxNewTokens = cl.getInt("max-new-tokens", 0);
    o.threads = cl.getThreads();
    o.context = cl.getInt("context", 0);
    o.printIds = cl.getFlag("print-token-ids");
    o.tokenizeOnly = cl.getFlag("tokenize-only");
    o.config.temperature = (float)cl.getReal("temperature", 0);
    o.config.topK = cl.getInt("top-k", 0);
    o.config.topP = (float)cl.getReal("top-p", 0, 1, true);
    o.config.minP = (float)cl.getReal("min-p", 0, 1, false, true);
    o.config.repetitionPenalty = (float)cl.getReal("repeat-penalty", 0, INFINITY, true);
    o.config.seed = cl.getInt("seed");
    for (const std::string& s : cl.getAll("stop"))
        o.config.stopStrings.push_back(s);
    o.parallel = cl.getInt("parallel", 0);
    o.config.draftTokens = cl.getInt("draft-tokens", 0);
    o.config.lookupNgram = cl.getInt("lookup-ngram", 0);
    o.draftModel = cl.getString("draft-model");
    o.config.draftMinProbability = (float)cl.getReal("draft-p-min", 0, 1);
    o.mmproj = cl.getString("mmproj");
    for (const std::string& s : cl.getAll("image"))
        o.images.push_back(s);
    if (!o.images.empty() && o.mmproj.empty())
        cl.fail("--image needs --mmproj");

    if (o.config.draftTokens > 0 && o.config.lookupNgram == 0 && o.draftModel.empty())
        cl.fail("--draft-tokens needs --lookup-ngram or --draft-model");
    if ((o.config.lookupNgram > 0 || !o.draftModel.empty()) && o.config.draftTokens == 0)
        cl.fail("--lookup-ngram and --draft-model need --draft-tokens");
    o.promptCache = cl.getString("prompt-cache");
    if (!o.mmproj.empty() && (o.hasPromptIds || o.parallel > 0 || o.tokenizeOnly || !o.promptCache.empty()))
        cl.fail("--mmproj works with --prompt (not --prompt-ids, --parallel, --tokenize-only or --prompt-cache)");
    if (cl.given("grammar-file"))
        o.config.grammar = readTextFile(cl, "grammar-file", cl.getString("grammar-file"));
    if (cl.given("json-schema"))
    {
        const std::string schema = cl.getString("json-schema");
        o.config.jsonSchema = !schema.empty() && schema[0] == '@' ? readTextFile(cl, "json-schema", schema.substr(1)) : schema;
    }
    o.config.jsonMode = cl.getFlag("json");
    if ((int)!o.config.grammar.empty() + (int)!o.config.jsonSchema.empty() + (int)o.config.jsonMode > 1)
        cl.fail("give only one of --grammar-file, --json-schema and --json");
    if (o.model.empty())
        cl.fail("--model is required");
    if (o.hasPromptIds == !o.prompt.empty())
        cl.fail("give either --prompt or --prompt-ids");
    if (o.hasPromptIds && o.promptIds.empty())
        cl.fail("--prompt-ids is empty");
    if (!o.promptCache.empty() && o.parallel > 0)
        cl.fail("--prompt-cache does not go with --parallel");
    o.adapters = cl.getScaledFiles("lora");
    if (!o.adapters.empty() && o.tokenizeOnly)
        cl.fail("--lora does not go with --tokenize-only");
    return o;
}

void loadAdapters(TextGenerationModel& model, const Options& opt)
{
    for (const auto& a : opt.adapters)
        model.loadAdapter(a.first, a.second);
}

void printDraftCounts(const TextGenerationModel& model, const Options& opt)
{
    if (opt.config.draftTokens == 0)
        return;
    const std::vector<int> counts = model.getDraftCounts();
    std::cerr << format("draft_accepted: %d/%d\n", counts[1], counts[0]);
}

void printIds(const char* name, const std::vector<int>& ids)
{
    std::cout << name << ":";
    for (int id : ids)
        std::cout << ' ' << id;
    std::cout << "\n";
}

} // namespace

int main(int argc, char** argv)
{
    const Options opt = parseOptions(argc, argv);
    try
    {
        if (opt.threads > 0)
            setNumThreads(opt.threads);
        if (opt.tokenizeOnly)
        {
            Ptr<Tokenizer> tokenizer = Tokenizer::create(opt.model);
            printIds("prompt_ids", opt.hasPromptIds ? opt.promptIds : tokenizer->encode(opt.prompt));
            return 0;
        }

        if (!opt.mmproj.empty())
        {
            // A vision-language model: the prompt's <__media__> markers stand for the images.
            TextGenerationModel vlm(opt.model, opt.mmproj);
            loadAdapters(vlm, opt);
            std::vector<Mat> images;
            for (const std::string& path : opt.images)
                images.push_back(readImage(path));
            TickMeter tm;
            tm.start();
            vlm.generate(opt.prompt, images, opt.config, [](const String& piece) {
                std::cout << piece << std::flush;
                return true;
            });
            tm.stop();
            std::cout << std::endl;
            if (opt.printIds)
            {
                printIds("prompt_ids", vlm.getPromptTokenIds());
                printIds("generated_ids", vlm.getGeneratedTokenIds());
            }
            std::cout.flush();
            std::cerr << format("%zu images, prompt %zu positions; %zu tokens generated in %.1f ms (image encoding included)\n",
                                images.size(), vlm.getPromptTokenIds().size(), vlm.getGeneratedTokenIds().size(),
                                tm.getTimeMilli());
            return 0;
        }

        TickMeter load;
        load.start();
        TextGenerationModel model(opt.model, opt.context);
        if (!opt.draftModel.empty())
            model.setDraftModel(opt.draftModel);
        loadAdapters(model, opt);
        load.stop();

        if (opt.parallel > 0)
        {
            const std::vector<int> prompt = opt.hasPromptIds ? opt.promptIds : model.getTokenizer()->encode(opt.prompt);
            TickMeter tm;
            tm.start();
            const std::vector<std::vector<int>> generated =
                model.generateBatchTokenIds(std::vector<std::vector<int>>(opt.parallel, prompt), opt.config);
            tm.stop();
            if (opt.printIds)
                printIds("prompt_ids", prompt);
            size_t total = 0;
            for (int i = 0; i < opt.parallel; i++)
            {
                printIds(format("generated_ids[%d]", i).c_str(), generated[i]);
                std::cout << "text[" << i << "]: " << model.getTokenizer()->decode(generated[i]) << "\n";
                total += generated[i].size();
            }
            std::cout.flush();
            std::cerr << format("load %.1f ms; %d completions of %zu prompt tokens: %zu tokens in %.1f ms, %.1f tokens/s\n",
                                load.getTimeMilli(), opt.parallel, prompt.size(), total, tm.getTimeMilli(),
                                total / tm.getTimeSec());
            printDraftCounts(model, opt);
            return 0;
        }

        // The prompt's time includes loading the prompt cache's session.
        TickMeter prefill, decode;
        prefill.start();
        bool sessionLoaded = false;
        std::ifstream cacheFile(opt.promptCache, std::ios::binary);
        if (!opt.promptCache.empty() && cacheFile.good())
        {
            // A file that is not a session (e.g. the model given by mistake) is never overwritten.
            char magic[8] = {0};
            cacheFile.read(magic, sizeof(magic));
            if (cacheFile.gcount() > 0 && std::string(magic, (size_t)cacheFile.gcount()) != std::string("OCVKVSEQ", (size_t)cacheFile.gcount()))
            {
                std::cerr << "llm_generate: --prompt-cache " << opt.promptCache
                          << " exists and is not a session file; it is left alone" << std::endl;
                return 1;
            }
            try
            {
                model.loadSession(opt.promptCache);
                sessionLoaded = true;
            }
            catch (const cv::Exception& e)
            {
                std::cerr << "prompt_cache: " << opt.promptCache << " is not used: " << e.err << "\n";
            }
        }
        if (opt.hasPromptIds)
            model.startWithTokenIds(opt.promptIds, opt.config);
        else
            model.start(opt.prompt, opt.config);
        prefill.stop();
        if (!opt.promptCache.empty())
        {
            // Right after the prompt, the session holds exactly its tokens.
            model.saveSession(opt.promptCache);
            const size_t reused = sessionLoaded ? model.getPromptTokenIds().size() - model.getLastPrefillTokenCount() : 0;
            std::cerr << "prompt_cache_reused: " << reused << "\n";
        }
        std::string text;
        decode.start();
        while (!model.isDone())
            text += model.next();
        decode.stop();

        const std::vector<int> generated = model.getGeneratedTokenIds();
        // A model without a tokenizer (an ONNX folder without tokenizer.json) gives no text: ids out.
        if (opt.printIds || (opt.hasPromptIds && text.empty() && !generated.empty()))
        {
            printIds("prompt_ids", model.getPromptTokenIds());
            printIds("generated_ids", generated);
        }
        std::cout << text << std::endl;
        std::cerr << format("load %.1f ms; prompt %zu tokens in %.1f ms; %zu tokens generated at %.1f tokens/s\n",
                            load.getTimeMilli(), model.getPromptTokenIds().size(), prefill.getTimeMilli(),
                            generated.size(), generated.empty() ? 0.0 : generated.size() / decode.getTimeSec());
        printDraftCounts(model, opt);
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_generate: " << e.what() << std::endl;
        return 1;
    }
}
