// Several completions at once with cv::dnn::TextGenerationModel::generateBatch: each prompt
// (one per line of a file, or --prompt given several times) gets its own completion.
//
//   llm_parallel --model FILE (--prompt TEXT)... [--prompts-file FILE] [--max-new-tokens N]
//                [--temperature T] [--seed S]

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

static void usage(const std::string& msg)
{
    std::cerr << "llm_parallel: " << msg << "\n"
              << "usage: llm_parallel --model FILE (--prompt TEXT)... [--prompts-file FILE]\n"
              << "                    [--max-new-tokens N] [--temperature T] [--seed S]\n";
    std::exit(2);
}

int main(int argc, char** argv)
{
    std::string modelPath;
    std::vector<String> prompts;
    GenerationConfig config;
    config.maxNewTokens = 48;
    for (int i = 1; i < argc; i++)
    {
        const std::string arg = argv[i];
        if (i + 1 >= argc)
            usage("missing value for " + arg);
        const std::string value = argv[++i];
        if (arg == "--model") modelPath = value;
        else if (arg == "--prompt") prompts.push_back(value);
        else if (arg == "--prompts-file")
        {
            std::ifstream f(value);
            if (!f)
                usage("cannot read " + value);
            for (std::string line; std::getline(f, line);)
                if (!line.empty())
                    prompts.push_back(line);
        }
        else if (arg == "--max-new-tokens") config.maxNewTokens = std::stoi(value);
        else if (arg == "--temperature") config.temperature = std::stof(value);
        else if (arg == "--seed") config.seed = std::stoi(value);
        else usage("unknown option " + arg);
    }
    if (modelPath.empty() || prompts.empty())
        usage("--model and at least one prompt are required");
    try
    {
        TextGenerationModel model(modelPath);
        TickMeter tm;
        tm.start();
        const std::vector<String> completions = model.generateBatch(prompts, config);
        tm.stop();
        for (size_t i = 0; i < prompts.size(); i++)
            std::cout << "[" << i << "] " << prompts[i] << completions[i] << "\n";
        std::cerr << format("%zu completions in %.2f s\n", prompts.size(), tm.getTimeSec());
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_parallel: " << e.what() << std::endl;
        return 1;
    }
}
