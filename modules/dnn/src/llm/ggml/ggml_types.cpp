// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Block layouts follow ggml's (ggml-common.h); the decoders are written from those layouts.

#include "../../precomp.hpp"
#include "ggml_types.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const int QK = 32;     // elements per block of the 32-element formats
const int QK_K = 256;  // elements per super-block of the K formats

const GGMLTypeTraits kUnknown = {nullptr, 0, 0, false};

const GGMLTypeTraits kTraits[] = {
    /*  0 */ {"F32", 1, 4, true},       {"F16", 1, 2, true},
    /*  2 */ {"Q4_0", QK, 18, true},    {"Q4_1", QK, 20, true},
    /*  4 */ {nullptr, 0, 0, false},    {nullptr, 0, 0, false},
    /*  6 */ {"Q5_0", QK, 22, true},    {"Q5_1", QK, 24, true},
    /*  8 */ {"Q8_0", QK, 34, true},    {"Q8_1", QK, 36, false},
    /* 10 */ {"Q2_K", QK_K, 84, false}, {"Q3_K", QK_K, 110, false},
    /* 12 */ {"Q4_K", QK_K, 144, true}, {"Q5_K", QK_K, 176, true},
    /* 14 */ {"Q6_K", QK_K, 210, true}, {"Q8_K", QK_K, 292, false},
    /* 16 */ {"IQ2_XXS", QK_K, 66, false}, {"IQ2_XS", QK_K, 74, false},
    /* 18 */ {"IQ3_XXS", QK_K, 98, false}, {"IQ1_S", QK_K, 50, false},
    /* 20 */ {"IQ4_NL", QK, 18, false},  {"IQ3_S", QK_K, 110, false},
    /* 22 */ {"IQ2_S", QK_K, 82, false},  {"IQ4_XS", QK_K, 136, false},
    /* 24 */ {"I8", 1, 1, false},  {"I16", 1, 2, false}, {"I32", 1, 4, false}, {"I64", 1, 8, false},
    /* 28 */ {"F64", 1, 8, false}, {"IQ1_M", QK_K, 56, false}, {"BF16", 1, 2, true},
    /* 31 */ {nullptr, 0, 0, false}, {nullptr, 0, 0, false}, {nullptr, 0, 0, false},
    /* 34 */ {"TQ1_0", QK_K, 54, false}, {"TQ2_0", QK_K, 66, false},
    /* 36 */ {nullptr, 0, 0, false}, {nullptr, 0, 0, false}, {nullptr, 0, 0, false},
    /* 39 */ {"MXFP4", QK, 17, false},
};

inline float halfToFloat(const uchar* p)
{
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return halfBitsToFloat(bits);
}

inline float bf16ToFloat(const uchar* p)
{
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return bf16BitsToFloat(bits);
}

// Q4_0: d (f16), 16 bytes; element j in the low nibble of byte j, j+16 in its high nibble.
void dequantQ4_0(const uchar* b, float* y)
{
    const float d = halfToFloat(b);
    const uchar* qs = b + 2;
    for (int j = 0; j < QK / 2; j++)
    {
        y[j] = ((qs[j] & 0x0F) - 8) * d;
        y[j + QK / 2] = ((qs[j] >> 4) - 8) * d;
    }
}

// Q4_1: d, m (f16), 16 bytes of nibbles as Q4_0; y = q * d + m.
void dequantQ4_1(const uchar* b, float* y)
{
    const float d = halfToFloat(b), m = halfToFloat(b + 2);
    const uchar* qs = b + 4;
    for (int j = 0; j < QK / 2; j++)
    {
        y[j] = (qs[j] & 0x0F) * d + m;
        y[j + QK / 2] = (qs[j] >> 4) * d + m;
    }
}

// Q5_0: d (f16), 32 high bits (qh, little endian), 16 bytes of low nibbles; q - 16.
void dequantQ5_0(const uchar* b, float* y)
{
    const float d = halfToFloat(b);
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    const uchar* qs = b + 6;
    for (int j = 0; j < QK / 2; j++)
    {
        const int h0 = ((qh >> j) & 1) << 4;
        const int h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = (((qs[j] & 0x0F) | h0) - 16) * d;
        y[j + QK / 2] = (((qs[j] >> 4) | h1) - 16) * d;
    }
}

// Q5_1: d, m (f16), qh, low nibbles; y = q * d + m.
void dequantQ5_1(const uchar* b, float* y)
{
    const float d = halfToFloat(b), m = halfToFloat(b + 2);
    uint32_t qh;
    std::memcpy(&qh, b + 4, 4);
    const uchar* qs = b + 8;
    for (int j = 0; j < QK / 2; j++)
    {
        const int h0 = ((qh >> j) & 1) << 4;
        const int h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = ((qs[j] & 0x0F) | h0) * d + m;
        y[j + QK / 2] = ((qs[j] >> 4) | h1) * d + m;
    }
}

