// The short convolution of hybrid models (recurrent/short_convolution.hpp: ggml_ssm_conv, with
// the optional bias and SiLU of Qwen3.5 / Mamba-2) against its definition computed in double:
// out_t[c] = bias[c] + sum_j taps[j][c] * in_{t-K+1+j}[c] (inputs before the sequence are 0),
// silu after; the state after T tokens holds the last K - 1 inputs, oldest first.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <cmath>
#include <vector>

#include "../../modules/dnn/src/llm/recurrent/short_convolution.hpp"

namespace {

struct Case
{
    int K, n, T;
    bool bias, silu;
};

// Runs T tokens through the kernel, one call per token, the state carried.
std::vector<float> runKernel(const Case& c, const std::vector<float>& x, const std::vector<float>& taps,
                             const std::vector<float>& bias, std::vector<float>& state)
{
    std::vector<float> out((size_t)c.T * c.n);
    for (int t = 0; t < c.T; t++)
        cv::dnn::llm::shortConvolutionToken(x.data() + (size_t)t * c.n, taps.data(), c.n, c.K,
                                            c.bias ? bias.data() : nullptr, state.data(), c.n, c.n, c.silu,
                                            out.data() + (size_t)t * c.n);
    return out;
}

// Inputs, taps and bias of a case, uniform in [-2, 2), [-1, 1), [-0.5, 0.5).
void randomInputs(const Case& c, cv::RNG& rng, std::vector<float>& x, std::vector<float>& taps, std::vector<float>& bias)
{
    x.resize((size_t)c.T * c.n);
    taps.resize((size_t)c.K * c.n);
    bias.resize(c.n);
    for (float& v : x)
        v = rng.uniform(-2.f, 2.f);
    for (float& v : taps)
        v = rng.uniform(-1.f, 1.f);
    for (float& v : bias)
        v = rng.uniform(-0.5f, 0.5f);
}

TEST(ShortConvolution, matchesItsDefinition)
{
    const Case cases[] = {{2, 5, 7, false, false}, {3, 256, 40, false, false}, {4, 515, 33, true, true},
                          {4, 16, 1, true, false}, {5, 37, 64, false, true}};
    cv::RNG rng(3);
    for (const Case& c : cases)
    {
        SCOPED_TRACE(cv::format("K %d, n %d, T %d, bias %d, silu %d", c.K, c.n, c.T, c.bias, c.silu));
        std::vector<float> x, taps, bias;
        randomInputs(c, rng, x, taps, bias);
        std::vector<float> state((size_t)(c.K - 1) * c.n, 0.f);
        const std::vector<float> out = runKernel(c, x, taps, bias, state);
        double worst = 0, scale = 0;
        for (int t = 0; t < c.T; t++)
            for (int ch = 0; ch < c.n; ch++)
            {
                double sum = c.bias ? bias[ch] : 0.0, magnitude = std::abs(sum);
                for (int j = 0; j < c.K; j++)
                {
                    const int src = t - (c.K - 1) + j;
                    const double term = src < 0 ? 0.0 : (double)taps[(size_t)j * c.n + ch] * x[(size_t)src * c.n + ch];
                    sum += term;
                    magnitude += std::abs(term);
                }
                const double expected = c.silu ? sum / (1.0 + std::exp(-sum)) : sum;
                worst = std::max(worst, std::abs(out[(size_t)t * c.n + ch] - expected));
                scale = std::max(scale, magnitude);
            }
        EXPECT_LE(worst, 2e-6 * scale);
        // The state: the last K - 1 inputs, oldest first (zeros before the sequence).
        for (int j = 0; j < c.K - 1; j++)
            for (int ch = 0; ch < c.n; ch++)
            {
                const int src = c.T - (c.K - 1) + j;
                EXPECT_EQ(state[(size_t)j * c.n + ch], src < 0 ? 0.f : x[(size_t)src * c.n + ch]);
            }
    }
}

// A sequence continued from a saved state gives the bits of one uninterrupted run.
TEST(ShortConvolution, stateCarriesAcrossCalls)
{
    const Case c{4, 300, 50, true, true};
    cv::RNG rng(9);
    std::vector<float> x, taps, bias;
    randomInputs(c, rng, x, taps, bias);
    std::vector<float> whole((size_t)(c.K - 1) * c.n, 0.f);
    const std::vector<float> expected = runKernel(c, x, taps, bias, whole);

    std::vector<float> state((size_t)(c.K - 1) * c.n, 0.f), out;
    const int pieces[] = {1, 19, 30};
    size_t at = 0;
    for (int n : pieces)
    {
        const Case part{c.K, c.n, n, c.bias, c.silu};
        const std::vector<float> piece(x.begin() + at * c.n, x.begin() + (at + n) * c.n);
        std::vector<float> copy = state;  // a checkpoint's copy serves as well as the live state
        const std::vector<float> o = runKernel(part, piece, taps, bias, copy);
        out.insert(out.end(), o.begin(), o.end());
        state = copy;
        at += n;
    }
    EXPECT_EQ(out, expected);
    EXPECT_EQ(state, whole);
}

} // namespace
