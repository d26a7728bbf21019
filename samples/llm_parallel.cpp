// Requests arriving over time, served by cv::dnn::GenerationEngine: one decode loop on a thread
// of its own runs every admitted request in one forward (continuous batching), and a prompt
// that starts with whole KV pages another request holds shares them (prefix reuse). Request i
// uses prompt i (cycling through --prompt / --prompts-file) after --shared-prefix, with seed
// S + i; requests are submitted --arrival-ms apart. Each completion is printed with its id as
// it ends, then a summary line. --compare-alone then runs every request alone with the
// model's own generate path and says whether the token ids are the same (they are with greedy
// settings, and with sampling too: the seeds are the same).
//
//   llm_parallel --requests=8 --arrival-ms=50 --shared-prefix="Once upon a time, in a small town, "
//   llm_parallel --model=FILE --prompts-file=prompts.txt --parallel=8 --compare-alone --print-token-ids

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/generation_engine.hpp>

#include "command_line.hpp"
#include "demo_model_path.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
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
    "{threads        | -1              | threads (-1: OpenCV's default) }";

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Requests over time with cv::dnn::GenerationEngine");
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
            r.onFinish = [&, i](const GenerationResult& result) {
                results[i] = result;
                std::lock_guard<std::mutex> lock(printing);
                std::cout << format("[%d] (%s; prompt %d tokens, %d cached) ", result.requestId,
                                    result.finishReason.c_str(), result.promptTokens, result.cachedPromptTokens)
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
