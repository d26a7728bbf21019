// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Compiled once per dispatched ISA (OpenCV's CV_CPU_OPTIMIZATION_NAMESPACE). With AVX2 the
// hot block formats are decoded 8 floats at a time; elsewhere the portable decoders run.
// The vector decoders compute exactly what the scalar ones do (same operations in the same
// order, no fused multiply-add), so results do not depend on the CPU.

// Only file-local (static) helpers are used under CV_AVX2: a shared inline function compiled
// here with AVX2 flags could be the copy the linker keeps for baseline callers too.

#include <opencv2/core/hal/intrin.hpp>
#include "../ggml/ggml_types.hpp"

#if CV_AVX2
#include <immintrin.h>
#include <cstring>
#else
#include "vector_ops.hpp"
#endif

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

//! Decodes a row of a type this ISA has a fast decoder for; false otherwise.
bool dequantizeRowSimd(int type, const uchar* src, float* dst, int64 n);
float dotF32Simd(const float* a, const float* b, int n);
//! True when this ISA has the 8-bit integer dot products below.
bool hasIntegerDotSimd();
//! x (n floats) -> 8-bit blocks of 32 as Q8_0 does: q = round(x / d), d = max|x| / 127 per
//! block; also each block's sum of q (for the Q4_0 offset).
void quantizeRowQ8Simd(const float* x, signed char* q, float* d, int* sums, int n);
//! Dot product of a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K weight row with an activation row quantized as above.
float dotQ8Simd(int type, const uchar* w, const signed char* q, const float* d, const int* sums, int blocks);
//! dotQ8Simd() of one weight row with `rows` activation rows (q stride blocks*32, d and sums
//! stride blocks), each computed exactly as dotQ8Simd() computes it; the weight blocks are
//! unpacked once for all rows.
void dotQ8RowsSimd(int type, const uchar* w, const signed char* q, const float* d, const int* sums, int blocks,
                   int rows, float* out);
//! dotQ8RowsSimd() for two weight rows (w and w + wStride) at once, for Q4_0 and Q8_0 only:
//! out[0..rows) for the first, out[outStride..] for the second.
void dotQ8Rows2Simd(int type, const uchar* w, size_t wStride, const signed char* q, const float* d, const int* sums,
                    int blocks, int rows, float* out, size_t outStride);

//! Dot products of one group of 8 interleaved weight rows (interleaved_weights.hpp; Q4_0 or
//! Q8_0) with `rows` activation rows quantized as above: out[r * outStride + j] for row j.
void dotQ8Interleaved8Simd(int type, const uchar* group, const signed char* q, const float* d, const int* sums,
                           int blocks, int rows, float* out, size_t outStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

#if CV_AVX2

// An fp16 scale (F16C comes with OpenCV's AVX2 level).
static inline float blockScale(const uchar* p)
{
    return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

// 8 unsigned bytes -> 8 floats.
static inline __m256 u8ToFloat(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

static void rowQ4_0(const uchar* b, float* y, int64 blocks)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m256 eight = _mm256_set1_ps(8.f);
    for (int64 i = 0; i < blocks; i++, b += 18, y += 32)
    {
        const __m256 d = _mm256_set1_ps(blockScale(b));
        const __m128i q = _mm_loadu_si128((const __m128i*)(b + 2));
        const __m128i lo = _mm_and_si128(q, mask), hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
        _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(lo), eight), d));
        _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(_mm_srli_si128(lo, 8)), eight), d));
        _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(hi), eight), d));
        _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(_mm_srli_si128(hi, 8)), eight), d));
    }
}

static void rowQ8_0(const uchar* b, float* y, int64 blocks)
{
    for (int64 i = 0; i < blocks; i++, b += 34, y += 32)
    {
        const __m256 d = _mm256_set1_ps(blockScale(b));
        for (int k = 0; k < 4; k++)
        {
            const __m128i q = _mm_loadl_epi64((const __m128i*)(b + 2 + 8 * k));
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
        }
    }
}

// Q6_K: y = (d * scale) * (q - 32), q from 4 low bits in ql and 2 high bits in qh.
static void rowQ6_K(const uchar* b, float* y, int64 blocks)
{
    const __m256i low4 = _mm256_set1_epi32(0x0F), two = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
    for (int64 i = 0; i < blocks; i++, b += 210)
    {
        const uchar* ql = b;
        const uchar* qh = b + 128;
        const signed char* sc = reinterpret_cast<const signed char*>(b + 192);
        const float d = blockScale(b + 208);
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8)
        {
            for (int l = 0; l < 32; l += 8)
            {
                const __m256i l0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(ql + l)));
                const __m256i l1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(ql + l + 32)));
                const __m256i h = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(qh + l)));
                const __m256i q1 = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(l0, low4),
                                   _mm256_slli_epi32(_mm256_and_si256(h, two), 4)), bias);
                const __m256i q2 = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(l1, low4),
                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), two), 4)), bias);
                const __m256i q3 = _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(l0, 4),
                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), two), 4)), bias);
                const __m256i q4 = _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(l1, 4),
                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 6), two), 4)), bias);
                const int is = l / 16;
                _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 0]), _mm256_cvtepi32_ps(q1)));
                _mm256_storeu_ps(y + l + 32, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 2]), _mm256_cvtepi32_ps(q2)));
                _mm256_storeu_ps(y + l + 64, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 4]), _mm256_cvtepi32_ps(q3)));
                _mm256_storeu_ps(y + l + 96, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 6]), _mm256_cvtepi32_ps(q4)));
            }
        }
    }
}

