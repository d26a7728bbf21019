// GenerationEngine: requests at any time on the model's one decode loop. Each request's tokens
// must equal those of a lone run of the same prompt and seed (decode steps in a batch are
// bit-identical to lone ones, and prompts here stay within the 32 rows whose matmuls are
// computed row by row), whatever else runs, whatever prefix it reuses, whenever it arrives.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/generation_engine.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/llm.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "test_common.hpp"

namespace {

using namespace cv;
using namespace cv::dnn;

std::string demoModel()
{
    return llm_test::projectRoot() + "/models/demo/demo-stories.gguf";
}

// Prompts of 16-30 tokens; the first five share a prefix longer than one KV page (16 tokens).
const char* kPrefix = "Once upon a time, in a small town by the sea, there lived a";
const std::vector<std::string> kEndings = {" little girl named Lily.", " big brown dog.", " kind old man who",
                                           " cat", " boy who loved to play"};

GenerationConfig config(float temperature, int seed, int maxNewTokens = 24)
{
    GenerationConfig c;
    c.temperature = temperature;
    c.topK = 40;
    c.seed = seed;
    c.maxNewTokens = maxNewTokens;
    return c;
}

Ptr<KVCache> cacheOf(const TextGenerationModel& model)
{
    Net net = model.getNetwork();
    return getLLMKVCache(net);
}

// The tokens a fresh model generates for a prompt alone.
std::vector<int> aloneIds(const std::vector<int>& prompt, const GenerationConfig& c)
{
    TextGenerationModel model(demoModel());
    model.startWithTokenIds(prompt, c);
    while (!model.isDone())
        model.next();
    return model.getGeneratedTokenIds();
}

std::vector<std::vector<int>> prompts(const TextGenerationModel& model)
{
    std::vector<std::vector<int>> out;
    for (const std::string& e : kEndings)
        out.push_back(model.getTokenizer()->encode(kPrefix + e));
    out.push_back(model.getTokenizer()->encode("The sun was shining."));  // shares only BOS
    return out;
}

GenerationRequest request(const std::vector<int>& ids, const GenerationConfig& c)
{
    GenerationRequest r;
    r.promptTokenIds = ids;
    r.config = c;
    return r;
}

TEST(GenerationEngine, stepsEqualLoneRunsAndReuseSharedPrefixes)
{
    TextGenerationModel model(demoModel());
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    EXPECT_EQ(engine.get(), GenerationEngine::create(model).get());  // one engine per model
    const std::vector<std::vector<int>> ps = prompts(model);
    for (const std::vector<int>& p : ps)
        ASSERT_LE(p.size(), 32u);
    std::vector<int> ids;
    std::map<int, String> streamed;
    for (size_t i = 0; i < ps.size(); i++)
    {
        GenerationRequest r = request(ps[i], config(i % 2 ? 0.8f : 0.f, 7 + (int)i));
        r.onPiece = [&](int id, const String& piece) {
            streamed[id] += piece;
            return true;
        };
        ids.push_back(engine->submit(r));
    }
    int steps = 0;
    while (engine->step())
        steps++;
    EXPECT_LT(steps, 40);  // batched: about maxNewTokens steps, not their sum
    // Reused: the longest prefix of whole pages that an earlier request holds (all are admitted
    // in the first step, in order), up to the prompt's last token.
    const int page = cacheOf(model)->getPageSize();
    std::vector<int> reusable(ps.size(), 0);
    for (size_t i = 1; i < ps.size(); i++)
        for (size_t j = 0; j < i; j++)
        {
            size_t common = 0;
            while (common < ps[i].size() && common < ps[j].size() && ps[i][common] == ps[j][common])
                common++;
            reusable[i] = std::max(reusable[i], (int)(std::min(common, ps[i].size() - 1) / page * page));
        }
    ASSERT_GT(reusable[1], 0);  // the shared prefix is at least a page
    ASSERT_EQ(reusable[5], 0);
    double promptTokens = 0, generated = 0, hits = 0;
    for (size_t i = 0; i < ps.size(); i++)
    {
        ASSERT_TRUE(engine->isDone(ids[i]));
        const GenerationResult r = engine->takeResult(ids[i]);
        SCOPED_TRACE(i);
        EXPECT_EQ(r.tokenIds, aloneIds(ps[i], config(i % 2 ? 0.8f : 0.f, 7 + (int)i)));
        EXPECT_EQ(r.text, streamed[ids[i]]);
        EXPECT_TRUE(r.finishReason == "length" || r.finishReason == "stop") << r.finishReason;
        EXPECT_EQ(r.finishReason == "length", r.generatedTokens == 24);
        EXPECT_EQ(r.promptTokens, (int)ps[i].size());
        EXPECT_EQ(r.cachedPromptTokens, reusable[i]);
        hits += reusable[i] > 0;
        promptTokens += r.promptTokens;
        generated += r.generatedTokens;
        EXPECT_THROW(engine->takeResult(ids[i]), cv::Exception);  // taken: forgotten
    }
    const GenerationEngineStats s = engine->getStats();
    EXPECT_EQ(s.promptTokens, promptTokens);
    EXPECT_EQ(s.generatedTokens, generated);
    EXPECT_EQ(s.prefilledTokens + s.cachedPromptTokens, promptTokens);
    EXPECT_EQ(s.cacheHits, hits);
    EXPECT_EQ(s.finishedRequests, 6);
    EXPECT_EQ(s.runningRequests + s.waitingRequests, 0);
    EXPECT_EQ(s.cachedSequences, 6);  // finished sequences stay for reuse
    EXPECT_GT(s.decodeTokensPerSecond, 0);

    // The same prompt again: all of it from the cache (its logits too), the same tokens.
    const int again = engine->submit(request(ps[1], config(0.8f, 8)));
    const GenerationResult r = engine->wait(again);
    EXPECT_EQ(r.cachedPromptTokens, (int)ps[1].size());
    EXPECT_EQ(r.tokenIds, aloneIds(ps[1], config(0.8f, 8)));
    engine->clearPrefixCache();
    EXPECT_EQ(engine->getStats().cachedSequences, 0);
    EXPECT_EQ(cacheOf(model)->getPagesInUse(), 0);
}

TEST(GenerationEngine, requestsArriveWhileRunOnAnotherThread)
{
    TextGenerationModel model(demoModel());
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    engine->setMaxRunningRequests(3);  // some wait for room
    std::thread loop([&] { engine->run(); });
    const std::vector<std::vector<int>> ps = prompts(model);
    std::vector<int> ids;
    for (size_t i = 0; i < ps.size(); i++)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
        ids.push_back(engine->submit(request(ps[i], config(0.f, 1))));
    }
    std::vector<GenerationResult> results;
    for (int id : ids)
        results.push_back(engine->wait(id));
    engine->stop();
    loop.join();
    for (size_t i = 0; i < ps.size(); i++)
        EXPECT_EQ(results[i].tokenIds, aloneIds(ps[i], config(0.f, 1))) << i;
}

