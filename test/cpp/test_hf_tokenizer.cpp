// Tokenizers read from Hugging Face tokenizer.json files (as ONNX Runtime GenAI's model builder
// exports them), against the same vocabularies read from GGUF and against llama.cpp's test
// vectors: Llama 2's real tokenizer.json (shared test data), tokenizer.json files that
// tools/tokenizer/gguf_vocab_to_tokenizer_json.py writes from the GGUF vocabularies (the
// make_hf_tokenizers fixture), and malformed files written by the tests themselves.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/core/utils/filesystem.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/tokenizer.hpp>

#include <fstream>
#include <sstream>

#include "test_common.hpp"
#include "vocab_test_vectors.hpp"
#include "../../modules/dnn/src/llm/tokenizer/hf_tokenizer.hpp"
#include "../../modules/dnn/src/llm/tokenizer/tokenizer.hpp"

using namespace cv;
using cv::dnn::GGUFFile;
using cv::dnn::llm::Tokenizer;

namespace {

const char kLlama2Folder[] = "onnx/tiny-random-LlamaForCausalLM-fp16";
const char kByteVocabularyFolder[] = "onnx/tiny-graph-capture-gqa";



void writeFile(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

std::shared_ptr<Tokenizer> loadGGUF(const std::string& name)
{
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::vocabPath(name));
    return Tokenizer::fromGGUF(*file);
}




// Every .inp/.out pair of a vocabulary through `tokenizer`.
void expectLlamaCppVectors(const Tokenizer& tokenizer, const std::string& name)
{
    const std::vector<std::string> inputs = llm_test::readVocabInputs(name);
    const std::vector<std::vector<int>> expected = llm_test::readVocabExpectedIds(name);
    ASSERT_FALSE(inputs.empty());
    ASSERT_GE(expected.size(), inputs.size());
    int failed = 0;
    for (size_t i = 0; i < inputs.size(); i++)
    {
        const std::vector<int> ids = tokenizer.encode(inputs[i], false, false);
        if (ids == expected[i])
            continue;
        failed++;
        ADD_FAILURE() << name << " input " << i << " '" << inputs[i] << "'\n  expected " << llm_test::joinIds(expected[i])
                      << "\n  got      " << llm_test::joinIds(ids);
    }
    std::cout << name << " (tokenizer.json): " << inputs.size() - failed << " passed, " << failed << " failed" << std::endl;
}

// Encoding, decoding and the special ids agree with the GGUF-loaded tokenizer.
void expectSameAsGGUF(const Tokenizer& hf, const Tokenizer& gguf, const std::vector<std::string>& texts,
                      const std::string& name)
{
    EXPECT_EQ(gguf.model(), hf.model()) << name;
    EXPECT_EQ(gguf.vocabSize(), hf.vocabSize()) << name;
    EXPECT_EQ(gguf.bosId(), hf.bosId()) << name;
    EXPECT_EQ(gguf.eosId(), hf.eosId()) << name;
    EXPECT_EQ(gguf.addBos(), hf.addBos()) << name;
    EXPECT_EQ(gguf.addEos(), hf.addEos()) << name;
    for (const std::string& text : texts)
    {
        for (int flags = 0; flags < 4; flags++)
        {
            const bool addSpecial = (flags & 1) != 0, parseSpecial = (flags & 2) != 0;
            const std::vector<int> ids = gguf.encode(text, addSpecial, parseSpecial);
            ASSERT_EQ(llm_test::joinIds(ids), llm_test::joinIds(hf.encode(text, addSpecial, parseSpecial)))
                << name << " '" << text << "' addSpecial " << addSpecial << " parseSpecial " << parseSpecial;
            EXPECT_EQ(gguf.decode(ids, parseSpecial), hf.decode(ids, parseSpecial)) << name << " '" << text << "'";
        }
    }
}

const std::vector<std::string>& extraTexts()
{
    static const std::vector<std::string> texts = {
        "Hello world", " Hello world", "Hello  world ", "   ", "\n", "\n\n\t x\r\n", "",
        "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80\xF0\x9F\x91\x8D",
        "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",  // Привет мир
        "\xE2\x96\x81" "already\xE2\x96\x81" "escaped", "\xFF\xFE malformed \xC3",
        "<s>Hello</s> world", "a<|endoftext|>b", "<|end|>\n<|assistant|>", "[INST] hi [/INST]",
        "3.14159 1234567 0x1F", "don't  I'LL we've", "int main() { return 0; }\n",
    };
    return texts;
}

std::string hfFolder(const std::string& name)
{
    return llm_test::testModel("hf_tokenizers/" + name);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Llama 2's tokenizer.json (shared test data)

TEST(HFTokenizer, llama2_tokenizer_json_matches_llama_cpp_vectors)
{
    std::shared_ptr<Tokenizer> hf = Tokenizer::fromHuggingFace(llm_test::sharedTestData(kLlama2Folder));
    ASSERT_TRUE(hf);
    EXPECT_EQ("llama", hf->model());
    EXPECT_EQ(32000, hf->vocabSize());
    expectLlamaCppVectors(*hf, "llama-spm");
    for (const std::string& text : llm_test::readVocabInputs("llama-spm"))
        EXPECT_EQ(text, hf->decode(hf->encode(text, false, false), false));
}

TEST(HFTokenizer, llama2_tokenizer_json_agrees_with_gguf)
{
    std::shared_ptr<Tokenizer> hf = Tokenizer::fromHuggingFace(llm_test::sharedTestData(kLlama2Folder) + "/tokenizer.json");
    std::shared_ptr<Tokenizer> gguf = loadGGUF("llama-spm");
    EXPECT_EQ(1, hf->bosId());
    EXPECT_EQ(2, hf->eosId());
    EXPECT_EQ(0, hf->unknownId());
    EXPECT_TRUE(hf->addBos());
    EXPECT_FALSE(hf->addEos());
    std::vector<std::string> texts = extraTexts();
    const std::vector<std::string> inputs = llm_test::readVocabInputs("llama-spm");
    texts.insert(texts.end(), inputs.begin(), inputs.end());
    expectSameAsGGUF(*hf, *gguf, texts, "llama-spm");
    for (int id = 0; id < gguf->vocabSize(); id++)
    {
        // This file lost the text of token 31353 (U+2028): it is "" in its vocab.
        if (id == 31353)
            continue;
        ASSERT_EQ(gguf->tokenText(id), hf->tokenText(id)) << id;
        ASSERT_EQ(gguf->isSpecial(id), hf->isSpecial(id)) << id;
        ASSERT_EQ(gguf->tokenToPiece(id, true), hf->tokenToPiece(id, true)) << id;
    }
}

TEST(HFTokenizer, llama2_folder_gives_chat_template_and_special_ids)
{
    const cv::dnn::llm::HuggingFaceTokenizer loaded =
        cv::dnn::llm::loadHuggingFaceTokenizer(llm_test::sharedTestData(kLlama2Folder));
    ASSERT_TRUE(loaded.tokenizer);
    EXPECT_EQ(1, loaded.bosId);  // tokenizer_config.json's "<s>" (genai_config.json of this random model says 0)
    EXPECT_EQ(2, loaded.eosId);
    EXPECT_EQ(0u, loaded.chatTemplate.find("{% if messages[0]['role'] == 'system' %}"));
    ASSERT_TRUE(loaded.metadata);
    EXPECT_EQ(loaded.chatTemplate, loaded.metadata->getString("tokenizer.chat_template"));
    EXPECT_EQ("llama", loaded.metadata->getString("tokenizer.ggml.model"));
    EXPECT_NE(std::string::npos, loaded.tokenizerJsonPath.find("tokenizer.json"));
}

// ---------------------------------------------------------------------------------------------
// A character vocabulary without normalizer or pre-tokenizer (tiny-graph-capture-gqa)

TEST(HFTokenizer, byte_vocabulary_loads_and_round_trips)
{
    const std::string folder = llm_test::sharedTestData(kByteVocabularyFolder);
    const cv::dnn::llm::HuggingFaceTokenizer loaded = cv::dnn::llm::loadHuggingFaceTokenizer(folder);
    const Tokenizer& tokenizer = *loaded.tokenizer;
    EXPECT_EQ(256, tokenizer.vocabSize());

    // BOS / EOS as tokenizer_config.json ("<pad>", "<eos>") and genai_config.json (0, [1]) say.
    EXPECT_EQ(0, loaded.bosId);
    EXPECT_EQ(1, loaded.eosId);
    const std::string genai = llm_test::readTextFile(folder + "/genai_config.json");
    EXPECT_NE(std::string::npos, genai.find("\"bos_token_id\": 0"));
    EXPECT_NE(std::string::npos, genai.find("\"eos_token_id\": [\n            1\n        ]"));
    EXPECT_FALSE(tokenizer.addBos());  // no post_processor, no add_bos_token: HF adds nothing
    EXPECT_TRUE(tokenizer.isEndOfGeneration(1));

    // Each printable ASCII character is its own token, id = its code.
    const std::string text = "Hello world! {x: 42} ~";
    const std::vector<int> ids = tokenizer.encode(text, true, false);
    ASSERT_EQ(text.size(), ids.size());
    for (size_t i = 0; i < text.size(); i++)
        EXPECT_EQ((int)(unsigned char)text[i], ids[i]) << i;
    EXPECT_EQ(text, tokenizer.decode(ids, false));
    std::string printable;
    for (int c = ' '; c <= '~'; c++)
        printable += (char)c;
    EXPECT_EQ(printable, tokenizer.decode(tokenizer.encode(printable, false, false), false));
    EXPECT_EQ(std::vector<int>({72, 1, 105}), tokenizer.encode("H<eos>i", false, true));
    // Characters outside the vocabulary have no token and no <unk> to stand for them (as in HF).
    EXPECT_EQ(std::vector<int>({97, 98}), tokenizer.encode("a\nb", false, false));
}

// ---------------------------------------------------------------------------------------------
// tokenizer.json files written from the GGUF vocabularies (fixture make_hf_tokenizers)

class HFTokenizerFromGGUFVocab : public testing::TestWithParam<std::string> {};

TEST_P(HFTokenizerFromGGUFVocab, matches_llama_cpp_and_gguf)
{
    const std::string name = GetParam();
    const std::string folder = hfFolder(name);
    ASSERT_TRUE(utils::fs::exists(folder + "/tokenizer.json")) << folder << ": run the make_hf_tokenizers fixture";
    std::shared_ptr<Tokenizer> hf = Tokenizer::fromHuggingFace(folder);
    std::shared_ptr<Tokenizer> gguf = loadGGUF(name);
    expectLlamaCppVectors(*hf, name);
    std::vector<std::string> texts = extraTexts();
    const std::vector<std::string> inputs = llm_test::readVocabInputs(name);
    texts.insert(texts.end(), inputs.begin(), inputs.end());
    expectSameAsGGUF(*hf, *gguf, texts, name);
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, HFTokenizerFromGGUFVocab,
                         testing::Values("gpt-2", "mpt", "starcoder", "refact", "falcon", "deepseek-llm",
                                         "deepseek-coder", "llama-spm", "phi-3"));

TEST(HFTokenizer, byte_level_pre_tokenizer_is_named_after_its_regexes)
{
    const std::string folder = hfFolder("gpt-2");
    EXPECT_EQ("gpt-2", cv::dnn::llm::readHuggingFaceTokenizerMetadata(folder)->getString("tokenizer.ggml.pre"));
    EXPECT_EQ("starcoder", cv::dnn::llm::readHuggingFaceTokenizerMetadata(hfFolder("refact"))->getString("tokenizer.ggml.pre"));
    EXPECT_EQ("falcon", cv::dnn::llm::readHuggingFaceTokenizerMetadata(hfFolder("falcon"))->getString("tokenizer.ggml.pre"));
    EXPECT_EQ("deepseek-llm", cv::dnn::llm::readHuggingFaceTokenizerMetadata(hfFolder("deepseek-llm"))->getString("tokenizer.ggml.pre"));
}

// ---------------------------------------------------------------------------------------------
// Small tokenizer.json files written here: pre-tokenizer mapping, config forms, malformed input

namespace {

class TempFolder
{
public:
    TempFolder()
    {
        path_ = cv::tempfile("_hf_tokenizer");
        utils::fs::createDirectories(path_);
    }
    ~TempFolder() { utils::fs::remove_all(path_); }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A byte-level BPE over "a", "b", "ab" and the GPT-2 characters of space and newline.
std::string byteLevelJson(const std::string& preTokenizer, const std::string& extra = std::string())
{
    return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u010a": 4, "<|eot|>": 5},
               "merges": ["a b"]},
              "added_tokens": [{"id": 5, "content": "<|eot|>", "special": true}],
              "pre_tokenizer": )" + preTokenizer + extra + "}";
}

std::string splitThenByteLevel(const std::string& jsonRegex)
{
    return R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": ")" + jsonRegex +
           R"("}, "behavior": "Isolated", "invert": false},
             {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";
}

