// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Compiled once per dispatched ISA with OpenCV's universal intrinsics at that ISA's width.
// Results differ between ISAs only by float rounding (reduction order, exp approximation).

#include <opencv2/core/hal/intrin.hpp>
#include "../common/vector_ops.hpp"
#include "attention_kernels.hpp"
#include "../kv_cache/kv_storage_codec.hpp"

#include <cstring>
#include <type_traits>

#if CV_AVX512_SKX && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 shuffle intrinsics start from _mm512_undefined_*() and warn that it is
// uninitialized (GCC bug 105593, fixed in GCC 13): not our code's values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void attentionScoresSimd(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                         float scale, float* scores, int ld);
void attentionSoftmaxRowsSimd(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut);
void attentionAccumulateSimd(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                             float* acc, size_t accStride);
void attentionScoresHalfSimd(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                             float scale, float* scores, int ld);
void attentionAccumulateHalfSimd(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride);
void attentionScoresInt8Simd(const float* q, int group, int headDim, const schar* k, size_t kStride, int n,
                             float scale, float* scores, int ld);
void attentionAccumulateInt8Simd(const float* p, int group, int n, int ld, const schar* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

// Keys and values are float rows, half-precision ones or 8-bit ones (headDim int8 elements, then
// the row's float scale: KVStorageCodec's CV_8S). The vector paths take them in blocks of one
// vector's lanes of rows: a block of half or 8-bit keys converted once into a buffer for all the
// query heads, half or 8-bit values converted in registers once per set of heads; the scalar
// paths take a whole row as floats (converted on the stack: headDim <= kMaxConvertedHeadDim).
// An 8-bit element becomes q * scale as KVStorageCodec::decode() makes it, a half one its exact
// float, so every storage gives the results of its rows decoded to float.
struct FloatRow
{
    const float* data;
    explicit FloatRow(const float* row, int) : data(row) {}
};

struct HalfRow
{
    float buffer[kMaxConvertedHeadDim];
    const float* data;
    HalfRow(const hfloat* row, int n) : data(buffer)
    {
        for (int i = 0; i < n; i++)
            buffer[i] = (float)row[i];
    }
};

static inline float int8RowScale(const schar* row, int n)
{
    return KVStorageCodec::int8RowScale(reinterpret_cast<const uchar*>(row), n);
}

struct Int8Row
{
    float buffer[kMaxConvertedHeadDim];
    const float* data;
    Int8Row(const schar* row, int n) : data(buffer)
    {
        const float scale = int8RowScale(row, n);
        for (int i = 0; i < n; i++)
            buffer[i] = row[i] * scale;
    }
};

template <typename T> struct RowAsFloatsOf;
template <> struct RowAsFloatsOf<float> { typedef FloatRow type; };
template <> struct RowAsFloatsOf<hfloat> { typedef HalfRow type; };
template <> struct RowAsFloatsOf<schar> { typedef Int8Row type; };
template <typename T>
using RowAsFloats = typename RowAsFloatsOf<T>::type;

#if CV_SIMD
static const int kBlockRows = VTraits<v_float32>::nlanes;

//! Floats the block buffer of row type T holds: none for float rows (read in place).
template <typename T>
struct BlockBuffer
{
    static const int floats = std::is_same<T, float>::value ? 1 : kBlockRows * kMaxConvertedHeadDim;
};

// A block of `count` rows as floats: float rows in place (their own stride), half and 8-bit
// rows converted into `buffer` (stride headDim).
static inline const float* blockAsFloats(const float* rows, size_t stride, int, int, float*, size_t* floatStride)
{
    *floatStride = stride;
    return rows;
}

static inline const float* blockAsFloats(const hfloat* rows, size_t stride, int count, int headDim, float* buffer,
                                         size_t* floatStride)
{
    const int lanes = VTraits<v_float32>::vlanes();
    for (int r = 0; r < count; r++)
        for (int i = 0; i < headDim; i += lanes)
            v_store(buffer + (size_t)r * headDim + i, vx_load_expand(rows + r * stride + i));
    *floatStride = headDim;
    return buffer;
}

static inline const float* blockAsFloats(const schar* rows, size_t stride, int count, int headDim, float* buffer,
                                         size_t* floatStride)
{
    const int lanes = VTraits<v_float32>::vlanes();
    for (int r = 0; r < count; r++)
    {
        const schar* row = rows + r * stride;
        const v_float32 scale = vx_setall_f32(int8RowScale(row, headDim));
        for (int i = 0; i < headDim; i += lanes)
            v_store(buffer + (size_t)r * headDim + i, v_mul(v_cvt_f32(vx_load_expand_q(row + i)), scale));
    }
    *floatStride = headDim;
    return buffer;
}

// Asks for the cache lines `ahead` bytes past each of `count` rows: a run of rows spans a whole
// slab of pages (paged_kv_cache.hpp), and the hardware prefetchers alone leave the first use of
// each row waiting on memory (a long context's keys and values are read once per step). Past
// the end of the rows is harmless: a prefetch never faults.
//
// Keys are asked for 8 KB ahead, a block's rows spread over its passes (one per query head, or
// per element group with the heads across the lanes); values 4 KB ahead, a block's rows at once. (Measured in a small program on the cache's layout, 22 layers,
// 4 KV heads of 8 query heads, head size 64, 4096 positions, half precision, an EPYC Zen 5: keys
// 15.0 -> 13.9 ns a row against 2 KB at once, values 7.4 -> 6.4; 4 KB spread, 16 KB and more
// were slower. The scores' compute per row is 1.6x the value sums', hence the longer lead.)
static const size_t kKeyPrefetchBytes = 8192, kValuePrefetchBytes = 4096;

template <typename T>
static inline void prefetchRowsAhead(const T* rows, size_t stride, int count, int headDim, size_t ahead)
{
#if defined(__GNUC__)
    // An 8-bit row's scale follows its elements.
    const size_t rowBytes = headDim * sizeof(T) + (std::is_same<T, schar>::value ? sizeof(float) : 0);
    for (int r = 0; r < count; r++)
    {
        const char* row = reinterpret_cast<const char*>(rows + (size_t)r * stride) + ahead;
        for (size_t line = 0; line < rowBytes; line += 64)
            __builtin_prefetch(row + line);
    }
#else
    CV_UNUSED(rows); CV_UNUSED(stride); CV_UNUSED(count); CV_UNUSED(headDim); CV_UNUSED(ahead);
#endif
}

// A block's keys are asked for spread over the block's `parts` passes, pass p taking rows
// [p * rowsPerPart, ...): rowsPerPart computed once per call, no division per pass. (A helper
// taking the block and the pass measured 8% slower in the heads-across-lanes loop.)
static inline int keyRowsPerPart(int parts) { return (kBlockRows + parts - 1) / parts; }

// Lane t of the result: the sum of the lanes of s[t], for the kBlockRows vectors s.
static inline v_float32 sumEachVector(const v_float32* s)
{
#if CV_SIMD512 && CV_AVX512_SKX
    static_assert(VTraits<v_float32>::nlanes == 16, "512-bit vectors expected");
    // A tree of shuffles and adds (256-bit halves, 128-bit blocks, pairs, lanes): 45
    // instructions for 16 sums. It leaves sum t in lane order[t]; order is its own inverse, so
    // taking the inputs in that order leaves the sums in order.
    static const int order[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};
    __m512 halves[8], quarters[4], pairs[2];
    for (int t = 0; t < 8; t++)
    {
        const __m512 a = s[order[t]].val, b = s[order[t + 8]].val;
        halves[t] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
    for (int t = 0; t < 4; t++)
        quarters[t] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[t], halves[t + 4], 0x88),
                                    _mm512_shuffle_f32x4(halves[t], halves[t + 4], 0xDD));
    for (int t = 0; t < 2; t++)
    {
        const __m512d a = _mm512_castps_pd(quarters[t]), b = _mm512_castps_pd(quarters[t + 2]);
        pairs[t] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    return v_float32(_mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88), _mm512_shuffle_ps(pairs[0], pairs[1], 0xDD)));
