// The gated delta rule of Qwen3.5's linear attention (modules/dnn/src/llm/recurrent/gated_delta_rule.hpp)
// against its recurrence written out in double precision (llama.cpp's ggml_gated_delta_net, token
// by token): the recurrent and chunked forms, several head counts and sizes, state carried across
// calls, inputs and outputs as strided views, and the thread split.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../modules/dnn/src/llm/recurrent/gated_delta_rule.hpp"

using namespace cv;
using namespace cv::dnn::llm;

namespace {

struct Shape
{
    int keyHeads, valueHeads, keyDim, valueDim;
};

// One sequence's inputs, contiguous per token: q, k tokens x keyHeads x keyDim; v tokens x
// valueHeads x valueDim; g, beta tokens x valueHeads.
struct Problem
{
    Shape shape;
    int tokens;
    std::vector<float> q, k, v, g, beta, state;
};

Problem makeProblem(const Shape& s, int tokens, uint64 seed, double decayScale = 1.0)
{
    Problem p;
    p.shape = s;
    p.tokens = tokens;
    RNG rng(seed);
    auto normalizedRows = [&](std::vector<float>& x, int rows, int dim) {
        x.resize((size_t)rows * dim);
        for (int r = 0; r < rows; r++)
        {
            double ss = 0;
            for (int i = 0; i < dim; i++)
            {
                const float value = (float)rng.gaussian(1.0);
                x[(size_t)r * dim + i] = value;
                ss += (double)value * value;
            }
            const float inv = (float)(1.0 / std::sqrt(ss + 1e-6));
            for (int i = 0; i < dim; i++)
                x[(size_t)r * dim + i] *= inv;
        }
    };
    normalizedRows(p.q, tokens * s.keyHeads, s.keyDim);
    normalizedRows(p.k, tokens * s.keyHeads, s.keyDim);
    p.v.resize((size_t)tokens * s.valueHeads * s.valueDim);
    for (float& x : p.v)
        x = (float)rng.gaussian(1.0);
    // As Qwen3.5 makes them: g = -exp(A_log) softplus(alpha + dt_bias), beta = sigmoid(b); some
    // heads decay slowly (long memory), some fast.
    p.g.resize((size_t)tokens * s.valueHeads);
    p.beta.resize((size_t)tokens * s.valueHeads);
    for (int t = 0; t < tokens; t++)
        for (int h = 0; h < s.valueHeads; h++)
        {
            const double a = decayScale * (h % 2 ? 0.02 : 0.6);
            const double alpha = rng.gaussian(1.0);
            p.g[(size_t)t * s.valueHeads + h] = (float)(-a * std::log1p(std::exp(alpha)));
            p.beta[(size_t)t * s.valueHeads + h] = (float)(1.0 / (1.0 + std::exp(-rng.gaussian(1.5))));
        }
    p.state.resize((size_t)s.valueHeads * s.valueDim * s.keyDim);
    for (float& x : p.state)
        x = (float)rng.gaussian(0.3);
    return p;
}

// The recurrence as llama.cpp's ggml_gated_delta_net computes it, in double: per value head h
// (key head h % keyHeads) and token, S = exp(g) S; d = beta (v - S^T k); S += k d^T;
// o = S^T q / sqrt(keyDim). S[i][j] (key i, value j) is state[h][j][i].
void referenceRule(const Problem& p, int t0, int t1, std::vector<double>& state, std::vector<double>& out)
{
    const Shape& s = p.shape;
    const double scale = 1.0 / std::sqrt((double)s.keyDim);
    out.assign((size_t)(t1 - t0) * s.valueHeads * s.valueDim, 0.0);
    std::vector<double> d(s.valueDim);
    for (int h = 0; h < s.valueHeads; h++)
    {
        const int kh = h % s.keyHeads;
        double* S = state.data() + (size_t)h * s.valueDim * s.keyDim;
        for (int t = t0; t < t1; t++)
        {
            const float* q = p.q.data() + ((size_t)t * s.keyHeads + kh) * s.keyDim;
            const float* k = p.k.data() + ((size_t)t * s.keyHeads + kh) * s.keyDim;
            const float* v = p.v.data() + ((size_t)t * s.valueHeads + h) * s.valueDim;
            const double decay = std::exp((double)p.g[(size_t)t * s.valueHeads + h]);
            const double beta = p.beta[(size_t)t * s.valueHeads + h];
            for (size_t e = 0; e < (size_t)s.valueDim * s.keyDim; e++)
                S[e] *= decay;
            for (int j = 0; j < s.valueDim; j++)
            {
                double sk = 0;
                for (int i = 0; i < s.keyDim; i++)
                    sk += S[(size_t)j * s.keyDim + i] * k[i];
                d[j] = beta * (v[j] - sk);
            }
            for (int j = 0; j < s.valueDim; j++)
                for (int i = 0; i < s.keyDim; i++)
                    S[(size_t)j * s.keyDim + i] += k[i] * d[j];
            double* o = out.data() + ((size_t)(t - t0) * s.valueHeads + h) * s.valueDim;
            for (int j = 0; j < s.valueDim; j++)
            {
                double sq = 0;
                for (int i = 0; i < s.keyDim; i++)
                    sq += S[(size_t)j * s.keyDim + i] * q[i];
                o[j] = sq * scale;
            }
        }
    }
}

enum class Form { Auto, Recurrent, Chunked };

// Runs tokens [t0, t1) of p on `state` (contiguous inputs and output).
void runRule(GatedDeltaRule& rule, Form form, const Problem& p, int t0, int t1, float* state, float* out)
{
    const Shape& s = p.shape;
    GatedDeltaRuleInputs in;
    in.q = { p.q.data() + (size_t)t0 * s.keyHeads * s.keyDim, (size_t)s.keyHeads * s.keyDim, (size_t)s.keyDim };
    in.k = { p.k.data() + (size_t)t0 * s.keyHeads * s.keyDim, (size_t)s.keyHeads * s.keyDim, (size_t)s.keyDim };
    in.v = { p.v.data() + (size_t)t0 * s.valueHeads * s.valueDim, (size_t)s.valueHeads * s.valueDim, (size_t)s.valueDim };
    in.g = { p.g.data() + (size_t)t0 * s.valueHeads, (size_t)s.valueHeads, 1 };
    in.beta = { p.beta.data() + (size_t)t0 * s.valueHeads, (size_t)s.valueHeads, 1 };
    in.tokens = t1 - t0;
    const GatedDeltaRuleOutputRows o = { out, (size_t)s.valueHeads * s.valueDim, (size_t)s.valueDim };
    if (form == Form::Recurrent)
        rule.runRecurrent(in, state, o);
    else if (form == Form::Chunked)
        rule.runChunked(in, state, o);
    else
        rule.run(in, state, o);
}

// max |a - b| / max |b|
template<typename T>
double relativeError(const std::vector<float>& a, const std::vector<T>& b)
{
    EXPECT_EQ(a.size(), b.size());
    double maxDiff = 0, maxRef = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); i++)
    {
        maxDiff = std::max(maxDiff, std::abs((double)a[i] - (double)b[i]));
        maxRef = std::max(maxRef, std::abs((double)b[i]));
    }
    return maxDiff / std::max(maxRef, 1e-30);
}

