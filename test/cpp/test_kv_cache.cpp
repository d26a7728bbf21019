// The Net-level paged KV cache and ragged batches on whole models: a sequence's logits in a
// batch equal its logits alone, rewinding and forking, the memory budget, context shifting,
// reduced-precision storage, and continuous batching in TextGenerationModel.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

// One forward of a ragged batch; one logit row per distinct sequence.
Mat runBatch(Net& net, const std::vector<int>& ids, const std::vector<int>& sequences)
{
    setLLMBatch(net, sequences);
    net.setInput(llm_test::idsToMat(ids));
    return net.forward().clone();
}

Mat runAlone(Net& net, const std::vector<int>& ids, int sequence)
{
    return runBatch(net, ids, std::vector<int>(ids.size(), sequence));
}


double maxAbsDiff(const Mat& a, const Mat& b)
{
    return norm(a.reshape(1, 1), b.reshape(1, 1), NORM_INF);
}

const std::vector<std::vector<int>> kPrompts = {
    {1, 403, 407, 261, 378},               // "Once upon a time"
    {1, 365, 280, 296, 278, 320, 295},
    {1, 290, 331},
    {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267},
};

// Greedy decode of each prompt alone: the logits of every step.
std::vector<std::vector<Mat>> decodeAlone(const std::string& model, int steps)
{
    std::vector<std::vector<Mat>> out;
    for (const std::vector<int>& prompt : kPrompts)
    {
        Net net = readNet(model);
        std::vector<Mat> logits{runAlone(net, prompt, 0)};
        for (int s = 0; s < steps; s++)
            logits.push_back(runAlone(net, {llm_test::argmax(logits.back())}, 0));
        out.push_back(logits);
    }
    return out;
}

class BatchEqualsAlone : public ::testing::TestWithParam<std::string> {};

// Decode steps of several sequences in one forward give bit-identical logits to each sequence
// run alone: every matmul row up to 32 is computed on its own and attention chunks by position.
TEST_P(BatchEqualsAlone, decodeStepsAreBitExact)
{
    const std::string model = GetParam();
    const int steps = 6;
    const std::vector<std::vector<Mat>> alone = decodeAlone(model, steps);

    Net net = readNet(model);
    std::vector<Mat> logits;
    for (size_t i = 0; i < kPrompts.size(); i++)
        logits.push_back(runAlone(net, kPrompts[i], 10 + (int)i));  // any ids, any order
    for (size_t i = 0; i < kPrompts.size(); i++)
        ASSERT_EQ(maxAbsDiff(logits[i], alone[i][0]), 0.0) << "prefill of prompt " << i;
    for (int s = 1; s <= steps; s++)
    {
        std::vector<int> ids, sequences;
        for (size_t i = 0; i < kPrompts.size(); i++)
        {
            ids.push_back(llm_test::argmax(logits[i]));
            sequences.push_back(10 + (int)i);
        }
        const Mat out = runBatch(net, ids, sequences);
        ASSERT_EQ(out.rows, (int)kPrompts.size());
        for (size_t i = 0; i < kPrompts.size(); i++)
        {
            logits[i] = out.row((int)i).clone();
            EXPECT_EQ(maxAbsDiff(logits[i], alone[i][s]), 0.0) << "prompt " << i << " step " << s;
        }
    }
}

// A ragged batch that mixes prefills and decode steps: the matmuls of more than 32 rows take
// the GEMM path, so agreement is within float rounding rather than exact.
TEST_P(BatchEqualsAlone, raggedPrefillAndDecodeAgree)
{
    const std::string model = GetParam();
    const std::vector<std::vector<Mat>> alone = decodeAlone(model, 1);
    Net net = readNet(model);
    // Prompts 0 and 1 prefilled together (interleaved: order inside a sequence is what counts).
    std::vector<int> ids, sequences;
    for (size_t t = 0; t < std::max(kPrompts[0].size(), kPrompts[3].size()); t++)
        for (int i : {0, 3})
            if (t < kPrompts[i].size())
            {
                ids.push_back(kPrompts[i][t]);
                sequences.push_back(i);
            }
    Mat out = runBatch(net, ids, sequences);
    ASSERT_EQ(out.rows, 2);
    EXPECT_LT(maxAbsDiff(out.row(0), alone[0][0]), 2e-3);
    EXPECT_LT(maxAbsDiff(out.row(1), alone[3][0]), 2e-3);
    // Then prompt 1's prefill with a decode step of sequences 0 and 3 in the same forward.
    ids = kPrompts[1];
    sequences.assign(ids.size(), 1);
    ids.push_back(llm_test::argmax(alone[0][0]));
    sequences.push_back(0);
    ids.insert(ids.begin(), llm_test::argmax(alone[3][0]));
    sequences.insert(sequences.begin(), 3);
    out = runBatch(net, ids, sequences);
    ASSERT_EQ(out.rows, 3);  // order of first appearance: 3, 1, 0
    EXPECT_LT(maxAbsDiff(out.row(0), alone[3][1]), 2e-3);
    EXPECT_LT(maxAbsDiff(out.row(1), alone[1][0]), 2e-3);
    EXPECT_LT(maxAbsDiff(out.row(2), alone[0][1]), 2e-3);
}

