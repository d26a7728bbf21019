// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// GGUF (v2, v3; little endian) layout: magic "GGUF", uint32 version, uint64 tensor count,
// uint64 metadata count, metadata (string key, uint32 type, value), tensor infos (string
// name, uint32 n_dims, uint64 ne[n_dims], uint32 type, uint64 offset), padding to
// general.alignment, tensor data. Everything read from the file is checked against the bytes
// that remain before it is used, so a hostile count cannot cause a large allocation.

#include "../../precomp.hpp"
#include "gguf_model_file.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const size_t kMaxStringBytes = 64u << 20;  // longer strings (chat templates are ~10 KB) are corrupt
const int kMaxArrayNesting = 8;
const int kMaxDims = 4;
// Containers grow as items are actually read: a count is only trusted up to this much.
const uint64 kReserveLimit = 1 << 16;

const char* valueTypeName(uint32_t t)
{
    static const char* names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                  "bool", "string", "array", "uint64", "int64", "float64"};
    return t < 13 ? names[t] : "invalid";
}

size_t scalarBytes(GGUFValueType t)
{
    switch (t)
    {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

// Bounds-checked little-endian reader; errors name the file, the offset and what was read.
class Cursor
{
public:
    Cursor(const uchar* data, size_t size, const std::string& path) : data_(data), size_(size), path_(path) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    [[noreturn]] void fail(const std::string& what, const std::string& why) const
    {
        CV_Error(Error::StsParseError, format("GGUF '%s': %s at offset %zu: %s",
                                              path_.c_str(), what.c_str(), pos_, why.c_str()));
    }

    void need(size_t n, const std::string& what) const
    {
        if (n > remaining())
            fail(what, format("needs %zu bytes but the file ends after %zu (truncated?)", n, remaining()));
    }

    template <typename T> T read(const std::string& what)
    {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string readString(const std::string& what)
    {
        const uint64 len = read<uint64>(what + " (string length)");
        if (len > kMaxStringBytes)
            fail(what, format("string length %llu is implausible", (unsigned long long)len));
        need((size_t)len, what + " (string)");
        std::string s(reinterpret_cast<const char*>(data_ + pos_), (size_t)len);
        pos_ += (size_t)len;
        return s;
    }

    // A count of items of at least minItemBytes each must fit in the rest of the file.
    uint64 readCount(const std::string& what, size_t minItemBytes)
    {
        const uint64 n = read<uint64>(what);
        if (n > remaining() / std::max<size_t>(minItemBytes, 1))
            fail(what, format("count %llu cannot fit in the %zu bytes left", (unsigned long long)n, remaining()));
        return n;
    }

    void seek(size_t pos) { CV_Assert(pos <= size_); pos_ = pos; }

private:
    const uchar* data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string& path_;
};

GGUFValueType readValueType(Cursor& c, const std::string& what)
{
    const uint32_t t = c.read<uint32_t>(what + " (value type)");
    if (t > GGUF_FLOAT64)
        c.fail(what, format("unknown value type %u", t));
    return (GGUFValueType)t;
}

void readScalar(Cursor& c, GGUFValueType t, GGUFValue& v, const std::string& what)
{
    v.type = t;
    switch (t)
    {
    case GGUF_UINT8:  v.u = c.read<uint8_t>(what);  v.i = (int64)v.u; v.f = (double)v.u; break;
    case GGUF_INT8:   v.i = c.read<int8_t>(what);   v.f = (double)v.i; break;
    case GGUF_UINT16: v.u = c.read<uint16_t>(what); v.i = (int64)v.u; v.f = (double)v.u; break;
    case GGUF_INT16:  v.i = c.read<int16_t>(what);  v.f = (double)v.i; break;
    case GGUF_UINT32: v.u = c.read<uint32_t>(what); v.i = (int64)v.u; v.f = (double)v.u; break;
    case GGUF_INT32:  v.i = c.read<int32_t>(what);  v.f = (double)v.i; break;
    case GGUF_UINT64: v.u = c.read<uint64>(what);   v.i = (int64)v.u; v.f = (double)v.u; break;
    case GGUF_INT64:  v.i = c.read<int64_t>(what);  v.f = (double)v.i; break;
    case GGUF_FLOAT32: v.f = c.read<float>(what); break;
    case GGUF_FLOAT64: v.f = c.read<double>(what); break;
    case GGUF_BOOL:
    {
        const uint8_t b = c.read<uint8_t>(what);
        if (b > 1)
            c.fail(what, format("bool value %u is neither 0 nor 1", b));
        v.i = b; v.f = b;
        break;
    }
    case GGUF_STRING: v.str = c.readString(what); break;
    default: c.fail(what, "not a scalar type");
    }
}

void readValue(Cursor& c, GGUFValueType t, GGUFValue& v, const std::string& what, int depth)
{
    if (t != GGUF_ARRAY)
        return readScalar(c, t, v, what);
    if (depth >= kMaxArrayNesting)
        c.fail(what, "arrays nested too deeply");
    v.type = GGUF_ARRAY;
    v.itemType = readValueType(c, what + " (array item type)");
    // Smallest encoding of one item: its bytes for scalars, a length for strings, and a
    // type plus a count for arrays.
    const size_t minItem = v.itemType == GGUF_STRING ? 8 : v.itemType == GGUF_ARRAY ? 12 : scalarBytes(v.itemType);
    const uint64 n = c.readCount(what + " (array length)", minItem);
    if (v.itemType == GGUF_STRING)
    {
        v.strings.reserve((size_t)std::min<uint64>(n, kReserveLimit));
        for (uint64 k = 0; k < n; k++)
            v.strings.push_back(c.readString(what));
    }
    else if (v.itemType == GGUF_ARRAY)
    {
        // Each item is an array value itself: its item type, count and items (no extra tag).
        for (uint64 k = 0; k < n; k++)
        {
            v.arrays.emplace_back();
            readValue(c, GGUF_ARRAY, v.arrays.back(), what, depth + 1);
        }
    }
    else
    {
        v.numbers.reserve((size_t)std::min<uint64>(n, kReserveLimit));
        GGUFValue item;
        for (uint64 k = 0; k < n; k++)
        {
            readScalar(c, v.itemType, item, what);
            v.numbers.push_back(item.f);
        }
    }
}

} // namespace

std::string GGUFValue::typeName() const
{
    if (type != GGUF_ARRAY)
        return valueTypeName(type);
    if (itemType == GGUF_ARRAY && !arrays.empty())
        return "array[" + arrays[0].typeName() + "]";
    return std::string("array[") + valueTypeName(itemType) + "]";
}

GGUFModelFile::GGUFModelFile(const std::string& path)
    : file_(std::make_shared<MappedFile>(path))
{
    parse();
}

void GGUFModelFile::parse()
{
    const std::string& path = file_->path();
    Cursor c(file_->data(), file_->size(), path);

    const uint32_t magic = c.read<uint32_t>("magic");
    if (std::memcmp(&magic, "GGUF", 4) != 0)
        CV_Error(Error::StsParseError, format("GGUF '%s': not a GGUF file (bad magic)", path.c_str()));
    const uint32_t version = c.read<uint32_t>("version");
    if (version == 0x03000000u || version == 0x02000000u)
        CV_Error(Error::StsParseError, format("GGUF '%s': big-endian files are not supported", path.c_str()));
    if (version != 2 && version != 3)
        CV_Error(Error::StsParseError, format("GGUF '%s': version %u is not supported (2 and 3 are)", path.c_str(), version));
    version_ = (int)version;

    // Each tensor info takes at least 8 (name) + 4 + 8 + 4 + 8 bytes; each key/value 8 + 4 + 1.
    const uint64 nTensors = c.readCount("tensor count", 32);
    const uint64 nKV = c.readCount("metadata count", 13);

    for (uint64 k = 0; k < nKV; k++)
    {
        const std::string key = c.readString(format("metadata key #%llu", (unsigned long long)k));
        const std::string what = "metadata '" + key + "'";
        if (metadata_.count(key))
            c.fail(what, "duplicate key");
        GGUFValue v;
        readValue(c, readValueType(c, what), v, what, 0);
        metadata_.emplace(key, std::move(v));
        keys_.push_back(key);
    }

    size_t alignment = 32;
    if (const GGUFValue* a = find("general.alignment"))
    {
        if (a->type != GGUF_UINT32 || a->u == 0 || (a->u & (a->u - 1)) != 0)
            CV_Error(Error::StsParseError, format("GGUF '%s': general.alignment must be a uint32 power of two",
                                                  path.c_str()));
        alignment = (size_t)a->u;
    }

    tensors_.reserve((size_t)std::min<uint64>(nTensors, kReserveLimit));
    for (uint64 k = 0; k < nTensors; k++)
    {
        tensors_.emplace_back();
        GGUFTensor& t = tensors_.back();
        t.name = c.readString(format("tensor info #%llu name", (unsigned long long)k));
        const std::string what = "tensor '" + t.name + "'";
        if (tensorIndex_.count(t.name))
            c.fail(what, "duplicate tensor name");
        tensorIndex_[t.name] = (size_t)k;
        const uint32_t nDims = c.read<uint32_t>(what + " (n_dims)");
        if (nDims < 1 || nDims > (uint32_t)kMaxDims)
            c.fail(what, format("%u dimensions (1 to %d allowed)", nDims, kMaxDims));
        t.nDims = (int)nDims;
        int64 elements = 1;
        for (uint32_t d = 0; d < nDims; d++)
        {
            const uint64 ne = c.read<uint64>(what + " (dimension)");
            if (ne == 0 || ne > (uint64)INT64_MAX / (uint64)elements)
                c.fail(what, format("dimension %u is %llu (zero or overflowing)", d, (unsigned long long)ne));
            t.ne[d] = (int64)ne;
            elements *= (int64)ne;
        }
        const uint32_t type = c.read<uint32_t>(what + " (type)");
        const GGMLTypeTraits& traits = ggmlTypeTraits(type);
        if (!traits.name)
            c.fail(what, format("unknown ggml type id %u", type));
        t.type = (GGMLType)type;
        if (t.ne[0] % traits.blockSize != 0)
            c.fail(what, format("row length %lld is not a multiple of the %s block size %d",
                                (long long)t.ne[0], traits.name, traits.blockSize));
        const uint64 blocks = (uint64)(elements / traits.blockSize);
        if (blocks > (uint64)SIZE_MAX / (uint64)traits.typeSize)
            c.fail(what, "size overflows");
        t.nbytes = (size_t)blocks * (size_t)traits.typeSize;
        t.offset = c.read<uint64>(what + " (offset)");
        if (t.offset % alignment != 0)
            c.fail(what, format("data offset %llu is not aligned to %zu", (unsigned long long)t.offset, alignment));
    }

    // The data section starts at the next multiple of the alignment.
    const size_t infoEnd = c.pos();
    const size_t dataStart = (infoEnd + alignment - 1) / alignment * alignment;
    const size_t fileSize = file_->size();
    for (GGUFTensor& t : tensors_)
    {
        const size_t available = dataStart <= fileSize ? fileSize - dataStart : 0;
        if (t.offset > available || t.nbytes > available - (size_t)t.offset)
            CV_Error(Error::StsParseError, format(
                "GGUF '%s': tensor '%s' (%zu bytes at data offset %llu) lies past the end of the file (%zu bytes of data)",
                path.c_str(), t.name.c_str(), t.nbytes, (unsigned long long)t.offset, available));
        t.data = file_->data() + dataStart + (size_t)t.offset;
    }
}

const GGUFValue* GGUFModelFile::find(const std::string& key) const
{
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

const GGUFValue& GGUFModelFile::value(const std::string& key) const
{
    const GGUFValue* v = find(key);
    if (!v)
        CV_Error(Error::StsObjectNotFound, format("GGUF '%s': metadata key '%s' is missing", path().c_str(), key.c_str()));
    return *v;
}

static void checkType(const GGUFModelFile& f, const std::string& key, const GGUFValue& v, bool ok, const char* expected)
{
    if (!ok)
        CV_Error(Error::StsBadArg, format("GGUF '%s': metadata '%s' is %s, not %s",
                                          f.path().c_str(), key.c_str(), v.typeName().c_str(), expected));
}

static bool isNumeric(GGUFValueType t)
{
    return t != GGUF_STRING && t != GGUF_ARRAY;
}

String GGUFModelFile::getString(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, v.type == GGUF_STRING, "a string");
    return v.str;
}

double GGUFModelFile::getNumber(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, isNumeric(v.type), "a number");
    return v.f;
}

int64 GGUFModelFile::getInt(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, isNumeric(v.type) && v.type != GGUF_FLOAT32 && v.type != GGUF_FLOAT64, "an integer");
    if (v.type == GGUF_UINT64 && v.u > (uint64)INT64_MAX)
        CV_Error(Error::StsOutOfRange, format("GGUF '%s': metadata '%s' = %llu does not fit int64",
                                              path().c_str(), key.c_str(), (unsigned long long)v.u));
    return v.i;
}

