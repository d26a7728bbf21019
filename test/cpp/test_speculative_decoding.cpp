// Speculative decoding (GenerationConfig::draftTokens): drafts by prompt lookup or by a draft
// model, checked by the model in one forward.
//
// Truth: the model's own generation without drafts (greedy output must be the same, token for
// token, on every kind of model, draft length and drafter, rejections included), the exact
// distribution of the next token computed from the Net's logits (the acceptance rule must not
// change it), and lone runs (a batch with drafts equals them).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cmath>
#include <map>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

std::string demoModel()
{
    return llm_test::projectRoot() + "/models/demo/demo-stories.gguf";
}

// A prompt that repeats itself, so that prompt lookup finds matches (ids of every test
// model's vocabulary, the smallest having 256 tokens).
const std::vector<int> kRepeatingPrompt = {1, 43, 47, 61, 78, 43, 47, 61, 78, 43, 47, 61, 78, 30, 31};

// Drafts checked over a test's models: both outcomes must occur, or the test would not
// have checked both paths.
struct DraftTotals
{
    int drafted = 0, kept = 0;
    void add(const std::vector<int>& counts)
    {
        ASSERT_EQ(counts.size(), 2u);
        EXPECT_LE(counts[1], counts[0]);
        drafted += counts[0];
        kept += counts[1];
    }
    void expectBothOutcomes() const
    {
        EXPECT_GT(kept, 0) << "no draft was ever kept";
        EXPECT_LT(kept, drafted) << "no draft was ever rejected";
    }
};

std::vector<int> greedyIds(TextGenerationModel& model, const std::vector<int>& prompt, int n, int draftTokens,
                           int lookupNgram, std::vector<int>* counts = nullptr, bool ignoreEnd = true)
{
    GenerationConfig config;
    config.maxNewTokens = n;
    config.draftTokens = draftTokens;
    config.lookupNgram = lookupNgram;
    config.draftMinProbability = 0.f;  // random-weight models are rarely that sure: draft every time
    config.ignoreEndOfGeneration = ignoreEnd;
    model.startWithTokenIds(prompt, config);
    while (!model.isDone())
        model.next();
    if (counts)
        *counts = model.getDraftCounts();
    return model.getGeneratedTokenIds();
}

// Every draft length and n-gram gives the ids of plain greedy decoding.
void expectPromptLookupKeepsGreedyIds(const std::string& path, DraftTotals& totals)
{
    SCOPED_TRACE(path);
    TextGenerationModel model(path);
    const int n = 40;
    const std::vector<int> expected = greedyIds(model, kRepeatingPrompt, n, 0, 0);
    ASSERT_EQ((int)expected.size(), n);
    const DraftTotals before = totals;
    for (int draftTokens : {1, 3, 8})
        for (int ngram : {1, 3})
        {
            std::vector<int> counts;
            EXPECT_EQ(greedyIds(model, kRepeatingPrompt, n, draftTokens, ngram, &counts), expected)
                << "draftTokens " << draftTokens << ", lookupNgram " << ngram;
            totals.add(counts);
        }
    EXPECT_GT(totals.drafted, before.drafted) << "nothing was drafted";
    std::cout << path << ": " << totals.kept - before.kept << " of " << totals.drafted - before.drafted
              << " drafts kept" << std::endl;
}

TEST(SpeculativeDecoding, promptLookupKeepsGreedyOutputOfGGUFModels)
{
    DraftTotals totals;
    expectPromptLookupKeepsGreedyIds(demoModel(), totals);
    for (const char* name : {"synthetic_llama_F32", "synthetic_llama_Q4_0", "synthetic_qwen2_Q4_K_M",
                             "synthetic_qwen3_Q8_0", "synthetic_gpt2_Q8_0", "synthetic_phi3_F32",
                             "synthetic_gemma2_Q4_K_M", "swa_gemma3_window40", "synthetic_llama_BF16",
                             "hybrid_lfm2_F32", "hybrid_qwen35_Q4_K_M", "hybrid_granitehybrid_Q8_0"})
        expectPromptLookupKeepsGreedyIds(llm_test::testModel(std::string("synthetic/") + name + ".gguf"), totals);
    totals.expectBothOutcomes();
}