#elif CV_SIMD256
    // AVX2: v_reduce_sum4 leaves each 128-bit half's sums of four vectors; the halves are added.
    const v_float32 a = v_reduce_sum4(s[0], s[1], s[2], s[3]), b = v_reduce_sum4(s[4], s[5], s[6], s[7]);
    return v_add(v_combine_low(a, b), v_combine_high(a, b));
#else
    static_assert(VTraits<v_float32>::nlanes == 4, "128-bit vectors expected");
    return v_reduce_sum4(s[0], s[1], s[2], s[3]);
#endif
}
#endif

#if (CV_SIMD512 && CV_AVX512_SKX) || (CV_SIMD256 && CV_AVX2)
#define LLM_SCORES_HEADS_ACROSS_LANES 1

#if CV_SIMD512
// r[j] lane i = r[i] lane j before, for 16 vectors of 16 floats (4 stages of 16 shuffles).
static inline void transposeBlock(v_float32* v)
{
    __m512 r[16], a[16], b[16];
    for (int k = 0; k < 16; k++)
        r[k] = v[k].val;
    for (int k = 0; k < 8; k++)
    {
        a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    // b[4k + m], 128-bit block c: elements 4c + m of rows 4k .. 4k + 3.
    for (int k = 0; k < 4; k++)
    {
        const __m512d a0 = _mm512_castps_pd(a[4 * k]), a1 = _mm512_castps_pd(a[4 * k + 1]);
        const __m512d a2 = _mm512_castps_pd(a[4 * k + 2]), a3 = _mm512_castps_pd(a[4 * k + 3]);
        b[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        b[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        b[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        b[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    // Element 4c + m of all rows: block c of b[m], b[4 + m], b[8 + m], b[12 + m].
    for (int m = 0; m < 4; m++)
    {
        const __m512 x0 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0x44), x1 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0xEE);
        const __m512 y0 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0x44), y1 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0xEE);
        v[m] = v_float32(_mm512_shuffle_f32x4(x0, y0, 0x88));
        v[4 + m] = v_float32(_mm512_shuffle_f32x4(x0, y0, 0xDD));
        v[8 + m] = v_float32(_mm512_shuffle_f32x4(x1, y1, 0x88));
        v[12 + m] = v_float32(_mm512_shuffle_f32x4(x1, y1, 0xDD));
    }
}

//! D consecutive floats from e, repeated across the 16 lanes.
template <int D>
static inline v_float32 broadcastElements(const float* e)
{
    if (D == 1)
        return v_float32(_mm512_set1_ps(*e));
    if (D == 2)
    {
        double pair;
        std::memcpy(&pair, e, sizeof(pair));
        return v_float32(_mm512_castpd_ps(_mm512_set1_pd(pair)));
    }
    if (D == 4)
        return v_float32(_mm512_broadcast_f32x4(_mm_loadu_ps(e)));
    return v_float32(_mm512_broadcast_f32x8(_mm256_loadu_ps(e)));
}
#else
// r[j] lane i = r[i] lane j before, for 8 vectors of 8 floats (3 stages of 8 shuffles).
static inline void transposeBlock(v_float32* v)
{
    __m256 a[8], b[8];
    for (int k = 0; k < 4; k++)
    {
        a[2 * k] = _mm256_unpacklo_ps(v[2 * k].val, v[2 * k + 1].val);
        a[2 * k + 1] = _mm256_unpackhi_ps(v[2 * k].val, v[2 * k + 1].val);
    }
    // b[4k + m], each 128-bit half: element (half) * 4 + m of rows 4k .. 4k + 3.
    for (int k = 0; k < 2; k++)
    {
        b[4 * k] = _mm256_shuffle_ps(a[4 * k], a[4 * k + 2], 0x44);
        b[4 * k + 1] = _mm256_shuffle_ps(a[4 * k], a[4 * k + 2], 0xEE);
        b[4 * k + 2] = _mm256_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0x44);
        b[4 * k + 3] = _mm256_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0xEE);
    }
    for (int m = 0; m < 4; m++)
    {
        v[m] = v_float32(_mm256_permute2f128_ps(b[m], b[4 + m], 0x20));
        v[4 + m] = v_float32(_mm256_permute2f128_ps(b[m], b[4 + m], 0x31));
    }
}

