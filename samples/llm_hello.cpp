// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Hello, language model: load a GGUF model (by default the project's demo model) with
// cv::dnn::TextGenerationModel and print a prompt with its greedy completion (32 new tokens).
//
//   llm_hello [--model=FILE] [--prompt=TEXT]

#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"
#include "demo_model_path.hpp"

#include <iostream>

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv,
        "{help h usage ? |                 | print this help }"
        "{model m        |                 | GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf) }"
        "{prompt p       | Once upon a time| the text to complete }",
        "A prompt and its greedy completion with cv::dnn::TextGenerationModel");
    const std::string prompt = cl.getString("prompt");
    try
    {
        cv::dnn::TextGenerationModel model(cl.given("model") ? cl.getString("model") : demoModelPath());
        std::cout << prompt << model.generate(prompt, 32) << std::endl;
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_hello: " << e.what() << std::endl;
        return 1;
    }
}
