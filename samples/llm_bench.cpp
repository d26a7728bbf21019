// Prompt-processing and generation speed of a GGUF model on cv::dnn, measured like llama.cpp's
// llama-bench: pp = one forward of P prompt tokens, tg = G forwards of one token each.
//
//   llm_bench --model=FILE --threads=N [--prompt-tokens=P] [--gen-tokens=G] [--repetitions=R]
//
// Ends with the lines `pp<P>: <tokens/s> tok/s` and `tg<G>: <tokens/s> tok/s`. It also measures
// the machine's memory read bandwidth and reports the fraction of it that generation reaches
// (bytes of weights read per generated token x tokens/s).
//
//   llm_bench --model=FILE --threads=N --batch=K [--prompt-tokens=P] [--gen-tokens=G] [--repetitions=R]
//
// Batched, like llama.cpp's llama-batched-bench -npp P -ntg G -npl K: K sequences with different
// random P-token prompts are prefilled in one forward (a ragged batch of K x P tokens, the Net's
// batch plan: setLLMBatch), then decoded together, each step one forward of K tokens, one per
// sequence. Ends with `batch<K> pp<P>: <tokens/s> tok/s` and `batch<K> tg<G>: <tokens/s> tok/s`,
// the tokens of all sequences per second.
//
//   llm_bench --model=FILE --threads=N --depth=D [--gen-tokens=G] [--repetitions=R]
//
// Generation after a D-token context, like llama-bench -d D -n G -p 0: the context is prefilled
// in forwards of at most 512 tokens (not timed), then G single-token steps are timed, the first
// one at position D. Ends with `tg<G>@d<D>: <tokens/s> tok/s`.
//
//   llm_bench --model=FILE --threads=N --draft-tokens=K (--lookup-ngram=N | --draft-model=FILE)
//             [--prompt=TEXT] [--gen-tokens=G] [--repetitions=R]
//
// Speculative decoding through TextGenerationModel: G greedy tokens after the prompt without
// and with drafts (K per step, by prompt lookup or a draft model), timed after the prompt's
// prefill; the two outputs must be the same. Ends with `tg<G>: <tokens/s> tok/s`,
// `tg<G> speculative: <tokens/s> tok/s`, `draft_accepted: A/B` and `speedup: <ratio>x`.
//
// In the Net-level modes the timed loops allocate nothing themselves (inputs and batch plans are made
// before them); the first single-token step after a prompt, which re-plans the Net's shapes,
// is not timed. Like llama.cpp's tools, the pp / tg and --batch modes first run one repetition
// untimed (a warm-up): llama.cpp allocates and clears its whole KV cache before timing, while
// ours takes pages as sequences grow and keeps them for reuse, so without it the first
// repetition would pay the first touch of the cache's memory (about 30 us a 4 KB page in some
// VMs: batch8 pp32 ran 20% slower in its first repetition). --depth needs none: its untimed
// prefill touches the context's pages.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

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
    "{prompt-tokens  | 512 | prompt tokens of the pp test (one forward); with --batch: of each sequence }"
    "{gen-tokens     | 128 | generated tokens of the tg test (one forward each); with --batch: of each sequence }"
    "{repetitions    | 3   | runs of each test; the speeds are averaged }"
    "{batch          |     | K: K sequences prefilled in one forward, then decoded together (K tokens per forward) }"
    "{depth          |     | D: generation after a D-token context (no pp test) }"
    "{draft-tokens   |     | K: speculative decoding, K drafted tokens per step, against plain greedy generation }"
    "{lookup-ngram   | 0   | with --draft-tokens: draft by prompt lookup, matching up to N tokens }"
    "{draft-model    |     | with --draft-tokens: draft with this model (same vocabulary) }"
    "{draft-p-min    | 0.75| with --draft-model: drafting stops at a token the draft model gives less probability }"
    "{prompt         |     | with --draft-tokens: the prompt (default: a passage followed by a request to repeat it) }"
    "{kv-type        | f32 | element type of the stored keys and values: f32, f16 (llama.cpp's default) or q8 }";

