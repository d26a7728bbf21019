// LLMAttention against exact math in double precision: rotary embedding (NORM and NEOX pairs,
// partial rotary, frequency base, linear scaling, per-pair frequency factors), grouped-query
// heads, causal masking, and keys/values kept across forwards (prefill, then decode steps).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cmath>

using namespace cv;
using namespace cv::dnn;

namespace {

struct AttentionCase
{
    int heads, kvHeads, headDim, ropeDim;
    bool neox;
    float base, freqScale;
    std::vector<float> freqFactors;  // empty: none
};

void PrintTo(const AttentionCase& c, std::ostream* os)
{
    *os << c.heads << "q" << c.kvHeads << "kv hd" << c.headDim << " rope" << c.ropeDim << (c.neox ? " neox" : " norm")
        << " base" << c.base << " scale" << c.freqScale << (c.freqFactors.empty() ? "" : " factors");
}

// Rotates the first ropeDim dimensions of one head vector at position pos, by definition.
void rope(std::vector<double>& v, int pos, const AttentionCase& c)
{
    const int pairs = c.ropeDim / 2;
    for (int i = 0; i < pairs; i++)
    {
        double theta = pos * (double)c.freqScale * std::pow((double)c.base, -2.0 * i / c.ropeDim);
        if (!c.freqFactors.empty())
            theta /= c.freqFactors[i];
        const int a = c.neox ? i : 2 * i, b = c.neox ? i + pairs : 2 * i + 1;
        const double x = v[a], y = v[b];
        v[a] = x * std::cos(theta) - y * std::sin(theta);
        v[b] = x * std::sin(theta) + y * std::cos(theta);
    }
}

std::vector<double> headOf(const Mat& m, int row, int head, int headDim)
{
    const float* p = m.ptr<float>(row) + head * headDim;
    return std::vector<double>(p, p + headDim);
}

class AttentionMath : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionMath, matchesDefinitionAcrossForwards)
{
    const AttentionCase& c = GetParam();
    LayerParams lp;
    lp.name = "attn";
    lp.type = "LLMAttention";
    lp.set("num_heads", c.heads);
    lp.set("num_kv_heads", c.kvHeads);
    lp.set("head_dim", c.headDim);
    lp.set("max_context", 64);
    lp.set("rope_dim", c.ropeDim);
    lp.set("rope_base", c.base);
    lp.set("rope_neox", c.neox);
    lp.set("rope_freq_scale", c.freqScale);
    if (!c.freqFactors.empty())
        lp.blobs.push_back(Mat(c.freqFactors, true).reshape(1, 1));
    Net net;
    net.setInputsNames({"q", "k", "v"});
    const int id = net.addLayer(lp.name, lp.type, lp);
    for (int i = 0; i < 3; i++)
        net.connect(0, i, id, i);

    // All tokens' q, k, v, fed as a prefill of 5 then three single-token steps.
    const int total = 8;
    Mat q(total, c.heads * c.headDim, CV_32F), k(total, c.kvHeads * c.headDim, CV_32F), v(k.size(), CV_32F);
    RNG rng(c.heads * 100 + c.headDim);
    rng.fill(q, RNG::NORMAL, 0, 1);
    rng.fill(k, RNG::NORMAL, 0, 1);
    rng.fill(v, RNG::NORMAL, 0, 1);
    std::vector<std::pair<int, int>> steps = {{0, 5}, {5, 6}, {6, 7}, {7, 8}};
    const int group = c.heads / c.kvHeads;
    for (const auto& s : steps)
    {
        net.setInput(q.rowRange(s.first, s.second).clone(), "q");
        net.setInput(k.rowRange(s.first, s.second).clone(), "k");
        net.setInput(v.rowRange(s.first, s.second).clone(), "v");
        const Mat out = net.forward();
        ASSERT_EQ(out.rows, s.second - s.first);
        for (int t = s.first; t < s.second; t++)
            for (int h = 0; h < c.heads; h++)
            {
                const int g = h / group;
                std::vector<double> qh = headOf(q, t, h, c.headDim);
                rope(qh, t, c);
                std::vector<double> scores;
                for (int j = 0; j <= t; j++)
                {
                    std::vector<double> kj = headOf(k, j, g, c.headDim);
                    rope(kj, j, c);
                    double dot = 0;
                    for (int d = 0; d < c.headDim; d++)
                        dot += qh[d] * kj[d];
                    scores.push_back(dot / std::sqrt((double)c.headDim));
                }
                const double m = *std::max_element(scores.begin(), scores.end());
                double sum = 0;
                for (double& sc : scores)
                    sum += sc = std::exp(sc - m);
                for (int d = 0; d < c.headDim; d++)
                {
                    double expected = 0;
                    for (int j = 0; j <= t; j++)
                        expected += scores[j] / sum * v.at<float>(j, g * c.headDim + d);
                    EXPECT_NEAR(out.at<float>(t - s.first, h * c.headDim + d), expected, 2e-5)
                        << "token " << t << " head " << h << " dim " << d;
                }
            }
    }
}

INSTANTIATE_TEST_CASE_P(Cases, AttentionMath, ::testing::Values(
    AttentionCase{4, 4, 8, 8, false, 10000.f, 1.f, {}},             // multi-head, Llama NORM pairs
    AttentionCase{6, 2, 16, 16, true, 1e6f, 1.f, {}},               // GQA 3:1, Qwen2 NEOX, base 1e6
    AttentionCase{8, 1, 8, 4, true, 10000.f, 0.25f, {}},            // MQA, partial rotary, linear x4
    AttentionCase{4, 2, 8, 8, false, 500000.f, 1.f, {1.f, 2.f, 8.f, 32.f}}));  // Llama-3 factors

TEST(AttentionLayer, rejectsWrongShapesAndFullContext)
{
    LayerParams lp;
    lp.set("num_heads", 4);
    lp.set("num_kv_heads", 3);
    lp.set("head_dim", 8);
    lp.set("max_context", 4);
    EXPECT_THROW(LayerFactory::createLayerInstance("LLMAttention", lp), cv::Exception);  // 4 % 3 != 0
    lp.set("num_kv_heads", 2);
    lp.set("rope_dim", 10);
    EXPECT_THROW(LayerFactory::createLayerInstance("LLMAttention", lp), cv::Exception);  // rope_dim > head_dim
    lp.set("rope_dim", 8);
    lp.name = "attn";
    Net net;
    net.setInputsNames({"q", "k", "v"});
    const int id = net.addLayer("attn", "LLMAttention", lp);
    for (int i = 0; i < 3; i++)
        net.connect(0, i, id, i);
    Mat q(3, 32, CV_32F, Scalar(0.1)), kv(3, 16, CV_32F, Scalar(0.1));
    net.setInput(q, "q");
    net.setInput(kv, "k");
    net.setInput(kv, "v");
    net.forward();
    net.setInput(q, "q");
    net.setInput(kv, "k");
    net.setInput(kv, "v");
    EXPECT_THROW(net.forward(), cv::Exception);  // 3 + 3 > max_context 4
    net.setInput(Mat(3, 30, CV_32F, Scalar(0)), "q");
    EXPECT_THROW(net.forward(), cv::Exception);  // q width != heads * head_dim
}

} // namespace
