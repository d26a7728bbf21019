// Mamba-2's selective scan (llm::selectiveScan) and gated group RMS norm (llm::gatedGroupRMSNorm)
// against their definitions computed in double precision here (llama.cpp's build_mamba2_layer:
// dt + dt_bias, softplus, exp(dt * A), s = s * dA + B * x * dt, y = C . s + D * x; then
// silu(z) * y RMS-normalized per group times the weight): token counts 1 / 5 / 64 / 300, one
// group and several, state sizes with and without a vector tail, odd head sizes, a sequence
// scanned in pieces, strided views of fused rows, one thread against two. llm_tests_without_avx2
// / _without_vnni run them on the baseline and AVX2 builds.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../../modules/dnn/src/llm/recurrent/selective_scan.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

struct ScanShape
{
    int tokens, heads, headDim, groups, stateSize;
};

// One sequence's inputs, each in a buffer of its own row stride (padding filled with garbage
// that must not be read), as views of fused rows would be.
struct ScanProblem
{
    ScanShape shape;
    size_t xStride, dtStride, bStride, cStride;
    std::vector<float> x, dt, B, C, dtBias, A, D, state;

    llm::SelectiveScanInputs inputs(int firstToken, int tokens, bool withBias = true, bool withD = true) const
    {
        llm::SelectiveScanInputs in;
        in.tokens = tokens;
        in.heads = shape.heads;
        in.headDim = shape.headDim;
        in.groups = shape.groups;
        in.stateSize = shape.stateSize;
        in.x = x.data() + firstToken * xStride;
        in.xTokenStride = xStride;
        in.dt = dt.data() + firstToken * dtStride;
        in.dtTokenStride = dtStride;
        in.B = B.data() + firstToken * bStride;
        in.bTokenStride = bStride;
        in.C = C.data() + firstToken * cStride;
        in.cTokenStride = cStride;
        in.dtBias = withBias ? dtBias.data() : nullptr;
        in.A = A.data();
        in.D = withD ? D.data() : nullptr;
        return in;
    }
};

void fillNormal(std::vector<float>& v, RNG& rng, double mean, double sigma)
{
    for (float& e : v)
        e = (float)rng.gaussian(sigma) + (float)mean;
}

ScanProblem makeProblem(const ScanShape& s, uint64 seed, int padding = 0)
{
    RNG rng(seed);
    ScanProblem p;
    p.shape = s;
    p.xStride = (size_t)s.heads * s.headDim + padding;
    p.dtStride = (size_t)s.heads + padding;
    p.bStride = (size_t)s.groups * s.stateSize + padding;
    p.cStride = p.bStride + padding;
    p.x.resize(p.xStride * s.tokens);
    p.dt.resize(p.dtStride * s.tokens);
    p.B.resize(p.bStride * s.tokens);
    p.C.resize(p.cStride * s.tokens);
    fillNormal(p.x, rng, 0.0, 1.0);
    fillNormal(p.B, rng, 0.0, 0.5);
    fillNormal(p.C, rng, 0.0, 0.5);
    // dt around -2 (softplus ~0.13) with some large values: ggml's softplus passes dt > 20 through.
    fillNormal(p.dt, rng, -2.0, 2.0);
    for (size_t i = 0; i < p.dt.size(); i += 37)
        p.dt[i] = 25.0f;
    p.dtBias.resize(s.heads);
    fillNormal(p.dtBias, rng, 0.5, 0.5);
    // A as GGUF stores it: -exp(A_log), A_log in [-2, 1] (decays from near 1 to fast).
    p.A.resize(s.heads);
    for (int h = 0; h < s.heads; h++)
        p.A[h] = -std::exp((float)rng.uniform(-2.0, 1.0));
    p.D.resize(s.heads);
    fillNormal(p.D, rng, 1.0, 0.5);
    p.state.resize((size_t)s.heads * s.headDim * s.stateSize);
    fillNormal(p.state, rng, 0.0, 0.3);
    return p;
}