TEST(SpeculativeDecoding, promptLookupKeepsGreedyOutputOfOnnxModels)
{
    DraftTotals totals;
    for (const char* name : {"hf_llama", "hf_gpt2", "gqa_rotary_q4_b32_zp_acc4", "gqa_local_window", "mha_fp16"})
        expectPromptLookupKeepsGreedyIds(llm_test::testModel(std::string("onnx_llm/") + name + "/model.onnx"), totals);
    totals.expectBothOutcomes();
}

// Generation that runs into the end of the context stops where plain generation stops: the
// drafts never take room the tokens before them would not have had.
TEST(SpeculativeDecoding, theContextEndsGenerationAtTheSameToken)
{
    const std::string path = llm_test::testModel("synthetic/synthetic_qwen3_Q8_0.gguf");
    TextGenerationModel model(path, 40);
    model.setDraftModel(path);  // drafts at every step, up to the end
    const std::vector<int> expected = greedyIds(model, kRepeatingPrompt, 100, 0, 0);
    ASSERT_EQ(expected.size(), 40u - kRepeatingPrompt.size());
    for (int draftTokens : {1, 3, 8})
    {
        std::vector<int> counts;
        EXPECT_EQ(greedyIds(model, kRepeatingPrompt, 100, draftTokens, 0, &counts), expected) << draftTokens;
        EXPECT_GT(counts[1], 0);
    }
}

// Each KV storage type: the drafts' keys and values are stored and read back as a decode
// step's are.
TEST(SpeculativeDecoding, promptLookupKeepsGreedyOutputWithEveryKVStorageType)
{
    for (int type : {CV_16F, CV_8S})
    {
        SCOPED_TRACE(type);
        Net net = readNet(llm_test::testModel("synthetic/synthetic_llama_Q4_K_M.gguf"));
        getLLMKVCache(net)->setStorageType(type);
        TextGenerationModel model(net);
        const std::vector<int> expected = greedyIds(model, kRepeatingPrompt, 30, 0, 0);
        for (int draftTokens : {2, 6})
            EXPECT_EQ(greedyIds(model, kRepeatingPrompt, 30, draftTokens, 2), expected);
    }
}

// A draft model: the model itself drafts exactly what it generates (every draft kept: the
// forward that checks several tokens gives the logits of single steps bit for bit; end of
// generation is allowed here, since the draft model does not know that it is masked);
// another model of the same vocabulary drafts mostly wrong tokens (rejections), and the
// output stays.
TEST(SpeculativeDecoding, draftModelKeepsGreedyOutput)
{
    const std::string target = llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf");
    TextGenerationModel model(target);
    const int n = 40;
    const std::vector<int> expected = greedyIds(model, kRepeatingPrompt, n, 0, 0, nullptr, false);

    model.setDraftModel(target);
    for (int draftTokens : {1, 4, 7})
    {
        std::vector<int> counts;
        EXPECT_EQ(greedyIds(model, kRepeatingPrompt, n, draftTokens, 0, &counts, false), expected);
        EXPECT_GE(counts[0], (int)expected.size() / 2);
        EXPECT_EQ(counts[1], counts[0]) << "the model disagreed with itself";
    }

    // Drafting stops at an unlikely token: fewer drafts, the same output.
    GenerationConfig confident;
    confident.maxNewTokens = n;
    confident.draftTokens = 7;
    confident.draftMinProbability = 0.5f;
    model.startWithTokenIds(kRepeatingPrompt, confident);
    while (!model.isDone())
        model.next();
    EXPECT_EQ(model.getGeneratedTokenIds(), expected);
    EXPECT_GT(model.getDraftCounts()[0], 0);
    EXPECT_LT(model.getDraftCounts()[0], (int)expected.size());

    model.setDraftModel(llm_test::testModel("synthetic/synthetic_qwen2_Q8_0.gguf"));
    for (int draftTokens : {1, 4, 7})
    {
        std::vector<int> counts;
        EXPECT_EQ(greedyIds(model, kRepeatingPrompt, n, draftTokens, 0, &counts, false), expected);
        EXPECT_LT(counts[1], counts[0]);
    }
}

