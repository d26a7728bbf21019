// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Little-endian byte writing and bounded reading for the files this code saves (KV sequence
// files, the sessions inside them). Numbers are written byte by byte, so a file is the same on
// every host. Header-only: the fuzz targets compile kv_cache/*.cpp without llm/common.

#ifndef OPENCV_DNN_SRC_LLM_COMMON_BYTE_IO_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_BYTE_IO_HPP

#include <opencv2/core.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

//! Appends little-endian numbers and raw bytes to `out`.
struct ByteWriter
{
    std::vector<uchar> out;

    void u32(uint32_t v)
    {
        for (int i = 0; i < 4; i++)
            out.push_back((uchar)(v >> (8 * i)));
    }
    void u64(uint64 v)
    {
        for (int i = 0; i < 8; i++)
            out.push_back((uchar)(v >> (8 * i)));
    }
    void i32(int v) { u32((uint32_t)v); }
    void f32(float v)
    {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        u32(bits);
    }
    void bytes(const void* p, size_t n)
    {
        const uchar* b = static_cast<const uchar*>(p);
        out.insert(out.end(), b, b + n);
    }
    //! u32 size, then the bytes.
    void string(const std::string& s)
    {
        u32((uint32_t)s.size());
        bytes(s.data(), s.size());
    }
};

/** Little-endian reading over [data, data + size): a read past the end is a cv::Exception
    (StsParseError) whose message `truncated` builds from the file (`what`), the field, the bytes
    it needs, the offset and the bytes left, so that each format keeps its own wording. */
class ByteReader
{
public:
    typedef std::string (*TruncatedMessage)(const std::string& what, const char* field, uint64 needed,
                                            size_t offset, size_t left);

    ByteReader(const uchar* data, size_t size, const std::string& what, TruncatedMessage truncated)
        : data_(data), size_(size), what_(what), truncated_(truncated) {}

    size_t position() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    //! Raises the truncation error unless `n` more bytes are left.
    void need(uint64 n, const char* field) const
    {
        if (n > (uint64)remaining())
            CV_Error(Error::StsParseError, truncated_(what_, field, n, pos_, remaining()));
    }
    uint32_t u32(const char* field)
    {
        need(4, field);
        uint32_t v = 0;
        for (int i = 0; i < 4; i++)
            v |= (uint32_t)data_[pos_ + i] << (8 * i);
        pos_ += 4;
        return v;
    }
    uint64 u64(const char* field)
    {
        need(8, field);
        uint64 v = 0;
        for (int i = 0; i < 8; i++)
            v |= (uint64)data_[pos_ + i] << (8 * i);
        pos_ += 8;
        return v;
    }
    int i32(const char* field) { return (int)u32(field); }
    //! The next `n` bytes (in place), skipped over.
    const uchar* bytes(uint64 n, const char* field)
    {
        need(n, field);
        const uchar* p = data_ + pos_;
        pos_ += (size_t)n;
        return p;
    }

private:
    const uchar* data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string& what_;
    TruncatedMessage truncated_;
};

}}} // namespace cv::dnn::llm

#endif
