// gpt2's new operations against exact math: LLMLayerNorm (weight and bias) in double precision,
// LLMElementwise gelu_tanh against the tanh formula in double and gelu_tanh_f16 against the same
// formula on float16-rounded input, rounded to float16 (ggml_gelu's CPU table), and
// LLMPositionEmbedding without a Net state (positions 0..T-1).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cmath>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

Mat runLayer(LayerParams lp, const Mat& x)
{
    Net net;
    net.addLayerToPrev(lp.name, lp.type, lp);
    net.setInput(x);
    return net.forward().clone();
}

TEST(GPT2Layers, layerNormMatchesDoubleMath)
{
    const int rows = 5, n = 256;
    Mat x(rows, n, CV_32F), w(1, n, CV_32F), b(1, n, CV_32F);
    RNG rng(7);
    rng.fill(x, RNG::NORMAL, 0.3, 2.0);  // a mean far from 0
    rng.fill(w, RNG::UNIFORM, 0.6, 1.4);
    rng.fill(b, RNG::NORMAL, 0.0, 0.1);
    LayerParams lp;
    lp.name = "ln";
    lp.type = "LLMLayerNorm";
    lp.set("epsilon", 1e-5f);
    lp.blobs = {w, b};
    const Mat y = runLayer(lp, x);
    double worst = 0;
    for (int r = 0; r < rows; r++)
    {
        double mean = 0, var = 0;
        for (int j = 0; j < n; j++)
            mean += x.at<float>(r, j);
        mean /= n;
        for (int j = 0; j < n; j++)
            var += (x.at<float>(r, j) - mean) * (x.at<float>(r, j) - mean);
        var /= n;
        for (int j = 0; j < n; j++)
        {
            const double ref = (x.at<float>(r, j) - mean) / std::sqrt(var + 1e-5) * w.at<float>(j) + b.at<float>(j);
            worst = std::max(worst, std::abs(ref - y.at<float>(r, j)));
        }
    }
    EXPECT_LT(worst, 2e-6);
}

double geluTanh(double x)
{
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / CV_PI) * (x + 0.044715 * x * x * x)));
}

TEST(GPT2Layers, geluMatchesFormula)
{
    Mat x(1, 4001, CV_32F);
    for (int i = 0; i < x.cols; i++)
        x.at<float>(i) = -12.f + i * 0.006f;
    LayerParams lp;
    lp.name = "gelu";
    lp.type = "LLMElementwise";
    lp.set("operation", "gelu_tanh");
    const Mat y = runLayer(lp, x);
    lp.set("operation", "gelu_tanh_f16");
    const Mat y16 = runLayer(lp, x);
    double worst = 0, worst16 = 0, erfGap = 0;
    for (int i = 0; i < x.cols; i++)
    {
        const float v = x.at<float>(i);
        worst = std::max(worst, std::abs(geluTanh(v) - y.at<float>(i)));
        const double ref16 = v <= -10.f ? 0.0 : v >= 10.f ? (double)v
                           : (double)(float)hfloat((float)geluTanh((float)hfloat(v)));
        // within a float16 step or two of the value (the float and double formulas round apart)
        worst16 = std::max(worst16, std::abs(ref16 - y16.at<float>(i)) / std::max(std::abs(ref16), 6e-5));
        erfGap = std::max(erfGap, std::abs(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))) - y.at<float>(i)));
    }
    EXPECT_LT(worst, 2e-6);
    EXPECT_LE(worst16, 1.0 / 256);  // ggml's table: half-precision values of the formula
    EXPECT_GT(erfGap, 1e-4);       // the erf GELU is another function
}

TEST(GPT2Layers, positionEmbeddingAddsRowsByPosition)
{
    const int positions = 8, n = 32;
    Mat table(positions, n, CV_32F), x(3, n, CV_32F);
    RNG rng(3);
    rng.fill(table, RNG::NORMAL, 0.0, 1.0);
    rng.fill(x, RNG::NORMAL, 0.0, 1.0);
    LayerParams lp;
    lp.name = "pos";
    lp.type = "LLMPositionEmbedding";
    lp.set("ggml_type", 0);  // F32
    lp.set("embedding_length", n);
    lp.set("max_positions", positions);
    lp.blobs.push_back(Mat(positions, n * 4, CV_8U, table.data).clone());
    const Mat y = runLayer(lp, x);
    for (int t = 0; t < 3; t++)
        for (int j = 0; j < n; j++)
            ASSERT_EQ(y.at<float>(t, j), x.at<float>(t, j) + table.at<float>(t, j));
}

} // namespace
