// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AVX2 kernels of the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0: decoders, integer
// dot products with 8-bit activation blocks (one row, the Q4_0 / Q8_0 multi-row tile, the
// 8-row interleaved layout). Included by ggml_kernels.simd.hpp inside its ISA namespace when
// CV_AVX2; the table there says which kernel serves which type.

static void decodeQ4_0(const uchar* src, float* y, int64 n)
{
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m256 eight = _mm256_set1_ps(8.f);
    const block_q4_0* b = reinterpret_cast<const block_q4_0*>(src);
    for (int64 i = 0; i < n / QK4_0; i++, b++, y += 32)
    {
        const __m256 d = _mm256_set1_ps(blockScale(b->d));
        const __m128i q = _mm_loadu_si128((const __m128i*)b->qs);
        const __m128i lo = _mm_and_si128(q, mask), hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
        _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(lo), eight), d));
        _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(_mm_srli_si128(lo, 8)), eight), d));
        _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(hi), eight), d));
        _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_sub_ps(u8ToFloat(_mm_srli_si128(hi, 8)), eight), d));
    }
}

static void decodeQ8_0(const uchar* src, float* y, int64 n)
{
    const block_q8_0* b = reinterpret_cast<const block_q8_0*>(src);
    for (int64 i = 0; i < n / QK8_0; i++, b++, y += 32)
    {
        const __m256 d = _mm256_set1_ps(blockScale(b->d));
        for (int k = 0; k < 4; k++)
        {
            const __m128i q = _mm_loadl_epi64((const __m128i*)(b->qs + 8 * k));
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
        }
    }
}

// W Q4_0 or Q8_0 weight rows (wStride bytes apart) against R activation rows: each weight block
// is unpacked once for the R rows and each activation block loaded once for the W weight rows.
// The arithmetic of a (weight row, activation row) pair is the same sequence of operations
// whatever W and R are, so results are bit-identical to the single-row kernel's.
template <int Type, int W, int R>
static void dotQ4_0Q8_0Tile(const uchar* w, size_t wStride, const signed char* q, const float* d,
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
    if (Type == GGML_Q4_0)
    {
        // sum (w - 8) x = sum w x - 8 sum x, with w in 0..15 as unsigned bytes.
        const __m128i mask = _mm_set1_epi8(0x0F);
        for (int b = 0; b < blocks; b++)
        {
            __m256i wv[W];
            float ws[W];
            for (int i = 0; i < W; i++)
            {
                const block_q4_0* wb = reinterpret_cast<const block_q4_0*>(w + i * wStride) + b;
                const __m128i packed = _mm_loadu_si128((const __m128i*)wb->qs);
                wv[i] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
                ws[i] = blockScale(wb->d);
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
                const block_q8_0* wb = reinterpret_cast<const block_q8_0*>(w + i * wStride) + b;
                wv[i] = _mm256_loadu_si256((const __m256i*)wb->qs);
                wAbs[i] = _mm256_sign_epi8(wv[i], wv[i]);
                ws[i] = blockScale(wb->d);
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

template <int Type>
static float dotQ8Q4_0Q8_0(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    float out;
    dotQ4_0Q8_0Tile<Type, 1, 1>(w, 0, q, d, sums, blocks, &out, 0);
    return out;
}

template <int Type>
static void tileQ4_0Q8_0(const uchar* w, size_t wStride, int wRows, const signed char* q, const float* d,
                         const int* sums, int blocks, int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    byRowTiles(rows, [&](auto R, int r) {
        constexpr int kRows = decltype(R)::value;
        const signed char* qr = q + r * qStride;
        const float* dr = d + r * blocks;
        const int* sr = sums + r * blocks;
        if (wRows == 2)
            dotQ4_0Q8_0Tile<Type, 2, kRows>(w, wStride, qr, dr, sr, blocks, out + r, outStride);
        else
            dotQ4_0Q8_0Tile<Type, 1, kRows>(w, 0, qr, dr, sr, blocks, out + r, outStride);
    });
}

// Q4_1: sum (d q + m) x = d sum q x + m sum x, q in 0..15 as unsigned bytes.
static float dotQ8Q4_1(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const __m128i mask = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0.f;
    const block_q4_1* wb = reinterpret_cast<const block_q4_1*>(w);
    for (int b = 0; b < blocks; b++, wb++, q += 32)
    {
        const __m128i packed = _mm_loadu_si128((const __m128i*)wb->qs);
        const __m256i wv = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, _mm256_loadu_si256((const __m256i*)q)), ones);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(blockScale(wb->d) * d[b]), acc);
        offset -= blockScale(wb->m) * d[b] * sums[b];
    }
    return hsum256(acc) - offset;
}

// Q5_0 / Q5_1: q = nibble | fifth bit << 4 (0..31); Q5_0: d sum (q - 16) x; Q5_1: d sum q x + m sum x.
template <typename Block>
static float dotQ8Q5(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const bool q51 = std::is_same<Block, block_q5_1>::value;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m128i mask = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0.f;
    const Block* wb = reinterpret_cast<const Block*>(w);
    for (int b = 0; b < blocks; b++, wb++, q += 32)
    {
        const __m128i packed = _mm_loadu_si128((const __m128i*)wb->qs);
        const __m256i wv = _mm256_or_si256(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask),
                                                            _mm_and_si128(packed, mask)), fifthBits(wb->qh));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, _mm256_loadu_si256((const __m256i*)q)), ones);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(blockScale(wb->d) * d[b]), acc);
        offset += q51 ? -blockScale(reinterpret_cast<const block_q5_1*>(wb)->m) * d[b] * sums[b]
                      : blockScale(wb->d) * d[b] * 16.f * sums[b];
    }
    return hsum256(acc) - offset;
}

