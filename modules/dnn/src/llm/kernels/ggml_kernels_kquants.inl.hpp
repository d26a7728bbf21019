// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AVX2 kernels of the K-quant types Q4_K, Q5_K and Q6_K (super-blocks of 256): decoders,
// integer dot products with 8-bit activation blocks (one row, the 8-row interleaved layout).
// An activation block of 32 lines up with a sub-block of 32 (Q4_K, Q5_K) or two groups of 16
// (Q6_K). Included by ggml_kernels.simd.hpp inside its ISA namespace when CV_AVX2.

// Q6_K: y = (d * scale) * (q - 32), q from 4 low bits in ql and 2 high bits in qh.
static void decodeQ6_K(const uchar* src, float* y, int64 n)
{
    const __m256i low4 = _mm256_set1_epi32(0x0F), two = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
    const block_q6_K* b = reinterpret_cast<const block_q6_K*>(src);
    for (int64 i = 0; i < n / QK_K; i++, b++)
    {
        const uchar* ql = b->ql;
        const uchar* qh = b->qh;
        const int8_t* sc = b->scales;
        const float d = blockScale(b->d);
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

// Q4_K: per 64 elements, y = (d * sc) * q - dmin * m for the low nibbles of 32 bytes, then the
// same with the next scale for their high nibbles. Multiply and subtract stay separate (no
// FMA) to round as the scalar decoder does.
__attribute__((optimize("fp-contract=off")))
static void decodeQ4_K(const uchar* src, float* y, int64 n)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    const block_q4_K* b = reinterpret_cast<const block_q4_K*>(src);
    for (int64 i = 0; i < n / QK_K; i++, b++)
    {
        const float d = blockScale(b->d), dmin = blockScale(b->dmin);
        const uchar* q = b->qs;
        for (int j = 0; j < 4; j++, q += 32, y += 64)
        {
            int sc, m;
            scaleMinK4(2 * j, b->scales, sc, m);
            const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * m);
            scaleMinK4(2 * j + 1, b->scales, sc, m);
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

// Q4_K / Q5_K: per 32-element sub-block j, sum (d sc_j q - dmin m_j) x = d sc_j sum q x -
// dmin m_j sum x; Q5_K's fifth bit is bit 2j (low nibbles) or 2j + 1 (high) of qh[l].
template <typename Block>
static float dotQ8Q4KQ5K(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const bool q5 = std::is_same<Block, block_q5_K>::value;
    const __m256i ones = _mm256_set1_epi16(1), mask = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0.f;
    const Block* wb = reinterpret_cast<const Block*>(w);
    for (int sb = 0; sb < blocks / 8; sb++, wb++)
    {
        const float dw = blockScale(wb->d), dmin = blockScale(wb->dmin);
        const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i*)reinterpret_cast<const block_q5_K*>(wb)->qh)
                              : _mm256_setzero_si256();
        const uchar* qs = wb->qs;
        for (int j = 0; j < 4; j++, qs += 32, q += 64, d += 2, sums += 2)
        {
            const __m256i packed = _mm256_loadu_si256((const __m256i*)qs);
            __m256i lo = _mm256_and_si256(packed, mask), hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), mask);
            if (q5)
            {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
            }
            const __m256i pLo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i*)q)), ones);
            const __m256i pHi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i*)(q + 32))), ones);
            int sc, m;
            scaleMinK4(2 * j, wb->scales, sc, m);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pLo), _mm256_set1_ps(dw * sc * d[0]), acc);
            offset += dmin * m * d[0] * sums[0];
            scaleMinK4(2 * j + 1, wb->scales, sc, m);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pHi), _mm256_set1_ps(dw * sc * d[1]), acc);
            offset += dmin * m * d[1] * sums[1];
        }
    }
    return hsum256(acc) - offset;
}

// Q6_K: 6-bit q (0..63) of 16-element groups, each with an int8 scale: sum d sc (q - 32) x.
// An activation block of 32 spans two groups: the low four int32 lanes of the madd result hold
// the first group, the high four the second.
static float dotQ8Q6_K(const uchar* w, const signed char* q, const float* d, const int*, int blocks)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    const block_q6_K* wb = reinterpret_cast<const block_q6_K*>(w);
    for (int sb = 0; sb < blocks / 8; sb++, wb++)
    {
        const uchar* ql = wb->ql;
        const uchar* qh = wb->qh;
        const int8_t* sc = wb->scales;
        const float dw = blockScale(wb->d);
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
    return hsum256(acc);
}

