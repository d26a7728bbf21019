// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "openai_request.hpp"

#include <opencv2/imgcodecs.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace llm_server {

using nlohmann::json;

ApiError::ApiError(int status_, const std::string& message, const std::string& param_, const std::string& type_)
    : std::runtime_error(message), status(status_), param(param_)
{
    if (!type_.empty())
        type = type_;
    else if (status == 401)
        type = "authentication_error";
    else if (status == 404)
        type = "not_found_error";
    else if (status == 503)
        type = "unavailable_error";
    else if (status >= 500)
        type = "server_error";
    else
        type = "invalid_request_error";
}

namespace {

// Nesting beyond kMaxJsonDepth is refused before nlohmann parses (and later destroys) the
// document recursively; brackets inside strings do not count.
void checkDepth(const std::string& body)
{
    int depth = 0;
    bool inString = false, escaped = false;
    for (char c : body)
    {
        if (inString)
        {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
        }
        else if (c == '"')
            inString = true;
        else if (c == '[' || c == '{')
        {
            if (++depth > kMaxJsonDepth)
                throw ApiError(400, "the JSON body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        }
        else if (c == ']' || c == '}')
            depth--;
    }
}

json parseJson(const std::string& body)
{
    checkDepth(body);
    try
    {
        return json::parse(body);
    }
    catch (const json::exception& e)  // parse_error, and out_of_range for a number like 1e99999
    {
        throw ApiError(400, std::string("the body is not valid JSON: ") + e.what());
    }
}

json parseObject(const std::string& body)
{
    json j = parseJson(body);
    if (!j.is_object())
        throw ApiError(400, "the body must be a JSON object");
    return j;
}

const json* field(const json& j, const char* name)
{
    auto it = j.find(name);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& j, const char* name, double lo, double hi, double fallback)
{
    const json* v = field(j, name);
    if (!v)
        return fallback;
    if (!v->is_number())
        throw ApiError(400, std::string(name) + " must be a number", name);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw ApiError(400, std::string(name) + " must be in [" + json(lo).dump() + ", " + json(hi).dump() +
                                "], got " + v->dump(), name);
    return x;
}

long long integer(const json& j, const char* name, long long lo, long long hi, long long fallback)
{
    const json* v = field(j, name);
    if (!v)
        return fallback;
    if (!v->is_number_integer() && !v->is_number_unsigned())
        throw ApiError(400, std::string(name) + " must be an integer", name);
    if (v->is_number_unsigned() && v->get<unsigned long long>() > (unsigned long long)hi)
        throw ApiError(400, std::string(name) + " must be at most " + std::to_string(hi) + ", got " + v->dump(), name);
    const long long x = v->get<long long>();
    if (x < lo || x > hi)
        throw ApiError(400, std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + v->dump(), name);
    return x;
}

bool boolean(const json& j, const char* name, bool fallback)
{
    const json* v = field(j, name);
    if (!v)
        return fallback;
    if (!v->is_boolean())
        throw ApiError(400, std::string(name) + " must be true or false", name);
    return v->get<bool>();
}

std::string text(const json& j, const char* name)
{
    const json* v = field(j, name);
    if (!v)
        return std::string();
    if (!v->is_string())
        throw ApiError(400, std::string(name) + " must be a string", name);
    return v->get<std::string>();
}

// [{"id", "scale"}, ...]: both required (llama-server's README says so; its parser takes a missing
// scale for 0 and ignores an unknown id, which would hide a client's mistake). `what` names the
// list in messages, `param` in the error's param field.
std::vector<std::pair<int, float>> loraList(const json& list, const RequestLimits& limits, const std::string& what,
                                            const std::string& param)
{
    const std::string shape = "{\"id\": N, \"scale\": S}";
    if (!list.is_array())
        throw ApiError(400, what + " must be a list of " + shape + " objects", param);
    std::vector<std::pair<int, float>> out;
    for (const json& entry : list)
    {
        if (!entry.is_object())
            throw ApiError(400, "each entry of " + what + " must be an object " + shape, param);
        const json* id = field(entry, "id");
        const json* scale = field(entry, "scale");
        if (!id || !(id->is_number_integer() || id->is_number_unsigned()))
            throw ApiError(400, "each entry of " + what + " needs an integer id: " + shape, param);
        if (!scale || !scale->is_number())
            throw ApiError(400, "each entry of " + what + " needs a number scale: " + shape, param);
        const bool small = !id->is_number_unsigned() || id->get<unsigned long long>() <= (unsigned long long)INT32_MAX;
        const long long n = small ? id->get<long long>() : -1;
        if (!small || std::find(limits.adapterIds.begin(), limits.adapterIds.end(), n) == limits.adapterIds.end())
            throw ApiError(400, "no LoRA adapter has id " + id->dump() + " (" + std::to_string(limits.adapterIds.size()) +
                                    " loaded; GET /lora-adapters lists them)", param);
        const float s = (float)scale->get<double>();
        if (!std::isfinite(s))
            throw ApiError(400, "the scale of LoRA adapter " + id->dump() + " must be a finite number", param);
        for (const auto& seen : out)
            if (seen.first == (int)n)
                throw ApiError(400, "LoRA adapter " + id->dump() + " is given twice in " + what, param);
        out.emplace_back((int)n, s);
    }
    return out;
}

std::vector<std::string> stopStrings(const json& j)
{
    const json* v = field(j, "stop");
    std::vector<std::string> stops;
    if (!v)
        return stops;
    if (v->is_string())
        stops.push_back(v->get<std::string>());
    else if (v->is_array() && v->size() <= 16)
        for (const json& s : *v)
        {
            if (!s.is_string())
                throw ApiError(400, "stop must be a string or a list of strings", "stop");
            stops.push_back(s.get<std::string>());
        }
    else
        throw ApiError(400, "stop must be a string or a list of at most 16 strings", "stop");
    for (const std::string& s : stops)
        if (s.empty())
            throw ApiError(400, "stop strings must not be empty", "stop");
    return stops;
}

// The fields both endpoints share: sampling, stops, length, choices, streaming.
void readCommonFields(const json& j, const RequestLimits& limits, ParsedRequest& p)
{
    cv::dnn::GenerationConfig& c = p.request.config;
    p.model = text(j, "model");
    p.stream = boolean(j, "stream", false);
    if (const json* options = field(j, "stream_options"))
    {
        if (!options->is_object())
            throw ApiError(400, "stream_options must be an object", "stream_options");
        p.includeUsage = boolean(*options, "include_usage", false);
    }
    // Default: up to the end of the context (the engine ends the request there, "length").
    long long maxTokens = integer(j, "max_tokens", 1, 1 << 24, 1 << 24);
    if (p.chat)  // OpenAI's newer name
        maxTokens = integer(j, "max_completion_tokens", 1, 1 << 24, maxTokens);
    c.maxNewTokens = (int)maxTokens;
    c.temperature = (float)number(j, "temperature", 0, 2, 1.0);
    c.topP = (float)number(j, "top_p", 0, 1, 1);
    if (field(j, "top_p") && c.topP == 0.f)
        throw ApiError(400, "top_p must be greater than 0", "top_p");
    c.topK = (int)integer(j, "top_k", 0, 1 << 20, 0);
    c.minP = (float)number(j, "min_p", 0, 1, 0);
    if (c.minP >= 1.f)
        throw ApiError(400, "min_p must be below 1 (1 would keep only tokens as likely as the best)", "min_p");
    c.presencePenalty = (float)number(j, "presence_penalty", -2, 2, 0);
    c.frequencyPenalty = (float)number(j, "frequency_penalty", -2, 2, 0);
    c.repetitionPenalty = (float)number(j, "repeat_penalty", 0.01, 10, 1);
    c.repetitionWindow = (int)integer(j, "repeat_last_n", -1, 1 << 20, c.repetitionWindow);
    // OpenAI's seed is any integer: reduced into the engine's int.
    const long long seed = integer(j, "seed", INT64_MIN, INT64_MAX, 0);
    c.seed = (int)(((seed % 2147483647) + 2147483647) % 2147483647);
    c.stopStrings.clear();
    for (const std::string& s : stopStrings(j))
        c.stopStrings.push_back(s);
    c.ignoreEndOfGeneration = boolean(j, "ignore_eos", false);
    c.grammar = text(j, "grammar");
    p.n = (int)integer(j, "n", 1, kMaxChoices, 1);
    // llama-server's per-request adapters: those listed with their scales, the others off; an
    // empty list (or none) leaves the defaults (POST /lora-adapters).
    c.adapterIds.clear();
    c.adapterScales.clear();
    if (const json* lora = field(j, "lora"))
        for (const auto& a : loraList(*lora, limits, "lora", "lora"))
        {
            c.adapterIds.push_back(a.first);
            c.adapterScales.push_back(a.second);
        }
}

void readLogprobs(const json& j, ParsedRequest& p)
{
    if (p.chat)
    {
        p.logprobs = boolean(j, "logprobs", false);
        p.topLogprobs = (int)integer(j, "top_logprobs", 0, 20, 0);
        if (field(j, "top_logprobs") && !p.logprobs)
            throw ApiError(400, "top_logprobs needs logprobs: true", "top_logprobs");
    }
    else if (field(j, "logprobs"))  // /v1/completions: logprobs is the number of alternatives
    {
        p.logprobs = true;
        p.topLogprobs = (int)integer(j, "logprobs", 0, 5, 0);
    }
    p.request.config.topLogprobs = p.logprobs ? p.topLogprobs : -1;
}

void readResponseFormat(const json& j, ParsedRequest& p)
{
    const json* f = field(j, "response_format");
    if (!f)
        return;
    if (!f->is_object())
        throw ApiError(400, "response_format must be an object", "response_format");
    const std::string type = text(*f, "type");
    cv::dnn::GenerationConfig& c = p.request.config;
    if (type == "text")
        return;
    if (!c.grammar.empty())
        throw ApiError(400, "give either grammar or response_format, not both", "response_format");
    if (type == "json_object")
        c.jsonSchema = "{\"type\": \"object\"}";  // an object, as OpenAI's JSON mode gives (not any JSON value)
    else if (type == "json_schema")
    {
        const json* spec = field(*f, "json_schema");
        if (!spec || !spec->is_object())
            throw ApiError(400, "response_format json_schema needs a json_schema object", "response_format");
        const json* schema = field(*spec, "schema");
        if (schema && !schema->is_object() && !schema->is_boolean())
            throw ApiError(400, "response_format.json_schema.schema must be a JSON schema object", "response_format");
        c.jsonSchema = schema ? schema->dump() : std::string("{}");
    }
    else
        throw ApiError(400, "response_format.type must be text, json_object or json_schema", "response_format");
    p.responseFormat = type;
}

void readTools(const json& j, ParsedRequest& p)
{
    const json* tools = field(j, "tools");
    if (!tools)
    {
        if (field(j, "tool_choice") && !(j["tool_choice"].is_string() && j["tool_choice"] == "none"))
            throw ApiError(400, "tool_choice needs tools", "tool_choice");
        return;
    }
    if (!tools->is_array())
        throw ApiError(400, "tools must be a list", "tools");
    for (const json& t : *tools)
    {
        if (!t.is_object() || t.value("type", std::string()) != "function" || !t.contains("function") ||
            !t["function"].is_object() || !t["function"].contains("name") || !t["function"]["name"].is_string())
            throw ApiError(400, "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
        const json* params = field(t["function"], "parameters");
        if (params && !params->is_object())
            throw ApiError(400, "function.parameters must be a JSON schema object", "tools");
    }
    if (tools->empty())
        return;
    p.toolChoice = ToolChoice::Auto;
    if (const json* choice = field(j, "tool_choice"))
    {
        if (choice->is_string())
        {
            const std::string s = choice->get<std::string>();
            if (s == "none")
                p.toolChoice = ToolChoice::None;
            else if (s == "required")
                p.toolChoice = ToolChoice::Required;
            else if (s != "auto")
                throw ApiError(400, "tool_choice must be none, auto, required or a function", "tool_choice");
        }
        else if (choice->is_object() && choice->contains("function") && (*choice)["function"].is_object() &&
                 (*choice)["function"].contains("name") && (*choice)["function"]["name"].is_string())
        {
            p.toolChoice = ToolChoice::Named;
            p.namedTool = (*choice)["function"]["name"].get<std::string>();
        }
        else
            throw ApiError(400, "tool_choice must be none, auto, required or {\"type\": \"function\", "
                                "\"function\": {\"name\": ...}}", "tool_choice");
    }
    if (p.toolChoice != ToolChoice::None)
        p.toolsJson = tools->dump();
    if ((p.toolChoice == ToolChoice::Required || p.toolChoice == ToolChoice::Named) &&
        (!p.request.config.grammar.empty() || !p.responseFormat.empty()))
        throw ApiError(400, "a required tool call cannot go with grammar or response_format", "tool_choice");
}

// Each byte's 6-bit value in base64, -1 for a byte outside its alphabet.
struct Base64Values
{
    signed char of[256];
    Base64Values()
    {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        std::fill(of, of + 256, (signed char)-1);
        for (int i = 0; i < 64; i++)
            of[(unsigned char)alphabet[i]] = (signed char)i;
    }
};

std::vector<unsigned char> base64Decode(const std::string& s, size_t begin)
{
    static const Base64Values values;
    std::vector<unsigned char> out;
    out.reserve((s.size() - begin) / 4 * 3);
    unsigned int bits = 0;
    int count = 0;
    for (size_t i = begin; i < s.size(); i++)
    {
        const char c = s[i];
        if (c == '=' || c == '\n' || c == '\r')
            continue;
        const int v = values.of[(unsigned char)c];
        if (v < 0)
            throw ApiError(400, "an image_url's base64 data has a character outside base64", "messages");
        bits = (bits << 6) | (unsigned int)v;
        if (++count == 4)
        {
            out.push_back((unsigned char)(bits >> 16));
            out.push_back((unsigned char)(bits >> 8));
            out.push_back((unsigned char)bits);
            bits = 0;
            count = 0;
        }
    }
    if (count == 2)
        out.push_back((unsigned char)(bits >> 4));
    else if (count == 3)
    {
        out.push_back((unsigned char)(bits >> 10));
        out.push_back((unsigned char)(bits >> 2));
    }
    else if (count == 1)
        throw ApiError(400, "an image_url's base64 data is cut short", "messages");
    return out;
}

cv::Mat imageFromDataUrl(const std::string& url)
{
    // data:image/png;base64,....: no download of http(s) URLs (the server reaches no network).
    const size_t comma = url.find(',');
    if (url.compare(0, 5, "data:") != 0 || comma == std::string::npos ||
        url.substr(0, comma).find(";base64") == std::string::npos)
        throw ApiError(400, "image_url.url must be a base64 data URL (data:image/...;base64,...); the server "
                            "fetches no URLs", "messages");
    const std::vector<unsigned char> bytes = base64Decode(url, comma + 1);
    cv::Mat image;
    if (!bytes.empty())
        image = cv::imdecode(bytes, cv::IMREAD_COLOR);
    if (image.empty())
        throw ApiError(400, "an image_url holds no image that can be decoded (PNG, JPEG, ...)", "messages");
    return image;
}

// A message's content as the text the template gets: parts joined, an image part becoming the
// engine's <__media__> marker (its image appended to `images`).
std::string contentText(const json& content, const RequestLimits& limits, std::vector<cv::Mat>& images)
{
    if (content.is_string())
        return content.get<std::string>();
    if (!content.is_array())
        throw ApiError(400, "a message's content must be a string or a list of parts", "messages");
    std::string out;
    for (const json& part : content)
    {
        if (!part.is_object())
            throw ApiError(400, "a content part must be an object", "messages");
        const std::string type = part.value("type", std::string());
        if (type == "text")
        {
            if (!part.contains("text") || !part["text"].is_string())
                throw ApiError(400, "a text part needs \"text\" (a string)", "messages");
            out += part["text"].get<std::string>();
        }
        else if (type == "image_url")
        {
            if (!limits.hasProjector)
                throw ApiError(400, "this model has no image projector (start llm_server with --mmproj=FILE) and "
                                    "cannot read image parts", "messages");
            if ((int)images.size() >= limits.maxImages)
                throw ApiError(400, "at most " + std::to_string(limits.maxImages) + " images per request", "messages");
            const json* imageUrl = field(part, "image_url");
            const json* url = imageUrl && imageUrl->is_object() ? field(*imageUrl, "url") : imageUrl;
            if (!url || !url->is_string())
                throw ApiError(400, "an image_url part needs image_url.url (a string)", "messages");
            images.push_back(imageFromDataUrl(url->get<std::string>()));
            out += "<__media__>";
        }
        else
            throw ApiError(400, "unknown content part type '" + type + "' (text and image_url are supported)",
                           "messages");
    }
    return out;
}

// The messages as the template gets them: known roles only, content made text, tool call
// arguments given as objects (templates write them with tojson, as transformers passes them).
std::string messagesForTemplate(const json& messages, const RequestLimits& limits, std::vector<cv::Mat>& images)
{
    if (!messages.is_array() || messages.empty())
        throw ApiError(400, "messages must be a non-empty list", "messages");
    json out = json::array();
    for (const json& m : messages)
    {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            throw ApiError(400, "each message needs a role (a string)", "messages");
        std::string role = m["role"].get<std::string>();
        if (role == "developer")  // OpenAI's newer name of the system role
            role = "system";
        if (role == "tool" && !limits.templateKnowsToolRole)  // as llama.cpp does: the result reaches the model
            role = "user";
        if (role != "system" && role != "user" && role != "assistant" && role != "tool")
            throw ApiError(400, "unknown role '" + role + "' (system, developer, user, assistant, tool)", "messages");
        json message = m;
        message["role"] = role;
        const json* content = field(m, "content");
        const json* toolCalls = field(m, "tool_calls");
        if (!content && !(role == "assistant" && toolCalls))
            throw ApiError(400, "a " + role + " message needs content", "messages");
        // An assistant turn of only tool calls has no content: "" for the templates that
        // concatenate it (as llama.cpp renders it).
        message["content"] = content ? contentText(*content, limits, images) : std::string();
        if (toolCalls)
        {
            if (!toolCalls->is_array())
                throw ApiError(400, "tool_calls must be a list", "messages");
            json calls = json::array();
            for (json call : *toolCalls)
            {
                if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
                    throw ApiError(400, "each tool call needs a function object", "messages");
                json& function = call["function"];
                if (function.contains("arguments") && function["arguments"].is_string())
                {
                    const json parsed = json::parse(function["arguments"].get<std::string>(), nullptr, false);
                    if (!parsed.is_discarded())
                        function["arguments"] = parsed;
                }
                calls.push_back(call);
            }
            message["tool_calls"] = calls;
        }
        out.push_back(message);
    }
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<int> tokenIds(const json& ids, int vocabSize, const char* param)
{
    std::vector<int> out;
    for (const json& t : ids)
    {
        if (!t.is_number_integer() && !t.is_number_unsigned())
            throw ApiError(400, std::string(param) + " must be a string or a list of token ids", param);
        const long long id = t.get<long long>();
        if (id < 0 || id >= vocabSize)
            throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                    std::to_string(vocabSize - 1) + ")", param);
        out.push_back((int)id);
    }
    return out;
}

} // namespace

ParsedRequest parseChatRequest(const std::string& body, const RequestLimits& limits)
{
    const json j = parseObject(body);
    ParsedRequest p;
    p.chat = true;
    readCommonFields(j, limits, p);
    readLogprobs(j, p);
    readResponseFormat(j, p);
    readTools(j, p);
    const json* messages = field(j, "messages");
    if (!messages)
        throw ApiError(400, "messages is required", "messages");
    p.request.messagesJson = messagesForTemplate(*messages, limits, p.request.images);
    if (p.toolChoice != ToolChoice::None)
        p.request.chatContextJson = json{{"tools", json::parse(p.toolsJson)}}.dump();
    return p;
}

ParsedRequest parseCompletionRequest(const std::string& body, const RequestLimits& limits)
{
    const json j = parseObject(body);
    ParsedRequest p;
    readCommonFields(j, limits, p);
    readLogprobs(j, p);
    p.echo = boolean(j, "echo", false);
    const json* prompt = field(j, "prompt");
    if (!prompt)
        throw ApiError(400, "prompt is required", "prompt");
    // A string, token ids, or a list of either (several prompts: a choice set each).
    const bool several = prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array());
    const json list = several ? *prompt : json::array({*prompt});
    if ((int)list.size() > kMaxPrompts)
        throw ApiError(400, "at most " + std::to_string(kMaxPrompts) + " prompts in one request", "prompt");
    for (const json& one : list)
    {
        ParsedRequest::Prompt item;
        if (one.is_string() && !one.get<std::string>().empty())
            item.text = one.get<std::string>();
        else if (one.is_array() && !one.empty() && !one[0].is_string() && !one[0].is_array())
            item.tokenIds = tokenIds(one, limits.vocabSize, "prompt");
        else
            throw ApiError(400, "prompt must be a non-empty string, a list of token ids, or a list of those", "prompt");
        p.prompts.push_back(item);
    }
    if ((int)p.prompts.size() * p.n > kMaxChoices)
        throw ApiError(400, "prompts x n must be at most " + std::to_string(kMaxChoices) + ", got " +
                            std::to_string(p.prompts.size() * p.n), "n");
    return p;
}

std::vector<cv::dnn::GenerationRequest> ParsedRequest::choiceRequests() const
{
    std::vector<cv::dnn::GenerationRequest> out;
    const size_t count = chat ? 1 : prompts.size();
    for (size_t k = 0; k < count; k++)
        for (int i = 0; i < n; i++)
        {
            cv::dnn::GenerationRequest r = request;
            if (!chat)
            {
                r.prompt = prompts[k].text;
                r.promptTokenIds = prompts[k].tokenIds;
            }
            r.config.seed = (int)(((long long)r.config.seed + i) % 2147483647);
            out.push_back(r);
        }
    return out;
}

std::vector<std::pair<int, float>> parseLoraList(const std::string& body, const RequestLimits& limits)
{
    const json j = parseJson(body);
    return loraList(j, limits, "the body", "");
}

TokenizeRequest parseTokenizeRequest(const std::string& body)
{
    const json j = parseObject(body);
    TokenizeRequest r;
    const json* content = field(j, "content");
    if (!content || !content->is_string())
        throw ApiError(400, "content (a string) is required", "content");
    r.content = content->get<std::string>();
    r.addSpecial = boolean(j, "add_special", false);
    r.parseSpecial = boolean(j, "parse_special", true);
    return r;
}

std::vector<int> parseDetokenizeRequest(const std::string& body, int vocabSize)
{
    const json j = parseObject(body);
    const json* tokens = field(j, "tokens");
    if (!tokens || !tokens->is_array())
        throw ApiError(400, "tokens (a list of token ids) is required", "tokens");
    return tokenIds(*tokens, vocabSize, "tokens");
}

} // namespace llm_server
