// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Chat about an image with a vision-language model (a GGUF language model and its llama.cpp
// mmproj): the first message carries the image, the answers stream, later lines continue the
// conversation (the image stays in the KV cache).
//
//   llm_vision_chat --model=FILE --mmproj=FILE --image=PATH [--prompt=TEXT] [--max-new-tokens=N]
//                   [--chat-template=NAME] [--threads=N]
//
// --prompt is the first question (default "Describe this image."); further questions are read
// from stdin, one per line, until EOF. The image is read with cv::imread (PNG, JPEG, PPM, ...);
// the prompt gets llama.cpp's <__media__> marker in front of the
// first question unless it has one.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"
#include "image_file.hpp"

#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

namespace {

const char* const keys =
    "{help h usage ?  |      | print this help }"
    "{model m         |      | GGUF language model (required) }"
    "{mmproj          |      | its llama.cpp mmproj GGUF (required) }"
    "{image           |      | the image: PNG, JPEG, PPM, ... (required) }"
    "{prompt p        | Describe this image. | the first question }"
    "{max-new-tokens  | 128  | tokens per answer at most }"
    "{chat-template   |      | a built-in template name (e.g. chatml) instead of the model's }"
    "{threads         | -1   | threads (-1: OpenCV's default) }";

} // namespace

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Chat about an image with cv::dnn::TextGenerationModel");
    const std::string model = cl.getString("model"), mmproj = cl.getString("mmproj"), image = cl.getString("image");
    if (model.empty() || mmproj.empty() || image.empty())
        cl.fail("--model, --mmproj and --image are required");
    GenerationConfig config;
    config.maxNewTokens = cl.getInt("max-new-tokens", 1);
    const std::string chatTemplate = cl.getString("chat-template");
    const int threads = cl.getThreads();
    std::string question = cl.getString("prompt");
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel vlm(model, mmproj);
        if (!chatTemplate.empty())
            vlm.setChatTemplate(chatTemplate);
        const Mat picture = readImage(image);
        if (question.find("<__media__>") == std::string::npos)
            question = "<__media__>" + question;
        auto stream = [](const String& piece) {
            std::cout << piece << std::flush;
            return true;
        };
        std::cout << "> " << question << "\n";
        vlm.chat(question, std::vector<Mat>{picture}, config, stream);
        std::cout << std::endl;
        for (std::string line; std::getline(std::cin, line);)
        {
            if (line.empty())
                continue;
            std::cout << "> " << line << "\n";
            vlm.chat(line, config, stream);
            std::cout << std::endl;
        }
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_vision_chat: " << e.what() << std::endl;
        return 1;
    }
}
