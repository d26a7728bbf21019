// LLMAttention against exact math in double precision: rotary embedding (NORM and NEOX pairs,
// partial rotary, frequency base, linear scaling, per-pair frequency factors), grouped-query
// heads, causal masking, sliding windows (whose pages the cache releases) and soft-capped
// scores, and keys/values kept across forwards (prefill, then decode steps).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/llm.hpp>

#include <cmath>

#include "../../modules/dnn/src/llm/net/net_assembly.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

// A Net of one LLMAttention layer fed q, k and v, with the state of a language model's Net
// (its KV cache and the plan of each forward; q's rows are the tokens).
int addAttentionNet(Net& net, const LayerParams& lp)
{
    net.setInputsNames({"q", "k", "v"});
    LayerParams params = lp;
    const int id = net.addLayer("attn", "LLMAttention", params);
    for (int i = 0; i < 3; i++)
        net.connect(0, i, id, i);
    cv::dnn::llm::installLLMState(net, {id}, -1, "", lp.get<int>("num_heads") * lp.get<int>("head_dim"));
    return id;
}

struct AttentionCase
{
    int heads, kvHeads, headDim, ropeDim;
    bool neox;
    float base, freqScale;
    std::vector<float> freqFactors;  // empty: none
    std::vector<std::pair<int, int>> steps = {{0, 5}, {5, 6}, {6, 7}, {7, 8}};  // token ranges per forward
    int storage = CV_32F;            // KV cache element type
    double tolerance = 2e-5;
    int window = 0;                  // sliding window (0: none)
    float softCap = 0.f;             // scores c * tanh(s / c) (0: none)
    std::pair<int, int> nonCausal = {0, 0};  // positions [first, second) attend to each other both ways
};

