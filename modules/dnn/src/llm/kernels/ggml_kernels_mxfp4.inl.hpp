// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AVX2 / AVX-512 kernels of MXFP4 (gpt-oss's expert weights): the vector decoder, the integer dot
// products with 8-bit activation blocks (one row and the multi-row tile; the 8-row interleaved
// layout, and two groups at once in AVX-512 builds). Included by ggml_kernels.simd.hpp inside
// its ISA namespace when CV_AVX2.
//
// A quant's value is one of 16 small integers (kMXFP4Values: E2M1 doubled, -12..12) times a
// power of two (mxfp4HalfScale), so the integer path is Q4_0's with a byte shuffle mapping each
// nibble to its integer, then one float multiply by the weight and activation scales per block:
// as ggml-cpu's ggml_vec_dot_mxfp4_q8_0, with the activations rounded as its Q8_0
// (the type's llamaActivations). Integer sums are exact and products with a power of two too, so
// every kernel gives each (weight row, activation row) result from the same float operations
// whatever the number of rows.

// The 8 rows' scales of an interleaved group (E8M0 bytes) as floats, exactly as mxfp4HalfScale:
// exponent field e - 1, or the subnormals 2^-128 / 2^-127 for e < 2.
static inline __m256 mxfp4Scales8(const uint8_t* e)
{
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)e));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), v)));
}

// The 16 quant values as signed bytes (a pshufb table), and the same plus 12 (0..24: unsigned,
// for maddubs / vpdpbusd with the activations; the 12 comes back as 12 times their block sum).
static inline __m128i mxfp4Values()
{
    return _mm_loadu_si128((const __m128i*)kMXFP4Values);
}

static const int kMXFP4Offset = 12;

static inline __m128i mxfp4OffsetValues()
{
    return _mm_add_epi8(mxfp4Values(), _mm_set1_epi8(kMXFP4Offset));
}

// A block's 32 quants as signed bytes in element order (low nibbles: 0..15, high: 16..31).
static inline __m256i mxfp4Quants(const block_mxfp4& b, __m128i values)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i packed = _mm_loadu_si128((const __m128i*)b.qs);
    return _mm256_set_m128i(_mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(packed, 4), mask)),
                            _mm_shuffle_epi8(values, _mm_and_si128(packed, mask)));
}

// The scalar decoder's bits: small integers times a power of two are exact products (blocks with
// a subnormal scale, e < 2, as the scalar decoder builds them: see mxfp4TinyValue).
static void decodeMXFP4(const uchar* src, float* y, int64 n)
{
    const __m128i values = mxfp4Values();
    const block_mxfp4* b = reinterpret_cast<const block_mxfp4*>(src);
    for (int64 i = 0; i < n / QK_MXFP4; i++, b++, y += 32)
    {
        if (b->e < 2)
        {
            for (int j = 0; j < 16; j++)
            {
                y[j] = mxfp4TinyValue(b->e, kMXFP4Values[b->qs[j] & 0x0F]);
                y[j + 16] = mxfp4TinyValue(b->e, kMXFP4Values[b->qs[j] >> 4]);
            }
            continue;
        }
        const __m256 d = _mm256_set1_ps(mxfp4HalfScale(b->e));
        const __m256i v = mxfp4Quants(*b, values);
        const __m128i half[2] = {_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)};
        for (int k = 0; k < 4; k++)
        {
            const __m128i part = k % 2 ? _mm_srli_si128(half[k / 2], 8) : half[k / 2];
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part)), d));
        }
    }
}

