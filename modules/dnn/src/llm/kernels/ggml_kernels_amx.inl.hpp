// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AMX tile kernels (Intel Sapphire Rapids and later) for batched steps: Q4_0 and Q8_0 on two
// consecutive interleaved groups (16 weight rows) with up to 16 tokens per pass over the
// weights. Part of the AVX512_CLX build of ggml_kernels.simd.hpp, which patch 0010 compiles with
// the AMX flags; the weight-type table offers them only where amxTilesGranted() (amx_tiles.hpp).
//
// Per 32-input block one tile multiply (tdpbssd: tokens x 32 int8 activations times 32 x 16
// int8 weights) gives the 16 rows' exact integer dots with every token, where
// LegacyInterleaved16 issues 8 vpdpbusd per token. The blocks' scales differ, so each block's
// dots are stored and added to the float sums with LegacyInterleaved16's step (the same integer,
// converted, times the same scale product, one multiply-add): results bit-identical to it, and
// so to a token alone.
//
// Two things make it fast (5632 x 2048 Q4_0, 8 tokens: 0.55 ms against the VNNI kernel's 0.86
// in the same run; unpacking a block just before its multiply: 1.09 ms): a tile load of bytes
// just stored waits until the stores reach the cache, so the weights are unpacked (nibbles - 8,
// the two groups side by side: the tile's layout, 4 inputs of 16 rows per 64-byte row) kAhead
// blocks ahead into a ring; and two tile sets alternate between blocks, since the tile registers
// are not renamed (a load into a tile waits for the multiply still reading it).

#if CV_AVX512_CLX && defined(__AMX_TILE__) && defined(__AMX_INT8__)
#define LLM_HAVE_AMX_KERNELS 1

//! LDTILECFG's operand (palette 1): the rows and bytes per row of each of the 8 tiles.
struct AmxTileConfig
{
    uint8_t palette, startRow, reserved[14];
    uint16_t bytesPerRow[16];
    uint8_t rows[16];
};

// GCC's tile intrinsics are asm statements that do not tell the compiler they read or write
// memory: this barrier keeps the stores before a tile load, and the loads after a tile store,
// on their side of it.
static inline void amxCompilerBarrier()
{
    __asm__ volatile("" ::: "memory");
}

template <int Type>
struct LegacyAmx16
{
    typedef typename std::conditional<Type == GGML_Q8_0, block_q8_0x8, block_q4_0x8>::type Unit;
    static const int kAhead = 4;  // blocks unpacked ahead of their multiply (2 to 4 as fast; 1 slower)

    // Tiles 0-2 and 3-5 (configure<M>() before run<M>()): dots (M tokens x 16 int32), activations (M x 32 int8), weights (8 rows
    // of 4 inputs x 16 weight rows).
    template <int M>
    static void configure()
    {
        AmxTileConfig cfg;
        std::memset(&cfg, 0, sizeof(cfg));
        cfg.palette = 1;
        for (int set = 0; set < 2; set++)
        {
            cfg.rows[3 * set] = M;
            cfg.bytesPerRow[3 * set] = 64;
            cfg.rows[3 * set + 1] = M;
            cfg.bytesPerRow[3 * set + 1] = 32;
            cfg.rows[3 * set + 2] = 8;
            cfg.bytesPerRow[3 * set + 2] = 64;
        }
        _tile_loadconfig(&cfg);
    }

