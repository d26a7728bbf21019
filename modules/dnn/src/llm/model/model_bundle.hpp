// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Loading a language model for generation, apart from generating: one place turns a model
// file (GGUF, or an ONNX Runtime GenAI folder's model.onnx) or a Net read from one into
// everything TextGenerationModel needs.

#ifndef OPENCV_DNN_SRC_LLM_MODEL_MODEL_BUNDLE_HPP
#define OPENCV_DNN_SRC_LLM_MODEL_MODEL_BUNDLE_HPP

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "../net/load_options.hpp"

#include <memory>
#include <string>

namespace cv {
namespace dnn {
namespace llm {

class Tokenizer;

struct ModelBundle
{
    Net net;                               //!< a language model's Net (opencv2/dnn/llm.hpp)
    std::shared_ptr<Tokenizer> tokenizer;  //!< with the model's end-of-generation ids
    std::string chatTemplate;              //!< the model's Jinja chat template ("" when it has none)
    /** The sampling settings the model's authors recommend: GGUF general.sampling.* keys
        (llama.cpp's converter), genai_config.json's "search"; GenerationConfig() (greedy) where
        the file records none. */
    GenerationConfig generationDefaults;
    std::string sourcePath;                //!< the model file
    std::string format;                    //!< "gguf" or "onnx"
};

/** Reads a model file: a .gguf file (one parse serves the Net, the tokenizer and the chat
    template), or an ONNX decoder whose folder holds tokenizer.json (and tokenizer_config.json,
    genai_config.json, read once). */
ModelBundle loadModelBundle(const std::string& path, int contextLength = 0);
//! loadModelBundle() with the Net built as `options` say.
ModelBundle loadModelBundle(const std::string& path, const LoadOptions& options);

/** The bundle of a Net that readNet() made from a language model: the tokenizer and template
    come from the file the Net was read from. */
ModelBundle loadModelBundle(const Net& net);

}}} // namespace cv::dnn::llm

#endif
