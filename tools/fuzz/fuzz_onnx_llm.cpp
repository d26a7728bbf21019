// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as an ONNX Runtime GenAI builder-style decoder through our
// ONNX language-model importer (cv::dnn::llm::readONNXLanguageModel: the protobuf reader, the
// initializers, MatMulNBits conversion, genai_config.json, the Net builder), then, when a Net
// results, a prompt of 3 token ids and one decode step through the Net's KV cache. Anything but
// a cv::Exception (a crash, a sanitizer report, a leak, a timeout) is a bug.
//
// Input framing: when the input starts with '{' and holds the separator kSeparator, the bytes
// before it are written as genai_config.json and the bytes after it as model.onnx; otherwise
// the whole input is model.onnx and the folder has no genai_config.json. Both files lie in a
// folder of this process's own (external data may name either of them).

#include <opencv2/dnn.hpp>

#include "llm/onnx/onnx_llm_importer.hpp"  // compiled into the target

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

static const char kSeparator[] = "\n--model.onnx--\n";

static const std::string& folder()
{
    // Never destroyed: the exit handler that removes the folder runs after static destructors.
    static const std::string* path = [] {
        auto p = new std::string("/dev/shm/fuzz_onnx_llm_" + std::to_string(getpid()));
        if (mkdir(p->c_str(), 0700) != 0 && errno != EEXIST)
            std::abort();
        std::atexit([] {
            std::remove((folder() + "/model.onnx").c_str());
            std::remove((folder() + "/genai_config.json").c_str());
            rmdir(folder().c_str());
        });
        return p;
    }();
    return *path;
}

static bool writeFile(const std::string& path, const uint8_t* data, size_t size)
{
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

// The vocabulary of the Net's token embedding (0 when it has none).
static int vocabSize(cv::dnn::Net& net)
{
    for (const cv::String& name : net.getLayerNames())
    {
        cv::Ptr<cv::dnn::Layer> layer = net.getLayer(name);
        if (layer && layer->type == "LLMTokenEmbedding" && !layer->blobs.empty())
            return layer->blobs[0].rows;
    }
    return 0;
}

static cv::Mat ids(std::initializer_list<int> values, int vocab)
{
    cv::Mat m(1, (int)values.size(), CV_32F);
    int i = 0;
    for (int v : values)
        m.at<float>(i++) = (float)(vocab > 0 ? v % vocab : v);
    return m;
}

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // proto2 string fields with invalid UTF-8 are parsed with an error log line each: the
    // fuzzer makes them constantly, and writing them would dominate the run.
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    cv::setNumThreads(1);
    const std::string model = folder() + "/model.onnx", config = folder() + "/genai_config.json";
    const uint8_t* onnx = data;
    size_t onnxSize = size;
    std::remove(config.c_str());
    if (size > 0 && data[0] == '{')
    {
        const uint8_t* end = data + size;
        const uint8_t* sep = std::search(data, end, kSeparator, kSeparator + sizeof(kSeparator) - 1);
        if (sep != end)
        {
            if (!writeFile(config, data, sep - data))
                std::abort();
            onnx = sep + sizeof(kSeparator) - 1;
            onnxSize = end - onnx;
        }
    }
    if (!writeFile(model, onnx, onnxSize))
        std::abort();
    static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;  // to see why a seed stops
    try
    {
        cv::dnn::Net net;
        if (!cv::dnn::llm::readONNXLanguageModel(model, net) || net.empty())
        {
            if (verbose)
                std::fprintf(stderr, "not a language model\n");
            return 0;
        }
        const int vocab = vocabSize(net);
        net.setInput(ids({1, 2, 3}, vocab));  // the prompt
        cv::Mat prompt = net.forward();
        net.setInput(ids({4}, vocab));        // one decode step
        cv::Mat step = net.forward();
        if (verbose)
            std::fprintf(stderr, "vocab %d, logits %d x %d and %d x %d\n", vocab, prompt.rows, prompt.cols,
                         step.rows, step.cols);
    }
    catch (const cv::Exception& e)
    {
        if (verbose)
            std::fprintf(stderr, "cv::Exception: %s\n", e.what());
    }
    return 0;
}
