// LLMElementwise silu and swiglu (silu(gate) * up, the Llama-family MLP) against the formula in
// double precision, over inputs from far negative (the sigmoid underflows) to far positive, and
// a batch of rows against the rows one by one: the vector path pads its last partial vector, so
// where a thread's stripe ends does not change an element's result.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cmath>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

double silu(double x)
{
    return x / (1 + std::exp(-x));
}

// Relative to the value; results below 1e-25 in magnitude (x e^x near float's smallest
// exponents, flushed to 0 below x = -87) by their absolute error.
double worstError(const Mat& y, const Mat& gate, const Mat& up)
{
    double worst = 0;
    for (int i = 0; i < (int)gate.total(); i++)
    {
        const double ref = silu(gate.at<float>(i)) * (up.empty() ? 1.0 : up.at<float>(i));
        worst = std::max(worst, std::abs(ref - y.at<float>(i)) / std::max(std::abs(ref), 1e-25));
    }
    return worst;
}

TEST(SiluLayer, matchesFormula)
{
    // 60001 values from -120 to 120 (an odd count: a partial last vector at every width).
    Mat gate(1, 60001, CV_32F), up(gate.size(), CV_32F);
    for (int i = 0; i < gate.cols; i++)
        gate.at<float>(i) = -120.f + i * 0.004f;
    RNG rng(3);
    rng.fill(up, RNG::UNIFORM, -2.0, 2.0);
    EXPECT_LT(worstError(llm_test::runElementwise("silu", gate), gate, Mat()), 6e-7);  // 5 float epsilons
    EXPECT_LT(worstError(llm_test::runElementwise("swiglu", gate, up), gate, up), 6e-7);
    // Far negative: silu(x) = x e^x underflows to (negative) zero, as in float arithmetic.
    const Mat y = llm_test::runElementwise("silu", gate.colRange(0, 100).clone());
    for (int i = 0; i < 100; i++)
        EXPECT_EQ(y.at<float>(i), 0.f) << gate.at<float>(i);
}

TEST(SiluLayer, batchRowsEqualLoneRows)
{
    // 9 rows of 5637 (about TinyLlama's MLP): split across threads at boundaries that are not
    // multiples of a vector, each lone row ending in a partial vector.
    const int rows = 9, n = 5637;
    Mat gate(rows, n, CV_32F), up(rows, n, CV_32F);
    RNG rng(5);
    rng.fill(gate, RNG::NORMAL, 0, 4);
    rng.fill(up, RNG::NORMAL, 0, 1);
    const Mat all = llm_test::runElementwise("swiglu", gate, up);
    for (int r = 0; r < rows; r++)
    {
        const Mat alone = llm_test::runElementwise("swiglu", gate.row(r).clone(), up.row(r).clone());
        EXPECT_EQ(cv::norm(alone, all.row(r), NORM_INF), 0.0) << "row " << r;
    }
}

} // namespace
