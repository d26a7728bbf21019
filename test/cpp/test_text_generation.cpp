// TextGenerationModel: greedy text against llama.cpp, streaming, stop conditions, sampling,
// the step API, batches, KV-cache reuse across prompts and chat turns, and wrong input.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <iostream>
#include <thread>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

const std::string kPrompt = "Once upon a time";
// llama.cpp's greedy continuation (../shared/testdata/reference/stories260K.nlc.json).
const std::string kLlamaCppText = ", there was a little girl named Lily. She loved to play";

std::string stories()
{
    return llm_test::sharedTestData("stories260K.gguf");
}

GenerationConfig greedy(int n)
{
    GenerationConfig c;
    c.maxNewTokens = n;
    return c;
}

bool isWholeUtf8(const std::string& s)
{
    for (size_t i = 0; i < s.size();)
    {
        const unsigned char c = s[i];
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > s.size())
            return false;
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)s[i + k] >> 6) != 2)
                return false;
        i += len;
    }
    return true;
}

TEST(TextGeneration, greedyTextMatchesLlamaCpp)
{
    TextGenerationModel model(stories());
    EXPECT_EQ(model.generate(kPrompt, greedy(16)), kLlamaCppText);
    EXPECT_EQ(model.getPromptTokenIds(), (std::vector<int>{1, 403, 407, 261, 378}));
    EXPECT_EQ(model.getGeneratedTokenIds().size(), 16u);
}

TEST(TextGeneration, fromANet)
{
    TextGenerationModel model(readNet(stories()));
    EXPECT_EQ(model.generate(kPrompt, greedy(16)), kLlamaCppText);
}

TEST(TextGeneration, streamingPiecesAreWholeCharactersAndAddUp)
{
    // The random-weight model emits Cyrillic, Thai and byte tokens: pieces must still be whole
    // UTF-8 characters.
    TextGenerationModel model(llm_test::sharedTestData("llama-2-tiny-random.gguf"));
    std::string joined;
    int pieces = 0;
    const String text = model.generate(kPrompt, greedy(24), [&](const String& piece) {
        EXPECT_TRUE(isWholeUtf8(piece)) << piece;
        joined += piece;
        pieces++;
        return true;
    });
    EXPECT_EQ(joined, text);
    EXPECT_GT(pieces, 10);
    EXPECT_TRUE(isWholeUtf8(text));
    EXPECT_EQ(text, model.generate(kPrompt, greedy(24)));
}

TEST(TextGeneration, callbackCancels)
{
    TextGenerationModel model(stories());
    int pieces = 0;
    const String text = model.generate(kPrompt, greedy(16), [&](const String&) { return ++pieces < 3; });
    EXPECT_EQ(pieces, 3);
    EXPECT_LT(text.size(), kLlamaCppText.size());
    EXPECT_EQ(kLlamaCppText.compare(0, text.size(), text), 0);
    EXPECT_TRUE(model.isDone());
}

TEST(TextGeneration, stopStringEndsBeforeIt)
{
    TextGenerationModel model(stories());
    GenerationConfig c = greedy(16);
    c.stopStrings = {"Lily"};
    EXPECT_EQ(model.generate(kPrompt, c), ", there was a little girl named ");
}

TEST(TextGeneration, stopTokenAndLimit)
{
    TextGenerationModel model(stories());
    GenerationConfig c = greedy(16);
    c.stopTokenIds = {298};  // " girl", the sixth greedy token
    EXPECT_EQ(model.generate(kPrompt, c), ", there was a little");
    EXPECT_EQ(model.generate(kPrompt, greedy(0)), "");
}

TEST(TextGeneration, stepApiEqualsGenerate)
{
    TextGenerationModel model(stories());
    model.start(kPrompt, greedy(16));
    std::string text;
    while (!model.isDone())
        text += model.next();
    EXPECT_EQ(text, kLlamaCppText);
    EXPECT_EQ(model.next(), "");
}

