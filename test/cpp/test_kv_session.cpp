// Sessions on disk: KVCache::saveSequence / loadSequence and TextGenerationModel::saveSession /
// loadSession. A loaded sequence continues with logits bit-identical to the run that was never
// interrupted (float32, float16 and 8-bit storage; a model with sliding windows); a file of
// another model (same shape with other weights, other parameters, another shape), a truncated,
// bit-flipped or extended file is refused with a cv::Exception and changes nothing.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "test_common.hpp"

#include <cstdio>
#include <fstream>
#include <tuple>

using namespace cv;
using namespace cv::dnn;

namespace {

std::string demoModel()
{
    return llm_test::projectRoot() + "/models/demo/demo-stories.gguf";
}

Mat runAlone(Net& net, const std::vector<int>& ids, int sequence)
{
    setLLMBatch(net, std::vector<int>(ids.size(), sequence));
    net.setInput(llm_test::idsToMat(ids));
    return net.forward().clone();
}

double maxAbsDiff(const Mat& a, const Mat& b)
{
    return norm(a.reshape(1, 1), b.reshape(1, 1), NORM_INF);
}

// 24 token ids below 512 (every model here has at least 512).
std::vector<int> promptIds(int n = 24)
{
    std::vector<int> ids{1};
    for (int i = 1; i < n; i++)
        ids.push_back(3 + (i * 37 + 11) % 500);
    return ids;
}

// Greedy steps after a prompt's logits on `sequence`: the logits of each step.
std::vector<Mat> continueGreedy(Net& net, Mat logits, int sequence, int steps)
{
    std::vector<Mat> out;
    for (int s = 0; s < steps; s++)
    {
        logits = runAlone(net, {llm_test::argmax(logits)}, sequence);
        out.push_back(logits);
    }
    return out;
}

Net readWithStorage(const std::string& model, int type)
{
    Net net = readNet(model);
    getLLMKVCache(net)->setStorageType(type);
    return net;
}

std::vector<char> readBytes(const std::string& path)
{
    return llm_test::readFileBytes(path);
}

void writeBytes(const std::string& path, const std::vector<char>& bytes, size_t size)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), (std::streamsize)size);
}

struct TempFile
{
    std::string path;
    explicit TempFile(const char* suffix = ".kvseq") : path(cv::tempfile(suffix)) {}
    ~TempFile() { std::remove(path.c_str()); }
};

typedef std::tuple<std::string, int> ModelAndType;
class KVSessionRoundTrip : public ::testing::TestWithParam<ModelAndType> {};

// Prefill, save, load into a fresh Net (another sequence id), continue: every step's logits
// equal those of the Net that went on without saving.
TEST_P(KVSessionRoundTrip, continuesBitExactly)
{
    const std::string model = std::get<0>(GetParam());
    const int type = std::get<1>(GetParam());
    const std::vector<int> prompt = promptIds();
    const int steps = 6;

    Net whole = readWithStorage(model, type);
    const Mat prefill = runAlone(whole, prompt, 0);
    const std::vector<Mat> expected = continueGreedy(whole, prefill, 0, steps);

    TempFile file;
    {
        Net saver = readWithStorage(model, type);
        ASSERT_EQ(maxAbsDiff(runAlone(saver, prompt, 0), prefill), 0.0);
        getLLMKVCache(saver)->saveSequence(0, file.path, prompt);
    }
    Net loaded = readWithStorage(model, type);
    Ptr<KVCache> cache = getLLMKVCache(loaded);
    std::vector<int> tokens;
    ASSERT_EQ(cache->loadSequence(file.path, 7, tokens), (int)prompt.size());
    EXPECT_EQ(tokens, prompt);
    EXPECT_EQ(cache->getSequenceIds(), std::vector<int>{7});
    EXPECT_EQ(cache->getSequenceLength(7), (int)prompt.size());
    const std::vector<Mat> got = continueGreedy(loaded, prefill, 7, steps);
    for (int s = 0; s < steps; s++)
        ASSERT_EQ(maxAbsDiff(got[s], expected[s]), 0.0) << "step " << s;

    // Saved without tokens: none come back; the keys and values do.
    TempFile bare;
    cache->saveSequence(7, bare.path);
    Net again = readWithStorage(model, type);
    EXPECT_EQ(getLLMKVCache(again)->loadSequence(bare.path, 0, tokens), (int)prompt.size() + steps);
    EXPECT_TRUE(tokens.empty());
    EXPECT_THROW(cache->saveSequence(7, bare.path, std::vector<int>{1, 2}), cv::Exception);  // not the sequence's count
    EXPECT_THROW(cache->saveSequence(3, bare.path), cv::Exception);                          // no such sequence
}

