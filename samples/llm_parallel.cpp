// Requests arriving over time, served by cv::dnn::GenerationEngine: one decode loop on a thread
// of its own runs every admitted request in one forward (continuous batching), and a prompt
// that starts with whole KV pages another request holds shares them (prefix reuse). Request i
// uses prompt i (cycling through --prompt / --prompts-file) after --shared-prefix, with seed
// S + i; requests are submitted --arrival-ms apart. Each completion is printed with its id as
// it ends, then a summary line. --compare-alone then runs every request alone with the
// model's own generate path and says whether the token ids are the same (they are with greedy
// settings, and with sampling too: the seeds are the same).
//
// LoRA adapters: --lora=FILE[:SCALE],... loads adapters 0, 1, ... with those default scales (1
// when left out); --request-lora=SET;SET;... gives request i the adapter set i mod the count:
// `base` (no adapter), `default` (the adapters' default scales) or a comma list K[:SCALE] of
// adapter numbers (scale 1 when left out), the others off for that request (llama-server's
// per-request `lora`). Requests of different sets run in the same batch.
//
//   llm_parallel --requests=8 --arrival-ms=50 --shared-prefix="Once upon a time, in a small town, "
//   llm_parallel --model=FILE --prompts-file=prompts.txt --parallel=8 --compare-alone --print-token-ids
//   llm_parallel --model=FILE --lora=a.gguf,b.gguf:0.5 --request-lora="base;0;0:0.5,1;default" --compare-alone

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/generation_engine.hpp>

#include "command_line.hpp"
#include "demo_model_path.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |                 | print this help }"
    "{model m        |                 | model file (default: the project's demo model, models/demo/demo-stories.gguf) }"
    "{prompt p       |                 | the prompt of every request (default: four stories' beginnings, in turn) }"
    "{prompts-file   |                 | one prompt per line, used in turn (instead of --prompt) }"
    "{shared-prefix  | Once upon a time, in a small town by the sea, | text before every prompt, joined with a space (shared in the KV cache) }"
    "{requests n     | 8               | requests to submit }"
    "{arrival-ms     | 50              | milliseconds between two submissions }"
    "{temperature    | 0               | 0: greedy; otherwise sample at this temperature }"
    "{seed           | 1               | seed of the first request; request i uses seed + i }"
    "{max-new-tokens | 48              | completion length limit in tokens }"
    "{parallel       | 16              | most requests generating at once }"
    "{print-token-ids| false           | print each completion's token ids }"
    "{compare-alone  | false           | run every request alone afterwards and compare the token ids }"
    "{threads        | -1              | threads (-1: OpenCV's default) }"
    "{lora           |                 | LoRA adapters 0, 1, ...: FILE[:SCALE] (default scale, 1 when left out), comma-separated or the key repeated }"
    "{request-lora   |                 | adapter sets by request, SET;SET;... in turn: base, default, or K[:SCALE],... (adapter numbers) }";