// Q4_K: per 64 elements, y = (d * sc) * q - dmin * m for the low nibbles of 32 bytes, then
// the same with the next scale for their high nibbles. Multiply and subtract stay separate
// (no FMA) to round as the scalar decoder does.
__attribute__((optimize("fp-contract=off")))
static void rowQ4_K(const uchar* b, float* y, int64 blocks)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    for (int64 i = 0; i < blocks; i++, b += 144)
    {
        const float d = blockScale(b), dmin = blockScale(b + 2);
        const uchar* scales = b + 4;
        const uchar* q = b + 16;
        for (int j = 0; j < 4; j++, q += 32, y += 64)
        {
            int sc, m;
            scaleMinK4(2 * j, scales, sc, m);
            const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * m);
            scaleMinK4(2 * j + 1, scales, sc, m);
            const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(dmin * m);
            const __m128i qa = _mm_loadu_si128((const __m128i*)q), qb = _mm_loadu_si128((const __m128i*)(q + 16));
            const __m128i parts[4] = {_mm_and_si128(qa, mask), _mm_and_si128(qb, mask),
                                      _mm_and_si128(_mm_srli_epi16(qa, 4), mask),
                                      _mm_and_si128(_mm_srli_epi16(qb, 4), mask)};
            for (int p = 0; p < 4; p++)
            {
                const __m256 scale = p < 2 ? d1 : d2, minv = p < 2 ? m1 : m2;
                float* out = y + 16 * p;
                _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(scale, u8ToFloat(parts[p])), minv));
                _mm256_storeu_ps(out + 8, _mm256_sub_ps(_mm256_mul_ps(scale, u8ToFloat(_mm_srli_si128(parts[p], 8))), minv));
            }
        }
    }
}

static void rowF16(const uchar* s, float* y, int64 n)
{
    int64 i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(s + 2 * i))));
    for (; i < n; i++)
        y[i] = blockScale(s + 2 * i);
}

bool dequantizeRowSimd(int type, const uchar* src, float* dst, int64 n)
{
    switch (type)
    {
    case GGML_Q4_0: rowQ4_0(src, dst, n / 32); return true;
    case GGML_Q8_0: rowQ8_0(src, dst, n / 32); return true;
    case GGML_Q4_K: rowQ4_K(src, dst, n / 256); return true;
    case GGML_Q6_K: rowQ6_K(src, dst, n / 256); return true;
    case GGML_F16: rowF16(src, dst, n); return true;
    default: return false;
    }
}

float dotF32Simd(const float* a, const float* b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32)
    {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    const __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_shuffle_ps(r, r, 1));
    float sum = _mm_cvtss_f32(r);
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

bool hasIntegerDotSimd()
{
    return true;
}

void quantizeRowQ8Simd(const float* x, signed char* q, float* d, int* sums, int n)
{
    const __m256 signBit = _mm256_set1_ps(-0.f);
    for (int b = 0; b < n / 32; b++, x += 32, q += 32)
    {
        __m256 v[4], amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++)
        {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(signBit, v[k]));
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        const float maxAbs = _mm_cvtss_f32(m);
        const float scale = maxAbs / 127.f;
        d[b] = scale;
        const __m256 inv = _mm256_set1_ps(scale != 0.f ? 1.f / scale : 0.f);
        __m256i i32[4];
        for (int k = 0; k < 4; k++)
            i32[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
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
        sums[b] = _mm_cvtsi128_si32(t);
    }
}

static inline float hsum256(__m256 s)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_shuffle_ps(r, r, 1));
    return _mm_cvtss_f32(r);
}

