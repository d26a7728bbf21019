// One LLMMatMul layer (y = x W^T with W in a ggml weight type, as every projection of a GGUF
// model) alone in a cv::dnn Net: random weights and activations, timed per forward (best and
// median), and compared with the layer's exact float path on the same weights (the integer path
// rounds activations to 8 bits per block of 32: its deviation is printed). Run it twice with
// OPENCV_DNN_LLM_AMX=0 or OPENCV_CPU_DISABLE=AVX512-CLX to compare one machine's kernels. One
// layer's weights of a model's size stay in the L3 cache between forwards; --copies=C runs C
// layers with weights of their own in turn, so that C x the weights' bytes beyond the caches
// times the read from memory, as a model's step does.
//
//   llm_matmul_bench [--type=Q4_0] [--rows=8] [--out=5632] [--in=2048] [--repetitions=50] [--threads=1] [--copies=1]

#include <opencv2/dnn.hpp>

#include "command_line.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |      | print this help }"
    "{type           | Q4_0 | weight type: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4 }"
    "{rows           | 8    | activation rows (tokens) per forward }"
    "{out            | 5632 | output features (weight rows) }"
    "{in             | 2048 | input features (a multiple of the type's block) }"
    "{repetitions    | 50   | timed forwards (of each copy) }"
    "{threads        | 1    | threads (-1: OpenCV's default) }"
    "{copies         | 1    | layers with their own weights, run in turn: enough of them (more bytes than the caches hold) time the weights read from memory at a small shape }";

