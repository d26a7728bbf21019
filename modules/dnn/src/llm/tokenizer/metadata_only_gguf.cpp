// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "metadata_only_gguf.hpp"

namespace cv {
namespace dnn {
namespace llm {

MetadataOnlyGGUF::MetadataOnlyGGUF(const std::string& source) : source_(source) {}

MetadataOnlyGGUF::Value& MetadataOnlyGGUF::insert(const std::string& key, Kind kind, const std::string& typeName)
{
    auto inserted = values_.emplace(key, Value());
    if (inserted.second)
        keys_.push_back(key);
    Value& v = inserted.first->second;
    v = Value();
    v.kind = kind;
    v.typeName = typeName;
    return v;
}

void MetadataOnlyGGUF::setString(const std::string& key, const std::string& value)
{
    insert(key, KIND_STRING, "string").text = value;
}

void MetadataOnlyGGUF::setInt32(const std::string& key, int value)
{
    insert(key, KIND_INT32, "int32").number = value;
}

void MetadataOnlyGGUF::setBool(const std::string& key, bool value)
{
    insert(key, KIND_BOOL, "bool").number = value ? 1 : 0;
}

void MetadataOnlyGGUF::setStringArray(const std::string& key, std::vector<std::string> values)
{
    insert(key, KIND_STRING_ARRAY, "array[string]").strings = std::move(values);
}

void MetadataOnlyGGUF::setNumberArray(const std::string& key, std::vector<double> values, const std::string& elementType)
{
    insert(key, KIND_NUMBER_ARRAY, "array[" + elementType + "]").numbers = std::move(values);
}

const MetadataOnlyGGUF::Value& MetadataOnlyGGUF::value(const std::string& key, Kind kind, const char* expected) const
{
    const auto it = values_.find(key);
    if (it == values_.end())
        CV_Error(Error::StsObjectNotFound, format("%s: metadata key '%s' is missing", source_.c_str(), key.c_str()));
    const Value& v = it->second;
    const bool numeric = v.kind == KIND_INT32 || v.kind == KIND_BOOL;
    const bool ok = v.kind == kind || (kind == KIND_INT32 && numeric);
    if (!ok)
        CV_Error(Error::StsBadArg, format("%s: metadata '%s' is %s, not %s",
                                          source_.c_str(), key.c_str(), v.typeName.c_str(), expected));
    return v;
}

String MetadataOnlyGGUF::getMetadataType(const String& key) const
{
    const auto it = values_.find(key);
    if (it == values_.end())
        CV_Error(Error::StsObjectNotFound, format("%s: metadata key '%s' is missing", source_.c_str(), key.c_str()));
    return it->second.typeName;
}

String MetadataOnlyGGUF::getString(const String& key) const
{
    return value(key, KIND_STRING, "a string").text;
}

double MetadataOnlyGGUF::getNumber(const String& key) const
{
    return value(key, KIND_INT32, "a number").number;
}

int64 MetadataOnlyGGUF::getInt(const String& key) const
{
    const Value& v = value(key, KIND_INT32, "an integer");
    if (v.kind != KIND_INT32)
        CV_Error(Error::StsBadArg, format("%s: metadata '%s' is %s, not an integer",
                                          source_.c_str(), key.c_str(), v.typeName.c_str()));
    return (int64)v.number;
}

bool MetadataOnlyGGUF::getBool(const String& key) const
{
    const Value& v = value(key, KIND_BOOL, "a bool");
    if (v.kind != KIND_BOOL)
        CV_Error(Error::StsBadArg, format("%s: metadata '%s' is %s, not a bool",
                                          source_.c_str(), key.c_str(), v.typeName.c_str()));
    return v.number != 0;
}

std::vector<String> MetadataOnlyGGUF::getStringArray(const String& key) const
{
    return value(key, KIND_STRING_ARRAY, "an array of strings").strings;
}

std::vector<double> MetadataOnlyGGUF::getNumberArray(const String& key) const
{
    return value(key, KIND_NUMBER_ARRAY, "an array of numbers").numbers;
}

void MetadataOnlyGGUF::noTensor(const std::string& name) const
{
    CV_Error(Error::StsObjectNotFound, format("%s: no tensor '%s' (it holds metadata only)", source_.c_str(), name.c_str()));
}

String MetadataOnlyGGUF::getTensorType(const String& name) const { noTensor(name); }
std::vector<int> MetadataOnlyGGUF::getTensorShape(const String& name) const { noTensor(name); }
size_t MetadataOnlyGGUF::getTensorBytes(const String& name) const { noTensor(name); }

}}} // namespace cv::dnn::llm