std::string preTokenizerOf(const std::string& json)
{
    TempFolder folder;
    writeFile(folder.file("tokenizer.json"), json);
    return cv::dnn::llm::readHuggingFaceTokenizerMetadata(folder.path())->getString("tokenizer.ggml.pre");
}

// Loading fails with a cv::Exception whose message holds every fragment.
void expectLoadError(const std::string& tokenizerJson, const std::vector<std::string>& fragments,
                     const std::string& tokenizerConfig = std::string())
{
    TempFolder folder;
    writeFile(folder.file("tokenizer.json"), tokenizerJson);
    if (!tokenizerConfig.empty())
        writeFile(folder.file("tokenizer_config.json"), tokenizerConfig);
    try
    {
        Tokenizer::fromHuggingFace(folder.path());
        ADD_FAILURE() << "no error; expected one naming " << fragments[0] << "\n  for " << tokenizerJson;
    }
    catch (const cv::Exception& e)
    {
        for (const std::string& fragment : fragments)
            EXPECT_NE(std::string::npos, e.err.find(fragment)) << "missing '" << fragment << "' in: " << e.err;
    }
}

const char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";
const char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";

} // namespace

TEST(HFTokenizer, llama3_and_qwen2_regexes_map_to_their_pre_tokenizers)
{
    // Llama 3 looks whole words up first (ignore_merges); without that, the same regex is dbrx's.
    const std::string ignoring = R"({"model": {"type": "BPE", "ignore_merges": true, "vocab": {"a": 0, "b": 1, "ab": 2},
        "merges": [["a", "b"]]}, "pre_tokenizer": )" + splitThenByteLevel(kLlama3Regex) + "}";
    EXPECT_EQ("llama3", preTokenizerOf(ignoring));
    EXPECT_EQ("dbrx", preTokenizerOf(R"({"model": {"type": "BPE", "ignore_merges": false, "vocab": {"a": 0}, "merges": []},
        "pre_tokenizer": )" + splitThenByteLevel(kLlama3Regex) + "}"));
    EXPECT_EQ("qwen2", preTokenizerOf(byteLevelJson(splitThenByteLevel(kQwen2Regex), R"(, "normalizer": {"type": "NFC"})")));

    TempFolder folder;
    writeFile(folder.file("tokenizer.json"), byteLevelJson(splitThenByteLevel(kQwen2Regex)));
    std::shared_ptr<Tokenizer> tokenizer = Tokenizer::fromHuggingFace(folder.file("tokenizer.json"));
    EXPECT_EQ(std::vector<int>({2, 3, 0, 4, 1}), tokenizer->encode("ab a\nb", false, false));
    EXPECT_EQ(std::vector<int>({2, 5, 1}), tokenizer->encode("ab<|eot|>b", false, true));
    EXPECT_EQ("ab a\nb", tokenizer->decode({2, 3, 0, 4, 1}, false));
    EXPECT_FALSE(tokenizer->addBos());
}

