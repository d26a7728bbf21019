// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interleaved_weights.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

template <typename Block>
const Block& blockOf(const uchar* rows, size_t rowBytes, int row, int unit)
{
    return reinterpret_cast<const Block*>(rows + (size_t)row * rowBytes)[unit];
}

// A row's 4-byte chunk c of quants into chunk c of the group, at row j's place.
inline void putChunk(uint8_t (*chunks)[32], int c, int j, const uint8_t* quants)
{
    std::memcpy(&chunks[c][4 * j], quants + 4 * c, 4);
}

void packQ4_0(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q4_0x8* out = reinterpret_cast<block_q4_0x8*>(dst);
    for (int b = 0; b < units; b++, out++)
        for (int j = 0; j < 8; j++)
        {
            const block_q4_0& in = blockOf<block_q4_0>(rows, rowBytes, j, b);
            out->d[j] = in.d;
            for (int c = 0; c < 4; c++)
                putChunk(out->qs, c, j, in.qs);
        }
}

void packQ4_1(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q4_1x8* out = reinterpret_cast<block_q4_1x8*>(dst);
    for (int b = 0; b < units; b++, out++)
        for (int j = 0; j < 8; j++)
        {
            const block_q4_1& in = blockOf<block_q4_1>(rows, rowBytes, j, b);
            out->d[j] = in.d;
            out->m[j] = in.m;
            for (int c = 0; c < 4; c++)
                putChunk(out->qs, c, j, in.qs);
        }
}

void packMXFP4(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_mxfp4x8* out = reinterpret_cast<block_mxfp4x8*>(dst);
    for (int b = 0; b < units; b++, out++)
        for (int j = 0; j < 8; j++)
        {
            const block_mxfp4& in = blockOf<block_mxfp4>(rows, rowBytes, j, b);
            out->e[j] = in.e;
            for (int c = 0; c < 4; c++)
                putChunk(out->qs, c, j, in.qs);
        }
}

void packQ8_0(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q8_0x8* out = reinterpret_cast<block_q8_0x8*>(dst);
    for (int b = 0; b < units; b++, out++)
        for (int j = 0; j < 8; j++)
        {
            const block_q8_0& in = blockOf<block_q8_0>(rows, rowBytes, j, b);
            out->d[j] = in.d;
            for (int c = 0; c < 8; c++)
                std::memcpy(&out->qs[c][4 * j], in.qs + 4 * c, 4);
        }
}

// Bits 4c..4c+3 (word 0) and 16+4c..16+4c+3 (word 1) of row j's qh, at bits 4j..4j+3.
template <typename Block>
void putFifthBits(uint32_t (*words)[2], int j, const Block& in)
{
    uint32_t qh;
    std::memcpy(&qh, in.qh, 4);
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 4; t++)
        {
            words[c][0] |= ((qh >> (4 * c + t)) & 1u) << (4 * j + t);
            words[c][1] |= ((qh >> (16 + 4 * c + t)) & 1u) << (4 * j + t);
        }
}

void packQ5_0(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q5_0x8* out = reinterpret_cast<block_q5_0x8*>(dst);
    for (int b = 0; b < units; b++, out++)
    {
        std::memset(out->qh, 0, sizeof(out->qh));
        for (int j = 0; j < 8; j++)
        {
            const block_q5_0& in = blockOf<block_q5_0>(rows, rowBytes, j, b);
            out->d[j] = in.d;
            putFifthBits(out->qh, j, in);
            for (int c = 0; c < 4; c++)
                putChunk(out->qs, c, j, in.qs);
        }
    }
}

void packQ5_1(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q5_1x8* out = reinterpret_cast<block_q5_1x8*>(dst);
    for (int b = 0; b < units; b++, out++)
    {
        std::memset(out->qh, 0, sizeof(out->qh));
        for (int j = 0; j < 8; j++)
        {
            const block_q5_1& in = blockOf<block_q5_1>(rows, rowBytes, j, b);
            out->d[j] = in.d;
            out->m[j] = in.m;
            putFifthBits(out->qh, j, in);
            for (int c = 0; c < 4; c++)
                putChunk(out->qs, c, j, in.qs);
        }
    }
}

// The parts Q4_K and Q5_K share: d, dmin, unpacked scales and mins, nibble chunks.
template <typename Out, typename Block>
void packKHeaderAndNibbles(Out* out, int i, const Block& in)
{
    out->d[i] = in.d;
    out->dmin[i] = in.dmin;
    for (int sub = 0; sub < 8; sub++)
    {
        int sc, m;
        scaleMinK4(sub, in.scales, sc, m);
        out->scales[sub][i] = (uint8_t)sc;
        out->mins[sub][i] = (uint8_t)m;
    }
    for (int j = 0; j < 4; j++)
        for (int c = 0; c < 8; c++)
            std::memcpy(&out->qs[j][c][4 * i], in.qs + 32 * j + 4 * c, 4);
}

void packQ4_K(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q4_Kx8* out = reinterpret_cast<block_q4_Kx8*>(dst);
    for (int sb = 0; sb < units; sb++, out++)
        for (int i = 0; i < 8; i++)
            packKHeaderAndNibbles(out, i, blockOf<block_q4_K>(rows, rowBytes, i, sb));
}

