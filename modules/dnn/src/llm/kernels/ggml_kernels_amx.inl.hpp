// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// AMX tile kernels (Intel Sapphire Rapids and later) for batched steps and prompts: Q4_0, Q8_0,
// Q4_K and Q5_K on two consecutive interleaved groups (16 weight rows) with up to 16 tokens per
// pass over the weights. Part of the AVX512_CLX build of ggml_kernels.simd.hpp, which patch 0010
// compiles with the AMX flags; the weight-type table offers them only where amxTilesGranted()
// (amx_tiles.hpp).
//
// Per 32 inputs one tile multiply (tdpbssd / tdpbsud: tokens x 32 int8 activations times 32 x 16
// weights) gives the 16 rows' exact integer dots with every token, where the AVX-512 kernels
// issue 8 vpdpbusd per token. The blocks' (sub-blocks') scales differ, so each step's dots are
// stored and taken into the float sums by the AVX-512 kernel's own float step (the same
// integers, converted, the same multiply-adds in the same order): results bit-identical to
// those kernels, and so to a token alone.
//
// Two things make it fast (5632 x 2048 Q4_0, 8 tokens: 0.55 ms against the VNNI kernel's 0.86
// in the same run; unpacking a block just before its multiply: 1.09 ms): a tile load of bytes
// just stored waits until the stores reach the cache, so the weights are unpacked (the two
// groups side by side: the tile's layout, 4 inputs of 16 rows per 64-byte row) kAhead steps
// ahead into a ring; and two tile sets alternate between steps, since the tile registers are
// not renamed (a load into a tile waits for the multiply still reading it).

#if CV_AVX512_CLX && defined(__AMX_TILE__) && defined(__AMX_INT8__)

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

// The weight side of the tile kernels, one struct per type family, each for two groups a and b:
// Unit, whether the tile weights are unsigned (tdpbsud) or signed (tdpbssd), the inputs of a step
// (32: an activation block; 16: half of one), the AVX-512 kernel that takes fewer than kMinRows
// activation rows, prefetch(k) (prefetchAhead of both groups: prefetchPairAhead, which speeds up
// the memory-bound AVX-512 kernels, cost these compute-bound ones 12% at 16 tokens end to end) and
// unpack(k, ring) of step k into its weight tile (rows of 4 inputs x 16 weight rows) ring[k & 7],
// and accumulate<M>(k, dots, acc, ...): the float step of the AVX-512 kernel for that type, on
// step k's M x 16 integer dots.

// Q4_0 (nibbles - 8) and Q8_0: LegacyInterleaved16's float step.
template <int Type>
struct LegacyTileWeights
{
    typedef typename std::conditional<Type == GGML_Q8_0, block_q8_0x8, block_q4_0x8>::type Unit;
    static const bool kUnsigned = false;
    static const int kStepInputs = 32;
    static const int kMinRows = 5;  // fewer: LegacyInterleaved16 (faster there, measured)
    typedef LegacyInterleaved16<Type> Avx512Kernel;
    const Unit *a, *b;

    void prefetch(int k) const
    {
        prefetchAhead(a + k);
        prefetchAhead(b + k);
    }

    void unpack(int k, int8_t (*ring)[8][64]) const
    {
        int8_t (*w)[64] = ring[k & 7];
        if constexpr (Type == GGML_Q8_0)
            for (int c = 0; c < 8; c++)
                _mm512_store_si512(w[c], chunkPair(a[k].qs[c], b[k].qs[c]));
        else
        {
            const __m512i mask = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
            for (int c = 0; c < 4; c++)
            {
                // Chunk c holds inputs 4c..4c+3 (low nibbles) and 16+4c.. (high) of each row.
                const __m512i v = chunkPair(a[k].qs[c], b[k].qs[c]);
                _mm512_store_si512(w[c], _mm512_sub_epi8(_mm512_and_si512(v, mask), eight));
                _mm512_store_si512(w[4 + c], _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight));
            }
        }
    }

    template <int M>
    void accumulate(int k, const __m512* dots, __m512* acc, const float* d, const int* /*sums*/, int blocks)
    {
        const __m512 ws = halfsPair(a[k].d, b[k].d);
        for (int r = 0; r < M; r++)
            acc[r] = _mm512_fmadd_ps(dots[r], _mm512_mul_ps(ws, _mm512_set1_ps(d[r * blocks + k])), acc[r]);
    }
};