TEST(TextGeneration, samplingIsSeededAndTopK1IsGreedy)
{
    TextGenerationModel model(stories());
    GenerationConfig c = greedy(24);
    c.temperature = 1.0f;
    c.topP = 0.95f;
    c.seed = 7;
    const String a = model.generate(kPrompt, c), b = model.generate(kPrompt, c);
    EXPECT_EQ(a, b);
    bool anyDifferent = false;
    for (int seed = 8; seed < 12; seed++)
    {
        c.seed = seed;
        anyDifferent |= model.generate(kPrompt, c) != a;
    }
    EXPECT_TRUE(anyDifferent);
    c.topK = 1;
    c.topP = 1.f;
    c.maxNewTokens = 16;
    EXPECT_EQ(model.generate(kPrompt, c), kLlamaCppText);
}

TEST(TextGeneration, batchEqualsOneByOne)
{
    TextGenerationModel model(stories());
    const std::vector<String> prompts = {kPrompt, "The cat", "Tom and Sue went"};
    const std::vector<String> out = model.generateBatch(prompts, greedy(12));
    ASSERT_EQ(out.size(), 3u);
    TextGenerationModel fresh(stories());
    for (size_t i = 0; i < prompts.size(); i++)
        EXPECT_EQ(out[i], fresh.generate(prompts[i], greedy(12))) << prompts[i];
}

// A prompt that extends what the model already holds reuses the cache: the results must be
// those of a fresh model.
TEST(TextGeneration, cacheReuseGivesTheSameText)
{
    TextGenerationModel model(stories());
    model.generate(kPrompt, greedy(8));
    const String longer = kPrompt + kLlamaCppText + " One day";
    const String reused = model.generate(longer, greedy(12));
    TextGenerationModel fresh(stories());
    EXPECT_EQ(reused, fresh.generate(longer, greedy(12)));
    EXPECT_EQ(model.generate(kPrompt, greedy(16)), kLlamaCppText);  // diverging prompt rewinds
}

TEST(TextGeneration, chatTurnsReuseTheConversation)
{
    TextGenerationModel model(stories());
    EXPECT_THROW(model.chat("Hi"), cv::Exception);  // stories260K has no chat template
    model.setChatTemplate("zephyr");
    model.resetConversation("You tell stories.");
    const String first = model.chat("Tell me about Lily.", greedy(12));
    const String second = model.chat("And then?", greedy(12));

    // The same second turn computed from scratch.
    TextGenerationModel fresh(stories());
    fresh.setChatTemplate("zephyr");
    const String prompt = fresh.applyChatTemplate({"system", "user", "assistant", "user"},
                                                  {"You tell stories.", "Tell me about Lily.", first, "And then?"});
    const std::vector<int> ids = fresh.getTokenizer()->encode(prompt, true, true);
    fresh.startWithTokenIds(ids, greedy(12));
    std::string expected;
    while (!fresh.isDone())
        expected += fresh.next();
    EXPECT_EQ(second, expected);
}