// The definition, in double: the state carried in `state`, y[t][h * P + p] and, for the
// tolerance, the sum of the magnitudes of y's terms.
void referenceScan(const ScanProblem& pr, int firstToken, int tokens, bool withBias, bool withD,
                   std::vector<double>& state, std::vector<double>& y, std::vector<double>& magnitude)
{
    const ScanShape& s = pr.shape;
    const int P = s.headDim, N = s.stateSize, inner = s.heads * P;
    y.assign((size_t)tokens * inner, 0.0);
    magnitude.assign(y.size(), 0.0);
    for (int t = 0; t < tokens; t++)
    {
        const size_t tok = (size_t)(firstToken + t);
        for (int h = 0; h < s.heads; h++)
        {
            const int g = h / (s.heads / s.groups);
            const double dt = (double)pr.dt[tok * pr.dtStride + h] + (withBias ? pr.dtBias[h] : 0.0);
            const double delta = std::log1p(std::exp(dt));  // softplus
            const double decay = std::exp(delta * pr.A[h]);
            for (int p = 0; p < P; p++)
            {
                const double x = pr.x[tok * pr.xStride + h * P + p];
                double sum = 0.0, mag = 0.0;
                for (int n = 0; n < N; n++)
                {
                    double& st = state[((size_t)h * P + p) * N + n];
                    const double kept = st * decay, input = (double)pr.B[tok * pr.bStride + g * N + n] * x * delta;
                    const double c = pr.C[tok * pr.cStride + g * N + n];
                    st = kept + input;
                    sum += st * c;
                    mag += (std::abs(kept) + std::abs(input)) * std::abs(c);
                }
                const double skip = withD ? x * pr.D[h] : 0.0;
                y[(size_t)t * inner + h * P + p] = sum + skip;
                magnitude[(size_t)t * inner + h * P + p] = mag + std::abs(skip);
            }
        }
    }
}

// Float rounding of a sum of ~N terms relative to the sum of their magnitudes, with the state's
// own rounding carried over hundreds of tokens: 3e-6 of the magnitude leaves a margin of ~10x
// on this machine's results and fails on any real mistake (a missing softplus, skip or bias
// changes y by a good fraction of its magnitude).
const double kRelativeTolerance = 3e-6;

void expectScanMatches(const std::vector<float>& y, size_t yStride, const std::vector<double>& ref,
                       const std::vector<double>& magnitude, int tokens, int inner, const std::string& what)
{
    double worst = 0.0;
    int bad = 0;
    for (int t = 0; t < tokens; t++)
        for (int i = 0; i < inner; i++)
        {
            const double r = ref[(size_t)t * inner + i], m = magnitude[(size_t)t * inner + i];
            const double err = std::abs(y[(size_t)t * yStride + i] - r) / (m + 1e-6);
            worst = std::max(worst, err);
            if (err > kRelativeTolerance && bad++ < 3)
                ADD_FAILURE() << what << ": y[" << t << "][" << i << "] = " << y[(size_t)t * yStride + i]
                              << ", definition " << r << " (terms' magnitude " << m << ")";
        }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " elements off, worst relative error " << worst;
}

void expectStateMatches(const std::vector<float>& state, const std::vector<double>& ref, const std::string& what)
{
    double scale = 0.0, worst = 0.0;
    for (double v : ref)
        scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < ref.size(); i++)
        worst = std::max(worst, std::abs(state[i] - ref[i]));
    EXPECT_LE(worst, 2e-6 * scale) << what << ": state off by " << worst << " (largest element " << scale << ")";
}

void runAgainstDefinition(const ScanShape& s, uint64 seed)
{
    const ScanProblem pr = makeProblem(s, seed);
    const int inner = s.heads * s.headDim;
    std::vector<float> state = pr.state, y((size_t)s.tokens * inner);
    llm::selectiveScan(pr.inputs(0, s.tokens), state.data(), y.data(), inner);

    std::vector<double> refState(pr.state.begin(), pr.state.end()), ref, magnitude;
    referenceScan(pr, 0, s.tokens, true, true, refState, ref, magnitude);
    const std::string what = cv::format("T=%d H=%d P=%d G=%d N=%d", s.tokens, s.heads, s.headDim, s.groups,
                                        s.stateSize);
    expectScanMatches(y, inner, ref, magnitude, s.tokens, inner, what);
    expectStateMatches(state, refState, what);
}

} // namespace

TEST(SelectiveScan, matchesDefinitionOneGroup)
{
    for (int tokens : {1, 5, 64, 300})
        runAgainstDefinition({tokens, 6, 16, 1, 128}, 100 + tokens);
}

// Granite-4 / Nemotron-H style: several groups (head h reads group h / (H / G)); an odd head
// size (the kernel's rows go in pairs) and a state size that is no multiple of any vector.
TEST(SelectiveScan, matchesDefinitionGroups)
{
    for (int tokens : {1, 5, 64, 300})
    {
        runAgainstDefinition({tokens, 8, 9, 4, 64}, 200 + tokens);
        runAgainstDefinition({tokens, 6, 7, 2, 37}, 300 + tokens);
    }
}