// W Q4_0 or Q8_0 weight rows (wStride bytes apart) against R activation rows: each weight block
// is unpacked once for the R rows and each activation block loaded once for the W weight rows.
// The arithmetic of a (weight row, activation row) pair is the same sequence of operations
// whatever W and R are, so results are bit-identical to the single-row kernel's.
template <int W, int R>
static void dotQ4_0Q8_0Tile(int type, const uchar* w, size_t wStride, const signed char* q, const float* d,
                            const int* sums, int blocks, float* out, size_t outStride)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const size_t qStride = (size_t)blocks * 32;
    __m256 acc[W][R];
    float offset[W][R];
    for (int i = 0; i < W; i++)
        for (int r = 0; r < R; r++)
        {
            acc[i][r] = _mm256_setzero_ps();
            offset[i][r] = 0.f;
        }
    if (type == GGML_Q4_0)
    {
        // sum (w - 8) x = sum w x - 8 sum x, with w in 0..15 as unsigned bytes.
        const __m128i mask = _mm_set1_epi8(0x0F);
        for (int b = 0; b < blocks; b++)
        {
            __m256i wv[W];
            float ws[W];
            for (int i = 0; i < W; i++)
            {
                const uchar* wb = w + i * wStride + (size_t)b * 18;
                const __m128i packed = _mm_loadu_si128((const __m128i*)(wb + 2));
                wv[i] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
                ws[i] = blockScale(wb);
            }
            for (int r = 0; r < R; r++)
            {
                const __m256i x = _mm256_loadu_si256((const __m256i*)(q + r * qStride + (size_t)b * 32));
                for (int i = 0; i < W; i++)
                {
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv[i], x), ones);
                    const float scale = ws[i] * d[r * blocks + b];
                    acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(scale), acc[i][r]);
                    offset[i][r] += scale * 8.f * sums[r * blocks + b];
                }
            }
        }
    }
    else  // GGML_Q8_0: signed x signed through |w| and sign(x, w)
    {
        for (int b = 0; b < blocks; b++)
        {
            __m256i wv[W], wAbs[W];
            float ws[W];
            for (int i = 0; i < W; i++)
            {
                const uchar* wb = w + i * wStride + (size_t)b * 34;
                wv[i] = _mm256_loadu_si256((const __m256i*)(wb + 2));
                wAbs[i] = _mm256_sign_epi8(wv[i], wv[i]);
                ws[i] = blockScale(wb);
            }
            for (int r = 0; r < R; r++)
            {
                const __m256i x = _mm256_loadu_si256((const __m256i*)(q + r * qStride + (size_t)b * 32));
                for (int i = 0; i < W; i++)
                {
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wAbs[i], _mm256_sign_epi8(x, wv[i])), ones);
                    acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(ws[i] * d[r * blocks + b]), acc[i][r]);
                }
            }
        }
    }
    for (int i = 0; i < W; i++)
        for (int r = 0; r < R; r++)
            out[i * outStride + r] = hsum256(acc[i][r]) - offset[i][r];
}

template <int R>
static void dotQ4_0Q8_0Rows(int type, const uchar* w, const signed char* q, const float* d, const int* sums,
                            int blocks, float* out)
{
    dotQ4_0Q8_0Tile<1, R>(type, w, 0, q, d, sums, blocks, out, 0);
}

void dotQ8RowsSimd(int type, const uchar* w, const signed char* q, const float* d, const int* sums, int blocks,
                   int rows, float* out)
{
    if (type != GGML_Q4_0 && type != GGML_Q8_0)
    {
        for (int r = 0; r < rows; r++)
            out[r] = dotQ8Simd(type, w, q + (size_t)r * blocks * 32, d + (size_t)r * blocks, sums + (size_t)r * blocks, blocks);
        return;
    }
    for (; rows >= 4; rows -= 4, q += (size_t)4 * blocks * 32, d += 4 * blocks, sums += 4 * blocks, out += 4)
        dotQ4_0Q8_0Rows<4>(type, w, q, d, sums, blocks, out);
    switch (rows)
    {
    case 3: dotQ4_0Q8_0Rows<3>(type, w, q, d, sums, blocks, out); break;
    case 2: dotQ4_0Q8_0Rows<2>(type, w, q, d, sums, blocks, out); break;
    case 1: dotQ4_0Q8_0Rows<1>(type, w, q, d, sums, blocks, out); break;
    default: break;
    }
}

void dotQ8Rows2Simd(int type, const uchar* w, size_t wStride, const signed char* q, const float* d, const int* sums,
                    int blocks, int rows, float* out, size_t outStride)
{
    CV_Assert(type == GGML_Q4_0 || type == GGML_Q8_0);
    for (; rows >= 4; rows -= 4, q += (size_t)4 * blocks * 32, d += 4 * blocks, sums += 4 * blocks, out += 4)
        dotQ4_0Q8_0Tile<2, 4>(type, w, wStride, q, d, sums, blocks, out, outStride);
    switch (rows)
    {
    case 3: dotQ4_0Q8_0Tile<2, 3>(type, w, wStride, q, d, sums, blocks, out, outStride); break;
    case 2: dotQ4_0Q8_0Tile<2, 2>(type, w, wStride, q, d, sums, blocks, out, outStride); break;
    case 1: dotQ4_0Q8_0Tile<2, 1>(type, w, wStride, q, d, sums, blocks, out, outStride); break;
    default: break;
    }
}

// 32 bits of activations (4 int8) broadcast to all 8 lanes.
static inline __m256i broadcast4(const signed char* x)
{
    int v;
    std::memcpy(&v, x, sizeof(v));
    return _mm256_set1_epi32(v);
}