TEST(HFTokenizer, unknown_pre_tokenizer_regex_is_named_in_the_error)
{
    expectLoadError(byteLevelJson(splitThenByteLevel("[a-z]+")), {"tokenizer.json", "pre_tokenizer", "[a-z]+"});
}

TEST(HFTokenizer, config_forms)
{
    TempFolder folder;
    writeFile(folder.file("tokenizer.json"), byteLevelJson(R"({"type": "ByteLevel", "add_prefix_space": false})",
        R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|eot|>", "type_id": 0}},
             {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<|eot|>": {"id": "<|eot|>", "ids": [5], "tokens": ["<|eot|>"]}}})"));
    // Without tokenizer_config.json the post_processor says what is added.
    const cv::dnn::llm::HuggingFaceTokenizer fromProcessor = cv::dnn::llm::loadHuggingFaceTokenizer(folder.path());
    EXPECT_EQ(5, fromProcessor.bosId);
    EXPECT_TRUE(fromProcessor.tokenizer->addBos());
    EXPECT_EQ(std::vector<int>({5, 0}), fromProcessor.tokenizer->encode("a", true, false));

    // Token objects, add_bos_token overriding the post_processor, the list form of chat_template.
    writeFile(folder.file("tokenizer_config.json"), R"({"bos_token": {"content": "ab", "special": true},
        "eos_token": "<|eot|>", "add_bos_token": false, "add_eos_token": true,
        "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
    const cv::dnn::llm::HuggingFaceTokenizer fromConfig = cv::dnn::llm::loadHuggingFaceTokenizer(folder.path());
    EXPECT_EQ(2, fromConfig.bosId);
    EXPECT_EQ(5, fromConfig.eosId);
    EXPECT_EQ("D", fromConfig.chatTemplate);
    EXPECT_EQ(std::vector<int>({0, 5}), fromConfig.tokenizer->encode("a", true, false));

    // chat_template.jinja beside the files (newer transformers) when the config has none.
    writeFile(folder.file("tokenizer_config.json"), R"({"eos_token": "<|eot|>"})");
    writeFile(folder.file("chat_template.jinja"), "{{ messages }}");
    EXPECT_EQ("{{ messages }}", cv::dnn::llm::loadHuggingFaceTokenizer(folder.path()).chatTemplate);
}

TEST(HFTokenizer, added_tokens_strip_whitespace_as_told)
{
    TempFolder folder;
    writeFile(folder.file("tokenizer.json"), R"({"model": {"type": "BPE", "vocab": {"a": 0, "\u0120": 1, "<x>": 2}, "merges": []},
        "added_tokens": [{"id": 2, "content": "<x>", "special": true, "lstrip": true, "rstrip": true}],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}})");
    std::shared_ptr<Tokenizer> tokenizer = Tokenizer::fromHuggingFace(folder.path());
    EXPECT_EQ(std::vector<int>({0, 2, 0}), tokenizer->encode("a <x> a", false, true));
    // Without parsing, "<x>" is plain text: the spaces stay.
    EXPECT_EQ(std::vector<int>({0, 1}), tokenizer->encode("a ", false, false));
}

