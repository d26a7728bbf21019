// Sampling through the public API (GenerationConfig's temperature, topK, topP, minP,
// repetitionPenalty, repetitionWindow, seed) against the definitions of llama.cpp's sampler
// chain. The next token's logits come from the Net itself (readNet + forward); the expected
// distribution is computed here from the definitions; TextGenerationModel then generates one
// token with thousands of seeds and the frequencies must match it.
//
// The chain (llama.cpp's default order): repetition penalty, then top-k, top-p and min-p on
// the distribution at temperature 1, then the temperature, then a draw among the survivors.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <set>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

std::string stories()
{
    return llm_test::sharedTestData("stories260K.gguf");
}

struct Knobs
{
    float temperature = 1.f;
    int topK = 0;
    float topP = 1.f;
    float minP = 0.f;
    float penalty = 1.f;
    int window = 64;
};

GenerationConfig configOf(const Knobs& k)
{
    GenerationConfig c;
    c.maxNewTokens = 1;
    c.temperature = k.temperature;
    c.topK = k.topK;
    c.topP = k.topP;
    c.minP = k.minP;
    c.repetitionPenalty = k.penalty;
    c.repetitionWindow = k.window;
    return c;
}

// The logits of the token after `prompt`, from a fresh Net.
std::vector<double> nextTokenLogits(const std::vector<int>& prompt)
{
    Net net = readNet(stories());
    net.setInput(llm_test::idsToMat(prompt));
    const Mat out = net.forward();
    CV_CheckEQ((int)out.total(), 512, "stories260K has 512 tokens");
    return std::vector<double>(out.ptr<float>(), out.ptr<float>() + out.total());
}

std::vector<double> softmax(const std::vector<double>& z, const std::vector<bool>& kept, double temperature)
{
    double top = -std::numeric_limits<double>::infinity();
    for (size_t t = 0; t < z.size(); t++)
        if (kept[t])
            top = std::max(top, z[t]);
    std::vector<double> p(z.size(), 0.0);
    double sum = 0;
    for (size_t t = 0; t < z.size(); t++)
        if (kept[t])
            sum += p[t] = std::exp((z[t] - top) / temperature);
    for (double& v : p)
        v /= sum;
    return p;
}

// The next token's distribution from the definitions. `margin` receives how far the closest
// truncation decision was from its threshold (logit gap for top-k, probability mass for
// top-p, probability ratio for min-p), so that a test can refuse a setting whose outcome
// float rounding could flip.
std::vector<double> expectedDistribution(const std::vector<double>& logits, const std::vector<int>& history,
                                         const Knobs& k, double& margin)
{
    const int n = (int)logits.size();
    std::vector<double> z = logits;
    margin = std::numeric_limits<double>::infinity();

    // Repetition penalty (llama.cpp's penalty_repeat): every distinct token among the last
    // `window` tokens of the history (-1: all of it), once: a positive logit is divided by
    // the penalty, any other multiplied by it.
    if (k.penalty != 1.f)
    {
        const size_t w = k.window < 0 ? history.size() : std::min(history.size(), (size_t)k.window);
        const std::set<int> recent(history.end() - w, history.end());
        for (int t : recent)
            z[t] = z[t] > 0 ? z[t] / k.penalty : z[t] * k.penalty;
    }

    // Top-k: a token survives when fewer than k tokens have a larger logit.
    std::vector<bool> kept(n, true);
    if (k.topK > 0 && k.topK < n)
    {
        std::vector<double> sorted = z;
        std::sort(sorted.begin(), sorted.end(), std::greater<double>());
        margin = std::min(margin, sorted[k.topK - 1] - sorted[k.topK]);
        for (int t = 0; t < n; t++)
            kept[t] = std::count_if(z.begin(), z.end(), [&](double v) { return v > z[t]; }) < k.topK;
    }

    // Top-p (nucleus) on the survivors' distribution at temperature 1: a token survives when
    // the survivors more likely than it hold less than p, which keeps the smallest set of
    // most likely tokens whose mass reaches p.
    const std::vector<double> p = softmax(z, kept, 1.0);
    if (k.topP < 1.f)
    {
        std::vector<bool> nucleus(n, false);
        for (int t = 0; t < n; t++)
        {
            if (!kept[t])
                continue;
            double before = 0;
            for (int u = 0; u < n; u++)
                if (kept[u] && (z[u] > z[t] || (z[u] == z[t] && u < t)))
                    before += p[u];
            nucleus[t] = before < k.topP;
            margin = std::min(margin, std::abs(before - k.topP));
        }
        kept = nucleus;
    }

    // Min-p: a survivor stays when its probability (temperature 1) is at least minP times the
    // most likely token's.
    if (k.minP > 0.f)
    {
        const double best = *std::max_element(p.begin(), p.end());
        for (int t = 0; t < n; t++)
            if (kept[t])
            {
                kept[t] = p[t] >= k.minP * best;
                margin = std::min(margin, std::abs(p[t] / best - k.minP));
            }
    }

    // The temperature, on what is left.
    return softmax(z, kept, k.temperature);
}

// Bernoulli KL divergence D(f || q).
double klDivergence(double f, double q)
{
    auto term = [](double a, double b) { return a == 0 ? 0.0 : a * std::log(a / b); };
    return term(f, q) + term(1 - f, 1 - q);
}

