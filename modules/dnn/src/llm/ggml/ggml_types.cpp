// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The table of ggml types and the scalar reference decoders, written from the block layouts
// of ggml_blocks.hpp.

#include "../../precomp.hpp"
#include "ggml_types.hpp"
#include "ggml_blocks.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// F32 / F16 / BF16 rows.
void rowF32(const uchar* src, float* dst, int64 n)
{
    std::memcpy(dst, src, (size_t)n * sizeof(float));
}

void rowF16(const uchar* src, float* dst, int64 n)
{
    for (int64 i = 0; i < n; i++)
    {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = halfBitsToFloat(bits);
    }
}

void rowBF16(const uchar* src, float* dst, int64 n)
{
    for (int64 i = 0; i < n; i++)
    {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = bf16BitsToFloat(bits);
    }
}

// Block decoders (block layouts in ggml_blocks.hpp).

// The nibble decoders read a local copy of the quants: y cannot alias it, so the loops
// vectorize (in place, the char reads may alias the float stores and GCC gives up).
void dequantQ4_0(const block_q4_0& b, float* y)
{
    const float d = halfBitsToFloat(b.d);
    uint8_t qs[QK4_0 / 2];
    std::memcpy(qs, b.qs, sizeof(qs));
    for (int j = 0; j < QK4_0 / 2; j++)
    {
        y[j] = ((qs[j] & 0x0F) - 8) * d;
        y[j + QK4_0 / 2] = ((qs[j] >> 4) - 8) * d;
    }
}

void dequantQ4_1(const block_q4_1& b, float* y)
{
    const float d = halfBitsToFloat(b.d), m = halfBitsToFloat(b.m);
    uint8_t qs[QK4_1 / 2];
    std::memcpy(qs, b.qs, sizeof(qs));
    for (int j = 0; j < QK4_1 / 2; j++)
        y[j] = (qs[j] & 0x0F) * d + m;
    for (int j = 0; j < QK4_1 / 2; j++)
        y[j + QK4_1 / 2] = (qs[j] >> 4) * d + m;
}

void dequantQ5_0(const block_q5_0& b, float* y)
{
    const float d = halfBitsToFloat(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    uint8_t qs[QK5_0 / 2];
    std::memcpy(qs, b.qs, sizeof(qs));
    for (int j = 0; j < QK5_0 / 2; j++)
    {
        const int h0 = ((qh >> j) & 1) << 4;
        const int h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = (((qs[j] & 0x0F) | h0) - 16) * d;
        y[j + QK5_0 / 2] = (((qs[j] >> 4) | h1) - 16) * d;
    }
}

void dequantQ5_1(const block_q5_1& b, float* y)
{
    const float d = halfBitsToFloat(b.d), m = halfBitsToFloat(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    uint8_t qs[QK5_1 / 2];
    std::memcpy(qs, b.qs, sizeof(qs));
    for (int j = 0; j < QK5_1 / 2; j++)
    {
        const int h0 = ((qh >> j) & 1) << 4;
        const int h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = ((qs[j] & 0x0F) | h0) * d + m;
        y[j + QK5_1 / 2] = ((qs[j] >> 4) | h1) * d + m;
    }
}

void dequantQ8_0(const block_q8_0& b, float* y)
{
    const float d = halfBitsToFloat(b.d);
    for (int j = 0; j < QK8_0; j++)
        y[j] = b.qs[j] * d;
}

void dequantQ2_K(const block_q2_K& b, float* y)
{
    const float d = halfBitsToFloat(b.d), dmin = halfBitsToFloat(b.dmin);
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int u = 0; u < 2; u++)
            {
                const uchar sc = b.scales[8 * h + 2 * j + u];
                const float dl = d * (sc & 0x0F), ml = dmin * (sc >> 4);
                const uchar* q = b.qs + 32 * h + 16 * u;
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((q[l] >> (2 * j)) & 3) - ml;
            }
}

void dequantQ3_K(const block_q3_K& b, float* y)
{
    const float d = halfBitsToFloat(b.d);
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int u = 0; u < 2; u++)
            {
                const float dl = d * scaleQ3_K(b.scales, 8 * h + 2 * j + u);
                const uchar* q = b.qs + 32 * h + 16 * u;
                const uchar* hm = b.hmask + 16 * u;
                const int bit = 1 << (4 * h + j);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * (((q[l] >> (2 * j)) & 3) - ((hm[l] & bit) ? 0 : 4));
            }
}

