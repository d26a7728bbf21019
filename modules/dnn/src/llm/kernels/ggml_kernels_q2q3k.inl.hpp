// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AVX2 kernels of the 2- and 3-bit K-quants Q2_K and Q3_K (super-blocks of 256 in 16 groups of
// 16 with their own scales): integer dot products with 8-bit activation blocks, one row or a
// multi-row tile, and the 8-row interleaved layout. Included by ggml_kernels.simd.hpp inside its
// ISA namespace when CV_AVX2.

// Q2_K / Q3_K: 2-bit low parts of 16-element groups. Activation block (h, j) (elements 128h + 32j
// .. + 31) is bits 2j of qs[32h .. 32h + 31]: its first 16 elements are group 8h + 2j, the next 16
// group 8h + 2j + 1, i.e. the low and high 128-bit lanes of one load. The groups' integer scales
// multiply the pair sums (madd), so each activation block costs one float FMA per scale kind.
//   Q2_K: sum (d sc_g q - dmin m_g) x = d sum_g sc_g sum q x - dmin sum_g m_g sum x (sums of x
//         over each 16-element group: the activation's own sums are per 32).
//   Q3_K: q = low + 4 high - 4 (-4..3), the high bit of block (h, j) bit 4h + j of hmask[0 .. 31]:
//         sum d s_g q x = d sum_g s_g (sum (low + 4 high) x - 4 sum x).
// A tile of R activation rows unpacks each weight block once; every (weight row, activation row)
// result takes the same operations whatever R.

// The int16 vector holding a[g] in the low lane and a[g + 1] in the high lane.
static inline __m256i groupPairScales(const int16_t* a, int g)
{
    return _mm256_set_m128i(_mm_set1_epi16(a[g + 1]), _mm_set1_epi16(a[g]));
}

template <typename Block, int R>
LLM_TILE_NOINLINE static void dotQ2Q3KTile(const uchar* w, const signed char* q, size_t qStride, const float* d,
                                           int blocks, float* out)
{
    const bool q3 = std::is_same<Block, block_q3_K>::value;
    const __m256i one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256 acc[R];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    int16_t scale[16], mins[16];
    const Block* wb = reinterpret_cast<const Block*>(w);
    for (int sb = 0; sb < blocks / 8; sb++, wb++)
    {
        const float dw = blockScale(wb->d);
        float dmin = 0.f;
        __m256i hmask = _mm256_setzero_si256();
        if (q3)
        {
            const block_q3_K* b3 = reinterpret_cast<const block_q3_K*>(wb);
            hmask = _mm256_loadu_si256((const __m256i*)b3->hmask);
            for (int g = 0; g < 16; g++)
                scale[g] = (int16_t)scaleQ3_K(b3->scales, g);
        }
        else
        {
            const block_q2_K* b2 = reinterpret_cast<const block_q2_K*>(wb);
            dmin = blockScale(b2->dmin);
            for (int g = 0; g < 16; g++)
            {
                scale[g] = b2->scales[g] & 0x0F;
                mins[g] = b2->scales[g] >> 4;
            }
        }
        for (int h = 0; h < 2; h++)
        {
            const __m256i packed = _mm256_loadu_si256((const __m256i*)(wb->qs + 32 * h));
            for (int j = 0; j < 4; j++)
            {
                const int g = 8 * h + 2 * j, block = 8 * sb + 4 * h + j;  // its activation block
                __m256i wq = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * j), two);
                if (q3)
                    wq = _mm256_or_si256(wq, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + j), one), 2));
                const __m256i scales = groupPairScales(scale, g);
                for (int r = 0; r < R; r++)
                {
                    const __m256i x = _mm256_loadu_si256((const __m256i*)(q + r * qStride + (size_t)block * 32));
                    // Q3_K: 4 sum x per pair; Q2_K: sum x per pair.
                    const __m256i xSums = _mm256_maddubs_epi16(q3 ? four : one, x);
                    const float dx = d[(size_t)r * blocks + block];
                    __m256i p16 = _mm256_maddubs_epi16(wq, x);
                    if (q3)
                        p16 = _mm256_sub_epi16(p16, xSums);
                    const __m256i dot = _mm256_madd_epi16(p16, scales);
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * dx), acc[r]);
                    if (!q3)
                    {
                        const __m256i m = _mm256_madd_epi16(xSums, groupPairScales(mins, g));
                        acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(dmin * dx), acc[r]);
                    }
                }
            }
        }
    }
    for (int r = 0; r < R; r++)
        out[r] = hsum256(acc[r]);
}

template <typename Block>
static float dotQ8Q2Q3K(const uchar* w, const signed char* q, const float* d, const int*, int blocks)
{
    float out;
    dotQ2Q3KTile<Block, 1>(w, q, 0, d, blocks, &out);
    return out;
}

// The multi-row tile: each weight row against up to 8 activation rows, unpacked once for them.
// (Two weight rows in one loop ran generation at half the speed: GCC spilled their state.)
template <typename Block>
static void tileQ2Q3K(const uchar* w, size_t wStride, int wRows, const signed char* q, const float* d, const int*,
                      int blocks, int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    for (int i = 0; i < wRows; i++)
        byRowTiles(rows, [&](auto R, int r) {
            dotQ2Q3KTile<Block, decltype(R)::value>(w + i * wStride, q + r * qStride, qStride, d + (size_t)r * blocks,
                                                     blocks, out + i * outStride + r);
        });
}

