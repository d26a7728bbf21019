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
#include <cstdlib>
#include <thread>
#include <vector>

using namespace cv;
using namespace cv::dnn;

namespace {

struct Decoder
{
    Net net;
    Mat input;
    std::vector<int> sequences, next;

    // `count` sequences decoded together (one token each per step: a batched serving loop).
    // With adapters, sequence s runs with adapter s % (adapters + 1) (the last: none).
    explicit Decoder(const std::string& model, int count = 1, const std::vector<std::string>& adapters = {})
        : net(readNet(model)), input(1, count, CV_32F), next(count, 0)
    {
        std::vector<int> ids;
        for (const std::string& a : adapters)
            ids.push_back(loadLLMAdapter(net, a));
        for (int s = 0; s < count; s++)
        {
            sequences.push_back(s);
            const int k = s % ((int)ids.size() + 1);
            if (k < (int)ids.size())
                setLLMSequenceAdapters(net, s, std::vector<int>{ids[k]}, std::vector<float>{0.5f + k});
        }
    }

    // Each sequence gets the prompt (shifted by its index: different contexts), in one forward each.
    void prefill(const std::vector<int>& ids)
    {
        for (int s : sequences)
        {
            Mat m(1, (int)ids.size(), CV_32F);
            for (size_t i = 0; i < ids.size(); i++)
                m.at<float>((int)i) = (float)(ids[i] + s);
            setLLMBatch(net, std::vector<int>(ids.size(), s));
            net.setInput(m);
            next[s] = argmax(net.forward(), 0);
        }
    }

    // One greedy decode step, as a serving loop would run it.
    void step()
    {
        for (size_t s = 0; s < sequences.size(); s++)
            input.at<float>((int)s) = (float)next[s];
        setLLMBatch(net, sequences);
        net.setInput(input);
        const Mat logits = net.forward();
        for (size_t s = 0; s < sequences.size(); s++)
            next[s] = argmax(logits, (int)s);
    }

    void rewind()
    {
        for (int s : sequences)
            getLLMKVCache(net)->truncateSequence(s, 0);
    }

