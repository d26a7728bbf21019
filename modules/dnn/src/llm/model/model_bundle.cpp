// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "model_bundle.hpp"

#include "../gguf/gguf_net_builder.hpp"
#include "../net/llm_net_state.hpp"
#include "../onnx/genai_config.hpp"
#include "../onnx/onnx_llm_importer.hpp"
#include "../onnx/onnx_model_file.hpp"
#include "../tokenizer/hf_tokenizer.hpp"
#include "../tokenizer/tokenizer.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

bool isONNXPath(const std::string& path)
{
    return path.size() >= 5 && toLowerCase(path.substr(path.size() - 5)) == ".onnx";
}

// `net` is used when given (TextGenerationModel(net)); otherwise the file's Net is built.
ModelBundle loadGGUF(const std::string& path, const Net& net)
{
    ModelBundle b;
    const GGUFModelFile file(path);
    b.tokenizer = Tokenizer::fromGGUF(file);
    if (file.hasMetadata("tokenizer.chat_template"))
        b.chatTemplate = file.getString("tokenizer.chat_template");
    b.net = net.empty() ? buildNetFromGGUF(file, LoadOptions::fromEnvironment()) : net;
    b.format = "gguf";
    return b;
}

// An ONNX Runtime GenAI model folder: model.onnx, tokenizer.json (+ tokenizer_config.json
// with the chat template) and genai_config.json (end-of-generation ids, context length).
ModelBundle loadONNX(const std::string& path, const Net& net)
{
    ModelBundle b;
    const size_t slash = path.find_last_of("/\\");
    const std::string folder = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
    HuggingFaceTokenizer hf = loadHuggingFaceTokenizer(folder);
    b.tokenizer = hf.tokenizer;
    b.chatTemplate = hf.chatTemplate;
    const GenAIConfig config = readGenAIConfig(path);
    std::vector<int> eos;
    for (int id : config.eosIds)  // ONNX Runtime GenAI stops at each of these
        if (id >= 0 && id < b.tokenizer->vocabSize())
            eos.push_back(id);
    b.tokenizer->addEndOfGenerationIds(eos);
    if (net.empty())
    {
        const OnnxModelFile file(path);
        if (!isONNXLanguageModel(file))
            CV_Error(Error::StsBadArg, "TextGenerationModel: " + path + " is not a decoder with a KV cache "
                                       "(no attention operator fed by past key/value inputs)");
        b.net = buildNetFromONNXLanguageModel(file, config, LoadOptions::fromEnvironment());
    }
    else
    {
        b.net = net;
    }
    b.format = "onnx";
    return b;
}

ModelBundle load(const std::string& path, const Net& net)
{
    ModelBundle b = isONNXPath(path) ? loadONNX(path, net) : loadGGUF(path, net);
    b.sourcePath = path;
    return b;
}

} // namespace

ModelBundle loadModelBundle(const std::string& path)
{
    return load(path, Net());
}

ModelBundle loadModelBundle(const Net& net)
{
    Net n = net;
    Ptr<LLMNetState> state = LLMNetState::of(n);
    if (!state || state->sourcePath().empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: the Net was not made by readNet from a GGUF or ONNX "
                                   "language model (it names no model file)");
    return load(state->sourcePath(), net);
}

}}} // namespace cv::dnn::llm