//! D consecutive floats from e, repeated across the 8 lanes.
template <int D>
static inline v_float32 broadcastElements(const float* e)
{
    if (D == 1)
        return v_float32(_mm256_set1_ps(*e));
    if (D == 2)
        return v_float32(_mm256_castpd_ps(_mm256_broadcast_sd(reinterpret_cast<const double*>(e))));
    return v_float32(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(e)));
}
#endif

/* Scores of the whole blocks of L keys (L = a vector's lanes, 16 or 8) for G query heads at a
   time (G a power of two up to L), the heads across the lanes: lane h * D + d (D = L / G) of the
   vector for element group b holds q[h][b * D + d], and a key's D elements b * D .. are
   broadcast to every head's lanes, so one fused multiply-add serves G heads and a key's
   accumulator needs no shuffle tree: one L x L transpose per block gives every head's L scores
   (its D lanes added). Returns the keys done. */
template <int G, typename T>
static int scoresHeadsAcrossLanes(const float* q, int group, int headDim, const T* k, size_t kStride, int n,
                                  float scale, float* scores, int ld)
{
    const int L = kBlockRows, D = L / G, elementGroups = headDim / D;
    const int rowsPerPart = keyRowsPerPart(elementGroups);
    float buffer[BlockBuffer<T>::floats];
    CV_DECL_ALIGNED(64) float qt[kMaxConvertedHeadDim * G];
    const v_float32 vscale = vx_setall_f32(scale);
    int j = 0;
    for (int h0 = 0; h0 < group; h0 += G)
    {
        for (int b = 0; b < elementGroups; b++)
            for (int h = 0; h < G; h++)
                for (int d = 0; d < D; d++)
                    qt[b * L + h * D + d] = q[(size_t)(h0 + h) * headDim + b * D + d];
        for (j = 0; j + L <= n; j += L)
        {
            size_t stride;
            const float* block = blockAsFloats(k + (size_t)j * kStride, kStride, L, headDim, buffer, &stride);
            v_float32 acc[kBlockRows];
            for (int t = 0; t < L; t++)
                acc[t] = vx_setzero_f32();
            for (int b = 0; b < elementGroups; b++)
            {
                if (h0 == 0 && b * rowsPerPart < L)
                    prefetchRowsAhead(k + (size_t)(j + b * rowsPerPart) * kStride, kStride,
                                      std::min(rowsPerPart, L - b * rowsPerPart), headDim, kKeyPrefetchBytes);
                const v_float32 qv = vx_load_aligned(qt + b * L);
                for (int t = 0; t < L; t++)
                    acc[t] = v_fma(qv, broadcastElements<D>(block + t * stride + b * D), acc[t]);
            }
            transposeBlock(acc);
            for (int h = 0; h < G; h++)
            {
                v_float32 sum = acc[h * D];
                for (int d = 1; d < D; d++)
                    sum = v_add(sum, acc[h * D + d]);
                v_store(scores + (size_t)(h0 + h) * ld + j, v_mul(sum, vscale));
            }
        }
    }
    return j;
}
#endif

