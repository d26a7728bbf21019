// Heap allocations of a decode step, counted by samples/allocation_counter.cpp (which replaces
// the process's C allocator). A separate executable, so that the other tests run without it.

#include <gtest/gtest.h>
#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/llm.hpp>

#include "../cpp/test_common.hpp"

#include "../../samples/allocation_counter.hpp"

#include <chrono>
#include <thread>

using namespace cv;
using namespace cv::dnn;

namespace {

struct Decoder
{
    Net net;
    Mat input = Mat(1, 1, CV_32F);
    std::vector<int> sequences = std::vector<int>(1, 0);
    int next = 0;

    explicit Decoder(const std::string& model) : net(readNet(model)) {}

    void prefill(const std::vector<int>& ids)
    {
        Mat m(1, (int)ids.size(), CV_32F);
        for (size_t i = 0; i < ids.size(); i++)
            m.at<float>((int)i) = (float)ids[i];
        setLLMBatch(net, std::vector<int>(ids.size(), 0));
        net.setInput(m);
        next = argmax(net.forward());
    }

    // One greedy decode step, as a serving loop would run it.
    void step()
    {
        input.at<float>(0) = (float)next;
        setLLMBatch(net, sequences);
        net.setInput(input);
        next = argmax(net.forward());
    }

    static int argmax(const Mat& logits)
    {
        const float* p = logits.ptr<float>();
        int best = 0;
        for (int i = 1; i < (int)logits.total(); i++)
            if (p[i] > p[best])
                best = i;
        return best;
    }
};

// Allocations per step of `steps` decode steps after a warm-up that grew the cache's page pool
// to the same length (then rewound): buffers, scratch and pages are all in place.
double allocationsPerStep(const std::string& model, int steps)
{
    const std::vector<int> prompt = {1, 403, 407, 261, 378};
    Decoder d(model);
    d.prefill(prompt);
    for (int i = 0; i < steps + 2; i++)
        d.step();
    getLLMKVCache(d.net)->truncateSequence(0, 0);
    d.prefill(prompt);  // a shape change back to the prompt, then single tokens again
    d.step();
    // Every pool thread runs a task once: OpenCV sets up a thread's local state (its RNG) the
    // first time it runs one, a one-time allocation a busy machine can delay into the steps.
    parallel_for_(Range(0, 64), [](const Range&) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, 64);
    const long before = heapAllocations();
    for (int i = 0; i < steps; i++)
        d.step();
    return (double)(heapAllocations() - before) / steps;
}

class DecodeAllocations : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeAllocations, steadyDecodeStepAllocatesNothingOnOneThread)
{
    const int threads = getNumThreads();
    setNumThreads(1);
    const double perStep = allocationsPerStep(GetParam(), 24);
    setNumThreads(threads);
    EXPECT_EQ(perStep, 0.0);
}

// With threads: OpenCV's thread pool recycles its job objects (patches/0006), so a
// multi-threaded step allocates nothing either.
TEST_P(DecodeAllocations, steadyDecodeStepAllocatesNothingOnTwoThreads)
{
    const int threads = getNumThreads();
    setNumThreads(2);
    const double perStep = allocationsPerStep(GetParam(), 24);
    setNumThreads(threads);
    EXPECT_EQ(perStep, 0.0);
}

INSTANTIATE_TEST_CASE_P(Models, DecodeAllocations, ::testing::Values(
    llm_test::sharedTestData("stories260K.gguf"),
    llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"),
    llm_test::testModel("synthetic/synthetic_qwen2_Q5_K_M.gguf")));

} // namespace