// Q4_K and Q5_K (q = nibble, plus the fifth bit: 0..31, unsigned): step k is sub-block k % 8 of
// super-block k / 8; Q4KInterleaved16's / Q5KInterleaved16's float step (addSubBlock16), with
// each super-block's d x sum x per token taken at its first sub-block.
template <typename UnitType>
struct KQuantTileWeights
{
    typedef UnitType Unit;
    static const bool kUnsigned = true;
    static const int kStepInputs = 32;
    static const int kMinRows = 5;
    typedef typename std::conditional<std::is_same<Unit, block_q5_Kx8>::value, Q5KInterleaved16, Q4KInterleaved16>::type
        Avx512Kernel;
    const Unit *a, *b;
    alignas(32) float dxSum[16][8];  // the current super-block's, set at its first step
    __m512 d16, dmin16;

    void prefetch(int k) const
    {
        if (k % 8 == 0)
        {
            prefetchAhead(a + k / 8);
            prefetchAhead(b + k / 8);
        }
    }

    // Both sub-blocks of 64 inputs at step 2j (low nibbles: step 2j, high: 2j + 1) from one read.
    void unpack(int k, int8_t (*ring)[8][64]) const
    {
        if (k % 2)
            return;
        const Unit& ua = a[k / 8];
        const Unit& ub = b[k / 8];
        const int j = k % 8 / 2;
        int8_t (*low)[64] = ring[k & 7];
        int8_t (*high)[64] = ring[(k + 1) & 7];
        const __m512i mask = _mm512_set1_epi8(0x0F);
        __m512i bitsLo = _mm512_setzero_si512(), bitsHi = _mm512_setzero_si512();  // Q5_K: the fifth bits
        if constexpr (std::is_same<Unit, block_q5_Kx8>::value)
        {
            bitsLo = chunkPair(ua.qh[j][0], ub.qh[j][0]);
            bitsHi = chunkPair(ua.qh[j][1], ub.qh[j][1]);
        }
        for (int c = 0; c < 8; c++)
        {
            const __m512i v = chunkPair(ua.qs[j][c], ub.qs[j][c]);
            __m512i lo = _mm512_and_si512(v, mask), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
            if constexpr (std::is_same<Unit, block_q5_Kx8>::value)
            {
                lo = _mm512_or_si512(lo, fifthBitsOfChunk16(bitsLo, c));
                hi = _mm512_or_si512(hi, fifthBitsOfChunk16(bitsHi, c));
            }
            _mm512_store_si512(low[c], lo);
            _mm512_store_si512(high[c], hi);
        }
    }

    template <int M>
    void accumulate(int k, const __m512* dots, __m512* acc, const float* d, const int* sums, int blocks)
    {
        const int sb = k / 8;
        if (k % 8 == 0)
        {
            tokensDxSum<M>(d, sums, blocks, sb, dxSum);
            d16 = halfsPair(a[sb].d, b[sb].d);
            dmin16 = halfsPair(a[sb].dmin, b[sb].dmin);
        }
        addSubBlock16<M>(acc, dots, a[sb], b[sb], d16, dmin16, k % 8, d + k, blocks, dxSum);
    }
};

// Q6_K (q - 32, signed): its scales cover 16 inputs, so a step is one 16-input group (half an
// activation block: a tile multiply of half the depth); Q6KInterleaved16's float step.
struct Q6KTileWeights
{
    typedef block_q6_Kx8 Unit;
    static const bool kUnsigned = false;
    static const int kStepInputs = 16;
    static const int kMinRows = 9;  // up to 8, one pass of Q6KInterleaved16 is faster
    typedef Q6KInterleaved16 Avx512Kernel;
    const Unit *a, *b;