// Chat reuses the KV cache: the second turn runs through the Net only the tokens the cache does
// not hold yet. The expected count comes from the template and the tokenizer: the second
// turn's prompt minus its longest prefix that the cache holds (the first turn's prompt and
// reply). The pages the first turn wrote are also watched through a fork that shares them: a
// second turn that rewrote them (ran the whole conversation again) would leave none shared.
TEST(TextGeneration, chatTurnRunsOnlyItsNewTokensThroughTheNet)
{
    TextGenerationModel model(stories());
    model.setChatTemplate("zephyr");
    model.resetConversation("You tell stories.");
    Ptr<Tokenizer> tokenizer = model.getTokenizer();
    Net net = model.getNetwork();
    Ptr<KVCache> cache = getLLMKVCache(net);

    const String first = model.chat("Tell me about Lily.", greedy(24));
    const std::vector<int> turn1 = tokenizer->encode(
        model.applyChatTemplate({"system", "user"}, {"You tell stories.", "Tell me about Lily."}), true, true);
    EXPECT_EQ(model.getPromptTokenIds(), turn1);
    EXPECT_EQ(model.getLastPrefillTokenCount(), (int)turn1.size());  // nothing was cached before

    // What the cache holds now: a prefix of the first turn's prompt and reply.
    std::vector<int> cached = turn1;
    const std::vector<int> reply = model.getGeneratedTokenIds();
    cached.insert(cached.end(), reply.begin(), reply.end());
    const int held = cache->getSequenceLength(0);
    ASSERT_GE(held, (int)turn1.size());
    ASSERT_LE(held, (int)cached.size());
    cached.resize(held);
    cache->forkSequence(0, 1);  // shares the first turn's pages

    const String second = model.chat("And then?", greedy(12));
    const std::vector<int> turn2 = tokenizer->encode(
        model.applyChatTemplate({"system", "user", "assistant", "user"},
                                {"You tell stories.", "Tell me about Lily.", first, "And then?"}), true, true);
    EXPECT_EQ(model.getPromptTokenIds(), turn2);
    size_t reused = 0;
    while (reused < cached.size() && reused + 1 < turn2.size() && cached[reused] == turn2[reused])
        reused++;
    ASSERT_GT(reused, turn1.size()) << "the scenario should reuse the first turn and part of its reply";
    std::cout << "second turn: " << turn2.size() << " prompt tokens, " << reused << " of them cached; "
              << model.getLastPrefillTokenCount() << " run through the Net" << std::endl;
    EXPECT_EQ(model.getLastPrefillTokenCount(), (int)(turn2.size() - reused));
    const int page = cache->getPageSize();
    ASSERT_GE((int)reused, 2 * page) << "too short to watch whole pages";
    EXPECT_GE(cache->getPagesShared(), (int)reused / page);
}

TEST(TextGeneration, wrongInputIsAnError)
{
    TextGenerationModel model(stories());
    GenerationConfig c = greedy(4);
    c.temperature = 1.f;
    c.topP = 0.f;
    EXPECT_THROW(model.generate(kPrompt, c), cv::Exception);
    EXPECT_THROW(model.startWithTokenIds({1, 512}, greedy(4)), cv::Exception);
    EXPECT_THROW(model.startWithTokenIds({}, greedy(4)), cv::Exception);
    EXPECT_THROW(model.setChatTemplate("no-such-template"), cv::Exception);
    EXPECT_THROW(TextGenerationModel(llm_test::sharedTestData("no-such-model.gguf")), cv::Exception);
    TextGenerationModel empty;
    EXPECT_THROW(empty.generate(kPrompt), cv::Exception);
    Net notAnLLM;
    EXPECT_THROW(TextGenerationModel{notAnLLM}, cv::Exception);
}

} // namespace

namespace {

// Two models in two threads run independently; a second thread calling into a model that is
// busy is refused with an error rather than corrupting its state.
TEST(TextGenerationThreads, separateModelsRunInParallelOneModelRefusesConcurrentCalls)
{
    std::string a, b;
    std::thread t1([&] { a = TextGenerationModel(stories()).generate(kPrompt, greedy(16)); });
    std::thread t2([&] { b = TextGenerationModel(stories()).generate(kPrompt, greedy(16)); });
    t1.join();
    t2.join();
    EXPECT_EQ(a, kLlamaCppText);
    EXPECT_EQ(b, kLlamaCppText);

    TextGenerationModel model(stories());
    bool refused = false;
    const String text = model.generate(kPrompt, greedy(16), [&](const String&) {
        std::thread other([&] {
            try
            {
                model.generate("The dog", greedy(4));
            }
            catch (const cv::Exception& e)
            {
                refused = e.msg.find("two threads") != std::string::npos;
            }
        });
        other.join();
        return true;
    });
    EXPECT_TRUE(refused);
    EXPECT_EQ(text, kLlamaCppText);  // the running generation was not disturbed
}

} // namespace