TEST(GenerationEngine, oneRequestsFailureTouchesNoOther)
{
    TextGenerationModel model(demoModel());
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    const std::vector<std::vector<int>> ps = prompts(model);
    const int good = engine->submit(request(ps[0], config(0.f, 1)));
    GenerationRequest tooLong = request(std::vector<int>(100000, ps[0][1]), config(0.f, 1));
    const int bad1 = engine->submit(tooLong);
    GenerationRequest badGrammar = request(ps[1], config(0.f, 1));
    badGrammar.config.grammar = "root ::= [";
    const int bad2 = engine->submit(badGrammar);
    GenerationRequest twoForms = request(ps[1], config(0.f, 1));
    twoForms.prompt = "text as well";
    const int bad3 = engine->submit(twoForms);
    GenerationRequest noProjector;
    noProjector.prompt = "<__media__> what is it?";
    noProjector.images.push_back(Mat(8, 8, CV_8UC3, Scalar::all(0)));
    const int bad4 = engine->submit(noProjector);
    GenerationRequest throwing = request(ps[2], config(0.f, 1));
    throwing.onPiece = [](int, const String&) -> bool { throw std::runtime_error("the client went away"); };
    const int bad5 = engine->submit(throwing);
    const int good2 = engine->submit(request(ps[3], config(0.f, 1)));
    while (engine->step())
    {
    }
    struct Expected { int id; const char* words; };
    for (const Expected& e : {Expected{bad1, "context"}, Expected{bad2, "grammar"}, Expected{bad3, "exactly one"},
                              Expected{bad4, "mmproj"}, Expected{bad5, "the client went away"}})
    {
        const GenerationResult r = engine->takeResult(e.id);
        EXPECT_EQ(r.finishReason, "error") << e.id;
        EXPECT_NE(r.error.find(e.words), std::string::npos) << r.error;
    }
    EXPECT_EQ(engine->takeResult(good).tokenIds, aloneIds(ps[0], config(0.f, 1)));
    EXPECT_EQ(engine->takeResult(good2).tokenIds, aloneIds(ps[3], config(0.f, 1)));
    EXPECT_EQ(engine->getStats().finishedRequests, 7);
}