INSTANTIATE_TEST_CASE_P(Models, BatchEqualsAlone, ::testing::Values(
    llm_test::sharedTestData("stories260K.gguf"),                        // F32: float GEMV rows
    llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"),          // integer dot rows
    llm_test::testModel("synthetic/synthetic_qwen2_Q4_K_M.gguf"),
    llm_test::testModel("synthetic/synthetic_qwen3_Q8_0.gguf"),          // per-head Q/K norm
    llm_test::testModel("synthetic/synthetic_gpt2_Q8_0.gguf"),          // learned positions
    llm_test::testModel("synthetic/synthetic_phi3_Q8_0.gguf"),          // fused qkv, LongRoPE, attn_factor
    llm_test::testModel("synthetic/synthetic_gemma2_Q8_0.gguf"),        // window 4, soft-capping, GELU
    llm_test::testModel("synthetic/synthetic_gemma3_Q4_K_M.gguf"),      // 5 local layers, 1 global
    llm_test::testModel("synthetic/synthetic_olmo2_Q8_0.gguf"),         // post-norms, whole-projection Q/K norm
    llm_test::testModel("synthetic/synthetic_granite_Q8_0.gguf"),       // embedding / residual / logit scales
    llm_test::testModel("synthetic/synthetic_smollm3_Q8_0.gguf"),       // a layer without rotary
    llm_test::testModel("synthetic/synthetic_mistral3_Q8_0.gguf"),      // YaRN, attention temperature
    llm_test::testModel("synthetic/synthetic_gptneox_Q8_0.gguf"),       // partial rotary, parallel residual
    llm_test::testModel("synthetic/synthetic_phi2_Q8_0.gguf"),          // one LayerNorm for both, output bias
    llm_test::testModel("synthetic/synthetic_stablelm_qknorm_par_Q8_0.gguf"),  // per-head Q/K LayerNorm
    llm_test::testModel("synthetic/synthetic_qwen3moe_Q8_0.gguf"),      // experts: rows grouped by expert
    llm_test::testModel("synthetic/synthetic_mixtral_F32.gguf"),        // experts on the float path
    llm_test::testModel("synthetic/synthetic_gpt-oss_MXFP4_MOE.gguf"))); // sinks, window, expert biases

// The plan is made before the Net plans its buffers, so batched forwards and plain ones mix
// freely, whatever their token and sequence counts (stories260K's logits: bit-exact against a
// lone run, as decodeStepsAreBitExact establishes for batches).
TEST(KVCache, plainAndBatchedForwardsMix)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    Net alone = readNet(model);
    const Mat expectedFirst = runAlone(alone, kPrompts[0], 0);
    const Mat expectedNext = runAlone(alone, {432, 383}, 0);

    Net net = readNet(model);
    // A batch of two sequences with as many tokens as the plain forward that follows.
    Mat two = runBatch(net, {1, 290, 331, 1, 365}, {7, 7, 7, 8, 8});
    ASSERT_EQ(2, two.rows);
    net.setInput(llm_test::idsToMat(kPrompts[0]));  // plain: all tokens continue sequence 0
    const Mat first = net.forward().clone();
    ASSERT_EQ(1, first.rows);
    EXPECT_EQ(0, maxAbsDiff(expectedFirst, first));
    two = runBatch(net, {400, 401}, {7, 8});
    ASSERT_EQ(2, two.rows);
    net.setInput(llm_test::idsToMat({432, 383}));
    const Mat next = net.forward().clone();
    ASSERT_EQ(1, next.rows);
    EXPECT_EQ(0, maxAbsDiff(expectedNext, next));
    EXPECT_EQ(7, getLLMKVCache(net)->getSequenceLength(0));
    EXPECT_EQ(4, getLLMKVCache(net)->getSequenceLength(7));
}