// Q4_0, Q4_1 and Q8_0 on the 8-row interleaved layout (interleaved_weights.hpp). Lane j of each
// vector is weight row j: per block of 32 inputs, 4-byte chunks of the 8 rows sit side by side,
// so one maddubs + madd gives the 8 rows' partial dots of a chunk with the same 4 activations
// (broadcast). Per (weight row, activation row, block) the arithmetic is an exact integer dot,
// then one float multiply-add, the same whatever R is: results do not depend on the batch.
template <int Type>
struct LegacyInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int* sums,
                    int blocks, float* out, size_t outStride)
    {
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        if (Type == GGML_Q8_0)
        {
            // Signed x signed through |w| and sign(x, w), widened per chunk.
            const block_q8_0x8* g = reinterpret_cast<const block_q8_0x8*>(group);
            for (int b = 0; b < blocks; b++, g++)
            {
                prefetchAhead(g);
                const __m256 ws = halfs8(g->d);
                WideDotSum s32[R];
                for (int c = 0; c < 8; c++)
                {
                    const __m256i w = _mm256_loadu_si256((const __m256i*)g->qs[c]);
                    const __m256i wAbs = _mm256_sign_epi8(w, w);
                    for (int r = 0; r < R; r++)
                        s32[r].add(wAbs, _mm256_sign_epi8(broadcast4(q + r * qStride + (size_t)b * 32 + 4 * c), w));
                }
                for (int r = 0; r < R; r++)
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[r].total()), _mm256_mul_ps(ws, _mm256_set1_ps(d[r * blocks + b])), acc[r]);
            }
        }
        else
        {
            // Nibbles 0..15 as unsigned bytes; 8 maddubs results stay within int16 (8 * 2 * 15 * 127
            // = 30480). Q4_0: sum (w - 8) x = sum w x - 8 sum x. Q4_1 (d w + m): d sum w x + m sum x.
            const bool q41 = Type == GGML_Q4_1;
            const size_t unitBytes = q41 ? sizeof(block_q4_1x8) : sizeof(block_q4_0x8);
            const __m256i mask = _mm256_set1_epi8(0x0F);
            for (int b = 0; b < blocks; b++, group += unitBytes)
            {
                const block_q4_0x8* g0 = reinterpret_cast<const block_q4_0x8*>(group);
                const block_q4_1x8* g1 = reinterpret_cast<const block_q4_1x8*>(group);
                if (q41)
                    prefetchAhead(g1);
                else
                    prefetchAhead(g0);
                const __m256 ws = halfs8(q41 ? g1->d : g0->d);
                NarrowDotSum s16[R];
                for (int c = 0; c < 4; c++)
                {
                    const __m256i v = _mm256_loadu_si256((const __m256i*)(q41 ? g1->qs[c] : g0->qs[c]));
                    const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                    for (int r = 0; r < R; r++)
                    {
                        const signed char* x = q + r * qStride + (size_t)b * 32 + 4 * c;
                        s16[r].add(lo, broadcast4(x));
                        s16[r].add(hi, broadcast4(x + 16));
                    }
                }
                if (q41)
                {
                    const __m256 mins = halfs8(g1->m);
                    for (int r = 0; r < R; r++)
                    {
                        const int ab = r * blocks + b;
                        const __m256 dot = _mm256_cvtepi32_ps(s16[r].total());
                        acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(ws, _mm256_set1_ps(d[ab])), acc[r]);
                        acc[r] = _mm256_fmadd_ps(mins, _mm256_set1_ps(d[ab] * (float)sums[ab]), acc[r]);
                    }
                    continue;
                }
                for (int r = 0; r < R; r++)
                {
                    const __m256i s32 = _mm256_sub_epi32(s16[r].total(), _mm256_set1_epi32(8 * sums[r * blocks + b]));
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(ws, _mm256_set1_ps(d[r * blocks + b])), acc[r]);
                }
            }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};

