// Tokenizers against llama.cpp on many strings: test/data/tokenizer (made by
// tools/tokenizer/make_tokenizer_vectors.py with node-llama-cpp 3.21.1; its README says how).
//   - vocabularies without published vectors: gpt-neox (no tokenizer.ggml.pre: llama.cpp's
//     "default"), a Gemma-style SentencePiece one and a Gemma 4 one (made by the fixture
//     make_tokenizer_vocabs from Llama's vocabulary), GPT-2 with special-token parsing, and a
//     Qwen3.5-style (pre-tokenizer qwen35, Qwen's added tokens) and a Gemma-4-style one with
//     Gemma 4's own tokens (test_chat_vocabularies.cpp runs their chat templates);
//   - every tokenizer.ggml.pre name llama.cpp knows, on GPT-2's and Llama 3's vocabularies,
//     and names it refuses;
//   - TextGenerationModel on a random-weight gpt2 model with GPT-2's real tokenizer;
//   - the tokenizer.ggml.model values that are refused by name.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "test_common.hpp"
#include "vocab_test_vectors.hpp"
#include "../../modules/dnn/src/llm/tokenizer/bpe_pre_tokenizer.hpp"
#include "../../modules/dnn/src/llm/tokenizer/tokenizer.hpp"

using namespace cv;
using cv::dnn::GGUFFile;
using cv::dnn::llm::BpePreTokenizer;
using cv::dnn::llm::Tokenizer;

namespace {

std::string vectorPath(const std::string& relative)
{
    return llm_test::projectRoot() + "/test/data/tokenizer/" + relative;
}

// A GGUF file with some string keys replaced (or added): the same vocabulary under another
// tokenizer.ggml.pre, without writing a copy of it.
class MetadataOverlay CV_FINAL : public GGUFFile
{
public:
    MetadataOverlay(const Ptr<GGUFFile>& base, std::map<String, String> strings)
        : base_(base), strings_(std::move(strings)) {}