    static int argmax(const Mat& logits, int row)
    {
        const int vocab = logits.size[logits.dims - 1];
        const float* p = logits.ptr<float>() + (size_t)row * vocab;
        int best = 0;
        for (int i = 1; i < vocab; i++)
            if (p[i] > p[best])
                best = i;
        return best;
    }
};

// Heap allocations the compiler cannot elide (each pointer escapes through a volatile sink):
// one through each entry point the counter replaces (but the obsolete memalign), and the ways
// a decode step would reach them (C++'s operator new, plain and aligned, a std::vector
// growing, OpenCV's allocator).
void* volatile g_sink = nullptr;

struct AlignedBlock
{
    alignas(128) char bytes[128];
};

struct DeliberateAllocation
{
    const char* name;
    void (*allocate)();
    int count;  // allocations it makes
};

const DeliberateAllocation kDeliberateAllocations[] = {
    {"malloc", [] { void* p = std::malloc(64); g_sink = p; std::free(p); }, 1},
    {"calloc", [] { void* p = std::calloc(8, 8); g_sink = p; std::free(p); }, 1},
    // realloc(nullptr, n) would be compiled as malloc(n): a block is grown instead.
    {"malloc + realloc", [] {
         void* p = std::malloc(8);
         g_sink = p;
         p = std::realloc(p, 4096);
         g_sink = p;
         std::free(p);
     }, 2},
    {"posix_memalign", [] { void* p = nullptr; if (posix_memalign(&p, 64, 64) == 0) g_sink = p; std::free(p); }, 1},
    {"operator new", [] { int* p = new int[16]; g_sink = p; delete[] p; }, 1},
    {"aligned operator new", [] { AlignedBlock* p = new AlignedBlock; g_sink = p; delete p; }, 1},
    {"std::vector growth", [] { std::vector<char> v; v.push_back(1); g_sink = v.data(); }, 1},
    {"cv::Mat", [] { Mat m(4, 4, CV_8U); g_sink = m.data; }, 1},  // at least: its data
};
const int kProofSteps = 2;  // counted steps per deliberate allocation

// A decoder after a warm-up that grew the cache's page pool to the length of `steps` more steps
// (then rewound): buffers, scratch and pages are all in place.
void warmUp(Decoder& d, int steps, const std::vector<int>& prompt)
{
    d.prefill(prompt);
    for (int i = 0; i < steps + 2; i++)
        d.step();
    d.rewind();
    d.prefill(prompt);  // a shape change back to the prompt, then single tokens again
    d.step();
    // Every pool thread runs a task once: OpenCV sets up a thread's local state (its RNG) the
    // first time it runs one, a one-time allocation a busy machine can delay into the steps.
    parallel_for_(Range(0, 64), [](const Range&) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, 64);
}

// Allocations per step of `steps` decode steps; `alsoInStep`, when given, runs after each step
// inside the counted region.
double allocationsPerStep(Decoder& d, int steps, void (*alsoInStep)() = nullptr)
{
    const long before = heapAllocations();
    for (int i = 0; i < steps; i++)
    {
        d.step();
        if (alsoInStep)
            alsoInStep();
    }
    return (double)(heapAllocations() - before) / steps;
}

// The counter is first shown to count: the same counted loop with each deliberate allocation
// added to its steps sees it (a counter that missed allocations would make the zero below
// meaningless). Then a steady decode step must allocate nothing.
// `sequences` decoded together; `promptTokens` of context before the counted steps (past 256:
// attention splits each token's keys into chunks and merges partials).
void expectDecodeStepAllocatesNothing(const std::string& model, int threads, int steps, int sequences = 1,
                                      int promptTokens = 5, const std::vector<std::string>& adapters = {})
{
    const int previous = getNumThreads();
    setNumThreads(threads);
    Decoder d(model, sequences, adapters);
    const int kinds = (int)(sizeof(kDeliberateAllocations) / sizeof(kDeliberateAllocations[0]));
    std::vector<int> prompt = {1, 403, 407, 261, 378};
    for (int i = (int)prompt.size(); i < promptTokens; i++)
        prompt.push_back(100 + (i * 37) % 300);
    warmUp(d, kinds * kProofSteps + steps, prompt);
    std::vector<double> seen;
    for (const DeliberateAllocation& a : kDeliberateAllocations)
        seen.push_back(allocationsPerStep(d, kProofSteps, a.allocate));
    const double perStep = allocationsPerStep(d, steps);
    setNumThreads(previous);
    bool counts = true;
    for (int i = 0; i < kinds; i++)
    {
        const DeliberateAllocation& a = kDeliberateAllocations[i];
        EXPECT_GE(seen[i], (double)a.count) << "the allocation counter missed " << a.name << " in the counted region";
        counts &= seen[i] >= a.count;
    }
    if (counts)  // otherwise a zero would prove nothing
        EXPECT_EQ(perStep, 0.0);
}

class DecodeAllocations : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeAllocations, steadyDecodeStepAllocatesNothingOnOneThread)
{
    expectDecodeStepAllocatesNothing(GetParam(), 1, 24);
}

// With threads: OpenCV's thread pool recycles its job objects (patches/0006), so a
// multi-threaded step allocates nothing either.
TEST_P(DecodeAllocations, steadyDecodeStepAllocatesNothingOnTwoThreads)
{
    expectDecodeStepAllocatesNothing(GetParam(), 2, 24);
}

// Batched decoding (8 sequences per forward) allocates nothing either.
TEST_P(DecodeAllocations, batchedDecodeStepAllocatesNothing)
{
    expectDecodeStepAllocatesNothing(GetParam(), 2, 12, 8);
}