// The sums of x over the two 16-element groups of an activation block (the Q2_K minimum's
// weights): the first from the low 16 bytes, the second as the block's sum minus the first.
static inline void groupSums16(const signed char* x, int blockSum, int& first, int& second)
{
    const __m128i pairs = _mm_maddubs_epi16(_mm_set1_epi8(1), _mm_loadu_si128((const __m128i*)x));
    __m128i s = _mm_madd_epi16(pairs, _mm_set1_epi16(1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    first = _mm_cvtsi128_si32(s);
    second = blockSum - first;
}

// 8 rows' 8-bit values of one group (scales[g] of an interleaved unit) as floats times d8.
static inline __m256 groupScales8(__m256 d8, const int8_t* s)
{
    return _mm256_mul_ps(d8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)s))));
}

// Q3_K on the 8-row interleaved layout (block_q3_Kx8): per activation block (h, j) and chunk c,
// w = (qs >> 2j) & 3 | ((hmask >> (4h + j)) & 1) << 2 (0..7) of the 8 rows side by side; sum
// (w - 4) x per 16-input group in the rows' lanes (each term within int16: 4 chunks <= 4096),
// then one FMA per group with the rows' d * scale.
struct Q3KInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int*,
                                      int blocks, float* out, size_t outStride)
    {
        const __m256i two = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_q3_Kx8* g = reinterpret_cast<const block_q3_Kx8*>(group);
        for (int sb = 0; sb < blocks / 8; sb++, g++)
        {
            prefetchAhead(g);
            const __m256 d8 = halfs8(g->d);
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4  // j picks the shifts: constants when unrolled
                for (int j = 0; j < 4; j++)
                {
                    const int block = 8 * sb + 4 * h + j;  // activation block
                    for (int half = 0; half < 2; half++)
                    {
                        NarrowDotSum s16[R];
                        for (int c = 4 * half; c < 4 * half + 4; c++)
                        {
                            const __m256i low = _mm256_and_si256(
                                _mm256_srli_epi16(_mm256_loadu_si256((const __m256i*)g->qs[h][c]), 2 * j), two);
                            const __m256i high = _mm256_and_si256(
                                _mm256_srli_epi16(_mm256_loadu_si256((const __m256i*)g->hmask[c]), 4 * h + j), one);
                            const __m256i w = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
                            for (int r = 0; r < R; r++)
                                s16[r].addDifference(w, four, broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c));
                        }
                        const __m256 scale = groupScales8(d8, g->scales[8 * h + 2 * j + half]);
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

// Q2_K on the 8-row interleaved layout (block_q2_Kx8): w = (qs >> 2j) & 3 of the 8 rows; per
// 16-input group, d * sc * sum w x (each lane within int16: 4 chunks <= 3048) minus dmin * m *
// sum x, the sums of x per group taken once per activation block.
struct Q2KInterleaved8
{
    template <int R>
    LLM_TILE_NOINLINE static void run(const uchar* group, const signed char* q, size_t qStride, const float* d, const int* sums,
                                      int blocks, float* out, size_t outStride)
    {
        const __m256i two = _mm256_set1_epi8(3), low4 = _mm256_set1_epi32(0x0F);
        __m256 acc[R];
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_setzero_ps();
        const block_q2_Kx8* g = reinterpret_cast<const block_q2_Kx8*>(group);
        for (int sb = 0; sb < blocks / 8; sb++, g++)
        {
            prefetchAhead(g);
            const __m256 d8 = halfs8(g->d), dmin8 = halfs8(g->dmin);
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4  // j picks the shift: a constant when unrolled
                for (int j = 0; j < 4; j++)
                {
                    const int block = 8 * sb + 4 * h + j;  // activation block
                    float xSum[2][R];  // dx * sum x of the block's two groups
                    for (int r = 0; r < R; r++)
                    {
                        const int ab = r * blocks + block;
                        int first, second;
                        groupSums16(q + r * qStride + (size_t)block * 32, sums[ab], first, second);
                        xSum[0][r] = d[ab] * (float)first;
                        xSum[1][r] = d[ab] * (float)second;
                    }
                    for (int half = 0; half < 2; half++)
                    {
                        NarrowDotSum s16[R];
                        for (int c = 4 * half; c < 4 * half + 4; c++)
                        {
                            const __m256i w = _mm256_and_si256(
                                _mm256_srli_epi16(_mm256_loadu_si256((const __m256i*)g->qs[h][c]), 2 * j), two);
                            for (int r = 0; r < R; r++)
                                s16[r].add(w, broadcast4(q + r * qStride + (size_t)block * 32 + 4 * c));
                        }
                        const __m256i packed = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)g->scales[8 * h + 2 * j + half]));
                        const __m256 scale = _mm256_mul_ps(d8, _mm256_cvtepi32_ps(_mm256_and_si256(packed, low4)));
                        const __m256 minv = _mm256_mul_ps(dmin8, _mm256_cvtepi32_ps(_mm256_srli_epi32(packed, 4)));
                        for (int r = 0; r < R; r++)
                        {
                            const __m256 dot = _mm256_cvtepi32_ps(s16[r].total());
                            acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(scale, _mm256_set1_ps(d[r * blocks + block])), acc[r]);
                            acc[r] = _mm256_fnmadd_ps(minv, _mm256_set1_ps(xSum[half][r]), acc[r]);
                        }
                    }
                }
        }
        for (int r = 0; r < R; r++)
            _mm256_storeu_ps(out + r * outStride, acc[r]);
    }
};