// Q5_0 / Q5_1 on the interleaved layout: nibbles as Q4_0 plus a fifth bit from per-chunk bit
// words. q in 0..31: 4 maddubs per int16 sum (4 * 2 * 31 * 127 = 31496), so the low and high
// halves of a block sum separately. Q5_0: sum (q - 16) x; Q5_1: d sum q x + m sum x.
template <typename Group>
struct Q5Interleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int* sums,
                    int blocks, float* out, size_t outStride)
    {
        const bool q51 = std::is_same<Group, block_q5_1x8>::value;
        const __m256i mask = _mm256_set1_epi8(0x0F);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const Group* g = reinterpret_cast<const Group*>(group);
        for (int b = 0; b < blocks; b++, g++)
        {
            prefetchAhead(g);
            const __m256 ws = halfs8(g->d);
            NarrowDotSum sLo[R], sHi[R];
            for (int c = 0; c < 4; c++)
            {
                const __m256i v = _mm256_loadu_si256((const __m256i*)g->qs[c]);
                const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, mask), fifthBits(g->qh[c][0]));
                const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), fifthBits(g->qh[c][1]));
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
                __m256i s32 = _mm256_add_epi32(sLo[r].total(), sHi[r].total());
                if (!q51)
                    s32 = _mm256_sub_epi32(s32, _mm256_set1_epi32(16 * sums[ab]));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_mul_ps(ws, _mm256_set1_ps(d[ab])), acc[r]);
                if (q51)
                    acc[r] = _mm256_fmadd_ps(halfs8(reinterpret_cast<const block_q5_1x8*>(g)->m),
                                             _mm256_set1_ps(d[ab] * (float)sums[ab]), acc[r]);
            }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};

#if CV_AVX512_CLX
// start[k] = kFloatMagicBits - offset * sums[k] for k < n (the unsigned weights' offset times the
// activations' block sums), in vectors; the 16-group kernels of Q4_0, Q8_0 and MXFP4 start from it.
static inline void sumStarts(const int* sums, int n, int offset, int* start)
{
    for (int k = 0; k < n; k += 16)
    {
        const __mmask16 m = n - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - k)) - 1);
        const __m512i x = _mm512_maskz_loadu_epi32(m, sums + k);
        _mm512_mask_storeu_epi32(start + k, m, _mm512_sub_epi32(_mm512_set1_epi32(kFloatMagicBits),
                                                                _mm512_mullo_epi32(x, _mm512_set1_epi32(offset))));
    }
}

// Q4_0 and Q8_0 on two consecutive interleaved groups at once: LegacyInterleaved8's per-lane
// arithmetic (an exact integer dot per block, then one float multiply-add) on 512-bit vectors
// whose halves are the two groups, so each instruction serves 16 weight rows: batched steps,
// compute-bound, take half the instructions. Q4_0: vpdpbusd of the nibbles with the broadcast
// activations, minus 8 sum x. Q8_0 (no byte sign instruction in AVX-512): vpdpbusd of w + 128
// (unsigned), minus 128 sum x.
template <int Type>
struct LegacyInterleaved16
{
    static constexpr int kWidestRowTile = 8;  // activation rows per pass over the weights
    template <int R>
    LLM_TILE_NOINLINE static void run16(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                        const float* d, const int* sums, int blocks, float* out, size_t outStride)
    {
        const bool q8 = Type == GGML_Q8_0;
        typedef typename std::conditional<Type == GGML_Q8_0, block_q8_0x8, block_q4_0x8>::type Unit;
        const __m512i mask = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8((char)0x80);
        __m512 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_setzero_ps();
        const Unit* a = reinterpret_cast<const Unit*>(group);
        const Unit* b = reinterpret_cast<const Unit*>(group + groupBytes);
        // The sums start at kFloatMagic minus the unsigned weights' offset times sum x, so that
        // their bits read as a float are 12582912 + the dot product: a subtraction converts
        // them (exactly, as a conversion would) on any port, leaving port 0 to the dot-product
        // instructions. Those starting values are computed in vectors for a run of blocks, then
        // broadcast from memory: computed per block and row in general registers, they ran out
        // of registers at 8 rows (spills, and moves between general and vector registers).
        const int kRun = 64;
        alignas(64) int start[R][kRun];
        for (int k0 = 0; k0 < blocks; k0 += kRun)
        {
            const int k1 = std::min(blocks, k0 + kRun);
            for (int r = 0; r < R; r++)
                sumStarts(sums + (size_t)r * blocks + k0, k1 - k0, q8 ? 128 : 8, start[r]);
            for (int k = k0; k < k1; k++, a++, b++)
            {
                prefetchPairAhead(a, b, group + groupBytes, groupBytes);
                const __m512 ws = halfsPair(a->d, b->d);
                __m512i s32[R];
                for (int r = 0; r < R; r++)
                    s32[r] = _mm512_set1_epi32(start[r][k - k0]);
                if (q8)
#pragma GCC unroll 8  // rolled, GCC copies the accumulators around each pass
                    for (int c = 0; c < 8; c++)
                    {
                        const __m512i w = _mm512_xor_si512(chunkPair(a->qs[c], b->qs[c]), bias);
                        for (int r = 0; r < R; r++)
                            s32[r] = _mm512_dpbusd_epi32(s32[r], w, broadcast4x16(q + r * qStride + (size_t)k * 32 + 4 * c));
                    }
                else
#pragma GCC unroll 4
                    for (int c = 0; c < 4; c++)
                    {
                        const __m512i v = chunkPair(a->qs[c], b->qs[c]);
                        const __m512i lo = _mm512_and_si512(v, mask), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
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