// 32 bits -> 32 bytes, byte i = 0x10 where bit i is set (the fifth bit of Q5_0 / Q5_1 quants).
static inline __m256i fifthBits(const uchar* p)
{
    uint32_t word;
    std::memcpy(&word, p, sizeof(word));
    // Each 128-bit lane holds the word 4 times; byte i takes word byte i / 8 (lane-local index).
    const __m256i index = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);  // byte i: 1 << (i % 8)
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)word), index);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Q5_0 / Q5_1, 8 interleaved rows (interleaved_weights.hpp): nibbles as Q4_0 plus a fifth bit
// from per-chunk bit words. q in 0..31: 4 maddubs per int16 sum (4 * 2 * 31 * 127 = 31496),
// so the low and high halves of a block sum separately. Q5_0: sum (q - 16) x; Q5_1: d sum q x
// + m sum x.
template <int R>
static void dotQ5Interleaved8Tile(int type, const uchar* g, const signed char* q, size_t qStride, const float* d,
                                  const int* sums, int blocks, float* out, size_t outStride)
{
    const bool q51 = type == GGML_Q5_1;
    const int bitWords = q51 ? 32 : 16, nibbles = bitWords + 32, groupBlock = q51 ? 192 : 176;
    const __m256i ones = _mm256_set1_epi16(1), mask = _mm256_set1_epi8(0x0F);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++, g += groupBlock)
    {
        const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
        __m256i sLo[R], sHi[R];
        for (int r = 0; r < R; r++)
            sLo[r] = sHi[r] = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++)
        {
            const __m256i v = _mm256_loadu_si256((const __m256i*)(g + nibbles + 32 * c));
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, mask), fifthBits(g + bitWords + 8 * c));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask),
                                               fifthBits(g + bitWords + 8 * c + 4));
            for (int r = 0; r < R; r++)
            {
                const signed char* x = q + r * qStride + (size_t)b * 32 + 4 * c;
                sLo[r] = _mm256_add_epi16(sLo[r], _mm256_maddubs_epi16(lo, broadcast4(x)));
                sHi[r] = _mm256_add_epi16(sHi[r], _mm256_maddubs_epi16(hi, broadcast4(x + 16)));
            }
        }
        for (int r = 0; r < R; r++)
        {
            const int ab = r * blocks + b;
            __m256i s32 = _mm256_add_epi32(_mm256_madd_epi16(sLo[r], ones), _mm256_madd_epi16(sHi[r], ones));
            if (!q51)
                s32 = _mm256_sub_epi32(s32, _mm256_set1_epi32(16 * sums[ab]));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(ws, _mm256_set1_ps(d[ab])), acc[r]);
            if (q51)
                acc[r] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(g + 16))),
                                         _mm256_set1_ps(d[ab] * (float)sums[ab]), acc[r]);
        }
    }
    for (int r = 0; r < R; r++)
        _mm256_storeu_ps(out + r * outStride, acc[r]);
}

// A group of 8 interleaved weight rows against R activation rows. Lane j of each vector is
// weight row j: per block of 32 inputs, 4-byte chunks of the 8 rows sit side by side, so one
// maddubs + madd gives the 8 rows' partial dots of a chunk with the same 4 activations
// (broadcast). Per (weight row, activation row, block) the arithmetic is an exact integer dot,
// then one float multiply-add, the same whatever R is: results do not depend on the batch.
template <int R>
static void dotInterleaved8Tile(int type, const uchar* g, const signed char* q, size_t qStride, const float* d,
                                const int* sums, int blocks, float* out, size_t outStride)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    if (type == GGML_Q4_0 || type == GGML_Q4_1)
    {
        // Nibbles 0..15 as unsigned bytes; 8 maddubs results stay within int16 (8 * 2 * 15 * 127
        // = 30480). Q4_0: sum (w - 8) x = sum w x - 8 sum x. Q4_1 (d w + m): d sum w x + m sum x,
        // its 8 mins after the 8 scales.
        const bool q41 = type == GGML_Q4_1;
        const int quants = q41 ? 32 : 16, groupBlock = q41 ? 160 : 144;
        const __m256i mask = _mm256_set1_epi8(0x0F);
        for (int b = 0; b < blocks; b++, g += groupBlock)
        {
            const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
            __m256i s16[R];
            for (int r = 0; r < R; r++)
                s16[r] = _mm256_setzero_si256();
            for (int c = 0; c < 4; c++)
            {
                const __m256i v = _mm256_loadu_si256((const __m256i*)(g + quants + 32 * c));
                const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                for (int r = 0; r < R; r++)
                {
                    const signed char* x = q + r * qStride + (size_t)b * 32 + 4 * c;
                    s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(lo, broadcast4(x)));
                    s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(hi, broadcast4(x + 16)));
                }
            }
            if (q41)
            {
                const __m256 mins = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(g + 16)));
                for (int r = 0; r < R; r++)
                {
                    const int ab = r * blocks + b;
                    const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16[r], ones));
                    acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(ws, _mm256_set1_ps(d[ab])), acc[r]);
                    acc[r] = _mm256_fmadd_ps(mins, _mm256_set1_ps(d[ab] * (float)sums[ab]), acc[r]);
                }
                continue;
            }
            for (int r = 0; r < R; r++)
            {
                const __m256i s32 = _mm256_sub_epi32(_mm256_madd_epi16(s16[r], ones), _mm256_set1_epi32(8 * sums[r * blocks + b]));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(ws, _mm256_set1_ps(d[r * blocks + b])), acc[r]);
            }
        }
    }
    else  // GGML_Q8_0: signed x signed through |w| and sign(x, w), one madd per chunk
    {
        for (int b = 0; b < blocks; b++, g += 272)
        {
            const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
            __m256i s32[R];
            for (int r = 0; r < R; r++)
                s32[r] = _mm256_setzero_si256();
            for (int c = 0; c < 8; c++)
            {
                const __m256i w = _mm256_loadu_si256((const __m256i*)(g + 16 + 32 * c));
                const __m256i wAbs = _mm256_sign_epi8(w, w);
                for (int r = 0; r < R; r++)
                {
                    const __m256i x = broadcast4(q + r * qStride + (size_t)b * 32 + 4 * c);
                    s32[r] = _mm256_add_epi32(s32[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(x, w)), ones));
                }
            }
            for (int r = 0; r < R; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[r]), _mm256_mul_ps(ws, _mm256_set1_ps(d[r * blocks + b])), acc[r]);
        }
    }
    for (int r = 0; r < R; r++)
        _mm256_storeu_ps(out + r * outStride, acc[r]);
}