// Speculative decoding pays where the output repeats its input: a passage to be repeated.
const char* const kRepeatPrompt =
    "Lily and Tom went to the park. They played with a big red ball. Tom kicked the ball and it flew over the "
    "fence. Lily was sad, but a kind dog brought the ball back. They said thank you and went home happy.\n"
    "Say it again.\nLily and Tom went to the park.";

// Read bandwidth of main memory: sums a buffer much larger than the caches with all threads,
// the best of two ways: cv::sum (the widest SIMD loads, no software prefetch) and a loop that
// asks for each line 2048 bytes ahead as the weight kernels do. Which reads faster depends on
// the machine (a Xeon's plain read reached ~75% of the prefetching one; an EPYC Zen 5's
// prefetching read is 10-20% slower than its plain one), and the bandwidth generation is
// measured against must be the best a read reaches.
double measureReadBandwidth()
{
    const size_t n = (size_t)256 << 20;  // 1 GiB of floats
    std::vector<float> buf(n / sizeof(float) * 4, 1.f);
    double best = 0;
    for (int rep = 0; rep < 6; rep++)
    {
        const bool prefetching = rep % 2 == 1;
        TickMeter tm;
        tm.start();
        const int stripes = std::max(1, getNumThreads()) * 4;
        std::vector<double> partial(stripes, 0.0);
        parallel_for_(Range(0, stripes), [&](const Range& r) {
            for (int s = r.start; s < r.end; s++)
            {
                const size_t begin = buf.size() * s / stripes, end = buf.size() * (s + 1) / stripes;
                if (!prefetching)
                {
                    partial[s] = cv::sum(Mat(1, (int)(end - begin), CV_32F, buf.data() + begin))[0];
                    continue;
                }
                float acc[8] = {0};
                for (size_t i = begin; i + 16 <= end; i += 16)
                {
#if defined(__GNUC__)
                    __builtin_prefetch(buf.data() + std::min(i + 512, end - 1));
#endif
                    for (int k = 0; k < 16; k++)
                        acc[k % 8] += buf[i + k];
                }
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
// which one row is read (it also counts as the output projection when that is tied); of a
// mixture of experts' stacked expert tensors (*_exps), the expert_used_count / expert_count
// share one token's routing reads.
double weightBytesPerToken(const Ptr<GGUFFile>& f)
{
    double bytes = 0;
    const bool tied = !f->hasTensor("output.weight");
    const String arch = f->hasMetadata("general.architecture") ? f->getString("general.architecture") : String();
    const String experts = arch + ".expert_count", used = arch + ".expert_used_count";
    const double expertShare = f->hasMetadata(experts) && f->hasMetadata(used) && f->getNumber(experts) > 0
                                   ? f->getNumber(used) / f->getNumber(experts) : 1.0;
    for (const String& name : f->getTensorNames())
    {
        if (name == "token_embd.weight" && !tied)
            continue;
        const bool expertTensor = name.find("_exps.") != String::npos;
        bytes += (double)f->getTensorBytes(name) * (expertTensor ? expertShare : 1.0);
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

// Fills a 1 x n row of float token ids.
void fillRandomIds(Mat& ids, int vocab, RNG& rng)
{
    CV_Assert(ids.type() == CV_32F && ids.isContinuous());
    float* p = ids.ptr<float>();
    for (size_t i = 0; i < ids.total(); i++)
        p[i] = (float)rng.uniform(0, vocab);
}

double mean(const std::vector<double>& v)
{
    return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

// Makes sure the KV cache's budget holds `sequences` sequences of `tokens` tokens each.
void reserveKV(KVCache& cache, int sequences, int tokens)
{
    const size_t page = (size_t)cache.getPageSize();
    const size_t pages = (size_t)sequences * ((tokens + page - 1) / page + 1);
    const size_t bytes = pages * page * cache.getBytesPerToken();
    if (bytes > cache.getMemoryBudget())
        cache.setMemoryBudget(bytes);
}

// --batch=K: K sequences with distinct random P-token prompts, prefilled in one ragged forward,
// then G steps of one forward with one token of each sequence.
int runBatch(Net& net, int vocab, int threads, int K, int P, int G, int repetitions)
{
    Ptr<KVCache> cache = getLLMKVCache(net);
    reserveKV(*cache, K, P + G + 1);

    std::vector<int> prefillPlan((size_t)K * P), stepPlan(K);
    for (int k = 0; k < K; k++)
    {
        std::fill(prefillPlan.begin() + (size_t)k * P, prefillPlan.begin() + (size_t)(k + 1) * P, k);
        stepPlan[k] = k;
    }
    Mat prompts(1, K * P, CV_32F), steps(G + 1, K, CV_32F);
    RNG rng(2);
    std::vector<double> pp, tg;
    for (int r = -1; r < repetitions; r++)  // r = -1: the warm-up
    {
        fillRandomIds(prompts, vocab, rng);  // each sequence its own random prompt
        fillRandomIds(steps, vocab, rng);
        resetLLMState(net);

        TickMeter tpp;
        tpp.start();
        setLLMBatch(net, prefillPlan);
        net.setInput(prompts);
        net.forward();
        tpp.stop();

        setLLMBatch(net, stepPlan);  // the first step re-plans the Net for K tokens: not timed
        net.setInput(steps.row(0));
        net.forward();
        TickMeter ttg;
        ttg.start();
        for (int i = 1; i <= G; i++)
        {
            setLLMBatch(net, stepPlan);
            net.setInput(steps.row(i));
            net.forward();
        }
        ttg.stop();
        for (int k = 0; k < K; k++)
            CV_CheckEQ(cache->getSequenceLength(k), P + G + 1, "every sequence holds its prompt and its steps");
        if (r < 0)
            continue;
        pp.push_back((double)K * P / tpp.getTimeSec());
        tg.push_back((double)K * G / ttg.getTimeSec());
    }
    std::cout << format("threads: %d, repetitions: %d (after one untimed)\n", threads, repetitions)
              << format("prefill: one forward of %d sequences x %d tokens (a ragged batch of %d tokens)\n", K, P, K * P)
              << format("decode: %d steps (after one untimed step), each one forward of %d tokens, one per sequence\n", G, K)
              << format("batch%d pp%d: %.2f tok/s\n", K, P, mean(pp))
              << format("batch%d tg%d: %.2f tok/s\n", K, G, mean(tg));
    return 0;
}

// --depth=D: G single-token steps after a D-token context (prefilled in chunks, not timed).
int runDepth(Net& net, int vocab, int threads, int D, int G, int repetitions)
{
    const int chunk = 512;
    Ptr<KVCache> cache = getLLMKVCache(net);
    reserveKV(*cache, 1, D + G + 1);
    // The context's first D - 1 tokens in chunks; the untimed re-planning step makes it D.
    const int prefill = std::max(0, D - 1);
    std::vector<Mat> chunks;
    for (int done = 0; done < prefill; done += chunk)
        chunks.emplace_back(1, std::min(chunk, prefill - done), CV_32F);
    Mat steps(G + 1, 1, CV_32F);
    RNG rng(3);
    std::vector<double> tg;
    for (int r = 0; r < repetitions; r++)
    {
        for (Mat& c : chunks)
            fillRandomIds(c, vocab, rng);
        fillRandomIds(steps, vocab, rng);
        resetLLMState(net);
        for (Mat& c : chunks)
        {
            net.setInput(c);
            net.forward();
        }
        net.setInput(steps.row(0));  // re-plans the Net for one token: not timed
        net.forward();
        CV_CheckEQ(getLLMSequenceLength(net), std::max(D, 1), "the context before the timed steps");
        TickMeter ttg;
        ttg.start();
        for (int i = 1; i <= G; i++)
        {
            net.setInput(steps.row(i));
            net.forward();
        }
        ttg.stop();
        tg.push_back(G / ttg.getTimeSec());
    }
    std::cout << format("threads: %d, repetitions: %d\n", threads, repetitions)
              << format("context: %d tokens (prefilled in forwards of at most %d tokens, not timed); "
                        "the timed steps are at positions %d to %d\n", D, chunk, std::max(D, 1), std::max(D, 1) + G - 1)
              << format("tg%d@d%d: %.2f tok/s\n", G, D, mean(tg));
    return 0;
}

// Greedy generation of `G` tokens with the config's drafts; the tokens and the rate after prefill.
std::vector<int> timedGeneration(TextGenerationModel& model, const std::string& prompt, const GenerationConfig& config,
                                 double& rate)
{
    model.start(prompt, config);
    TickMeter tm;
    tm.start();
    while (!model.isDone())
        model.next();
    tm.stop();
    const std::vector<int> ids = model.getGeneratedTokenIds();
    rate = ids.size() / tm.getTimeSec();
    return ids;
}

int runSpeculative(const std::string& modelPath, const std::string& draftModel, float draftMinProbability,
                   const std::string& prompt, int threads, int draftTokens, int lookupNgram, int G, int repetitions)
{
    TextGenerationModel model(modelPath);
    if (!draftModel.empty())
        model.setDraftModel(draftModel);
    GenerationConfig plain;
    plain.maxNewTokens = G;
    plain.ignoreEndOfGeneration = true;
    GenerationConfig drafted = plain;
    drafted.draftTokens = draftTokens;
    drafted.lookupNgram = lookupNgram;
    drafted.draftMinProbability = draftMinProbability;
    std::vector<double> tg, spec;
    std::vector<int> counts;
    for (int r = 0; r < repetitions; r++)
    {
        double a = 0, b = 0;
        const std::vector<int> expected = timedGeneration(model, prompt, plain, a);
        if (timedGeneration(model, prompt, drafted, b) != expected)
            CV_Error(Error::StsError, "llm_bench: speculative decoding changed the greedy output");
        counts = model.getDraftCounts();
        tg.push_back(a);
        spec.push_back(b);
    }
    const double plainRate = std::accumulate(tg.begin(), tg.end(), 0.0) / tg.size();
    const double specRate = std::accumulate(spec.begin(), spec.end(), 0.0) / spec.size();
    std::cout << format("model: %s; drafts: %d per step by %s\n", modelPath.c_str(), draftTokens,
                        lookupNgram > 0 ? format("prompt lookup (n-grams up to %d)", lookupNgram).c_str()
                                        : format("the draft model %s (p-min %.2f)", draftModel.c_str(),
                                                 draftMinProbability).c_str())
              << format("threads: %d, repetitions: %d, prompt: %zu tokens\n", threads, repetitions,
                        model.getPromptTokenIds().size())
              << format("tg%d: %.2f tok/s\n", G, plainRate)
              << format("tg%d speculative: %.2f tok/s\n", G, specRate)
              << format("draft_accepted: %d/%d\n", counts[1], counts[0])
              << format("speedup: %.2fx\n", specRate / plainRate);
    return 0;
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
    const int batch = cl.given("batch") ? cl.getInt("batch", 1, 4096) : 0;
    const int depth = cl.given("depth") ? cl.getInt("depth", 0) : -1;
    const int draftTokens = cl.given("draft-tokens") ? cl.getInt("draft-tokens", 1) : 0;
    const int lookupNgram = cl.getInt("lookup-ngram", 0);
    const std::string draftModel = cl.getString("draft-model");
    const std::string kvName = cl.getString("kv-type");
    const int kvType = kvName == "f32" ? CV_32F : kvName == "f16" ? CV_16F : kvName == "q8" ? CV_8S : -1;
    if (kvType < 0)
        cl.fail("--kv-type is f32, f16 or q8, not '" + kvName + "'");
    if (draftTokens > 0 && cl.given("kv-type"))
        cl.fail("--kv-type applies to the pp / tg, --batch and --depth tests");
    if (draftTokens > 0 && (batch > 0 || depth >= 0))
        cl.fail("--draft-tokens is a mode of its own: not with --batch or --depth");
    if (draftTokens > 0 && (lookupNgram > 0) == !draftModel.empty())
        cl.fail("--draft-tokens needs either --lookup-ngram or --draft-model");
    if (batch > 0 && depth >= 0)
        cl.fail("give either --batch or --depth");
    if (depth >= 0 && cl.given("prompt-tokens"))
        cl.fail("--depth runs no prompt test: --prompt-tokens does not apply (the context is --depth)");
    try
    {
        setNumThreads(threads);
        if (draftTokens > 0)
            return runSpeculative(model, draftModel, (float)cl.getReal("draft-p-min", 0, 1),
                                  cl.given("prompt") ? cl.getString("prompt") : kRepeatPrompt,
                                  threads, draftTokens, lookupNgram, genTokens, repetitions);
        Ptr<GGUFFile> f = GGUFFile::open(model);
        const String arch = f->getString("general.architecture");
        const int vocab = f->getTensorShape("token_embd.weight")[1];
        const int context = (int)f->getInt(arch + ".context_length");
        if (depth >= 0)
        {
            if (std::max(depth, 1) + genTokens > context)
                cl.fail(format("the model's context holds %d tokens: --depth=%d and --gen-tokens=%d do not fit",
                               context, depth, genTokens));
        }
        else if (batch > 0)
        {
            if (promptTokens + genTokens + 1 > context)
                cl.fail(format("the model's context holds %d tokens: each sequence's --prompt-tokens=%d, "
                               "--gen-tokens=%d and one untimed step do not fit", context, promptTokens, genTokens));
        }
        else if (promptTokens > context || genTokens + 1 > context)
            cl.fail(format("the model's context holds %d tokens: --prompt-tokens=%d, --gen-tokens=%d do not fit",
                           context, promptTokens, genTokens));

        Net net = readNet(model);
        getLLMKVCache(net)->setStorageType(kvType);
        RNG rng(1);
        net.setInput(randomIds(8, vocab, rng));  // maps the weights in
        net.forward();

        if (batch > 0)
        {
            std::cout << format("model: %s (%s)\n", model.c_str(), arch.c_str());
            return runBatch(net, vocab, threads, batch, promptTokens, genTokens, repetitions);
        }
        if (depth >= 0)
        {
            std::cout << format("model: %s (%s)\n", model.c_str(), arch.c_str());
            return runDepth(net, vocab, threads, depth, genTokens, repetitions);
        }

        std::vector<double> pp, tg;
        for (int r = -1; r < repetitions; r++)  // r = -1: the warm-up
        {
            resetLLMState(net);
            net.setInput(randomIds(promptTokens, vocab, rng));
            TickMeter tm;
            tm.start();
            net.forward();
            tm.stop();

            resetLLMState(net);
            net.setInput(randomIds(1, vocab, rng));
            net.forward();  // the first step re-plans the Net for one token
            TickMeter tg1;
            const int steps = r < 0 ? 1 : genTokens;  // llama-bench's warm-up generates one token
            for (int i = 0; i < steps; i++)
            {
                net.setInput(randomIds(1, vocab, rng));
                tg1.start();
                net.forward();
                tg1.stop();
            }
            if (r < 0)
                continue;
            pp.push_back(promptTokens / tm.getTimeSec());
            tg.push_back(genTokens / tg1.getTimeSec());
        }
        const double ppRate = std::accumulate(pp.begin(), pp.end(), 0.0) / pp.size();
        const double tgRate = std::accumulate(tg.begin(), tg.end(), 0.0) / tg.size();
        const double bandwidth = measureReadBandwidth();
        const double perToken = weightBytesPerToken(f);
        std::cout << format("model: %s (%s, %.0f MB of weights read per token)\n", model.c_str(), arch.c_str(), perToken / 1e6)
                  << format("threads: %d, repetitions: %d (after one untimed)\n", threads, repetitions)
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
