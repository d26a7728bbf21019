// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interleaved_weights.hpp"
#include "ggml_kernels.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

bool hasInterleavedLayout(GGMLType type)
{
    return (type == GGML_Q4_0 || type == GGML_Q4_1 || type == GGML_Q5_0 || type == GGML_Q5_1 || type == GGML_Q8_0 ||
            type == GGML_Q4_K || type == GGML_Q5_K || type == GGML_Q6_K) && hasIntegerDot(type);
}

static size_t interleavedGroupBytes(GGMLType type, int blocks)
{
    switch (type)
    {
    case GGML_Q4_K: return (size_t)blocks / 8 * 1184;
    case GGML_Q5_K: return (size_t)blocks / 8 * 1440;
    case GGML_Q6_K: return (size_t)blocks / 8 * 1680;
    case GGML_Q4_1: return (size_t)blocks * 8 * 20;
    case GGML_Q5_0: return (size_t)blocks * 8 * 22;
    case GGML_Q5_1: return (size_t)blocks * 8 * 24;
    default: return (size_t)blocks * 8 * (type == GGML_Q4_0 ? 18 : 34);
    }
}

namespace {

// Q4_K: per super-block of 8 rows: d[8], dmin[8] (float16), the 6-bit scales and mins unpacked
// to bytes sc[sub][row], m[sub][row], then per 64 inputs j the 32 bytes of nibbles of each row
// in 4-byte chunks, row i at 4i of chunk c (low nibbles: sub-block 2j, high: 2j + 1).
// Q5_K: the same, then per 64 inputs j and chunk c two 32-bit words of fifth bits (bit 4i + t:
// bit 2j, low nibbles, or 2j + 1, high, of qh[4c + t] of row i) at 160 + 64j + 8c, and the
// nibbles from 416 on.
void interleaveQ4KOrQ5K(GGMLType type, const uchar* rows, size_t rowBytes, int g, int superBlocks, uchar* dst)
{
    const bool q5 = type == GGML_Q5_K;
    const size_t blockBytes = q5 ? 176 : 144, quants = q5 ? 48 : 16, nibbles = q5 ? 416 : 160;
    for (int sb = 0; sb < superBlocks; sb++, dst += q5 ? 1440 : 1184)
        for (int i = 0; i < 8; i++)
        {
            const uchar* block = rows + (size_t)(8 * g + i) * rowBytes + (size_t)sb * blockBytes;
            std::memcpy(dst + 2 * i, block, 2);
            std::memcpy(dst + 16 + 2 * i, block + 2, 2);
            for (int sub = 0; sub < 8; sub++)
            {
                int sc, m;
                scaleMinK4(sub, block + 4, sc, m);
                dst[32 + 8 * sub + i] = (uchar)sc;
                dst[96 + 8 * sub + i] = (uchar)m;
            }
            for (int j = 0; j < 4; j++)
                for (int c = 0; c < 8; c++)
                {
                    std::memcpy(dst + nibbles + 256 * j + 32 * c + 4 * i, block + quants + 32 * j + 4 * c, 4);
                    if (!q5)
                        continue;
                    uint32_t lo, hi;  // this row's 4 bits of the chunk's two words
                    std::memcpy(&lo, dst + 160 + 64 * j + 8 * c, 4);
                    std::memcpy(&hi, dst + 160 + 64 * j + 8 * c + 4, 4);
                    if (i == 0)
                        lo = hi = 0;
                    for (int t = 0; t < 4; t++)
                    {
                        const uchar qh = block[16 + 4 * c + t];
                        lo |= (uint32_t)((qh >> (2 * j)) & 1) << (4 * i + t);
                        hi |= (uint32_t)((qh >> (2 * j + 1)) & 1) << (4 * i + t);
                    }
                    std::memcpy(dst + 160 + 64 * j + 8 * c, &lo, 4);
                    std::memcpy(dst + 160 + 64 * j + 8 * c + 4, &hi, 4);
                }
        }
}

// Q6_K: per super-block of 8 rows: d[8] (float16), the int8 scales sc[16][row], then per half
// h (128 inputs) and 4-byte chunk c: A = ql[64h + 4c ..] (low nibbles: quarter 0, high:
// quarter 2), B = ql[64h + 32 + 4c ..] (quarters 1, 3), H = qh[32h + 4c ..] (2 bits per
// quarter), each 32 bytes with row i at 4i. Same size as the 8 blocks.
void interleaveQ6K(const uchar* rows, size_t rowBytes, int g, int superBlocks, uchar* dst)
{
    for (int sb = 0; sb < superBlocks; sb++, dst += 1680)
        for (int i = 0; i < 8; i++)
        {
            const uchar* block = rows + (size_t)(8 * g + i) * rowBytes + (size_t)sb * 210;
            const uchar* ql = block;
            const uchar* qh = block + 128;
            std::memcpy(dst + 2 * i, block + 208, 2);
            for (int s = 0; s < 16; s++)
                dst[16 + 8 * s + i] = block[192 + s];
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 8; c++)
                {
                    uchar* chunk = dst + 144 + 768 * h + 96 * c + 4 * i;
                    std::memcpy(chunk, ql + 64 * h + 4 * c, 4);
                    std::memcpy(chunk + 32, ql + 64 * h + 32 + 4 * c, 4);
                    std::memcpy(chunk + 64, qh + 32 * h + 4 * c, 4);
                }
        }
}