// Q4_K / Q5_K interleaved super-block (layout in interleaved_weights.cpp): the 8 rows'
// d * sc and dmin * m of sub-block `sub`.
static inline void kQuantSubBlockScales(const uchar* g, __m256 d8, __m256 dmin8, int sub, __m256& scale, __m256& minv)
{
    scale = _mm256_mul_ps(d8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(g + 32 + 8 * sub)))));
    minv = _mm256_mul_ps(dmin8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(g + 96 + 8 * sub)))));
}

// acc + dot * (scale * dx) - minv * (dx * sum): one sub-block of a K-quant row group against
// an activation block with scale dx and quant sum `sum`.
static inline __m256 kQuantAccumulate(__m256 acc, __m256i dot, __m256 scale, __m256 minv, float dx, int sum)
{
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(scale, _mm256_set1_ps(dx)), acc);
    return _mm256_fnmadd_ps(minv, _mm256_set1_ps(dx * (float)sum), acc);
}

// Q4_K, 8 interleaved rows (interleaved_weights.hpp): per super-block of 256 inputs and
// sub-block s of 32, row i contributes d_i sc_is sum(q x) - dmin_i m_is sum(x); the integer
// dots of the 8 rows come out in the lanes as for Q4_0 (8 maddubs fit in int16: 30480).
template <int R>
static void dotQ4KInterleaved8Tile(const uchar* g, const signed char* q, size_t qStride, const float* d,
                                   const int* sums, int blocks, float* out, size_t outStride)
{
    const __m256i ones = _mm256_set1_epi16(1), mask = _mm256_set1_epi8(0x0F);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int sb = 0; sb < blocks / 8; sb++, g += 1184)
    {
        const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
        const __m256 dmin8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(g + 16)));
        for (int j = 0; j < 4; j++)
        {
            __m256i s16[2][R];
            for (int r = 0; r < R; r++)
                s16[0][r] = s16[1][r] = _mm256_setzero_si256();
            const int lo = 8 * sb + 2 * j;  // activation block of the low nibbles; +1: high
            for (int c = 0; c < 8; c++)
            {
                const __m256i v = _mm256_loadu_si256((const __m256i*)(g + 160 + 256 * j + 32 * c));
                const __m256i wLo = _mm256_and_si256(v, mask), wHi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                for (int r = 0; r < R; r++)
                {
                    const signed char* x = q + r * qStride + (size_t)lo * 32 + 4 * c;
                    s16[0][r] = _mm256_add_epi16(s16[0][r], _mm256_maddubs_epi16(wLo, broadcast4(x)));
                    s16[1][r] = _mm256_add_epi16(s16[1][r], _mm256_maddubs_epi16(wHi, broadcast4(x + 32)));
                }
            }
            for (int h = 0; h < 2; h++)
            {
                __m256 scale, minv;
                kQuantSubBlockScales(g, d8, dmin8, 2 * j + h, scale, minv);
                for (int r = 0; r < R; r++)
                {
                    const int ab = r * blocks + lo + h;
                    acc[r] = kQuantAccumulate(acc[r], _mm256_madd_epi16(s16[h][r], ones), scale, minv, d[ab], sums[ab]);
                }
            }
        }
    }
    for (int r = 0; r < R; r++)
        _mm256_storeu_ps(out + r * outStride, acc[r]);
}