// Nor does a step after 300 positions of context: attention over two chunks of 256 keys with
// their partials merged (stories260K: a 512-token context; the synthetic models hold 256).
TEST(DecodeAllocationsDeepContext, stepAfterSeveralAttentionChunksAllocatesNothing)
{
    expectDecodeStepAllocatesNothing(llm_test::sharedTestData("stories260K.gguf"), 2, 12, 1, 300);
}

// Nor does a batch whose sequences run with different LoRA adapters (two, and none).
TEST(DecodeAllocationsLoRA, batchMixingAdaptersAllocatesNothing)
{
    expectDecodeStepAllocatesNothing(llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"), 2, 12, 6, 5,
                                     {llm_test::testModel("synthetic/synthetic_llama_Q4_0_lora_r8.gguf"),
                                      llm_test::testModel("synthetic/synthetic_llama_Q4_0_lora_r16.gguf")});
}

INSTANTIATE_TEST_CASE_P(Models, DecodeAllocations, ::testing::Values(
    llm_test::sharedTestData("stories260K.gguf"),
    llm_test::testModel("synthetic/synthetic_llama_Q4_0.gguf"),
    llm_test::testModel("synthetic/synthetic_qwen2_Q5_K_M.gguf"),
    llm_test::testModel("synthetic/synthetic_qwen3_Q4_K_M.gguf"),   // per-head Q/K norm
    llm_test::testModel("synthetic/synthetic_gpt2_Q4_K_M.gguf"),    // positions, LayerNorm, GELU
    llm_test::testModel("synthetic/synthetic_phi3_Q4_K_M.gguf"),    // fused qkv, gate|up halves, LongRoPE
    llm_test::testModel("synthetic/synthetic_gemma2_Q4_K_M.gguf"),  // soft-caps, GELU gate, post-norms, window
    llm_test::testModel("synthetic/synthetic_gemma3_Q8_0.gguf"),    // local layers releasing pages
    llm_test::testModel("synthetic/synthetic_olmo2_Q4_K_M.gguf"),   // whole-projection Q/K norm
    llm_test::testModel("synthetic/synthetic_granite_Q4_K_M.gguf"), // embedding / residual / logit scales
    llm_test::testModel("synthetic/synthetic_smollm3_Q4_K_M.gguf"), // a layer without rotary
    llm_test::testModel("synthetic/synthetic_mistral3_Q4_K_M.gguf"),  // YaRN, attention temperature
    llm_test::testModel("synthetic/synthetic_gptneox_Q4_K_M.gguf"),   // partial rotary, parallel residual
    llm_test::testModel("synthetic/synthetic_phi2_Q4_K_M.gguf"),      // one LayerNorm for both, output bias
    llm_test::testModel("synthetic/synthetic_stablelm_qknorm_par_Q4_K_M.gguf"),  // per-head Q/K LayerNorm
    llm_test::testModel("synthetic/synthetic_qwen3moe_Q4_K_M.gguf"),  // experts (their buffers grow, then stay)
    llm_test::testModel("synthetic/synthetic_mixtral_Q8_0.gguf"),
    llm_test::testModel("synthetic/synthetic_gpt-oss_MXFP4_MOE.gguf"),   // sinks, window, expert biases
    llm_test::testModel("synthetic/gemma4_Q4_K_M.gguf"),  // padded local heads, shared KV, per-layer inputs
    llm_test::testModel("synthetic/hybrid_lfm2_Q4_K_M.gguf"),            // short convolutions' state
    llm_test::testModel("synthetic/hybrid_qwen35_Q4_K_M.gguf"),          // gated delta nets' state
    llm_test::testModel("synthetic/hybrid_qwen35moe_Q4_K_M.gguf"),       // experts with a gated shared expert
    llm_test::testModel("synthetic/hybrid_granitehybrid_Q4_K_M.gguf")));  // Mamba-2 scans' state

} // namespace