INSTANTIATE_TEST_CASE_P(Models, KVSessionRoundTrip, ::testing::Combine(
    ::testing::Values(demoModel(),
                      llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"),
                      llm_test::testModel("synthetic/synthetic_gemma2_Q8_0.gguf"),      // window 4: released pages
                      llm_test::testModel("synthetic/synthetic_gemma3_Q4_K_M.gguf")),   // local and global layers
    ::testing::Values(CV_32F, CV_16F, CV_8S)));

// A file of another storage type is converted: float16 -> float32 -> float16 is exact, so the
// file saved after the two conversions is the original byte for byte.
TEST(KVSession, otherStorageTypeIsConverted)
{
    const std::vector<int> prompt = promptIds();
    TempFile half, single, halfAgain;
    Net a = readWithStorage(demoModel(), CV_16F);
    runAlone(a, prompt, 0);
    getLLMKVCache(a)->saveSequence(0, half.path, prompt);

    std::vector<int> tokens;
    Net b = readWithStorage(demoModel(), CV_32F);
    ASSERT_EQ(getLLMKVCache(b)->loadSequence(half.path, 0, tokens), (int)prompt.size());
    getLLMKVCache(b)->saveSequence(0, single.path, tokens);
    EXPECT_GT(readBytes(single.path).size(), readBytes(half.path).size());
    Net c = readWithStorage(demoModel(), CV_16F);
    ASSERT_EQ(getLLMKVCache(c)->loadSequence(single.path, 0, tokens), (int)prompt.size());
    getLLMKVCache(c)->saveSequence(0, halfAgain.path, tokens);
    EXPECT_EQ(readBytes(halfAgain.path), readBytes(half.path));

    // 8-bit rows into a float32 cache: it continues (no exactness is claimed across types).
    TempFile q8;
    Net d = readWithStorage(demoModel(), CV_8S);
    const Mat logits = runAlone(d, prompt, 0);
    getLLMKVCache(d)->saveSequence(0, q8.path, prompt);
    Net e = readWithStorage(demoModel(), CV_32F);
    ASSERT_EQ(getLLMKVCache(e)->loadSequence(q8.path, 0, tokens), (int)prompt.size());
    EXPECT_EQ(getLLMKVCache(e)->getSequenceLength(0), (int)prompt.size());
    EXPECT_EQ(continueGreedy(e, logits, 0, 1)[0].cols, logits.cols);
}

// Loads that must be refused, and leave the target cache as it was.
void expectRefused(Net& net, const std::string& path, const std::string& fragment)
{
    Ptr<KVCache> cache = getLLMKVCache(net);
    const std::vector<int> ids = cache->getSequenceIds();
    std::vector<int> lengths;
    for (int id : ids)
        lengths.push_back(cache->getSequenceLength(id));
    const int pages = cache->getPagesInUse();
    std::vector<int> tokens{42};
    try
    {
        cache->loadSequence(path, 2, tokens);
        ADD_FAILURE() << "loaded " << path;
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.err.find(fragment), std::string::npos) << e.err;
    }
    EXPECT_EQ(cache->getSequenceIds(), ids);
    for (size_t i = 0; i < ids.size(); i++)
        EXPECT_EQ(cache->getSequenceLength(ids[i]), lengths[i]);
    EXPECT_EQ(cache->getPagesInUse(), pages);
    EXPECT_EQ(tokens, std::vector<int>{42});
}

std::string savedPrompt(const std::string& model, const std::string& path, int type = CV_32F)
{
    Net net = readWithStorage(model, type);
    const std::vector<int> prompt = promptIds();
    runAlone(net, prompt, 0);
    getLLMKVCache(net)->saveSequence(0, path, prompt);
    return path;
}

