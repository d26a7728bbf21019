// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// An ONNX model file as the LLM importer reads it: the parsed graph and its tensors
// (initializers and Constant nodes), inline or in external data files. A model file is
// untrusted input: every shape, size, offset and external path is checked before use.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_ONNX_MODEL_FILE_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_ONNX_MODEL_FILE_HPP

#include <opencv2/core.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../common/mapped_file.hpp"

namespace opencv_onnx {
class ModelProto;
class GraphProto;
class NodeProto;
class TensorProto;
class AttributeProto;
}

namespace cv {
namespace dnn {
namespace llm {

//! ONNX TensorProto data type ids used here.
enum OnnxDataType
{
    ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5, ONNX_INT32 = 6,
    ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11,
    ONNX_UINT32 = 12, ONNX_UINT64 = 13, ONNX_BFLOAT16 = 16
};

//! Bytes per element of an ONNX data type (0 for types without a fixed size).
size_t onnxElementSize(int dataType);

//! A tensor's validated data: `bytes` bytes at `data`, kept alive by `owner`.
struct OnnxTensor
{
    std::string name;
    int dataType = 0;
    std::vector<int64> shape;
    const uchar* data = nullptr;
    size_t bytes = 0;
    std::shared_ptr<void> owner;          // the mapping or buffer that holds the bytes
    std::shared_ptr<MappedFile> mapping;  // set when the bytes lie in a mapped external file

    int64 total() const;
    //! Element i converted to double (any numeric type).
    double at(int64 i) const;
    //! All elements as float32, as a 1 x total() Mat (or rows x cols for 2-D tensors).
    Mat toFloat() const;
    //! The raw bytes as a rows x rowBytes CV_8U Mat: wrapped without copying when mapped.
    Mat rawRows(int64 rows, int64 rowBytes) const;
};

class OnnxModelFile
{
public:
    explicit OnnxModelFile(const std::string& path);
    ~OnnxModelFile();

    const std::string& path() const { return path_; }
    const opencv_onnx::GraphProto& graph() const;

    //! An initializer by name, or nullptr.
    const OnnxTensor* findInitializer(const std::string& name) const;
    //! A tensor given inside the graph (a Constant node's value).
    OnnxTensor readTensor(const opencv_onnx::TensorProto& proto) const;

    //! Opset version of a domain ("" = ai.onnx), or -1 when the model does not import it.
    int opsetVersion(const std::string& domain) const;

    [[noreturn]] void fail(const std::string& message) const;

private:
    const uchar* externalData(const std::string& tensorName, const std::vector<std::pair<std::string, std::string>>& entries,
                              size_t bytes, std::shared_ptr<MappedFile>& mapping) const;

    std::string path_, folder_;
    std::unique_ptr<opencv_onnx::ModelProto> model_;
    std::map<std::string, int> initializerIndex_;
    mutable std::map<std::string, OnnxTensor> initializers_;
    mutable std::map<std::string, std::shared_ptr<MappedFile>> externalFiles_;
};

//! Attribute helpers: the named attribute of a node or `def` when absent.
int64 onnxIntAttribute(const opencv_onnx::NodeProto& node, const std::string& name, int64 def);
float onnxFloatAttribute(const opencv_onnx::NodeProto& node, const std::string& name, float def);
//! Display name of a node for messages: "'name' (domain.OpType)".
std::string onnxNodeLabel(const opencv_onnx::NodeProto& node);

}}} // namespace cv::dnn::llm

#endif
