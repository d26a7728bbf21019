// A streaming chatbot on cv::dnn::TextGenerationModel: type a message, watch the reply arrive
// piece by piece. Earlier turns stay in the model's KV cache, so each turn only processes the
// new message. End of input ends the conversation; "/reset" starts a new one. The first line
// says which chat template formats the conversation: the model's own Jinja template, or the
// built-in family --chat-template names (for files without one).
//
//   llm_chatbot [--model=FILE] [--system=TEXT] [--chat-template=NAME] [--temperature=T] [--top-p=P]
//               [--seed=S] [--max-new-tokens=N] [--threads=N]

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"
#include "demo_model_path.hpp"

#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

static std::string describe(const Ptr<ChatTemplate>& chatTemplate)
{
    if (chatTemplate->getName() != "jinja")
        return "built-in \"" + chatTemplate->getName() + "\" (--chat-template)";
    return format("the model's own Jinja template (%zu bytes)", chatTemplate->getSource().size());
}

static const char* keys =
    "{help h usage ? |       | print this help }"
    "{model m        |       | GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf) }"
    "{system         |       | system message }"
    "{chat-template  |       | built-in chat template instead of the model's own: llama2, llama3, chatml, mistral, phi3, gemma, zephyr }"
    "{temperature    | 0     | 0: greedy; otherwise sample at this temperature }"
    "{top-p          | 1     | nucleus sampling threshold, in (0, 1] }"
    "{seed           | 0     | random seed }"
    "{max-new-tokens | 256   | reply length limit in tokens }"
    "{threads        | -1    | threads (-1: OpenCV's default) }"
    "{context        | 0     | tokens the conversation may hold (0: the model's training context) }";

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Streaming chatbot with cv::dnn::TextGenerationModel");
    std::string modelPath = cl.getString("model");
    const std::string system = cl.getString("system");
    const std::string templateName = cl.getString("chat-template");
    GenerationConfig config;
    config.temperature = (float)cl.getReal("temperature", 0);
    config.topP = (float)cl.getReal("top-p", 0, 1, true);
    config.seed = cl.getInt("seed");
    config.maxNewTokens = cl.getInt("max-new-tokens", 0);
    const int threads = cl.getThreads();
    if (modelPath.empty())
        modelPath = demoModelPath();
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel model(modelPath, cl.getInt("context", 0));
        if (!templateName.empty())
            model.setChatTemplate(templateName);
        const std::string templateUsed = describe(model.getChatTemplate());  // throws when there is none
        std::cout << "chat template: " << templateUsed << "\n";
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
