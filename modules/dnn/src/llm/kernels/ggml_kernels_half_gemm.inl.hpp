// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Included by ggml_kernels.simd.hpp (AVX2 and AVX-512 builds), after the F16 / BF16 element
// loaders: prompts (many tokens) times F16 / BF16 weight rows, the weights converted to float in
// registers as they are read. It replaces, for these types, decoding a tile of rows into a float
// buffer and Eigen's GEMM over it, which packs the tokens again for every tile (one thread of an
// EPYC Zen 5, TinyLlama-shaped F16 file, pp64: 74 GFLOP/s, 0.47x llama.cpp).
//
// A register tile of kGemmTokens tokens by kGemmRows rows: each step loads one vector of each
// token and converts one of each row, and takes their kGemmTokens x kGemmRows fused
// multiply-adds (AVX-512: 6 x 4 accumulators, 6 token vectors and one weight vector, 31 of the
// 32 registers; AVX2: 3 x 4 of 16). Each output is the horizontal sum of its accumulator. A set
// of tokens meets every row of the tile before the next set (their vectors stay in the L1 / L2
// caches, the 16-bit rows stream), over slices of kGemmDepth inputs (a slice's sums added to
// the previous ones'). One thread, 64 tokens x 2048 x 2048 F16 (EPYC Zen 5): 184 GFLOP/s, 82% of
// its fused multiply-add peak (rows before tokens: 158; slices of 512: 161, none at 14336
// inputs: 161 against 183); AVX2 102, 91% of that peak.

#if CV_AVX512_CLX
static const int kGemmTokens = 6;
template <typename Elements> static inline v_float32 gemmLoadWeights(const uchar* s) { return v_float32(Elements::load16(s)); }
#else
static const int kGemmTokens = 3;
template <typename Elements> static inline v_float32 gemmLoadWeights(const uchar* s) { return v_float32(Elements::load8(s)); }
#endif
static const int kGemmLanes = VTraits<v_float32>::nlanes;
static const int kGemmRows = 4, kGemmDepth = 4096;

//! One register tile's operands: rows of 16-bit weights (w(r, k): element k of the row at w + r *
//! wStride bytes), tokens of X (float, or bfloat16 bits), outputs; `accumulate`: add to y.
template <typename X>
struct TileOperands
{
    const uchar* w;
    size_t wStride;
    const X* x;
    size_t xStride;
    int n;
    float* y;
    size_t yStride;
    bool accumulate;

    void store(int t, int r, float sum) const
    {
        float& out = y[t * yStride + r];
        out = accumulate ? out + sum : sum;
    }
};

//! y[t * yStride + r] (+)= sum over k < n of x[t * xStride + k] * w(r, k), t < M, r < N.
template <typename Elements>
struct FloatTile
{
    typedef TileOperands<float> Operands;

    template <int M, int N>
    static void run(const Operands& a)
    {
        v_float32 acc[M][N];
        for (int t = 0; t < M; t++)
            for (int r = 0; r < N; r++)
                acc[t][r] = vx_setzero_f32();
        int k = 0;
        for (; k + kGemmLanes <= a.n; k += kGemmLanes)
        {
            v_float32 xv[M];
            for (int t = 0; t < M; t++)
                xv[t] = vx_load(a.x + t * a.xStride + k);
            for (int r = 0; r < N; r++)
            {
                const v_float32 wv = gemmLoadWeights<Elements>(a.w + r * a.wStride + 2 * k);
                for (int t = 0; t < M; t++)
                    acc[t][r] = v_fma(xv[t], wv, acc[t][r]);
            }
        }
        for (int t = 0; t < M; t++)
            for (int r = 0; r < N; r++)
            {
                float sum = v_reduce_sum(acc[t][r]);
                for (int i = k; i < a.n; i++)
                {
                    uint16_t bits;
                    std::memcpy(&bits, a.w + r * a.wStride + 2 * i, 2);
                    sum += Elements::scalar(bits) * a.x[t * a.xStride + i];
                }
                a.store(t, r, sum);
            }
    }
};

// The tile for the last tokens / rows of a matrix (fewer than kGemmTokens / kGemmRows).
template <class Tile, int M>
static void tileOfRows(int rows, const typename Tile::Operands& a)
{
    switch (rows)
    {
    case 4: Tile::template run<M, 4>(a); break;
    case 3: Tile::template run<M, 3>(a); break;
    case 2: Tile::template run<M, 2>(a); break;
    default: Tile::template run<M, 1>(a); break;
    }
}

template <class Tile>
static void tileOf(int tokens, int rows, const typename Tile::Operands& a)
{
    static_assert(kGemmRows == 4, "tileOfRows takes up to 4 rows");
    switch (tokens)
    {
#if CV_AVX512_CLX
    static_assert(kGemmTokens == 6, "up to 6 tokens");
    case 6: tileOfRows<Tile, 6>(rows, a); break;
    case 5: tileOfRows<Tile, 5>(rows, a); break;
    case 4: tileOfRows<Tile, 4>(rows, a); break;
#else
    static_assert(kGemmTokens == 3, "up to 3 tokens");
#endif
    case 3: tileOfRows<Tile, 3>(rows, a); break;
    case 2: tileOfRows<Tile, 2>(rows, a); break;
    default: tileOfRows<Tile, 1>(rows, a); break;
    }
}