TEST(SpeculativeDecoding, streamingStopStringsAndChatAreUnchanged)
{
    TextGenerationModel model(demoModel());
    GenerationConfig plain;
    plain.maxNewTokens = 80;
    plain.stopStrings = {"Tom!"};
    GenerationConfig drafted = plain;
    drafted.draftTokens = 5;
    drafted.lookupNgram = 2;
    const String prompt = "Lily had a big red ball. Lily had a big red ball and a small blue car. One day Lily";
    const String expected = model.generate(prompt, plain);
    String streamed;
    EXPECT_EQ(model.generate(prompt, drafted, [&](const String& piece) { streamed += piece; return true; }), expected);
    EXPECT_EQ(streamed, expected);

    model.setChatTemplate("chatml");
    std::vector<String> replies;
    for (const GenerationConfig& config : {plain, drafted})
    {
        model.resetConversation();
        replies.push_back(model.chat("Tell me about Lily.", config) + "|" + model.chat("And Tom?", config));
        EXPECT_LT(model.getLastPrefillTokenCount(), (int)model.getPromptTokenIds().size())
            << "the second turn reuses the first from the cache";
    }
    EXPECT_EQ(replies[0], replies[1]);
}

// Each sequence of a batch drafts on its own (a draft model drafts them all in the same
// forwards) and one forward checks them all: greedy and sampled completions equal lone runs
// with the same seeds.
TEST(SpeculativeDecoding, batchEqualsLoneRuns)
{
    TextGenerationModel model(llm_test::testModel("synthetic/synthetic_qwen2_Q4_K_M.gguf"));
    model.setDraftModel(llm_test::testModel("synthetic/synthetic_llama_Q8_0.gguf"));
    const std::vector<std::vector<int>> prompts = {kRepeatingPrompt, {1, 5, 6, 7, 5, 6, 7, 5}, {1, 99}, kRepeatingPrompt};
    for (int lookupNgram : {2, 0})
    for (float temperature : {0.f, 0.9f})
    {
        SCOPED_TRACE(lookupNgram ? "prompt lookup" : "draft model");
        GenerationConfig config;
        config.maxNewTokens = 24;
        config.temperature = temperature;
        config.seed = 11;
        config.draftTokens = 4;
        config.lookupNgram = lookupNgram;
        config.draftMinProbability = 0.f;
        config.ignoreEndOfGeneration = true;
        const std::vector<std::vector<int>> batch = model.generateBatchTokenIds(prompts, config);
        ASSERT_EQ(batch.size(), prompts.size());
        EXPECT_GT(model.getDraftCounts()[0], 0);
        for (size_t i = 0; i < prompts.size(); i++)
        {
            GenerationConfig lone = config;
            lone.seed = config.seed + (int)i;
            model.startWithTokenIds(prompts[i], lone);
            while (!model.isDone())
                model.next();
            EXPECT_EQ(batch[i], model.getGeneratedTokenIds()) << "prompt " << i << ", temperature " << temperature;
        }
    }
}