TEST(GenerationEngine, cancelEndsOneRequest)
{
    TextGenerationModel model(demoModel());
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    const std::vector<std::vector<int>> ps = prompts(model);
    const int a = engine->submit(request(ps[0], config(0.f, 1, 40)));
    const int b = engine->submit(request(ps[1], config(0.f, 1, 40)));
    const int waiting = engine->submit(request(ps[2], config(0.f, 1, 40)));
    EXPECT_TRUE(engine->cancel(waiting));
    for (int i = 0; i < 6; i++)
        engine->step();
    String streamed = engine->takeText(a);
    EXPECT_FALSE(streamed.empty());
    EXPECT_TRUE(engine->cancel(a));
    while (engine->step())
    {
    }
    EXPECT_FALSE(engine->cancel(a));  // ended already
    const GenerationResult ra = engine->takeResult(a);
    EXPECT_EQ(ra.finishReason, "cancelled");
    const std::vector<int> full = aloneIds(ps[0], config(0.f, 1, 40));
    ASSERT_LT(ra.tokenIds.size(), full.size());
    EXPECT_TRUE(std::equal(ra.tokenIds.begin(), ra.tokenIds.end(), full.begin()));
    EXPECT_EQ(ra.text.compare(0, streamed.size(), streamed), 0);
    EXPECT_EQ(engine->takeResult(waiting).finishReason, "cancelled");
    EXPECT_EQ(engine->takeResult(b).tokenIds, aloneIds(ps[1], config(0.f, 1, 40)));
}

// A budget that holds two or three requests at a time: the others wait, cached sequences are
// released for them, and every result is still its lone run's.
TEST(GenerationEngine, budgetAdmitsWhatFitsAndReleasesCachedSequences)
{
    TextGenerationModel model(demoModel());
    Ptr<KVCache> cache = cacheOf(model);
    // The longest request (30 prompt tokens and 24 new ones) takes 4 pages: two of them fit, not six.
    const int pagesPerRequest = (30 + 24 + cache->getPageSize() - 1) / cache->getPageSize();
    cache->setMemoryBudget(cache->getBytesPerToken() * cache->getPageSize() * (2 * pagesPerRequest + 1));
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    const std::vector<std::vector<int>> ps = prompts(model);
    std::vector<int> ids;
    for (const std::vector<int>& p : ps)
        ids.push_back(engine->submit(request(p, config(0.f, 1))));
    int most = 0;
    while (engine->step())
        most = std::max(most, engine->getStats().runningRequests);
    EXPECT_GE(most, 2);
    EXPECT_LE(most, 3);  // the others waited for room
    for (size_t i = 0; i < ps.size(); i++)
        EXPECT_EQ(engine->takeResult(ids[i]).tokenIds, aloneIds(ps[i], config(0.f, 1))) << i;
    // A request that can never fit ends with an error naming the budget.
    const int huge = engine->submit(request(ps[0], config(0.f, 1, 2000)));
    while (engine->step())
    {
    }
    const GenerationResult r = engine->takeResult(huge);
    EXPECT_EQ(r.finishReason, "error");
    EXPECT_NE(r.error.find("budget"), std::string::npos) << r.error;
}