void PrintTo(const AttentionCase& c, std::ostream* os)
{
    *os << c.heads << "q" << c.kvHeads << "kv hd" << c.headDim << " rope" << c.ropeDim << (c.neox ? " neox" : " norm")
        << " base" << c.base << " scale" << c.freqScale << (c.freqFactors.empty() ? "" : " factors")
        << " tokens " << c.steps.back().second << " storage " << typeToString(c.storage)
        << " window " << c.window << " softcap " << c.softCap << " non-causal [" << c.nonCausal.first << ", "
        << c.nonCausal.second << ")";
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

/* One query head's attention output by definition: the tokens at positions 0..query are rows
   tokens[0..query] of q, k and v; q and k are rotated by their positions. */
std::vector<double> referenceHead(const Mat& q, const Mat& k, const Mat& v, const AttentionCase& c, int head,
                                  const std::vector<int>& tokens, int query)
{
    const int g = head / (c.heads / c.kvHeads);
    std::vector<double> qh = headOf(q, tokens[query], head, c.headDim);
    rope(qh, query, c);
    const int first = c.window > 0 ? std::max(0, query - c.window + 1) : 0;
    // A token of the non-causal span sees the whole span (llama.cpp's mask with causal
    // attention off: the window still counts back from the query's own position).
    const bool inSpan = query >= c.nonCausal.first && query < c.nonCausal.second;
    const int last = inSpan ? c.nonCausal.second - 1 : query;
    std::vector<double> scores;
    for (int j = first; j <= last; j++)
    {
        std::vector<double> kj = headOf(k, tokens[j], g, c.headDim);
        rope(kj, j, c);
        double dot = 0;
        for (int d = 0; d < c.headDim; d++)
            dot += qh[d] * kj[d];
        const double score = dot / std::sqrt((double)c.headDim);
        scores.push_back(c.softCap > 0 ? c.softCap * std::tanh(score / c.softCap) : score);
    }
    const double m = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (double& sc : scores)
        sum += sc = std::exp(sc - m);
    std::vector<double> out(c.headDim, 0.0);
    for (int d = 0; d < c.headDim; d++)
        for (int j = first; j <= last; j++)
            out[d] += scores[j - first] / sum * v.at<float>(tokens[j], g * c.headDim + d);
    return out;
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
    const int total = c.steps.back().second;
    lp.set("max_context", std::max(64, total));
    lp.set("rope_dim", c.ropeDim);
    lp.set("rope_base", c.base);
    lp.set("rope_neox", c.neox);
    lp.set("rope_freq_scale", c.freqScale);
    if (!c.freqFactors.empty())
        lp.blobs.push_back(Mat(c.freqFactors, true).reshape(1, 1));
    lp.set("sliding_window", c.window);
    lp.set("logit_softcap", c.softCap);
    Net net;
    addAttentionNet(net, lp);

    getLLMKVCache(net)->setStorageType(c.storage);

    // All tokens' q, k, v, fed in the case's steps (a prefill, then single-token steps).
    Mat q(total, c.heads * c.headDim, CV_32F), k(total, c.kvHeads * c.headDim, CV_32F), v(k.size(), CV_32F);
    RNG rng(c.heads * 100 + c.headDim);
    rng.fill(q, RNG::NORMAL, 0, 1);
    rng.fill(k, RNG::NORMAL, 0, 1);
    rng.fill(v, RNG::NORMAL, 0, 1);
    std::vector<int> tokens(total);  // token t at position t
    for (int t = 0; t < total; t++)
        tokens[t] = t;
    for (const auto& s : c.steps)
    {
        const int spanStart = std::max(s.first, c.nonCausal.first), spanEnd = std::min(s.second, c.nonCausal.second);
        if (spanStart < spanEnd)
            cv::dnn::llm::setLLMNonCausalSpans(net, {Range(spanStart - s.first, spanEnd - s.first)});
        net.setInput(q.rowRange(s.first, s.second).clone(), "q");
        net.setInput(k.rowRange(s.first, s.second).clone(), "k");
        net.setInput(v.rowRange(s.first, s.second).clone(), "v");
        const Mat out = net.forward();
        ASSERT_EQ(out.rows, s.second - s.first);
        if (c.window > 0)
        {
            // Held: the window of the step's first token to its last token, in 16-token pages.
            const int positions = c.window - 1 + (s.second - s.first);
            EXPECT_LE(getLLMKVCache(net)->getPagesInUse(), (positions + 15) / 16 + 1) << "pages out of the window kept";
        }
        for (int t = s.first; t < s.second; t++)
            for (int h = 0; h < c.heads; h++)
            {
                const std::vector<double> expected = referenceHead(q, k, v, c, h, tokens, t);
                for (int d = 0; d < c.headDim; d++)
                    EXPECT_NEAR(out.at<float>(t - s.first, h * c.headDim + d), expected[d], c.tolerance)
                        << "token " << t << " head " << h << " dim " << d;
            }
    }
}

INSTANTIATE_TEST_CASE_P(Cases, AttentionMath, ::testing::Values(
    AttentionCase{4, 4, 8, 8, false, 10000.f, 1.f, {}},             // multi-head, Llama NORM pairs
    AttentionCase{6, 2, 16, 16, true, 1e6f, 1.f, {}},               // GQA 3:1, Qwen2 NEOX, base 1e6
    AttentionCase{8, 1, 8, 4, true, 10000.f, 0.25f, {}},            // MQA, partial rotary, linear x4
    AttentionCase{4, 2, 8, 8, false, 500000.f, 1.f, {1.f, 2.f, 8.f, 32.f}},   // Llama-3 factors
    // Past one 256-position chunk: chunk partials merged in order (prefill) and split across
    // threads (decode), and a page boundary inside a forward.
    AttentionCase{4, 2, 8, 8, false, 10000.f, 1.f, {}, {{0, 300}, {300, 301}, {301, 530}, {530, 531}}},
    // Reduced-precision storage: half (rounding ~5e-4 relative) and 8-bit blocks (~1/254 of a
    // head's largest element per value).
    AttentionCase{6, 2, 16, 16, true, 1e6f, 1.f, {}, {{0, 5}, {5, 6}, {6, 7}, {7, 8}}, CV_16F, 3e-3},
    AttentionCase{6, 2, 16, 16, true, 1e6f, 1.f, {}, {{0, 5}, {5, 6}, {6, 7}, {7, 8}}, CV_8S, 4e-2},
    // Half-precision keys and values read in place by the kernels: a head of 64 (whole vectors
    // at every width), four query heads per KV head, past a chunk and across pages.
    AttentionCase{8, 2, 64, 64, true, 1e6f, 1.f, {}, {{0, 260}, {260, 261}, {261, 262}}, CV_16F, 3e-3},
    // 8-bit keys and values read in place by the kernels (converted and scaled in registers):
    // the same shape, past a chunk and across pages.
    AttentionCase{8, 2, 64, 64, true, 1e6f, 1.f, {}, {{0, 260}, {260, 261}, {261, 262}}, CV_8S, 4e-2},
    // The same on float32 storage: the kernels' blocks of one vector's lanes of keys (a tree of
    // shuffles sums a block's scores per head, or with AVX-512 the heads lie across the lanes),
    // with partial blocks at page and chunk ends.
    AttentionCase{8, 2, 64, 64, true, 1e6f, 1.f, {}, {{0, 260}, {260, 261}, {261, 262}}, CV_32F, 2e-5},
    // The AVX-512 scores with the query heads across a vector's lanes, for each group size they
    // take (4 above, 2, 8, 16 and 32 as two sets of 16), whole blocks of 16 keys and a tail.
    AttentionCase{4, 2, 32, 32, true, 1e6f, 1.f, {}, {{0, 40}, {40, 41}}, CV_32F, 2e-5},
    AttentionCase{16, 2, 16, 16, true, 1e6f, 1.f, {}, {{0, 40}, {40, 41}}, CV_16F, 3e-3},
    AttentionCase{16, 1, 16, 16, false, 10000.f, 1.f, {}, {{0, 40}, {40, 41}}, CV_32F, 2e-5},
    AttentionCase{32, 1, 16, 16, false, 10000.f, 1.f, {}, {{0, 40}, {40, 41}}, CV_8S, 4e-2},
    // Gemma 2: scores soft-capped at 2 (most scores here are beyond it), a window of 5
    // positions shorter than the prefill and across pages as the sequence grows.
    AttentionCase{4, 2, 8, 8, true, 10000.f, 1.f, {}, {{0, 7}, {7, 8}, {8, 20}, {20, 21}, {21, 40}, {40, 41}},
                  CV_32F, 2e-5, 5, 2.f},
    // A window of 270: chunks cut at the window's start and merged across the 256 boundary,
    // pages released while decoding, a window that starts inside a page; half-precision storage.
    AttentionCase{4, 2, 8, 8, false, 10000.f, 1.f, {}, {{0, 300}, {300, 301}, {301, 530}, {530, 531}, {531, 532}},
                  CV_32F, 2e-5, 270},
    AttentionCase{4, 2, 8, 8, false, 10000.f, 1.f, {}, {{0, 17}, {17, 18}, {18, 50}, {50, 51}}, CV_16F, 3e-3, 16},
    // Non-causal spans (a Gemma 3 image: libmtmd decodes it with causal attention off): inside a
    // forward after a prefix, with text after it in the same forward; with a window shorter
    // than the span (the window counts back from each token's own position, as llama.cpp's
    // mask); across the 256-position chunk boundary, with and without a window.
    AttentionCase{4, 2, 8, 8, true, 10000.f, 1.f, {}, {{0, 3}, {3, 14}, {14, 15}, {15, 16}}, CV_32F, 2e-5, 0, 0.f, {5, 12}},
    AttentionCase{4, 2, 8, 8, true, 10000.f, 1.f, {}, {{0, 3}, {3, 14}, {14, 15}, {15, 16}}, CV_32F, 2e-5, 4, 0.f, {4, 13}},
    AttentionCase{4, 2, 8, 8, false, 10000.f, 1.f, {}, {{0, 250}, {250, 270}, {270, 271}}, CV_32F, 2e-5, 0, 0.f, {252, 262}},
    AttentionCase{4, 2, 8, 8, false, 10000.f, 1.f, {}, {{0, 250}, {250, 270}, {270, 271}}, CV_32F, 2e-5, 8, 0.f, {250, 262}}));

// Context shifting: after KVCache::discardTokens(), the layer attends as if the kept tokens had
// always been at their new positions (keys re-rotated by the shift). With a sliding window of 10
// the cache has released the early pages: the rows the shifted tokens attend to are moved into
// pages taken again.
class DiscardTokens : public ::testing::TestWithParam<int> {};

TEST_P(DiscardTokens, reRotatesKeys)
{
    AttentionCase c{6, 2, 16, 16, true, 1e6f, 1.f, {}};
    c.window = GetParam();
    LayerParams lp;
    lp.set("num_heads", c.heads);
    lp.set("num_kv_heads", c.kvHeads);
    lp.set("head_dim", c.headDim);
    lp.set("max_context", 64);
    lp.set("rope_dim", c.ropeDim);
    lp.set("rope_base", c.base);
    lp.set("rope_neox", c.neox);
    lp.set("sliding_window", c.window);
    Net net;
    addAttentionNet(net, lp);
    const int total = 43, dropFirst = 1, dropCount = 20;
    Mat q(total, c.heads * c.headDim, CV_32F), k(total, c.kvHeads * c.headDim, CV_32F), v(k.size(), CV_32F);
    RNG rng(7);
    rng.fill(q, RNG::NORMAL, 0, 1);
    rng.fill(k, RNG::NORMAL, 0, 1);
    rng.fill(v, RNG::NORMAL, 0, 1);
    auto feed = [&](int a, int b) {
        net.setInput(q.rowRange(a, b).clone(), "q");
        net.setInput(k.rowRange(a, b).clone(), "k");
        net.setInput(v.rowRange(a, b).clone(), "v");
        return net.forward().clone();
    };
    feed(0, 40);
    getLLMKVCache(net)->discardTokens(0, dropFirst, dropCount);
    const Mat out = feed(40, 43);

    // The kept tokens (0 and 21..42) at positions 0, 1, 2, ...
    std::vector<int> kept{0};
    for (int t = dropFirst + dropCount; t < total; t++)
        kept.push_back(t);
    for (int r = 0; r < 3; r++)
    {
        const int pos = (int)kept.size() - 3 + r;  // query position after the shift
        for (int h = 0; h < c.heads; h++)
        {
            const std::vector<double> expected = referenceHead(q, k, v, c, h, kept, pos);
            for (int d = 0; d < c.headDim; d++)
                EXPECT_NEAR(out.at<float>(r, h * c.headDim + d), expected[d], 2e-5) << "row " << r << " head " << h;
        }
    }
}

INSTANTIATE_TEST_CASE_P(Windows, DiscardTokens, ::testing::Values(0, 10));

// A sliding-window layer's cache cannot go back to positions it has released: rewinding there
// is refused by name, getResumableLength() says how far one can go, and 0 always works.
TEST(AttentionLayer, slidingWindowRewindLimits)
{
    LayerParams lp;
    lp.set("num_heads", 2);
    lp.set("num_kv_heads", 2);
    lp.set("head_dim", 8);
    lp.set("max_context", 256);
    lp.set("sliding_window", 8);
    Net net;
    addAttentionNet(net, lp);
    Mat q(40, 16, CV_32F), kv(40, 16, CV_32F);
    randu(q, -1, 1);
    randu(kv, -1, 1);
    auto feed = [&](int a, int b) {
        net.setInput(q.rowRange(a, b).clone(), "q");
        net.setInput(kv.rowRange(a, b).clone(), "k");
        net.setInput(kv.rowRange(a, b).clone(), "v");
        net.forward();
    };
    feed(0, 30);
    feed(30, 40);  // positions before 30 - 8 + 1 = 23 are no longer attended: pages 0 (0..15) released
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_EQ(cache->getPagesInUse(), 2);
    EXPECT_EQ(cache->getResumableLength(0, 40), 40);
    EXPECT_EQ(cache->getResumableLength(0, 23), 23);  // attends to 16..22: page 1 is held
    EXPECT_EQ(cache->getResumableLength(0, 22), 0);   // would attend to 15
    EXPECT_THROW(cache->truncateSequence(0, 20), cv::Exception);
    EXPECT_EQ(cache->getSequenceLength(0), 40);
    cache->truncateSequence(0, 23);
    feed(23, 24);
    cache->truncateSequence(0, 0);
    EXPECT_EQ(cache->getPagesInUse(), 0);
    // Bytes: one 16-token page of one layer (2 heads x 8 floats, keys and values) per page.
    feed(0, 40);
    EXPECT_EQ(cache->getBytesInUse(), (size_t)3 * 16 * 2 * 2 * 8 * sizeof(float));
}

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
    addAttentionNet(net, lp);
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
