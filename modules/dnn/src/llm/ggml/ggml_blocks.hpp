// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The blocks of the ggml weight types we compute with, as stored in GGUF files (ggml's
// ggml-common.h layouts, written here from the format's description). float16 fields are kept
// as their bits (halfBitsToFloat in ggml_types.hpp, F16C in the vector kernels). Blocks sit in
// a row back to back, so every struct is packed by construction: the static_asserts hold the
// sizes the file format fixes.

#ifndef OPENCV_DNN_SRC_LLM_GGML_BLOCKS_HPP
#define OPENCV_DNN_SRC_LLM_GGML_BLOCKS_HPP

#include <cstdint>

namespace cv {
namespace dnn {
namespace llm {

const int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32;  //!< elements per block
const int QK_K = 256;                                                   //!< elements per K super-block
const int K_SCALE_SIZE = 12;  //!< bytes of the 6-bit scales and mins of Q4_K / Q5_K (scaleMinK4)

//! x = d * (q - 8), q 4 bits: element j in the low nibble of qs[j], j + 16 in its high nibble.
struct block_q4_0
{
    uint16_t d;
    uint8_t qs[QK4_0 / 2];
};
static_assert(sizeof(block_q4_0) == 2 + QK4_0 / 2, "block_q4_0: wrong size or padding");

//! x = d * q + m, nibbles as Q4_0.
struct block_q4_1
{
    uint16_t d, m;
    uint8_t qs[QK4_1 / 2];
};
static_assert(sizeof(block_q4_1) == 4 + QK4_1 / 2, "block_q4_1: wrong size or padding");

//! x = d * (q - 16), q 5 bits: nibbles as Q4_0, bit j of qh (little endian) is element j's fifth bit.
struct block_q5_0
{
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[QK5_0 / 2];
};
static_assert(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "block_q5_0: wrong size or padding");

//! x = d * q + m, q as Q5_0.
struct block_q5_1
{
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
};
static_assert(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "block_q5_1: wrong size or padding");

//! x = d * q, q signed 8 bits.
struct block_q8_0
{
    uint16_t d;
    int8_t qs[QK8_0];
};
static_assert(sizeof(block_q8_0) == 2 + QK8_0, "block_q8_0: wrong size or padding");

/** 8 sub-blocks of 32: x = d * sc_j * q - dmin * m_j, 6-bit sc_j and m_j packed in `scales`
    (scaleMinK4). Each 64 elements use 32 bytes of qs: low nibbles for sub-block 2i, high
    nibbles for 2i + 1. */
struct block_q4_K
{
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q4_K) == 4 + K_SCALE_SIZE + QK_K / 2, "block_q4_K: wrong size or padding");

//! Q4_K plus fifth bits: bit 2i (sub-block 2i) or 2i + 1 (sub-block 2i + 1) of qh[l] for element l of the 32.
struct block_q5_K
{
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q5_K) == 4 + K_SCALE_SIZE + QK_K / 8 + QK_K / 2, "block_q5_K: wrong size or padding");

/** 16 groups of 16: x = d * (scales_g & 15) * q - dmin * (scales_g >> 4), q 2 bits. Element
    128h + 32j + 16u + l (h, u in {0, 1}, j < 4, l < 16) is bits 2j, 2j + 1 of qs[32h + 16u + l]
    and belongs to group 8h + 2j + u. */
struct block_q2_K
{
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    uint16_t d, dmin;
};
static_assert(sizeof(block_q2_K) == QK_K / 16 + QK_K / 4 + 4, "block_q2_K: wrong size or padding");

/** 16 groups of 16: x = d * (s_g - 32) * (q - 4), q 3 bits: the low 2 as Q2_K's in qs, the
    high one bit 4h + j of hmask[16u + l] (h, j, u, l as in block_q2_K); s_g 6 bits: the low 4
    in nibble g / 8 of scales[g % 8], the high 2 bits 2 (g / 4) of scales[8 + g % 4]. */
struct block_q3_K
{
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};
static_assert(sizeof(block_q3_K) == QK_K / 8 + QK_K / 4 + 12 + 2, "block_q3_K: wrong size or padding");

/** 16 groups of 16: x = d * scales_g * (q - 32), q 6 bits: the low 4 in ql, the high 2 in qh
    (dequantQ6_K in ggml_types.cpp has the exact order). */
struct block_q6_K
{
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
};
static_assert(sizeof(block_q6_K) == QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, "block_q6_K: wrong size or padding");

const int QK_MXFP4 = 32;  //!< elements per MXFP4 block

/** MXFP4 (OCP microscaling FP4, gpt-oss's experts): x = v[q] * 2^(e - 128) with v the E2M1 values
    doubled as ggml stores them (kMXFP4Values, ggml's kvalues_mxfp4) and e an E8M0 exponent byte
    (mxfp4HalfScale: ggml's GGML_E8M0_TO_FP32_HALF, which halves the scale to undo the doubling);
    q 4 bits, element j in the low nibble of qs[j], j + 16 in its high nibble (as Q4_0). */
struct block_mxfp4
{
    uint8_t e;
    uint8_t qs[QK_MXFP4 / 2];
};
static_assert(sizeof(block_mxfp4) == 1 + QK_MXFP4 / 2, "block_mxfp4: wrong size or padding");

//! The 16 values of an MXFP4 quant, E2M1 times 2: 0 0.5 1 1.5 2 3 4 6 and their negatives, doubled.
static const int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}}} // namespace cv::dnn::llm

#endif