// An engine destroyed with requests in the loop ends them: the model goes on alone, and the
// next engine of the model starts empty.
TEST(GenerationEngine, destroyedEngineLeavesNothingBehind)
{
    TextGenerationModel model(demoModel());
    const std::vector<std::vector<int>> ps = prompts(model);
    bool finished = false;
    {
        Ptr<GenerationEngine> engine = GenerationEngine::create(model);
        GenerationRequest r = request(ps[0], config(0.f, 1, 40));
        r.onFinish = [&](const GenerationResult& result) {
            finished = result.finishReason == "cancelled";
            throw std::runtime_error("a callback that fails changes nothing");
        };
        engine->submit(r);
        engine->submit(request(ps[1], config(0.f, 1, 40)));
        engine->step();
        // The draft model cannot change under requests that may draft with it.
        EXPECT_THROW(model.setDraftModel(demoModel()), cv::Exception);
    }
    EXPECT_TRUE(finished);
    EXPECT_EQ(model.generate(kPrefix, config(0.f, 1)), TextGenerationModel(demoModel()).generate(kPrefix, config(0.f, 1)));
    Ptr<GenerationEngine> again = GenerationEngine::create(model);
    EXPECT_EQ(again->getStats().runningRequests + again->getStats().waitingRequests, 0);
    EXPECT_NO_THROW(model.setDraftModel(demoModel()));
}

// A request past the context shifts it, in a batch as alone.
TEST(GenerationEngine, contextShiftInABatch)
{
    LLMLoadOptions options;
    options.contextLength = 48;
    TextGenerationModel model(demoModel(), options);
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    const std::vector<std::vector<int>> ps = prompts(model);
    GenerationConfig shifting = config(0.8f, 3, 80);
    shifting.contextShift = true;
    shifting.ignoreEndOfGeneration = true;
    const int a = engine->submit(request(ps[0], shifting));
    GenerationConfig ending = config(0.f, 1, 80);
    ending.ignoreEndOfGeneration = true;
    const int b = engine->submit(request(ps[5], ending));  // ends at the context
    while (engine->step())
    {
    }
    const GenerationResult ra = engine->takeResult(a), rb = engine->takeResult(b);
    EXPECT_EQ(ra.generatedTokens, 80);
    EXPECT_EQ(rb.finishReason, "length");
    EXPECT_EQ(rb.generatedTokens, 48 - (int)ps[5].size());  // the last one is never fed
    TextGenerationModel alone(demoModel(), options);
    alone.startWithTokenIds(ps[0], shifting);
    while (!alone.isDone())
        alone.next();
    EXPECT_EQ(ra.tokenIds, alone.getGeneratedTokenIds());
}

// The model's own calls are requests of the same loop: a generate() between engine requests
// gives what a fresh model gives.
TEST(GenerationEngine, modelCallsShareTheLoop)
{
    TextGenerationModel model(demoModel());
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    const std::vector<std::vector<int>> ps = prompts(model);
    const int id = engine->submit(request(ps[0], config(0.f, 1)));
    engine->step();  // admitted and running
    model.startWithTokenIds(ps[4], config(0.f, 1));
    while (!model.isDone())
        model.next();  // steps the engine's request too
    EXPECT_EQ(model.getGeneratedTokenIds(), aloneIds(ps[4], config(0.f, 1)));
    const GenerationResult r = engine->wait(id);
    EXPECT_EQ(r.tokenIds, aloneIds(ps[0], config(0.f, 1)));
    EXPECT_EQ(model.generate(kPrefix, config(0.f, 1)), TextGenerationModel(demoModel()).generate(kPrefix, config(0.f, 1)));

    // With run() on another thread stepping the loop too, generate() still gets all its text.
    std::thread loop([&] { engine->run(); });
    const int other = engine->submit(request(ps[2], config(0.f, 1, 60)));
    const String text = model.generate(kPrefix + std::string(" dog"), config(0.8f, 5, 40));
    EXPECT_EQ(engine->wait(other).tokenIds, aloneIds(ps[2], config(0.f, 1, 60)));
    engine->stop();
    loop.join();
    EXPECT_EQ(text, TextGenerationModel(demoModel()).generate(kPrefix + std::string(" dog"), config(0.8f, 5, 40)));
}

} // namespace
