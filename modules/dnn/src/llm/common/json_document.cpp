// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "json_document.hpp"

#include <fstream>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Tokenizer files nest a few levels (pre_tokenizer.pretokenizers[i].pattern.Regex); the limit
// keeps a hostile file from building a value whose recursive destruction or copy overflows.
const int kMaxJsonDepth = 64;

struct TooDeep {};

} // namespace

JsonDocument::JsonDocument(const std::string& path, size_t maxBytes) : path_(path)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        CV_Error(Error::StsError, format("%s: cannot open the file", path.c_str()));
    const std::streamoff size = in.tellg();
    if (size < 0)
        CV_Error(Error::StsError, format("%s: cannot read the file", path.c_str()));
    if ((uint64_t)size > maxBytes)
        CV_Error(Error::StsOutOfRange, format("%s: %lld bytes is larger than the %zu bytes accepted for this file",
                                              path.c_str(), (long long)size, maxBytes));
    std::string text((size_t)size, '\0');
    in.seekg(0);
    if (!in.read(&text[0], size))
        CV_Error(Error::StsError, format("%s: cannot read the file", path.c_str()));

    const Json::parser_callback_t limitDepth = [](int depth, Json::parse_event_t, Json&) {
        if (depth > kMaxJsonDepth)
            throw TooDeep();
        return true;
    };
    try
    {
        root_ = Json::parse(text, limitDepth);
    }
    catch (const TooDeep&)
    {
        CV_Error(Error::StsParseError, format("%s: JSON nested deeper than %d levels", path.c_str(), kMaxJsonDepth));
    }
    catch (const Json::exception& e)
    {
        CV_Error(Error::StsParseError, format("%s: not valid JSON: %s", path.c_str(), e.what()));
    }
}

OrderedJson parseJsonText(const std::string& text, const std::string& what, size_t maxBytes)
{
    if (text.size() > maxBytes)
        CV_Error(Error::StsOutOfRange, format("%s: %zu bytes is more than the %zu bytes accepted", what.c_str(),
                                              text.size(), maxBytes));
    const OrderedJson::parser_callback_t limitDepth = [](int depth, OrderedJson::parse_event_t, OrderedJson&) {
        if (depth > kMaxJsonDepth)
            throw TooDeep();
        return true;
    };
    try
    {
        return OrderedJson::parse(text, limitDepth);
    }
    catch (const TooDeep&)
    {
        CV_Error(Error::StsParseError, format("%s: JSON nested deeper than %d levels", what.c_str(), kMaxJsonDepth));
    }
    catch (const OrderedJson::exception& e)
    {
        CV_Error(Error::StsParseError, format("%s: not valid JSON: %s", what.c_str(), e.what()));
    }
}

void JsonDocument::fail(const std::string& field, const std::string& problem, int code) const
{
    CV_Error(code, format("%s: %s %s", path_.c_str(), field.c_str(), problem.c_str()));
}

const Json* JsonDocument::find(const Json& object, const std::string& field, const char* key) const
{
    asObject(object, field);
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return nullptr;
    return &*it;
}

const Json& JsonDocument::get(const Json& object, const std::string& field, const char* key) const
{
    const Json* value = find(object, field, key);
    if (!value)
        fail(jsonMember(field, key), "is missing");
    return *value;
}

std::string JsonDocument::asString(const Json& value, const std::string& field) const
{
    if (!value.is_string())
        fail(field, format("must be a string, not %s", value.type_name()));
    return value.get_ref<const std::string&>();
}

bool JsonDocument::asBool(const Json& value, const std::string& field) const
{
    if (!value.is_boolean())
        fail(field, format("must be true or false, not %s", value.type_name()));
    return value.get<bool>();
}

int64 JsonDocument::asInteger(const Json& value, const std::string& field, int64 minValue, int64 maxValue) const
{
    if (value.is_number_unsigned())
    {
        const uint64_t v = value.get<uint64_t>();
        if (v > (uint64_t)maxValue)
            fail(field, format("= %llu is outside [%lld, %lld]", (unsigned long long)v, (long long)minValue,
                               (long long)maxValue), Error::StsOutOfRange);
        return (int64)v;
    }
    if (!value.is_number_integer())
        fail(field, format("must be an integer, not %s", value.is_number() ? "a fraction" : value.type_name()));
    const int64_t v = value.get<int64_t>();
    if (v < minValue || v > maxValue)
        fail(field, format("= %lld is outside [%lld, %lld]", (long long)v, (long long)minValue, (long long)maxValue),
             Error::StsOutOfRange);
    return v;
}

const Json& JsonDocument::asArray(const Json& value, const std::string& field) const
{
    if (!value.is_array())
        fail(field, format("must be an array, not %s", value.type_name()));
    return value;
}

const Json& JsonDocument::asObject(const Json& value, const std::string& field) const
{
    if (!value.is_object())
        fail(field.empty() ? std::string("the top level") : field, format("must be an object, not %s", value.type_name()));
    return value;
}

std::string JsonDocument::optionalString(const Json& object, const std::string& field, const char* key,
                                         const std::string& fallback) const
{
    const Json* value = find(object, field, key);
    return value ? asString(*value, jsonMember(field, key)) : fallback;
}

bool JsonDocument::optionalBool(const Json& object, const std::string& field, const char* key, bool fallback) const
{
    const Json* value = find(object, field, key);
    return value ? asBool(*value, jsonMember(field, key)) : fallback;
}

std::string jsonMember(const std::string& field, const std::string& key)
{
    return field.empty() ? key : field + "." + key;
}

std::string jsonElement(const std::string& field, size_t index)
{
    return field + "[" + std::to_string(index) + "]";
}

}}} // namespace cv::dnn::llm
