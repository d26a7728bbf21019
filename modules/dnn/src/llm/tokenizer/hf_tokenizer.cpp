// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Hugging Face model folders: finding the files, the special tokens and the chat template
// (tokenizer_config.json, tokenizer.json's post_processor, chat_template.jinja), and the
// entry points. The model part of tokenizer.json is in hf_tokenizer_model.cpp.

#include "../../precomp.hpp"
#include "hf_tokenizer.hpp"
#include "../common/json_document.hpp"
#include "hf_tokenizer_model.hpp"
#include "metadata_only_gguf.hpp"

#include <opencv2/core/utils/filesystem.hpp>
#include <opencv2/core/utils/logger.hpp>

#include <fstream>
#include <sstream>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// The largest tokenizer.json files in use are a few tens of MiB (Gemma 3: ~33 MiB); parsing
// takes several times the file size in memory.
const size_t kMaxTokenizerJsonBytes = size_t(512) << 20;
const size_t kMaxConfigBytes = size_t(64) << 20;
const char* const kTokenizerJson = "tokenizer.json";
const char* const kTokenizerConfigJson = "tokenizer_config.json";
const char* const kChatTemplateJinja = "chat_template.jinja";

struct ModelFolderFiles
{
    std::string tokenizerJson;
    std::string tokenizerConfig;  // "" when absent
    std::string chatTemplate;     // "" when absent
};

std::string parentFolder(const std::string& path)
{
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}

ModelFolderFiles findFiles(const std::string& folderOrTokenizerJsonPath)
{
    ModelFolderFiles files;
    std::string folder;
    if (utils::fs::isDirectory(folderOrTokenizerJsonPath))
    {
        folder = folderOrTokenizerJsonPath;
        files.tokenizerJson = utils::fs::join(folder, kTokenizerJson);
        if (!utils::fs::exists(files.tokenizerJson))
            CV_Error(Error::StsObjectNotFound, format("%s: the folder has no %s", folder.c_str(), kTokenizerJson));
    }
    else
    {
        if (!utils::fs::exists(folderOrTokenizerJsonPath))
            CV_Error(Error::StsObjectNotFound, format("%s: no such file or folder", folderOrTokenizerJsonPath.c_str()));
        files.tokenizerJson = folderOrTokenizerJsonPath;
        folder = parentFolder(folderOrTokenizerJsonPath);
    }
    const std::string config = utils::fs::join(folder, kTokenizerConfigJson);
    if (utils::fs::exists(config) && !utils::fs::isDirectory(config))
        files.tokenizerConfig = config;
    const std::string jinja = utils::fs::join(folder, kChatTemplateJinja);
    if (utils::fs::exists(jinja) && !utils::fs::isDirectory(jinja))
        files.chatTemplate = jinja;
    return files;
}

std::string readTextFile(const std::string& path, size_t maxBytes)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        CV_Error(Error::StsError, format("%s: cannot open the file", path.c_str()));
    std::string text;
    char buffer[65536];
    while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0)
    {
        text.append(buffer, (size_t)in.gcount());
        if (text.size() > maxBytes)
            CV_Error(Error::StsOutOfRange, format("%s: larger than the %zu bytes accepted", path.c_str(), maxBytes));
    }
    return text;
}

//! Special tokens that the post_processor adds around a single text.
struct PostProcessorSpecials
{
    int before = -1;  // BOS-like ([CLS], <s>, <|begin_of_text|>)
    int after = -1;   // EOS-like ([SEP], </s>)
};

int specialTokenOfTemplate(const JsonDocument& doc, const Json& processor, const std::string& field,
                           const std::string& name, const HuggingFaceTokenTable& table)
{
    // special_tokens maps the template's name to its ids; fall back to the name as token text.
    if (const Json* specials = doc.find(processor, field, "special_tokens"))
    {
        const std::string specialsField = jsonMember(field, "special_tokens");
        if (const Json* entry = doc.find(*specials, specialsField, name.c_str()))
        {
            const std::string entryField = specialsField + "['" + name + "']";
            const Json& ids = doc.asArray(doc.get(*entry, entryField, "ids"), jsonMember(entryField, "ids"));
            if (ids.size() != 1)
                doc.fail(jsonMember(entryField, "ids"), "must hold one id", Error::StsNotImplemented);
            return (int)doc.asInteger(ids[0], jsonElement(jsonMember(entryField, "ids"), 0), 0, (int64)table.texts.size() - 1);
        }
    }
    const int id = table.find(name);
    if (id < 0)
        doc.fail(field, "adds '" + name + "', which is not a token");
    return id;
}