const double kTolerance = 1e-5;

const Shape kShapes[] = {
    { 1, 2, 128, 128 }, // Qwen3.5's head size
    { 2, 4, 64, 64 },   // Hk != Hv: value heads 0 and 2 read key head 0
    { 1, 3, 48, 40 },   // Dk != Dv, sizes that are not a multiple of AVX-512's lanes
    { 3, 3, 20, 12 },   // vector tails only
};

std::string describe(const Shape& s, int tokens)
{
    return cv::format("Hk=%d Hv=%d Dk=%d Dv=%d T=%d", s.keyHeads, s.valueHeads, s.keyDim, s.valueDim, tokens);
}

// Chunked: the default chunk length and llama.cpp's 64.
void checkFormAgainstReference(Form form, int chunkTokens = GatedDeltaRule::kDefaultChunkTokens)
{
    for (const Shape& s : kShapes)
        for (int tokens : { 1, 7, 64, 65, 400 })
        {
            SCOPED_TRACE(describe(s, tokens) + cv::format(" chunk %d", chunkTokens));
            const Problem p = makeProblem(s, tokens, 1000 + tokens);
            std::vector<double> refState(p.state.begin(), p.state.end()), refOut;
            referenceRule(p, 0, tokens, refState, refOut);

            GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim, chunkTokens);
            std::vector<float> state = p.state, out((size_t)tokens * s.valueHeads * s.valueDim);
            runRule(rule, form, p, 0, tokens, state.data(), out.data());
            EXPECT_LE(relativeError(out, refOut), kTolerance);
            EXPECT_LE(relativeError(state, refState), kTolerance);
        }
}

