// A long generation with context shifting, watching resident memory: generates --gen-tokens=N
// tokens (sampling, end-of-generation tokens ignored) with cv::dnn::TextGenerationModel, the
// context shifting whenever it is full, and prints the resident set size every --report=N
// tokens. Exits with status 1 if memory grew by more than --max-growth-mb=M MiB after the first
// report (the cache's pages and the Net's buffers have all been allocated by then).
//
//   llm_soak --model=FILE [--gen-tokens=10000] [--report=1000] [--max-growth-mb=4] [--threads=N]

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include "command_line.hpp"

#include <fstream>
#include <iostream>
#include <unistd.h>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |      | print this help }"
    "{model m        |      | GGUF model file (required) }"
    "{gen-tokens     | 10000| tokens to generate }"
    "{report         | 1000 | report memory every this many tokens }"
    "{max-growth-mb  | 4    | fail if resident memory grows more than this many MiB after the first report }"
    "{threads        | -1   | threads (-1: OpenCV's default) }";

// Resident set size in MiB, from /proc/self/statm.
static double residentMiB()
{
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv, keys, "Long generation with context shifting; resident memory over time");
    const std::string model = cl.getString("model");
    if (model.empty())
        cl.fail("--model is required");
    const int tokens = cl.getInt("gen-tokens", 1), report = cl.getInt("report", 1);
    const double maxGrowth = cl.getReal("max-growth-mb", 0);
    const int threads = cl.getThreads();
    try
    {
        if (threads > 0)
            setNumThreads(threads);
        TextGenerationModel m(model);
        GenerationConfig config;
        config.maxNewTokens = tokens;
        config.temperature = 0.8f;
        config.seed = 1;
        config.contextShift = true;
        config.ignoreEndOfGeneration = true;
        Net net = m.getNetwork();
        const int context = getLLMKVCache(net)->getMaxSequenceLength();
        m.start("Once upon a time", config);
        int generated = 0;
        double first = 0, peak = 0;
        TickMeter tm;
        tm.start();
        std::cout << format("context %d tokens; generating %d\n", context, tokens);
        while (!m.isDone())
        {
            m.next();
            if (++generated % report == 0)
            {
                const double rss = residentMiB();
                if (first == 0)
                    first = rss;
                peak = std::max(peak, rss);
                std::cout << format("%6d tokens: resident %.1f MiB, sequence holds %d tokens\n", generated, rss,
                                    getLLMSequenceLength(net)) << std::flush;
            }
        }
        tm.stop();
        const int total = (int)m.getGeneratedTokenIds().size();
        std::cout << format("%d tokens in %.1f s (%.1f tokens/s); resident memory grew %.2f MiB after the first report\n",
                            total, tm.getTimeSec(), total / tm.getTimeSec(), peak - first);
        if (total != tokens)
        {
            std::cerr << "llm_soak: generation stopped early\n";
            return 1;
        }
        return peak - first > maxGrowth ? 1 : 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_soak: " << e.what() << std::endl;
        return 1;
    }
}
