// Text generation from the command line with cv::dnn::TextGenerationModel.
//
//   llm_generate --model FILE (--prompt TEXT | --prompt-ids 1,403,407) [--max-new-tokens N]
//                [--threads N] [--print-token-ids] [--tokenize-only]
//                [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]
//                [--seed S] [--stop TEXT]... [--parallel N]
//
// Greedy unless --temperature > 0. With --print-token-ids, the lines `prompt_ids: ...` and
// `generated_ids: ...` come before the text. --tokenize-only prints `prompt_ids: ...` and
// stops (it works on vocabulary-only GGUF files). --parallel N generates N completions of the
// prompt in one batch (continuous batching; completion i samples with seed S+i, so it equals a
// single run with --seed S+i) and prints `generated_ids[i]: ...` and `text[i]: ...` for each.
// Speed goes to stderr; errors go to stderr with a non-zero exit status.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

namespace {

struct Options
{
    std::string model;
    std::string prompt;
    std::vector<int> promptIds;
    bool hasPromptIds = false;
    int threads = -1;
    bool printIds = false;
    bool tokenizeOnly = false;
    int parallel = 0;
    GenerationConfig config;
};

[[noreturn]] void usageError(const std::string& msg)
{
    std::cerr << "llm_generate: " << msg << "\n"
              << "usage: llm_generate --model FILE (--prompt TEXT | --prompt-ids ID,ID,...)\n"
              << "         [--max-new-tokens N] [--threads N] [--print-token-ids] [--tokenize-only]\n"
              << "         [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
              << "         [--seed S] [--stop TEXT]... [--parallel N]\n";
    std::exit(2);
}

int parseInt(const std::string& s, const std::string& flag)
{
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX)
        usageError("invalid number '" + s + "' for " + flag);
    return (int)v;
}

float parseFloat(const std::string& s, const std::string& flag)
{
    char* end = nullptr;
    errno = 0;
    const float v = std::strtof(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0)
        usageError("invalid number '" + s + "' for " + flag);
    return v;
}

Options parseOptions(int argc, char** argv)
{
    Options o;
    o.config.maxNewTokens = 32;
    for (int i = 1; i < argc; i++)
    {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usageError("missing value for " + arg);
            return argv[++i];
        };
        if (arg == "--model")
            o.model = value();
        else if (arg == "--prompt")
            o.prompt = value();
        else if (arg == "--prompt-ids")
        {
            std::stringstream ss(value());
            std::string item;
            while (std::getline(ss, item, ','))
                o.promptIds.push_back(parseInt(item, arg));
            o.hasPromptIds = true;
        }
        else if (arg == "--max-new-tokens")
            o.config.maxNewTokens = parseInt(value(), arg);
        else if (arg == "--threads")
            o.threads = parseInt(value(), arg);
        else if (arg == "--print-token-ids")
            o.printIds = true;
        else if (arg == "--tokenize-only")
            o.tokenizeOnly = true;
        else if (arg == "--temperature")
            o.config.temperature = parseFloat(value(), arg);
        else if (arg == "--top-k")
            o.config.topK = parseInt(value(), arg);
        else if (arg == "--top-p")
            o.config.topP = parseFloat(value(), arg);
        else if (arg == "--min-p")
            o.config.minP = parseFloat(value(), arg);
        else if (arg == "--repeat-penalty")
            o.config.repetitionPenalty = parseFloat(value(), arg);
        else if (arg == "--seed")
            o.config.seed = parseInt(value(), arg);
        else if (arg == "--stop")
            o.config.stopStrings.push_back(value());
        else if (arg == "--parallel")
        {
            o.parallel = parseInt(value(), arg);
            if (o.parallel <= 0)
                usageError("--parallel must be positive");
        }
        else
            usageError("unknown option " + arg);
    }
    if (o.model.empty())
        usageError("--model is required");
    if (o.hasPromptIds == !o.prompt.empty())
        usageError("give either --prompt or --prompt-ids");
    if (o.hasPromptIds && o.promptIds.empty())
        usageError("--prompt-ids is empty");
    if (o.config.maxNewTokens < 0)
        usageError("--max-new-tokens must not be negative");
    if (o.threads == 0 || o.threads < -1)
        usageError("--threads must be positive");
    return o;
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

        TickMeter load;
        load.start();
        TextGenerationModel model(opt.model);
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
            return 0;
        }

        TickMeter prefill, decode;
        prefill.start();
        if (opt.hasPromptIds)
            model.startWithTokenIds(opt.promptIds, opt.config);
        else
            model.start(opt.prompt, opt.config);
        prefill.stop();
        std::string text;
        decode.start();
        while (!model.isDone())
            text += model.next();
        decode.stop();

        const std::vector<int> generated = model.getGeneratedTokenIds();
        if (opt.printIds)
        {
            printIds("prompt_ids", model.getPromptTokenIds());
            printIds("generated_ids", generated);
        }
        std::cout << text << std::endl;
        std::cerr << format("load %.1f ms; prompt %zu tokens in %.1f ms; %zu tokens generated at %.1f tokens/s\n",
                            load.getTimeMilli(), model.getPromptTokenIds().size(), prefill.getTimeMilli(),
                            generated.size(), generated.empty() ? 0.0 : generated.size() / decode.getTimeSec());
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_generate: " << e.what() << std::endl;
        return 1;
    }
}