TEST(GatedDeltaRule, RecurrentMatchesReference)
{
    checkFormAgainstReference(Form::Recurrent);
}

TEST(GatedDeltaRule, ChunkedMatchesReference)
{
    checkFormAgainstReference(Form::Chunked);
    checkFormAgainstReference(Form::Chunked, 64);
}

TEST(GatedDeltaRule, ChunkedMatchesRecurrent)
{
    for (const Shape& s : kShapes)
        for (int tokens : { 1, 7, 64, 65, 400 })
        {
            SCOPED_TRACE(describe(s, tokens));
            // Strong decay as well: chunks where exp(G) underflows a float.
            for (double decayScale : { 1.0, 40.0 })
            for (int chunkTokens : { GatedDeltaRule::kDefaultChunkTokens, 64 })
            {
                SCOPED_TRACE(cv::format("chunk %d", chunkTokens));
                const Problem p = makeProblem(s, tokens, 2000 + tokens, decayScale);
                GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim, chunkTokens);
                const size_t outSize = (size_t)tokens * s.valueHeads * s.valueDim;
                std::vector<float> stateR = p.state, outR(outSize), stateC = p.state, outC(outSize);
                runRule(rule, Form::Recurrent, p, 0, tokens, stateR.data(), outR.data());
                runRule(rule, Form::Chunked, p, 0, tokens, stateC.data(), outC.data());
                EXPECT_LE(relativeError(outC, outR), kTolerance) << "decay scale " << decayScale;
                EXPECT_LE(relativeError(stateC, stateR), kTolerance) << "decay scale " << decayScale;
            }
        }
}

// 400 tokens as 37 + 100 + 263 in three calls on one state equal one call of 400.
TEST(GatedDeltaRule, StateCarriedAcrossCalls)
{
    const Shape s = { 2, 4, 64, 64 };
    const int tokens = 400, splits[] = { 0, 37, 137, 400 };
    const Problem p = makeProblem(s, tokens, 77);
    std::vector<double> refState(p.state.begin(), p.state.end()), refOut;
    referenceRule(p, 0, tokens, refState, refOut);
    const size_t rowFloats = (size_t)s.valueHeads * s.valueDim;
    for (Form form : { Form::Auto, Form::Recurrent, Form::Chunked })
    {
        SCOPED_TRACE((int)form);
        GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim);
        std::vector<float> whole = p.state, wholeOut(tokens * rowFloats);
        runRule(rule, form, p, 0, tokens, whole.data(), wholeOut.data());
        std::vector<float> parts = p.state, partsOut(tokens * rowFloats);
        for (int c = 0; c < 3; c++)
            runRule(rule, form, p, splits[c], splits[c + 1], parts.data(), partsOut.data() + splits[c] * rowFloats);
        EXPECT_LE(relativeError(partsOut, wholeOut), kTolerance);
        EXPECT_LE(relativeError(parts, whole), kTolerance);
        EXPECT_LE(relativeError(partsOut, refOut), kTolerance);
        EXPECT_LE(relativeError(parts, refState), kTolerance);
        if (form == Form::Recurrent)  // the same operations in the same order
        {
            EXPECT_EQ(partsOut, wholeOut);
            EXPECT_EQ(parts, whole);
        }
    }
}