namespace {

struct AdapterSet
{
    std::string text;         //!< as written, for the output
    bool useDefaults = true;  //!< `default`: GenerationConfig names no adapter
    std::vector<int> numbers; //!< --lora's adapter numbers (the rest off)
    std::vector<float> scales;
};

// --request-lora's sets; `adapters` is the number of --lora files.
std::vector<AdapterSet> parseAdapterSets(const SampleCommandLine& cl, int adapters)
{
    std::vector<AdapterSet> sets;
    if (!cl.given("request-lora"))
        return sets;
    std::stringstream all(cl.getString("request-lora"));
    for (std::string text; std::getline(all, text, ';');)
    {
        AdapterSet set;
        set.text = text;
        if (text == "base")
            set.useDefaults = false;
        else if (text != "default")
        {
            set.useDefaults = false;
            std::stringstream items(text);
            for (std::string item; std::getline(items, item, ',');)
            {
                const size_t colon = item.find(':');
                const int k = cl.parseInt("request-lora", item.substr(0, colon), 0, adapters - 1);
                float scale = 1.f;
                if (colon != std::string::npos)
                {
                    const std::string v = item.substr(colon + 1);
                    char* end = nullptr;
                    scale = std::strtof(v.c_str(), &end);
                    if (v.empty() || *end != '\0' || !std::isfinite(scale))
                        cl.fail("--request-lora: invalid scale '" + v + "' in '" + text + "'");
                }
                if (std::find(set.numbers.begin(), set.numbers.end(), k) != set.numbers.end())
                    cl.fail("--request-lora: adapter " + std::to_string(k) + " is given twice in '" + text + "'");
                set.numbers.push_back(k);
                set.scales.push_back(scale);
            }
        }
        sets.push_back(set);
    }
    if (sets.empty())
        cl.fail("--request-lora is empty");
    return sets;
}

} // namespace

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Requests over time with cv::dnn::GenerationEngine", {"lora"});
    std::string modelPath = cl.getString("model");
    const std::string promptsFile = cl.getString("prompts-file");
    const std::string prefix = cl.getString("shared-prefix");
    const int requests = cl.getInt("requests", 1, 100000);
    const int arrivalMs = cl.getInt("arrival-ms", 0, 3600000);
    const int seed = cl.getInt("seed");
    const int threads = cl.getThreads();
    const int parallel = cl.getInt("parallel", 1);
    const bool printIds = cl.getFlag("print-token-ids");
    const bool compareAlone = cl.getFlag("compare-alone");
    GenerationConfig config;
    config.temperature = (float)cl.getReal("temperature", 0);
    config.maxNewTokens = cl.getInt("max-new-tokens", 0);
    if (cl.given("prompt") && cl.given("prompts-file"))
        cl.fail("give either --prompt or --prompts-file");
    const std::vector<std::pair<std::string, float>> adapterFiles = cl.getScaledFiles("lora");
    if (cl.given("request-lora") && adapterFiles.empty())
        cl.fail("--request-lora needs --lora");
    const std::vector<AdapterSet> adapterSets = parseAdapterSets(cl, (int)adapterFiles.size());
    if (modelPath.empty())
        modelPath = demoModelPath();
    std::vector<std::string> prompts;
    if (!promptsFile.empty())
    {
        std::ifstream f(promptsFile);
        if (!f)
            cl.fail("cannot read --prompts-file=" + promptsFile);
        for (std::string line; std::getline(f, line);)
            if (!line.empty())
                prompts.push_back(line);
        if (prompts.empty())
            cl.fail("--prompts-file=" + promptsFile + " holds no prompt");
    }
    else if (cl.given("prompt"))
        prompts.push_back(cl.getString("prompt"));
    else
        prompts = {"there was a little girl named Lily.", "a big dog found a red ball.",
                   "an old fisherman lived in a blue house.", "a cat and a bird were best friends."};
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel model(modelPath);
        std::vector<int> adapterIds;
        for (const auto& a : adapterFiles)
            adapterIds.push_back(model.loadAdapter(a.first, a.second));
        Ptr<GenerationEngine> engine = GenerationEngine::create(model);
        engine->setMaxRunningRequests(parallel);
        Ptr<Tokenizer> tokenizer = model.getTokenizer();

        std::mutex printing;
        std::vector<std::string> texts(requests);
        std::vector<GenerationRequest> submitted(requests);
        std::vector<GenerationResult> results(requests);
        std::thread loop([&] { engine->run(); });
        TickMeter wall;
        wall.start();
        std::vector<int> ids;
        for (int i = 0; i < requests; i++)
        {
            if (i > 0 && arrivalMs > 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(arrivalMs));
            GenerationRequest& r = submitted[i];
            texts[i] = prefix.empty() ? prompts[i % prompts.size()] : prefix + " " + prompts[i % prompts.size()];
            r.promptTokenIds = tokenizer->encode(texts[i]);
            r.config = config;
            r.config.seed = seed + i;
            std::string lora;
            if (!adapterSets.empty())
            {
                const AdapterSet& set = adapterSets[i % adapterSets.size()];
                lora = "; lora " + set.text;
                if (!set.useDefaults)
                {
                    // Every adapter named, the unlisted ones with scale 0: `base` too is a set.
                    r.config.adapterIds = adapterIds;
                    r.config.adapterScales.assign(adapterIds.size(), 0.f);
                    for (size_t k = 0; k < set.numbers.size(); k++)
                        r.config.adapterScales[set.numbers[k]] = set.scales[k];
                }
            }
            r.onFinish = [&, i, lora](const GenerationResult& result) {
                results[i] = result;
                std::lock_guard<std::mutex> lock(printing);
                std::cout << format("[%d] (%s; prompt %d tokens, %d cached%s) ", result.requestId,
                                    result.finishReason.c_str(), result.promptTokens, result.cachedPromptTokens,
                                    lora.c_str())
                          << texts[i] << "|" << result.text << "\n";
                if (!result.error.empty())
                    std::cout << "    error: " << result.error << "\n";
                if (printIds)
                {
                    std::cout << "    ids:";
                    for (int t : result.tokenIds)
                        std::cout << " " << t;
                    std::cout << "\n";
                }
            };
            ids.push_back(engine->submit(r));
        }
        while (engine->getStats().finishedRequests < requests)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        wall.stop();
        engine->stop();
        loop.join();

        const GenerationEngineStats s = engine->getStats();
        std::cout << format("requests: %d, cached_prompt_tokens: %.0f, prefill_tok_s: %.1f, decode_tok_s: %.1f\n",
                            requests, s.cachedPromptTokens, s.prefillTokensPerSecond, s.decodeTokensPerSecond);
        std::cout << format("prompt tokens: %.0f (%.0f run), generated: %.0f, cache hits: %.0f, wall: %.2f s\n",
                            s.promptTokens, s.prefilledTokens, s.generatedTokens, s.cacheHits, wall.getTimeSec());
        bool failed = false;
        for (const GenerationResult& r : results)
            failed = failed || r.finishReason == "error";
        if (compareAlone)
        {
            int same = 0;
            for (int i = 0; i < requests; i++)
            {
                model.startWithTokenIds(submitted[i].promptTokenIds, submitted[i].config);
                while (!model.isDone())
                    model.next();
                const bool equal = model.getGeneratedTokenIds() == results[i].tokenIds;
                same += equal;
                if (!equal)
                    std::cout << format("[%d] differs from its lone run\n", ids[i]);
            }
            std::cout << format("ids equal to lone runs: %d/%d\n", same, requests);
            failed = failed || same != requests;
        }
        return failed ? 1 : 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_parallel: " << e.what() << std::endl;
        return 1;
    }
}