template <typename T>
static void attentionScoresOf(const float* q, int group, int headDim, const T* k, size_t kStride, int n, float scale,
                              float* scores, int ld)
{
    int j = 0;
#ifdef LLM_SCORES_HEADS_ACROSS_LANES
    // 2, 4, 8 or a multiple of a vector's lanes of query heads per KV head: the whole blocks with
    // the heads across the lanes (in a small program on the cache's layout, 8 heads of 64, from
    // memory, AVX-512: the scores 4.8 -> 3.6 ms a step of 22 layers x 4 KV heads x 4096
    // positions, 25% less).
    if (headDim % kBlockRows == 0 && headDim <= kMaxConvertedHeadDim)
    {
        if (group % kBlockRows == 0)
            j = scoresHeadsAcrossLanes<kBlockRows>(q, group, headDim, k, kStride, n, scale, scores, ld);
        else if (group == 8)
            j = scoresHeadsAcrossLanes<8>(q, group, headDim, k, kStride, n, scale, scores, ld);
        else if (group == 4)
            j = scoresHeadsAcrossLanes<4>(q, group, headDim, k, kStride, n, scale, scores, ld);
        else if (group == 2)
            j = scoresHeadsAcrossLanes<2>(q, group, headDim, k, kStride, n, scale, scores, ld);
    }
#endif
#if CV_SIMD
    // Otherwise one accumulator per key of a block: the block's scores come out of one tree of
    // shuffles (sumEachVector) instead of a horizontal sum per key and head.
    const int lanes = VTraits<v_float32>::vlanes();
    if (headDim % lanes == 0 && headDim <= kMaxConvertedHeadDim)
    {
        float buffer[BlockBuffer<T>::floats];
        const v_float32 vscale = vx_setall_f32(scale);
        const int rowsPerPart = keyRowsPerPart(group);
        for (; j + kBlockRows <= n; j += kBlockRows)
        {
            size_t stride;
            const float* block = blockAsFloats(k + (size_t)j * kStride, kStride, kBlockRows, headDim, buffer, &stride);
            for (int h = 0; h < group; h++)
            {
                if (h * rowsPerPart < kBlockRows)
                    prefetchRowsAhead(k + (size_t)(j + h * rowsPerPart) * kStride, kStride,
                                      std::min(rowsPerPart, kBlockRows - h * rowsPerPart), headDim, kKeyPrefetchBytes);
                const float* qh = q + (size_t)h * headDim;
                v_float32 s[kBlockRows];
                for (int t = 0; t < kBlockRows; t++)
                    s[t] = vx_setzero_f32();
                for (int i = 0; i < headDim; i += lanes)
                {
                    const v_float32 qv = vx_load(qh + i);
                    for (int t = 0; t < kBlockRows; t++)
                        s[t] = v_fma(qv, vx_load(block + t * stride + i), s[t]);
                }
                v_store(scores + (size_t)h * ld + j, v_mul(sumEachVector(s), vscale));
            }
        }
    }
#endif
    for (k += (size_t)j * kStride; j < n; j++, k += kStride)
    {
        const RowAsFloats<T> row(k, headDim);
        for (int h = 0; h < group; h++)
            scores[h * ld + j] = dotF32(q + (size_t)h * headDim, row.data, headDim) * scale;
    }
}

