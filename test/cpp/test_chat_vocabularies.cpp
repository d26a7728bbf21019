// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Qwen3.5's and Gemma 4's chat formats end to end against llama.cpp, on vocabularies made in
// their styles (tools/tokenizer/make_vocab_variants.py: qwen35-chat, gemma4-chat, each with its
// model's real chat template and a random-weight model around it). The oracle
// (test/data/tokenizer/chat/<name>.json, tools/tokenizer/make_chat_vocab_vectors.py) holds, per
// conversation, the template rendered by Python's jinja2 as transformers renders it and
// llama.cpp's (node-llama-cpp 3.21.1) ids of that text and of the prompt its chat runs. Here:
//   - our Jinja engine renders the template as jinja2 did, and the tokenizer gives llama.cpp's ids;
//   - TextGenerationModel::chat() prompts with llama.cpp's ids (BOS, the generation prompt);
//   - GenerationEngine requests of messagesJson (tools, reasoning_content, tool results, ...)
//     prompt with llama.cpp's ids (their greedy tokens equal those of llama.cpp's prompt ids);
//   - generation ends at llama.cpp's end-of-generation tokens (<|im_end|>, <turn|>, ...).
// The tokenizers on many more strings: test_tokenizer_vectors.cpp (vocab/qwen35-chat*.out, ...).

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/chat_template.hpp>
#include <opencv2/dnn/generation_engine.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/text_generation.hpp>
#include <opencv2/dnn/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "test_common.hpp"
#include "vocab_test_vectors.hpp"