// Q6_K, 8 interleaved rows (interleaved_weights.hpp): 6-bit q (0..63) rebuilt from the
// nibble chunks A / B and the 2-bit chunk H; sum (q - 32) x per 16-input group, with the -32
// as a second maddubs of the activations (each term within int16, 4 chunks sum to <= 32512).
template <int R>
static void dotQ6KInterleaved8Tile(const uchar* g, const signed char* q, size_t qStride, const float* d,
                                   int blocks, float* out, size_t outStride)
{
    const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
    const __m256i bias = _mm256_set1_epi8(32);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int sb = 0; sb < blocks / 8; sb++, g += 1680)
    {
        const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
        for (int h = 0; h < 2; h++)
            for (int quarter = 0; quarter < 4; quarter++)
            {
                const int block = 8 * sb + 4 * h + quarter;  // activation block
                for (int group = 0; group < 2; group++)
                {
                    __m256i s16[R];
                    for (int r = 0; r < R; r++)
                        s16[r] = _mm256_setzero_si256();
                    for (int c = 4 * group; c < 4 * group + 4; c++)
                    {
                        const uchar* chunk = g + 144 + 768 * h + 96 * c;
                        const __m256i nib = _mm256_loadu_si256((const __m256i*)(chunk + 32 * (quarter & 1)));
                        const __m256i hi2 = _mm256_loadu_si256((const __m256i*)(chunk + 64));
                        const __m256i lowBits = quarter < 2 ? _mm256_and_si256(nib, low4)
                                                            : _mm256_and_si256(_mm256_srli_epi16(nib, 4), low4);
                        const __m256i highBits = _mm256_and_si256(_mm256_srli_epi16(hi2, 2 * quarter), two);
                        const __m256i w = _mm256_or_si256(lowBits, _mm256_slli_epi16(highBits, 4));
                        for (int r = 0; r < R; r++)
                        {
                            const __m256i x = broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c);
                            s16[r] = _mm256_add_epi16(s16[r], _mm256_sub_epi16(_mm256_maddubs_epi16(w, x),
                                                                               _mm256_maddubs_epi16(bias, x)));
                        }
                    }
                    const int sub = 8 * h + 2 * quarter + group;
                    const __m256 scale = _mm256_mul_ps(d8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                        _mm_loadl_epi64((const __m128i*)(g + 16 + 8 * sub)))));
                    for (int r = 0; r < R; r++)
                    {
                        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16[r], ones));
                        acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(scale, _mm256_set1_ps(d[r * blocks + block])), acc[r]);
                    }
                }
            }
    }
    for (int r = 0; r < R; r++)
        _mm256_storeu_ps(out + r * outStride, acc[r]);
}

// Q5_K, 8 interleaved rows: Q4_K's layout plus a 32-bit word of fifth bits per chunk (low and
// high nibbles). q in 0..31: 4 maddubs per int16 sum, so each sub-block sums in two halves.
template <int R>
static void dotQ5KInterleaved8Tile(const uchar* g, const signed char* q, size_t qStride, const float* d,
                                   const int* sums, int blocks, float* out, size_t outStride)
{
    const __m256i ones = _mm256_set1_epi16(1), mask = _mm256_set1_epi8(0x0F);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int sb = 0; sb < blocks / 8; sb++, g += 1440)
    {
        const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)g));
        const __m256 dmin8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(g + 16)));
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++)
            {
                const int sub = 2 * j + h, block = 8 * sb + sub;
                __m256i s32[R];
                for (int r = 0; r < R; r++)
                    s32[r] = _mm256_setzero_si256();
                for (int half = 0; half < 2; half++)
                {
                    __m256i s16[R];
                    for (int r = 0; r < R; r++)
                        s16[r] = _mm256_setzero_si256();
                    for (int c = 4 * half; c < 4 * half + 4; c++)
                    {
                        const __m256i v = _mm256_loadu_si256((const __m256i*)(g + 416 + 256 * j + 32 * c));
                        const __m256i w = _mm256_or_si256(_mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, mask),
                                                          fifthBits(g + 160 + 64 * j + 8 * c + 4 * h));
                        for (int r = 0; r < R; r++)
                            s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(
                                w, broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c)));
                    }
                    for (int r = 0; r < R; r++)
                        s32[r] = _mm256_add_epi32(s32[r], _mm256_madd_epi16(s16[r], ones));
                }
                __m256 scale, minv;
                kQuantSubBlockScales(g, d8, dmin8, sub, scale, minv);
                for (int r = 0; r < R; r++)
                {
                    const int ab = r * blocks + block;
                    acc[r] = kQuantAccumulate(acc[r], s32[r], scale, minv, d[ab], sums[ab]);
                }
            }
    }
    for (int r = 0; r < R; r++)
        _mm256_storeu_ps(out + r * outStride, acc[r]);
}