// An interleaved Q4_K / Q5_K super-block: the 8 rows' d * sc and dmin * m of sub-block `sub`.
template <typename Group>
static inline void kQuantSubBlockScales(const Group* g, __m256 d8, __m256 dmin8, int sub, __m256& scale, __m256& minv)
{
    scale = _mm256_mul_ps(d8, u8ToFloat(_mm_loadl_epi64((const __m128i*)g->scales[sub])));
    minv = _mm256_mul_ps(dmin8, u8ToFloat(_mm_loadl_epi64((const __m128i*)g->mins[sub])));
}

// acc + dot * (scale * dx) - minv * (dx * sum): one sub-block of a K-quant row group against an
// activation block with scale dx and quant sum `sum`.
static inline __m256 kQuantAccumulate(__m256 acc, __m256i dot, __m256 scale, __m256 minv, float dx, int sum)
{
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(scale, _mm256_set1_ps(dx)), acc);
    return _mm256_fnmadd_ps(minv, _mm256_set1_ps(dx * (float)sum), acc);
}

// Q4_K on the 8-row interleaved layout: per super-block and sub-block s of 32, row i contributes
// d_i sc_is sum(q x) - dmin_i m_is sum(x); the integer dots of the 8 rows come out in the lanes
// as for Q4_0 (8 maddubs fit in int16: 30480).
struct Q4KInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int* sums,
                    int blocks, float* out, size_t outStride)
    {
        const __m256i mask = _mm256_set1_epi8(0x0F);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_q4_Kx8* g = reinterpret_cast<const block_q4_Kx8*>(group);
        for (int sb = 0; sb < blocks / 8; sb++, g++)
        {
            prefetchAhead(g);
            const __m256 d8 = halfs8(g->d), dmin8 = halfs8(g->dmin);
            for (int j = 0; j < 4; j++)
            {
                NarrowDotSum s16[2][R];
                const int lo = 8 * sb + 2 * j;  // activation block of the low nibbles; +1: high
                for (int c = 0; c < 8; c++)
                {
                    const __m256i v = _mm256_loadu_si256((const __m256i*)g->qs[j][c]);
                    const __m256i wLo = _mm256_and_si256(v, mask), wHi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                    for (int r = 0; r < R; r++)
                    {
                        const signed char* x = q + r * qStride + (size_t)lo * 32 + 4 * c;
                        s16[0][r].add(wLo, broadcast4(x));
                        s16[1][r].add(wHi, broadcast4(x + 32));
                    }
                }
                for (int h = 0; h < 2; h++)
                {
                    __m256 scale, minv;
                    kQuantSubBlockScales(g, d8, dmin8, 2 * j + h, scale, minv);
                    for (int r = 0; r < R; r++)
                    {
                        const int ab = r * blocks + lo + h;
                        acc[r] = kQuantAccumulate(acc[r], s16[h][r].total(), scale, minv, d[ab], sums[ab]);
                    }
                }
            }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};

// Bit c of every byte of `bits` moved to 0x10 (a Q5_K chunk's fifth bits; c a constant once
// unrolled). The 16-bit shifts move no other byte's bit to bit 4.
static inline __m256i fifthBitsOfChunk(__m256i bits, int c)
{
    const __m256i moved = c <= 4 ? _mm256_slli_epi16(bits, 4 - c) : _mm256_srli_epi16(bits, c - 4);
    return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

// Q5_K on the interleaved layout: Q4_K's plus a vector of fifth bits per sub-block (bit c:
// chunk c). q in 0..31: 4 maddubs per int16 sum, so each sub-block sums in two halves.
struct Q5KInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int* sums,
                    int blocks, float* out, size_t outStride)
    {
        const __m256i mask = _mm256_set1_epi8(0x0F);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_q5_Kx8* g = reinterpret_cast<const block_q5_Kx8*>(group);
        for (int sb = 0; sb < blocks / 8; sb++, g++)
        {
            prefetchAhead(g);
            const __m256 d8 = halfs8(g->d), dmin8 = halfs8(g->dmin);
            for (int j = 0; j < 4; j++)
#pragma GCC unroll 2  // h picks the nibble half and the bit word: constants when unrolled (~10% at R = 4)
                for (int h = 0; h < 2; h++)
                {
                    const int sub = 2 * j + h, block = 8 * sb + sub;
                    __m256i s32[R];
                    for (int r = 0; r < R; r++)
                        s32[r] = _mm256_setzero_si256();
                    const __m256i bits = _mm256_loadu_si256((const __m256i*)g->qh[j][h]);
#pragma GCC unroll 2
                    for (int half = 0; half < 2; half++)
                    {
                        NarrowDotSum s16[R];
#pragma GCC unroll 4  // c picks the fifth bits' shift
                        for (int c = 4 * half; c < 4 * half + 4; c++)
                        {
                            const __m256i v = _mm256_loadu_si256((const __m256i*)g->qs[j][c]);
                            const __m256i w = _mm256_or_si256(_mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, mask),
                                                              fifthBitsOfChunk(bits, c));
                            for (int r = 0; r < R; r++)
                                s16[r].add(w, broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c));
                        }
                        for (int r = 0; r < R; r++)
                            s32[r] = _mm256_add_epi32(s32[r], s16[r].total());
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
};

// Q6_K on the interleaved layout: 6-bit q (0..63) rebuilt from the nibble chunks ql[0] / ql[1] and
// the 2-bit chunk qh; sum (q - 32) x per 16-input group, with the -32 as a second maddubs of the
// activations (each term within int16, 4 chunks sum to <= 32512).
struct Q6KInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int*,
                    int blocks, float* out, size_t outStride)
    {
        const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
        const __m256i bias = _mm256_set1_epi8(32);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_q6_Kx8* g = reinterpret_cast<const block_q6_Kx8*>(group);
        for (int sb = 0; sb < blocks / 8; sb++, g++)
        {
            prefetchAhead(g);
            const __m256 d8 = halfs8(g->d);
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4  // quarter picks a plane, a nibble half and a shift: constants when unrolled (~15% at R = 4)
                for (int quarter = 0; quarter < 4; quarter++)
                {
                    const int block = 8 * sb + 4 * h + quarter;  // activation block
                    for (int half = 0; half < 2; half++)
                    {
                        NarrowDotSum s16[R];
                        for (int c = 4 * half; c < 4 * half + 4; c++)
                        {
                            const block_q6_Kx8::Chunk& chunk = g->chunks[h][c];
                            const __m256i nib = _mm256_loadu_si256((const __m256i*)chunk.ql[quarter & 1]);
                            const __m256i hi2 = _mm256_loadu_si256((const __m256i*)chunk.qh);
                            const __m256i lowBits = quarter < 2 ? _mm256_and_si256(nib, low4)
                                                                : _mm256_and_si256(_mm256_srli_epi16(nib, 4), low4);
                            const __m256i highBits = _mm256_and_si256(_mm256_srli_epi16(hi2, 2 * quarter), two);
                            const __m256i w = _mm256_or_si256(lowBits, _mm256_slli_epi16(highBits, 4));
                            for (int r = 0; r < R; r++)
                                s16[r].addDifference(w, bias, broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c));
                        }
                        const int sub = 8 * h + 2 * quarter + half;
                        const __m256 scale = _mm256_mul_ps(d8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                            _mm_loadl_epi64((const __m128i*)g->scales[sub]))));
                        for (int r = 0; r < R; r++)
                        {
                            const __m256 dot = _mm256_cvtepi32_ps(s16[r].total());
                            acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(scale, _mm256_set1_ps(d[r * blocks + block])), acc[r]);
                        }
                    }
                }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};