TEST(KVCache, rewindThenRegenerateEqualsAFreshRun)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    Net fresh = readNet(model);
    const Mat expected = runAlone(fresh, kPrompts[3], 0);

    Net net = readNet(model);
    runAlone(net, kPrompts[0], 0);
    runAlone(net, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, 0);  // 22 tokens: 2 pages
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_EQ(cache->getSequenceLength(0), 22);
    EXPECT_EQ(cache->getPagesInUse(), 2);
    cache->truncateSequence(0, 5);  // back to the prompt
    EXPECT_EQ(cache->getPagesInUse(), 1);
    const std::vector<int> rest(kPrompts[3].begin() + 5, kPrompts[3].end());
    EXPECT_EQ(maxAbsDiff(runAlone(net, rest, 0), expected), 0.0);
}

TEST(KVCache, forkSharesPagesAndCopiesOnWrite)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    Net net = readNet(model);
    Ptr<KVCache> cache = getLLMKVCache(net);
    ASSERT_EQ(cache->getPageSize(), 16);
    const Mat prefill = runAlone(net, kPrompts[3], 0);  // 20 tokens: a full page and a partial one
    EXPECT_EQ(cache->getPagesInUse(), 2);
    cache->forkSequence(0, 7);
    EXPECT_EQ(cache->getPagesInUse(), 2);
    EXPECT_EQ(cache->getPagesShared(), 2);
    EXPECT_EQ(cache->getSequenceLength(7), 20);
    EXPECT_THROW(cache->forkSequence(0, 7), cv::Exception);  // exists already

    // Both continue differently; each equals a lone run of its whole text.
    const Mat a = runAlone(net, {300}, 7);  // writes into the shared partial page: copied first
    EXPECT_EQ(cache->getPagesInUse(), 3);
    EXPECT_EQ(cache->getPagesShared(), 1);
    const Mat b = runAlone(net, {301}, 0);
    EXPECT_EQ(cache->getPagesInUse(), 3);
    for (int last : {300, 301})
    {
        std::vector<int> ids = kPrompts[3];
        ids.push_back(last);
        Net alone = readNet(model);
        EXPECT_EQ(maxAbsDiff(runAlone(alone, ids, 0), last == 300 ? a : b), 0.0) << last;
    }
    cache->removeSequence(0);
    EXPECT_EQ(cache->getPagesShared(), 0);
    EXPECT_EQ(cache->getPagesInUse(), 2);
    EXPECT_EQ(cache->getSequenceIds(), std::vector<int>{7});
    cache->clear();
    EXPECT_EQ(cache->getPagesInUse(), 0);
}

// Pages come from slabs of several pages each (one run per layer and head, for attention's
// streaming): sequences that grow page by page in turn hold alternate pages of a slab, a
// sequence longer than a slab spans several, and freed pages are taken again by the next.
// Every sequence's logits equal a lone run of its tokens.
TEST(KVCache, sequencesInterleavedAcrossSlabsAndFreedPagesKeepResults)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    auto tokens = [](int seed, int count) {
        std::vector<int> ids{1};
        for (int i = 1; i < count; i++)
            ids.push_back(3 + (seed * 131 + i * 97) % 500);
        return ids;
    };
    const std::vector<int> a = tokens(1, 160), b = tokens(2, 160), c = tokens(3, 300);
    for (int storage : {CV_32F, CV_16F, CV_8S})  // rows read in place over runs of pages, or decoded
    {
        SCOPED_TRACE(storage);
        Net net = readNet(model);
        Ptr<KVCache> cache = getLLMKVCache(net);
        cache->setStorageType(storage);
        for (int page = 0; page < 10; page++)  // a and b take a page each in turn: 20 pages, two slabs
            for (int sequence : {0, 1})
            {
                const std::vector<int>& ids = sequence == 0 ? a : b;
                runAlone(net, std::vector<int>(ids.begin() + 16 * page, ids.begin() + 16 * (page + 1)), sequence);
            }
        EXPECT_EQ(cache->getPagesInUse(), 20);
        cache->removeSequence(1);
        const Mat cLast = runAlone(net, c, 2);  // b's freed pages, then new ones
        EXPECT_EQ(cache->getPagesInUse(), 10 + 19);
        const Mat aNext = runAlone(net, {7}, 0);

        Net alone = readNet(model);  // a in the same forwards (forwards of other sizes round differently)
        Ptr<KVCache> aloneCache = getLLMKVCache(alone);
        aloneCache->setStorageType(storage);
        for (int page = 0; page < 10; page++)
            runAlone(alone, std::vector<int>(a.begin() + 16 * page, a.begin() + 16 * (page + 1)), 0);
        EXPECT_EQ(maxAbsDiff(runAlone(alone, {7}, 0), aNext), 0.0);
        aloneCache->clear();
        EXPECT_EQ(maxAbsDiff(runAlone(alone, c, 0), cLast), 0.0);
    }
}

