// Hostile and broken GGUF files, made by cutting and corrupting a real one: every one must
// give a cv::Exception (never a crash, a hang or a huge allocation).

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

std::string writeTemp(const std::vector<char>& bytes, const std::string& tag)
{
    const std::string path = cv::tempfile((tag + ".gguf").c_str());
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), (std::streamsize)bytes.size());
    return path;
}

// The model loader must refuse the file, and so must the metadata reader unless the damage is
// only visible to the model (a well-formed file describing an inconsistent model).
void expectRejected(const std::vector<char>& bytes, const std::string& tag, bool wellFormed = false)
{
    SCOPED_TRACE(tag);
    const std::string path = writeTemp(bytes, "bad");
    if (!wellFormed)
        EXPECT_THROW(GGUFFile::open(path), cv::Exception);
    EXPECT_THROW(readNet(path), cv::Exception);
    std::remove(path.c_str());
}

template <typename T> void put(std::vector<char>& b, size_t pos, T v)
{
    ASSERT_LE(pos + sizeof(T), b.size());
    std::memcpy(b.data() + pos, &v, sizeof(T));
}

size_t find(const std::vector<char>& b, const std::string& s)
{
    auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
    CV_Assert(it != b.end());
    return (size_t)(it - b.begin());
}

class GGUFMalformed : public ::testing::Test
{
protected:
    void SetUp() override
    {
        original = llm_test::readFileBytes(llm_test::sharedTestData("stories260K.gguf"));
        ASSERT_GT(original.size(), 1000u);
        // Tensor info of token_embd.weight: name, n_dims (u32), ne[n_dims] (u64), type (u32), offset (u64).
        embdInfo = find(original, "token_embd.weight") + strlen("token_embd.weight");
    }
    std::vector<char> original;
    size_t embdInfo = 0;
};

TEST_F(GGUFMalformed, originalLoads)
{
    const std::string path = writeTemp(original, "good");
    EXPECT_NO_THROW(readNet(path));
    std::remove(path.c_str());
}

TEST_F(GGUFMalformed, truncatedAnywhere)
{
    // Every cut in the header and metadata (dense), then through the tensor data.
    std::vector<size_t> cuts;
    for (size_t n = 0; n < 64; n++)
        cuts.push_back(n);
    for (size_t n = 64; n < original.size() - 1; n += std::max<size_t>(1, original.size() / 150))
        cuts.push_back(n);
    cuts.push_back(original.size() - 1);
    for (size_t n : cuts)
        expectRejected(std::vector<char>(original.begin(), original.begin() + n), cv::format("cut at %zu", n));
}

TEST_F(GGUFMalformed, badMagicAndVersion)
{
    std::vector<char> b = original;
    b[0] = 'X';
    expectRejected(b, "magic");
    for (uint32_t v : {0u, 1u, 4u, 0x03000000u, 0xFFFFFFFFu})
    {
        b = original;
        put<uint32_t>(b, 4, v);
        expectRejected(b, cv::format("version %u", v));
    }
}

TEST_F(GGUFMalformed, hugeCounts)
{
    for (uint64 n : {(uint64)1 << 40, ~(uint64)0, (uint64)1 << 20})
    {
        std::vector<char> b = original;
        put<uint64>(b, 8, n);  // tensor count
        expectRejected(b, "tensor count");
        b = original;
        put<uint64>(b, 16, n);  // metadata count
        expectRejected(b, "metadata count");
    }
}

TEST_F(GGUFMalformed, hugeStringAndArrayLengths)
{
    // The first key's length, then the tokens array's length.
    std::vector<char> b = original;
    put<uint64>(b, 24, (uint64)1 << 62);
    expectRejected(b, "key length");
    b = original;
    const size_t tokens = find(b, "tokenizer.ggml.tokens") + strlen("tokenizer.ggml.tokens");
    // value type (u32 = 9, array), item type (u32 = 8, string), count (u64)
    put<uint64>(b, tokens + 8, (uint64)1 << 61);
    expectRejected(b, "array length");
    b = original;
    put<uint32_t>(b, tokens + 4, 77);
    expectRejected(b, "array item type");
    b = original;
    put<uint32_t>(b, tokens, 13);
    expectRejected(b, "value type");
}

TEST_F(GGUFMalformed, badTensorInfo)
{
    std::vector<char> b = original;
    put<uint32_t>(b, embdInfo, 5);
    expectRejected(b, "n_dims 5");
    b = original;
    put<uint32_t>(b, embdInfo, 0);
    expectRejected(b, "n_dims 0");
    b = original;
    put<uint64>(b, embdInfo + 4, 0);
    expectRejected(b, "zero dimension");
    b = original;
    put<uint64>(b, embdInfo + 12, (uint64)1 << 62);
    expectRejected(b, "huge dimension");
    b = original;
    put<uint64>(b, embdInfo + 12, 513);  // still inside the file, but output.weight has 512 rows
    expectRejected(b, "embedding rows != output rows", true);
    for (uint32_t type : {4u, 99u, 0xFFFFFFFFu, 10u /* Q2_K: row of 64 is not a block multiple */})
    {
        b = original;
        put<uint32_t>(b, embdInfo + 20, type);
        expectRejected(b, cv::format("type %u", type));
    }
    b = original;
    uint64 offset;
    std::memcpy(&offset, b.data() + embdInfo + 24, 8);
    put<uint64>(b, embdInfo + 24, offset + 4);
    expectRejected(b, "misaligned offset");
    b = original;
    put<uint64>(b, embdInfo + 24, (uint64)1 << 60);
    expectRejected(b, "offset past the end");
}

TEST_F(GGUFMalformed, wrongArchitecture)
{
    std::vector<char> b = original;
    const size_t pos = find(b, "llama");  // general.architecture's value comes first
    b[pos] = 'x';
    const std::string path = writeTemp(b, "arch");
    try
    {
        readNet(path);
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("architecture 'xlama' is not supported (supported: llama, qwen2, "), std::string::npos) << e.msg;
    }
    std::remove(path.c_str());
}

TEST(GGUFFiles, missingFileIsAnError)
{
    EXPECT_THROW(GGUFFile::open("/nonexistent/model.gguf"), cv::Exception);
    EXPECT_THROW(readNet("/nonexistent/model.gguf"), cv::Exception);
}

} // namespace
