// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "genai_config.hpp"

#include "../common/json_document.hpp"

#include <climits>
#include <cmath>
#include <fstream>

namespace cv {
namespace dnn {
namespace llm {

namespace {

std::string folderOf(const std::string& path)
{
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Reads integers and the fields shared by genai_config.json's "model" object and Hugging Face's
// config.json, naming the file and field in errors.
struct ConfigReader
{
    std::string context, field;

    // json's get<int>() casts any number: a float outside int's range is undefined behaviour
    // and a large integer wraps (fuzz_onnx_llm). Integral values in int's range only.
    int asInt(const nlohmann::json& v) const
    {
        if (v.is_number_unsigned() && v.get<uint64_t>() <= (uint64_t)INT_MAX)
            return (int)v.get<uint64_t>();
        if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX)
            return (int)v.get<int64_t>();
        if (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()) && v.get<double>() >= INT_MIN &&
            v.get<double>() <= INT_MAX)
            return (int)v.get<double>();
        if (!v.is_number())
            return v.get<int>();  // throws json's type_error, which names the type
        CV_Error(Error::StsParseError, format("%s: field '%s': %s is not an integer in int's range",
                                              context.c_str(), field.c_str(), v.dump().c_str()));
    }

    void readInt(const nlohmann::json& obj, const char* key, int& out)
    {
        field = key;
        if (obj.contains(key) && !obj.at(key).is_null())
            out = asInt(obj.at(key));
    }

    void readNumber(const nlohmann::json& obj, const char* key, std::optional<double>& out)
    {
        field = std::string("search.") + key;
        if (obj.contains(key) && !obj.at(key).is_null())
            out = obj.at(key).get<double>();
    }

    // vocab_size, bos / pad / eos token ids (eos one id or a list) and the model type under `typeKey`.
    void readModel(const nlohmann::json& model, const char* typeKey, GenAIConfig& config)
    {
        field = typeKey;
        if (model.contains(typeKey))
            config.modelType = model.at(typeKey).get<std::string>();
        readInt(model, "vocab_size", config.vocabSize);
        readInt(model, "bos_token_id", config.bosId);
        readInt(model, "pad_token_id", config.padId);
        field = "eos_token_id";
        if (model.contains("eos_token_id"))
        {
            const nlohmann::json& eos = model.at("eos_token_id");
            if (eos.is_array())
                for (const nlohmann::json& id : eos)
                    config.eosIds.push_back(asInt(id));
            else if (!eos.is_null())
                config.eosIds.push_back(asInt(eos));
        }
    }
};

// Hugging Face's config.json (optimum's exports have it instead of genai_config.json): the
// model type, vocabulary size, special ids and the trained context length.
GenAIConfig readHuggingFaceConfig(const std::string& path)
{
    GenAIConfig config;
    const JsonDocument document(path, 16 << 20);
    ConfigReader r{"config.json '" + path + "'", ""};
    try
    {
        const nlohmann::json& root = document.root();
        if (!root.is_object())
            CV_Error(Error::StsParseError, r.context + ": not a JSON object");
        r.readModel(root, "model_type", config);
        for (const char* key : {"max_position_embeddings", "n_positions", "n_ctx"})
            if (config.contextLength == -1)
                r.readInt(root, key, config.contextLength);
    }
    catch (const nlohmann::json::exception& e)
    {
        CV_Error(Error::StsParseError, format("%s: field '%s': %s", r.context.c_str(), r.field.c_str(), e.what()));
    }
    if (config.contextLength == 0 || config.contextLength < -1)
        CV_Error(Error::StsParseError, format("%s: the context length %d is invalid", r.context.c_str(), config.contextLength));
    return config;
}

} // namespace

GenAIConfig readGenAIConfig(const std::string& modelPath)
{
    GenAIConfig config;
    const std::string path = folderOf(modelPath) + "/genai_config.json";
    if (!std::ifstream(path, std::ios::binary))
    {
        const std::string hf = folderOf(modelPath) + "/config.json";
        return std::ifstream(hf, std::ios::binary) ? readHuggingFaceConfig(hf) : config;
    }
    // Bounded size and nesting, like the tokenizer's JSON files (a few KiB in practice).
    const JsonDocument document(path, 16 << 20);
    ConfigReader r{"genai_config.json '" + path + "'", ""};
    try
    {
        const nlohmann::json& root = document.root();
        config.found = true;
        if (root.contains("search"))
        {
            const nlohmann::json& search = root.at("search");
            config.hasSearch = true;
            r.field = "search.do_sample";
            if (search.contains("do_sample"))
                config.doSample = search.at("do_sample").get<bool>();
            r.readNumber(search, "temperature", config.temperature);
            r.readNumber(search, "top_p", config.topP);
            r.readNumber(search, "repetition_penalty", config.repetitionPenalty);
            r.field = "search.top_k";
            if (search.contains("top_k") && !search.at("top_k").is_null())
                config.topK = r.asInt(search.at("top_k"));
        }
        if (!root.contains("model"))
            return config;
        const nlohmann::json& model = root.at("model");
        r.readModel(model, "type", config);
        r.readInt(model, "context_length", config.contextLength);
        if (model.contains("decoder"))
        {
            const nlohmann::json& decoder = model.at("decoder");
            r.field = "decoder.inputs.input_ids";
            if (decoder.contains("inputs") && decoder.at("inputs").contains("input_ids"))
                config.inputIdsName = decoder.at("inputs").at("input_ids").get<std::string>();
            r.field = "decoder.outputs.logits";
            if (decoder.contains("outputs") && decoder.at("outputs").contains("logits"))
                config.logitsName = decoder.at("outputs").at("logits").get<std::string>();
        }
    }
    catch (const nlohmann::json::exception& e)
    {
        CV_Error(Error::StsParseError, format("%s: %s%s%s", r.context.c_str(),
                                              r.field.empty() ? "" : ("field '" + r.field + "': ").c_str(), e.what(), ""));
    }
    if (config.contextLength == 0 || config.contextLength < -1)
        CV_Error(Error::StsParseError, format("%s: context_length %d is invalid", r.context.c_str(), config.contextLength));
    return config;
}

}}} // namespace cv::dnn::llm
