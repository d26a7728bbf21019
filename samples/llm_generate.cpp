// Greedy text generation with a GGUF model loaded by cv::dnn::readNet.
//
//   llm_generate --model FILE --prompt-ids 1,403,407 [--max-new-tokens N] [--threads N]
//                [--print-token-ids]
//
// Prints the generated text (decoded with the model's vocabulary) and, with
// --print-token-ids, the lines `prompt_ids: ...` and `generated_ids: ...`. Speed goes to
// stderr. Text prompts (--prompt) need the tokenizer, which comes with TextGenerationModel.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>

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
    int maxNewTokens = 32;
    int threads = -1;
    bool printIds = false;
};

[[noreturn]] void usageError(const std::string& msg)
{
    std::cerr << "llm_generate: " << msg << "\n"
              << "usage: llm_generate --model FILE --prompt-ids ID,ID,... [--max-new-tokens N]\n"
              << "                    [--threads N] [--print-token-ids]\n";
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

Options parseOptions(int argc, char** argv)
{
    Options o;
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
            o.maxNewTokens = parseInt(value(), arg);
        else if (arg == "--threads")
            o.threads = parseInt(value(), arg);
        else if (arg == "--print-token-ids")
            o.printIds = true;
        else
            usageError("unknown option " + arg);
    }
    if (o.model.empty())
        usageError("--model is required");
    if (!o.hasPromptIds)
        usageError(o.prompt.empty() ? "--prompt-ids is required"
                                    : "--prompt needs the tokenizer, which is not available yet; use --prompt-ids");
    if (o.promptIds.empty())
        usageError("--prompt-ids is empty");
    if (o.maxNewTokens < 0)
        usageError("--max-new-tokens must not be negative");
    if (o.threads == 0 || o.threads < -1)
        usageError("--threads must be positive");
    return o;
}

// SentencePiece-style display of a token: "▁" is a space, <0xXX> a byte.
std::string tokenText(const std::vector<String>& vocab, int id)
{
    if (id < 0 || id >= (int)vocab.size())
        return "";
    const std::string& piece = vocab[id];
    if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>')
        return std::string(1, (char)std::strtol(piece.substr(3, 2).c_str(), nullptr, 16));
    std::string out;
    for (size_t i = 0; i < piece.size(); i++)
    {
        if (piece.compare(i, 3, "\xE2\x96\x81") == 0)
        {
            out += ' ';
            i += 2;
        }
        else
            out += piece[i];
    }
    return out;
}

int argmax(const Mat& logits)
{
    Point maxLoc;
    minMaxLoc(logits.reshape(1, 1), nullptr, nullptr, nullptr, &maxLoc);
    return maxLoc.x;
}

Mat idsToMat(const std::vector<int>& ids)
{
    Mat m(1, (int)ids.size(), CV_32F);
    for (size_t i = 0; i < ids.size(); i++)
        m.at<float>((int)i) = (float)ids[i];
    return m;
}

} // namespace

int main(int argc, char** argv)
{
    const Options opt = parseOptions(argc, argv);
    try
    {
        if (opt.threads > 0)
            setNumThreads(opt.threads);
        Ptr<GGUFFile> file = GGUFFile::open(opt.model);
        std::vector<String> vocab;
        if (file->hasMetadata("tokenizer.ggml.tokens"))
            vocab = file->getStringArray("tokenizer.ggml.tokens");
        const int eos = file->hasMetadata("tokenizer.ggml.eos_token_id")
                            ? (int)file->getNumber("tokenizer.ggml.eos_token_id") : -1;

        TickMeter loadTime;
        loadTime.start();
        Net net = readNet(opt.model);
        loadTime.stop();

        TickMeter prefill, decode;
        std::vector<int> generated;
        Mat logits;
        for (int step = 0; step < opt.maxNewTokens; step++)
        {
            TickMeter& tm = step == 0 ? prefill : decode;
            tm.start();
            net.setInput(idsToMat(step == 0 ? opt.promptIds : std::vector<int>{generated.back()}));
            logits = net.forward();
            tm.stop();
            const int next = argmax(logits);
            generated.push_back(next);
            if (next == eos)
                break;
        }

        if (opt.printIds)
        {
            std::cout << "prompt_ids:";
            for (int id : opt.promptIds)
                std::cout << ' ' << id;
            std::cout << "\ngenerated_ids:";
            for (int id : generated)
                std::cout << ' ' << id;
            std::cout << "\n";
        }
        std::string text;
        for (int id : generated)
            if (id != eos)
                text += tokenText(vocab, id);
        std::cout << text << std::endl;

        std::cerr << format("load %.1f ms; prompt %zu tokens in %.1f ms; %d more tokens at %.1f tokens/s\n",
                            loadTime.getTimeMilli(), opt.promptIds.size(), prefill.getTimeMilli(),
                            (int)decode.getCounter(),
                            decode.getCounter() ? decode.getCounter() / decode.getTimeSec() : 0.0);
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_generate: " << e.what() << std::endl;
        return 1;
    }
}
