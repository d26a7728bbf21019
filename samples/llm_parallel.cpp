// Several completions with cv::dnn::TextGenerationModel::generateBatch (continuous batching:
// up to --parallel=N sequences decode in one forward, finished ones leave, waiting ones join):
// N prompts, or N samples of one prompt (sample i uses seed S+i; its prompt is prefilled once
// and its pages shared). Each completion is printed, then the aggregate speed; --sequential
// also runs them one by one and prints the speed ratio.
//
//   llm_parallel --model=FILE --prompt="Once upon a time" --n=4 --temperature=0.8
//   llm_parallel --model=FILE --prompts-file=prompts.txt --parallel=8 --sequential

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"
#include "demo_model_path.hpp"

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |                 | print this help }"
    "{model m        |                 | GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf) }"
    "{prompt p       | Once upon a time| the prompt (sampled --n times) }"
    "{prompts-file   |                 | one prompt per line (instead of --prompt) }"
    "{n              | 4               | samples of --prompt }"
    "{temperature    | 0.8             | 0: greedy; otherwise sample at this temperature }"
    "{seed           | 1               | seed of the first sample; sample i uses seed + i }"
    "{max-new-tokens | 48              | completion length limit in tokens }"
    "{parallel       | 16              | most sequences per forward (continuous batching) }"
    "{sequential     | false           | also run the completions one by one and compare speed and tokens }"
    "{threads        | -1              | threads (-1: OpenCV's default) }";

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Parallel completions with cv::dnn::TextGenerationModel");
    std::string modelPath = cl.getString("model");
    const std::string prompt = cl.getString("prompt");
    const std::string promptsFile = cl.getString("prompts-file");
    const int n = cl.getInt("n", 1, 4096);
    const int seed = cl.getInt("seed");
    const int threads = cl.getThreads();
    const int parallel = cl.getInt("parallel", 1);
    const bool sequential = cl.getFlag("sequential");
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
    else
        prompts.assign(n, prompt);
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel model(modelPath);
        model.setMaxParallelSequences(parallel);
        Ptr<Tokenizer> tokenizer = model.getTokenizer();
        std::vector<std::vector<int>> promptIds;
        for (const std::string& p : prompts)
            promptIds.push_back(tokenizer->encode(p));
        config.seed = seed;

        // All completions in one continuous batch.
        TickMeter batchTime;
        batchTime.start();
        const std::vector<std::vector<int>> generated = model.generateBatchTokenIds(promptIds, config);
        batchTime.stop();
        size_t tokens = 0;
        for (size_t i = 0; i < prompts.size(); i++)
        {
            tokens += generated[i].size();
            std::cout << "[" << i << "] " << prompts[i] << tokenizer->decode(generated[i]) << "\n";
        }
        std::cout << format("batched: %zu completions, %zu tokens in %.2f s: %.1f tokens/s (up to %d sequences per forward)\n",
                            prompts.size(), tokens, batchTime.getTimeSec(), tokens / batchTime.getTimeSec(), parallel);

        if (sequential)
        {
            // The same completions one after another: the same tokens, for the speed ratio.
            TickMeter oneByOne;
            bool same = true;
            for (size_t i = 0; i < prompts.size(); i++)
            {
                GenerationConfig single = config;
                single.seed = seed + (int)i;
                oneByOne.start();
                model.startWithTokenIds(promptIds[i], single);
                while (!model.isDone())
                    model.next();
                oneByOne.stop();
                same = same && model.getGeneratedTokenIds() == generated[i];
            }
            std::cout << format("one by one: %.2f s: %.1f tokens/s; batched/one-by-one speed %.2fx; same tokens: %s\n",
                                oneByOne.getTimeSec(), tokens / oneByOne.getTimeSec(),
                                oneByOne.getTimeSec() / batchTime.getTimeSec(), same ? "yes" : "NO");
            if (!same)
                return 1;
        }
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_parallel: " << e.what() << std::endl;
        return 1;
    }
}
