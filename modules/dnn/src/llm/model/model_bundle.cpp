// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "model_bundle.hpp"

#include <climits>
#include <cmath>

#include <opencv2/core/utils/filesystem.hpp>

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

// A recommended setting must make sense; a file is untrusted input.
void checkSetting(bool valid, const std::string& file, const std::string& key, double value)
{
    if (!valid)
        CV_Error(Error::StsParseError, format("%s: %s = %g is not a valid sampling setting",
                                              file.c_str(), key.c_str(), value));
}

// llama.cpp's general.sampling.* keys (written by its converter from generation_config.json).
GenerationConfig ggufGenerationDefaults(const GGUFModelFile& file)
{
    GenerationConfig c;
    auto number = [&](const char* key, double& out) {
        const bool has = file.hasMetadata(key);
        if (has)
            out = file.getNumber(key);
        return has;
    };
    double v = 0;
    if (number("general.sampling.temp", v))
    {
        checkSetting(v >= 0 && v <= 100, file.path(), "general.sampling.temp", v);
        c.temperature = (float)v;
    }
    if (number("general.sampling.top_k", v))
    {
        checkSetting(v >= -1 && v <= INT_MAX && v == std::floor(v), file.path(), "general.sampling.top_k", v);
        c.topK = std::max(0, (int)v);  // <= 0: off
    }
    if (number("general.sampling.top_p", v))
    {
        checkSetting(v > 0 && v <= 1, file.path(), "general.sampling.top_p", v);
        c.topP = (float)v;
    }
    if (number("general.sampling.min_p", v))
    {
        checkSetting(v >= 0 && v <= 1, file.path(), "general.sampling.min_p", v);
        c.minP = (float)v;
    }
    if (number("general.sampling.penalty_repeat", v))
    {
        checkSetting(v > 0 && v <= 100, file.path(), "general.sampling.penalty_repeat", v);
        c.repetitionPenalty = (float)v;
    }
    if (number("general.sampling.penalty_last_n", v))
    {
        // llama.cpp: -1 the whole context, 0 no penalty.
        checkSetting(v >= -1 && v <= INT_MAX && v == std::floor(v), file.path(), "general.sampling.penalty_last_n", v);
        if (v == 0)
            c.repetitionPenalty = 1.f;
        else
            c.repetitionWindow = (int)v;
    }
    return c;
}

// ONNX Runtime GenAI's "search" section: greedy unless do_sample.
GenerationConfig genAIGenerationDefaults(const GenAIConfig& config, const std::string& path)
{
    GenerationConfig c;
    if (!config.hasSearch)
        return c;
    const std::string file = path + " (genai_config.json)";
    if (config.doSample)
    {
        c.temperature = 1.f;  // ONNX Runtime GenAI's default temperature
        if (config.temperature)
        {
            checkSetting(*config.temperature >= 0 && *config.temperature <= 100, file, "search.temperature",
                         *config.temperature);
            c.temperature = (float)*config.temperature;
        }
        if (config.topK)
        {
            checkSetting(*config.topK >= 0, file, "search.top_k", *config.topK);
            c.topK = *config.topK;
        }
        if (config.topP)
        {
            checkSetting(*config.topP > 0 && *config.topP <= 1, file, "search.top_p", *config.topP);
            c.topP = (float)*config.topP;
        }
    }
    if (config.repetitionPenalty)
    {
        checkSetting(*config.repetitionPenalty > 0 && *config.repetitionPenalty <= 100, file,
                     "search.repetition_penalty", *config.repetitionPenalty);
        c.repetitionPenalty = (float)*config.repetitionPenalty;
    }
    return c;
}

bool isONNXPath(const std::string& path)
{
    return path.size() >= 5 && toLowerCase(path.substr(path.size() - 5)) == ".onnx";
}

// `net` is used when given (TextGenerationModel(net)); otherwise the file's Net is built.
ModelBundle loadGGUF(const std::string& path, const Net& net, const LoadOptions& options)
{
    ModelBundle b;
    const GGUFModelFile file(path);
    b.tokenizer = Tokenizer::fromGGUF(file);
    if (file.hasMetadata("tokenizer.chat_template"))
        b.chatTemplate = file.getString("tokenizer.chat_template");
    b.generationDefaults = ggufGenerationDefaults(file);
    b.net = net.empty() ? buildNetFromGGUF(file, options) : net;
    b.format = "gguf";
    return b;
}

// An ONNX Runtime GenAI model folder: model.onnx, tokenizer.json (+ tokenizer_config.json
// with the chat template) and genai_config.json (end-of-generation ids, context length); or an
// optimum export's folder, with Hugging Face's config.json instead of genai_config.json.
ModelBundle loadONNX(const std::string& path, const Net& net, const LoadOptions& options)
{
    ModelBundle b;
    const size_t slash = path.find_last_of("/\\");
    const std::string folder = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
    const GenAIConfig config = readGenAIConfig(path);
    if (utils::fs::exists(utils::fs::join(folder, "tokenizer.json")))
    {
        HuggingFaceTokenizer hf = loadHuggingFaceTokenizer(folder);
        b.tokenizer = hf.tokenizer;
        b.chatTemplate = hf.chatTemplate;
    }
    else
    {
        // Ids in, ids out: text needs the tokenizer.json that is missing.
        if (config.vocabSize <= 0)
            CV_Error(Error::StsBadArg, "TextGenerationModel: " + folder + " has no tokenizer.json, and its "
                                       "genai_config.json (or Hugging Face config.json) gives no vocab_size for token ids alone");
        b.tokenizer = Tokenizer::idsOnly(config.vocabSize, "the model folder " + folder + " has no tokenizer.json");
    }
    std::vector<int> eos;
    for (int id : config.eosIds)  // ONNX Runtime GenAI stops at each of these
        if (id >= 0 && id < b.tokenizer->vocabSize())
            eos.push_back(id);
    b.tokenizer->addEndOfGenerationIds(eos);
    b.generationDefaults = genAIGenerationDefaults(config, path);
    if (net.empty())
    {
        const OnnxModelFile file(path);
        if (!isONNXLanguageModel(file))
            CV_Error(Error::StsBadArg, "TextGenerationModel: " + path + " is not a decoder with a KV cache "
                                       "(no attention fed by past key/value inputs)");
        b.net = buildNetFromONNXLanguageModel(file, config, options);
    }
    else
    {
        b.net = net;
    }
    b.format = "onnx";
    return b;
}

ModelBundle load(const std::string& path, const Net& net, const LoadOptions& options)
{
    ModelBundle b = isONNXPath(path) ? loadONNX(path, net, options) : loadGGUF(path, net, options);
    b.sourcePath = path;
    return b;
}

} // namespace

ModelBundle loadModelBundle(const std::string& path, int contextLength)
{
    return load(path, Net(), LoadOptions::fromEnvironment(false, contextLength));
}

ModelBundle loadModelBundle(const std::string& path, const LoadOptions& options)
{
    return load(path, Net(), options);
}

ModelBundle loadModelBundle(const Net& net)
{
    Net n = net;
    Ptr<LLMNetState> state = LLMNetState::of(n);
    if (!state || state->sourcePath().empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: the Net was not made by readNet from a GGUF or ONNX "
                                   "language model (it names no model file)");
    return load(state->sourcePath(), net, LoadOptions::fromEnvironment());
}

}}} // namespace cv::dnn::llm
