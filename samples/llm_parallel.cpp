// Several completions with cv::dnn::TextGenerationModel: N prompts, or N samples of one
// prompt (sample i uses seed S+i). Each completion is printed, then the aggregate speed.
//
//   llm_parallel --model=FILE --prompt="Once upon a time" --n=4 --temperature=0.8
//   llm_parallel --model=FILE --prompts_file=prompts.txt

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
        size_t tokens = 0;
        TickMeter tm;
        for (size_t i = 0; i < prompts.size(); i++)
        {
            config.seed = seed + (int)i;
            tm.start();
            const String completion = model.generate(prompts[i], config);
            tm.stop();
            tokens += model.getGeneratedTokenIds().size();
            std::cout << "[" << i << "] " << prompts[i] << completion << "\n";
        }
        std::cout << format("%zu completions, %zu tokens in %.2f s: %.1f tokens/s\n", prompts.size(), tokens,
                            tm.getTimeSec(), tokens / tm.getTimeSec());
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_parallel: " << e.what() << std::endl;
        return 1;
    }
}