template <typename Elements>
static void halfGemm(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                     float* y, size_t yStride)
{
    for (int k0 = 0; k0 < n; k0 += kGemmDepth)
    {
        const int depth = std::min(kGemmDepth, n - k0);
        for (int t = 0; t < tokens; t += kGemmTokens)
            for (int r = 0; r < rows; r += kGemmRows)
            {
                const TileOperands<float> a = {w + r * wStride + 2 * (size_t)k0, wStride, x + t * xStride + k0, xStride,
                                               depth, y + t * yStride + r, yStride, k0 > 0};
                tileOf<FloatTile<Elements>>(std::min(kGemmTokens, tokens - t), std::min(kGemmRows, rows - r), a);
            }
    }
}

static void gemmF16F32(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                       float* y, size_t yStride, bool /*roundTokens: no faster dot for F16 here*/)
{
    halfGemm<F16Elements>(w, wStride, rows, x, xStride, tokens, n, y, yStride);
}

#if CV_AVX512_CLX && defined(__GNUC__)
/* BF16 rows on CPUs with AVX512_BF16 (AMD Zen 4 and 5, Intel Cooper Lake and Sapphire Rapids):
   `vdpbf16ps` takes two products per 32-bit lane, twice the float FMA rate, on the tokens rounded
   to bfloat16 (round to nearest even), as llama.cpp's BF16 path computes. OpenCV's dispatch has
   no AVX512_BF16 level: these functions are compiled for it by attribute and called after a CPU
   check. One thread (EPYC Zen 5): 261-284 GFLOP/s for 64 tokens x 2048 x 2048, 218-224 for 64 x
   5632 x 2048, against 186 / 182 for the float kernel. */
#define LLM_BF16_DOT_TARGET __attribute__((target("avx512bf16")))

static bool cpuHasBF16Dot()
{
    static const bool has = __builtin_cpu_supports("avx512bf16") != 0;
    return has;
}

//! A float rounded to bfloat16, to nearest even (what vcvtne2ps2bf16 does for numbers).
static inline uint16_t roundToBF16(float f)
{
    Cv32suf v;
    v.f = f;
    if ((v.u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((v.u >> 16) | 0x40);  // a NaN stays one (quiet)
    return (uint16_t)((v.u + 0x7FFFu + ((v.u >> 16) & 1u)) >> 16);
}

LLM_BF16_DOT_TARGET static void roundRowToBF16(const float* x, int n, uint16_t* out)
{
    int k = 0;
    for (; k + 32 <= n; k += 32)
        _mm512_storeu_si512(out + k, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k)));
    for (; k < n; k++)
        out[k] = roundToBF16(x[k]);
}

//! FloatTile's sums with the tokens as bfloat16: two elements per 32-bit lane, 32 per step.
struct BF16DotTile
{
    typedef TileOperands<uint16_t> Operands;

    template <int M, int N>
    LLM_BF16_DOT_TARGET static void run(const Operands& a)
    {
        __m512 acc[M][N];
        for (int t = 0; t < M; t++)
            for (int r = 0; r < N; r++)
                acc[t][r] = _mm512_setzero_ps();
        int k = 0;
        for (; k + 32 <= a.n; k += 32)
        {
            __m512bh xv[M];
            for (int t = 0; t < M; t++)
                xv[t] = (__m512bh)_mm512_loadu_si512(a.x + t * a.xStride + k);
            for (int r = 0; r < N; r++)
            {
                const __m512bh wv = (__m512bh)_mm512_loadu_si512(a.w + r * a.wStride + 2 * k);
                for (int t = 0; t < M; t++)
                    acc[t][r] = _mm512_dpbf16_ps(acc[t][r], xv[t], wv);
            }
        }
        for (int t = 0; t < M; t++)
            for (int r = 0; r < N; r++)
            {
                float sum = _mm512_reduce_add_ps(acc[t][r]);
                for (int i = k; i < a.n; i++)
                {
                    uint16_t bits;
                    std::memcpy(&bits, a.w + r * a.wStride + 2 * i, 2);
                    sum += bf16Scalar(bits) * bf16Scalar(a.x[t * a.xStride + i]);
                }
                a.store(t, r, sum);
            }
    }
};

static void gemmBF16Dot(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                        float* y, size_t yStride)
{
    uint16_t rounded[kGemmTokens * kGemmDepth];
    for (int k0 = 0; k0 < n; k0 += kGemmDepth)
    {
        const int depth = std::min(kGemmDepth, n - k0);
        for (int t = 0; t < tokens; t += kGemmTokens)
        {
            const int count = std::min(kGemmTokens, tokens - t);
            for (int i = 0; i < count; i++)
                roundRowToBF16(x + (t + i) * xStride + k0, depth, rounded + i * depth);
            for (int r = 0; r < rows; r += kGemmRows)
            {
                const TileOperands<uint16_t> a = {w + r * wStride + 2 * (size_t)k0, wStride, rounded, (size_t)depth,
                                                  depth, y + t * yStride + r, yStride, k0 > 0};
                tileOf<BF16DotTile>(count, std::min(kGemmRows, rows - r), a);
            }
        }
    }
}
#endif

static void gemmBF16F32(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                        float* y, size_t yStride, bool roundTokens)
{
#if CV_AVX512_CLX && defined(__GNUC__)
    if (roundTokens && cpuHasBF16Dot())
        return gemmBF16Dot(w, wStride, rows, x, xStride, tokens, n, y, yStride);
#else
    CV_UNUSED(roundTokens);
#endif
    halfGemm<BF16Elements>(w, wStride, rows, x, xStride, tokens, n, y, yStride);
}