#if CV_AVX512_CLX
// The tokens' d * sum per activation block of super-block sb (Q4_K / Q5_K mins), once for both
// groups' 16 rows: 8 products per vector, the same float products as one by one.
template <int R>
static inline void tokensDxSum(const float* d, const int* sums, int blocks, int sb, float (*dxSum)[8])
{
    for (int r = 0; r < R; r++)
    {
        const size_t ab = (size_t)r * blocks + 8 * sb;
        _mm256_store_ps(dxSum[r], _mm256_mul_ps(_mm256_loadu_ps(d + ab),
                                                _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i*)(sums + ab)))));
    }
}

// The float step of Q4_K / Q5_K sub-block `sub` of two groups (a, b) for R tokens:
// acc += dot * (d sc) * dx - (dmin m) * dx sum x; d points at token 0's activation block of the
// sub-block (token r's: d[r * blocks]).
template <int R, typename Unit>
static inline void addSubBlock16(__m512* acc, const __m512* dots, const Unit& a, const Unit& b, __m512 d16,
                                 __m512 dmin16, int sub, const float* d, int blocks, const float (*dxSum)[8])
{
    const __m512 scale = _mm512_mul_ps(d16, bytesPair(a.scales[sub], b.scales[sub]));
    const __m512 minv = _mm512_mul_ps(dmin16, bytesPair(a.mins[sub], b.mins[sub]));
    for (int r = 0; r < R; r++)
    {
        acc[r] = _mm512_fmadd_ps(dots[r], _mm512_mul_ps(scale, _mm512_set1_ps(d[(size_t)r * blocks])), acc[r]);
        acc[r] = _mm512_fnmadd_ps(minv, _mm512_set1_ps(dxSum[r][sub]), acc[r]);
    }
}
#endif