TEST(KVCache, exhaustedBudgetIsAnErrorAndLeavesTheCacheIntact)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    Net net = readNet(model);
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_EQ(cache->getBytesPerToken(), (size_t)5 * 2 * 32 * sizeof(float));  // layers * K,V * kv width
    cache->setMemoryBudget(2 * 16 * cache->getBytesPerToken());  // two pages
    EXPECT_EQ(cache->getPagesFree(), 2);
    runAlone(net, kPrompts[3], 0);  // 20 tokens: two pages
    try
    {
        runBatch(net, {5, 6}, {0, 1});  // sequence 1 needs a third page
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("budget"), std::string::npos) << e.msg;
    }
    EXPECT_EQ(cache->getSequenceLength(0), 20);
    EXPECT_FALSE(cache->hasSequence(1));
    EXPECT_THROW(cache->setMemoryBudget(16 * cache->getBytesPerToken()), cv::Exception);  // below the pages in use

    // Still usable, with the same results as a fresh run.
    std::vector<int> ids = kPrompts[3];
    ids.push_back(5);
    Net fresh = readNet(model);
    EXPECT_EQ(maxAbsDiff(runAlone(net, {5}, 0), runAlone(fresh, ids, 0)), 0.0);
}

TEST(KVCache, contextLimitPerSequence)
{
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_EQ(cache->getMaxSequenceLength(), 512);
    runAlone(net, std::vector<int>(510, 5), 0);
    EXPECT_THROW(runAlone(net, {5, 5, 5}, 0), cv::Exception);
    EXPECT_EQ(cache->getSequenceLength(0), 510);
    runAlone(net, {5, 5}, 0);  // exactly full
    EXPECT_EQ(cache->getSequenceLength(0), 512);
}

// Context shifting on a model: dropping the last tokens is a rewind (exact); dropping middle
// tokens moves the later ones back, so a full sequence takes new tokens again. (The re-rotated
// keys are checked against exact math in test_attention_layer.cpp; deeper layers' keys still
// carry what the dropped tokens contributed, as in llama.cpp's context shift.)
TEST(KVCache, discardTokensShiftsTheContext)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    std::vector<int> text;
    for (int i = 0; i < 512; i++)
        text.push_back(kPrompts[3][i % kPrompts[3].size()] + i % 50);
    Net net = readNet(model);
    Ptr<KVCache> cache = getLLMKVCache(net);
    runAlone(net, text, 0);
    EXPECT_THROW(runAlone(net, {42}, 0), cv::Exception);  // full
    cache->discardTokens(0, 1, 256);                     // keep BOS, drop half
    EXPECT_EQ(cache->getSequenceLength(0), 256);
    const Mat shifted = runAlone(net, {42}, 0);
    EXPECT_EQ(cache->getSequenceLength(0), 257);
    EXPECT_TRUE(checkRange(shifted));

    cache->discardTokens(0, 200, 57);  // the tail: a rewind to 200 tokens
    EXPECT_EQ(cache->getSequenceLength(0), 200);
    EXPECT_THROW(cache->discardTokens(0, 150, 51), cv::Exception);  // past the end
    EXPECT_THROW(cache->discardTokens(0, -1, 2), cv::Exception);
}

TEST(KVCache, reducedPrecisionStorageKeepsGreedyText)
{
    const std::string model = llm_test::sharedTestData("stories260K.gguf");
    Net reference = readNet(model);
    const Mat expected = runAlone(reference, kPrompts[3], 0);
    for (int type : {CV_16F, CV_8S})
    {
        Net net = readNet(model);
        Ptr<KVCache> cache = getLLMKVCache(net);
        cache->setStorageType(type);
        EXPECT_LT(cache->getBytesPerToken(), (size_t)5 * 2 * 32 * sizeof(float));
        const Mat logits = runAlone(net, kPrompts[3], 0);
        EXPECT_EQ(llm_test::argmax(logits), llm_test::argmax(expected)) << typeToString(type);
        EXPECT_LT(maxAbsDiff(logits, expected), type == CV_16F ? 0.02 : 0.6) << typeToString(type);
        EXPECT_THROW(cache->setStorageType(CV_32F), cv::Exception);  // not empty
    }
    Net net = readNet(model);
    EXPECT_THROW(getLLMKVCache(net)->setStorageType(CV_64F), cv::Exception);
}

