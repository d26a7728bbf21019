// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Reading JSON files (tokenizer.json, tokenizer_config.json, genai_config.json, ...)
// as untrusted input: bounded size and nesting, and typed accessors whose cv::Exception names
// the file and the field ("model.vocab['<s>']") instead of a crash or an nlohmann exception.

#ifndef OPENCV_DNN_SRC_LLM_COMMON_JSON_DOCUMENT_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_JSON_DOCUMENT_HPP

#include <opencv2/core.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace cv {
namespace dnn {
namespace llm {

using Json = nlohmann::json;

class JsonDocument
{
public:
    //! Parses a file of at most maxBytes; throws cv::Exception for I/O, size, syntax and nesting.
    JsonDocument(const std::string& path, size_t maxBytes);

    const Json& root() const { return root_; }
    const std::string& path() const { return path_; }

    //! Throws cv::Exception "<file>: <field> <problem>".
    [[noreturn]] void fail(const std::string& field, const std::string& problem, int code = Error::StsParseError) const;

    //! The member `key` of an object, or nullptr when it is absent or null. `object` must be an object.
    const Json* find(const Json& object, const std::string& field, const char* key) const;
    //! The member `key` of an object; absent or null is an error.
    const Json& get(const Json& object, const std::string& field, const char* key) const;

    std::string asString(const Json& value, const std::string& field) const;
    bool asBool(const Json& value, const std::string& field) const;
    //! An integer in [minValue, maxValue].
    int64 asInteger(const Json& value, const std::string& field, int64 minValue, int64 maxValue) const;
    const Json& asArray(const Json& value, const std::string& field) const;
    const Json& asObject(const Json& value, const std::string& field) const;

    //! An optional string member; `fallback` when absent or null.
    std::string optionalString(const Json& object, const std::string& field, const char* key,
                               const std::string& fallback = std::string()) const;
    //! An optional bool member; `fallback` when absent or null.
    bool optionalBool(const Json& object, const std::string& field, const char* key, bool fallback) const;

private:
    std::string path_;
    Json root_;
};

//! nlohmann-json keeping the order of object members (Python's json does; chat templates
//! render tool schemas in their order).
using OrderedJson = nlohmann::ordered_json;

/** Parses JSON text given in memory (at most maxBytes, nested as deep as files may be); throws
    cv::Exception naming `what` for size, syntax and nesting. */
OrderedJson parseJsonText(const std::string& text, const std::string& what, size_t maxBytes);

//! "field.key", for error messages.
std::string jsonMember(const std::string& field, const std::string& key);
//! "field[index]", for error messages.
std::string jsonElement(const std::string& field, size_t index);

}}} // namespace cv::dnn::llm

#endif
