// A streaming chatbot on cv::dnn::TextGenerationModel: type a message, watch the reply arrive
// piece by piece. Earlier turns stay in the model's KV cache, so each turn only processes
// the new message. Ctrl-D ends the conversation; "/reset" starts a new one.
//
//   llm_chatbot --model FILE [--system TEXT] [--template NAME] [--temperature T]
//               [--top-p P] [--seed S] [--max-new-tokens N]

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

static void usage(const std::string& msg)
{
    std::cerr << "llm_chatbot: " << msg << "\n"
              << "usage: llm_chatbot --model FILE [--system TEXT] [--template NAME] [--temperature T]\n"
              << "                   [--top-p P] [--seed S] [--max-new-tokens N]\n";
    std::exit(2);
}

int main(int argc, char** argv)
{
    std::string modelPath, system, templateName;
    GenerationConfig config;
    config.maxNewTokens = 256;
    for (int i = 1; i < argc; i++)
    {
        const std::string arg = argv[i];
        if (i + 1 >= argc)
            usage("missing value for " + arg);
        const std::string value = argv[++i];
        if (arg == "--model") modelPath = value;
        else if (arg == "--system") system = value;
        else if (arg == "--template") templateName = value;
        else if (arg == "--temperature") config.temperature = std::stof(value);
        else if (arg == "--top-p") config.topP = std::stof(value);
        else if (arg == "--seed") config.seed = std::stoi(value);
        else if (arg == "--max-new-tokens") config.maxNewTokens = std::stoi(value);
        else usage("unknown option " + arg);
    }
    if (modelPath.empty())
        usage("--model is required");
    try
    {
        TextGenerationModel model(modelPath);
        if (!templateName.empty())
            model.setChatTemplate(templateName);
        model.resetConversation(system);
        std::string line;
        while (std::cout << "\n> " << std::flush, std::getline(std::cin, line))
        {
            if (line == "/reset")
            {
                model.resetConversation(system);
                continue;
            }
            model.chat(line, config, [](const String& piece) {
                std::cout << piece << std::flush;
                return true;
            });
            std::cout << "\n";
        }
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_chatbot: " << e.what() << std::endl;
        return 1;
    }
}