// Q5_0 / Q5_1: the 8 scales (Q5_1: and mins), then per chunk c two 32-bit words of fifth bits,
// bit 4j + t = bit 4c + t (low word) or 16 + 4c + t (high word) of row j's qh, then the
// nibbles in Q4_0's chunks. Same size as the 8 blocks.
void interleaveQ5(GGMLType type, const uchar* rows, size_t rowBytes, int g, int blocks, uchar* dst)
{
    const bool q51 = type == GGML_Q5_1;
    const size_t blockBytes = q51 ? 24 : 22, header = q51 ? 4 : 2;
    const size_t bitWords = 8 * header, nibbles = bitWords + 32;
    for (int b = 0; b < blocks; b++, dst += 8 * blockBytes)
    {
        uint32_t words[8] = {};
        for (int j = 0; j < 8; j++)
        {
            const uchar* block = rows + (size_t)(8 * g + j) * rowBytes + (size_t)b * blockBytes;
            std::memcpy(dst + 2 * j, block, 2);
            if (q51)
                std::memcpy(dst + 16 + 2 * j, block + 2, 2);
            uint32_t qh;
            std::memcpy(&qh, block + header, 4);
            for (int c = 0; c < 4; c++)
            {
                for (int t = 0; t < 4; t++)
                {
                    words[2 * c] |= ((qh >> (4 * c + t)) & 1u) << (4 * j + t);
                    words[2 * c + 1] |= ((qh >> (16 + 4 * c + t)) & 1u) << (4 * j + t);
                }
                std::memcpy(dst + nibbles + 32 * c + 4 * j, block + header + 4 + 4 * c, 4);
            }
        }
        std::memcpy(dst + bitWords, words, sizeof(words));
    }
}

} // namespace

Mat interleaveRows8(GGMLType type, const uchar* rows, size_t rowBytes, int groups, int blocks)
{
    CV_Assert(hasInterleavedLayout(type));
    Mat packed(groups, (int)interleavedGroupBytes(type, blocks), CV_8U);
    if (type == GGML_Q5_0 || type == GGML_Q5_1)
    {
        for (int g = 0; g < groups; g++)
            interleaveQ5(type, rows, rowBytes, g, blocks, packed.ptr<uchar>(g));
        return packed;
    }
    if (type == GGML_Q4_K || type == GGML_Q5_K)
    {
        for (int g = 0; g < groups; g++)
            interleaveQ4KOrQ5K(type, rows, rowBytes, g, blocks / 8, packed.ptr<uchar>(g));
        return packed;
    }
    if (type == GGML_Q6_K)
    {
        for (int g = 0; g < groups; g++)
            interleaveQ6K(rows, rowBytes, g, blocks / 8, packed.ptr<uchar>(g));
        return packed;
    }
    // Q4_0 / Q8_0: 8 scales, then the chunks; Q4_1: 8 scales, 8 mins, then the chunks.
    const size_t blockBytes = type == GGML_Q4_0 ? 18 : type == GGML_Q4_1 ? 20 : 34;
    const size_t headerBytes = type == GGML_Q4_1 ? 4 : 2, quantBytes = blockBytes - headerBytes;
    const size_t chunks = 8 * headerBytes;  // where the chunks start in a group block
    for (int g = 0; g < groups; g++)
    {
        uchar* dst = packed.ptr<uchar>(g);
        for (int b = 0; b < blocks; b++, dst += 8 * blockBytes)
            for (int j = 0; j < 8; j++)
            {
                const uchar* block = rows + (size_t)(8 * g + j) * rowBytes + (size_t)b * blockBytes;
                std::memcpy(dst + 2 * j, block, 2);  // the float16 scale
                if (type == GGML_Q4_1)
                    std::memcpy(dst + 16 + 2 * j, block + 2, 2);  // the float16 min
                for (size_t c = 0; c < quantBytes / 4; c++)
                    std::memcpy(dst + chunks + 32 * c + 4 * j, block + headerBytes + 4 * c, 4);
            }
    }
    return packed;
}

}}} // namespace cv::dnn::llm