/* Generates one token after `promptText` with seeds 1..draws and compares the frequencies of
   the tokens with the distribution from the definitions.

   Statistical bound: for each category (a token, or all end-of-generation tokens together,
   since those end generation and show as no token), the Chernoff-Hoeffding inequality bounds
   the chance that the frequency f of `draws` independent draws from probability q lands at
   or beyond a given Bernoulli KL divergence c on either side: P <= 2 exp(-draws * c). With
   c = ln(2 * categories / delta) / draws and a union bound over the categories, a correct
   sampler fails this check with probability at most delta = 1e-9. Tokens of probability
   zero (outside the truncated set) must never appear at all.
   (The draws of seeds 1, 2, 3... are not independent today: cv::RNG's first number for
   consecutive seeds steps by a near-constant amount, which spreads the draws more evenly than
   independent ones would and only brings the frequencies closer to the distribution.) */
void expectDrawsFollowTheDefinition(const std::string& promptText, const Knobs& k, int draws)
{
    TextGenerationModel model(stories());
    Ptr<Tokenizer> tokenizer = model.getTokenizer();
    const std::vector<int> prompt = tokenizer->encode(promptText, true, false);
    double margin = 0;
    const std::vector<double> q = expectedDistribution(nextTokenLogits(prompt), prompt, k, margin);
    ASSERT_GT(margin, 1e-3) << "a truncation threshold lies too close to a token: choose another setting";

    // Categories: every token, except that the end-of-generation tokens form one.
    const int n = (int)q.size(), stop = n;
    std::vector<double> expected(n + 1, 0.0);
    for (int t = 0; t < n; t++)
        expected[tokenizer->isEndOfGeneration(t) ? stop : t] += q[t];

    std::vector<int> counts(n + 1, 0);
    GenerationConfig config = configOf(k);
    for (int seed = 1; seed <= draws; seed++)
    {
        config.seed = seed;
        model.generate(promptText, config);
        const std::vector<int> ids = model.getGeneratedTokenIds();
        ASSERT_LE(ids.size(), 1u);
        counts[ids.empty() ? stop : ids[0]]++;
    }
    ASSERT_EQ(model.getPromptTokenIds(), prompt);

    int categories = 0;
    for (double e : expected)
        categories += e > 0;
    const double delta = 1e-9;
    const double bound = std::log(2.0 * categories / delta) / draws;
    double worst = 0, tv = 0;
    int kept = 0;
    for (int c = 0; c <= n; c++)
    {
        const double f = (double)counts[c] / draws;
        tv += 0.5 * std::abs(f - expected[c]);
        if (expected[c] == 0)
        {
            EXPECT_EQ(counts[c], 0) << "token " << c << " is outside the truncated set but was drawn";
            continue;
        }
        kept++;
        const double d = klDivergence(f, expected[c]);
        worst = std::max(worst, d);
        EXPECT_LE(d, bound) << "category " << c << (c == stop ? " (end of generation)" : "") << ": drawn "
                            << counts[c] << " times of " << draws << ", expected p = " << expected[c];
    }
    std::cout << "T=" << k.temperature << " topK=" << k.topK << " topP=" << k.topP << " minP=" << k.minP
              << " penalty=" << k.penalty << " window=" << k.window << ": " << kept << " possible categories, "
              << "total variation " << tv << ", worst KL " << worst << " (bound " << bound << ")" << std::endl;
}

// A prompt whose next token is uncertain (the most likely has p = 0.33 at temperature 1) and
// whose two most likely next tokens, " c" and " do", are tokens of the prompt, so that the
// repetition penalty reorders the candidates. Its penalised tokens with negative logits have
// probabilities near 1e-6, too small to show in draws: Sampler.repetitionPenaltyFollowsItsFormula
// (test_sampler.cpp) covers that branch.
const std::string kSpreadPrompt = "The cat and the dog played. The";
const int kDraws = 3000;

TEST(SamplingDistribution, temperature)
{
    Knobs k;
    k.temperature = 1.f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
    k.temperature = 0.6f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
    k.temperature = 1.7f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

TEST(SamplingDistribution, topK)
{
    Knobs k;
    k.topK = 1;  // greedy whatever the seed
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, 200);
    k.topK = 5;
    k.temperature = 1.5f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

TEST(SamplingDistribution, topP)
{
    Knobs k;
    k.topP = 0.6f;  // three tokens
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
    k.topP = 0.8f;  // nine tokens: the nucleus is cut at temperature 1, then sharpened
    k.temperature = 0.8f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

TEST(SamplingDistribution, minP)
{
    Knobs k;
    k.minP = 0.12f;  // four tokens
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
    k.minP = 0.035f;  // fifteen tokens: the cut is made at temperature 1, then flattened
    k.temperature = 1.6f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

TEST(SamplingDistribution, repetitionPenalty)
{
    Knobs k;
    k.penalty = 1.6f;  // " c" and " do" fall from p = 0.33 and 0.22 to under 0.01
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
    k.window = 4;  // only the last four prompt tokens (none of them likely) are penalised
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

// Every knob at once: the penalty reorders the candidates before top-k, and the nucleus is
// cut on the distribution at temperature 1 (at 0.7 it would hold fewer tokens).
TEST(SamplingDistribution, wholeChain)
{
    Knobs k;
    k.penalty = 1.3f;
    k.topK = 12;
    k.topP = 0.72f;
    k.minP = 0.05f;
    k.temperature = 0.7f;
    expectDrawsFollowTheDefinition(kSpreadPrompt, k, kDraws);
}

} // namespace
