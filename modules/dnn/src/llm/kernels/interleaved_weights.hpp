// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Weights repacked once at load for the integer matmul kernels: groups of 8 output rows, unit by
// unit (a block of 32 inputs, or a K super-block of 256), the 8 rows' data side by side. The
// quants go in 4-byte chunks: chunk c holds bytes 4c..4c+3 of every row's quants, row j at
// offset 4j, so a 256-bit load feeds the 8 rows with the same 4 activations and lane j of every
// vector is row j: no horizontal sums. The structs below are the units (as ggml's
// block_q4_0x8 and friends); the static_asserts give their sizes: every layout keeps the bytes
// of its 8 blocks except Q3_K / Q4_K / Q5_K, whose 6-bit scales (and mins) are unpacked to
// bytes (3.6% / 2.8% larger). Which types have a layout, and the kernels that read it, is said
// by the weight-type table (ggml_kernels.hpp).

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_INTERLEAVED_WEIGHTS_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_INTERLEAVED_WEIGHTS_HPP

#include "../ggml/ggml_types.hpp"
#include "../ggml/ggml_blocks.hpp"

namespace cv {
namespace dnn {
namespace llm {

//! Q4_0: the 8 float16 scales, then 4 chunks of nibbles (element k low, k + 16 high, as Q4_0).
struct block_q4_0x8
{
    uint16_t d[8];
    uint8_t qs[4][32];
};
static_assert(sizeof(block_q4_0x8) == 8 * sizeof(block_q4_0), "block_q4_0x8: wrong size");

//! Q4_1: the 8 scales, the 8 mins, then Q4_0's chunks.
struct block_q4_1x8
{
    uint16_t d[8], m[8];
    uint8_t qs[4][32];
};
static_assert(sizeof(block_q4_1x8) == 8 * sizeof(block_q4_1), "block_q4_1x8: wrong size");

/** Q5_0: the 8 scales; per chunk c two 32-bit words of fifth bits, bit 4j + t = bit 4c + t
    (qh[c][0]: low nibbles) or 16 + 4c + t (qh[c][1]: high nibbles) of row j's qh; then Q4_0's
    chunks of nibbles. */
struct block_q5_0x8
{
    uint16_t d[8];
    uint32_t qh[4][2];
    uint8_t qs[4][32];
};
static_assert(sizeof(block_q5_0x8) == 8 * sizeof(block_q5_0), "block_q5_0x8: wrong size");

//! Q5_1: Q5_0's layout with the 8 mins after the scales.
struct block_q5_1x8
{
    uint16_t d[8], m[8];
    uint32_t qh[4][2];
    uint8_t qs[4][32];
};
static_assert(sizeof(block_q5_1x8) == 8 * sizeof(block_q5_1), "block_q5_1x8: wrong size");

//! Q8_0: the 8 scales, then 8 chunks of int8.
struct block_q8_0x8
{
    uint16_t d[8];
    int8_t qs[8][32];
};
static_assert(sizeof(block_q8_0x8) == 8 * sizeof(block_q8_0), "block_q8_0x8: wrong size");

/** Q4_K, one super-block of the 8 rows: d and dmin, the 6-bit scales and mins unpacked to bytes
    (scales[sub][row]), then per 64 inputs j the 32 bytes of nibbles of each row in 8 chunks
    (low nibbles: sub-block 2j, high: 2j + 1). */
struct block_q4_Kx8
{
    uint16_t d[8], dmin[8];
    uint8_t scales[8][8], mins[8][8];
    uint8_t qs[4][8][32];
};
static_assert(sizeof(block_q4_Kx8) == 8 * sizeof(block_q4_K) + 8 * (16 - K_SCALE_SIZE), "block_q4_Kx8: wrong size");

/** Q5_K: Q4_K's layout plus, per 64 inputs j and nibble half h (low: sub-block 2j, high: 2j + 1),
    32 bytes of fifth bits before the nibbles: bit c of qh[j][h][4i + t] is the fifth bit of the
    quant in byte 4i + t of chunk c (bit 2j + h of qh[4c + t] of row i), so a chunk's 32 fifth
    bits come out of one vector with a shift and a mask. */
struct block_q5_Kx8
{
    uint16_t d[8], dmin[8];
    uint8_t scales[8][8], mins[8][8];
    uint8_t qh[4][2][32];
    uint8_t qs[4][8][32];
};
static_assert(sizeof(block_q5_Kx8) == 8 * sizeof(block_q5_K) + 8 * (16 - K_SCALE_SIZE), "block_q5_Kx8: wrong size");

/** Q6_K: the 8 d, the int8 scales (scales[group][row]), then per half h (128 inputs) and chunk c:
    ql0 = ql[64h + 4c ..] (low nibbles: quarter 0, high: quarter 2), ql1 = ql[64h + 32 + 4c ..]
    (quarters 1, 3), qh = qh[32h + 4c ..] (2 bits per quarter). */
struct block_q6_Kx8
{
    uint16_t d[8];
    int8_t scales[16][8];
    struct Chunk
    {
        uint8_t ql[2][32], qh[32];  //!< ql[0]: ql0, ql[1]: ql1
    } chunks[2][8];
};
static_assert(sizeof(block_q6_Kx8) == 8 * sizeof(block_q6_K), "block_q6_Kx8: wrong size");

/** Q3_K: the 8 d, the 6-bit scales unpacked (scales[group][row], s - 32), the high-bit chunks
    (hmask[c]: hmask[4c ..] of each row, for both halves), then per half h (128 inputs) and chunk
    c the 2-bit chunks qs[h][c] = qs[32h + 4c ..]. */
struct block_q3_Kx8
{
    uint16_t d[8];
    int8_t scales[16][8];
    uint8_t hmask[8][32];
    uint8_t qs[2][8][32];
};
static_assert(sizeof(block_q3_Kx8) == 8 * sizeof(block_q3_K) + 8 * (16 - 12), "block_q3_Kx8: wrong size");

/** Q2_K: the 8 d and dmin, the packed scale / min bytes as stored (scales[group][row]: scale in
    the low nibble, min in the high one), then Q3_K's 2-bit chunks. */
struct block_q2_Kx8
{
    uint16_t d[8], dmin[8];
    uint8_t scales[16][8];
    uint8_t qs[2][8][32];
};
static_assert(sizeof(block_q2_Kx8) == 8 * sizeof(block_q2_K), "block_q2_Kx8: wrong size");

/** MXFP4: the 8 E8M0 scale bytes, then 4 chunks of nibbles as Q4_0's (the kernels map them to
    their values with a byte shuffle). */
struct block_mxfp4x8
{
    uint8_t e[8];
    uint8_t qs[4][32];
};
static_assert(sizeof(block_mxfp4x8) == 8 * sizeof(block_mxfp4), "block_mxfp4x8: wrong size");

//! One type's interleaved layout: its unit and its packer.
struct InterleavedLayout
{
    int unitInputs;  //!< inputs per unit: one block (32) or one super-block (256)
    int unitBytes;   //!< bytes of a unit of 8 rows (the struct above)
    //! Packs 8 rows (rowBytes apart, `units` units each) into one group of units * unitBytes bytes.
    void (*pack)(const uchar* rows, size_t rowBytes, int units, uchar* dst);
};

extern const InterleavedLayout kInterleavedQ4_0, kInterleavedQ4_1, kInterleavedQ5_0, kInterleavedQ5_1,
                               kInterleavedQ8_0, kInterleavedQ2_K, kInterleavedQ3_K,
                               kInterleavedQ4_K, kInterleavedQ5_K, kInterleavedQ6_K, kInterleavedMXFP4;

/** Rows [0, 8 * groups) of a weight matrix (`rowBytes` per row, `in` inputs each) as a
    groups x (in / unitInputs * unitBytes) CV_8U Mat in the layout. */
Mat interleaveRows8(const InterleavedLayout& layout, const uchar* rows, size_t rowBytes, int groups, int in);

}}} // namespace cv::dnn::llm

#endif