// A sequence scanned in pieces (1 + 98 + 201 tokens) gives the one 300-token call's outputs and
// state bit for bit (each token's arithmetic does not depend on where a call starts), and both
// match the definition.
TEST(SelectiveScan, stateCarriesAcrossCalls)
{
    const ScanShape s{300, 8, 16, 2, 128};
    const ScanProblem pr = makeProblem(s, 7);
    const int inner = s.heads * s.headDim;
    std::vector<float> stateOnce = pr.state, yOnce((size_t)s.tokens * inner);
    llm::selectiveScan(pr.inputs(0, s.tokens), stateOnce.data(), yOnce.data(), inner);

    std::vector<float> statePieces = pr.state, yPieces((size_t)s.tokens * inner);
    int first = 0;
    for (int count : {1, 98, 201})
    {
        llm::selectiveScan(pr.inputs(first, count), statePieces.data(), yPieces.data() + (size_t)first * inner, inner);
        first += count;
    }
    ASSERT_EQ(first, s.tokens);
    EXPECT_EQ(yPieces, yOnce);
    EXPECT_EQ(statePieces, stateOnce);

    std::vector<double> refState(pr.state.begin(), pr.state.end()), ref, magnitude;
    referenceScan(pr, 0, s.tokens, true, true, refState, ref, magnitude);
    expectScanMatches(yPieces, inner, ref, magnitude, s.tokens, inner, "pieces");
    expectStateMatches(statePieces, refState, "pieces");
}

// Inputs as views of fused rows (x | B | C of the convolution's output, dt at the end of the
// in_proj row) with padded token strides, y written with a stride of its own: the padding of
// the inputs holds values that would change the result, y's padding is left alone.
TEST(SelectiveScan, stridedViewsOfFusedRows)
{
    const int T = 33, H = 8, P = 16, G = 2, N = 64, inner = H * P;
    RNG rng(11);
    const size_t xbcStride = inner + 2 * G * N + 5, projStride = 2 * inner + 2 * G * N + H + 3;
    std::vector<float> xbc(xbcStride * T), proj(projStride * T);
    fillNormal(xbc, rng, 0.0, 0.5);
    fillNormal(proj, rng, -1.0, 1.0);

    // The same problem with packed buffers, for the definition.
    ScanProblem pr = makeProblem({T, H, P, G, N}, 12);
    for (int t = 0; t < T; t++)
    {
        std::copy_n(&xbc[t * xbcStride], inner, &pr.x[t * pr.xStride]);
        std::copy_n(&xbc[t * xbcStride + inner], G * N, &pr.B[t * pr.bStride]);
        std::copy_n(&xbc[t * xbcStride + inner + G * N], G * N, &pr.C[t * pr.cStride]);
        std::copy_n(&proj[t * projStride + 2 * inner + 2 * G * N], H, &pr.dt[t * pr.dtStride]);
    }
    llm::SelectiveScanInputs in = pr.inputs(0, T);
    in.x = xbc.data();
    in.xTokenStride = xbcStride;
    in.B = xbc.data() + inner;
    in.bTokenStride = xbcStride;
    in.C = xbc.data() + inner + G * N;
    in.cTokenStride = xbcStride;
    in.dt = proj.data() + 2 * inner + 2 * G * N;
    in.dtTokenStride = projStride;

    const size_t yStride = inner + 7;
    const float sentinel = -12345.f;
    std::vector<float> state = pr.state, y(yStride * T, sentinel);
    llm::selectiveScan(in, state.data(), y.data(), yStride);

    std::vector<double> refState(pr.state.begin(), pr.state.end()), ref, magnitude;
    referenceScan(pr, 0, T, true, true, refState, ref, magnitude);
    expectScanMatches(y, yStride, ref, magnitude, T, inner, "strided");
    expectStateMatches(state, refState, "strided");
    for (int t = 0; t < T; t++)
        for (size_t i = inner; i < yStride; i++)
            ASSERT_EQ(y[t * yStride + i], sentinel) << "y's padding written at token " << t;
}

// No dt bias and no D skip (both optional).
TEST(SelectiveScan, withoutBiasAndSkip)
{
    const ScanShape s{5, 4, 8, 1, 32};
    const ScanProblem pr = makeProblem(s, 21);
    const int inner = s.heads * s.headDim;
    std::vector<float> state = pr.state, y((size_t)s.tokens * inner);
    llm::selectiveScan(pr.inputs(0, s.tokens, false, false), state.data(), y.data(), inner);
    std::vector<double> refState(pr.state.begin(), pr.state.end()), ref, magnitude;
    referenceScan(pr, 0, s.tokens, false, false, refState, ref, magnitude);
    expectScanMatches(y, inner, ref, magnitude, s.tokens, inner, "no bias, no D");
    expectStateMatches(state, refState, "no bias, no D");
}

