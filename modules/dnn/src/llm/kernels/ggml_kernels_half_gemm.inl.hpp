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

//! y[t * yStride + r] (+)= sum over k < n of x[t * xStride + k] * w(r, k), t < M, r < N; w(r, k)
//! the element k of the 16-bit row at w + r * wStride bytes. `accumulate`: add to y.
template <typename Elements, int M, int N>
static void halfGemmTile(const uchar* w, size_t wStride, const float* x, size_t xStride, int n, float* y,
                         size_t yStride, bool accumulate)
{
    v_float32 acc[M][N];
    for (int t = 0; t < M; t++)
        for (int r = 0; r < N; r++)
            acc[t][r] = vx_setzero_f32();
    int k = 0;
    for (; k + kGemmLanes <= n; k += kGemmLanes)
    {
        v_float32 xv[M];
        for (int t = 0; t < M; t++)
            xv[t] = vx_load(x + t * xStride + k);
        for (int r = 0; r < N; r++)
        {
            const v_float32 wv = gemmLoadWeights<Elements>(w + r * wStride + 2 * k);
            for (int t = 0; t < M; t++)
                acc[t][r] = v_fma(xv[t], wv, acc[t][r]);
        }
    }
    for (int t = 0; t < M; t++)
        for (int r = 0; r < N; r++)
        {
            float sum = v_reduce_sum(acc[t][r]);
            for (int i = k; i < n; i++)
            {
                uint16_t bits;
                std::memcpy(&bits, w + r * wStride + 2 * i, 2);
                sum += Elements::scalar(bits) * x[t * xStride + i];
            }
            float& out = y[t * yStride + r];
            out = accumulate ? out + sum : sum;
        }
}

// The tile for the last tokens / rows of a matrix (fewer than kGemmTokens / kGemmRows).
template <typename Elements, int M>
static void halfGemmTileOfRows(int rows, const uchar* w, size_t wStride, const float* x, size_t xStride, int n,
                               float* y, size_t yStride, bool accumulate)
{
    switch (rows)
    {
    case 4: halfGemmTile<Elements, M, 4>(w, wStride, x, xStride, n, y, yStride, accumulate); break;
    case 3: halfGemmTile<Elements, M, 3>(w, wStride, x, xStride, n, y, yStride, accumulate); break;
    case 2: halfGemmTile<Elements, M, 2>(w, wStride, x, xStride, n, y, yStride, accumulate); break;
    default: halfGemmTile<Elements, M, 1>(w, wStride, x, xStride, n, y, yStride, accumulate); break;
    }
}

template <typename Elements>
static void halfGemmTileOf(int tokens, int rows, const uchar* w, size_t wStride, const float* x, size_t xStride,
                           int n, float* y, size_t yStride, bool accumulate)
{
    static_assert(kGemmRows == 4, "halfGemmTileOfRows takes up to 4 rows");
    switch (tokens)
    {
#if CV_AVX512_CLX
    static_assert(kGemmTokens == 6, "up to 6 tokens");
    case 6: halfGemmTileOfRows<Elements, 6>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
    case 5: halfGemmTileOfRows<Elements, 5>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
    case 4: halfGemmTileOfRows<Elements, 4>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
#else
    static_assert(kGemmTokens == 3, "up to 3 tokens");
#endif
    case 3: halfGemmTileOfRows<Elements, 3>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
    case 2: halfGemmTileOfRows<Elements, 2>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
    default: halfGemmTileOfRows<Elements, 1>(rows, w, wStride, x, xStride, n, y, yStride, accumulate); break;
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
                halfGemmTileOf<Elements>(std::min(kGemmTokens, tokens - t), std::min(kGemmRows, rows - r),
                                         w + r * wStride + 2 * (size_t)k0, wStride, x + t * xStride + k0, xStride,
                                         depth, y + t * yStride + r, yStride, k0 > 0);
    }
}

static void gemmF16F32(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                       float* y, size_t yStride)
{
    halfGemm<F16Elements>(w, wStride, rows, x, xStride, tokens, n, y, yStride);
}

static void gemmBF16F32(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                        float* y, size_t yStride)
{
    halfGemm<BF16Elements>(w, wStride, rows, x, xStride, tokens, n, y, yStride);
}