// Inputs as views of one fused row per token (q | k | v | beta | g, padded) and the output
// with gaps between heads and tokens: the same results as contiguous buffers.
TEST(GatedDeltaRule, StridedInputsAndOutput)
{
    const Shape s = { 2, 4, 32, 32 };
    for (int tokens : { 5, 130 })
    {
        SCOPED_TRACE(tokens);
        const Problem p = makeProblem(s, tokens, 5);
        const size_t qkFloats = (size_t)s.keyHeads * s.keyDim, vFloats = (size_t)s.valueHeads * s.valueDim;
        const size_t rowStride = 2 * qkFloats + vFloats + 2 * s.valueHeads + 3;
        std::vector<float> fused(tokens * rowStride, NAN);
        for (int t = 0; t < tokens; t++)
        {
            float* row = fused.data() + t * rowStride;
            std::copy_n(p.q.data() + t * qkFloats, qkFloats, row);
            std::copy_n(p.k.data() + t * qkFloats, qkFloats, row + qkFloats);
            std::copy_n(p.v.data() + t * vFloats, vFloats, row + 2 * qkFloats);
            for (int h = 0; h < s.valueHeads; h++)
            {
                row[2 * qkFloats + vFloats + h] = p.beta[t * s.valueHeads + h];
                row[2 * qkFloats + vFloats + s.valueHeads + h] = p.g[t * s.valueHeads + h];
            }
        }
        GatedDeltaRuleInputs in;
        in.q = { fused.data(), rowStride, (size_t)s.keyDim };
        in.k = { fused.data() + qkFloats, rowStride, (size_t)s.keyDim };
        in.v = { fused.data() + 2 * qkFloats, rowStride, (size_t)s.valueDim };
        in.beta = { fused.data() + 2 * qkFloats + vFloats, rowStride, 1 };
        in.g = { fused.data() + 2 * qkFloats + vFloats + s.valueHeads, rowStride, 1 };
        in.tokens = tokens;
        const size_t outHeadStride = s.valueDim + 3, outTokenStride = s.valueHeads * outHeadStride + 7;

        for (Form form : { Form::Recurrent, Form::Chunked })
        {
            SCOPED_TRACE((int)form);
            GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim);
            std::vector<float> state = p.state, strided(tokens * outTokenStride, -123.f);
            const GatedDeltaRuleOutputRows out = { strided.data(), outTokenStride, outHeadStride };
            if (form == Form::Recurrent)
                rule.runRecurrent(in, state.data(), out);
            else
                rule.runChunked(in, state.data(), out);
            std::vector<float> contiguousState = p.state, contiguous(tokens * vFloats);
            runRule(rule, form, p, 0, tokens, contiguousState.data(), contiguous.data());

            std::vector<float> gathered(tokens * vFloats);
            for (int t = 0; t < tokens; t++)
                for (int h = 0; h < s.valueHeads; h++)
                    for (int j = 0; j < s.valueDim + 3; j++)
                    {
                        const float value = strided[t * outTokenStride + h * outHeadStride + j];
                        if (j < s.valueDim)
                            gathered[t * vFloats + h * s.valueDim + j] = value;
                        else
                            ASSERT_EQ(value, -123.f) << "written outside the output's rows";
                    }
            EXPECT_LE(relativeError(gathered, contiguous), kTolerance);
            EXPECT_LE(relativeError(state, contiguousState), kTolerance);
            if (form == Form::Recurrent)
                EXPECT_EQ(gathered, contiguous);
        }
    }
}