namespace {

// What the benchmark needs of a type: its ggml id, block size and bytes, and where its float16
// scales lie in a block (random bytes there could be NaN or huge; elsewhere any byte is valid).
struct WeightType
{
    const char* name;
    int id, blockInputs, blockBytes;
    std::vector<int> halfOffsets;
};

const std::vector<WeightType>& weightTypes()
{
    static const std::vector<WeightType> types = {
        {"F32", 0, 1, 4, {}},         {"F16", 1, 1, 2, {}},          {"BF16", 30, 1, 2, {}},
        {"Q4_0", 2, 32, 18, {0}},     {"Q4_1", 3, 32, 20, {0, 2}},   {"Q5_0", 6, 32, 22, {0}},
        {"Q5_1", 7, 32, 24, {0, 2}},  {"Q8_0", 8, 32, 34, {0}},      {"Q2_K", 10, 256, 84, {80, 82}},
        {"Q3_K", 11, 256, 110, {108}}, {"Q4_K", 12, 256, 144, {0, 2}}, {"Q5_K", 13, 256, 176, {0, 2}},
        {"Q6_K", 14, 256, 210, {208}}, {"MXFP4", 39, 32, 17, {}},
    };
    return types;
}

// out rows of `in` weights: floats in [-1, 1] for the float types, random blocks with scales in
// [2^-8, 2^-6) for the quantized ones (MXFP4: E8M0 scale bytes 2^-8 or 2^-7).
Mat randomWeights(const WeightType& t, int out, int in, RNG& rng)
{
    Mat w(out, in / t.blockInputs * t.blockBytes, CV_8U);
    if (t.blockInputs == 1)
    {
        Mat values(out, in, CV_32F);
        rng.fill(values, RNG::UNIFORM, -1.f, 1.f);
        if (t.id == 0)
            std::memcpy(w.data, values.data, w.total());
        else if (t.id == 1)
        {
            Mat half(out, in, CV_16F, w.data);
            values.convertTo(half, CV_16F);
        }
        else
            for (size_t i = 0; i < values.total(); i++)  // bfloat16: a float's upper half
            {
                Cv32suf v;
                v.f = values.ptr<float>()[i];
                reinterpret_cast<uint16_t*>(w.data)[i] = (uint16_t)(v.u >> 16);
            }
        return w;
    }
    rng.fill(w, RNG::UNIFORM, 0, 256);
    for (int r = 0; r < out; r++)
        for (int b = 0; b < in / t.blockInputs; b++)
        {
            if (t.id == 39)
                w.ptr(r)[(size_t)b * t.blockBytes] = (uchar)(120 + (rng.next() & 1));
            for (int offset : t.halfOffsets)
            {
                const uint16_t half = (uint16_t)(0x1800 + (rng.next() & 0x3FF));
                std::memcpy(w.ptr(r) + (size_t)b * t.blockBytes + offset, &half, sizeof(half));
            }
        }
    return w;
}

Net matmulNet(const WeightType& t, const Mat& w, int out, int in, bool integerDot)
{
    LayerParams lp;
    lp.name = "matmul";
    lp.type = "LLMMatMul";
    lp.set("ggml_type", t.id);
    lp.set("in_features", in);
    lp.set("out_features", out);
    lp.set("integer_dot", integerDot);
    lp.blobs.push_back(w);
    Net net;
    net.addLayerToPrev(lp.name, lp.type, lp);
    return net;
}

} // namespace

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv, keys, "One quantized matmul layer (cv::dnn LLMMatMul) alone: time and deviation");
    const std::string typeName = cl.getString("type");
    const auto& types = weightTypes();
    const auto type = std::find_if(types.begin(), types.end(), [&](const WeightType& t) { return typeName == t.name; });
    if (type == types.end())
        cl.fail("--type: unknown weight type '" + typeName + "'");
    const int rows = cl.getInt("rows", 1, 4096), out = cl.getInt("out", 1, 1 << 20), in = cl.getInt("in", 1, 1 << 20);
    const int iterations = cl.getInt("repetitions", 1, 100000), threads = cl.getInt("threads", -1, 1024);
    const int copies = cl.getInt("copies", 1, 4096);
    if (threads == 0)
        cl.fail("--threads must be -1 (OpenCV's default) or positive, got 0");
    const int blockInputs = std::max(type->blockInputs, 32);  // the integer path's activation blocks
    if (in % blockInputs != 0)
        cl.fail(format("--in must be a multiple of %d for %s, got %d", blockInputs, type->name, in));
    if ((double)out * in > (double)(1 << 28) || (double)rows * in > (double)(1 << 28))
        cl.fail("--out x --in or --rows x --in is more than 2^28 values");

    try
    {
        if (threads > 0)
            setNumThreads(threads);
        RNG rng(1);
        const Mat w = randomWeights(*type, out, in, rng);
        if ((double)copies * w.total() > 8e9)
            cl.fail(format("--copies x the weights' %.0f MB is more than 8 GB", w.total() / 1e6));
        Mat x(rows, in, CV_32F);
        rng.fill(x, RNG::UNIFORM, -1.f, 1.f);

        Net exact = matmulNet(*type, w, out, in, false);
        exact.setInput(x);
        const Mat reference = exact.forward().clone();
        // Every copy has weights in memory of its own: a copy of the blob (float types read
        // their blob in place; the quantized ones repack it at load).
        std::vector<Net> nets;
        for (int c = 0; c < copies; c++)
        {
            nets.push_back(matmulNet(*type, w.clone(), out, in, true));
            nets.back().setInput(x);
            nets.back().forward();  // the first forward plans and allocates
        }

        std::vector<double> ms;
        Mat y;
        for (int it = 0; it < iterations; it++)
            for (int c = 0; c < copies; c++)
            {
                nets[c].setInput(x);
                TickMeter tm;
                tm.start();
                y = nets[c].forward();
                tm.stop();
                ms.push_back(tm.getTimeMilli());
            }
        std::sort(ms.begin(), ms.end());
        const double deviation = norm(y, reference, NORM_INF), scale = norm(reference, NORM_INF);

        std::cout << "OpenCV " << CV_VERSION << " with the LLM extension, " << getNumThreads() << " thread(s)\n"
                  << format("LLMMatMul %s %d x %d, %d rows: best %.3f ms, median %.3f ms, %.1f G multiply-adds/s\n",
                            type->name, out, in, rows, ms.front(), ms[ms.size() / 2],
                            (double)rows * out * in / (ms.front() * 1e-3) / 1e9)
                  << format("max |y - float path| = %.3g (%.2f%% of max |y|)\n", deviation,
                            100 * deviation / std::max(scale, 1e-30));
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_matmul_bench: " << e.what() << "\n";
        return 1;
    }
}
