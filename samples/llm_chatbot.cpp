// A streaming chatbot on cv::dnn::TextGenerationModel: type a message, watch the reply arrive
// piece by piece. Earlier turns stay in the model's KV cache, so each turn only processes the
// new message. End of input ends the conversation; "/reset" starts a new one.
//
//   llm_chatbot --model=FILE [--system=TEXT] [--template=NAME] [--temperature=T] ...

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "demo_model_path.hpp"

#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |       | print this help }"
    "{model m        |       | GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf) }"
    "{system         |       | system message }"
    "{template       |       | chat template name when the model has none: llama2, llama3, chatml, mistral, phi3, gemma, zephyr }"
    "{temperature    | 0     | 0: greedy; otherwise sample at this temperature }"
    "{top_p          | 1     | nucleus sampling threshold }"
    "{seed           | 0     | random seed }"
    "{max_new_tokens | 256   | reply length limit in tokens }"
    "{threads        | -1    | threads (-1: OpenCV's default) }";

int main(int argc, char** argv)
{
    CommandLineParser parser(argc, argv, keys);
    parser.about("Streaming chatbot with cv::dnn::TextGenerationModel");
    if (parser.has("help"))
    {
        parser.printMessage();
        return 0;
    }
    std::string modelPath = parser.get<std::string>("model");
    const std::string system = parser.get<std::string>("system");
    const std::string templateName = parser.get<std::string>("template");
    GenerationConfig config;
    config.temperature = parser.get<float>("temperature");
    config.topP = parser.get<float>("top_p");
    config.seed = parser.get<int>("seed");
    config.maxNewTokens = parser.get<int>("max_new_tokens");
    const int threads = parser.get<int>("threads");
    if (!parser.check())
    {
        parser.printErrors();
        return 2;
    }
    if (modelPath.empty())
        modelPath = demoModelPath();
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel model(modelPath);
        if (!templateName.empty())
            model.setChatTemplate(templateName);
        model.resetConversation(system);
        std::string line;
        while (std::cout << "> " << std::flush, std::getline(std::cin, line))
        {
            if (line == "/reset")
            {
                model.resetConversation(system);
                std::cout << "(new conversation)\n";
                continue;
            }
            TickMeter tm;
            tm.start();
            model.chat(line, config, [](const String& piece) {
                std::cout << piece << std::flush;
                return true;
            });
            tm.stop();
            const size_t n = model.getGeneratedTokenIds().size();
            std::cout << "\n  [" << n << " tokens, " << format("%.1f", n / tm.getTimeSec()) << " tokens/s]\n";
        }
        std::cout << "\n";
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_chatbot: " << e.what() << std::endl;
        return 1;
    }
}
