// Dequantization of every supported ggml type, through the token-embedding layer, against
// the spec decoder of tools/gguf/quants.py on synthetic blocks (edge cases included) written
// by tools/gguf/make_quant_vectors.py.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

TEST(GGMLDequantize, matchesSpecDecoder)
{
    FileStorage fs(llm_test::testModel("quant_vectors/quant_vectors.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened()) << "run tools/gguf/make_quant_vectors.py first";
    int checked = 0;
    for (const FileNode& t : fs["types"])
    {
        const std::string name = (std::string)t["type"];
        SCOPED_TRACE(name);
        const std::vector<char> raw = llm_test::readFileBytes(llm_test::testModel("quant_vectors/" + (std::string)t["bin"]));
        const std::vector<char> expectedBytes = llm_test::readFileBytes(llm_test::testModel("quant_vectors/" + (std::string)t["f32"]));
        const int n = (int)t["n_elements"];
        ASSERT_EQ((int)raw.size(), (int)t["bin_bytes"]);
        ASSERT_EQ(expectedBytes.size(), (size_t)n * sizeof(float));

        // One table row holding every block: looking up id 0 dequantizes them all.
        LayerParams lp;
        lp.name = "embd";
        lp.type = "LLMTokenEmbedding";
        lp.set("ggml_type", (int)t["ggml_type"]);
        lp.set("embedding_length", n);
        lp.set("vocab_size", 1);
        lp.blobs.push_back(Mat(1, (int)raw.size(), CV_8U, (void*)raw.data()).clone());
        Net net;
        net.addLayerToPrev(lp.name, lp.type, lp);
        net.setInput(Mat(1, 1, CV_32F, Scalar(0)));
        const Mat y = net.forward();
        ASSERT_EQ(y.total(), (size_t)n);

        const float* expected = reinterpret_cast<const float*>(expectedBytes.data());
        int mismatches = 0;
        for (int i = 0; i < n; i++)
        {
            // Both sides compute in float32 in the same order: results are bit-identical.
            if (std::memcmp(&expected[i], y.ptr<float>() + i, sizeof(float)) != 0 && mismatches++ < 5)
                ADD_FAILURE() << "element " << i << ": " << y.ptr<float>()[i] << " != " << expected[i];
        }
        EXPECT_EQ(mismatches, 0);
        checked++;
    }
    EXPECT_EQ(checked, 14);  // F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K Q2_K Q3_K MXFP4
}

TEST(GGMLDequantize, unsupportedTypeIsRefused)
{
    LayerParams lp;
    lp.set("ggml_type", 23);  // IQ4_XS: parsed, no decoder
    lp.set("embedding_length", 256);
    lp.set("vocab_size", 1);
    lp.blobs.push_back(Mat(1, 136, CV_8U, Scalar(0)));
    EXPECT_THROW(LayerFactory::createLayerInstance("LLMTokenEmbedding", lp), cv::Exception);
}

} // namespace