// Heads split between threads give the results of one thread, bit for bit.
TEST(GatedDeltaRule, ThreadsDoNotChangeResults)
{
    const Shape s = { 4, 16, 64, 64 };
    const int threads = getNumThreads();
    for (int tokens : { 1, 200 })
        for (Form form : { Form::Recurrent, Form::Chunked })
        {
            SCOPED_TRACE(cv::format("T=%d form=%d", tokens, (int)form));
            const Problem p = makeProblem(s, tokens, 9);
            GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim);
            const size_t outSize = (size_t)tokens * s.valueHeads * s.valueDim;
            setNumThreads(1);
            std::vector<float> state1 = p.state, out1(outSize);
            runRule(rule, form, p, 0, tokens, state1.data(), out1.data());
            setNumThreads(std::max(threads, 2));
            std::vector<float> stateN = p.state, outN(outSize);
            runRule(rule, form, p, 0, tokens, stateN.data(), outN.data());
            setNumThreads(threads);
            EXPECT_EQ(out1, outN);
            EXPECT_EQ(state1, stateN);
        }
}

TEST(GatedDeltaRule, RefusesBadShapes)
{
    EXPECT_THROW(GatedDeltaRule(3, 4, 64, 64), cv::Exception);  // value heads not a multiple
    EXPECT_THROW(GatedDeltaRule(2, 4, 0, 64), cv::Exception);
    EXPECT_THROW(GatedDeltaRule(2, 4, 64, 64, 0), cv::Exception);
}

// Tokens per second of a 16-head Dk = Dv = 128 layer: decode steps (recurrent, one token) and a
// 512-token prefill (chunked), at 1 and 2 threads. Run with --gtest_also_run_disabled_tests.
TEST(GatedDeltaRule, DISABLED_Benchmark)
{
    const Shape s = { 16, 16, 128, 128 };
    const Problem p = makeProblem(s, 512, 3);
    const int threads = getNumThreads();
    for (int n : { 1, 2 })
    {
        setNumThreads(n);
        GatedDeltaRule rule(s.keyHeads, s.valueHeads, s.keyDim, s.valueDim);
        std::vector<float> state = p.state, out((size_t)512 * s.valueHeads * s.valueDim);
        typedef std::chrono::steady_clock Clock;
        auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
        for (int warm = 0; warm < 2; warm++)
            runRule(rule, Form::Recurrent, p, 0, 1, state.data(), out.data());
        const int steps = 2000;
        Clock::time_point t0 = Clock::now();
        for (int i = 0; i < steps; i++)
            runRule(rule, Form::Recurrent, p, i % 512, i % 512 + 1, state.data(), out.data());
        const double decode = steps / seconds(t0, Clock::now());
        double prefill[3];
        for (int f = 0; f < 3; f++)
        {
            const Form form = f == 0 ? Form::Chunked : f == 1 ? Form::Recurrent : Form::Auto;
            state = p.state;
            runRule(rule, form, p, 0, 512, state.data(), out.data());
            const int reps = 5;
            t0 = Clock::now();
            for (int r = 0; r < reps; r++)
            {
                state = p.state;
                runRule(rule, form, p, 0, 512, state.data(), out.data());
            }
            prefill[f] = reps * 512 / seconds(t0, Clock::now());
        }
        std::printf("gated delta rule, 16 heads Dk=Dv=128, %d thread(s): decode %.0f tok/s; prefill 512: "
                    "chunked %.0f tok/s, recurrent %.0f tok/s\n", n, decode, prefill[0], prefill[1]);
        // Prefill tokens per second as a function of the prompt length, both forms.
        for (int tokens : { 8, 16, 32, 64, 128 })
        {
            double tps[2];
            for (int f = 0; f < 2; f++)
            {
                const int reps = 4096 / tokens;
                Clock::time_point a = Clock::now();
                for (int r = 0; r < reps; r++)
                    runRule(rule, f ? Form::Recurrent : Form::Chunked, p, 0, tokens, state.data(), out.data());
                tps[f] = reps * tokens / seconds(a, Clock::now());
            }
            std::printf("  T=%d: chunked %.0f tok/s, recurrent %.0f tok/s\n", tokens, tps[0], tps[1]);
        }
    }
    setNumThreads(threads);
}

} // namespace