void readPostProcessor(const JsonDocument& doc, const Json& processor, const std::string& field,
                       const HuggingFaceTokenTable& table, PostProcessorSpecials& specials)
{
    const std::string type = doc.asString(doc.get(processor, field, "type"), jsonMember(field, "type"));
    if (type == "Sequence")
    {
        const std::string listField = jsonMember(field, "processors");
        const Json& list = doc.asArray(doc.get(processor, field, "processors"), listField);
        for (size_t i = 0; i < list.size(); i++)
            readPostProcessor(doc, list[i], jsonElement(listField, i), table, specials);
    }
    else if (type == "TemplateProcessing")
    {
        const std::string singleField = jsonMember(field, "single");
        const Json& single = doc.asArray(doc.get(processor, field, "single"), singleField);
        bool afterText = false;
        for (size_t i = 0; i < single.size(); i++)
        {
            const std::string itemField = jsonElement(singleField, i);
            if (doc.find(single[i], itemField, "Sequence"))
            {
                afterText = true;
                continue;
            }
            const std::string tokenField = jsonMember(itemField, "SpecialToken");
            const Json& token = doc.get(single[i], itemField, "SpecialToken");
            const std::string name = doc.asString(doc.get(token, tokenField, "id"), jsonMember(tokenField, "id"));
            int& slot = afterText ? specials.after : specials.before;
            if (slot >= 0)
                doc.fail(singleField, "adds more than one token on one side of the text, which is not supported",
                         Error::StsNotImplemented);
            slot = specialTokenOfTemplate(doc, processor, field, name, table);
        }
    }
    else if (type == "BertProcessing" || type == "RobertaProcessing")
    {
        // "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]
        const char* const keys[] = {"cls", "sep"};
        for (int k = 0; k < 2; k++)
        {
            const std::string pairField = jsonMember(field, keys[k]);
            const Json& pair = doc.asArray(doc.get(processor, field, keys[k]), pairField);
            if (pair.size() != 2)
                doc.fail(pairField, "must be [text, id]");
            (k == 0 ? specials.before : specials.after) =
                (int)doc.asInteger(pair[1], jsonElement(pairField, 1), 0, (int64)table.texts.size() - 1);
        }
    }
    else if (type != "ByteLevel")  // ByteLevel only fixes offsets
    {
        CV_LOG_WARNING(NULL, doc.path() << ": " << field << ".type '" << type << "' is not understood; "
                       "no special tokens are added around the text unless tokenizer_config.json says so");
    }
}

//! A special token named in tokenizer_config.json: "text", {"content": "text", ...} or null.
int configTokenId(const JsonDocument& config, const char* key, const HuggingFaceTokenTable& table, bool& named)
{
    named = false;
    const Json* value = config.find(config.root(), "", key);
    if (!value)
        return -1;
    std::string text;
    if (value->is_object())
        text = config.asString(config.get(*value, key, "content"), jsonMember(key, "content"));
    else
        text = config.asString(*value, key);
    named = true;
    const int id = table.find(text);
    if (id < 0)
        CV_LOG_WARNING(NULL, config.path() << ": " << key << " '" << text << "' is not a token; ignored");
    return id;
}

std::string configChatTemplate(const JsonDocument& config)
{
    const Json* value = config.find(config.root(), "", "chat_template");
    if (!value)
        return std::string();
    if (value->is_string())
        return value->get<std::string>();
    // A list of named templates: [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
    const Json& list = config.asArray(*value, "chat_template");
    for (size_t i = 0; i < list.size(); i++)
    {
        const std::string field = jsonElement("chat_template", i);
        if (config.optionalString(list[i], field, "name") == "default")
            return config.asString(config.get(list[i], field, "template"), jsonMember(field, "template"));
    }
    CV_LOG_WARNING(NULL, config.path() << ": chat_template lists no template named 'default'; none is used");
    return std::string();
}

