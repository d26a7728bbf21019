// TextGenerationModel::getGenerationDefaults(): the sampling settings a model file records
// (GGUF general.sampling.* keys as llama.cpp's converter writes them; genai_config.json's
// "search" as ONNX Runtime GenAI's builder writes it), checked against the values written into
// copies of the shared models, and hostile values refused with the key named.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;
namespace fs = std::filesystem;

namespace {

// GGUF key/value records (GGUF spec: key as u64 length + bytes, u32 type, value).
void putKey(std::vector<char>& b, const std::string& key, uint32_t type)
{
    const uint64_t n = key.size();
    b.insert(b.end(), (const char*)&n, (const char*)&n + 8);
    b.insert(b.end(), key.begin(), key.end());
    b.insert(b.end(), (const char*)&type, (const char*)&type + 4);
}

void putFloat32(std::vector<char>& b, const std::string& key, float v)
{
    putKey(b, key, 6);
    b.insert(b.end(), (const char*)&v, (const char*)&v + 4);
}

void putInt32(std::vector<char>& b, const std::string& key, int32_t v)
{
    putKey(b, key, 5);
    b.insert(b.end(), (const char*)&v, (const char*)&v + 4);
}

/** stories260K.gguf with `records` (count of them: `added`) inserted before its first key.
    A filler string record pads the insertion to a multiple of 32 bytes, so the tensor data
    (aligned to 32 after the tensor table) moves by the same amount and stays aligned. */
std::string storiesWith(std::vector<char> records, int added)
{
    std::vector<char> filler;
    putKey(filler, "test.padding", 8);
    const size_t fixed = records.size() + filler.size() + 8;
    const uint64_t padding = (32 - fixed % 32) % 32;
    filler.insert(filler.end(), (const char*)&padding, (const char*)&padding + 8);
    filler.insert(filler.end(), padding, ' ');
    records.insert(records.end(), filler.begin(), filler.end());

    std::vector<char> file = llm_test::readFileBytes(llm_test::sharedTestData("stories260K.gguf"));
    uint64_t kvCount;  // header: magic, version (u32 each), tensor count, key/value count (u64 each)
    std::memcpy(&kvCount, file.data() + 16, 8);
    kvCount += added + 1;
    std::memcpy(file.data() + 16, &kvCount, 8);
    file.insert(file.begin() + 24, records.begin(), records.end());
    const std::string path = cv::tempfile(".gguf");
    std::ofstream(path, std::ios::binary).write(file.data(), (std::streamsize)file.size());
    return path;
}

} // namespace

TEST(GenerationDefaults, ggufWithoutSamplingKeysIsGreedy)
{
    TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    const GenerationConfig d = model.getGenerationDefaults(), greedy;
    EXPECT_EQ(greedy.temperature, d.temperature);
    EXPECT_EQ(greedy.topK, d.topK);
    EXPECT_EQ(greedy.topP, d.topP);
    EXPECT_EQ(greedy.minP, d.minP);
    EXPECT_EQ(greedy.repetitionPenalty, d.repetitionPenalty);
}

TEST(GenerationDefaults, ggufSamplingKeys)
{
    std::vector<char> r;
    putFloat32(r, "general.sampling.temp", 0.7f);
    putInt32(r, "general.sampling.top_k", 20);
    putFloat32(r, "general.sampling.top_p", 0.8f);
    putFloat32(r, "general.sampling.min_p", 0.05f);
    putFloat32(r, "general.sampling.penalty_repeat", 1.1f);
    putInt32(r, "general.sampling.penalty_last_n", 32);
    const std::string path = storiesWith(r, 6);
    {
        TextGenerationModel model(path);
        const GenerationConfig d = model.getGenerationDefaults();
        EXPECT_EQ(0.7f, d.temperature);
        EXPECT_EQ(20, d.topK);
        EXPECT_EQ(0.8f, d.topP);
        EXPECT_EQ(0.05f, d.minP);
        EXPECT_EQ(1.1f, d.repetitionPenalty);
        EXPECT_EQ(32, d.repetitionWindow);
        // The insertion left the model intact: llama.cpp's greedy text.
        EXPECT_EQ(", there was a little girl named Lily. She loved to play", model.generate("Once upon a time", 16));
    }
    std::remove(path.c_str());
}

TEST(GenerationDefaults, ggufInvalidSettingNamesTheKey)
{
    std::vector<char> r;
    putFloat32(r, "general.sampling.top_p", 2.f);
    const std::string path = storiesWith(r, 1);
    try
    {
        TextGenerationModel model(path);
        ADD_FAILURE() << "top_p = 2 was accepted";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(std::string::npos, std::string(e.what()).find("general.sampling.top_p")) << e.what();
    }
    std::remove(path.c_str());
}

// A copy of the shared ONNX Runtime GenAI folder whose genai_config.json gets `search`.
TEST(GenerationDefaults, genaiConfigSearch)
{
    const fs::path shared = llm_test::sharedTestData("onnx/tiny-random-LlamaForCausalLM-fp16");
    const fs::path folder = fs::path(cv::tempfile("")).string() + "_genai";
    fs::create_directories(folder);
    for (const char* f : {"model.onnx", "model.onnx.data", "tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(shared / f, folder / f);
    std::ifstream in(shared / "genai_config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t open = config.find('{');
    ASSERT_NE(std::string::npos, open);
    auto withSearch = [&](const std::string& search) {
        std::ofstream(folder / "genai_config.json") << config.substr(0, open + 1) << "\"search\": " << search
                                                    << ", " << config.substr(open + 1);
    };

    withSearch("{\"do_sample\": true, \"temperature\": 0.6, \"top_k\": 40, \"top_p\": 0.9, \"repetition_penalty\": 1.2}");
    GenerationConfig d = TextGenerationModel((folder / "model.onnx").string()).getGenerationDefaults();
    EXPECT_EQ(0.6f, d.temperature);
    EXPECT_EQ(40, d.topK);
    EXPECT_EQ(0.9f, d.topP);
    EXPECT_EQ(1.2f, d.repetitionPenalty);

    // do_sample false: greedy, whatever the sampling fields say (ONNX Runtime GenAI's rule).
    withSearch("{\"do_sample\": false, \"temperature\": 0.6, \"top_k\": 40, \"repetition_penalty\": 1.0}");
    d = TextGenerationModel((folder / "model.onnx").string()).getGenerationDefaults();
    EXPECT_EQ(0.f, d.temperature);
    EXPECT_EQ(0, d.topK);
    EXPECT_EQ(1.f, d.repetitionPenalty);

    withSearch("{\"do_sample\": true, \"top_p\": -3}");
    EXPECT_THROW(TextGenerationModel((folder / "model.onnx").string()), cv::Exception);
    fs::remove_all(folder);
}
