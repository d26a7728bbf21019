// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The GGUF parser: metadata and tensor table of a mapped file, validated on open.

#ifndef OPENCV_DNN_SRC_LLM_GGUF_MODEL_FILE_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_MODEL_FILE_HPP

#include <opencv2/dnn/gguf.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../ggml/ggml_types.hpp"
#include "../common/mapped_file.hpp"

namespace cv {
namespace dnn {
namespace llm {

enum GGUFValueType
{
    GGUF_UINT8 = 0, GGUF_INT8 = 1, GGUF_UINT16 = 2, GGUF_INT16 = 3, GGUF_UINT32 = 4,
    GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9,
    GGUF_UINT64 = 10, GGUF_INT64 = 11, GGUF_FLOAT64 = 12
};

struct GGUFValue
{
    GGUFValueType type = GGUF_UINT8;
    GGUFValueType itemType = GGUF_UINT8;  //!< element type of an array
    int64 i = 0;                          //!< integer and bool values (uint64 above INT64_MAX: see u)
    uint64 u = 0;
    double f = 0;                         //!< every numeric value, as a double
    std::string str;
    std::vector<std::string> strings;     //!< array of strings
    std::vector<double> numbers;          //!< array of numbers or bools
    std::vector<GGUFValue> arrays;        //!< array of arrays

    std::string typeName() const;
    size_t arraySize() const { return strings.size() + numbers.size() + arrays.size(); }
};

struct GGUFTensor
{
    std::string name;
    GGMLType type = GGML_F32;
    int nDims = 0;
    int64 ne[4] = {1, 1, 1, 1};   //!< ggml order: ne[0] is contiguous
    uint64 offset = 0;            //!< from the start of the data section
    size_t nbytes = 0;
    const uchar* data = nullptr;  //!< inside the mapping

    int64 rowLength() const { return ne[0]; }
    int64 rowCount() const { return ne[1] * ne[2] * ne[3]; }
    size_t rowBytes() const { return nbytes / (size_t)rowCount(); }
};

class GGUFModelFile CV_FINAL : public GGUFFile
{
public:
    explicit GGUFModelFile(const std::string& path);

    // GGUFFile
    int getVersion() const CV_OVERRIDE { return version_; }
    std::vector<String> getMetadataKeys() const CV_OVERRIDE { return keys_; }
    bool hasMetadata(const String& key) const CV_OVERRIDE { return metadata_.count(key) != 0; }
    String getMetadataType(const String& key) const CV_OVERRIDE { return value(key).typeName(); }
    String getString(const String& key) const CV_OVERRIDE;
    double getNumber(const String& key) const CV_OVERRIDE;
    int64 getInt(const String& key) const CV_OVERRIDE;
    bool getBool(const String& key) const CV_OVERRIDE;
    std::vector<String> getStringArray(const String& key) const CV_OVERRIDE;
    std::vector<double> getNumberArray(const String& key) const CV_OVERRIDE;
    std::vector<String> getTensorNames() const CV_OVERRIDE;
    bool hasTensor(const String& name) const CV_OVERRIDE { return tensorIndex_.count(name) != 0; }
    String getTensorType(const String& name) const CV_OVERRIDE;
    std::vector<int> getTensorShape(const String& name) const CV_OVERRIDE;
    size_t getTensorBytes(const String& name) const CV_OVERRIDE { return tensor(name).nbytes; }

    //! The value of a key; throws naming the key when it is absent.
    const GGUFValue& value(const std::string& key) const;
    const GGUFValue* find(const std::string& key) const;
    //! Tensor by name, or nullptr.
    const GGUFTensor* findTensor(const std::string& name) const;
    //! Tensor by name; throws naming it when absent.
    const GGUFTensor& tensor(const std::string& name) const;
    const std::vector<GGUFTensor>& tensors() const { return tensors_; }
    const std::shared_ptr<MappedFile>& mapping() const { return file_; }
    const std::string& path() const { return file_->path(); }

private:
    void parse();

    std::shared_ptr<MappedFile> file_;
    int version_ = 0;
    std::vector<String> keys_;  // in file order
    std::map<std::string, GGUFValue> metadata_;
    std::vector<GGUFTensor> tensors_;
    std::map<std::string, size_t> tensorIndex_;
};

}}} // namespace cv::dnn::llm

#endif