void attentionScoresSimd(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                         float scale, float* scores, int ld)
{
    attentionScoresOf(q, group, headDim, k, kStride, n, scale, scores, ld);
}

void attentionScoresHalfSimd(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                             float scale, float* scores, int ld)
{
    attentionScoresOf(q, group, headDim, k, kStride, n, scale, scores, ld);
}

void attentionScoresInt8Simd(const float* q, int group, int headDim, const schar* k, size_t kStride, int n,
                             float scale, float* scores, int ld)
{
    attentionScoresOf(q, group, headDim, k, kStride, n, scale, scores, ld);
}


void attentionSoftmaxRowsSimd(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut)
{
    for (int h = 0; h < rows; h++)
    {
        float* s = scores + (size_t)h * ld;
        float m = -FLT_MAX;
        int j = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
        {
            v_float32 vmax = vx_setall_f32(-FLT_MAX);
            for (; j + VTraits<v_float32>::vlanes() <= n; j += VTraits<v_float32>::vlanes())
                vmax = v_max(vmax, vx_load(s + j));
            m = v_reduce_max(vmax);
        }
#endif
        for (; j < n; j++)
            m = std::max(m, s[j]);
        j = 0;
        float sum = 0.f;
#if (CV_SIMD || CV_SIMD_SCALABLE)
        const int lanes = VTraits<v_float32>::vlanes();
        const v_float32 vm = vx_setall_f32(m);
        v_float32 vsum = vx_setzero_f32();
        for (; j + lanes <= n; j += lanes)
        {
            const v_float32 e = expNonPositive(v_sub(vx_load(s + j), vm));
            v_store(s + j, e);
            vsum = v_add(vsum, e);
        }
        sum = v_reduce_sum(vsum);
#endif
        for (; j < n; j++)
        {
            s[j] = std::exp(s[j] - m);
            sum += s[j];
        }
        maxOut[h] = m;
        sumOut[h] = sum;
    }
}