    void prefetch(int k) const
    {
        if (k % 16 == 0)
        {
            prefetchAhead(a + k / 16);
            prefetchAhead(b + k / 16);
        }
    }

    // Group sub = 8 h + 2 quarter + half of a super-block: chunks 4 half .. 4 half + 3 of half h,
    // quarter picking the nibble plane and half and the 2 high bits.
    void unpack(int k, int8_t (*ring)[8][64]) const
    {
        const Unit& ua = a[k / 16];
        const Unit& ub = b[k / 16];
        const int sub = k % 16, h = sub / 8, quarter = sub % 8 / 2, half = sub % 2;
        const __m512i offset = _mm512_set1_epi8(32);
        for (int i = 0; i < 4; i++)
        {
            const __m512i q = Q6KInterleaved16::quantsOfChunk(ua.chunks[h][4 * half + i], ub.chunks[h][4 * half + i], quarter);
            _mm512_store_si512(ring[k & 7][i], _mm512_sub_epi8(q, offset));
        }
    }

    template <int M>
    void accumulate(int k, const __m512* dots, __m512* acc, const float* d, const int* /*sums*/, int blocks)
    {
        const Unit& ua = a[k / 16];
        const Unit& ub = b[k / 16];
        const int sub = k % 16, block = k / 2;
        const __m512 scale = _mm512_mul_ps(halfsPair(ua.d, ub.d), Q6KInterleaved16::scalesPair(ua.scales[sub], ub.scales[sub]));
        for (int r = 0; r < M; r++)
            acc[r] = _mm512_fmadd_ps(dots[r], _mm512_mul_ps(scale, _mm512_set1_ps(d[r * blocks + block])), acc[r]);
    }
};

// The tile kernel on two groups for M tokens (configure<M>() first): per step, one tile
// multiply of the M tokens' activation block with the unpacked weights, its dots stored and
// taken into the float sums one step later.
template <typename Weights>
struct AmxTiles16
{
    static const int kAhead = 4;  // steps unpacked ahead of their multiply (2 to 4 as fast; 1 slower)
    // The ring of 8 weight tiles holds the step being multiplied, those unpacked ahead, and the
    // one more a K-quant unpack writes (both halves of 64 inputs at once).
    static_assert(kAhead + 2 <= 8, "the ring of unpacked steps is too small");