    template <int M>
    LLM_TILE_NOINLINE static void run(const uchar* group, size_t groupBytes, const signed char* q, size_t qStride,
                                      const float* d, int blocks, float* out, size_t outStride)
    {
        const Unit* a = reinterpret_cast<const Unit*>(group);
        const Unit* b = reinterpret_cast<const Unit*>(group + groupBytes);
        alignas(64) int8_t weights[8][8][64];   // ring of unpacked blocks (k & 7)
        alignas(64) int32_t dots[4][M][16];     // ring of blocks' integer dots (k & 3)
        __m512 acc[M];
        for (int r = 0; r < M; r++)
            acc[r] = _mm512_setzero_ps();
        const __m512i mask = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
        auto unpack = [&](int k) {
            prefetchAhead(a + k);
            prefetchAhead(b + k);
            int8_t (*w)[64] = weights[k & 7];
            if constexpr (Type == GGML_Q8_0)
                for (int c = 0; c < 8; c++)
                    _mm512_store_si512(w[c], chunkPair(a[k].qs[c], b[k].qs[c]));
            else
                for (int c = 0; c < 4; c++)
                {
                    // Chunk c holds inputs 4c..4c+3 (low nibbles) and 16+4c.. (high) of each row.
                    const __m512i v = chunkPair(a[k].qs[c], b[k].qs[c]);
                    _mm512_store_si512(w[c], _mm512_sub_epi8(_mm512_and_si512(v, mask), eight));
                    _mm512_store_si512(w[4 + c], _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight));
                }
        };
        auto multiply = [&](int k) {
            amxCompilerBarrier();
            if (k & 1)
            {
                _tile_loadd(4, q + (size_t)k * 32, qStride);
                _tile_loadd(5, weights[k & 7], 64);
                _tile_zero(3);
                _tile_dpbssd(3, 4, 5);
                _tile_stored(3, dots[k & 3], 64);
            }
            else
            {
                _tile_loadd(1, q + (size_t)k * 32, qStride);
                _tile_loadd(2, weights[k & 7], 64);
                _tile_zero(0);
                _tile_dpbssd(0, 1, 2);
                _tile_stored(0, dots[k & 3], 64);
            }
            amxCompilerBarrier();
        };
        auto accumulate = [&](int k) {
            const __m512 ws = halfsPair(a[k].d, b[k].d);
            for (int r = 0; r < M; r++)
            {
                const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(dots[k & 3][r]));
                acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(ws, _mm512_set1_ps(d[r * blocks + k])), acc[r]);
            }
        };
        for (int k = 0; k < std::min(kAhead, blocks); k++)
            unpack(k);
        for (int k = 0; k < blocks; k++)
        {
            if (k + kAhead < blocks)
                unpack(k + kAhead);
            multiply(k);
            if (k > 0)
                accumulate(k - 1);  // the previous block's dots: their store has had a block's time
        }
        accumulate(blocks - 1);
        for (int r = 0; r < M; r++)
            _mm512_storeu_ps(out + r * outStride, acc[r]);
    }
};

// Calls f(std::integral_constant<int, m>()) for 1 <= m <= N.
template <int N, typename F>
static inline void withTokenCount(int m, F f)
{
    if (m == N)
        f(std::integral_constant<int, N>());
    else if constexpr (N > 1)
        withTokenCount<N - 1>(m, f);
}

// The DotQ8InterleavedAmxFn of a tile kernel: passes of up to 16 tokens (a tile's rows) over
// the pairs (configured once per pass: the stripe's weights stay in the cache between passes),
// then the tile state handed back (a thread using it saves 8 KB more per context switch).
template <typename Tile>
static void interleavedPairsAmx(const uchar* group, size_t groupBytes, int pairs, const signed char* q, const float* d,
                                int blocks, int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    for (int r = 0; r < rows; r += 16)
        withTokenCount<16>(std::min(16, rows - r), [&](auto M) {
            Tile::template configure<decltype(M)::value>();
            for (int p = 0; p < pairs; p++)
                Tile::template run<decltype(M)::value>(group + 2 * p * groupBytes, groupBytes, q + r * qStride, qStride,
                                                       d + (size_t)r * blocks, blocks, out + r * outStride + 16 * p,
                                                       outStride);
        });
    _tile_release();
}

#define LLM_AMX_ONLY(kernel) kernel
#else
#define LLM_AMX_ONLY(kernel) nullptr
#endif