#if CV_SIMD
// A row's vector as floats: float rows loaded, half rows converted in registers, 8-bit rows
// converted and multiplied by the row's scale (rowScale(): their float `scaleAt` elements on).
static inline v_float32 rowScale(const float*, int) { return vx_setzero_f32(); }
static inline v_float32 rowScale(const hfloat*, int) { return vx_setzero_f32(); }
static inline v_float32 rowScale(const schar* row, int scaleAt) { return vx_setall_f32(int8RowScale(row, scaleAt)); }
static inline v_float32 loadAsFloats(const float* row, const v_float32&) { return vx_load(row); }
static inline v_float32 loadAsFloats(const hfloat* row, const v_float32&) { return vx_load_expand(row); }
static inline v_float32 loadAsFloats(const schar* row, const v_float32& scale)
{
    return v_mul(v_cvt_f32(vx_load_expand_q(row)), scale);
}

// Accumulators the value sums hold in registers: half the registers (AVX-512 has 32, the others 16).
static const int kValueAccumulators = CV_SIMD512 ? 16 : 8;

// For G query heads and a slice of S vectors of the head dimension: acc[h * accStride + slice]
// += sum over j < n of p[h * ld + j] * v[j * vStride + slice], the G x S accumulators held in
// registers over the n rows. Each row's slice is loaded (converted) once for the G heads; every
// accumulator element takes its fused multiply-adds in row order, as one row at a time would.
template <int G, int S, typename T>
static inline void accumulateHeads(const float* p, int ld, int n, const T* v, size_t vStride, int scaleAt, float* acc,
                                   size_t accStride)
{
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 a[G][S];
    for (int h = 0; h < G; h++)
        for (int k = 0; k < S; k++)
            a[h][k] = vx_load(acc + h * accStride + k * lanes);
    for (int j = 0; j < n; j++, v += vStride)
    {
        v_float32 x[S];
        const v_float32 scale = rowScale(v, scaleAt);
        for (int k = 0; k < S; k++)
            x[k] = loadAsFloats(v + k * lanes, scale);
        for (int h = 0; h < G; h++)
        {
            const v_float32 w = vx_setall_f32(p[h * ld + j]);
            for (int k = 0; k < S; k++)
                a[h][k] = v_fma(w, x[k], a[h][k]);
        }
    }
    for (int h = 0; h < G; h++)
        for (int k = 0; k < S; k++)
            v_store(acc + h * accStride + k * lanes, a[h][k]);
}