// Q8_0: d (f16), 32 int8.
void dequantQ8_0(const uchar* b, float* y)
{
    const float d = halfToFloat(b);
    const signed char* qs = reinterpret_cast<const signed char*>(b + 2);
    for (int j = 0; j < QK; j++)
        y[j] = qs[j] * d;
}

// Q4_K: d, dmin (f16), 12 bytes of scales/mins, 128 bytes of nibbles. Each 64 elements use
// 32 bytes: the low nibbles for the first 32 (sub-block 2i), the high ones for the next 32.
void dequantQ4_K(const uchar* b, float* y)
{
    const float d = halfToFloat(b), dmin = halfToFloat(b + 2);
    const uchar* scales = b + 4;
    const uchar* q = b + 16;
    for (int j = 0; j < QK_K / 64; j++)
    {
        int sc, m;
        scaleMinK4(2 * j, scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scaleMinK4(2 * j + 1, scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        for (int l = 0; l < 32; l++)
            y[l] = d1 * (q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; l++)
            y[32 + l] = d2 * (q[l] >> 4) - m2;
        q += 32;
        y += 64;
    }
}

// Q5_K: as Q4_K plus 32 bytes of high bits: bit 2i of qh[l] for sub-block 2i, bit 2i+1 for 2i+1.
void dequantQ5_K(const uchar* b, float* y)
{
    const float d = halfToFloat(b), dmin = halfToFloat(b + 2);
    const uchar* scales = b + 4;
    const uchar* qh = b + 16;
    const uchar* ql = b + 48;
    for (int j = 0; j < QK_K / 64; j++)
    {
        int sc, m;
        scaleMinK4(2 * j, scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scaleMinK4(2 * j + 1, scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const int u1 = 1 << (2 * j), u2 = 2 << (2 * j);
        for (int l = 0; l < 32; l++)
            y[l] = d1 * ((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++)
            y[32 + l] = d2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        y += 64;
    }
}

// Q6_K: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 int8 scales, d (f16); q - 32.
void dequantQ6_K(const uchar* b, float* y)
{
    const uchar* ql = b;
    const uchar* qh = b + 128;
    const signed char* sc = reinterpret_cast<const signed char*>(b + 192);
    const float d = halfToFloat(b + 208);
    for (int n = 0; n < QK_K; n += 128)
    {
        for (int l = 0; l < 32; l++)
        {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * sc[is + 0] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

typedef void (*BlockDecoder)(const uchar* block, float* y);

BlockDecoder blockDecoder(GGMLType type)
{
    switch (type)
    {
    case GGML_Q4_0: return dequantQ4_0;
    case GGML_Q4_1: return dequantQ4_1;
    case GGML_Q5_0: return dequantQ5_0;
    case GGML_Q5_1: return dequantQ5_1;
    case GGML_Q8_0: return dequantQ8_0;
    case GGML_Q4_K: return dequantQ4_K;
    case GGML_Q5_K: return dequantQ5_K;
    case GGML_Q6_K: return dequantQ6_K;
    default: return nullptr;
    }
}

} // namespace

const GGMLTypeTraits& ggmlTypeTraits(uint32_t type)
{
    if (type < sizeof(kTraits) / sizeof(kTraits[0]))
        return kTraits[type];
    return kUnknown;
}

std::string ggmlTypeName(uint32_t type)
{
    const GGMLTypeTraits& t = ggmlTypeTraits(type);
    return t.name ? std::string(t.name) : format("type %u", type);
}

size_t ggmlRowBytes(GGMLType type, int64 n)
{
    const GGMLTypeTraits& t = ggmlTypeTraits(type);
    CV_Assert(t.name && n >= 0 && n % t.blockSize == 0);
    return (size_t)(n / t.blockSize) * t.typeSize;
}

void dequantizeRow(GGMLType type, const void* src, float* dst, int64 n)
{
    const GGMLTypeTraits& t = ggmlTypeTraits(type);
    if (!t.dequantizable)
        CV_Error(Error::StsNotImplemented, "GGUF: tensor type " + ggmlTypeName(type) + " is not supported");
    CV_Assert(n % t.blockSize == 0);
    const uchar* s = static_cast<const uchar*>(src);
    switch (type)
    {
    case GGML_F32:
        std::memcpy(dst, s, (size_t)n * sizeof(float));
        return;
    case GGML_F16:
        for (int64 i = 0; i < n; i++)
            dst[i] = halfToFloat(s + 2 * i);
        return;
    case GGML_BF16:
        for (int64 i = 0; i < n; i++)
            dst[i] = bf16ToFloat(s + 2 * i);
        return;
    default:
        break;
    }
    const BlockDecoder decode = blockDecoder(type);
    CV_Assert(decode);
    for (int64 i = 0; i < n / t.blockSize; i++)
        decode(s + i * t.typeSize, dst + i * t.blockSize);
}

}}} // namespace cv::dnn::llm