void packQ5_K(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q5_Kx8* out = reinterpret_cast<block_q5_Kx8*>(dst);
    for (int sb = 0; sb < units; sb++, out++)
    {
        std::memset(out->qh, 0, sizeof(out->qh));
        for (int i = 0; i < 8; i++)
        {
            const block_q5_K& in = blockOf<block_q5_K>(rows, rowBytes, i, sb);
            packKHeaderAndNibbles(out, i, in);
            for (int j = 0; j < 4; j++)
                for (int h = 0; h < 2; h++)
                    for (int c = 0; c < 8; c++)
                        for (int t = 0; t < 4; t++)
                            out->qh[j][h][4 * i + t] |= (uint8_t)(((in.qh[4 * c + t] >> (2 * j + h)) & 1) << c);
        }
    }
}

void packQ6_K(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q6_Kx8* out = reinterpret_cast<block_q6_Kx8*>(dst);
    for (int sb = 0; sb < units; sb++, out++)
        for (int i = 0; i < 8; i++)
        {
            const block_q6_K& in = blockOf<block_q6_K>(rows, rowBytes, i, sb);
            out->d[i] = in.d;
            for (int s = 0; s < 16; s++)
                out->scales[s][i] = in.scales[s];
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 8; c++)
                {
                    block_q6_Kx8::Chunk& chunk = out->chunks[h][c];
                    std::memcpy(&chunk.ql[0][4 * i], in.ql + 64 * h + 4 * c, 4);
                    std::memcpy(&chunk.ql[1][4 * i], in.ql + 64 * h + 32 + 4 * c, 4);
                    std::memcpy(&chunk.qh[4 * i], in.qh + 32 * h + 4 * c, 4);
                }
        }
}

// The 2-bit chunks of Q2_K / Q3_K: per half h, chunk c = qs[32h + 4c ..] of each row.
template <typename Group, typename Block>
void putLowBitChunks(Group* out, int i, const Block& in)
{
    for (int h = 0; h < 2; h++)
        for (int c = 0; c < 8; c++)
            std::memcpy(&out->qs[h][c][4 * i], in.qs + 32 * h + 4 * c, 4);
}

void packQ2_K(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q2_Kx8* out = reinterpret_cast<block_q2_Kx8*>(dst);
    for (int sb = 0; sb < units; sb++, out++)
        for (int i = 0; i < 8; i++)
        {
            const block_q2_K& in = blockOf<block_q2_K>(rows, rowBytes, i, sb);
            out->d[i] = in.d;
            out->dmin[i] = in.dmin;
            for (int g = 0; g < 16; g++)
                out->scales[g][i] = in.scales[g];
            putLowBitChunks(out, i, in);
        }
}

void packQ3_K(const uchar* rows, size_t rowBytes, int units, uchar* dst)
{
    block_q3_Kx8* out = reinterpret_cast<block_q3_Kx8*>(dst);
    for (int sb = 0; sb < units; sb++, out++)
        for (int i = 0; i < 8; i++)
        {
            const block_q3_K& in = blockOf<block_q3_K>(rows, rowBytes, i, sb);
            out->d[i] = in.d;
            for (int g = 0; g < 16; g++)
                out->scales[g][i] = (int8_t)scaleQ3_K(in.scales, g);
            for (int c = 0; c < 8; c++)
                putChunk(out->hmask, c, i, in.hmask);
            putLowBitChunks(out, i, in);
        }
}

} // namespace

const InterleavedLayout kInterleavedQ4_0 = {QK4_0, sizeof(block_q4_0x8), packQ4_0};
const InterleavedLayout kInterleavedQ4_1 = {QK4_1, sizeof(block_q4_1x8), packQ4_1};
const InterleavedLayout kInterleavedQ5_0 = {QK5_0, sizeof(block_q5_0x8), packQ5_0};
const InterleavedLayout kInterleavedQ5_1 = {QK5_1, sizeof(block_q5_1x8), packQ5_1};
const InterleavedLayout kInterleavedQ8_0 = {QK8_0, sizeof(block_q8_0x8), packQ8_0};
const InterleavedLayout kInterleavedQ2_K = {QK_K, sizeof(block_q2_Kx8), packQ2_K};
const InterleavedLayout kInterleavedQ3_K = {QK_K, sizeof(block_q3_Kx8), packQ3_K};
const InterleavedLayout kInterleavedQ4_K = {QK_K, sizeof(block_q4_Kx8), packQ4_K};
const InterleavedLayout kInterleavedQ5_K = {QK_K, sizeof(block_q5_Kx8), packQ5_K};
const InterleavedLayout kInterleavedQ6_K = {QK_K, sizeof(block_q6_Kx8), packQ6_K};
const InterleavedLayout kInterleavedMXFP4 = {QK_MXFP4, sizeof(block_mxfp4x8), packMXFP4};

Mat interleaveRows8(const InterleavedLayout& layout, const uchar* rows, size_t rowBytes, int groups, int in)
{
    CV_Assert(layout.pack && in % layout.unitInputs == 0);
    const int units = in / layout.unitInputs;
    Mat packed(groups, units * layout.unitBytes, CV_8U);
    for (int g = 0; g < groups; g++)
        layout.pack(rows + (size_t)8 * g * rowBytes, rowBytes, units, packed.ptr<uchar>(g));
    return packed;
}

}}} // namespace cv::dnn::llm