// accumulateHeads over the whole head dimension for G heads: slices of S = 4, 2 or 1 vectors,
// the G x S accumulators within kValueAccumulators.
template <int G, typename T>
static inline void accumulateHeadsAllDims(const float* p, int ld, int n, const T* v, size_t vStride, int headDim,
                                          float* acc, size_t accStride)
{
    const int lanes = VTraits<v_float32>::vlanes();
    const int S = G * 4 <= kValueAccumulators ? 4 : G * 2 <= kValueAccumulators ? 2 : 1;
    int i = 0;
    for (; i + S * lanes <= headDim; i += S * lanes)
        accumulateHeads<G, S>(p, ld, n, v + i, vStride, headDim - i, acc + i, accStride);
    if (S > 2 && i + 2 * lanes <= headDim)
    {
        accumulateHeads<G, 2>(p, ld, n, v + i, vStride, headDim - i, acc + i, accStride);
        i += 2 * lanes;
    }
    for (; i < headDim; i += lanes)
        accumulateHeads<G, 1>(p, ld, n, v + i, vStride, headDim - i, acc + i, accStride);
}
#endif

template <typename T>
static void attentionAccumulateOf(const float* p, int group, int n, int ld, const T* v, size_t vStride, int headDim,
                                  float* acc, size_t accStride)
{
#if CV_SIMD
    // Per block of rows: the query heads in sets of up to 4, each row's values loaded (half rows
    // converted in registers) once per set, the set's accumulators in registers over the block.
    // (In a small program on the cache's layout, 8 heads of 64 per KV head, on an EPYC Zen 5: a
    // pass per head over a converted block chained each accumulator's fused multiply-adds through
    // 4 registers and loaded every value once per head, 1.5x slower from the cache, 1.2x from
    // memory; sets of 8 heads broadcast each weight for fewer fused multiply-adds: AVX2 13.3 ->
    // 9.5 ns a row from the cache, 5.15 -> 3.8 ms a step from memory with sets of 4, AVX-512
    // 5.4 -> 5.15 ns with 4 x 4 vectors of accumulators instead of 8 x 2.)
    const int lanes = VTraits<v_float32>::vlanes();
    if (headDim % lanes == 0)
    {
        for (int j = 0; j < n; j += kBlockRows)
        {
            const int count = std::min(kBlockRows, n - j);
            const T* block = v + (size_t)j * vStride;
            prefetchRowsAhead(block, vStride, count, headDim, kValuePrefetchBytes);
            // Heads [h, h + G) for G = 4 while 4 are left, then 2, 1 (each at most once).
            int h = 0;
            auto headSet = [&](auto G) {
                accumulateHeadsAllDims<decltype(G)::value>(p + (size_t)h * ld + j, ld, count, block, vStride, headDim,
                                                           acc + h * accStride, accStride);
                h += G;
            };
            while (group - h >= 4)
                headSet(std::integral_constant<int, 4>());
            if (group - h >= 2)
                headSet(std::integral_constant<int, 2>());
            if (group - h == 1)
                headSet(std::integral_constant<int, 1>());
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++, v += vStride)
    {
        const RowAsFloats<T> row(v, headDim);
        for (int h = 0; h < group; h++)
        {
            const float w = p[h * ld + j];
            float* a = acc + (size_t)h * accStride;
            int i = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
            const int lanes = VTraits<v_float32>::vlanes();
            const v_float32 vw = vx_setall_f32(w);
            for (; i + lanes <= headDim; i += lanes)
                v_store(a + i, v_fma(vw, vx_load(row.data + i), vx_load(a + i)));
#endif
            for (; i < headDim; i++)
                a[i] += w * row.data[i];
        }
    }
}

void attentionAccumulateSimd(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                             float* acc, size_t accStride)
{
    attentionAccumulateOf(p, group, n, ld, v, vStride, headDim, acc, accStride);
}

void attentionAccumulateHalfSimd(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride)
{
    attentionAccumulateOf(p, group, n, ld, v, vStride, headDim, acc, accStride);
}

void attentionAccumulateInt8Simd(const float* p, int group, int n, int ld, const schar* v, size_t vStride, int headDim,
                                 float* acc, size_t accStride)
{
    attentionAccumulateOf(p, group, n, ld, v, vStride, headDim, acc, accStride);
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
