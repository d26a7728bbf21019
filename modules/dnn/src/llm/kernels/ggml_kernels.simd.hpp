// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The weight kernels, compiled once per dispatched ISA (OpenCV's CV_CPU_OPTIMIZATION_NAMESPACE;
// patch 0003): with AVX2, the vector kernels of ggml_kernels_legacy.inl.hpp (32-element blocks),
// ggml_kernels_kquants.inl.hpp (Q4_K / Q5_K / Q6_K), ggml_kernels_q2q3k.inl.hpp (Q2_K /
// Q3_K) and ggml_kernels_mxfp4.inl.hpp (MXFP4); the baseline has none, so there every type
// takes the float path. Each build lists what it has in one table, kWeightKernels below;
// ggml_kernels.dispatch.cpp takes the table of the CPU's ISA once and joins it with the storage
// table (ggml_types.cpp) into the weight-type table of ggml_kernels.hpp. The vector decoders
// compute exactly what the scalar ones do (same operations in the same order, no fused
// multiply-add), so decoded weights do not depend on the CPU; neither do quantized activations.

#include <opencv2/core/hal/intrin.hpp>
#include "ggml_kernels.hpp"
#include "../common/vector_ops.hpp"

#include <cstring>
#include <algorithm>
#include <cmath>
#include <type_traits>
#if CV_AVX2
#include <immintrin.h>
#endif

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

//! This ISA's kernel table: `count` rows, one per type it has kernels for.
const WeightKernels* weightKernelTableSimd(int& count);
//! x (n floats) -> 8-bit blocks of 32 as Q8_0 does: q = round(x / d), d = max|x| / 127 per
//! block; also each block's sum of q (for the offsets of Q4_0 and the types with a minimum).
void quantizeRowQ8Simd(const float* x, signed char* q, float* d, int* sums, int n);
void quantizeActivationRowSimd(ActivationQuantization kind, const float* x, signed char* q, float* d, int* sums, int n);
float dotF32Simd(const float* a, const float* b, int n);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

#if CV_AVX2

#if CV_AVX512_CLX && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn that it is uninitialized
// (GCC bug 105593, fixed in GCC 13): not our code's values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "ggml_kernels_avx2_common.inl.hpp"
#include "ggml_kernels_legacy.inl.hpp"
#include "ggml_kernels_kquants.inl.hpp"
#include "ggml_kernels_q2q3k.inl.hpp"
#include "ggml_kernels_mxfp4.inl.hpp"
#include "ggml_kernels_amx.inl.hpp"

static void decodeF16(const uchar* s, float* y, int64 n)
{
    int64 i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(s + 2 * i))));
    for (; i < n; i++)
    {
        uint16_t bits;
        std::memcpy(&bits, s + 2 * i, 2);
        y[i] = blockScale(bits);
    }
}

// BF16: the upper 16 bits of a float (static, as every helper here: see blockScale).
static inline float bf16Scalar(uint16_t bits)
{
    Cv32suf v;
    v.u = (uint32_t)bits << 16;
    return v.f;
}

static inline __m256 bf16x8(const uchar* s)
{
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)s));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static void decodeBF16(const uchar* s, float* y, int64 n)
{
    int64 i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, bf16x8(s + 2 * i));
    for (; i < n; i++)
    {
        uint16_t bits;
        std::memcpy(&bits, s + 2 * i, 2);
        y[i] = bf16Scalar(bits);
    }
}

// 16 halfs / bfloat16s to floats (AVX-512 builds).
#if CV_AVX512_CLX
static inline __m512 f16x16(const uchar* s)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)s));
}

static inline __m512 bf16x16(const uchar* s)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)s)), 16));
}
#endif

static inline __m256 f16x8(const uchar* s)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)s));
}

// F16 / BF16 rows times float activations in one pass: the weights are read once, without a
// decoded copy. AVX-512 builds take 512-bit vectors (a cache line of weights per two loads:
// one thread reads the weights ~10% faster than with 256-bit ones), then 8 lanes and the tail.
struct F16Elements
{
    static __m256 load8(const uchar* s) { return f16x8(s); }
#if CV_AVX512_CLX
    static __m512 load16(const uchar* s) { return f16x16(s); }
#endif
    static float scalar(uint16_t bits) { return blockScale(bits); }
};

struct BF16Elements
{
    static __m256 load8(const uchar* s) { return bf16x8(s); }
#if CV_AVX512_CLX
    static __m512 load16(const uchar* s) { return bf16x16(s); }
#endif
    static float scalar(uint16_t bits) { return bf16Scalar(bits); }
};

