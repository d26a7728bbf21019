// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// llm_server's HTTP layer: cpp-httplib routes in, GenerationEngine requests out. One thread runs
// the engine's decode loop (continuous batching); each HTTP request waits on its own channel of
// pieces, so a slow client slows nobody else.

#ifndef OPENCV_DNN_LLM_SERVER_API_SERVER_HPP
#define OPENCV_DNN_LLM_SERVER_API_SERVER_HPP

#include "openai_request.hpp"
#include "tool_calls.hpp"

#include <opencv2/dnn/generation_engine.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace httplib {
class DataSink;
class Server;
struct Request;
struct Response;
}

namespace llm_server {

struct ServerOptions
{
    std::string modelPath;
    std::string mmprojPath;
    std::string host = "127.0.0.1";
    int port = 8080;                    //!< 0: any free port
    int parallel = 4;                   //!< requests generating at once
    int contextLength = 0;              //!< 0: the model's
    int kvTokens = 0;                   //!< tokens the KV cache holds in all (0: parallel x context)
    std::string apiKey;                 //!< "": no key needed
    std::string chatTemplate;           //!< "": the model's; a built-in name or a Jinja file
    std::string alias;                  //!< the model's id in /v1/models
    int maxQueue = 64;                  //!< requests waiting beyond the running ones
    size_t maxBodyBytes = 16u << 20;
    int timeoutSeconds = 30;            //!< socket reads and writes
    int shutdownSeconds = 10;           //!< what runs gets this long after SIGTERM
    std::vector<std::pair<std::string, float>> adapters;  //!< LoRA adapters (file, default scale); ids 0, 1, ...
    bool adaptersWithoutApply = false;  //!< --lora-init-without-apply: every default scale 0
};

class ApiServer
{
public:
    explicit ApiServer(const ServerOptions& options);
    ~ApiServer();

    //! Binds the listening socket (throws when it cannot); returns the port.
    int bind();
    //! Serves on a thread of its own (/health answers 503 until loadModel() returns).
    void startServing();
    //! Loads the model and starts the engine's loop. Throws cv::Exception when the model cannot load.
    void loadModel();
    /** Stops accepting, gives running requests shutdownSeconds to finish, cancels the rest, and
    returns when every connection and the engine have stopped. */
    void shutdown();

private:
    struct Channel;
    struct Stream;
    void routes();
    bool authorized(const httplib::Request& req, httplib::Response& res) const;
    void handleGeneration(const httplib::Request& req, httplib::Response& res, bool chat);
    //! Writes a streamed reply's events as they come; false when the client is gone.
    bool writeStream(Stream& stream, httplib::DataSink& sink);
    void handleTokenize(const httplib::Request& req, httplib::Response& res);
    void handleDetokenize(const httplib::Request& req, httplib::Response& res);
    void handleMetrics(httplib::Response& res);
    void handleModels(httplib::Response& res) const;
    void handleGetAdapters(httplib::Response& res) const;
    void handleSetAdapters(const httplib::Request& req, httplib::Response& res);
    std::string tokenText(int id) const;
    void countResponse(const std::string& path, int status);
    void cancelAll(const std::vector<int>& ids);
    void trackSubmitted(int id);
    void trackFinished(int id);

    ServerOptions options_;
    std::unique_ptr<httplib::Server> http_;
    std::thread httpThread_;
    std::thread engineThread_;
    std::atomic<bool> ready_{false};
    std::atomic<bool> stopping_{false};

    cv::dnn::TextGenerationModel model_;
    cv::Ptr<cv::dnn::GenerationEngine> engine_;
    cv::Ptr<cv::dnn::Tokenizer> tokenizer_;
    RequestLimits limits_;
    ToolCallFormat toolFormat_ = ToolCallFormat::Hermes;
    long long startTime_ = 0;

    std::atomic<int> inFlight_{0};       //!< engine requests submitted and not finished
    std::mutex activeMutex_;
    std::set<int> activeIds_;            //!< the engine ids of inFlight_ (cancelled at shutdown)
    std::set<int> finishedEarly_;        //!< ids whose onFinish came before submit() returned
    std::mutex countsMutex_;
    std::map<std::pair<std::string, int>, double> responses_;  //!< (path, status) -> count
    std::mutex adaptersMutex_;           //!< POST /lora-adapters sets all scales at once
};

} // namespace llm_server

#endif
