// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "onnx_model_file.hpp"
#include "../ggml/ggml_types.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_proto.hpp"

#include <google/protobuf/unknown_field_set.h>

#include <cerrno>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

size_t onnxElementSize(int dataType)
{
    switch (dataType)
    {
    case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
    case ONNX_UINT16: case ONNX_INT16: case ONNX_FLOAT16: case ONNX_BFLOAT16: return 2;
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_INT64: case ONNX_DOUBLE: case ONNX_UINT64: return 8;
    default: return 0;
    }
}

int64 OnnxTensor::total() const
{
    int64 n = 1;
    for (int64 d : shape)
        n *= d;
    return n;
}

double OnnxTensor::at(int64 i) const
{
    CV_Assert(i >= 0 && i < total());
    const uchar* p = data + (size_t)i * onnxElementSize(dataType);
    auto load = [p](auto v) { std::memcpy(&v, p, sizeof(v)); return v; };
    switch (dataType)
    {
    case ONNX_FLOAT: return load(0.f);
    case ONNX_DOUBLE: return load(0.0);
    case ONNX_FLOAT16: return halfBitsToFloat(load(uint16_t()));
    case ONNX_BFLOAT16: return bf16BitsToFloat(load(uint16_t()));
    case ONNX_UINT8: case ONNX_BOOL: return *p;
    case ONNX_INT8: return (int8_t)*p;
    case ONNX_UINT16: return load(uint16_t());
    case ONNX_INT16: return load(int16_t());
    case ONNX_INT32: return load(int32_t());
    case ONNX_UINT32: return load(uint32_t());
    case ONNX_INT64: return (double)load(int64_t());
    case ONNX_UINT64: return (double)load(uint64_t());
    }
    CV_Error(Error::StsNotImplemented, format("ONNX tensor '%s': data type %d is not numeric", name.c_str(), dataType));
}

Mat OnnxTensor::toFloat() const
{
    const int64 n = total();
    if (n > INT_MAX)
        CV_Error(Error::StsOutOfRange, format("ONNX tensor '%s' is too large", name.c_str()));
    Mat m = shape.size() == 2 ? Mat((int)shape[0], (int)shape[1], CV_32F) : Mat(1, (int)n, CV_32F);
    float* out = m.ptr<float>();
    if (dataType == ONNX_FLOAT)
        std::memcpy(out, data, (size_t)n * sizeof(float));
    else
        for (int64 i = 0; i < n; i++)
            out[i] = (float)at(i);
    return m;
}

Mat OnnxTensor::rawRows(int64 rows, int64 rowBytes) const
{
    CV_Assert(rows > 0 && rowBytes > 0 && (size_t)(rows * rowBytes) == bytes);
    if (mapping)
        return wrapMappedBytes(mapping, data, rows, rowBytes);
    if (rows > INT_MAX || rowBytes > INT_MAX)
        CV_Error(Error::StsOutOfRange, format("ONNX tensor '%s' is too large", name.c_str()));
    return Mat((int)rows, (int)rowBytes, CV_8U, const_cast<uchar*>(data)).clone();
}

