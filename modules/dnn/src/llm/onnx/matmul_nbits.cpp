// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "matmul_nbits.hpp"

#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

constexpr int kGGMLBlock = 32;

uint16_t floatToHalfBits(float x)
{
    const hfloat h(x);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof(bits));
    return bits;
}

// A scale that float16 holds without losing more than rounding (normal range, finite).
bool fitsHalf(float s)
{
    const float a = std::fabs(s);
    return std::isfinite(s) && (a == 0.f || (a >= 6.1035156e-05f && a <= 65504.f));
}

struct Layout
{
    int64 blocks = 0, blobBytes = 0;
    bool packedZeroPoints = false;  // uint8, `bits` per zero point; else one float per block
};

Layout validate(const MatMulNBitsWeights& w)
{
    if (w.in <= 0 || w.out <= 0)
        CV_Error(Error::StsParseError, format("attributes K = %d and N = %d must be positive", w.in, w.out));
    if (w.bits != 2 && w.bits != 4 && w.bits != 8)
        CV_Error(Error::StsParseError, format("bits = %d is not supported (2, 4 and 8 are)", w.bits));
    if (w.blockSize < 16 || (w.blockSize & (w.blockSize - 1)) != 0)
        CV_Error(Error::StsParseError, format("block_size = %d must be a power of two, at least 16", w.blockSize));
    Layout l;
    l.blocks = (w.in + w.blockSize - 1) / w.blockSize;
    l.blobBytes = (int64)w.blockSize * w.bits / 8;
    const OnnxTensor& b = *w.packed;
    if (b.dataType != ONNX_UINT8 || b.total() != w.out * l.blocks * l.blobBytes)
        CV_Error(Error::StsParseError, format("B must be uint8 [N=%d, %lld blocks, %lld bytes]", w.out,
                                              (long long)l.blocks, (long long)l.blobBytes));
    const OnnxTensor& s = *w.scales;
    if ((s.dataType != ONNX_FLOAT && s.dataType != ONNX_FLOAT16 && s.dataType != ONNX_BFLOAT16) ||
        s.total() != w.out * l.blocks)
        CV_Error(Error::StsParseError, format("scales must be %lld float values (N x blocks)", (long long)(w.out * l.blocks)));
    if (w.zeroPoints)
    {
        const OnnxTensor& z = *w.zeroPoints;
        l.packedZeroPoints = z.dataType == ONNX_UINT8;
        const int64 expected = l.packedZeroPoints ? w.out * ((l.blocks * w.bits + 7) / 8) : w.out * l.blocks;
        if ((!l.packedZeroPoints && z.dataType != s.dataType) || z.total() != expected)
            CV_Error(Error::StsParseError, format("zero_points must be %lld values: uint8 packed %d bits each, "
                                                  "or of the scales' type", (long long)expected, w.bits));
    }
    return l;
}

// The quantized value of element k of row n (0 .. 2^bits - 1).
inline int quantAt(const MatMulNBitsWeights& w, const Layout& l, int n, int k)
{
    const uchar* blob = w.packed->data + ((int64)n * l.blocks + k / w.blockSize) * l.blobBytes;
    const int bit = (k % w.blockSize) * w.bits;
    return (blob[bit / 8] >> (bit % 8)) & ((1 << w.bits) - 1);
}

inline float zeroPointAt(const MatMulNBitsWeights& w, const Layout& l, int n, int64 block)
{
    if (!w.zeroPoints)
        return (float)(1 << (w.bits - 1));
    if (!l.packedZeroPoints)
        return (float)w.zeroPoints->at(n * l.blocks + block);
    const int64 rowBytes = (l.blocks * w.bits + 7) / 8;
    const int64 bit = block * w.bits;
    const uchar byte = w.zeroPoints->data[n * rowBytes + bit / 8];
    return (float)((byte >> (bit % 8)) & ((1 << w.bits) - 1));
}

ConvertedWeights toFloatRows(const MatMulNBitsWeights& w, const Layout& l)
{
    ConvertedWeights c;
    c.type = GGML_F32;
    c.rows.create(w.out, w.in * (int)sizeof(float), CV_8U);
    for (int n = 0; n < w.out; n++)
    {
        float* row = c.rows.ptr<float>(n);
        for (int k = 0; k < w.in; k++)
        {
            const int64 block = k / w.blockSize;
            const float scale = (float)w.scales->at(n * l.blocks + block);
            row[k] = scale * ((float)quantAt(w, l, n, k) - zeroPointAt(w, l, n, block));
        }
    }
    return c;
}

// Q4_0 (scale, 16 bytes: element j low nibble, j + 16 high), Q4_1 (scale, min, same nibbles)
// or Q8_0 (scale, 32 signed bytes), one ggml block per 32 elements.
ConvertedWeights toGGMLBlocks(const MatMulNBitsWeights& w, const Layout& l, GGMLType type)
{
    ConvertedWeights c;
    c.type = type;
    const size_t blockBytes = type == GGML_Q4_0 ? 18 : type == GGML_Q4_1 ? 20 : 34;
    const int blocksPerRow = w.in / kGGMLBlock;
    c.rows.create(w.out, (int)(blocksPerRow * blockBytes), CV_8U);
    for (int n = 0; n < w.out; n++)
    {
        uchar* out = c.rows.ptr<uchar>(n);
        for (int b = 0; b < blocksPerRow; b++, out += blockBytes)
        {
            const int k0 = b * kGGMLBlock;
            const int64 block = k0 / w.blockSize;
            const float scale = (float)w.scales->at(n * l.blocks + block);
            const uint16_t d = floatToHalfBits(scale);
            std::memcpy(out, &d, 2);
            if (type == GGML_Q8_0)
            {
                for (int j = 0; j < kGGMLBlock; j++)
                    out[2 + j] = (uchar)(int8_t)(quantAt(w, l, n, k0 + j) - 128);
                continue;
            }
            uchar* nibbles = out + 2;
            if (type == GGML_Q4_1)
            {
                const uint16_t m = floatToHalfBits(-scale * zeroPointAt(w, l, n, block));
                std::memcpy(out + 2, &m, 2);
                nibbles = out + 4;
            }
            for (int j = 0; j < kGGMLBlock / 2; j++)
                nibbles[j] = (uchar)(quantAt(w, l, n, k0 + j) | (quantAt(w, l, n, k0 + j + 16) << 4));
        }
    }
    return c;
}

} // namespace

ConvertedWeights convertMatMulNBits(const MatMulNBitsWeights& w)
{
    CV_Assert(w.packed && w.scales);
    const Layout l = validate(w);
    bool blocksFit = w.in % kGGMLBlock == 0 && w.blockSize % kGGMLBlock == 0;
    if (w.zeroPoints && !l.packedZeroPoints)  // float zero points: Q4_1's min from them
        blocksFit = blocksFit && w.bits == 4;
    for (int n = 0; blocksFit && n < w.out; n++)
        for (int64 b = 0; blocksFit && b < l.blocks; b++)
        {
            const float scale = (float)w.scales->at(n * l.blocks + b);
            blocksFit = fitsHalf(scale) && fitsHalf(scale * zeroPointAt(w, l, n, b));  // Q4_1's min too
        }
    if (blocksFit && w.bits == 4)
        return toGGMLBlocks(w, l, w.zeroPoints ? GGML_Q4_1 : GGML_Q4_0);
    if (blocksFit && w.bits == 8 && !w.zeroPoints)
        return toGGMLBlocks(w, l, GGML_Q8_0);
    return toFloatRows(w, l);
}

}}} // namespace cv::dnn::llm