TEST(HFTokenizer, malformed_files_raise_exceptions_naming_the_field)
{
    const std::string good = byteLevelJson(R"({"type": "ByteLevel", "add_prefix_space": false})");
    expectLoadError(good.substr(0, good.size() / 2), {"tokenizer.json", "not valid JSON"});  // truncated
    expectLoadError("", {"tokenizer.json", "not valid JSON"});
    expectLoadError("[1, 2]", {"top level", "must be an object"});
    expectLoadError(R"({"version": "1.0"})", {"tokenizer.json", "model", "missing"});
    expectLoadError(R"({"model": 7})", {"model", "must be an object"});
    expectLoadError(R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})", {"model.type", "Unigram"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})", {"model.vocab['a']", "integer"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", {"model.vocab['a']", "-1"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 1.5}, "merges": []}})", {"model.vocab['a']", "integer"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 99999999999}, "merges": []}})", {"model.vocab['a']"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 4000000}, "merges": []}})", {"ids up to 4000000"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})", {"model.vocab", "id 0"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})", {"model.vocab", "empty"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a q"]}})", {"model.merges[0]", "'q'"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [5]}})", {"model.merges[0]"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": "a a"}})", {"model.merges", "array"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1}]})",
                    {"added_tokens[0].content", "missing"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                      "added_tokens": [{"id": 1, "content": "x"}, {"id": 1, "content": "y"}]})", {"added_tokens", "id 1"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, "content": 3}]})",
                    {"added_tokens[0].content", "string"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})",
                    {"model.unk_token", "<unk>"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Lowercase"}})",
                    {"normalizer.type", "Lowercase"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}})",
                    {"pre_tokenizer.type", "Whitespace"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}})",
                    {"pre_tokenizer.add_prefix_space"});
    expectLoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "continuing_subword_prefix": "##"}})",
                    {"model.continuing_subword_prefix"});
    expectLoadError(std::string(100000, '[') + std::string(100000, ']'), {"nested deeper"});
    expectLoadError(good, {"tokenizer_config.json", "add_bos_token"}, R"({"add_bos_token": true})");
    expectLoadError(good, {"tokenizer_config.json", "not valid JSON"}, R"({"bos_token": )");
    expectLoadError(good, {"tokenizer_config.json", "add_bos_token", "true or false"}, R"({"add_bos_token": "yes"})");

    EXPECT_THROW(Tokenizer::fromHuggingFace("/nonexistent/tokenizer.json"), cv::Exception);
    TempFolder empty;
    EXPECT_THROW(Tokenizer::fromHuggingFace(empty.path()), cv::Exception);
}

