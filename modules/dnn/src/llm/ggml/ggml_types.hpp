// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// ggml tensor types as stored in GGUF files: ids, block geometry, and row dequantization (the
// storage half of a weight type; kernels/ggml_kernels.hpp adds this CPU's kernels to it).

#ifndef OPENCV_DNN_SRC_LLM_GGML_TYPES_HPP
#define OPENCV_DNN_SRC_LLM_GGML_TYPES_HPP

#include <opencv2/core.hpp>
#include <string>

namespace cv {
namespace dnn {
namespace llm {

//! ggml type ids (ggml.h's enum ggml_type; gaps are ids that ggml retired).
enum GGMLType
{
    GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7,
    GGML_Q8_0 = 8, GGML_Q8_1 = 9, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12,
    GGML_Q5_K = 13, GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_IQ2_XXS = 16, GGML_IQ2_XS = 17,
    GGML_IQ3_XXS = 18, GGML_IQ1_S = 19, GGML_IQ4_NL = 20, GGML_IQ3_S = 21, GGML_IQ2_S = 22,
    GGML_IQ4_XS = 23, GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27,
    GGML_F64 = 28, GGML_IQ1_M = 29, GGML_BF16 = 30, GGML_TQ1_0 = 34, GGML_TQ2_0 = 35,
    GGML_MXFP4 = 39,
    GGML_TYPE_COUNT = 40  //!< ids are below this
};

//! Decodes a row of n elements (a multiple of the block size) to float.
typedef void (*RowDecoder)(const uchar* src, float* dst, int64 n);

//! One row of the table of every ggml type id (ggml_types.cpp).
struct GGMLTypeTraits
{
    const char* name;     //!< nullptr for ids that are not ggml types
    int blockSize;        //!< elements per block
    int typeSize;         //!< bytes per block
    bool dequantizable;   //!< this project can dequantize it (and so compute with it): toFloat is set
    RowDecoder toFloat;   //!< the scalar reference decoder; the vector ones give the same bits
};

//! IEEE half to float, exact (subnormals, infinities and NaNs included).
inline float halfBitsToFloat(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    Cv32suf out;
    if (exponent == 0)
    {
        out.f = (float)mantissa * (1.0f / 16777216.0f);  // zero or subnormal: mantissa * 2^-24
        out.u |= sign;
    }
    else if (exponent == 31)
        out.u = sign | 0x7F800000u | (mantissa << 13);
    else
        out.u = sign | ((exponent + 112) << 23) | (mantissa << 13);
    return out.f;
}

//! bfloat16 to float (the high half of a float).
inline float bf16BitsToFloat(uint16_t b)
{
    Cv32suf out;
    out.u = (uint32_t)b << 16;
    return out.f;
}

/** The signed scale (6 bits minus 32) of group g (0..15) from the 12 packed bytes of Q3_K: the
    low 4 bits are nibble g / 8 of byte g % 8, the high 2 bits 2 (g / 4) of byte 8 + g % 4. */
static inline int scaleQ3_K(const uchar* scales, int g)
{
    const int low = (scales[g % 8] >> (4 * (g / 8))) & 0x0F;
    const int high = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (low | (high << 4)) - 32;
}

/** 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K.
    `static`: each translation unit (the ISA-dispatched ones too) keeps its own copy. */
static inline void scaleMinK4(int j, const uchar* q, int& sc, int& m)
{
    if (j < 4)
    {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    }
    else
    {
        sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/** An MXFP4 block's scale from its E8M0 byte: 2^(e - 128), half the format's 2^(e - 127) (ggml's
    GGML_E8M0_TO_FP32_HALF, exact): the float with exponent field e - 1, or for e < 2 the
    subnormals 2^-128, 2^-127. e = 255 (NaN in the OCP format) gives 2^127, as ggml. */
static inline float mxfp4HalfScale(uint8_t e)
{
    Cv32suf v;
    v.u = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return v.f;
}

/** kMXFP4Values[code] * mxfp4HalfScale(e) for e < 2, built from its bits: there the scale is a
    subnormal float, which OpenCV's Net::forward (denormals flushed: FTZ / DAZ) would read as 0,
    while ggml multiplies it exactly (1..12 times 2^-128 or 2^-127: subnormal or not). */
static inline float mxfp4TinyValue(uint8_t e, int value)
{
    uint32_t units = (uint32_t)std::abs(value) << (e + 21);  // the magnitude in units of 2^-149
    int shift = 0;
    while (units >> shift >= (1u << 24))  // a normal float: 23 bits after the leading one
        shift++;
    Cv32suf v;
    v.u = shift == 0 ? units : ((uint32_t)(shift + 1) << 23) | ((units >> shift) & 0x7FFFFFu);
    v.u |= value < 0 ? 0x80000000u : 0u;
    return v.f;
}

//! Traits of a type id; name is nullptr for an unknown id.
const GGMLTypeTraits& ggmlTypeTraits(uint32_t type);

//! Name of a type id, or "type <id>" for an unknown one.
std::string ggmlTypeName(uint32_t type);

//! Bytes of a row of n elements (n must be a multiple of the block size).
size_t ggmlRowBytes(GGMLType type, int64 n);

/** Dequantizes one row of n elements (a multiple of the type's block size) to float.
    Throws for types that are not dequantizable. */
void dequantizeRow(GGMLType type, const void* src, float* dst, int64 n);

}}} // namespace cv::dnn::llm

#endif