// W weight rows (wStride bytes apart) against R activation rows, each weight block unpacked once
// for the R rows: signed x signed through |w| and sign(x, w) (products up to 12 x 127, pairs
// within int16), as ggml's mul_add_epi8; the same operations per (weight row, activation row)
// whatever W and R are.
template <int W, int R>
static void dotMXFP4Tile(const uchar* w, size_t wStride, const signed char* q, const float* d,
                         const int* sums, int blocks, float* out, size_t outStride)
{
    CV_UNUSED(sums);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m128i values = mxfp4Values();
    const size_t qStride = (size_t)blocks * 32;
    __m256 acc[W][R];
    for (int i = 0; i < W; i++)
        for (int r = 0; r < R; r++)
            acc[i][r] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++)
    {
        __m256i wv[W], wAbs[W];
        float ws[W];
        for (int i = 0; i < W; i++)
        {
            const block_mxfp4& wb = reinterpret_cast<const block_mxfp4*>(w + i * wStride)[b];
            wv[i] = mxfp4Quants(wb, values);
            wAbs[i] = _mm256_sign_epi8(wv[i], wv[i]);
            ws[i] = mxfp4HalfScale(wb.e);
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
    for (int i = 0; i < W; i++)
        for (int r = 0; r < R; r++)
            out[i * outStride + r] = hsum256(acc[i][r]);
}

static float dotQ8MXFP4(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    float out;
    dotMXFP4Tile<1, 1>(w, 0, q, d, sums, blocks, &out, 0);
    return out;
}

static void tileMXFP4(const uchar* w, size_t wStride, int wRows, const signed char* q, const float* d,
                      const int* sums, int blocks, int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    byRowTiles(rows, [&](auto R, int r) {
        constexpr int kRows = decltype(R)::value;
        const signed char* qr = q + r * qStride;
        const float* dr = d + r * blocks;
        const int* sr = sums + r * blocks;
        if (wRows == 2)
            dotMXFP4Tile<2, kRows>(w, wStride, qr, dr, sr, blocks, out + r, outStride);
        else
            dotMXFP4Tile<1, kRows>(w, 0, qr, dr, sr, blocks, out + r, outStride);
    });
}

// MXFP4 on the 8-row interleaved layout (block_mxfp4x8): LegacyInterleaved8's Q4_0 with each
// nibble shuffled to its value plus 12 (0..24, unsigned), minus 12 sum x per block. Low and high
// nibbles sum apart: 4 maddubs per int16 sum (4 * 2 * 24 * 127 = 24384; 8 would overflow).
struct MXFP4Interleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d,
                                      const int* sums, int blocks, float* out, size_t outStride)
    {
        const __m256i mask = _mm256_set1_epi8(0x0F);
        const __m256i table = _mm256_broadcastsi128_si256(mxfp4OffsetValues());
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_mxfp4x8* g = reinterpret_cast<const block_mxfp4x8*>(group);
        for (int b = 0; b < blocks; b++, g++)
        {
            prefetchAhead(g);
            const __m256 ws = mxfp4Scales8(g->e);
            NarrowDotSum sLo[R], sHi[R];
            for (int c = 0; c < 4; c++)
            {
                const __m256i v = _mm256_loadu_si256((const __m256i*)g->qs[c]);
                const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, mask));
                const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), mask));
                for (int r = 0; r < R; r++)
                {
                    const signed char* x = q + r * qStride + (size_t)b * 32 + 4 * c;
                    sLo[r].add(lo, broadcast4(x));
                    sHi[r].add(hi, broadcast4(x + 16));
                }
            }
            for (int r = 0; r < R; r++)
            {
                const int ab = r * blocks + b;
                const __m256i s32 = _mm256_sub_epi32(_mm256_add_epi32(sLo[r].total(), sHi[r].total()),
                                                     _mm256_set1_epi32(kMXFP4Offset * sums[ab]));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(ws, _mm256_set1_ps(d[ab])), acc[r]);
            }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};

#if CV_AVX512_CLX
// MXFP4 on two consecutive interleaved groups at once: MXFP4Interleaved8's per-lane arithmetic on
// 512-bit vectors whose halves are the two groups (vpdpbusd sums start at kFloatMagic minus 12
// sum x, read back as floats with one subtraction, as LegacyInterleaved16), bit-identical to it.
struct MXFP4Interleaved16
{
    static constexpr int kWidestRowTile = 8;

    // Two groups' scales as 16 floats (mxfp4Scales8 on both).
    static inline __m512 scalesPair(const uint8_t* a, const uint8_t* b)
    {
        const __m512i v = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)a),
                                                                  _mm_loadl_epi64((const __m128i*)b)));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(v, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), v);
        return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(v, _mm512_set1_epi32(2)), normal, tiny));
    }

    template <int R>
    LLM_TILE_NOINLINE static void run16(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                        const float* d, const int* sums, int blocks, float* out, size_t outStride)
    {
        const __m512i mask = _mm512_set1_epi8(0x0F);
        const __m512i table = _mm512_broadcast_i32x4(mxfp4OffsetValues());
        __m512 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_setzero_ps();
        const block_mxfp4x8* a = reinterpret_cast<const block_mxfp4x8*>(group);
        const block_mxfp4x8* b = reinterpret_cast<const block_mxfp4x8*>(group + groupBytes);
        // The starting sums, kFloatMagicBits - 12 sum x, in vectors for a run of blocks (see
        // LegacyInterleaved16: per block and row in general registers they ran out of registers).
        const int kRun = 64;
        alignas(64) int start[R][kRun];
        for (int k0 = 0; k0 < blocks; k0 += kRun)
        {
            const int k1 = std::min(blocks, k0 + kRun);
            for (int r = 0; r < R; r++)
                sumStarts(sums + (size_t)r * blocks + k0, k1 - k0, kMXFP4Offset, start[r]);
            for (int k = k0; k < k1; k++, a++, b++)
            {
                prefetchPairAhead(a, b, group + groupBytes, groupBytes);
                const __m512 ws = scalesPair(a->e, b->e);
                __m512i s32[R];
                for (int r = 0; r < R; r++)
                    s32[r] = _mm512_set1_epi32(start[r][k - k0]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++)
                {
                    const __m512i v = chunkPair(a->qs[c], b->qs[c]);
                    const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, mask));
                    const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), mask));
                    for (int r = 0; r < R; r++)
                    {
                        const signed char* x = q + r * qStride + (size_t)k * 32 + 4 * c;
                        s32[r] = _mm512_dpbusd_epi32(s32[r], lo, broadcast4x16(x));
                        s32[r] = _mm512_dpbusd_epi32(s32[r], hi, broadcast4x16(x + 16));
                    }
                }
                for (int r = 0; r < R; r++)
                {
                    const __m512 dot = _mm512_sub_ps(_mm512_castsi512_ps(s32[r]), _mm512_set1_ps(kFloatMagic));
                    acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(ws, _mm512_set1_ps(d[r * blocks + k])), acc[r]);
                }
            }
        }
        for (int r = 0; r < R; r++)
            _mm512_storeu_ps(out + r * outStride, acc[r]);
    }
};
#endif
