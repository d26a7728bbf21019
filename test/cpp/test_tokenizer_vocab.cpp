// Tokenizers against llama.cpp: its tokenizer test vectors (ggml-vocab-*.gguf with .inp/.out,
// see ../shared/testdata/MANIFEST.md), plus decode round trips, special tokens, hostile input
// and inconsistent vocabularies (small GGUF files written by the test itself).

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "test_common.hpp"
#include "vocab_test_vectors.hpp"
#include "../../modules/dnn/src/llm/tokenizer/tokenizer.hpp"

using namespace cv;
using cv::dnn::GGUFFile;
using cv::dnn::llm::Tokenizer;

namespace {

// The vocabularies that come with test vectors.
const char* const kVocabularies[] = {
    "llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2", "falcon", "mpt", "starcoder", "refact",
    "deepseek-llm", "deepseek-coder", "bert-bge",
};



std::shared_ptr<Tokenizer> loadTokenizer(const std::string& name)
{
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::vocabPath(name));
    return Tokenizer::fromGGUF(*file);
}




bool contains(const std::vector<int>& ids, int id)
{
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// ---------------------------------------------------------------------------------------------
// llama.cpp's test vectors

class TokenizerVectors : public testing::TestWithParam<std::string> {};

TEST_P(TokenizerVectors, match_llama_cpp)
{
    const std::string name = GetParam();
    std::shared_ptr<Tokenizer> tokenizer = loadTokenizer(name);
    const std::vector<std::string> inputs = llm_test::readVocabInputs(name);
    const std::vector<std::vector<int>> expected = llm_test::readVocabExpectedIds(name);
    ASSERT_FALSE(inputs.empty());
    ASSERT_GE(expected.size(), inputs.size()) << name << ": fewer .out lines than inputs";

    int passed = 0, failed = 0;
    for (size_t i = 0; i < inputs.size(); i++)
    {
        const std::vector<int> ids = tokenizer->encode(inputs[i], /*addSpecial=*/false, /*parseSpecial=*/false);
        if (ids == expected[i])
        {
            passed++;
            continue;
        }
        failed++;
        ADD_FAILURE() << name << " input " << i << " '" << inputs[i] << "'\n  expected " << llm_test::joinIds(expected[i])
                      << "\n  got      " << llm_test::joinIds(ids);
    }
    std::cout << name << ": " << passed << " passed, " << failed << " failed" << std::endl;
    EXPECT_EQ(0, failed);
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TokenizerVectors,
                        testing::ValuesIn(std::vector<std::string>(std::begin(kVocabularies), std::end(kVocabularies))));

TEST(TokenizerVectors, every_vector_file_is_checked)
{
    std::vector<String> found;
    cv::glob(llm_test::sharedTestData("llama.cpp-vocab/ggml-vocab-*.gguf.inp"), found);
    ASSERT_FALSE(found.empty()) << "no test vectors under " << llm_test::sharedTestData("llama.cpp-vocab");
    std::set<std::string> listed(std::begin(kVocabularies), std::end(kVocabularies));
    for (const String& path : found)
    {
        const std::string file = path.substr(path.find_last_of('/') + 1);
        const std::string name = file.substr(strlen("ggml-vocab-"), file.size() - strlen("ggml-vocab-.gguf.inp"));
        EXPECT_TRUE(listed.count(name)) << file << " has test vectors but is not in kVocabularies";
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

// SentencePiece with byte fallback and byte-level BPE lose nothing (BERT lowercases).
class TokenizerRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(TokenizerRoundTrip, decode_restores_the_text)
{
    const std::string name = GetParam();
    std::shared_ptr<Tokenizer> tokenizer = loadTokenizer(name);
    for (const std::string& text : llm_test::readVocabInputs(name))
    {
        EXPECT_EQ(text, tokenizer->decode(tokenizer->encode(text, false, false), false)) << name;
        // A control token written in the text is parsed, and comes back when rendered.
        const std::string withSpecial = tokenizer->tokenText(tokenizer->bosId()) + text;
        EXPECT_EQ(withSpecial, tokenizer->decode(tokenizer->encode(withSpecial, false, true), true)) << name;
    }
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TokenizerRoundTrip,
                        testing::Values("llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2", "falcon", "mpt",
                                        "starcoder", "refact", "deepseek-llm", "deepseek-coder"));

TEST(Tokenizer, pieces_are_bytes)
{
    std::shared_ptr<Tokenizer> spm = loadTokenizer("llama-spm");
    EXPECT_EQ(" Hello", spm->tokenToPiece(15043, false));  // "▁Hello"
    EXPECT_EQ("\n", spm->tokenToPiece(13, false));         // "<0x0A>"
    EXPECT_EQ("", spm->tokenToPiece(spm->bosId(), false));
    EXPECT_EQ("<s>", spm->tokenToPiece(spm->bosId(), true));
    EXPECT_EQ("\xE2\x96\x81Hello", spm->tokenText(15043));

    std::shared_ptr<Tokenizer> gpt2 = loadTokenizer("gpt-2");
    const std::vector<int> ids = gpt2->encode(" world\n", false, false);
    std::string joined;
    for (int id : ids)
        joined += gpt2->tokenToPiece(id, false);
    EXPECT_EQ(" world\n", joined);
    EXPECT_EQ("\xC4\xA0world", gpt2->tokenText(995));  // "Ġworld"

    std::shared_ptr<Tokenizer> bert = loadTokenizer("bert-bge");
    EXPECT_EQ("hello world", bert->decode(bert->encode("Hello World", true, false), false));
}

// ---------------------------------------------------------------------------------------------
// Special tokens (expected ids from llama.cpp through node-llama-cpp 3.21.1)

TEST(Tokenizer, special_tokens_are_parsed_only_on_request)
{
    std::shared_ptr<Tokenizer> spm = loadTokenizer("llama-spm");
    EXPECT_EQ(std::vector<int>({1, 15043, 2, 29871, 3186}), spm->encode("<s>Hello</s> world", false, true));
    EXPECT_EQ(std::vector<int>({529, 29879, 29958, 10994, 829, 29879, 29958, 3186}),
              spm->encode("<s>Hello</s> world", false, false));

    std::shared_ptr<Tokenizer> gpt2 = loadTokenizer("gpt-2");
    EXPECT_EQ(std::vector<int>({64, 50256, 65}), gpt2->encode("a<|endoftext|>b", false, true));
    EXPECT_EQ(std::vector<int>({64, 27, 91, 437, 1659, 5239, 91, 29, 65}), gpt2->encode("a<|endoftext|>b", false, false));

    // Phi-3's chat tokens swallow the newline after them.
    std::shared_ptr<Tokenizer> phi3 = loadTokenizer("phi-3");
    const std::string chat = "<|user|>\nHi there<|end|>\n<|assistant|>\n";
    EXPECT_EQ(std::vector<int>({32010, 6324, 727, 32007, 32001}), phi3->encode(chat, false, true));
    EXPECT_EQ(21u, phi3->encode(chat, false, false).size());

    // User-defined tokens are matched even without parseSpecial ("ü" is one in deepseek-coder).
    std::shared_ptr<Tokenizer> coder = loadTokenizer("deepseek-coder");
    EXPECT_TRUE(contains(coder->encode("F\xC3\xBChrer", false, false), 32009));
}

TEST(Tokenizer, bos_eos_and_separators_follow_the_model)
{
    std::shared_ptr<Tokenizer> spm = loadTokenizer("llama-spm");
    EXPECT_TRUE(spm->addBos());
    EXPECT_FALSE(spm->addEos());
    EXPECT_EQ(std::vector<int>({1, 15043}), spm->encode("Hello", true, false));
    EXPECT_EQ(std::vector<int>({1}), spm->encode("", true, false));
    EXPECT_TRUE(spm->encode("", false, false).empty());

    std::shared_ptr<Tokenizer> gpt2 = loadTokenizer("gpt-2");  // no add_bos_token key: no BOS
    EXPECT_FALSE(gpt2->addBos());
    EXPECT_EQ(gpt2->encode("Hello", false, false), gpt2->encode("Hello", true, false));

    std::shared_ptr<Tokenizer> deepseek = loadTokenizer("deepseek-llm");  // add_bos_token = true
    EXPECT_EQ(std::vector<int>({100000, 17464}), deepseek->encode("Hello", true, false));

    std::shared_ptr<Tokenizer> bert = loadTokenizer("bert-bge");  // [CLS] ... [SEP]
    EXPECT_EQ(std::vector<int>({101, 7592, 102}), bert->encode("Hello", true, false));
    EXPECT_EQ(std::vector<int>({101, 7592, 102}), bert->encode("[CLS] Hello [SEP]", false, true));
}

TEST(Tokenizer, end_of_generation_tokens)
{
    std::shared_ptr<Tokenizer> spm = loadTokenizer("llama-spm");
    EXPECT_TRUE(spm->isEndOfGeneration(2));
    EXPECT_FALSE(spm->isEndOfGeneration(1));
    EXPECT_FALSE(spm->isEndOfGeneration(15043));

    std::shared_ptr<Tokenizer> phi3 = loadTokenizer("phi-3");
    EXPECT_TRUE(phi3->isEndOfGeneration(32000));  // <|endoftext|>, the EOS
    EXPECT_TRUE(phi3->isEndOfGeneration(32007));  // <|end|>, the end of a turn
    EXPECT_FALSE(phi3->isEndOfGeneration(32001)); // <|assistant|>

    std::shared_ptr<Tokenizer> gpt2 = loadTokenizer("gpt-2");
    EXPECT_TRUE(gpt2->isEndOfGeneration(50256));
}

// ---------------------------------------------------------------------------------------------
// Hostile input

TEST(Tokenizer, out_of_range_ids_are_errors)
{
    for (const char* name : {"llama-spm", "gpt-2", "bert-bge"})
    {
        std::shared_ptr<Tokenizer> tokenizer = loadTokenizer(name);
        const int n = tokenizer->vocabSize();
        EXPECT_THROW(tokenizer->tokenToPiece(-1, false), cv::Exception) << name;
        EXPECT_THROW(tokenizer->tokenToPiece(n, true), cv::Exception) << name;
        EXPECT_THROW(tokenizer->decode({0, n}, false), cv::Exception) << name;
        EXPECT_THROW(tokenizer->decode({INT_MIN}, false), cv::Exception) << name;
        EXPECT_THROW(tokenizer->tokenText(n), cv::Exception) << name;
        EXPECT_NO_THROW(tokenizer->decode({n - 1}, true)) << name;
    }
}

TEST(Tokenizer, any_bytes_can_be_encoded)
{
    std::string malformed = "ok \xFF\xFE \xC0\x80 \xE2\x82 \x80\x80 \xED\xA0\x80 \xF4\x90\x80\x80 \xF0\x9F\x98";
    malformed += std::string("\0nul", 4);
    std::string random(4096, ' ');
    cv::RNG rng(12345);
    for (char& c : random)
        c = (char)(int)rng.uniform(0, 256);

    for (const char* name : kVocabularies)
    {
        std::shared_ptr<Tokenizer> tokenizer = loadTokenizer(name);
        for (const std::string& text : {malformed, random})
        {
            for (bool parseSpecial : {false, true})
            {
                std::vector<int> ids;
                ASSERT_NO_THROW(ids = tokenizer->encode(text, true, parseSpecial)) << name;
                for (int id : ids)
                    ASSERT_TRUE(id >= 0 && id < tokenizer->vocabSize()) << name << ": id " << id;
                EXPECT_NO_THROW(tokenizer->decode(ids, true)) << name;
            }
        }
    }
    // Byte fallback keeps every byte.
    std::shared_ptr<Tokenizer> spm = loadTokenizer("llama-spm");
    EXPECT_EQ(malformed, spm->decode(spm->encode(malformed, false, false), false));
    EXPECT_EQ(random, spm->decode(spm->encode(random, false, false), false));
    // Byte-level BPE sees malformed bytes as U+FFFD, like llama.cpp.
    std::shared_ptr<Tokenizer> gpt2 = loadTokenizer("gpt-2");
    EXPECT_EQ("a\xEF\xBF\xBD" "b", gpt2->decode(gpt2->encode("a\xFF" "b", false, false), false));
}

// CPU time of the calling thread (the tokenizers run on it alone): other processes of a busy
// machine take turns on the cores without adding to it, as they would to wall-clock time.
double threadCpuMs()
{
#ifdef CLOCK_THREAD_CPUTIME_ID
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
#else
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

// Encoding time grows linearly with the text, so that a long prompt cannot stall a tokenizer.
// No wall-clock limit, which a loaded machine could trip: the CPU time for 8 times the text
// is compared with the CPU time for the text, each the best of 3 runs taken in turn. Linear
// time gives a ratio near 8 (measured on a Xeon: 5 to 14, also with four busy processes on two
// cores), quadratic time near 64 (more where the longer text also leaves a cache); the bound 40
// lies between. SentencePiece's best-first merges take n log n, and on an AMD EPYC (Zen 5,
// 1 MB L2) their queue of 160,000 candidates (3.8 MB) leaves the L2 cache where 20,000 fit:
// llama-spm's run of letters measured 20-23 alone and 27.6 beside a parallel ctest. Texts that
// take under kFloorMs count as kFloorMs, so that timer noise on very fast runs cannot make a
// ratio.
TEST(Tokenizer, encodingTimeGrowsLinearlyWithTheText)
{
    const double kGrowth = 8, kMaxRatio = 40, kFloorMs = 0.2;
    std::string prose;
    for (const std::string& text : llm_test::readVocabInputs("gpt-2"))
        prose += text + "\n";
    while (prose.size() < 8192)
        prose += prose;
    const std::string letters(20000, 'a'), digits(20000, '7'), spaces(20000, ' ');
    auto repeated = [&](const std::string& text) {
        std::string out;
        for (int i = 0; i < (int)kGrowth; i++)
            out += text;
        return out;
    };
    for (const char* name : kVocabularies)
    {
        std::shared_ptr<Tokenizer> tokenizer = loadTokenizer(name);
        for (const std::string& text : {prose, letters, digits, spaces})
        {
            const std::string longer = repeated(text);
            auto encodeMs = [&](const std::string& t) {
                const double start = threadCpuMs();
                const std::vector<int> ids = tokenizer->encode(t, false, true);
                const double ms = threadCpuMs() - start;
                EXPECT_TRUE(!ids.empty() || text == spaces) << name;
                return ms;
            };
            double shortMs = 1e30, longMs = 1e30;
            for (int run = 0; run < 3; run++)
            {
                shortMs = std::min(shortMs, encodeMs(text));
                longMs = std::min(longMs, encodeMs(longer));
            }
            const double ratio = longMs / std::max(shortMs, kFloorMs);
            std::cout << name << ": " << text.size() << " bytes in " << shortMs << " ms, " << longer.size()
                      << " bytes in " << longMs << " ms (x" << ratio << ")" << std::endl;
            EXPECT_LT(ratio, kMaxRatio) << name << ": " << kGrowth << " times the text (" << text.size()
                                        << " bytes, first byte '" << text[0] << "') took " << ratio
                                        << " times as long: worse than linear";
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Inconsistent vocabularies, written as small GGUF files

class GGUFVocabWriter
{
public:
    void string(const std::string& key, const std::string& value)
    {
        header(key, kString);
        putString(value);
    }
    void flag(const std::string& key, bool value)
    {
        header(key, kBool);
        body_.push_back(value ? 1 : 0);
    }
    void strings(const std::string& key, const std::vector<std::string>& values)
    {
        arrayHeader(key, kString, values.size());
        for (const std::string& v : values)
            putString(v);
    }
    void int32s(const std::string& key, const std::vector<int32_t>& values)
    {
        arrayHeader(key, kInt32, values.size());
        for (int32_t v : values)
            put(&v, 4);
    }
    void float32s(const std::string& key, const std::vector<float>& values)
    {
        arrayHeader(key, kFloat32, values.size());
        for (float v : values)
            put(&v, 4);
    }

    std::shared_ptr<Tokenizer> load() const
    {
        const std::string path = cv::tempfile(".gguf");
        {
            std::ofstream out(path, std::ios::binary);
            const uint32_t magic = 0x46554747, version = 3;
            const uint64_t tensors = 0, pairs = (uint64_t)count_;
            out.write((const char*)&magic, 4);
            out.write((const char*)&version, 4);
            out.write((const char*)&tensors, 8);
            out.write((const char*)&pairs, 8);
            out.write(body_.data(), (std::streamsize)body_.size());
            const size_t size = 24 + body_.size();
            out.write(std::string((32 - size % 32) % 32, '\0').data(), (std::streamsize)((32 - size % 32) % 32));
        }
        struct RemoveOnExit { std::string p; ~RemoveOnExit() { std::remove(p.c_str()); } } cleanup{path};
        Ptr<GGUFFile> file = GGUFFile::open(path);
        return Tokenizer::fromGGUF(*file);
    }

private:
    enum { kInt32 = 5, kFloat32 = 6, kBool = 7, kString = 8, kArray = 9 };
    void put(const void* data, size_t n) { body_.append((const char*)data, n); }
    void putString(const std::string& s)
    {
        const uint64_t n = s.size();
        put(&n, 8);
        put(s.data(), s.size());
    }
    void header(const std::string& key, uint32_t type)
    {
        putString(key);
        put(&type, 4);
        count_++;
    }
    void arrayHeader(const std::string& key, uint32_t itemType, size_t n)
    {
        header(key, kArray);
        put(&itemType, 4);
        const uint64_t count = n;
        put(&count, 8);
    }
    std::string body_;
    int count_ = 0;
};

// A byte-level BPE vocabulary: GPT-2's 256 byte characters (ids 0..255 in byte order), then
// "Ġt" (256), "he" (257), "Ġthe" (258).
GGUFVocabWriter tinyBpe(const std::vector<std::string>& merges)
{
    std::vector<std::string> tokens;
    int substitute = 0x100;
    for (int b = 0; b < 256; b++)
    {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const int cp = printable ? b : substitute++;
        std::string s;
        if (cp < 0x80)
        {
            s += (char)cp;
        }
        else
        {
            s += (char)(0xC0 | (cp >> 6));
            s += (char)(0x80 | (cp & 0x3F));
        }
        tokens.push_back(s);
    }
    for (const char* t : {"\xC4\xA0t", "he", "\xC4\xA0the"})
        tokens.push_back(t);
    GGUFVocabWriter w;
    w.string("tokenizer.ggml.model", "gpt2");
    w.strings("tokenizer.ggml.tokens", tokens);
    w.strings("tokenizer.ggml.merges", merges);
    return w;
}

// As llama.cpp: no tokenizer.ggml.pre means its "default" pre-tokenizer (which cuts "'" out of
// words), a name it does not know is an error. (gpt-neox's vocabulary, which has no
// tokenizer.ggml.pre, is checked against llama.cpp in test_tokenizer_vectors.cpp.)
TEST(TokenizerMetadata, bpe_without_pre_tokenizer_is_default_and_unknown_names_are_errors)
{
    const std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he"};
    GGUFVocabWriter missing = tinyBpe(merges);
    EXPECT_EQ(std::vector<int>({'t', 257, 258, 'a', '\'', 's'}), missing.load()->encode("the thea's", false, false));
    GGUFVocabWriter gpt2 = tinyBpe(merges);
    gpt2.string("tokenizer.ggml.pre", "gpt-2");
    EXPECT_EQ(std::vector<int>({'t', 257, 258, 'a', '\'', 's'}), gpt2.load()->encode("the thea's", false, false));
    GGUFVocabWriter unknown = tinyBpe(merges);
    unknown.string("tokenizer.ggml.pre", "no-such-pre-tokenizer");
    try
    {
        unknown.load();
        ADD_FAILURE() << "an unknown tokenizer.ggml.pre was accepted";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(std::string::npos, e.msg.find("'no-such-pre-tokenizer'")) << e.msg;
    }
}

TEST(TokenizerMetadata, inconsistent_vocabularies_are_errors)
{
    auto expectError = [](const GGUFVocabWriter& w, const std::string& fragment) {
        try
        {
            w.load();
            ADD_FAILURE() << "no error; expected one naming " << fragment;
        }
        catch (const cv::Exception& e)
        {
            EXPECT_NE(std::string::npos, e.msg.find(fragment)) << e.msg;
        }
    };
    expectError(tinyBpe({"h e", "a q"}), "tokenizer.ggml.merges[1]");       // "aq" is not a token
    expectError(tinyBpe({"he"}), "tokenizer.ggml.merges[0]");               // no separator

    GGUFVocabWriter noMerges;
    noMerges.string("tokenizer.ggml.model", "gpt2");
    noMerges.strings("tokenizer.ggml.tokens", {"a", "b"});
    expectError(noMerges, "tokenizer.ggml.merges");

    GGUFVocabWriter noTokens;
    noTokens.string("tokenizer.ggml.model", "llama");
    expectError(noTokens, "tokenizer.ggml.tokens");

    GGUFVocabWriter shortScores;
    shortScores.string("tokenizer.ggml.model", "llama");
    shortScores.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    shortScores.float32s("tokenizer.ggml.scores", {0, 0, 0});
    expectError(shortScores, "tokenizer.ggml.scores");

    GGUFVocabWriter longTypes;
    longTypes.string("tokenizer.ggml.model", "llama");
    longTypes.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    longTypes.float32s("tokenizer.ggml.scores", {0, 0, 0, -1});
    longTypes.int32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
    expectError(longTypes, "tokenizer.ggml.token_type");

    GGUFVocabWriter bosWithoutId;
    bosWithoutId.string("tokenizer.ggml.model", "gpt2");
    bosWithoutId.strings("tokenizer.ggml.tokens", {"a", "b", "ab"});
    bosWithoutId.strings("tokenizer.ggml.merges", {"a b"});
    bosWithoutId.flag("tokenizer.ggml.add_bos_token", true);
    expectError(bosWithoutId, "tokenizer.ggml.bos_token_id");

    GGUFVocabWriter otherModel;
    otherModel.string("tokenizer.ggml.model", "t5");
    otherModel.strings("tokenizer.ggml.tokens", {"a"});
    expectError(otherModel, "tokenizer.ggml.model = 't5'");
}

TEST(TokenizerMetadata, sentencepiece_without_types_still_falls_back_to_bytes)
{
    GGUFVocabWriter w;
    w.string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    for (int b = 0; b < 256; b++)
    {
        char name[8];
        snprintf(name, sizeof(name), "<0x%02X>", b);
        tokens.push_back(name);
    }
    tokens.push_back("\xE2\x96\x81" "a");
    w.strings("tokenizer.ggml.tokens", tokens);
    w.float32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.f));
    std::shared_ptr<Tokenizer> tokenizer = w.load();
    // " a" is a token; "é" has none and goes out as its two bytes.
    EXPECT_EQ(std::vector<int>({259, 3 + 0xC3, 3 + 0xA9}), tokenizer->encode("a\xC3\xA9", false, false));
    EXPECT_EQ("a\xC3\xA9", tokenizer->decode(tokenizer->encode("a\xC3\xA9", true, false), false));
}

} // namespace
