// The KV cache and batching of a GGUF model on cv::dnn, measured:
//  - decode latency per token at context positions 16, 256, 1024 and the model's limit;
//  - decode throughput with 1, 4, 8 and 16 sequences in one forward (continuous batching's
//    steady state), and the speed-up over one sequence;
//  - KV cache memory per token for float32, float16 and 8-bit storage;
//  - the time of a forward that changes the token count (re-planning shapes on grow-only
//    buffers) against a steady decode step;
//  - heap allocations per steady decode step.
//
//   llm_kv_bench --model=FILE --threads=N [--gen-tokens=G]

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>

#include "allocation_counter.hpp"
#include "command_line.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

namespace {

const char* const keys =
    "{help h usage ? |    | print this help }"
    "{model m        |    | GGUF model file (required) }"
    "{threads        |    | threads (required) }"
    "{gen-tokens     | 32 | generated tokens (decode steps) per measurement }";

class Bench
{
public:
    Bench(const std::string& model, int vocab) : net_(readNet(model)), cache_(getLLMKVCache(net_)), vocab_(vocab), rng_(1) {}

    KVCache& cache() { return *cache_; }

    // Feeds `n` random tokens to each of the sequences (prefill in chunks of at most 512).
    void fill(const std::vector<int>& sequences, int n)
    {
        for (int seq : sequences)
            for (int done = 0; done < n;)
            {
                const int chunk = std::min(512, n - done);
                forward(std::vector<int>(chunk, seq));
                done += chunk;
            }
    }

    // One forward of one new token per listed sequence; returns its time in seconds.
    double step(const std::vector<int>& sequences)
    {
        TickMeter tm;
        tm.start();
        forward(sequences);
        tm.stop();
        return tm.getTimeSec();
    }

    void forward(const std::vector<int>& tokenSequences)
    {
        if (input_.cols != (int)tokenSequences.size())
            input_.create(1, (int)tokenSequences.size(), CV_32F);
        for (int i = 0; i < input_.cols; i++)
            input_.at<float>(i) = (float)rng_.uniform(0, vocab_);
        setLLMBatch(net_, tokenSequences);
        net_.setInput(input_);
        net_.forward();
    }

private:
    Net net_;
    Ptr<KVCache> cache_;
    int vocab_;
    RNG rng_;
    Mat input_;
};

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv, keys, "KV cache and batching of a GGUF model: latency, throughput, memory, re-planning");
    const std::string model = cl.getString("model");
    if (model.empty() || !cl.given("threads"))
        cl.fail("--model and --threads are required");
    const int threads = cl.getInt("threads", 1);
    const int steps = cl.getInt("gen-tokens", 1);
    try
    {
        setNumThreads(threads);
        Ptr<GGUFFile> f = GGUFFile::open(model);
        const String arch = f->getString("general.architecture");
        const int vocab = f->getTensorShape("token_embd.weight")[1];
        std::cout << format("model: %s (%s), threads: %d, %d steps per measurement\n", model.c_str(), arch.c_str(),
                            threads, steps);

        // Decode latency at several context positions.
        {
            Bench b(model, vocab);
            const int limit = b.cache().getMaxSequenceLength();
            b.cache().setMemoryBudget((size_t)(limit + 64) * b.cache().getBytesPerToken());
            std::cout << "decode latency by context position (ms/token, median):\n";
            std::vector<int> positions = {16, 256, 1024, limit - steps - 1};
            int filled = 0;
            for (int pos : positions)
            {
                if (pos < filled || pos + steps >= limit)
                    continue;
                if (b.cache().hasSequence(0))
                    b.cache().truncateSequence(0, std::min(filled, pos));
                b.fill({0}, pos - b.cache().getSequenceLength(0));
                std::vector<double> times;
                for (int s = 0; s < steps; s++)
                    times.push_back(b.step({0}));
                filled = b.cache().getSequenceLength(0);
                std::cout << format("  position %5d: %8.3f ms\n", pos, 1e3 * median(times));
            }
        }

        // Throughput of K sequences decoding together.
        {
            std::cout << "decode throughput with K sequences per forward (each at position 64):\n";
            double single = 0;
            for (int k : {1, 4, 8, 16})
            {
                Bench b(model, vocab);
                std::vector<int> seqs(k);
                for (int i = 0; i < k; i++)
                    seqs[i] = i;
                b.cache().setMemoryBudget((size_t)k * (64 + steps + 32) * b.cache().getBytesPerToken());
                b.fill(seqs, 64);
                b.step(seqs);  // re-plans the Net for k rows
                double total = 0;
                for (int s = 0; s < steps; s++)
                    total += b.step(seqs);
                const double rate = k * steps / total;
                if (k == 1)
                    single = rate;
                std::cout << format("  K=%2d: %8.2f tokens/s  (%.2fx of K=1)\n", k, rate, rate / single);
            }
        }

        // Memory per token.
        {
            Bench b(model, vocab);
            std::cout << "KV cache memory per token:";
            for (int type : {CV_32F, CV_16F, CV_8S})
            {
                b.cache().setStorageType(type);
                std::cout << format("  %s %zu bytes", type == CV_32F ? "float32" : type == CV_16F ? "float16" : "8-bit",
                                    b.cache().getBytesPerToken());
            }
            std::cout << format(" (page: %d tokens)\n", b.cache().getPageSize());
        }

        // A token-count change against a steady step, and allocations per steady step.
        {
            Bench b(model, vocab);
            const std::vector<int> one{0}, two{0, 0};
            b.fill(one, 64);
            b.step(one);
            std::vector<double> steady, changed;
            for (int s = 0; s < steps; s++)
            {
                steady.push_back(b.step(one));
                b.step(two);                     // two tokens: the shapes change...
                changed.push_back(b.step(one));  // ...and change back for this one
            }
            const long before = heapAllocations();
            for (int s = 0; s < steps; s++)
                b.step(one);
            const double allocations = (double)(heapAllocations() - before) / steps;
            std::cout << format("steady decode step: %.3f ms; forward after a token-count change: %.3f ms "
                                "(re-planning costs %.3f ms = %.2f steps)\n",
                                1e3 * median(steady), 1e3 * median(changed),
                                1e3 * (median(changed) - median(steady)),
                                (median(changed) - median(steady)) / median(steady))
                      << format("heap allocations per steady decode step: %.2f\n", allocations);
        }
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_kv_bench: " << e.what() << std::endl;
        return 1;
    }
}