bool GGUFModelFile::getBool(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, v.type == GGUF_BOOL, "a bool");
    return v.i != 0;
}

std::vector<String> GGUFModelFile::getStringArray(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, v.type == GGUF_ARRAY && v.itemType == GGUF_STRING, "an array of strings");
    return std::vector<String>(v.strings.begin(), v.strings.end());
}

std::vector<double> GGUFModelFile::getNumberArray(const String& key) const
{
    const GGUFValue& v = value(key);
    checkType(*this, key, v, v.type == GGUF_ARRAY && isNumeric(v.itemType), "an array of numbers");
    return v.numbers;
}

std::vector<String> GGUFModelFile::getTensorNames() const
{
    std::vector<String> names;
    names.reserve(tensors_.size());
    for (const GGUFTensor& t : tensors_)
        names.push_back(t.name);
    return names;
}

const GGUFTensor* GGUFModelFile::findTensor(const std::string& name) const
{
    auto it = tensorIndex_.find(name);
    return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

const GGUFTensor& GGUFModelFile::tensor(const std::string& name) const
{
    const GGUFTensor* t = findTensor(name);
    if (!t)
        CV_Error(Error::StsObjectNotFound, format("GGUF '%s': no tensor '%s'", path().c_str(), name.c_str()));
    return *t;
}

String GGUFModelFile::getTensorType(const String& name) const
{
    return ggmlTypeName(tensor(name).type);
}

std::vector<int> GGUFModelFile::getTensorShape(const String& name) const
{
    const GGUFTensor* t = &tensor(name);
    std::vector<int> shape;
    for (int d = 0; d < t->nDims; d++)
    {
        if (t->ne[d] > INT_MAX)
            CV_Error(Error::StsOutOfRange, format("GGUF: tensor '%s' dimension %lld does not fit int",
                                                  name.c_str(), (long long)t->ne[d]));
        shape.push_back((int)t->ne[d]);
    }
    return shape;
}

}}} // namespace cv::dnn::llm

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

GGUFFile::~GGUFFile() {}

Ptr<GGUFFile> GGUFFile::open(const String& path)
{
    return makePtr<llm::GGUFModelFile>(path);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
