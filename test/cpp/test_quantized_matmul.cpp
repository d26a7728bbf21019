// LLMMatMul's integer path (8-bit activations; every type with an integer kernel is repacked
// into groups of 8 interleaved rows, the last rows by the row kernels) against exact math on
// the weights' decoded values: the blocks of tools/gguf/make_quant_vectors.py (edge cases
// included: zero, tiny and huge scales) with the spec decoder's float values as truth. ctest
// runs these tests a second time with AVX2 turned off (llm_tests_without_avx2 in
// test/tests.cmake), where the baseline has no integer kernels and the float path runs.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "test_common.hpp"
#include "../../modules/dnn/src/llm/kernels/amx_tiles.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

Mat matmul(const Mat& weights, int type, int in, int out, const Mat& x, bool integerDot)
{
    LayerParams lp;
    lp.name = "mm";
    lp.type = "LLMMatMul";
    lp.set("ggml_type", type);
    lp.set("in_features", in);
    lp.set("out_features", out);
    lp.set("integer_dot", integerDot);
    lp.blobs.push_back(weights);
    Net net;
    net.addLayerToPrev(lp.name, lp.type, lp);
    net.setInput(x);
    return net.forward().clone();
}

/* Weights of `out` rows and `in` inputs made of the 21 vectors of one block (Q4_0 / Q4_1 / Q5_x /
   Q8_0 / MXFP4: unit = 32 inputs) or super-block (K types: 256 inputs) of a type of
   tools/gguf/make_quant_vectors.py: block j of row n is vector (n + 3 j) % 21, so that a kernel
   taking the wrong block fails. */
Mat weightsOfVectors(const FileNode& type, int unit, int in, int out)
{
    const std::vector<char> raw = llm_test::readFileBytes(llm_test::testModel("quant_vectors/" + (std::string)type["bin"]));
    const int vectors = (int)type["n_elements"] / unit, units = in / unit;
    const size_t unitBytes = raw.size() / vectors;
    Mat weights(out, (int)(units * unitBytes), CV_8U);
    for (int n = 0; n < out; n++)
        for (int j = 0; j < units; j++)
            std::memcpy(weights.ptr(n) + j * unitBytes, raw.data() + ((n + 3 * j) % vectors) * unitBytes, unitBytes);
    return weights;
}