template <typename Elements>
static float dotHalfF32(const uchar* w, const float* x, int n)
{
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
#if CV_AVX512_CLX
    __m512 wide[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (; i + 64 <= n; i += 64)
    {
        // The two lines 2048 bytes ahead (the next row's first ones near the end of a row; a
        // prefetch never faults), as the interleaved kernels do (prefetchAhead).
        _mm_prefetch((const char*)w + 2 * i + 2048, _MM_HINT_T0);
        _mm_prefetch((const char*)w + 2 * i + 2048 + 64, _MM_HINT_T0);
        for (int k = 0; k < 4; k++)
            wide[k] = _mm512_fmadd_ps(Elements::load16(w + 2 * (i + 16 * k)), _mm512_loadu_ps(x + i + 16 * k), wide[k]);
    }
    const __m512 all = _mm512_add_ps(_mm512_add_ps(wide[0], wide[1]), _mm512_add_ps(wide[2], wide[3]));
    acc = _mm256_add_ps(_mm512_castps512_ps256(all), _mm512_extractf32x8_ps(all, 1));
#else
    __m256 more[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (; i + 32 <= n; i += 32)
    {
        _mm_prefetch((const char*)w + 2 * i + 2048, _MM_HINT_T0);
        acc = _mm256_fmadd_ps(Elements::load8(w + 2 * i), _mm256_loadu_ps(x + i), acc);
        for (int k = 0; k < 3; k++)
            more[k] = _mm256_fmadd_ps(Elements::load8(w + 2 * (i + 8 + 8 * k)), _mm256_loadu_ps(x + i + 8 + 8 * k), more[k]);
    }
    acc = _mm256_add_ps(_mm256_add_ps(acc, more[0]), _mm256_add_ps(more[1], more[2]));
#endif
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(Elements::load8(w + 2 * i), _mm256_loadu_ps(x + i), acc);
    float sum = hsum256(acc);
    for (; i < n; i++)
    {
        uint16_t bits;
        std::memcpy(&bits, w + 2 * i, 2);
        sum += Elements::scalar(bits) * x[i];
    }
    return sum;
}

static float dotF16F32(const uchar* w, const float* x, int n)
{
    return dotHalfF32<F16Elements>(w, x, n);
}

static float dotBF16F32(const uchar* w, const float* x, int n)
{
    return dotHalfF32<BF16Elements>(w, x, n);
}

#include "ggml_kernels_half_gemm.inl.hpp"

// Rows: the type, its vector decoder, integer dot, multi-row tile, interleaved kernel with its
// layout (interleaved_weights.hpp), fused float dot, two-group interleaved kernel (AVX-512
// builds), its AMX twin (AVX512_CLX build with the AMX flags) and fused float GEMM of prompts;
// nullptr where there is none.
#if CV_AVX512_CLX
#define LLM_AVX512_ONLY(kernel) kernel
#else
#define LLM_AVX512_ONLY(kernel) nullptr
#endif
static const WeightKernels kWeightKernels[] = {
    {GGML_F16, decodeF16, nullptr, nullptr, nullptr, nullptr, dotF16F32, nullptr, nullptr, gemmF16F32},
    {GGML_BF16, decodeBF16, nullptr, nullptr, nullptr, nullptr, dotBF16F32, nullptr, nullptr, gemmBF16F32},
    {GGML_Q4_0, decodeQ4_0, dotQ8Q4_0Q8_0<GGML_Q4_0>, tileQ4_0Q8_0<GGML_Q4_0>,
     interleaved8Rows<LegacyInterleaved8<GGML_Q4_0>>, &kInterleavedQ4_0, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<LegacyInterleaved16<GGML_Q4_0>>),
     LLM_AMX_ONLY(interleavedPairsAmx<LegacyTileWeights<GGML_Q4_0>>), nullptr},
    {GGML_Q4_1, nullptr, dotQ8Q4_1, nullptr, interleaved8Rows<LegacyInterleaved8<GGML_Q4_1>>, &kInterleavedQ4_1, nullptr, nullptr, nullptr, nullptr},
    {GGML_Q5_0, nullptr, dotQ8Q5<block_q5_0>, nullptr,
     interleaved8Rows<Q5Interleaved8<block_q5_0x8>>, &kInterleavedQ5_0, nullptr, nullptr, nullptr, nullptr},
    {GGML_Q5_1, nullptr, dotQ8Q5<block_q5_1>, nullptr,
     interleaved8Rows<Q5Interleaved8<block_q5_1x8>>, &kInterleavedQ5_1, nullptr, nullptr, nullptr, nullptr},
    {GGML_Q8_0, decodeQ8_0, dotQ8Q4_0Q8_0<GGML_Q8_0>, tileQ4_0Q8_0<GGML_Q8_0>,
     interleaved8Rows<LegacyInterleaved8<GGML_Q8_0>>, &kInterleavedQ8_0, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<LegacyInterleaved16<GGML_Q8_0>>),
     LLM_AMX_ONLY(interleavedPairsAmx<LegacyTileWeights<GGML_Q8_0>>), nullptr},
    {GGML_Q2_K, nullptr, dotQ8Q2Q3K<block_q2_K>, tileQ2Q3K<block_q2_K>, interleaved8Rows<Q2KInterleaved8>, &kInterleavedQ2_K,
     nullptr, nullptr, nullptr, nullptr},
    {GGML_Q3_K, nullptr, dotQ8Q2Q3K<block_q3_K>, tileQ2Q3K<block_q3_K>, interleaved8Rows<Q3KInterleaved8>, &kInterleavedQ3_K,
     nullptr, nullptr, nullptr, nullptr},
    {GGML_Q4_K, decodeQ4_K, dotQ8Q4KQ5K<block_q4_K>, nullptr, interleaved8Rows<Q4KInterleaved8>, &kInterleavedQ4_K, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<Q4KInterleaved16>),
     LLM_AMX_ONLY(interleavedPairsAmx<KQuantTileWeights<block_q4_Kx8>>), nullptr},
    {GGML_Q5_K, nullptr, dotQ8Q4KQ5K<block_q5_K>, nullptr, interleaved8Rows<Q5KInterleaved8>, &kInterleavedQ5_K, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<Q5KInterleaved16>),
     LLM_AMX_ONLY(interleavedPairsAmx<KQuantTileWeights<block_q5_Kx8>>), nullptr},
    {GGML_Q6_K, decodeQ6_K, dotQ8Q6_K, nullptr, interleaved8Rows<Q6KInterleaved8>, &kInterleavedQ6_K, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<Q6KInterleaved16>),
     LLM_AMX_ONLY(interleavedPairsAmx<Q6KTileWeights>), nullptr},
    {GGML_MXFP4, decodeMXFP4, dotQ8MXFP4, tileMXFP4, interleaved8Rows<MXFP4Interleaved8>, &kInterleavedMXFP4, nullptr,
     LLM_AVX512_ONLY(interleaved16Rows<MXFP4Interleaved16>), nullptr, nullptr},
};