TEST(KVSession, anotherModelIsRefused)
{
    TempFile file;
    savedPrompt(llm_test::testModel("synthetic/synthetic_llama_Q8_0.gguf"), file.path);
    {
        // The same shape and tensors, other weights (seed 28): told apart by the weight sample.
        Net net = readNet(llm_test::testModel("synthetic/synthetic_llama_Q8_0_seed28.gguf"));
        runAlone(net, {1, 2, 3}, 2);  // the sequence a failed load must leave alone
        expectRefused(net, file.path, "same layers but other weights");
    }
    {
        // The same weights in another type: other tensor types.
        Net net = readNet(llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"));
        expectRefused(net, file.path, "its layers differ");
    }
    {
        // Another architecture and shape.
        Net net = readNet(demoModel());
        runAlone(net, {1, 2, 3}, 2);
        expectRefused(net, file.path, "another model");
    }
    {
        // The same weights, other RoPE parameters (linear scaling): other layer parameters.
        TempFile rope;
        savedPrompt(llm_test::testModel("synthetic/rope_llama_none.gguf"), rope.path);
        Net net = readNet(llm_test::testModel("synthetic/rope_llama_linear.gguf"));
        expectRefused(net, rope.path, "its layers differ");
    }
    {
        // The same model loads.
        Net net = readNet(llm_test::testModel("synthetic/synthetic_llama_Q8_0.gguf"));
        std::vector<int> tokens;
        EXPECT_EQ(getLLMKVCache(net)->loadSequence(file.path, 0, tokens), (int)promptIds().size());
    }
}

// The context length chosen at load is part of the model (rotary tables and scaling depend on
// it); the memory budget must hold the pages.
TEST(KVSession, otherContextOrTooSmallBudgetIsRefused)
{
    TempFile file;
    savedPrompt(demoModel(), file.path);
    {
        TextGenerationModel other(demoModel(), 256);
        Net net = other.getNetwork();
        expectRefused(net, file.path, "this one: demo-stories.gguf (context 256,");
    }
    Net net = readNet(demoModel());
    Ptr<KVCache> cache = getLLMKVCache(net);
    cache->setMemoryBudget(cache->getBytesPerToken() * cache->getPageSize());  // one page
    expectRefused(net, file.path, "memory budget");
}

// Every truncation and many single-bit flips are refused; so are trailing bytes and a newer version.
TEST(KVSession, damagedFilesAreRefused)
{
    TempFile file, damaged;
    savedPrompt(demoModel(), file.path, CV_8S);
    const std::vector<char> bytes = readBytes(file.path);
    ASSERT_GT(bytes.size(), 1000u);
    Net net = readWithStorage(demoModel(), CV_8S);
    runAlone(net, {1, 2, 3}, 2);
    std::vector<int> tokens;
    for (size_t size = 0; size < bytes.size(); size += size < 400 ? 1 : 1 + bytes.size() / 300)
    {
        writeBytes(damaged.path, bytes, size);
        SCOPED_TRACE(size);
        expectRefused(net, damaged.path, size < 8 ? "not a KV sequence file" : "");
    }
    for (size_t pos = 0; pos < bytes.size(); pos += pos < 400 ? 1 : 1 + bytes.size() / 500)
    {
        std::vector<char> flipped = bytes;
        flipped[pos] ^= (char)(1 << (pos % 8));
        writeBytes(damaged.path, flipped, flipped.size());
        SCOPED_TRACE(pos);
        expectRefused(net, damaged.path, "");
    }
    std::vector<char> longer = bytes;
    longer.push_back(0);
    writeBytes(damaged.path, longer, longer.size());
    expectRefused(net, damaged.path, "after its end");
    std::vector<char> newer = bytes;
    newer[8] = 3;  // the version, after the 8-byte magic
    writeBytes(damaged.path, newer, newer.size());
    expectRefused(net, damaged.path, "format version 3");
    expectRefused(net, damaged.path + ".missing", "cannot be opened");
    // The undamaged file still loads.
    EXPECT_EQ(getLLMKVCache(net)->loadSequence(file.path, 2, tokens), (int)promptIds().size());
}

// The file is replaced, never written in place: a failed save leaves the old one.
TEST(KVSession, filesAreWrittenAtomically)
{
    TempFile file;
    savedPrompt(demoModel(), file.path);
    const std::vector<char> before = readBytes(file.path);
    Net net = readNet(demoModel());
    runAlone(net, promptIds(5), 0);
    EXPECT_THROW(getLLMKVCache(net)->saveSequence(0, file.path + "/no/such/folder"), cv::Exception);
    EXPECT_EQ(readBytes(file.path), before);
    getLLMKVCache(net)->saveSequence(0, file.path);  // over the old file
    EXPECT_LT(readBytes(file.path).size(), before.size());
}

GenerationConfig greedy(int n)
{
    GenerationConfig c;
    c.maxNewTokens = n;
    return c;
}

const char* const kPrompt = "Once upon a time, there was a little girl named Lily.";

// A session restored in another model behaves as the model that saved it would have: the same
// text, the same number of prompt tokens processed.
TEST(KVSession, textGenerationSessionContinuesAsTheOriginal)
{
    TempFile file;
    TextGenerationModel original(demoModel());
    EXPECT_THROW(original.saveSession(file.path), cv::Exception);  // nothing fed yet
    const String first = original.generate(kPrompt, greedy(10));
    original.saveSession(file.path);
    const size_t fed = original.getPromptTokenIds().size() + original.getGeneratedTokenIds().size() - 1;

    TextGenerationModel restored(demoModel());
    ASSERT_EQ(restored.loadSession(file.path), (int)fed);
    const String longer = String(kPrompt) + first + " One day";
    const String expected = original.generate(longer, greedy(12));
    EXPECT_EQ(restored.generate(longer, greedy(12)), expected);
    EXPECT_EQ(restored.getLastPrefillTokenCount(), original.getLastPrefillTokenCount());
    EXPECT_LT(restored.getLastPrefillTokenCount(), (int)restored.getPromptTokenIds().size() - 10);
    TextGenerationModel fresh(demoModel());
    EXPECT_EQ(fresh.generate(longer, greedy(12)), expected);
    EXPECT_EQ(fresh.getLastPrefillTokenCount(), (int)fresh.getPromptTokenIds().size());

    // A file that cannot be used leaves the session as it was.
    TempFile other;
    savedPrompt(llm_test::testModel("synthetic/synthetic_llama_Q8_0.gguf"), other.path);
    Net restoredNet = restored.getNetwork();
    const int length = getLLMSequenceLength(restoredNet);
    EXPECT_THROW(restored.loadSession(other.path), cv::Exception);  // another model
    {
        std::vector<char> bytes = readBytes(file.path);
        bytes.resize(bytes.size() / 2);
        writeBytes(other.path, bytes, bytes.size());
    }
    EXPECT_THROW(restored.loadSession(other.path), cv::Exception);  // truncated
    EXPECT_EQ(getLLMSequenceLength(restoredNet), length);
    EXPECT_EQ(restored.generate(longer, greedy(12)), expected);
    EXPECT_EQ(restored.getLastPrefillTokenCount(), 1);  // all but the last prompt token were still there

    // A sequence file without tokens is not a session.
    Net net = readNet(demoModel());
    runAlone(net, promptIds(), 0);
    getLLMKVCache(net)->saveSequence(0, other.path);
    EXPECT_THROW(restored.loadSession(other.path), cv::Exception);
}

// The conversation is part of the session: the next chat turn is the original's next turn.
TEST(KVSession, chatConversationIsRestored)
{
    TempFile file;
    TextGenerationModel original(demoModel());
    original.setChatTemplate("zephyr");
    original.resetConversation("You tell stories.");
    original.chat("Tell me about Lily.", greedy(12));
    original.saveSession(file.path);

    TextGenerationModel restored(demoModel());
    restored.setChatTemplate("zephyr");
    restored.loadSession(file.path);
    const String expected = original.chat("And then?", greedy(12));
    EXPECT_EQ(restored.chat("And then?", greedy(12)), expected);
    EXPECT_EQ(restored.getLastPrefillTokenCount(), original.getLastPrefillTokenCount());
    EXPECT_LT(restored.getLastPrefillTokenCount(), (int)restored.getPromptTokenIds().size() / 2);
}

// A loaded sequence's window layers hold only the rows the file saved (from the first position
// its next token attended to); the earlier slots of that first page are zeros. A prompt that
// resumes inside that page must be fed again, not continued over the zeros: across prompt
// lengths (every offset in a page), the restored model generates what a fresh one does.
TEST(KVSession, loadedWindowLayersAreNotResumedBeforeWhatTheyHold)
{
    const std::string model = llm_test::testModel("synthetic/synthetic_gemma2_Q8_0.gguf");  // window 4
    TempFile file;
    GenerationConfig config = greedy(6);
    config.ignoreEndOfGeneration = true;
    for (int n = 6; n < 30; n++)
    {
        const std::vector<int> prompt = promptIds(n);
        auto run = [&](TextGenerationModel& m) {
            m.startWithTokenIds(prompt, config);
            while (!m.isDone())
                m.next();
            return m.getGeneratedTokenIds();
        };
        TextGenerationModel fresh(model), original(model), restored(model);
        const std::vector<int> expected = run(fresh);
        ASSERT_EQ(run(original), expected);
        original.saveSession(file.path);
        restored.loadSession(file.path);
        EXPECT_EQ(run(restored), expected) << n << " prompt tokens";
    }
}

} // namespace