#if CV_AVX512_CLX
// Q4_K on two consecutive interleaved groups at once: Q4KInterleaved8's per-lane arithmetic on
// 512-bit vectors whose halves are the two groups (see LegacyInterleaved16). The high nibbles
// stay in place (weights 16 q, no shift): their sums start at the bits of 1.5 * 2^19, whose
// float ulp is 1/16, so that the float of the bits, minus 1.5 * 2^19, is the dot of q exactly
// (|16 dot| < 2^22), as vcvtdq2ps of it.
struct Q4KInterleaved16
{
    static constexpr int kWidestRowTile = 8;  // activation rows per pass over the weights
    static constexpr int kHighNibbleStart = 0x49400000;
    static constexpr float kHighNibbleStartValue = 786432.f;  // 1.5 * 2^19
    template <int R>
    LLM_TILE_NOINLINE static void run16(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                        const float* d, const int* sums, int blocks, float* out, size_t outStride)
    {
        const __m512i mask = _mm512_set1_epi8(0x0F), highMask = _mm512_set1_epi8((char)0xF0);
        __m512 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_setzero_ps();
        const block_q4_Kx8* a = reinterpret_cast<const block_q4_Kx8*>(group);
        const block_q4_Kx8* b = reinterpret_cast<const block_q4_Kx8*>(group + groupBytes);
        for (int sb = 0; sb < blocks / 8; sb++, a++, b++)
        {
            const __m512 d16 = halfsPair(a->d, b->d), dmin16 = halfsPair(a->dmin, b->dmin);
            alignas(32) float dxSum[R][8];
            tokensDxSum<R>(d, sums, blocks, sb, dxSum);
            for (int j = 0; j < 4; j++)
            {
                prefetchPairAhead<block_q4_Kx8, 4>(a, b, group + groupBytes, groupBytes, j);
                __m512i s32[2][R];
                for (int r = 0; r < R; r++)
                {
                    s32[0][r] = _mm512_setzero_si512();
                    s32[1][r] = _mm512_set1_epi32(kHighNibbleStart);
                }
                const int lo = 8 * sb + 2 * j;  // activation block of the low nibbles; +1: high
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++)
                {
                    const __m512i v = chunkPair(a->qs[j][c], b->qs[j][c]);
                    const __m512i wLo = _mm512_and_si512(v, mask), wHi = _mm512_and_si512(v, highMask);  // 16 q
                    for (int r = 0; r < R; r++)
                    {
                        const signed char* x = q + r * qStride + (size_t)lo * 32 + 4 * c;
                        s32[0][r] = _mm512_dpbusd_epi32(s32[0][r], wLo, broadcast4x16(x));
                        s32[1][r] = _mm512_dpbusd_epi32(s32[1][r], wHi, broadcast4x16(x + 32));
                    }
                }
                __m512 dots[2][R];
                for (int r = 0; r < R; r++)
                {
                    dots[0][r] = _mm512_cvtepi32_ps(s32[0][r]);
                    dots[1][r] = _mm512_sub_ps(_mm512_castsi512_ps(s32[1][r]), _mm512_set1_ps(kHighNibbleStartValue));
                }
                for (int h = 0; h < 2; h++)
                    addSubBlock16<R>(acc, dots[h], *a, *b, d16, dmin16, 2 * j + h, d + lo + h, blocks, dxSum);
            }
        }
        for (int r = 0; r < R; r++)
            _mm512_storeu_ps(out + r * outStride, acc[r]);
    }
};
#endif