// max |x| of 32 floats.
static inline float maxAbs32(const float* x)
{
    const __m256 signBit = _mm256_set1_ps(-0.f);
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++)
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(signBit, _mm256_loadu_ps(x + 8 * k)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

// q = round(x * inv) to nearest even (as llama.cpp's nearest_int and _mm256_round_ps) for 32
// floats, saturated to int8; returns the sum of q.
static inline int roundBlock32(const float* x, float inv, signed char* q)
{
    const __m256 m = _mm256_set1_ps(inv);
    __m256i i32[4];
    for (int k = 0; k < 4; k++)
        i32[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), m),
                                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // Pack 32 int32 to 32 int8 in order (packs work per 128-bit lane: fix the order after).
    const __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]), i16b = _mm256_packs_epi32(i32[2], i32[3]);
    __m256i i8 = _mm256_packs_epi16(i16a, i16b);
    i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i*)q, i8);
    const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), i8);
    const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
}

// A float rounded to fp16 and back (round to nearest even, as ggml's FP32_TO_FP16 with F16C).
static inline float roundToHalf(float v)
{
    return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

void quantizeRowQ8Simd(const float* x, signed char* q, float* d, int* sums, int n)
{
    for (int b = 0; b < n / 32; b++, x += 32, q += 32)
    {
        const float scale = maxAbs32(x) / 127.f;
        d[b] = scale;
        sums[b] = roundBlock32(x, scale != 0.f ? 1.f / scale : 0.f, q);
    }
}

void quantizeActivationRowSimd(ActivationQuantization kind, const float* x, signed char* q, float* d, int* sums, int n)
{
    if (kind == ACTIVATIONS_Q8_0)
    {
        // ggml's quantize_row_q8_0 (x86): d = fp16(max / 127), q = round(x * (127 / max)).
        for (int b = 0; b < n / 32; b++, x += 32, q += 32)
        {
            const float maxAbs = maxAbs32(x);
            d[b] = roundToHalf(maxAbs / 127.f);
            sums[b] = roundBlock32(x, maxAbs != 0.f ? 127.f / maxAbs : 0.f, q);
        }
    }
    else if (kind == ACTIVATIONS_Q8_K)
    {
        // ggml's quantize_row_q8_K_ref, which every x86 path of llama.cpp runs.
        for (int b = 0; b < n / QK_K; b++, x += QK_K, q += QK_K, d += 8, sums += 8)
        {
            float amax = 0.f;
            for (int k = 0; k < 8; k++)
                amax = std::max(amax, maxAbs32(x + 32 * k));
            // The first element of largest |x| (its sign sets the scale's).
            int first = 0;
            if (amax != 0.f)
            {
                const __m256 signBit = _mm256_set1_ps(-0.f), top = _mm256_set1_ps(amax);
                for (int k = 0; k < QK_K; k += 8)
                {
                    const __m256 v = _mm256_andnot_ps(signBit, _mm256_loadu_ps(x + k));
                    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(v, top, _CMP_EQ_OQ));
                    if (hit)
                    {
                        first = k + __builtin_ctz((unsigned)hit);
                        break;
                    }
                }
            }
            const float iscale = amax != 0.f ? -127.f / x[first] : 0.f;
            const float scale = amax != 0.f ? 1.f / iscale : 0.f;
            for (int k = 0; k < 8; k++)
            {
                d[k] = scale;
                sums[k] = roundBlock32(x + 32 * k, iscale, q + 32 * k);
            }
        }
    }
    else
        quantizeRowQ8Simd(x, q, d, sums, n);
}

