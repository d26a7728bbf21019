// Several completions with cv::dnn::TextGenerationModel::generateBatch (continuous batching:
// up to --parallel sequences decode in one forward, finished ones leave, waiting ones join):
// N prompts, or N samples of one prompt (sample i uses seed S+i; its prompt is prefilled once
// and its pages shared). Each completion is printed, then the aggregate speed; --sequential
// also runs them one by one and prints the speed ratio.
//
//   llm_parallel --model=FILE --prompt="Once upon a time" --n=4 --temperature=0.8
//   llm_parallel --model=FILE --prompts_file=prompts.txt --parallel=8 --sequential

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

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
    "{prompt p       | Once upon a time| the prompt (with --n: sampled n times) }"
    "{prompts_file   |                 | one prompt per line (instead of --prompt) }"
    "{n              | 4               | samples of --prompt }"
    "{temperature    | 0.8             | 0: greedy; otherwise sample at this temperature }"
    "{seed           | 1               | seed of the first sample; sample i uses seed + i }"
    "{max_new_tokens | 48              | completion length limit in tokens }"
    "{parallel       | 16              | most sequences per forward (continuous batching) }"
    "{sequential     |                 | also run the completions one by one and compare speed and tokens }"
    "{threads        | -1              | threads (-1: OpenCV's default) }";

int main(int argc, char** argv)
{
    CommandLineParser parser(argc, argv, keys);
    parser.about("Parallel completions with cv::dnn::TextGenerationModel");
    if (parser.has("help"))
    {
        parser.printMessage();
        return 0;
    }
    std::string modelPath = parser.get<std::string>("model");
    const std::string prompt = parser.get<std::string>("prompt");
    const std::string promptsFile = parser.get<std::string>("prompts_file");
    const int n = parser.get<int>("n");
    const int seed = parser.get<int>("seed");
    const int threads = parser.get<int>("threads");
    const int parallel = parser.get<int>("parallel");
    const bool sequential = parser.has("sequential");
    GenerationConfig config;
    config.temperature = parser.get<float>("temperature");
    config.maxNewTokens = parser.get<int>("max_new_tokens");
    if (!parser.check())
    {
        parser.printErrors();
        return 2;
    }
    if (modelPath.empty())
        modelPath = demoModelPath();
    std::vector<std::string> prompts;
    if (!promptsFile.empty())
    {
        std::ifstream f(promptsFile);
        if (!f)
        {
            std::cerr << "llm_parallel: cannot read " << promptsFile << "\n";
            return 2;
        }
        for (std::string line; std::getline(f, line);)
            if (!line.empty())
                prompts.push_back(line);
    }
    else
        prompts.assign(std::max(n, 1), prompt);
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