void writeSpecialTokens(const ModelFolderFiles& files, const JsonDocument& tokenizerJson,
                        const HuggingFaceTokenTable& table, MetadataOnlyGGUF& out)
{
    // HF adds special tokens in the post_processor; tokenizer_config.json, when it says so,
    // overrides them (LlamaTokenizerFast rebuilds its post_processor from add_bos_token).
    PostProcessorSpecials specials;
    if (const Json* processor = tokenizerJson.find(tokenizerJson.root(), "", "post_processor"))
        readPostProcessor(tokenizerJson, *processor, "post_processor", table, specials);
    int bos = specials.before, eos = specials.after, pad = -1;
    bool addBos = specials.before >= 0, addEos = specials.after >= 0;
    std::string chatTemplate;

    if (!files.tokenizerConfig.empty())
    {
        const JsonDocument config(files.tokenizerConfig, kMaxConfigBytes);
        config.asObject(config.root(), "");
        bool named = false;
        const int configBos = configTokenId(config, "bos_token", table, named);
        if (named)
            bos = configBos;
        const int configEos = configTokenId(config, "eos_token", table, named);
        if (named)
            eos = configEos;
        pad = configTokenId(config, "pad_token", table, named);
        addBos = config.optionalBool(config.root(), "", "add_bos_token", addBos);
        addEos = config.optionalBool(config.root(), "", "add_eos_token", addEos);
        if (addBos && bos < 0)
            config.fail("add_bos_token", "is true but there is no valid bos_token");
        if (addEos && eos < 0)
            config.fail("add_eos_token", "is true but there is no valid eos_token");
        chatTemplate = configChatTemplate(config);
    }
    if (chatTemplate.empty() && !files.chatTemplate.empty())
        chatTemplate = readTextFile(files.chatTemplate, kMaxConfigBytes);

    // Every id is written, -1 for none, so that no model default applies: HF adds nothing
    // that the files do not name.
    out.setInt32("tokenizer.ggml.bos_token_id", bos);
    out.setInt32("tokenizer.ggml.eos_token_id", eos);
    out.setInt32("tokenizer.ggml.padding_token_id", pad);
    out.setBool("tokenizer.ggml.add_bos_token", addBos);
    out.setBool("tokenizer.ggml.add_eos_token", addEos);
    if (!chatTemplate.empty())
        out.setString("tokenizer.chat_template", chatTemplate);
}

} // namespace

bool isHuggingFaceTokenizerPath(const std::string& path)
{
    if (utils::fs::isDirectory(path))
        return true;  // a model folder: loading says so if it has no tokenizer.json
    const size_t dot = path.find_last_of('.');
    if (dot == std::string::npos)
        return false;
    std::string extension = path.substr(dot + 1);
    for (char& c : extension)
        c = (char)std::tolower((unsigned char)c);
    return extension == "json";
}

Ptr<GGUFFile> readHuggingFaceTokenizerMetadata(const std::string& folderOrTokenizerJsonPath)
{
    const ModelFolderFiles files = findFiles(folderOrTokenizerJsonPath);
    const JsonDocument tokenizerJson(files.tokenizerJson, kMaxTokenizerJsonBytes);
    Ptr<MetadataOnlyGGUF> metadata = makePtr<MetadataOnlyGGUF>(files.tokenizerJson);
    const HuggingFaceTokenTable table = convertTokenizerJsonModel(tokenizerJson, *metadata);
    writeSpecialTokens(files, tokenizerJson, table, *metadata);
    return metadata;
}

HuggingFaceTokenizer loadHuggingFaceTokenizer(const std::string& folderOrTokenizerJsonPath)
{
    HuggingFaceTokenizer result;
    result.metadata = readHuggingFaceTokenizerMetadata(folderOrTokenizerJsonPath);
    const MetadataOnlyGGUF& metadata = static_cast<const MetadataOnlyGGUF&>(*result.metadata);
    result.tokenizerJsonPath = metadata.source();
    try
    {
        result.tokenizer = Tokenizer::fromGGUF(metadata);
    }
    catch (const cv::Exception& e)
    {
        // The message names a tokenizer.ggml.* key: say which file it came from.
        CV_Error(e.code, format("%s: %s", metadata.source().c_str(), e.err.c_str()));
    }
    result.bosId = result.tokenizer->bosId();
    result.eosId = result.tokenizer->eosId();
    if (metadata.hasMetadata("tokenizer.chat_template"))
        result.chatTemplate = metadata.getString("tokenizer.chat_template");
    return result;
}

std::shared_ptr<Tokenizer> Tokenizer::fromHuggingFace(const std::string& folderOrTokenizerJsonPath)
{
    return loadHuggingFaceTokenizer(folderOrTokenizerJsonPath).tokenizer;
}

}}} // namespace cv::dnn::llm
