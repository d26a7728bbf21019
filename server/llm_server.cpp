// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// llm_server: an OpenAI-compatible HTTP server (llama-server's API) on cv::dnn::GenerationEngine.
// doc/server.md describes the endpoints; doc/deployment.md running replicas behind nginx.

#include "api_server.hpp"

#include "../samples/command_line.hpp"
#include "../samples/demo_model_path.hpp"

#include <opencv2/core.hpp>

#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <pthread.h>

static const char* keys =
    "{help h usage ? |           | print this help }"
    "{model m        |           | GGUF or ONNX model (default: the project's demo model, models/demo/demo-stories.gguf) }"
    "{mmproj         |           | the model's image projector (llama.cpp mmproj GGUF): image_url parts accepted }"
    "{host           | 127.0.0.1 | address to listen on }"
    "{port           | 8080      | port to listen on (0: any free port; the line 'listening on' names it) }"
    "{parallel       | 4         | requests generating at once (continuous batching) }"
    "{context        | 0         | tokens per request (0: the model's training context) }"
    "{kv-tokens      | 0         | tokens the KV cache holds for all requests (0: parallel x context; pages are allocated as used) }"
    "{threads        | -1        | threads of the model's forwards (-1: OpenCV's default) }"
    "{api-key        |           | the key clients must send (Authorization: Bearer KEY); default none }"
    "{api-key-file   |           | read the key from this file (its first line) }"
    "{chat-template  |           | a built-in template name (llama3, chatml, ...) or a Jinja file, instead of the model's }"
    "{alias          |           | the model's id in /v1/models (default: the file's name) }"
    "{max-queue      | 64        | requests waiting beyond the running ones; more get 503 with Retry-After }"
    "{max-body       | 16777216  | largest request body in bytes (more: 413) }"
    "{timeout        | 30        | seconds a client may take to send or receive (slow clients are cut) }"
    "{shutdown-timeout | 10      | seconds running requests get to finish after SIGINT / SIGTERM }"
    "{lora           |           | LoRA adapter files (comma-separated or the key repeated), scale 1 }"
    "{lora-scaled    |           | LoRA adapters with their scales, FILE:SCALE (comma-separated or the key repeated) }"
    "{lora-init-without-apply | false | load the adapters with scale 0 (set later by POST /lora-adapters or per request) }";

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "An OpenAI-compatible HTTP server on cv::dnn::GenerationEngine",
                         {"lora", "lora-scaled"});
    llm_server::ServerOptions o;
    o.modelPath = cl.given("model") ? cl.getString("model") : demoModelPath();
    o.mmprojPath = cl.getString("mmproj");
    o.host = cl.getString("host");
    o.port = cl.getInt("port", 0, 65535);
    o.parallel = cl.getInt("parallel", 1, 256);
    o.contextLength = cl.getInt("context", 0, 1 << 24);
    o.kvTokens = cl.getInt("kv-tokens", 0, INT_MAX);
    o.chatTemplate = cl.getString("chat-template");
    o.maxQueue = cl.getInt("max-queue", 0, 100000);
    o.maxBodyBytes = (size_t)cl.getInt("max-body", 1024, INT_MAX);
    o.timeoutSeconds = cl.getInt("timeout", 1, 3600);
    o.shutdownSeconds = cl.getInt("shutdown-timeout", 0, 3600);
    if (cl.given("api-key") && cl.given("api-key-file"))
        cl.fail("give --api-key or --api-key-file, not both");
    o.apiKey = cl.getString("api-key");
    if (cl.given("api-key-file"))
    {
        std::ifstream f(cl.getString("api-key-file"));
        if (!f || !std::getline(f, o.apiKey) || o.apiKey.empty())
            cl.fail("cannot read a key from --api-key-file=" + cl.getString("api-key-file"));
    }
    // Adapter ids: the --lora files in order, then the --lora-scaled ones.
    for (const std::string& value : cl.getAll("lora"))
    {
        std::stringstream files(value);
        for (std::string f; std::getline(files, f, ',');)
        {
            if (f.empty())
                cl.fail("--lora: an empty file name in '" + value + "'");
            o.adapters.emplace_back(f, 1.f);
        }
    }
    for (const auto& a : cl.getScaledFiles("lora-scaled", NAN))
    {
        if (std::isnan(a.second))
            cl.fail("--lora-scaled: " + a.first + " has no scale; write FILE:SCALE");
        o.adapters.push_back(a);
    }
    o.adaptersWithoutApply = cl.getFlag("lora-init-without-apply");
    const std::string file = o.modelPath.substr(o.modelPath.find_last_of('/') + 1);
    o.alias = cl.given("alias") ? cl.getString("alias") : file.substr(0, file.find_last_of('.'));
    const int threads = cl.getThreads();
    if (threads > 0)
        cv::setNumThreads(threads);

    // SIGINT / SIGTERM are taken by sigwait() below, in no other thread: blocked before any starts.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not an exit

    llm_server::ApiServer server(o);
    int port = 0;
    try
    {
        port = server.bind();
    }
    catch (const std::exception& e)
    {
        std::cerr << "llm_server: " << e.what() << std::endl;
        return 1;
    }
    server.startServing();  // /health answers 503 while the model loads
    std::atomic<bool> loaded{false};
    std::thread signals([&] {
        int sig = 0;
        sigwait(&stopSignals, &sig);
        if (!loaded)  // nothing runs yet: nothing to finish
        {
            std::cerr << "llm_server: stopped while loading the model" << std::endl;
            std::_Exit(0);
        }
    });
    try
    {
        std::cerr << "llm_server: loading " << o.modelPath << std::endl;
        server.loadModel();
    }
    catch (const std::exception& e)
    {
        std::cerr << "llm_server: cannot load the model: " << e.what() << std::endl;
        std::_Exit(1);
    }
    loaded = true;
    const bool ipv6 = o.host.find(':') != std::string::npos;
    std::cout << "listening on http://" << (ipv6 ? "[" + o.host + "]" : o.host) << ":" << port << std::endl;
    signals.join();
    std::cerr << "llm_server: stopping (running requests get " << o.shutdownSeconds << " s)" << std::endl;
    server.shutdown();
    std::cerr << "llm_server: stopped" << std::endl;
    return 0;
}