template <int R>
static void dotInterleaved8(int type, const uchar* g, const signed char* q, size_t qStride, const float* d,
                            const int* sums, int blocks, float* out, size_t outStride)
{
    if (type == GGML_Q5_K)
    {
        dotQ5KInterleaved8Tile<R>(g, q, qStride, d, sums, blocks, out, outStride);
        return;
    }
    if (type == GGML_Q4_K)
        dotQ4KInterleaved8Tile<R>(g, q, qStride, d, sums, blocks, out, outStride);
    else if (type == GGML_Q5_0 || type == GGML_Q5_1)
        dotQ5Interleaved8Tile<R>(type, g, q, qStride, d, sums, blocks, out, outStride);
    else if (type == GGML_Q6_K)
        dotQ6KInterleaved8Tile<R>(g, q, qStride, d, blocks, out, outStride);
    else
        dotInterleaved8Tile<R>(type, g, q, qStride, d, sums, blocks, out, outStride);
}

void dotQ8Interleaved8Simd(int type, const uchar* group, const signed char* q, const float* d, const int* sums,
                           int blocks, int rows, float* out, size_t outStride)
{
    CV_Assert(type == GGML_Q4_0 || type == GGML_Q4_1 || type == GGML_Q5_0 || type == GGML_Q5_1 || type == GGML_Q8_0 ||
              type == GGML_Q4_K || type == GGML_Q5_K || type == GGML_Q6_K);
    const size_t qStride = (size_t)blocks * 32;
    for (; rows >= 4; rows -= 4, q += 4 * qStride, d += 4 * blocks, sums += 4 * blocks, out += 4 * outStride)
        dotInterleaved8<4>(type, group, q, qStride, d, sums, blocks, out, outStride);
    switch (rows)
    {
    case 3: dotInterleaved8<3>(type, group, q, qStride, d, sums, blocks, out, outStride); break;
    case 2: dotInterleaved8<2>(type, group, q, qStride, d, sums, blocks, out, outStride); break;
    case 1: dotInterleaved8<1>(type, group, q, qStride, d, sums, blocks, out, outStride); break;
    default: break;
    }
}