namespace {

using namespace cv;
using namespace cv::dnn;
using Json = nlohmann::ordered_json;

const char* const kChatVocabularies[] = {"qwen35-chat", "gemma4-chat"};

Json readOracle(const std::string& name)
{
    const std::string path = llm_test::projectRoot() + "/test/data/tokenizer/chat/" + name + ".json";
    const std::vector<char> bytes = llm_test::readFileBytes(path);
    if (bytes.empty())
        throw std::runtime_error(path + " is missing");
    return Json::parse(bytes.begin(), bytes.end());
}

Json readMeta(const std::string& name)
{
    const std::string path = llm_test::projectRoot() + "/test/data/tokenizer/vocab/" + name + ".meta.json";
    const std::vector<char> bytes = llm_test::readFileBytes(path);
    if (bytes.empty())
        throw std::runtime_error(path + " is missing");
    return Json::parse(bytes.begin(), bytes.end());
}

std::vector<int> idsOf(const Json& list)
{
    return list.get<std::vector<int>>();
}

std::string modelPath(const std::string& name)
{
    return llm_test::testModel("tokenizer_vocabs/" + name + "-Q4_0.gguf");
}

class ChatVocabulary : public testing::TestWithParam<const char*> {};

// The template from the GGUF, rendered by our engine, tokenized by our tokenizer: llama.cpp's ids.
TEST_P(ChatVocabulary, templateRendersAndTokenizesAsJinja2AndLlamaCpp)
{
    const std::string name = GetParam();
    const Json oracle = readOracle(name);
    Ptr<GGUFFile> file = GGUFFile::open(llm_test::testModel("tokenizer_vocabs/" + name + ".gguf"));
    Ptr<cv::dnn::Tokenizer> tokenizer = cv::dnn::Tokenizer::create(llm_test::testModel("tokenizer_vocabs/" + name + ".gguf"));
    const Ptr<ChatTemplate> chat = ChatTemplate::create(file->getString("tokenizer.chat_template"),
                                                        oracle["bos_token"].get<std::string>(),
                                                        oracle["eos_token"].get<std::string>());
    const Json meta = readMeta(name);
    ASSERT_GE(oracle["cases"].size(), 15u);
    int sameText = 0, sameIds = 0;
    for (const Json& c : oracle["cases"])
    {
        SCOPED_TRACE(name + " / " + c["case"].get<std::string>());
        const std::string text = chat->applyJSON(c["messages"].dump(), c["add_generation_prompt"].get<bool>(),
                                                 c["extra"].dump());
        sameText += text == c["text"].get<std::string>();
        EXPECT_EQ(text, c["text"].get<std::string>());
        const std::vector<int> ids = tokenizer->encode(c["text"].get<std::string>(), false, true);
        sameIds += ids == idsOf(c["ids"]);
        EXPECT_EQ(llm_test::joinIds(ids), llm_test::joinIds(idsOf(c["ids"])));
        // llama.cpp's chat prompt: BOS added by the tokenizer, not written by the template.
        std::string prompt = c["text"].get<std::string>();
        const std::string bos = oracle["bos_token"].get<std::string>();
        if (meta["add_bos"].get<bool>() && prompt.compare(0, bos.size(), bos) == 0)
            prompt.erase(0, bos.size());
        EXPECT_EQ(llm_test::joinIds(tokenizer->encode(prompt, true, true)), llm_test::joinIds(idsOf(c["prompt_ids"])));
    }
    std::cout << name << ": " << oracle["cases"].size() << " conversations, " << sameText << " rendered as jinja2, "
              << sameIds << " tokenized as llama.cpp" << std::endl;
}

// chat(): the model's own template, the system message, BOS once, the generation prompt.
TEST_P(ChatVocabulary, chatPromptsWithLlamaCppIds)
{
    const std::string name = GetParam();
    const Json oracle = readOracle(name);
    TextGenerationModel model(modelPath(name));
    GenerationConfig config;
    config.maxNewTokens = 1;
    int checked = 0;
    for (const Json& c : oracle["cases"])
    {
        const std::string which = c["case"];
        if (which != "system_user" && which != "user_only")
            continue;
        SCOPED_TRACE(name + " / " + which);
        const Json& messages = c["messages"];
        model.resetConversation(messages.size() == 2 ? messages[0]["content"].get<std::string>() : std::string());
        model.chat(messages.back()["content"].get<std::string>(), config);
        EXPECT_EQ(llm_test::joinIds(model.getPromptTokenIds()), llm_test::joinIds(idsOf(c["prompt_ids"])));
        checked++;
    }
    EXPECT_EQ(checked, 2);
}

// GenerationEngine with messagesJson and template variables (tools, enable_thinking, ...): the
// prompt is llama.cpp's (same length; greedy tokens equal to those of llama.cpp's ids).
TEST_P(ChatVocabulary, messagesJsonRequestsPromptWithLlamaCppIds)
{
    const std::string name = GetParam();
    const Json oracle = readOracle(name);
    TextGenerationModel model(modelPath(name));
    Ptr<GenerationEngine> engine = GenerationEngine::create(model);
    GenerationConfig config;
    config.maxNewTokens = 3;
    int checked = 0;
    for (const Json& c : oracle["cases"])
    {
        if (!c["add_generation_prompt"].get<bool>())
            continue;  // a request always asks for a reply
        SCOPED_TRACE(name + " / " + c["case"].get<std::string>());
        GenerationRequest byMessages;
        byMessages.messagesJson = c["messages"].dump();
        if (!c["extra"].empty())
            byMessages.chatContextJson = c["extra"].dump();
        byMessages.config = config;
        GenerationRequest byIds;
        byIds.promptTokenIds = idsOf(c["prompt_ids"]);
        byIds.config = config;
        const GenerationResult a = engine->wait(engine->submit(byMessages));
        const GenerationResult b = engine->wait(engine->submit(byIds));
        ASSERT_TRUE(a.error.empty()) << a.error;
        EXPECT_EQ(a.promptTokens, (int)byIds.promptTokenIds.size());
        EXPECT_EQ(a.tokenIds, b.tokenIds);
        checked++;
    }
    EXPECT_GE(checked, 10);
}

// The tokens that end a generation are llama.cpp's: Qwen's <|im_end|>, <|endoftext|> and FIM
// pad / repo / file separators; Gemma 4's <eos>, <turn|> and <|tool_response>, not Llama's </s>
// (text there).
TEST_P(ChatVocabulary, endOfGenerationTokensAreLlamaCpps)
{
    const std::string name = GetParam();
    const Json meta = readMeta(name);
    Ptr<cv::dnn::Tokenizer> tokenizer = cv::dnn::Tokenizer::create(llm_test::testModel("tokenizer_vocabs/" + name + ".gguf"));
    std::vector<int> ours;
    for (int id = 0; id < tokenizer->getVocabSize(); id++)
    {
        if (tokenizer->isEndOfGeneration(id))
            ours.push_back(id);
    }
    EXPECT_EQ(llm_test::joinIds(ours), llm_test::joinIds(idsOf(meta["eog"])));
    EXPECT_EQ(tokenizer->getEosId(), meta["eos"].get<int>());
    EXPECT_EQ(tokenizer->getBosId(), meta["bos"].get<int>());
}

// The same vocabulary as a Hugging Face tokenizer.json (written from the GGUF by
// gguf_vocab_to_tokenizer_json.py as the models' files are laid out: Qwen3.5's NFC normalizer,
// Split with its regex and ByteLevel; Gemma 4's "\xE2\x96\x81" Replace, Split " " and BPE merges
// with byte fallback) reads as the same tokenizer: llama.cpp's ids on the corpus with and
// without special-token parsing and on the chat renderings, and its end tokens.
TEST_P(ChatVocabulary, tokenizerJsonTokenizesAsLlamaCpp)
{
    const std::string name = GetParam();
    Ptr<cv::dnn::Tokenizer> tokenizer = cv::dnn::Tokenizer::create(llm_test::testModel("tokenizer_vocabs/" + name + "-hf"));
    const std::string vectors = llm_test::projectRoot() + "/test/data/tokenizer/";
    const std::vector<std::string> inputs = llm_test::readInputFile(vectors + "corpus.inp");
    for (bool parseSpecial : {false, true})
    {
        const std::string set = name + (parseSpecial ? ".special" : "");
        const std::vector<std::vector<int>> expected = llm_test::readIdFile(vectors + "vocab/" + set + ".out");
        ASSERT_EQ(inputs.size(), expected.size());
        int failed = 0;
        for (size_t i = 0; i < inputs.size(); i++)
        {
            const std::vector<int> ids = tokenizer->encode(inputs[i], false, parseSpecial);
            if (ids != expected[i] && ++failed <= 3)
                ADD_FAILURE() << set << " input " << i << " '" << inputs[i] << "'\n  llama.cpp "
                              << llm_test::joinIds(expected[i]) << "\n  ours      " << llm_test::joinIds(ids);
        }
        EXPECT_EQ(0, failed) << set;
    }
    for (const Json& c : readOracle(name)["cases"])
        EXPECT_EQ(llm_test::joinIds(tokenizer->encode(c["text"].get<std::string>(), false, true)),
                  llm_test::joinIds(idsOf(c["ids"]))) << c["case"];
    const Json meta = readMeta(name);
    std::vector<int> ends;
    for (int id = 0; id < tokenizer->getVocabSize(); id++)
    {
        if (tokenizer->isEndOfGeneration(id))
            ends.push_back(id);
    }
    EXPECT_EQ(llm_test::joinIds(ends), llm_test::joinIds(idsOf(meta["eog"])));
    EXPECT_EQ(tokenizer->getBosId(), meta["bos"].get<int>());
    EXPECT_EQ(tokenizer->getEosId(), meta["eos"].get<int>());
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ChatVocabulary, testing::ValuesIn(kChatVocabularies),
                         [](const testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

} // namespace
