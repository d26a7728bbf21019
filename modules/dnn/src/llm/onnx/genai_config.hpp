// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// genai_config.json, which ONNX Runtime GenAI's model builder writes beside model.onnx: the
// names of the decoder's inputs and outputs, the context length and the special token ids.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_GENAI_CONFIG_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_GENAI_CONFIG_HPP

#include <optional>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

struct GenAIConfig
{
    bool found = false;            //!< false: no genai_config.json beside the model (defaults apply)
    std::string modelType;         //!< "llama", "qwen2", "phi3", ...
    int contextLength = -1;        //!< -1 when not given
    int vocabSize = -1;
    int bosId = -1, padId = -1;
    std::vector<int> eosIds;
    std::string inputIdsName = "input_ids";
    std::string logitsName = "logits";
    // "search": the generation settings the model's exporter recommends (unset when absent).
    bool hasSearch = false;
    bool doSample = false;
    std::optional<double> temperature, topP, repetitionPenalty;
    std::optional<int> topK;
};

/** Reads `<folder of modelPath>/genai_config.json` if it exists, else Hugging Face's config.json
    there (model_type, vocab_size, special ids, max_position_embeddings as the context length;
    `found` stays false). A file that exists but is not valid JSON, or has fields of the wrong
    type, is a cv::Exception naming the file and field. */
GenAIConfig readGenAIConfig(const std::string& modelPath);

}}} // namespace cv::dnn::llm

#endif