// Rows are split across threads whole: the results are the same bits with one thread and two.
TEST(SelectiveScan, threadCountDoesNotChangeResults)
{
    const int saved = getNumThreads();
    for (int tokens : {1, 64})
    {
        const ScanShape s{tokens, 48, 64, 1, 128};
        const ScanProblem pr = makeProblem(s, 31);
        const int inner = s.heads * s.headDim;
        std::vector<float> state1 = pr.state, y1((size_t)tokens * inner);
        std::vector<float> state2 = pr.state, y2((size_t)tokens * inner);
        setNumThreads(1);
        llm::selectiveScan(pr.inputs(0, tokens), state1.data(), y1.data(), inner);
        setNumThreads(2);
        llm::selectiveScan(pr.inputs(0, tokens), state2.data(), y2.data(), inner);
        EXPECT_EQ(y1, y2) << tokens << " tokens";
        EXPECT_EQ(state1, state2) << tokens << " tokens";
    }
    setNumThreads(saved);
}

TEST(SelectiveScan, refusesBadShapes)
{
    const ScanProblem pr = makeProblem({2, 6, 4, 2, 16}, 41);
    std::vector<float> state = pr.state, y(2 * 6 * 4);
    llm::SelectiveScanInputs in = pr.inputs(0, 2);
    in.groups = 4;  // 6 heads do not divide into 4 groups
    EXPECT_THROW(llm::selectiveScan(in, state.data(), y.data(), 24), cv::Exception);
    in = pr.inputs(0, 2);
    in.bTokenStride = 16;  // shorter than G * N
    EXPECT_THROW(llm::selectiveScan(in, state.data(), y.data(), 24), cv::Exception);
    in = pr.inputs(0, 2);
    in.A = nullptr;
    EXPECT_THROW(llm::selectiveScan(in, state.data(), y.data(), 24), cv::Exception);
    in = pr.inputs(0, 2);
    EXPECT_THROW(llm::selectiveScan(in, state.data(), y.data(), 20), cv::Exception);  // y's stride
}

// silu(z) * y, RMS-normalized over each group of width / G elements, times the weight.
TEST(GatedGroupRMSNorm, matchesDefinition)
{
    const float eps = 1e-5f;
    for (int groups : {1, 4})
        for (int tokens : {1, 5, 64})
        {
            const int width = 3072 / (groups == 1 ? 8 : 4);
            const size_t yStride = width + 3, zStride = 2 * width + 17;
            RNG rng(500 + groups * 100 + tokens);
            std::vector<float> y(yStride * tokens), z(zStride * tokens), weight(width);
            fillNormal(y, rng, 0.0, 1.0);
            fillNormal(z, rng, 0.0, 3.0);  // SiLU's both sides and its saturation
            fillNormal(weight, rng, 1.0, 0.3);

            std::vector<float> out(yStride * tokens, 0.f);
            llm::gatedGroupRMSNorm(y.data(), yStride, z.data(), zStride, weight.data(), tokens, width, groups, eps,
                                   out.data(), yStride);
            std::vector<float> inPlace = y;
            llm::gatedGroupRMSNorm(inPlace.data(), yStride, z.data(), zStride, weight.data(), tokens, width, groups,
                                   eps, inPlace.data(), yStride);

            const int W = width / groups;
            double worst = 0.0;
            for (int t = 0; t < tokens; t++)
                for (int k = 0; k < groups; k++)
                {
                    std::vector<double> g(W);
                    double sumSq = 0.0;
                    for (int j = 0; j < W; j++)
                    {
                        const double zv = z[t * zStride + k * W + j];
                        g[j] = zv / (1.0 + std::exp(-zv)) * y[t * yStride + k * W + j];
                        sumSq += g[j] * g[j];
                    }
                    const double scale = 1.0 / std::sqrt(sumSq / W + eps);
                    for (int j = 0; j < W; j++)
                    {
                        const double ref = g[j] * scale * weight[k * W + j];
                        const size_t i = t * yStride + k * W + j;
                        worst = std::max(worst, std::abs(out[i] - ref) / (std::abs(ref) + 1e-3));
                        ASSERT_EQ(out[i], inPlace[i]) << "in place differs at token " << t;
                    }
                }
            EXPECT_LE(worst, 2e-6) << "groups " << groups << ", tokens " << tokens;
        }
}