static const int kWeightKernelCount = (int)(sizeof(kWeightKernels) / sizeof(kWeightKernels[0]));

#else  // the baseline

// No vector or integer kernels: every type takes the float path (the storage table's scalar
// decoders and dotF32), which on CPUs without AVX2 beats portable integer dot products (scalar
// ones ran generation 20% and 16-token prompts 4x slower than it).
static const WeightKernels* const kWeightKernels = nullptr;
static const int kWeightKernelCount = 0;

// As the AVX2 code: the same scale, reciprocal and round-to-nearest-even, so the same bits.
void quantizeRowQ8Simd(const float* x, signed char* q, float* d, int* sums, int n)
{
    for (int b = 0; b < n / 32; b++, x += 32, q += 32)
    {
        float maxAbs = 0.f;
        for (int k = 0; k < 32; k++)
            maxAbs = std::max(maxAbs, std::fabs(x[k]));
        const float scale = maxAbs / 127.f;
        const float inv = scale != 0.f ? 1.f / scale : 0.f;
        int sum = 0;
        for (int k = 0; k < 32; k++)
        {
            q[k] = (signed char)cvRound(x[k] * inv);
            sum += q[k];
        }
        d[b] = scale;
        sums[b] = sum;
    }
}

// The AVX2 code's llama.cpp formats (the baseline has no integer dots: for completeness).
void quantizeActivationRowSimd(ActivationQuantization kind, const float* x, signed char* q, float* d, int* sums, int n)
{
    if (kind == ACTIVATIONS_Q8_FLOAT_SCALES)
        return quantizeRowQ8Simd(x, q, d, sums, n);
    const int block = kind == ACTIVATIONS_Q8_K ? QK_K : 32;
    for (int b = 0; b < n / block; b++, x += block, q += block)
    {
        float amax = 0.f, first = 0.f;
        for (int k = 0; k < block; k++)
            if (std::fabs(x[k]) > amax)
            {
                amax = std::fabs(x[k]);
                first = x[k];
            }
        const float inv = amax == 0.f ? 0.f : kind == ACTIVATIONS_Q8_K ? -127.f / first : 127.f / amax;
        const float scale = amax == 0.f ? 0.f : kind == ACTIVATIONS_Q8_K ? 1.f / inv : (float)hfloat(amax / 127.f);
        for (int k = 0; k < block; k += 32, d++, sums++)
        {
            int sum = 0;
            for (int j = k; j < k + 32; j++)
            {
                q[j] = (signed char)std::min(127, cvRound(x[j] * inv));
                sum += q[j];
            }
            *d = scale;
            *sums = sum;
        }
    }
}

#endif

const WeightKernels* weightKernelTableSimd(int& count)
{
    count = kWeightKernelCount;
    return kWeightKernels;
}

float dotF32Simd(const float* a, const float* b, int n)
{
    return dotF32(a, b, n);
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