TEST(KVCache, badBatchesAreErrors)
{
    Net net = readNet(llm_test::sharedTestData("stories260K.gguf"));
    EXPECT_THROW(runBatch(net, {5, 6, 7}, {0, 1}), cv::Exception);  // one id per token
    EXPECT_THROW(setLLMBatch(net, {-1}), cv::Exception);
    EXPECT_THROW(setLLMBatch(net, {}), cv::Exception);
    Ptr<KVCache> cache = getLLMKVCache(net);
    EXPECT_THROW(cache->truncateSequence(3, 0), cv::Exception);  // no such sequence
    EXPECT_THROW(cache->removeSequence(3), cv::Exception);
    Net notAnLLM;
    EXPECT_THROW(getLLMKVCache(notAnLLM), cv::Exception);
}

// generateBatch with continuous batching: more prompts than parallel slots, repeated prompts
// (prefilled once, forked), sampling with seed + i: each completion equals a lone run.
TEST(TextGenerationBatch, continuousBatchingEqualsLoneRuns)
{
    TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    GenerationConfig config;
    config.maxNewTokens = 24;
    config.temperature = 0.8f;
    config.seed = 5;
    const std::vector<String> prompts = {"Once upon a time", "Lily", "Once upon a time", "The cat",
                                         "Once upon a time"};
    model.setMaxParallelSequences(2);
    const std::vector<String> batch = model.generateBatch(prompts, config);
    ASSERT_EQ(batch.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); i++)
    {
        GenerationConfig single = config;
        single.seed = config.seed + (int)i;
        EXPECT_EQ(batch[i], model.generate(prompts[i], single)) << i;
    }
    Net net = model.getNetwork();
    EXPECT_TRUE(getLLMKVCache(net)->getSequenceIds().size() <= 1u);  // batch sequences removed
}

TEST(TextGenerationBatch, tokenIdsAndStreaming)
{
    TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    GenerationConfig config;
    config.maxNewTokens = 16;
    const std::vector<std::vector<int>> ids = model.generateBatchTokenIds({kPrompts[0], kPrompts[0]}, config);
    ASSERT_EQ(ids.size(), 2u);
    // llama.cpp's greedy continuation of "Once upon a time" (test_gguf_models.cpp).
    const std::vector<int> expected = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337};
    EXPECT_EQ(ids[0], expected);
    EXPECT_EQ(ids[1], expected);

    std::vector<String> streamed(2);
    const std::vector<String> texts = model.generateBatch({"Once upon a time", "Lily"}, config,
        [&](int i, const String& piece) {
            streamed[i] += piece;
            return i != 1 || streamed[1].size() < 5;  // ends completion 1 early
        });
    EXPECT_EQ(streamed[0], texts[0]);
    EXPECT_EQ(streamed[1], texts[1]);
    EXPECT_LT(texts[1].size(), 12u);
}

// The chat conversation (sequence 0) survives a batch.
TEST(TextGenerationBatch, conversationSurvivesABatch)
{
    TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    GenerationConfig config;
    config.maxNewTokens = 8;
    model.generate("Once upon a time", config);
    Net net = model.getNetwork();
    const int held = getLLMSequenceLength(net);
    EXPECT_GT(held, 0);
    model.generateBatch({"Lily", "Tom"}, config);
    EXPECT_EQ(getLLMSequenceLength(net), held);
}

} // namespace

namespace {

// Generation past the context: with contextShift it goes on (the sequence is shifted, never
// longer than the context); without, it stops when the context is full.
TEST(TextGenerationContext, shiftKeepsGeneratingAndStopWithoutIt)
{
    TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    Net net = model.getNetwork();
    GenerationConfig config;
    config.maxNewTokens = 700;  // the context holds 512
    config.temperature = 0.8f;
    config.ignoreEndOfGeneration = true;
    model.generate("Once upon a time", config);
    const size_t prompt = model.getPromptTokenIds().size();
    EXPECT_EQ(model.getGeneratedTokenIds().size(), 512 - prompt);
    EXPECT_EQ(getLLMSequenceLength(net), 511);

    config.contextShift = true;
    model.start("Once upon a time", config);
    int maxLength = 0;
    while (!model.isDone())
    {
        model.next();
        maxLength = std::max(maxLength, getLLMSequenceLength(net));
    }
    EXPECT_EQ(model.getGeneratedTokenIds().size(), 700u);
    EXPECT_LE(maxLength, 512);
    for (int id : model.getGeneratedTokenIds())
        EXPECT_FALSE(model.getTokenizer()->isEndOfGeneration(id));
}

} // namespace