void dequantQ4_K(const block_q4_K& b, float* y)
{
    const float d = halfBitsToFloat(b.d), dmin = halfBitsToFloat(b.dmin);
    const uchar* q = b.qs;
    for (int j = 0; j < QK_K / 64; j++)
    {
        int sc, m;
        scaleMinK4(2 * j, b.scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scaleMinK4(2 * j + 1, b.scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        for (int l = 0; l < 32; l++)
            y[l] = d1 * (q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; l++)
            y[32 + l] = d2 * (q[l] >> 4) - m2;
        q += 32;
        y += 64;
    }
}

void dequantQ5_K(const block_q5_K& b, float* y)
{
    const float d = halfBitsToFloat(b.d), dmin = halfBitsToFloat(b.dmin);
    const uchar* ql = b.qs;
    for (int j = 0; j < QK_K / 64; j++)
    {
        int sc, m;
        scaleMinK4(2 * j, b.scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scaleMinK4(2 * j + 1, b.scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const int u1 = 1 << (2 * j), u2 = 2 << (2 * j);
        for (int l = 0; l < 32; l++)
            y[l] = d1 * ((ql[l] & 0x0F) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++)
            y[32 + l] = d2 * ((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        y += 64;
    }
}

void dequantQ6_K(const block_q6_K& b, float* y)
{
    const uchar* ql = b.ql;
    const uchar* qh = b.qh;
    const int8_t* sc = b.scales;
    const float d = halfBitsToFloat(b.d);
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

// As ggml's dequantize_row_mxfp4: the doubled E2M1 value times the half scale (exact products;
// for the subnormal scales of e < 2 built from their bits, so that flushed denormals do not zero them).
void dequantMXFP4(const block_mxfp4& b, float* y)
{
    const float d = mxfp4HalfScale(b.e);
    uint8_t qs[QK_MXFP4 / 2];
    std::memcpy(qs, b.qs, sizeof(qs));
    if (b.e < 2)
    {
        for (int j = 0; j < QK_MXFP4 / 2; j++)
        {
            y[j] = mxfp4TinyValue(b.e, kMXFP4Values[qs[j] & 0x0F]);
            y[j + QK_MXFP4 / 2] = mxfp4TinyValue(b.e, kMXFP4Values[qs[j] >> 4]);
        }
        return;
    }
    for (int j = 0; j < QK_MXFP4 / 2; j++)
    {
        y[j] = kMXFP4Values[qs[j] & 0x0F] * d;
        y[j + QK_MXFP4 / 2] = kMXFP4Values[qs[j] >> 4] * d;
    }
}

// A row decoder from a block decoder.
template <typename Block, int N, void (*decodeBlock)(const Block&, float*)>
void blocksToFloat(const uchar* src, float* dst, int64 n)
{
    const Block* blocks = reinterpret_cast<const Block*>(src);
    for (int64 i = 0; i < n / N; i++)
        decodeBlock(blocks[i], dst + i * N);
}

// Table rows: types we compute with (they have a decoder), and types we only recognise.
constexpr GGMLTypeTraits computable(const char* name, int blockSize, int typeSize, RowDecoder toFloat)
{
    return {name, blockSize, typeSize, true, toFloat};
}

constexpr GGMLTypeTraits storedOnly(const char* name, int blockSize, int typeSize)
{
    return {name, blockSize, typeSize, false, nullptr};
}

constexpr GGMLTypeTraits kNotAType = {nullptr, 0, 0, false, nullptr};

// Every ggml type id (ggml.h), so that files with other types parse and fail clearly only when
// a tensor of such a type is used. A type becomes computable with its decoder here; its
// kernels go to kernels/ggml_kernels.simd.hpp (doc/adding_a_weight_type.md).
const GGMLTypeTraits kTraits[GGML_TYPE_COUNT] = {
    /*  0 */ computable("F32", 1, 4, rowF32),
    /*  1 */ computable("F16", 1, 2, rowF16),
    /*  2 */ computable("Q4_0", QK4_0, sizeof(block_q4_0), blocksToFloat<block_q4_0, QK4_0, dequantQ4_0>),
    /*  3 */ computable("Q4_1", QK4_1, sizeof(block_q4_1), blocksToFloat<block_q4_1, QK4_1, dequantQ4_1>),
    /*  4 */ kNotAType, kNotAType,
    /*  6 */ computable("Q5_0", QK5_0, sizeof(block_q5_0), blocksToFloat<block_q5_0, QK5_0, dequantQ5_0>),
    /*  7 */ computable("Q5_1", QK5_1, sizeof(block_q5_1), blocksToFloat<block_q5_1, QK5_1, dequantQ5_1>),
    /*  8 */ computable("Q8_0", QK8_0, sizeof(block_q8_0), blocksToFloat<block_q8_0, QK8_0, dequantQ8_0>),
    /*  9 */ storedOnly("Q8_1", 32, 36),
    /* 10 */ computable("Q2_K", QK_K, sizeof(block_q2_K), blocksToFloat<block_q2_K, QK_K, dequantQ2_K>),
    /* 11 */ computable("Q3_K", QK_K, sizeof(block_q3_K), blocksToFloat<block_q3_K, QK_K, dequantQ3_K>),
    /* 12 */ computable("Q4_K", QK_K, sizeof(block_q4_K), blocksToFloat<block_q4_K, QK_K, dequantQ4_K>),
    /* 13 */ computable("Q5_K", QK_K, sizeof(block_q5_K), blocksToFloat<block_q5_K, QK_K, dequantQ5_K>),
    /* 14 */ computable("Q6_K", QK_K, sizeof(block_q6_K), blocksToFloat<block_q6_K, QK_K, dequantQ6_K>),
    /* 15 */ storedOnly("Q8_K", QK_K, 292),
    /* 16 */ storedOnly("IQ2_XXS", QK_K, 66), storedOnly("IQ2_XS", QK_K, 74),
    /* 18 */ storedOnly("IQ3_XXS", QK_K, 98), storedOnly("IQ1_S", QK_K, 50),
    /* 20 */ storedOnly("IQ4_NL", 32, 18), storedOnly("IQ3_S", QK_K, 110),
    /* 22 */ storedOnly("IQ2_S", QK_K, 82), storedOnly("IQ4_XS", QK_K, 136),
    /* 24 */ storedOnly("I8", 1, 1), storedOnly("I16", 1, 2), storedOnly("I32", 1, 4), storedOnly("I64", 1, 8),
    /* 28 */ storedOnly("F64", 1, 8), storedOnly("IQ1_M", QK_K, 56),
    /* 30 */ computable("BF16", 1, 2, rowBF16),
    /* 31 */ kNotAType, kNotAType, kNotAType,
    /* 34 */ storedOnly("TQ1_0", QK_K, 54), storedOnly("TQ2_0", QK_K, 66),
    /* 36 */ kNotAType, kNotAType, kNotAType,
    /* 39 */ computable("MXFP4", QK_MXFP4, sizeof(block_mxfp4), blocksToFloat<block_mxfp4, QK_MXFP4, dequantMXFP4>),
};

} // namespace

const GGMLTypeTraits& ggmlTypeTraits(uint32_t type)
{
    return type < (uint32_t)GGML_TYPE_COUNT ? kTraits[type] : kNotAType;
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
    t.toFloat(static_cast<const uchar*>(src), dst, n);
}

}}} // namespace cv::dnn::llm
