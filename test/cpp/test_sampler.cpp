// The sampler against the definitions of its steps, and the text stream's UTF-8 and
// stop-string handling.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <cmath>
#include <map>
#include <set>

#include "../../modules/dnn/src/llm/generation/sampler.hpp"
#include "../../modules/dnn/src/llm/generation/text_stream.hpp"

using cv::dnn::llm::Sampler;
using cv::dnn::llm::SamplingParams;
using cv::dnn::llm::TextStream;

namespace {

// Logits whose softmax (temperature 1) is exactly `p`.
std::vector<float> logitsOf(const std::vector<double>& p)
{
    std::vector<float> z;
    for (double v : p)
        z.push_back((float)std::log(v));
    return z;
}

std::map<int, int> histogram(Sampler& s, const std::vector<float>& z, int draws)
{
    std::map<int, int> h;
    for (int i = 0; i < draws; i++)
        h[s.sample(z.data(), (int)z.size(), {})]++;
    return h;
}

std::set<int> keys(const std::map<int, int>& h)
{
    std::set<int> k;
    for (const auto& e : h)
        k.insert(e.first);
    return k;
}

const std::vector<double> kP = {0.05, 0.40, 0.02, 0.25, 0.15, 0.08, 0.05};  // sorted: 1 3 4 5 0/6 2

TEST(Sampler, temperatureZeroIsArgmax)
{
    Sampler s(SamplingParams(), 1);
    const std::vector<float> z = logitsOf(kP);
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(s.sample(z.data(), (int)z.size(), {}), 1);
}

TEST(Sampler, seededRunsRepeat)
{
    SamplingParams p;
    p.temperature = 1.f;
    const std::vector<float> z = logitsOf(kP);
    Sampler a(p, 42), b(p, 42);
    for (int i = 0; i < 200; i++)
        EXPECT_EQ(a.sample(z.data(), (int)z.size(), {}), b.sample(z.data(), (int)z.size(), {}));
}

TEST(Sampler, drawsFollowTheDistribution)
{
    SamplingParams p;
    p.temperature = 1.f;
    Sampler s(p, 3);
    const int draws = 20000;
    const std::map<int, int> h = histogram(s, logitsOf(kP), draws);
    for (size_t t = 0; t < kP.size(); t++)
    {
        const double expected = kP[t] * draws, sd = std::sqrt(expected * (1 - kP[t]));
        EXPECT_NEAR(h.count((int)t) ? h.at((int)t) : 0, expected, 5 * sd) << "token " << t;
    }
}

TEST(Sampler, topKKeepsTheKBest)
{
    SamplingParams p;
    p.temperature = 1.5f;
    p.topK = 3;
    Sampler s(p, 5);
    EXPECT_EQ(keys(histogram(s, logitsOf(kP), 3000)), (std::set<int>{1, 3, 4}));
}

TEST(Sampler, topPKeepsTheSmallestSetReachingP)
{
    SamplingParams p;
    p.temperature = 1.f;
    p.topP = 0.7f;  // 0.40 + 0.25 = 0.65 < 0.7; + 0.15 = 0.80: keep 1, 3, 4
    Sampler s(p, 6);
    EXPECT_EQ(keys(histogram(s, logitsOf(kP), 3000)), (std::set<int>{1, 3, 4}));
    p.topP = 0.6f;  // 0.40 < 0.6; 0.65 >= 0.6: keep 1, 3
    Sampler s2(p, 6);
    EXPECT_EQ(keys(histogram(s2, logitsOf(kP), 3000)), (std::set<int>{1, 3}));
}

TEST(Sampler, minPKeepsTokensAboveAFractionOfTheBest)
{
    SamplingParams p;
    p.temperature = 1.f;
    p.minP = 0.3f;  // threshold 0.12: keep 0.40, 0.25, 0.15
    Sampler s(p, 7);
    EXPECT_EQ(keys(histogram(s, logitsOf(kP), 3000)), (std::set<int>{1, 3, 4}));
}

TEST(Sampler, repetitionPenaltyFollowsItsFormula)
{
    // Positive logits are divided by the penalty, negative ones multiplied.
    SamplingParams p;
    p.repetitionPenalty = 1.1f;
    Sampler s(p, 1);
    std::vector<float> z = {2.0f, 1.9f};
    EXPECT_EQ(s.sample(z.data(), 2, {0}), 1);  // 2.0 / 1.1 = 1.82 < 1.9
    p.repetitionPenalty = 1.05f;
    Sampler s2(p, 1);
    EXPECT_EQ(s2.sample(z.data(), 2, {0}), 0);  // 2.0 / 1.05 = 1.905 > 1.9
    z = {-1.0f, -1.05f};
    EXPECT_EQ(s2.sample(z.data(), 2, {}), 0);
    z = {-1.0f, -1.04f};
    EXPECT_EQ(s2.sample(z.data(), 2, {0}), 1);  // -1.0 * 1.05 = -1.05 < -1.04
    // Only the window counts.
    p.repetitionWindow = 1;
    Sampler s3(p, 1);
    z = {2.0f, 1.95f};
    EXPECT_EQ(s3.sample(z.data(), 2, {0, 1}), 0);  // 0 is outside the window of 1
}

// llama.cpp's penalties sampler: a token seen c > 0 times in the window gets
// logit -= c * frequency + presence, after the repetition penalty's division or multiplication.
TEST(Sampler, frequencyAndPresencePenaltiesFollowTheirFormula)
{
    SamplingParams p;
    p.frequencyPenalty = 0.5f;
    p.presencePenalty = 0.25f;
    Sampler s(p, 1);
    const std::vector<float> z = {1.f, 1.f, 1.f, -2.f};
    const float* out = s.penalize(z.data(), 4, {0, 0, 0, 1, 3});
    EXPECT_FLOAT_EQ(out[0], 1.f - 3 * 0.5f - 0.25f);   // three times
    EXPECT_FLOAT_EQ(out[1], 1.f - 0.5f - 0.25f);       // once
    EXPECT_FLOAT_EQ(out[2], 1.f);                      // never
    EXPECT_FLOAT_EQ(out[3], -2.f - 0.5f - 0.25f);
    // The greedy choice follows: token 2 is the only one left at 1.
    EXPECT_EQ(s.sample(z.data(), 4, {0, 0, 0, 1, 3}), 2);

    // With the repetition penalty: divided (or multiplied) first, then subtracted.
    p.repetitionPenalty = 2.f;
    p.frequencyPenalty = 0.1f;
    p.presencePenalty = 0.3f;
    Sampler r(p, 1);
    const std::vector<float> y = {2.f, -1.f, 0.5f};
    out = r.penalize(y.data(), 3, {0, 1, 0});
    EXPECT_FLOAT_EQ(out[0], 2.f / 2.f - 2 * 0.1f - 0.3f);
    EXPECT_FLOAT_EQ(out[1], -1.f * 2.f - 0.1f - 0.3f);
    EXPECT_FLOAT_EQ(out[2], 0.5f);

    // The same window as the repetition penalty; -1: the whole history.
    p = SamplingParams();
    p.presencePenalty = 1.f;
    p.repetitionWindow = 2;
    Sampler w(p, 1);
    out = w.penalize(z.data(), 4, {2, 0, 1});
    EXPECT_FLOAT_EQ(out[2], 1.f);  // outside the window of 2
    EXPECT_FLOAT_EQ(out[0], 0.f);
    p.repetitionWindow = -1;
    Sampler all(p, 1);
    EXPECT_FLOAT_EQ(all.penalize(z.data(), 4, {2, 0, 1})[2], 0.f);

    // Negative penalties make repeats more likely.
    p = SamplingParams();
    p.frequencyPenalty = -0.5f;
    Sampler neg(p, 1);
    EXPECT_EQ(neg.sample(z.data(), 4, {1}), 1);
    // Off (all three neutral): the logits themselves.
    Sampler off(SamplingParams(), 1);
    EXPECT_EQ(off.penalize(z.data(), 4, {0, 1}), z.data());
}

TEST(Sampler, badParametersAreErrors)
{
    SamplingParams p;
    p.topP = 0.f;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
    p = SamplingParams();
    p.minP = 1.f;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
    p = SamplingParams();
    p.repetitionPenalty = 0.f;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
    p = SamplingParams();
    p.topK = -1;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
    p = SamplingParams();
    p.frequencyPenalty = NAN;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
    p = SamplingParams();
    p.presencePenalty = INFINITY;
    EXPECT_THROW(Sampler(p, 1), cv::Exception);
}

TEST(TextStream, multiByteCharacterSplitAcrossTokensIsDeliveredWhole)
{
    TextStream s;
    EXPECT_EQ(s.push("a\xE2"), "a");            // first byte of U+2581
    EXPECT_EQ(s.push("\x96"), "");              // still incomplete
    EXPECT_EQ(s.push("\x81" "b"), "\xE2\x96\x81" "b");
    EXPECT_EQ(s.push("\xF0\x9F"), "");          // half an emoji
    EXPECT_EQ(s.push("\x98\x80"), "\xF0\x9F\x98\x80");
    EXPECT_EQ(s.push("\xFF" "c"), "\xEF\xBF\xBD" "c");  // an invalid byte is not held forever: U+FFFD
}

// Byte tokens that form no character (a random-weight model emitted <0xC9><0xC9>) come out as
// U+FFFD per byte, so every released piece is valid UTF-8 (Python's str needs it).
TEST(TextStream, bytesThatFormNoCharacterBecomeReplacementCharacters)
{
    const std::string fffd = "\xEF\xBF\xBD";
    TextStream s;
    EXPECT_EQ(s.push("x\xC9"), "x");             // a lead byte: maybe the start of a character
    EXPECT_EQ(s.push("\xC9"), fffd);             // another lead: the first formed nothing
    EXPECT_EQ(s.push("\xA9!"), "\xC9\xA9!");     // the second did: U+0269
    EXPECT_EQ(s.push("\x80\xE2\x82"), fffd);     // a lone continuation byte; E2 82 may go on
    EXPECT_EQ(s.flush(), fffd + fffd);            // the end: an incomplete character
    EXPECT_EQ(s.text(), "x" + fffd + "\xC9\xA9!" + fffd + fffd + fffd);
}

TEST(TextStream, stopStringAcrossTokensIsNotEmitted)
{
    TextStream s({"<end>", "STOP"});
    std::string out;
    out += s.push("Hello <e");
    EXPECT_EQ(out, "Hello ");                   // "<e" could start "<end>"
    out += s.push("n");
    out += s.push("d> more");
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(out, "Hello ");
    EXPECT_EQ(s.push("x"), "");
    EXPECT_EQ(s.text(), "Hello ");

    TextStream t({"STOP"});
    std::string out2 = t.push("aST");
    out2 += t.push("b");                         // "STb" is no stop: released
    EXPECT_FALSE(t.stopped());
    EXPECT_EQ(out2, "aSTb");
    out2 += t.push("S");
    out2 += t.flush();                           // the end releases what was held
    EXPECT_EQ(out2, "aSTbS");
}

} // namespace

// Nearby seeds draw independently (generateBatch gives completion i seed + i): over 64
// equally likely tokens, the first draws of seeds s and s + d agree with probability 1/64. The
// bound 0.05 is 9 standard deviations above that for 4000 pairs (false failure < 1e-15); an
// unmixed multiply-with-carry seed agreed 98% of the time for d = 33.
TEST(Sampler, nearbySeedsDrawIndependently)
{
    SamplingParams params;
    params.temperature = 1.f;
    const std::vector<float> logits(64, 0.f);
    auto firstDraw = [&](uint64_t seed) {
        cv::dnn::llm::Sampler sampler(params, seed);
        return sampler.sample(logits.data(), (int)logits.size(), std::vector<int>());
    };
    const int pairs = 4000;
    std::vector<int> draws(pairs + 100);
    for (int s = 0; s < (int)draws.size(); s++)
        draws[s] = firstDraw(s + 1);
    for (int d : {1, 2, 33, 66})
    {
        int same = 0;
        for (int s = 0; s < pairs; s++)
            same += draws[s] == draws[s + d];
        EXPECT_LT(same / (double)pairs, 0.05) << "seeds s and s + " << d;
    }
}