    int getVersion() const CV_OVERRIDE { return base_->getVersion(); }
    std::vector<String> getMetadataKeys() const CV_OVERRIDE
    {
        std::vector<String> keys = base_->getMetadataKeys();
        for (const auto& kv : strings_)
        {
            if (!base_->hasMetadata(kv.first))
                keys.push_back(kv.first);
        }
        return keys;
    }
    bool hasMetadata(const String& key) const CV_OVERRIDE { return strings_.count(key) || base_->hasMetadata(key); }
    String getMetadataType(const String& key) const CV_OVERRIDE
    {
        return strings_.count(key) ? String("string") : base_->getMetadataType(key);
    }
    String getString(const String& key) const CV_OVERRIDE
    {
        auto it = strings_.find(key);
        return it != strings_.end() ? it->second : base_->getString(key);
    }
    double getNumber(const String& key) const CV_OVERRIDE { return base_->getNumber(key); }
    int64 getInt(const String& key) const CV_OVERRIDE { return base_->getInt(key); }
    bool getBool(const String& key) const CV_OVERRIDE { return base_->getBool(key); }
    std::vector<String> getStringArray(const String& key) const CV_OVERRIDE { return base_->getStringArray(key); }
    std::vector<double> getNumberArray(const String& key) const CV_OVERRIDE { return base_->getNumberArray(key); }
    std::vector<String> getTensorNames() const CV_OVERRIDE { return base_->getTensorNames(); }
    bool hasTensor(const String& name) const CV_OVERRIDE { return base_->hasTensor(name); }
    String getTensorType(const String& name) const CV_OVERRIDE { return base_->getTensorType(name); }
    std::vector<int> getTensorShape(const String& name) const CV_OVERRIDE { return base_->getTensorShape(name); }
    size_t getTensorBytes(const String& name) const CV_OVERRIDE { return base_->getTensorBytes(name); }

private:
    Ptr<GGUFFile> base_;
    std::map<String, String> strings_;
};

// Encodes every input and compares with llama.cpp's ids; returns the number of mismatches
// (each reported, the first few in full).
int countMismatches(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                    const std::vector<std::vector<int>>& expected, bool parseSpecial, const std::string& what)
{
    EXPECT_EQ(inputs.size(), expected.size()) << what << ": one line of ids per input";
    int failed = 0;
    for (size_t i = 0; i < inputs.size() && i < expected.size(); i++)
    {
        const std::vector<int> ids = tokenizer.encode(inputs[i], /*addSpecial=*/false, parseSpecial);
        if (ids == expected[i])
            continue;
        if (++failed <= 5)
            ADD_FAILURE() << what << " input " << i << " '" << inputs[i] << "'\n  llama.cpp " << llm_test::joinIds(expected[i])
                          << "\n  ours      " << llm_test::joinIds(ids);
    }
    return failed;
}

// ---------------------------------------------------------------------------------------------
// Vocabularies (test/data/tokenizer/vocab/<set>.out)

struct VocabularySet
{
    const char* name;
    const char* vocabulary;  // shared:<x> = llama.cpp-vocab/ggml-vocab-<x>.gguf; made:<x> = the fixture's
    bool parseSpecial;
};

const VocabularySet kVocabularySets[] = {
    {"gpt-neox", "shared:gpt-neox", false},
    {"gpt-2", "shared:gpt-2", false},
    {"gpt-2.special", "shared:gpt-2", true},
    {"gemma-spm", "made:gemma-spm", false},
    {"gemma-spm.special", "made:gemma-spm", true},
    {"gemma4-bpe", "made:gemma4-bpe", false},
    {"gemma4-bpe.special", "made:gemma4-bpe", true},
    {"qwen35-chat", "made:qwen35-chat", false},
    {"qwen35-chat.special", "made:qwen35-chat", true},
    {"gemma4-chat", "made:gemma4-chat", false},
    {"gemma4-chat.special", "made:gemma4-chat", true},
};

std::string vocabularyFile(const std::string& vocabulary)
{
    const size_t colon = vocabulary.find(':');
    const std::string kind = vocabulary.substr(0, colon), name = vocabulary.substr(colon + 1);
    return kind == "shared" ? llm_test::vocabPath(name) : llm_test::testModel("tokenizer_vocabs/" + name + ".gguf");
}

class TokenizerOracleVocabulary : public testing::TestWithParam<VocabularySet> {};

TEST_P(TokenizerOracleVocabulary, matches_llama_cpp)
{
    const VocabularySet set = GetParam();
    Ptr<GGUFFile> file = GGUFFile::open(vocabularyFile(set.vocabulary));
    std::shared_ptr<Tokenizer> tokenizer = Tokenizer::fromGGUF(*file);
    const std::vector<std::string> inputs = llm_test::readInputFile(vectorPath("corpus.inp"));
    const std::vector<std::vector<int>> expected = llm_test::readIdFile(vectorPath("vocab/" + std::string(set.name) + ".out"));
    ASSERT_GT(inputs.size(), 300u);
    const int failed = countMismatches(*tokenizer, inputs, expected, set.parseSpecial, set.name);
    std::cout << set.name << ": " << inputs.size() - failed << " of " << inputs.size() << " as llama.cpp" << std::endl;
    EXPECT_EQ(0, failed) << set.name;

    // What llama.cpp reads from the metadata: BOS, EOS, whether BOS is added.
    FileStorage meta(vectorPath("vocab/" + std::string(set.name) + ".meta.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(meta.isOpened());
    EXPECT_EQ((int)meta["bos"], tokenizer->bosId()) << set.name;
    EXPECT_EQ((int)meta["eos"], tokenizer->eosId()) << set.name;
    EXPECT_EQ((int)meta["add_bos"] != 0, tokenizer->addBos()) << set.name;
    EXPECT_EQ((int)meta["add_eos"] != 0, tokenizer->addEos()) << set.name;
    if (!meta["eog"].empty())
    {
        std::vector<int> expectedEnds;
        for (const FileNode& id : meta["eog"])
            expectedEnds.push_back((int)id);
        EXPECT_EQ(llm_test::joinIds(expectedEnds), llm_test::joinIds(tokenizer->endOfGenerationIds())) << set.name;
    }
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TokenizerOracleVocabulary, testing::ValuesIn(kVocabularySets),
                        [](const testing::TestParamInfo<VocabularySet>& info) {
                            std::string name = info.param.name;
                            for (char& c : name)
                                c = isalnum((unsigned char)c) ? c : '_';
                            return name;
                        });

TEST(TokenizerOracleVocabulary, every_vector_file_is_checked)
{
    std::vector<String> found;
    glob(vectorPath("vocab/*.out"), found);
    ASSERT_FALSE(found.empty());
    std::set<std::string> listed;
    for (const VocabularySet& set : kVocabularySets)
        listed.insert(set.name);
    for (const String& path : found)
    {
        const std::string file = path.substr(path.find_last_of('/') + 1);
        EXPECT_TRUE(listed.count(file.substr(0, file.size() - 4))) << file << " is not in kVocabularySets";
    }
}

// Decoding gives the text back (these vocabularies spell every byte).
TEST(TokenizerOracleVocabulary, decode_restores_the_text)
{
    const std::vector<std::string> inputs = llm_test::readInputFile(vectorPath("corpus.inp"));
    for (const char* vocabulary :
         {"shared:gpt-neox", "made:gemma-spm", "made:gemma4-bpe", "made:qwen35-chat", "made:gemma4-chat"})
    {
        Ptr<GGUFFile> file = GGUFFile::open(vocabularyFile(vocabulary));
        std::shared_ptr<Tokenizer> tokenizer = Tokenizer::fromGGUF(*file);
        int failed = 0;
        for (const std::string& text : inputs)
        {
            if (tokenizer->decode(tokenizer->encode(text, false, false), false) != text && ++failed <= 3)
                ADD_FAILURE() << vocabulary << ": '" << text << "' does not come back";
        }
        EXPECT_EQ(0, failed) << vocabulary;
    }
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizers (test/data/tokenizer/pre/<vocabulary>/index.tsv)

std::vector<std::pair<std::string, std::string>> readPreIndex(const std::string& vocabulary)
{
    std::istringstream lines(llm_test::readTextFile(vectorPath("pre/" + vocabulary + "/index.tsv")));
    std::vector<std::pair<std::string, std::string>> index;
    for (std::string line; std::getline(lines, line);)
    {
        const size_t tab = line.find('\t');
        if (tab != std::string::npos)
            index.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    return index;
}

class TokenizerOraclePre : public testing::TestWithParam<std::string> {};

TEST_P(TokenizerOraclePre, every_name_splits_as_llama_cpp)
{
    const std::string vocabulary = GetParam();
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::vocabPath(vocabulary));
    const std::vector<std::string> inputs = llm_test::readInputFile(vectorPath("corpus.inp"));
    const std::vector<std::pair<std::string, std::string>> index = readPreIndex(vocabulary);
    ASSERT_GT(index.size(), 80u);
    std::map<std::string, std::vector<std::vector<int>>> expectedOf;
    int names = 0, refused = 0, cases = 0;
    for (const auto& entry : index)
    {
        const std::string& name = entry.first;
        const std::string path = vectorPath("pre/" + vocabulary + "/" + entry.second);
        if (llm_test::readTextFile(path).compare(0, 5, "ERROR") == 0)
        {
            // llama.cpp refuses the name: so must we, naming it.
            try
            {
                MetadataOverlay overlay(file, {{"tokenizer.ggml.pre", name}});
                Tokenizer::fromGGUF(overlay);
                ADD_FAILURE() << "tokenizer.ggml.pre = '" << name << "' is refused by llama.cpp but accepted here";
            }
            catch (const cv::Exception& e)
            {
                EXPECT_NE(std::string::npos, e.msg.find("'" + name + "'")) << e.msg;
            }
            refused++;
            continue;
        }
        if (!expectedOf.count(entry.second))
            expectedOf[entry.second] = llm_test::readIdFile(path);
        MetadataOverlay overlay(file, {{"tokenizer.ggml.pre", name}});
        std::shared_ptr<Tokenizer> tokenizer;
        ASSERT_NO_THROW(tokenizer = Tokenizer::fromGGUF(overlay)) << name;
        const int failed = countMismatches(*tokenizer, inputs, expectedOf[entry.second], false, vocabulary + " pre " + name);
        EXPECT_EQ(0, failed) << vocabulary << " with tokenizer.ggml.pre = '" << name << "': " << failed << " of "
                             << inputs.size() << " inputs differ from llama.cpp";
        names++;
        cases += (int)inputs.size();
    }
    std::cout << vocabulary << ": " << names << " pre-tokenizer names, " << cases << " cases checked against llama.cpp; "
              << refused << " names refused as llama.cpp refuses them" << std::endl;

    // Every name accepted here is one llama.cpp accepts (and so was checked above).
    std::set<std::string> checked;
    for (const auto& entry : index)
        checked.insert(entry.first);
    for (const std::string& name : BpePreTokenizer::knownNames())
        EXPECT_TRUE(checked.count(name)) << "tokenizer.ggml.pre = '" << name << "' is accepted but has no llama.cpp vectors";
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TokenizerOraclePre, testing::Values("gpt-2", "llama-bpe"),
                        [](const testing::TestParamInfo<std::string>& info) {
                            std::string name = info.param;
                            for (char& c : name)
                                c = isalnum((unsigned char)c) ? c : '_';
                            return name;
                        });

// ---------------------------------------------------------------------------------------------
// A gpt2 model with GPT-2's tokenizer (tools/gguf/make_synthetic_model.py --vocab-from
// ggml-vocab-gpt-2.gguf, made by the fixture): TextGenerationModel encodes prompts as llama.cpp
// does on that file (the generator checked that llama.cpp's ids on it are vocab/gpt-2*.out),
// and its first greedy token is llama.cpp's.

TEST(TokenizerOracleModel, gpt2_model_with_gpt2_vocabulary_encodes_prompts_as_llama_cpp)
{
    const std::string path = llm_test::testModel("tokenizer_vocabs/gpt2-synthetic-Q8_0.gguf");
    cv::dnn::TextGenerationModel model(path);
    Ptr<cv::dnn::Tokenizer> tokenizer = model.getTokenizer();
    ASSERT_FALSE(tokenizer.empty());
    EXPECT_EQ(50257, tokenizer->getVocabSize());
    EXPECT_EQ(50256, tokenizer->getBosId());

    const std::vector<std::string> inputs = llm_test::readInputFile(vectorPath("corpus.inp"));
    const std::vector<std::vector<int>> plain = llm_test::readIdFile(vectorPath("vocab/gpt-2.out"));
    const std::vector<std::vector<int>> special = llm_test::readIdFile(vectorPath("vocab/gpt-2.special.out"));
    ASSERT_EQ(inputs.size(), plain.size());
    ASSERT_EQ(inputs.size(), special.size());
    // No tokenizer.ggml.add_bos_token in GPT-2's vocabulary: llama.cpp adds no BOS (vocab/gpt-2.meta.json).
    int failed = 0;
    for (size_t i = 0; i < inputs.size(); i++)
    {
        const bool same = tokenizer->encode(inputs[i], true, false) == plain[i] &&
                          tokenizer->encode(inputs[i], true, true) == special[i];
        if (!same && ++failed <= 3)
            ADD_FAILURE() << "input " << i << " '" << inputs[i] << "' is not encoded as llama.cpp encodes it";
    }
    EXPECT_EQ(0, failed);

    FileStorage oracle(vectorPath("gpt2-synthetic-Q8_0.nlc.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(oracle.isOpened());
    std::vector<int> promptIds, greedy;
    oracle["prompt_ids"] >> promptIds;
    oracle["greedy_ids"] >> greedy;
    const std::string prompt = (std::string)oracle["prompt"];
    EXPECT_EQ(promptIds, tokenizer->encode(prompt, true, false));
    // llama.cpp's first step has a clear winner (README: top-1 / top-2 probabilities).
    ASSERT_FALSE(greedy.empty());
    EXPECT_EQ(tokenizer->decode({greedy[0]}), model.generate(prompt, 1));
}

// ---------------------------------------------------------------------------------------------
// Refused tokenizers

void expectRefusal(const GGUFFile& file, const std::vector<std::string>& fragments)
{
    try
    {
        Tokenizer::fromGGUF(file);
        ADD_FAILURE() << "no error; expected one naming " << fragments.front();
    }
    catch (const cv::Exception& e)
    {
        EXPECT_EQ(Error::StsNotImplemented, e.code) << e.msg;
        for (const std::string& fragment : fragments)
            EXPECT_NE(std::string::npos, e.msg.find(fragment)) << e.msg;
    }
}

TEST(TokenizerRefusals, other_tokenizer_models_are_refused_by_name)
{
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::vocabPath("llama-spm"));
    for (const char* model : {"t5", "rwkv", "plamo2", "hybriddna", "whitespace", "none", "no_vocab", "sentencepiece"})
    {
        MetadataOverlay overlay(file, {{"tokenizer.ggml.model", model}});
        expectRefusal(overlay, {"tokenizer.ggml.model", std::string("'") + model + "'"});
    }
}

TEST(TokenizerRefusals, whitespace_pre_tokenizer_is_refused_by_name)
{
    // llama.cpp knows it, but aborts on two spaces in a row (tools/tokenizer/make_tokenizer_vectors.py).
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::vocabPath("gpt-2"));
    MetadataOverlay overlay(file, {{"tokenizer.ggml.pre", "whitespace"}});
    expectRefusal(overlay, {"tokenizer.ggml.pre", "'whitespace'"});
}

} // namespace