#if CV_AVX512_CLX
// Bit c of every byte of `bits` moved to 0x10 (fifthBitsOfChunk on 512 bits).
static inline __m512i fifthBitsOfChunk16(__m512i bits, int c)
{
    const __m512i moved = c <= 4 ? _mm512_slli_epi16(bits, 4 - c) : _mm512_srli_epi16(bits, c - 4);
    return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}

// Q5_K on two consecutive interleaved groups at once (the Q5_K tensors of Q5_K_M files):
// Q5KInterleaved8's per-lane arithmetic on 512-bit vectors whose halves are the two groups, as
// Q4KInterleaved16 with the fifth bits (VNNI sums in int32: no halves).
struct Q5KInterleaved16
{
    static constexpr int kWidestRowTile = 8;  // activation rows per pass over the weights
    template <int R>
    LLM_TILE_NOINLINE static void run16(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                        const float* d, const int* sums, int blocks, float* out, size_t outStride)
    {
        const __m512i mask = _mm512_set1_epi8(0x0F);
        __m512 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_setzero_ps();
        const block_q5_Kx8* a = reinterpret_cast<const block_q5_Kx8*>(group);
        const block_q5_Kx8* b = reinterpret_cast<const block_q5_Kx8*>(group + groupBytes);
        for (int sb = 0; sb < blocks / 8; sb++, a++, b++)
        {
            const __m512 d16 = halfsPair(a->d, b->d), dmin16 = halfsPair(a->dmin, b->dmin);
            alignas(32) float dxSum[R][8];
            tokensDxSum<R>(d, sums, blocks, sb, dxSum);
            for (int j = 0; j < 4; j++)
            {
                prefetchPairAhead<block_q5_Kx8, 4>(a, b, group + groupBytes, groupBytes, j);
                __m512i s32[2][R];
                for (int r = 0; r < R; r++)
                    s32[0][r] = s32[1][r] = _mm512_setzero_si512();
                const int lo = 8 * sb + 2 * j;  // activation block of the low nibbles; +1: high
                const __m512i bitsLo = chunkPair(a->qh[j][0], b->qh[j][0]), bitsHi = chunkPair(a->qh[j][1], b->qh[j][1]);
#pragma GCC unroll 8  // c picks the fifth bits' shift
                for (int c = 0; c < 8; c++)
                {
                    const __m512i v = chunkPair(a->qs[j][c], b->qs[j][c]);
                    const __m512i wLo = _mm512_or_si512(_mm512_and_si512(v, mask), fifthBitsOfChunk16(bitsLo, c));
                    const __m512i wHi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask),
                                                        fifthBitsOfChunk16(bitsHi, c));
                    for (int r = 0; r < R; r++)
                    {
                        const signed char* x = q + r * qStride + (size_t)lo * 32 + 4 * c;
                        s32[0][r] = _mm512_dpbusd_epi32(s32[0][r], wLo, broadcast4x16(x));
                        s32[1][r] = _mm512_dpbusd_epi32(s32[1][r], wHi, broadcast4x16(x + 32));
                    }
                }
                for (int h = 0; h < 2; h++)
                {
                    __m512 dots[R];
                    for (int r = 0; r < R; r++)
                        dots[r] = _mm512_cvtepi32_ps(s32[h][r]);
                    addSubBlock16<R>(acc, dots, *a, *b, d16, dmin16, 2 * j + h, d + lo + h, blocks, dxSum);
                }
            }
        }
        for (int r = 0; r < R; r++)
            _mm512_storeu_ps(out + r * outStride, acc[r]);
    }
};
#endif

