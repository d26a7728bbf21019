// The mixture-of-experts layer (LLMExperts) against exact math: llama.cpp's build_moe_ffn written
// out here in double precision on the weights' decoded values (routing by softmax / softmax over
// the chosen / sigmoid, top k, normalisation, scale; SwiGLU or gpt-oss's clamped SwiGLU; the
// weighted sum), and each token's result bit-identical alone or in a batch. ctest runs these a
// second time without AVX2 (the float path).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/layer.details.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace cv;
using namespace cv::dnn;

namespace {

constexpr int kF32 = 0, kQ8_0 = 8;

uint16_t toHalf(float f)
{
    const cv::hfloat h(f);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

float fromHalf(uint16_t bits)
{
    cv::hfloat h;
    std::memcpy(&h, &bits, 2);
    return (float)h;
}

// Random rows (out x in) stored in `type`, and their decoded values.
struct Weights
{
    Mat raw;       // CV_8U rows
    Mat decoded;   // CV_32F out x in
};

Weights makeWeights(int type, int out, int in, RNG& rng, float sigma)
{
    Weights w;
    w.decoded.create(out, in, CV_32F);
    rng.fill(w.decoded, RNG::NORMAL, 0, sigma);
    if (type == kF32)
    {
        w.raw = Mat(out, in * 4, CV_8U, w.decoded.data).clone();
        return w;
    }
    // Q8_0: blocks of 32: float16 scale max|x| / 127, then 32 int8 (ggml's quantize_row_q8_0).
    const int blocks = in / 32;
    w.raw.create(out, blocks * 34, CV_8U);
    for (int r = 0; r < out; r++)
        for (int b = 0; b < blocks; b++)
        {
            float* x = w.decoded.ptr<float>(r) + 32 * b;
            float amax = 0.f;
            for (int k = 0; k < 32; k++)
                amax = std::max(amax, std::fabs(x[k]));
            const float d = amax / 127.f, id = d ? 1.f / d : 0.f;
            uchar* blk = w.raw.ptr(r) + 34 * b;
            const uint16_t dh = toHalf(d);
            std::memcpy(blk, &dh, 2);
            for (int k = 0; k < 32; k++)
            {
                const signed char q = (signed char)std::lround(x[k] * id);
                blk[2 + k] = (uchar)q;
                x[k] = fromHalf(dh) * q;  // the decoded value
            }
        }
    return w;
}

struct MoEConfig
{
    int in = 64, ff = 96, experts = 6, used = 2;
    int type = kF32;
    std::string gating = "softmax";
    bool normalize = true;
    float scale = 0.f;
    std::string activation = "swiglu";
    bool biases = false;
};

struct MoE
{
    MoEConfig c;
    Weights gate, up, down;
    Mat gateBias, upBias, downBias;  // experts x out
    Ptr<Layer> layer;

    MoE(const MoEConfig& config, uint64 seed) : c(config)
    {
        RNG rng(seed);
        gate = makeWeights(c.type, c.experts * c.ff, c.in, rng, 0.2f);
        up = makeWeights(c.type, c.experts * c.ff, c.in, rng, 0.2f);
        down = makeWeights(c.type, c.experts * c.in, c.ff, rng, 0.2f);
        LayerParams lp;
        lp.name = "moe";
        lp.type = "LLMExperts";
        lp.set("in_features", c.in);
        lp.set("expert_ff", c.ff);
        lp.set("num_experts", c.experts);
        lp.set("experts_used", c.used);
        lp.set("gating", c.gating);
        lp.set("normalize_weights", c.normalize);
        lp.set("weights_scale", c.scale);
        lp.set("activation", c.activation);
        const int types[3] = {c.type, c.type, c.type};
        lp.set("ggml_type", DictValue::arrayInt(types, 3));
        lp.blobs = {gate.raw, up.raw, down.raw};
        if (c.biases)
        {
            gateBias.create(c.experts, c.ff, CV_32F);
            upBias.create(c.experts, c.ff, CV_32F);
            downBias.create(c.experts, c.in, CV_32F);
            rng.fill(gateBias, RNG::NORMAL, 0, 1.0);
            rng.fill(upBias, RNG::NORMAL, 0, 1.0);
            rng.fill(downBias, RNG::NORMAL, 0, 0.5);
            lp.blobs.push_back(gateBias);
            lp.blobs.push_back(upBias);
            lp.blobs.push_back(downBias);
        }
        layer = LayerFactory::createLayerInstance(lp.type, lp);
    }

    Mat forward(const Mat& x, const Mat& logits) const
    {
        std::vector<Mat> inputs{x, logits}, outputs{Mat(x.rows, c.in, CV_32F)}, internals;
        layer->forward(inputs, outputs, internals);
        return outputs[0];
    }

    // build_moe_ffn in double precision on the decoded weights.
    Mat reference(const Mat& x, const Mat& logits) const
    {
        Mat y(x.rows, c.in, CV_32F);
        for (int t = 0; t < x.rows; t++)
        {
            const float* l = logits.ptr<float>(t);
            std::vector<double> p(c.experts);
            double maxValue = -INFINITY, sum = 0;
            for (int e = 0; e < c.experts; e++)
                maxValue = std::max(maxValue, (double)l[e]);
            for (int e = 0; e < c.experts; e++)
                sum += std::exp(l[e] - maxValue);
            for (int e = 0; e < c.experts; e++)
                p[e] = c.gating == "softmax" ? std::exp(l[e] - maxValue) / sum
                     : c.gating == "sigmoid" ? 1.0 / (1.0 + std::exp(-(double)l[e])) : (double)l[e];
            std::vector<int> order(c.experts);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
            std::vector<double> w(c.used);
            for (int s = 0; s < c.used; s++)
                w[s] = p[order[s]];
            if (c.gating == "softmax_weight")
            {
                double m = *std::max_element(w.begin(), w.end()), z = 0;
                for (double& v : w)
                    z += (v = std::exp(v - m));
                for (double& v : w)
                    v /= z;
            }
            if (c.normalize)
            {
                const double z = std::accumulate(w.begin(), w.end(), 0.0);
                for (double& v : w)
                    v /= z;
            }
            if (c.scale != 0.f)
                for (double& v : w)
                    v *= c.scale;
            std::vector<double> out(c.in, 0.0), h(c.ff);
            for (int s = 0; s < c.used; s++)
            {
                const int e = order[s];
                for (int j = 0; j < c.ff; j++)
                {
                    double g = 0, u = 0;
                    for (int k = 0; k < c.in; k++)
                    {
                        g += (double)gate.decoded.at<float>(e * c.ff + j, k) * x.at<float>(t, k);
                        u += (double)up.decoded.at<float>(e * c.ff + j, k) * x.at<float>(t, k);
                    }
                    if (c.biases)
                    {
                        g += gateBias.at<float>(e, j);
                        u += upBias.at<float>(e, j);
                    }
                    if (c.activation == "swiglu")
                        h[j] = g / (1 + std::exp(-g)) * u;
                    else
                    {
                        const double xg = std::min(g, 7.0), yu = std::min(std::max(u, -7.0), 7.0);
                        h[j] = xg / (1 + std::exp(-1.702 * xg)) * (yu + 1);
                    }
                }
                for (int i = 0; i < c.in; i++)
                {
                    double d = c.biases ? downBias.at<float>(e, i) : 0.0;
                    for (int j = 0; j < c.ff; j++)
                        d += (double)down.decoded.at<float>(e * c.in + i, j) * h[j];
                    out[i] += w[s] * d;
                }
            }
            for (int i = 0; i < c.in; i++)
                y.at<float>(t, i) = (float)out[i];
        }
        return y;
    }
};

Mat randomMat(int rows, int cols, uint64 seed, double sigma)
{
    Mat m(rows, cols, CV_32F);
    RNG(seed).fill(m, RNG::NORMAL, 0, sigma);
    return m;
}

double maxRelativeError(const Mat& got, const Mat& want)
{
    return norm(got, want, NORM_INF) / std::max(norm(want, NORM_INF), 1e-30);
}

} // namespace

// The float path (F32 experts) equals exact math to float rounding; the integer path (Q8_0) to
// 8-bit activation rounding, for every gating llama.cpp's build_moe_ffn has.
TEST(LLMExperts, matchesExactMathForEveryGating)
{
    for (int type : {kF32, kQ8_0})
        for (const char* gating : {"softmax", "softmax_weight", "sigmoid"})
            for (bool normalize : {true, false})
            {
                SCOPED_TRACE(cv::format("type %d gating %s normalize %d", type, gating, (int)normalize));
                MoEConfig c;
                c.type = type;
                c.gating = gating;
                c.normalize = normalize;
                c.scale = normalize ? 0.f : 2.5f;
                const MoE moe(c, 7);
                const Mat x = randomMat(11, c.in, 1, 1.0), logits = randomMat(11, c.experts, 2, 1.5);
                const Mat got = moe.forward(x, logits), want = moe.reference(x, logits);
                EXPECT_LT(maxRelativeError(got, want), type == kF32 ? 1e-5 : 2e-2);
            }
}

TEST(LLMExperts, gptOssActivationAndBiases)
{
    for (int type : {kF32, kQ8_0})
    {
        MoEConfig c;
        c.type = type;
        c.gating = "softmax_weight";
        c.normalize = false;
        c.activation = "swiglu_oai";
        c.biases = true;
        c.experts = 8;
        c.used = 4;
        const MoE moe(c, 11);
        // Large inputs, so that the clamps at +-7 are reached.
        const Mat x = randomMat(9, c.in, 3, 6.0), logits = randomMat(9, c.experts, 4, 1.0);
        EXPECT_LT(maxRelativeError(moe.forward(x, logits), moe.reference(x, logits)), type == kF32 ? 1e-5 : 2e-2);
    }
}

// A token's result does not depend on the other tokens of the forward (which change how the rows
// are grouped by expert), to the last bit.
TEST(LLMExperts, eachTokenBitIdenticalAloneOrInABatch)
{
    for (int type : {kF32, kQ8_0})
    {
        MoEConfig c;
        c.type = type;
        c.experts = 8;
        c.used = 3;
        const MoE moe(c, 5);
        const int tokens = 40;  // more than a GEMV pass, so some experts get many rows
        const Mat x = randomMat(tokens, c.in, 6, 1.0), logits = randomMat(tokens, c.experts, 8, 1.0);
        const Mat all = moe.forward(x, logits).clone();
        for (int t = 0; t < tokens; t += 3)
        {
            const Mat alone = moe.forward(x.row(t).clone(), logits.row(t).clone());
            EXPECT_EQ(0, std::memcmp(alone.ptr(), all.ptr(t), c.in * sizeof(float))) << "token " << t;
        }
    }
}

// Equal probabilities: the lower expert id is chosen first (ggml's top_k on the CPU).
TEST(LLMExperts, tiesChooseTheLowerExpert)
{
    MoEConfig c;
    c.used = 1;
    c.normalize = false;
    const MoE moe(c, 9);
    const Mat x = randomMat(1, c.in, 10, 1.0);
    Mat logits = Mat::zeros(1, c.experts, CV_32F);
    logits.at<float>(0, 2) = logits.at<float>(0, 4) = 1.f;  // experts 2 and 4 tie
    // The reference sorts stably, so it takes expert 2; expert 4's output differs everywhere.
    EXPECT_LT(maxRelativeError(moe.forward(x, logits), moe.reference(x, logits)), 1e-5);
}

TEST(LLMExperts, refusesBadParameters)
{
    MoEConfig c;
    const MoE moe(c, 1);
    LayerParams lp;
    lp.type = "LLMExperts";
    lp.set("in_features", c.in);
    lp.set("expert_ff", c.ff);
    lp.set("num_experts", c.experts);
    lp.set("experts_used", c.experts + 1);
    const int types[3] = {kF32, kF32, kF32};
    lp.set("ggml_type", DictValue::arrayInt(types, 3));
    lp.blobs = {moe.gate.raw, moe.up.raw, moe.down.raw};
    EXPECT_THROW(LayerFactory::createLayerInstance(lp.type, lp), cv::Exception);  // used > experts
    lp.set("experts_used", 2);
    lp.set("gating", "softmax2");
    EXPECT_THROW(LayerFactory::createLayerInstance(lp.type, lp), cv::Exception);
    lp.set("gating", "softmax");
    lp.blobs[2] = moe.down.raw.rowRange(0, c.in * (c.experts - 1)).clone();  // one expert short
    EXPECT_THROW(LayerFactory::createLayerInstance(lp.type, lp), cv::Exception);
}
