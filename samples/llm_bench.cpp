// Prompt-processing and generation speed of a GGUF model on cv::dnn, measured like llama.cpp's
// llama-bench: pp = one forward of P prompt tokens, tg = G forwards of one token each.
//
//   llm_bench --model=FILE --threads=N [--prompt-tokens=P] [--gen-tokens=G] [--repetitions=R]
//
// Ends with the lines `pp<P>: <tokens/s> tok/s` and `tg<G>: <tokens/s> tok/s`. It also measures
// the machine's memory read bandwidth and reports the fraction of it that generation reaches
// (bytes of weights read per generated token x tokens/s).

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>

#include "command_line.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

using namespace cv;
using namespace cv::dnn;

namespace {

const char* const keys =
    "{help h usage ? |     | print this help }"
    "{model m        |     | GGUF model file (required) }"
    "{threads        |     | threads (required) }"
    "{prompt-tokens  | 512 | prompt tokens of the pp test (one forward) }"
    "{gen-tokens     | 128 | generated tokens of the tg test (one forward each) }"
    "{repetitions    | 3   | runs of each test; the speeds are averaged }";

// Read bandwidth of main memory: sums a buffer much larger than the caches with all threads.
double measureReadBandwidth()
{
    const size_t n = (size_t)256 << 20;  // 1 GiB of floats
    std::vector<float> buf(n / sizeof(float) * 4, 1.f);
    double best = 0;
    for (int rep = 0; rep < 3; rep++)
    {
        TickMeter tm;
        tm.start();
        const int stripes = std::max(1, getNumThreads()) * 4;
        std::vector<double> partial(stripes, 0.0);
        parallel_for_(Range(0, stripes), [&](const Range& r) {
            for (int s = r.start; s < r.end; s++)
            {
                const size_t begin = buf.size() * s / stripes, end = buf.size() * (s + 1) / stripes;
                float acc[8] = {0};
                for (size_t i = begin; i + 8 <= end; i += 8)
                    for (int k = 0; k < 8; k++)
                        acc[k] += buf[i + k];
                partial[s] = std::accumulate(acc, acc + 8, 0.0);
            }
        }, stripes);
        tm.stop();
        CV_Assert(std::accumulate(partial.begin(), partial.end(), 0.0) > 0);  // keep the reads
        best = std::max(best, buf.size() * sizeof(float) / tm.getTimeSec());
    }
    return best;
}

// Bytes of weights one generated token reads: every tensor except the embedding table, of
// which one row is read (it also counts as the output projection when that is tied).
double weightBytesPerToken(const Ptr<GGUFFile>& f)
{
    double bytes = 0;
    const bool tied = !f->hasTensor("output.weight");
    for (const String& name : f->getTensorNames())
    {
        if (name == "token_embd.weight" && !tied)
            continue;
        bytes += (double)f->getTensorBytes(name);
    }
    return bytes;
}

Mat randomIds(int n, int vocab, RNG& rng)
{
    Mat ids(1, n, CV_32F);
    for (int i = 0; i < n; i++)
        ids.at<float>(i) = (float)rng.uniform(0, vocab);
    return ids;
}

} // namespace

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv, keys, "Prompt-processing and generation speed of a GGUF model, like llama-bench");
    const std::string model = cl.getString("model");
    if (model.empty() || !cl.given("threads"))
        cl.fail("--model and --threads are required");
    const int threads = cl.getInt("threads", 1);
    const int promptTokens = cl.getInt("prompt-tokens", 1);
    const int genTokens = cl.getInt("gen-tokens", 1);
    const int repetitions = cl.getInt("repetitions", 1);
    try
    {
        setNumThreads(threads);
        Ptr<GGUFFile> f = GGUFFile::open(model);
        const String arch = f->getString("general.architecture");
        const int vocab = f->getTensorShape("token_embd.weight")[1];
        const int context = (int)f->getInt(arch + ".context_length");
        if (promptTokens > context || genTokens + 1 > context)
            cl.fail(format("the model's context holds %d tokens: --prompt-tokens=%d, --gen-tokens=%d do not fit",
                           context, promptTokens, genTokens));

        Net net = readNet(model);
        RNG rng(1);
        net.setInput(randomIds(8, vocab, rng));  // warm-up: maps the weights in
        net.forward();

        std::vector<double> pp, tg;
        for (int r = 0; r < repetitions; r++)
        {
            resetLLMState(net);
            net.setInput(randomIds(promptTokens, vocab, rng));
            TickMeter tm;
            tm.start();
            net.forward();
            tm.stop();
            pp.push_back(promptTokens / tm.getTimeSec());

            resetLLMState(net);
            net.setInput(randomIds(1, vocab, rng));
            net.forward();  // the first step re-plans the Net for one token
            TickMeter tg1;
            for (int i = 0; i < genTokens; i++)
            {
                net.setInput(randomIds(1, vocab, rng));
                tg1.start();
                net.forward();
                tg1.stop();
            }
            tg.push_back(genTokens / tg1.getTimeSec());
        }
        const double ppRate = std::accumulate(pp.begin(), pp.end(), 0.0) / pp.size();
        const double tgRate = std::accumulate(tg.begin(), tg.end(), 0.0) / tg.size();
        const double bandwidth = measureReadBandwidth();
        const double perToken = weightBytesPerToken(f);
        std::cout << format("model: %s (%s, %.0f MB of weights read per token)\n", model.c_str(), arch.c_str(), perToken / 1e6)
                  << format("threads: %d, repetitions: %d\n", threads, repetitions)
                  << format("memory read bandwidth: %.1f GB/s; generation reaches %.1f GB/s = %.0f%% of it\n",
                            bandwidth / 1e9, perToken * tgRate / 1e9, 100.0 * perToken * tgRate / bandwidth)
                  << format("pp%d: %.2f tok/s\n", promptTokens, ppRate)
                  << format("tg%d: %.2f tok/s\n", genTokens, tgRate);
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_bench: " << e.what() << std::endl;
        return 1;
    }
}