    // Tiles 0-2 and 3-5: dots (M tokens x 16 int32), activations (M x step inputs int8), weights
    // (rows of 4 inputs x 16 weight rows).
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
            cfg.bytesPerRow[3 * set + 1] = Weights::kStepInputs;
            cfg.rows[3 * set + 2] = Weights::kStepInputs / 4;
            cfg.bytesPerRow[3 * set + 2] = 64;
        }
        _tile_loadconfig(&cfg);
    }

    // q: the M tokens' activations by block (block k's M x 32 bytes at q + 32 M k, from
    // activationsByBlockForTiles), so that a tile load reads consecutive bytes.
    template <int M>
    LLM_TILE_NOINLINE static void run(const uchar* group, size_t groupBytes, const signed char* q, const float* d,
                                      const int* sums, int blocks, float* out, size_t outStride)
    {
        typedef typename Weights::Unit Unit;
        Weights weights;
        weights.a = reinterpret_cast<const Unit*>(group);
        weights.b = reinterpret_cast<const Unit*>(group + groupBytes);
        alignas(64) int8_t tiles[8][8][64];    // ring of unpacked steps (k & 7)
        alignas(64) int32_t dots[4][M][16];    // ring of steps' integer dots (k & 3)
        __m512 acc[M];
        for (int r = 0; r < M; r++)
            acc[r] = _mm512_setzero_ps();
        const int steps = blocks * 32 / Weights::kStepInputs;
        auto activations = [&](int k) {  // step k's inputs of the M tokens (rows 32 bytes apart)
            return q + (size_t)(k * Weights::kStepInputs / 32) * 32 * M + k * Weights::kStepInputs % 32;
        };
        auto unpack = [&](int k) {
            weights.prefetch(k);
            weights.unpack(k, tiles);
        };
        // GCC pastes the tile number into its asm: a literal, so each tile set is spelled out.
        auto multiply = [&](int k) {
            amxCompilerBarrier();
            if (k & 1)
            {
                _tile_loadd(4, activations(k), 32);
                _tile_loadd(5, tiles[k & 7], 64);
                _tile_zero(3);
                if constexpr (Weights::kUnsigned)
                    _tile_dpbsud(3, 4, 5);
                else
                    _tile_dpbssd(3, 4, 5);
            }
            else
            {
                _tile_loadd(1, activations(k), 32);
                _tile_loadd(2, tiles[k & 7], 64);
                _tile_zero(0);
                if constexpr (Weights::kUnsigned)
                    _tile_dpbsud(0, 1, 2);
                else
                    _tile_dpbssd(0, 1, 2);
            }
        };
        auto storeDots = [&](int k) {
            if (k & 1)
                _tile_stored(3, dots[k & 3], 64);
            else
                _tile_stored(0, dots[k & 3], 64);
            amxCompilerBarrier();
        };
        auto accumulate = [&](int k) {
            __m512 dotsF[M];
            for (int r = 0; r < M; r++)
                dotsF[r] = _mm512_cvtepi32_ps(_mm512_load_si512(dots[k & 3][r]));
            weights.template accumulate<M>(k, dotsF, acc, d, sums, blocks);
        };
        // A step's dots are stored once the next step's multiply is under way (a store waits
        // for its multiply to finish), and taken into the sums a step after that.
        for (int k = 0; k < std::min(kAhead, steps); k++)
            unpack(k);
        for (int k = 0; k < steps; k++)
        {
            if (k + kAhead < steps)
                unpack(k + kAhead);
            multiply(k);
            if (k >= 1)
                storeDots(k - 1);
            if (k >= 2)
                accumulate(k - 2);
        }
        storeDots(steps - 1);
        for (int k = std::max(0, steps - 2); k < steps; k++)
            accumulate(k);
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

// The DotQ8InterleavedAmxFn of a tile kernel: below the type's kMinRows its AVX-512 kernel, else
// passes of up to 16 tokens (a tile's rows) over the pairs, each with the tiles configured once
// (the stripe's weights stay in the cache between passes), then the tile state handed back (a
// thread using it saves 8 KB more per context switch).
template <typename Weights>
static void interleavedPairsAmx(const uchar* group, size_t groupBytes, int pairs, const signed char* q,
                                const signed char* qByBlock, const float* d, const int* sums, int blocks, int rows,
                                float* out, size_t outStride)
{
    if (rows < Weights::kMinRows)
    {
        for (int p = 0; p < pairs; p++)
            interleaved16Rows<typename Weights::Avx512Kernel>(group + 2 * p * groupBytes, groupBytes, q, d, sums, blocks,
                                                              rows, out + 16 * p, outStride);
        return;
    }
    const size_t qStride = (size_t)blocks * 32;
    for (int r = 0; r < rows; r += 16)
        withTokenCount<16>(std::min(16, rows - r), [&](auto M) {
            constexpr int m = decltype(M)::value;
            AmxTiles16<Weights>::template configure<m>();
            for (int p = 0; p < pairs; p++)
                AmxTiles16<Weights>::template run<m>(group + 2 * p * groupBytes, groupBytes, qByBlock + r * qStride,
                                                     d + (size_t)r * blocks, sums + (size_t)r * blocks, blocks,
                                                     out + r * outStride + 16 * p, outStride);
        });
    _tile_release();
}

#define LLM_AMX_ONLY(kernel) kernel
#else
#define LLM_AMX_ONLY(kernel) nullptr
#endif
