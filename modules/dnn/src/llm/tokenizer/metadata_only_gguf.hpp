// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// A GGUFFile held in memory, with metadata and no tensors. Tokenizers read their model from
// GGUF metadata (tokenizer.ggml.*); other formats (Hugging Face tokenizer.json) are converted
// into such a table so that one code path builds every tokenizer.

#ifndef OPENCV_DNN_SRC_LLM_TOKENIZER_METADATA_ONLY_GGUF_HPP
#define OPENCV_DNN_SRC_LLM_TOKENIZER_METADATA_ONLY_GGUF_HPP

#include <opencv2/dnn/gguf.hpp>

#include <map>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class MetadataOnlyGGUF CV_FINAL : public GGUFFile
{
public:
    //! @param source what the metadata came from, for error messages ("tokenizer.json at ...").
    explicit MetadataOnlyGGUF(const std::string& source);

    // Setters replace an existing key. Types are reported as GGUF names ("int32", "array[string]").
    void setString(const std::string& key, const std::string& value);
    void setInt32(const std::string& key, int value);
    void setBool(const std::string& key, bool value);
    void setStringArray(const std::string& key, std::vector<std::string> values);
    //! An array of numbers; elementType is the GGUF name reported for its items ("float32", "int32").
    void setNumberArray(const std::string& key, std::vector<double> values, const std::string& elementType);

    const std::string& source() const { return source_; }

    // GGUFFile
    int getVersion() const CV_OVERRIDE { return 3; }
    std::vector<String> getMetadataKeys() const CV_OVERRIDE { return keys_; }
    bool hasMetadata(const String& key) const CV_OVERRIDE { return values_.count(key) != 0; }
    String getMetadataType(const String& key) const CV_OVERRIDE;
    String getString(const String& key) const CV_OVERRIDE;
    double getNumber(const String& key) const CV_OVERRIDE;
    int64 getInt(const String& key) const CV_OVERRIDE;
    bool getBool(const String& key) const CV_OVERRIDE;
    std::vector<String> getStringArray(const String& key) const CV_OVERRIDE;
    std::vector<double> getNumberArray(const String& key) const CV_OVERRIDE;
    std::vector<String> getTensorNames() const CV_OVERRIDE { return std::vector<String>(); }
    bool hasTensor(const String&) const CV_OVERRIDE { return false; }
    String getTensorType(const String& name) const CV_OVERRIDE;
    std::vector<int> getTensorShape(const String& name) const CV_OVERRIDE;
    size_t getTensorBytes(const String& name) const CV_OVERRIDE;

private:
    enum Kind { KIND_STRING, KIND_INT32, KIND_BOOL, KIND_STRING_ARRAY, KIND_NUMBER_ARRAY };
    struct Value
    {
        Kind kind = KIND_STRING;
        std::string typeName;
        std::string text;
        double number = 0;  // int32 and bool values
        std::vector<std::string> strings;
        std::vector<double> numbers;
    };

    Value& insert(const std::string& key, Kind kind, const std::string& typeName);
    const Value& value(const std::string& key, Kind kind, const char* expected) const;
    [[noreturn]] void noTensor(const std::string& name) const;

    std::string source_;
    std::vector<String> keys_;  // in insertion order, like a file's
    std::map<std::string, Value> values_;
};

}}} // namespace cv::dnn::llm

#endif