// The acceptance rule keeps the distribution: the draft model (the model itself, so the draft
// is the most likely token, p about 0.3) proposes the second token; the frequencies of the
// second token after the most frequent first one must follow the exact distribution computed
// from the Net's logits (bound as in test_sampling_distribution.cpp: a correct sampler fails with
// probability below 1e-9). Sampling without the rule's rejections (always keeping the draft)
// or with a wrong residual (drawing from p including the draft) fails it.
TEST(SpeculativeDecoding, samplingWithDraftsFollowsTheModelsDistribution)
{
    const std::string path = llm_test::sharedTestData("stories260K.gguf");
    TextGenerationModel model(path);
    model.setDraftModel(path);
    const std::vector<int> prompt = model.getTokenizer()->encode("The cat and the dog played. The", true, false);
    GenerationConfig config;
    config.maxNewTokens = 2;
    config.temperature = 1.f;
    config.draftTokens = 1;
    config.draftMinProbability = 0.f;
    config.ignoreEndOfGeneration = true;
    const int draws = 4000;
    std::map<int, std::map<int, int>> counts;  // first token -> second token -> count
    int drafted = 0, kept = 0;
    for (int seed = 1; seed <= draws; seed++)
    {
        config.seed = seed;
        model.startWithTokenIds(prompt, config);
        while (!model.isDone())
            model.next();
        const std::vector<int> ids = model.getGeneratedTokenIds();
        ASSERT_EQ(ids.size(), 2u);
        counts[ids[0]][ids[1]]++;
        drafted += model.getDraftCounts()[0];
        kept += model.getDraftCounts()[1];
    }
    EXPECT_EQ(drafted, draws);
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, drafted);

    int first = -1, firstCount = 0;
    for (const auto& c : counts)
    {
        int total = 0;
        for (const auto& s : c.second)
            total += s.second;
        if (total > firstCount)
        {
            first = c.first;
            firstCount = total;
        }
    }
    ASSERT_GT(firstCount, 800);

    std::vector<int> context = prompt;
    context.push_back(first);
    Net net = readNet(path);
    net.setInput(llm_test::idsToMat(context));
    const std::vector<double> p = llm_test::softmax(net.forward());
    const double delta = 1e-9;
    int categories = 0;
    for (double v : p)
        categories += v > 0;
    const double bound = std::log(2.0 * categories / delta) / firstCount;
    double tv = 0;
    for (int t = 0; t < (int)p.size(); t++)
    {
        const double f = (double)counts[first][t] / firstCount;
        tv += 0.5 * std::abs(f - p[t]);
        auto term = [](double a, double b) { return a == 0 ? 0.0 : a * std::log(a / b); };
        const double kl = term(f, p[t]) + term(1 - f, 1 - p[t]);
        EXPECT_LE(kl, bound) << "token " << t << ": drawn " << counts[first][t] << " of " << firstCount
                             << ", p = " << p[t];
    }
    std::cout << "second token after " << first << " (" << firstCount << " draws, " << kept << " of " << drafted
              << " drafts kept): total variation " << tv << std::endl;
}

TEST(SpeculativeDecoding, wrongSettingsAreErrors)
{
    TextGenerationModel model(demoModel());
    GenerationConfig config;
    config.draftTokens = 4;  // neither lookup nor a draft model
    EXPECT_THROW(model.generate("Lily", config), cv::Exception);
    config.lookupNgram = -1;
    EXPECT_THROW(model.generate("Lily", config), cv::Exception);
    config.lookupNgram = 2;
    config.draftTokens = -1;
    EXPECT_THROW(model.generate("Lily", config), cv::Exception);

    // A draft model of another vocabulary (stories260K: 512 tokens; the demo model's differ).
    try
    {
        model.setDraftModel(llm_test::sharedTestData("stories260K.gguf"));
        ADD_FAILURE() << "a draft model with another vocabulary was accepted";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.err.find("vocabulary"), std::string::npos) << e.err;
    }
    // The model still generates after the refusal.
    config.draftTokens = 0;
    config.lookupNgram = 0;
    config.maxNewTokens = 4;
    EXPECT_FALSE(model.generate("Lily", config).empty());
}

// setLLMBatch with logit tokens: one row per named token, the rows a Net returns for those
// tokens fed one by one.
TEST(SpeculativeDecoding, logitTokensReturnTheNamedRows)
{
    Net net = readNet(llm_test::testModel("synthetic/synthetic_qwen3_Q8_0.gguf"));
    const std::vector<int> prompt = {1, 403, 407, 261}, next = {378, 300, 301};
    net.setInput(llm_test::idsToMat(prompt));
    net.forward();
    std::vector<Mat> single;
    for (int t : next)
    {
        net.setInput(llm_test::idsToMat({t}));
        single.push_back(net.forward().clone());
    }
    truncateLLMState(net, (int)prompt.size());
    setLLMBatch(net, {0, 0, 0}, {0, 2});
    net.setInput(llm_test::idsToMat(next));
    const Mat rows = net.forward();
    ASSERT_EQ(rows.rows, 2);
    EXPECT_EQ(cv::norm(rows.row(0), single[0].reshape(1, 1), NORM_INF), 0.0);
    EXPECT_EQ(cv::norm(rows.row(1), single[2].reshape(1, 1), NORM_INF), 0.0);

    EXPECT_THROW(setLLMBatch(net, {0, 0}, {1, 0}), cv::Exception);  // not ascending
    EXPECT_THROW(setLLMBatch(net, {0, 0}, {2}), cv::Exception);     // not a token of the batch
}

} // namespace