namespace {

const char* dataTypeName(int t)
{
    switch (t)
    {
    case ONNX_FLOAT: return "float"; case ONNX_UINT8: return "uint8"; case ONNX_INT8: return "int8";
    case ONNX_UINT16: return "uint16"; case ONNX_INT16: return "int16"; case ONNX_INT32: return "int32";
    case ONNX_INT64: return "int64"; case ONNX_STRING: return "string"; case ONNX_BOOL: return "bool";
    case ONNX_FLOAT16: return "float16"; case ONNX_DOUBLE: return "double"; case ONNX_UINT32: return "uint32";
    case ONNX_UINT64: return "uint64"; case ONNX_BFLOAT16: return "bfloat16";
    }
    return "unknown";
}

// Typed-field storage (float_data, int32_data, ...) copied into the tensor's own element type.
std::shared_ptr<std::vector<uchar>> typedFieldBytes(const opencv_onnx::TensorProto& p, int t, int64 count, size_t elemSize)
{
    auto buf = std::make_shared<std::vector<uchar>>((size_t)count * elemSize);
    uchar* out = buf->data();
    auto store = [&](int64 i, auto v) { std::memcpy(out + (size_t)i * elemSize, &v, elemSize); };
    for (int64 i = 0; i < count; i++)
    {
        switch (t)
        {
        case ONNX_FLOAT: store(i, p.float_data((int)i)); break;
        case ONNX_DOUBLE: store(i, p.double_data((int)i)); break;
        case ONNX_INT64: store(i, (int64_t)p.int64_data((int)i)); break;
        case ONNX_UINT32: store(i, (uint32_t)p.uint64_data((int)i)); break;
        case ONNX_UINT64: store(i, (uint64_t)p.uint64_data((int)i)); break;
        case ONNX_INT32: store(i, (int32_t)p.int32_data((int)i)); break;
        case ONNX_FLOAT16: case ONNX_BFLOAT16: case ONNX_UINT16: case ONNX_INT16:
            store(i, (uint16_t)p.int32_data((int)i)); break;
        default: store(i, (uint8_t)p.int32_data((int)i)); break;  // 8-bit types and bool
        }
    }
    return buf;
}

int64 typedFieldCount(const opencv_onnx::TensorProto& p, int dataType)
{
    switch (dataType)
    {
    case ONNX_FLOAT: return p.float_data_size();
    case ONNX_DOUBLE: return p.double_data_size();
    case ONNX_INT64: return p.int64_data_size();
    case ONNX_UINT32: case ONNX_UINT64: return p.uint64_data_size();
    default: return p.int32_data_size();
    }
}

// OpenCV's copy of onnx.proto predates external data and bfloat16: TensorProto's fields
// external_data (13, key/value entries), data_location (14) and data types above 15 arrive
// as unknown fields, read here.
struct ProtoExtras
{
    int dataType = 0;
    bool external = false;
    std::vector<std::pair<std::string, std::string>> externalData;
};

ProtoExtras readExtras(const opencv_onnx::TensorProto& p)
{
    using google::protobuf::UnknownField;
    using google::protobuf::UnknownFieldSet;
    ProtoExtras x;
    x.dataType = p.data_type();
    const UnknownFieldSet& unknown = p.GetReflection()->GetUnknownFields(p);
    for (int i = 0; i < unknown.field_count(); i++)
    {
        const UnknownField& f = unknown.field(i);
        if (f.number() == 2 && f.type() == UnknownField::TYPE_VARINT)
            x.dataType = (int)std::min<uint64_t>(f.varint(), INT_MAX);
        else if (f.number() == 14 && f.type() == UnknownField::TYPE_VARINT)
            x.external = f.varint() == 1;
        else if (f.number() == 13 && f.type() == UnknownField::TYPE_LENGTH_DELIMITED)
        {
            UnknownFieldSet entry;
            std::pair<std::string, std::string> kv;
            if (entry.ParseFromString(f.length_delimited()))
                for (int j = 0; j < entry.field_count(); j++)
                    if (entry.field(j).type() == UnknownField::TYPE_LENGTH_DELIMITED)
                        (entry.field(j).number() == 1 ? kv.first : kv.second) = entry.field(j).length_delimited();
            x.externalData.push_back(kv);
        }
    }
    return x;
}

} // namespace

OnnxModelFile::OnnxModelFile(const std::string& path)
    : path_(path), model_(new opencv_onnx::ModelProto())
{
    const size_t slash = path.find_last_of("/\\");
    folder_ = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
    MappedFile file(path);
    if (file.size() > (size_t)INT_MAX)
        fail("the model file is larger than 2 GiB; store the weights as external data");
    if (!model_->ParseFromArray(file.data(), (int)file.size()))
        fail("the file is not a valid ONNX model (protobuf parsing failed)");
    if (!model_->has_graph())
        fail("the model has no graph");
    const auto& initializers = model_->graph().initializer();
    for (int i = 0; i < initializers.size(); i++)
        if (!initializerIndex_.emplace(initializers[i].name(), i).second)
            fail("initializer '" + initializers[i].name() + "' is defined twice");
}

OnnxModelFile::~OnnxModelFile() {}

const opencv_onnx::GraphProto& OnnxModelFile::graph() const
{
    return model_->graph();
}

void OnnxModelFile::fail(const std::string& message) const
{
    CV_Error(Error::StsParseError, format("ONNX '%s': %s", path_.c_str(), message.c_str()));
}

const OnnxTensor* OnnxModelFile::findInitializer(const std::string& name) const
{
    auto it = initializers_.find(name);
    if (it != initializers_.end())
        return &it->second;
    auto index = initializerIndex_.find(name);
    if (index == initializerIndex_.end())
        return nullptr;
    // Read on first use: the importer touches only the tensors the logits need.
    return &(initializers_[name] = readTensor(model_->graph().initializer(index->second)));
}

int OnnxModelFile::opsetVersion(const std::string& domain) const
{
    for (const auto& op : model_->opset_import())
    {
        const std::string d = op.domain() == "ai.onnx" ? std::string() : op.domain();
        if (d == domain)
            return (int)std::min<int64>(op.version(), INT_MAX);
    }
    return -1;
}