float dotQ8Simd(int type, const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0.f;
    if (type == GGML_Q4_0 || type == GGML_Q8_0)
    {
        float out;
        dotQ4_0Q8_0Rows<1>(type, w, q, d, sums, blocks, &out);
        return out;
    }
    else if (type == GGML_Q4_1)
    {
        // sum (d q + m) x = d sum q x + m sum x, q in 0..15 as unsigned bytes.
        const __m128i mask = _mm_set1_epi8(0x0F);
        for (int b = 0; b < blocks; b++, w += 20, q += 32)
        {
            const __m128i packed = _mm_loadu_si128((const __m128i*)(w + 4));
            const __m256i wv = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, _mm256_loadu_si256((const __m256i*)q)), ones);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(blockScale(w) * d[b]), acc);
            offset -= blockScale(w + 2) * d[b] * sums[b];
        }
    }
    else if (type == GGML_Q5_0 || type == GGML_Q5_1)
    {
        // q = nibble | fifth bit << 4 (0..31); Q5_0: d sum (q - 16) x; Q5_1: d sum q x + m sum x.
        const bool q51 = type == GGML_Q5_1;
        const int blockBytes = q51 ? 24 : 22, bitsAt = q51 ? 4 : 2;
        const __m128i mask = _mm_set1_epi8(0x0F);
        for (int b = 0; b < blocks; b++, w += blockBytes, q += 32)
        {
            const __m128i packed = _mm_loadu_si128((const __m128i*)(w + bitsAt + 4));
            const __m256i wv = _mm256_or_si256(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask),
                                                                _mm_and_si128(packed, mask)), fifthBits(w + bitsAt));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, _mm256_loadu_si256((const __m256i*)q)), ones);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(blockScale(w) * d[b]), acc);
            offset += q51 ? -blockScale(w + 2) * d[b] * sums[b] : blockScale(w) * d[b] * 16.f * sums[b];
        }
    }
    else if (type == GGML_Q4_K)
    {
        // Per 32-element sub-block j: sum (d sc_j q - dmin m_j) x = d sc_j sum q x - dmin m_j sum x.
        // The activation blocks of 32 line up with the sub-blocks.
        const __m256i mask = _mm256_set1_epi8(0x0F);
        for (int sb = 0; sb < blocks / 8; sb++, w += 144)
        {
            const float dw = blockScale(w), dmin = blockScale(w + 2);
            const uchar* scales = w + 4;
            const uchar* qs = w + 16;
            for (int j = 0; j < 4; j++, qs += 32, q += 64, d += 2, sums += 2)
            {
                const __m256i packed = _mm256_loadu_si256((const __m256i*)qs);
                const __m256i lo = _mm256_and_si256(packed, mask), hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), mask);
                const __m256i pLo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i*)q)), ones);
                const __m256i pHi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i*)(q + 32))), ones);
                int sc, m;
                scaleMinK4(2 * j, scales, sc, m);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pLo), _mm256_set1_ps(dw * sc * d[0]), acc);
                offset += dmin * m * d[0] * sums[0];
                scaleMinK4(2 * j + 1, scales, sc, m);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pHi), _mm256_set1_ps(dw * sc * d[1]), acc);
                offset += dmin * m * d[1] * sums[1];
            }
        }
    }
    else if (type == GGML_Q5_K)
    {
        // As Q4_K with a fifth bit: bit 2j (low nibbles) or 2j + 1 (high) of qh[l] for element l.
        const __m256i mask = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
        for (int sb = 0; sb < blocks / 8; sb++, w += 176)
        {
            const float dw = blockScale(w), dmin = blockScale(w + 2);
            const uchar* scales = w + 4;
            const __m256i qh = _mm256_loadu_si256((const __m256i*)(w + 16));
            const uchar* qs = w + 48;
            for (int j = 0; j < 4; j++, qs += 32, q += 64, d += 2, sums += 2)
            {
                const __m256i packed = _mm256_loadu_si256((const __m256i*)qs);
                const __m256i bitLo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
                const __m256i bitHi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
                const __m256i lo = _mm256_or_si256(_mm256_and_si256(packed, mask), bitLo);
                const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), mask), bitHi);
                const __m256i pLo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i*)q)), ones);
                const __m256i pHi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i*)(q + 32))), ones);
                int sc, m;
                scaleMinK4(2 * j, scales, sc, m);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pLo), _mm256_set1_ps(dw * sc * d[0]), acc);
                offset += dmin * m * d[0] * sums[0];
                scaleMinK4(2 * j + 1, scales, sc, m);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pHi), _mm256_set1_ps(dw * sc * d[1]), acc);
                offset += dmin * m * d[1] * sums[1];
            }
        }
    }
    else if (type == GGML_Q6_K)
    {
        // 6-bit q (0..63) of 16-element groups, each with an int8 scale: sum d sc (q - 32) x.
        // An activation block of 32 spans two groups: the low four int32 lanes of the madd
        // result hold the first group, the high four the second.
        const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
        for (int sb = 0; sb < blocks / 8; sb++, w += 210)
        {
            const uchar* ql = w;
            const uchar* qh = w + 128;
            const signed char* sc = reinterpret_cast<const signed char*>(w + 192);
            const float dw = blockScale(w + 208);
            for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8)
            {
                const __m256i l0 = _mm256_loadu_si256((const __m256i*)ql), l1 = _mm256_loadu_si256((const __m256i*)(ql + 32));
                const __m256i h = _mm256_loadu_si256((const __m256i*)qh);
                const __m256i parts[4] = {
                    _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(h, two), 4)),
                    _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4))};
                for (int k = 0; k < 4; k++, q += 32, d++)
                {
                    const __m256i xv = _mm256_loadu_si256((const __m256i*)q);
                    const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(parts[k], xv), _mm256_maddubs_epi16(bias, xv));
                    const __m256i p = _mm256_madd_epi16(p16, ones);
                    const __m256 scale = _mm256_set_m128(_mm_set1_ps(dw * sc[2 * k + 1] * d[0]), _mm_set1_ps(dw * sc[2 * k] * d[0]));
                    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc);
                }
            }
        }
    }
    return hsum256(acc) - offset;
}

#else  // !CV_AVX2

bool dequantizeRowSimd(int, const uchar*, float*, int64)
{
    return false;
}

bool hasIntegerDotSimd()
{
    return false;
}

void quantizeRowQ8Simd(const float*, signed char*, float*, int*, int)
{
    CV_Error(Error::StsNotImplemented, "8-bit activation path needs AVX2");
}

float dotQ8Simd(int, const uchar*, const signed char*, const float*, const int*, int)
{
    CV_Error(Error::StsNotImplemented, "8-bit activation path needs AVX2");
}

void dotQ8RowsSimd(int, const uchar*, const signed char*, const float*, const int*, int, int, float*)
{
    CV_Error(Error::StsNotImplemented, "8-bit activation path needs AVX2");
}

void dotQ8Rows2Simd(int, const uchar*, size_t, const signed char*, const float*, const int*, int, int, float*, size_t)
{
    CV_Error(Error::StsNotImplemented, "8-bit activation path needs AVX2");
}

void dotQ8Interleaved8Simd(int, const uchar*, const signed char*, const float*, const int*, int, int, float*, size_t)
{
    CV_Error(Error::StsNotImplemented, "8-bit activation path needs AVX2");
}

float dotF32Simd(const float* a, const float* b, int n)
{
    return dotF32(a, b, n);
}

#endif

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
