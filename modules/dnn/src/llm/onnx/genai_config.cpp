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

} // namespace

GenAIConfig readGenAIConfig(const std::string& modelPath)
{
    GenAIConfig config;
    const std::string path = folderOf(modelPath) + "/genai_config.json";
    if (!std::ifstream(path, std::ios::binary))
        return config;
    // Bounded size and nesting, like the tokenizer's JSON files (a few KiB in practice).
    const JsonDocument document(path, 16 << 20);
    const std::string context = "genai_config.json '" + path + "'";
    std::string field;
    try
    {
        const nlohmann::json& root = document.root();
        config.found = true;
        // json's get<int>() casts any number: a float outside int's range is undefined behaviour
        // and a large integer wraps (fuzz_onnx_llm). Integral values in int's range only.
        auto asInt = [&](const nlohmann::json& v) {
            if (v.is_number_unsigned() && v.get<uint64_t>() <= (uint64_t)INT_MAX)
                return (int)v.get<uint64_t>();
            if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= INT_MIN &&
                v.get<int64_t>() <= INT_MAX)
                return (int)v.get<int64_t>();
            if (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()) &&
                v.get<double>() >= INT_MIN && v.get<double>() <= INT_MAX)
                return (int)v.get<double>();
            if (!v.is_number())
                return v.get<int>();  // throws json's type_error, which names the type
            CV_Error(Error::StsParseError, format("%s: field '%s': %s is not an integer in int's range",
                                                  context.c_str(), field.c_str(), v.dump().c_str()));
        };
        auto readInt = [&](const nlohmann::json& obj, const char* key, int& out) {
            field = key;
            if (obj.contains(key) && !obj.at(key).is_null())
                out = asInt(obj.at(key));
        };
        auto readNumber = [&](const nlohmann::json& obj, const char* key, std::optional<double>& out) {
            field = std::string("search.") + key;
            if (obj.contains(key) && !obj.at(key).is_null())
                out = obj.at(key).get<double>();
        };
        if (root.contains("search"))
        {
            const nlohmann::json& search = root.at("search");
            config.hasSearch = true;
            field = "search.do_sample";
            if (search.contains("do_sample"))
                config.doSample = search.at("do_sample").get<bool>();
            readNumber(search, "temperature", config.temperature);
            readNumber(search, "top_p", config.topP);
            readNumber(search, "repetition_penalty", config.repetitionPenalty);
            field = "search.top_k";
            if (search.contains("top_k") && !search.at("top_k").is_null())
                config.topK = asInt(search.at("top_k"));
        }
        if (!root.contains("model"))
            return config;
        const nlohmann::json& model = root.at("model");
        field = "model.type";
        if (model.contains("type"))
            config.modelType = model.at("type").get<std::string>();
        readInt(model, "context_length", config.contextLength);
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
        if (model.contains("decoder"))
        {
            const nlohmann::json& decoder = model.at("decoder");
            field = "decoder.inputs.input_ids";
            if (decoder.contains("inputs") && decoder.at("inputs").contains("input_ids"))
                config.inputIdsName = decoder.at("inputs").at("input_ids").get<std::string>();
            field = "decoder.outputs.logits";
            if (decoder.contains("outputs") && decoder.at("outputs").contains("logits"))
                config.logitsName = decoder.at("outputs").at("logits").get<std::string>();
        }
    }
    catch (const nlohmann::json::exception& e)
    {
        CV_Error(Error::StsParseError, format("%s: %s%s%s", context.c_str(),
                                              field.empty() ? "" : ("field '" + field + "': ").c_str(), e.what(), ""));
    }
    if (config.contextLength == 0 || config.contextLength < -1)
        CV_Error(Error::StsParseError, format("%s: context_length %d is invalid", context.c_str(), config.contextLength));
    return config;
}

}}} // namespace cv::dnn::llm