OnnxTensor OnnxModelFile::readTensor(const opencv_onnx::TensorProto& p) const
{
    OnnxTensor t;
    t.name = p.name();
    const ProtoExtras extras = readExtras(p);
    t.dataType = extras.dataType;
    const size_t elemSize = onnxElementSize(t.dataType);
    if (elemSize == 0)
        fail(format("tensor '%s' has data type %s (%d), which is not supported", t.name.c_str(),
                    dataTypeName(t.dataType), t.dataType));
    int64 count = 1;
    for (int64 d : p.dims())
    {
        if (d < 0 || (d > 0 && count > ((int64)1 << 40) / d))
            fail(format("tensor '%s' has an invalid or implausibly large shape", t.name.c_str()));
        t.shape.push_back(d);
        count *= d;
    }
    const size_t bytes = (size_t)count * elemSize;
    t.bytes = bytes;
    if (extras.external)
    {
        std::shared_ptr<MappedFile> mapping;
        t.data = externalData(p.name(), extras.externalData, bytes, mapping);
        t.mapping = mapping;
        t.owner = mapping;
    }
    else if (!extras.externalData.empty())
    {
        fail(format("tensor '%s' has external data entries but is not marked as external", t.name.c_str()));
    }
    else if (p.has_raw_data())
    {
        if (p.raw_data().size() != bytes)
            fail(format("tensor '%s' holds %zu bytes of raw data, its shape and type need %zu",
                        t.name.c_str(), p.raw_data().size(), bytes));
        auto buf = std::make_shared<std::vector<uchar>>(p.raw_data().begin(), p.raw_data().end());
        t.data = buf->data();
        t.owner = buf;
    }
    else
    {
        if (typedFieldCount(p, t.dataType) != count)
            fail(format("tensor '%s' holds %lld values, its shape needs %lld", t.name.c_str(),
                        (long long)typedFieldCount(p, t.dataType), (long long)count));
        auto buf = typedFieldBytes(p, t.dataType, count, elemSize);
        t.data = buf->data();
        t.owner = buf;
    }
    return t;
}

const uchar* OnnxModelFile::externalData(const std::string& name, const std::vector<std::pair<std::string, std::string>>& entries,
                                         size_t bytes, std::shared_ptr<MappedFile>& mapping) const
{
    std::string location;
    int64 offset = 0, length = -1;
    for (const auto& kv : entries)
    {
        if (kv.first == "location")
            location = kv.second;
        else if (kv.first == "offset" || kv.first == "length")
        {
            char* end = nullptr;
            errno = 0;
            const long long v = std::strtoll(kv.second.c_str(), &end, 10);
            if (kv.second.empty() || *end != '\0' || errno != 0 || v < 0)
                fail(format("tensor '%s': external data %s '%s' is not a non-negative integer",
                            name.c_str(), kv.first.c_str(), kv.second.c_str()));
            (kv.first == "offset" ? offset : length) = v;
        }
    }
    // Like ONNX Runtime: the data file must lie in the model's folder or below it.
    if (location.empty() || location[0] == '/' || location[0] == '\\' || location.find("..") != std::string::npos ||
        location.find(':') != std::string::npos)
        fail(format("tensor '%s': external data location '%s' must be a relative path inside the model's folder",
                    name.c_str(), location.c_str()));
    if (length >= 0 && (size_t)length != bytes)
        fail(format("tensor '%s': external data length %lld, its shape and type need %zu bytes",
                    name.c_str(), (long long)length, bytes));
    std::shared_ptr<MappedFile>& file = externalFiles_[location];
    if (!file)
    {
        try
        {
            file = std::make_shared<MappedFile>(folder_ + "/" + location);
        }
        catch (const cv::Exception&)
        {
            externalFiles_.erase(location);
            fail(format("tensor '%s': cannot open the external data file '%s'", name.c_str(), location.c_str()));
        }
    }
    if ((uint64_t)offset > file->size() || bytes > file->size() - (size_t)offset)
        fail(format("tensor '%s': external data [%lld, %lld) lies outside '%s' (%zu bytes)", name.c_str(),
                    (long long)offset, (long long)(offset + bytes), location.c_str(), file->size()));
    mapping = file;
    return file->data() + offset;
}

int64 onnxIntAttribute(const opencv_onnx::NodeProto& node, const std::string& name, int64 def)
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
            return a.i();
    return def;
}

float onnxFloatAttribute(const opencv_onnx::NodeProto& node, const std::string& name, float def)
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
            return a.f();
    return def;
}

std::string onnxNodeLabel(const opencv_onnx::NodeProto& node)
{
    const std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                               ? node.op_type() : node.domain() + "." + node.op_type();
    return "'" + node.name() + "' (" + op + ")";
}

}}} // namespace cv::dnn::llm

#endif // HAVE_PROTOBUF