TEST(QuantizedMatMul, integerPathMatchesExactMathWithinActivationRounding)
{
    FileStorage fs(llm_test::testModel("quant_vectors/quant_vectors.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened());
    int checked = 0;
    for (const FileNode& t : fs["types"])
    {
        const std::string name = (std::string)t["type"];
        const bool kQuant = name == "Q2_K" || name == "Q3_K" || name == "Q4_K" || name == "Q5_K" || name == "Q6_K";
        if (name != "Q4_0" && name != "Q4_1" && name != "Q5_0" && name != "Q5_1" && name != "Q8_0" && name != "MXFP4" && !kQuant)
            continue;
        SCOPED_TRACE(name);
        const std::vector<char> decodedBytes = llm_test::readFileBytes(llm_test::testModel("quant_vectors/" + (std::string)t["f32"]));
        const float* decoded = reinterpret_cast<const float*>(decodedBytes.data());
        // 189 rows of 5 blocks / super-blocks: 23 interleaved groups of 8 and 5 rows for the row
        // kernels.
        const int unit = kQuant ? 256 : 32, vectors = (int)t["n_elements"] / unit;
        const int in = 5 * unit, out = 9 * vectors;
        ASSERT_EQ(vectors, 21);
        auto vectorOf = [&](int n, int k) { return (n + 3 * (k / unit)) % vectors; };  // row n, input k
        const Mat weights = weightsOfVectors(t, unit, in, out);

        // 21 tokens: the AMX kernels' passes of 16 and 5 rows, the AVX-512 kernels' tiles of 8, 4
        // and 1. 189 rows: 11 pairs of groups (the two-group kernels where the CPU has them), a
        // lone group (the one-group kernel) and 5 rows (the row kernels). Twice: uniform
        // activations, and activations that 8 bits hold exactly (m / 128 with integer m, |m| = 127
        // somewhere in each block: scale 1 / 128, q = m), where the integer path is exact math up
        // to float rounding (catches errors within the rounding bound).
        const int tokens = 21;
        const int threads = getNumThreads();
        setNumThreads(1);
        RNG rng(7);
        for (const bool exact8 : {false, true})
        {
            SCOPED_TRACE(exact8 ? "activations exact in 8 bits" : "uniform activations");
            Mat x(tokens, in, CV_32F);
            if (!exact8)
                rng.fill(x, RNG::UNIFORM, -1.f, 1.f);
            else
                for (int r = 0; r < tokens; r++)
                    for (int b = 0; b < in / 32; b++)
                    {
                        const int peak = rng.uniform(0, 32);
                        for (int k = 0; k < 32; k++)
                        {
                            const int m = k == peak ? (rng.uniform(0, 2) ? 127 : -127) : rng.uniform(-127, 128);
                            x.at<float>(r, 32 * b + k) = m / 128.f;
                        }
                    }
            const Mat y = matmul(weights, (int)t["ggml_type"], in, out, x, true);
            ASSERT_EQ(y.rows, tokens);
            for (int r = 0; r < tokens; r++)
            {
                // Each activation block is rounded to 8 bits (step max|x| / 127): the error of a
                // dot is at most half a step times sum |w| over the block, plus float rounding.
                // llama.cpp's Q8_0 rounds the step to fp16 after rounding q: each |q| <= 127 is
                // then off by up to 127 times that rounding (a block of huge MXFP4 weights, one
                // per row, shows it).
                for (int n = 0; n < out; n++)
                {
                    double exact = 0, bound = 0, magnitude = 0;
                    for (int b = 0; b < in / 32; b++)
                    {
                        double maxAbs = 0, wAbs = 0;
                        for (int k = 32 * b; k < 32 * b + 32; k++)
                        {
                            const double w = decoded[(size_t)vectorOf(n, k) * unit + k % unit], v = x.at<float>(r, k);
                            exact += w * v;
                            magnitude += std::fabs(w * v);
                            maxAbs = std::max(maxAbs, std::fabs(v));
                            wAbs += std::fabs(w);
                        }
                        const double step = maxAbs / 127;
                        bound += wAbs * (step / 2 + std::fabs((double)(float)hfloat((float)step) - step) * 127);
                    }
                    bound = exact8 ? magnitude * 1e-5 + 1e-6 : bound * 1.001 + magnitude * 1e-5 + 1e-6;
                    EXPECT_LE(std::fabs(y.at<float>(r, n) - exact), bound) << "token " << r << " row " << n;
                }
                // A token alone gets bit-identical results (interleaved groups and row kernels alike).
                const Mat alone = matmul(weights, (int)t["ggml_type"], in, out, x.row(r), true);
                EXPECT_EQ(cv::norm(alone, y.row(r), NORM_INF), 0.0) << "token " << r;
            }
        }
        setNumThreads(threads);
        checked++;
    }
    EXPECT_EQ(checked, 11);
}

// Whether BF16 prompts take vdpbf16ps here: an AVX-512 VNNI CPU (the kernels' AVX512_CLX build,
// unless OPENCV_CPU_DISABLE turns it off) that also has AVX512_BF16.
static bool bf16DotProductsHere()
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return checkHardwareSupport(CV_CPU_AVX512_CLX) && __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

// A float rounded to bfloat16 (to nearest even; the test's values hold no NaN).
static float roundedToBF16(float f)
{
    Cv32suf v;
    v.f = f;
    v.u = (v.u + 0x7FFFu + ((v.u >> 16) & 1u)) & 0xFFFF0000u;
    return v.f;
}

// Float weights: F16 / BF16 rows of a few tokens take the fused decode-and-dot (512-bit,
// 256-bit and scalar parts by row length), F32 rows the float dot; beyond gemv_max_rows (32)
// tokens, tiles of 64 rows (two here, the second partial) take F16 / BF16's fused GEMM (register
// tiles of tokens x rows with partial ones at the ends, inputs in slices of 4096: 4200 inputs
// cross one) or Eigen's on F32 rows. Every result against exact math on the stored values
// (float sums: a relative bound); on the row path a token alone is bit-identical to the batch.
// BF16 prompts on CPUs with AVX512_BF16 take the tokens rounded to bfloat16 (as llama.cpp's BF16
// path does) unless integer_dot is false: their exact math is on the rounded tokens.
TEST(QuantizedMatMul, floatWeightsMatchExactMath)
{
    const int kF32 = 0, kF16 = 1, kBF16 = 30;  // ggml type ids
    for (int type : {kF32, kF16, kBF16})
        for (int in : {3, 8, 61, 64, 136, 200, 4200})
            for (int tokens : {3, 40})
                for (bool integerDot : {false, true})
                {
                    SCOPED_TRACE(cv::format("type %d, %d inputs, %d tokens, integer_dot %d", type, in, tokens, integerDot));
                    const int out = 70;
                    RNG rng(in + type);
                    Mat values(out, in, CV_32F);
                    rng.fill(values, RNG::UNIFORM, -2.f, 2.f);
                    // The stored bytes, and the values they hold decoded independently of the
                    // layer: OpenCV's float16 conversion, or bfloat16 = the upper half of a float
                    // (truncated here: any bfloat16 is a valid weight).
                    Mat weights;
                    if (type == kF32)
                        weights = Mat(out, 4 * in, CV_8U, values.data).clone();
                    else if (type == kF16)
                    {
                        Mat half;
                        values.convertTo(half, CV_16F);
                        half.convertTo(values, CV_32F);
                        weights = Mat(out, 2 * in, CV_8U, half.data).clone();
                    }
                    else
                    {
                        Mat bits(out, in, CV_16U);
                        for (int n = 0; n < out; n++)
                            for (int k = 0; k < in; k++)
                            {
                                Cv32suf v;
                                v.f = values.at<float>(n, k);
                                bits.at<uint16_t>(n, k) = (uint16_t)(v.u >> 16);
                                v.u &= 0xFFFF0000u;
                                values.at<float>(n, k) = v.f;
                            }
                        weights = Mat(out, 2 * in, CV_8U, bits.data).clone();
                    }
                    Mat x(tokens, in, CV_32F);
                    rng.fill(x, RNG::UNIFORM, -1.f, 1.f);
                    const Mat y = matmul(weights, type, in, out, x, integerDot);
                    ASSERT_EQ(y.total(), (size_t)tokens * out);
                    Mat tokensUsed = x.clone();
                    if (type == kBF16 && tokens > 32 && integerDot && bf16DotProductsHere())
                        for (float& v : Mat_<float>(tokensUsed))
                            v = roundedToBF16(v);
                    for (int r = 0; r < tokens; r++)
                    {
                        for (int n = 0; n < out; n++)
                        {
                            double exact = 0, magnitude = 0;
                            for (int k = 0; k < in; k++)
                            {
                                exact += (double)values.at<float>(n, k) * tokensUsed.at<float>(r, k);
                                magnitude += std::fabs((double)values.at<float>(n, k) * tokensUsed.at<float>(r, k));
                            }
                            EXPECT_LE(std::fabs(y.at<float>(r, n) - exact), magnitude * 1e-6 + 1e-7) << "token " << r << " row " << n;
                        }
                        if (tokens <= 32)
                        {
                            const Mat alone = matmul(weights, type, in, out, x.row(r), integerDot);
                            EXPECT_EQ(cv::norm(alone, y.row(r), NORM_INF), 0.0) << "token " << r;
                        }
                    }
                }
}

// A layer of several weights of one input (a block's q, k, v: one parallel section over all
// their rows) gives each output bit for bit what a layer of that weight alone gives: weights of
// different types (two-group kernels, a lone group, row kernels, and F16 on the float path),
// biases, 1 to 40 tokens (past gemv_max_rows the float weight takes the GEMM), 1 and 2 threads.
TEST(QuantizedMatMul, severalWeightsEqualEachAlone)
{
    FileStorage fs(llm_test::testModel("quant_vectors/quant_vectors.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened());
    const int in = 512;
    struct Weight { int type; Mat rows, bias; };
    std::vector<Weight> weights;
    const std::pair<const char*, int> quantized[] = {{"Q4_K", 189}, {"Q6_K", 40}, {"Q8_0", 27}};
    for (const auto& tq : quantized)
        for (const FileNode& t : fs["types"])
            if ((std::string)t["type"] == tq.first)
                weights.push_back({(int)t["ggml_type"], weightsOfVectors(t, tq.first[3] == 'K' ? 256 : 32, in, tq.second), Mat()});
    ASSERT_EQ(weights.size(), (size_t)3);
    RNG rng(11);
    Mat f16Values(13, in, CV_32F), f16;
    rng.fill(f16Values, RNG::UNIFORM, -1.f, 1.f);
    f16Values.convertTo(f16, CV_16F);
    weights.push_back({1, Mat(13, 2 * in, CV_8U, f16.data).clone(), Mat()});
    for (Weight& w : weights)
    {
        w.bias.create(1, w.rows.rows, CV_32F);
        rng.fill(w.bias, RNG::UNIFORM, -1.f, 1.f);
    }

    const int threads = getNumThreads();
    for (const bool withBias : {false, true})
        for (int threadCount : {1, 2})
            for (int tokens : {1, 7, 21, 40})
            {
                SCOPED_TRACE(cv::format("bias %d, %d threads, %d tokens", withBias, threadCount, tokens));
                setNumThreads(threadCount);
                Mat x(tokens, in, CV_32F);
                rng.fill(x, RNG::UNIFORM, -1.f, 1.f);
                LayerParams lp;
                lp.name = "qkv";
                lp.type = "LLMMatMul";
                std::vector<int> types, outs;
                for (const Weight& w : weights)
                {
                    types.push_back(w.type);
                    outs.push_back(w.rows.rows);
                    lp.blobs.push_back(w.rows);
                }
                if (withBias)
                    for (const Weight& w : weights)
                        lp.blobs.push_back(w.bias);
                lp.set("ggml_type", DictValue::arrayInt(types.data(), (int)types.size()));
                lp.set("in_features", in);
                lp.set("out_features", DictValue::arrayInt(outs.data(), (int)outs.size()));
                Net net;
                net.addLayerToPrev(lp.name, lp.type, lp);
                net.setInput(x);
                std::vector<Mat> together;
                net.forward(together, "qkv");  // all outputs of the layer
                ASSERT_EQ(together.size(), weights.size());
                for (size_t i = 0; i < weights.size(); i++)
                {
                    Mat alone = matmul(weights[i].rows, weights[i].type, in, weights[i].rows.rows, x, true);
                    if (withBias)
                        for (int r = 0; r < tokens; r++)
                            alone.row(r) += weights[i].bias;
                    ASSERT_EQ(together[i].size(), alone.size()) << "weight " << i;
                    EXPECT_EQ(cv::norm(together[i], alone, NORM_INF), 0.0) << "weight " << i;
                }
            }
    setNumThreads(threads);
}

// The run of llm_tests_without_avx2 must really be one without AVX2: OpenCV's dispatch
// (CV_CPU_DISPATCH) asks checkHardwareSupport, which honours OPENCV_CPU_DISABLE.
// Run by ctest llm_tests_without_avx2 only (excluded from the discovered tests): the
// environment variable really turned AVX2 off, so the other tests of that run took the baseline.
TEST(WithoutAVX2, dispatchIsOff)
{
    const char* disabled = std::getenv("OPENCV_CPU_DISABLE");
    ASSERT_TRUE(disabled && std::strstr(disabled, "AVX2")) << "run with OPENCV_CPU_DISABLE=AVX512-CLX,AVX512-SKX,AVX2";
    EXPECT_FALSE(checkHardwareSupport(CV_CPU_AVX2));
    EXPECT_FALSE(checkHardwareSupport(CV_CPU_AVX512_SKX));  // the attention kernels' other level
    EXPECT_FALSE(checkHardwareSupport(CV_CPU_AVX512_CLX));  // the weight kernels' VNNI level
}

// The run of llm_tests_without_vnni (ctest only) takes the kernels' AVX2 builds: the weights'
// (AVX512_CLX off), the attention's and float GEMM's (AVX512_SKX off).
TEST(WithoutVNNI, dispatchIsOff)
{
    const char* disabled = std::getenv("OPENCV_CPU_DISABLE");
    ASSERT_TRUE(disabled && std::strstr(disabled, "AVX512-CLX") && std::strstr(disabled, "AVX512-SKX"))
        << "run with OPENCV_CPU_DISABLE=AVX512-CLX,AVX512-SKX";
    EXPECT_FALSE(checkHardwareSupport(CV_CPU_AVX512_CLX));
    EXPECT_FALSE(checkHardwareSupport(CV_CPU_AVX512_SKX));
}

// The AMX kernels run where the CPU has AMX-TILE and AMX-INT8 (Linux lists amx_tile / amx_int8
// in /proc/cpuinfo only when it also supports their state) unless OPENCV_DNN_LLM_AMX=0: then the
// Q4_0 / Q8_0 cases above with 5 or more tokens took them, and a token alone (checked
// bit-identical) the AVX-512 kernels.
TEST(QuantizedMatMul, amxTilesGrantedWhereTheCpuHasThem)
{
    bool tile = false, int8 = false;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.compare(0, 5, "flags") == 0)
        {
            line += ' ';
            tile = line.find(" amx_tile ") != std::string::npos;
            int8 = line.find(" amx_int8 ") != std::string::npos;
            break;
        }
    const char* amx = std::getenv("OPENCV_DNN_LLM_AMX");
    const bool off = amx && std::strcmp(amx, "0") == 0;
    EXPECT_EQ(cv::dnn::llm::amxTilesGranted(), tile && int8 && !off) << "amx_tile " << tile << ", amx_int8 " << int8;
}

// The run of llm_tests_without_amx (ctest only) takes the AVX-512 kernels for batches too.
TEST(WithoutAMX, tilesAreOff)
{
    const char* amx = std::getenv("OPENCV_DNN_LLM_AMX");
    ASSERT_TRUE(amx && std::strcmp(amx, "0") == 0) << "run with OPENCV_DNN_LLM_AMX=0";
    EXPECT_FALSE(cv::dnn::llm::amxTilesGranted());
}

} // namespace