TEST(HFTokenizer, mutated_files_fail_only_with_cv_exceptions)
{
    // Byte flips, cuts and repeats of valid files: each loads or raises cv::Exception (any
    // other exception escapes and fails the test).
    const std::string seeds[] = {
        byteLevelJson(splitThenByteLevel(kQwen2Regex), R"(, "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|eot|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]})"),
        R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "<0x41>": 1,
            "\u2581": 2, "a": 3, "\u2581a": 4}, "merges": [["\u2581", "a"]]},
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}})",
    };
    TempFolder folder;
    RNG rng(20240601);
    int loaded = 0, rejected = 0;
    for (const std::string& seed : seeds)
    {
        for (int trial = 0; trial < 300; trial++)
        {
            std::string text = seed;
            for (int edits = 1 + rng.uniform(0, 3); edits > 0 && !text.empty(); edits--)
            {
                const size_t pos = (size_t)rng.uniform(0, (int)text.size());
                switch (rng.uniform(0, 4))
                {
                case 0: text[pos] = (char)rng.uniform(0, 256); break;
                case 1: text.erase(pos, (size_t)rng.uniform(1, 8)); break;
                case 2: text.insert(pos, text.substr(pos, (size_t)rng.uniform(1, 16))); break;
                default: text[pos] = "{}[]\",:0-9"[rng.uniform(0, 10)]; break;
                }
            }
            writeFile(folder.file("tokenizer.json"), text);
            try
            {
                std::shared_ptr<Tokenizer> tokenizer = Tokenizer::fromHuggingFace(folder.path());
                tokenizer->decode(tokenizer->encode("a ab\nA", true, true), true);
                loaded++;
            }
            catch (const cv::Exception&)
            {
                rejected++;
            }
        }
    }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(rejected, 0);
}

// ---------------------------------------------------------------------------------------------
// The public API

TEST(HFTokenizer, public_create_accepts_tokenizer_json_and_folders)
{
    const std::string folder = llm_test::sharedTestData(kLlama2Folder);
    Ptr<cv::dnn::Tokenizer> fromFolder = cv::dnn::Tokenizer::create(folder);
    Ptr<cv::dnn::Tokenizer> fromJson = cv::dnn::Tokenizer::create(folder + "/tokenizer.json");
    Ptr<cv::dnn::Tokenizer> fromGGUF = cv::dnn::Tokenizer::create(llm_test::vocabPath("llama-spm"));
    const std::vector<int> expected = fromGGUF->encode("Hello world", true, false);
    EXPECT_EQ(std::vector<int>({1, 15043, 3186}), expected);
    EXPECT_EQ(expected, fromFolder->encode("Hello world", true, false));
    EXPECT_EQ(expected, fromJson->encode("Hello world", true, false));
    EXPECT_EQ("Hello world", fromFolder->decode(expected, false));
    EXPECT_EQ(fromGGUF->getVocabSize(), fromJson->getVocabSize());
    EXPECT_EQ(2, fromJson->getEosId());
}