#if CV_AVX512_CLX
// Q6_K on two consecutive interleaved groups at once (the Q6_K tensors of Q4_K_M / Q5_K_M files):
// Q6KInterleaved8's per-lane arithmetic on 512-bit vectors (VNNI). The -32 of q - 32 is the
// start of each 16-input group's integer dot, -32 sum x, computed per token and super-block once
// for both groups (psadbw) instead of by a second vpdpbusd per chunk: the same exact integers.
struct Q6KInterleaved16
{
    // Passes of 4 activation rows: at 8 the rows' accumulators and the unpacked 6-bit quants do
    // not fit the registers (an 8-row pass spilled ~300 values a super-block). Zen 5, one
    // thread, 5632 x 2048: 8 rows 0.80 -> 0.69 ms from memory, 0.70 -> 0.59 from the cache; 16
    // rows 1.51 -> 1.30. (Q4_K and Q5_K ran 5-20% slower in passes of 4.)
    static constexpr int kWidestRowTile = 4;
    // q (0..63) of chunk pair (ca, cb) in quarter `quarter` of its half: the nibble plane and
    // half, and the 2 high bits, that the quarter picks (also the AMX kernel's unpacking).
    static inline __m512i quantsOfChunk(const block_q6_Kx8::Chunk& ca, const block_q6_Kx8::Chunk& cb, int quarter)
    {
        const __m512i low4 = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3);
        const __m512i nib = chunkPair(ca.ql[quarter & 1], cb.ql[quarter & 1]);
        const __m512i lowBits = _mm512_and_si512(quarter < 2 ? nib : _mm512_srli_epi16(nib, 4), low4);
        const __m512i highBits = _mm512_and_si512(_mm512_srli_epi16(chunkPair(ca.qh, cb.qh), 2 * quarter), two);
        return _mm512_or_si512(lowBits, _mm512_slli_epi16(highBits, 4));
    }

    // Two groups' 8 int8 scales of one 16-input group as 16 floats.
    static inline __m512 scalesPair(const int8_t* a, const int8_t* b)
    {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
            _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)a), _mm_loadl_epi64((const __m128i*)b))));
    }

    // xBias[4 g] = -32 * (sum of the 16 activations of group g), g = 0..15 of a super-block's 256
    // (int32s: the low halves of 64-bit lanes).
    static inline void groupBiases(const signed char* x, int* xBias)
    {
        const __m512i flip = _mm512_set1_epi8((char)0x80), offset = _mm512_set1_epi64(16 * 128);
        for (int k = 0; k < 4; k++)
        {
            // Per 8 bytes sum (x + 128), then per 16 (both 64-bit halves of each 128-bit lane).
            const __m512i s8 = _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(x + 64 * k), flip), _mm512_setzero_si512());
            const __m512i s16 = _mm512_add_epi64(s8, _mm512_shuffle_epi32(s8, _MM_PERM_BADC));
            _mm512_store_si512(xBias + 16 * k, _mm512_slli_epi64(_mm512_sub_epi64(offset, s16), 5));
        }
    }

    template <int R>
    LLM_TILE_NOINLINE static void run16(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                        const float* d, const int*, int blocks, float* out, size_t outStride)
    {
        __m512 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_setzero_ps();
        const block_q6_Kx8* a = reinterpret_cast<const block_q6_Kx8*>(group);
        const block_q6_Kx8* b = reinterpret_cast<const block_q6_Kx8*>(group + groupBytes);
        for (int sb = 0; sb < blocks / 8; sb++, a++, b++)
        {
            const __m512 d16 = halfsPair(a->d, b->d);
            alignas(64) int xBias[R][64];
            for (int r = 0; r < R; r++)
                groupBiases(q + r * qStride + (size_t)sb * QK_K, xBias[r]);
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4  // quarter picks a plane, a nibble half and a shift: constants when unrolled
                for (int quarter = 0; quarter < 4; quarter++)
                {
                    prefetchPairAhead<block_q6_Kx8, 8>(a, b, group + groupBytes, groupBytes, 4 * h + quarter);
                    const int block = 8 * sb + 4 * h + quarter;  // activation block
#pragma GCC unroll 2
                    for (int half = 0; half < 2; half++)
                    {
                        const int sub = 8 * h + 2 * quarter + half;  // the 16-input group
                        __m512i s32[R];
                        for (int r = 0; r < R; r++)
                            s32[r] = _mm512_set1_epi32(xBias[r][4 * sub]);
#pragma GCC unroll 4  // a loop here copies the accumulators each step
                        for (int k = 0; k < 4; k++)
                        {
                            const int c = 4 * half + k;
                            const __m512i w = quantsOfChunk(a->chunks[h][c], b->chunks[h][c], quarter);
                            for (int r = 0; r < R; r++)
                                s32[r] = _mm512_dpbusd_epi32(s32[r], w, broadcast4x16(q + r * qStride + (size_t)block * 32 + 4 * c));
                        }
                        const __m512 scale = _mm512_mul_ps(d16, scalesPair(a->scales[sub], b->scales[sub]));
                        for (int r = 0; r < R; r++)
                        {
                            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s32[r]), _mm512_mul_ps(scale, _mm512_set1_ps(d[r * blocks + block])), acc[r]);
                        }
                    }
                }
        }
        for (int r = 0; r < R; r++)
            _mm512_storeu_ps(out + r * outStride, acc[r]);
    }
};
#endif
