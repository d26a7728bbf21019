// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "api_server.hpp"
#include "client_connection.hpp"
#include "openai_response.hpp"

#include <httplib.h>
#include <opencv2/dnn/kv_cache.hpp>
#include <opencv2/dnn/llm.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/core/utils/filesystem.hpp>

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>

namespace llm_server {

using nlohmann::json;
using cv::dnn::GenerationResult;

extern const char* const kChatPageHtml;  // chat_page.html, embedded at build time

namespace {

long long unixTime()
{
    return (long long)std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string randomId(const char* prefix)
{
    static std::atomic<unsigned long long> counter{0};
    std::ostringstream s;
    s << prefix << std::hex << unixTime() << counter++;
    return s.str();
}

void sendError(httplib::Response& res, const ApiError& e)
{
    res.status = e.status;
    if (e.status == 503)
        res.set_header("Retry-After", "1");
    res.set_content(errorBody(e), "application/json");
}

// The paths we serve: metrics count them by name (anything else is "other", so that a client
// cannot grow the label set), and a wrong method on one of them is 405, not 404.
const char* const kPaths[] = {"/", "/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions",
                              "/tokenize", "/detokenize", "/lora-adapters"};

std::string tooLargeMessage(const httplib::Request& req)
{
    std::string message = "the request body is too large";
    if (req.get_header_value("Content-Type") == "application/x-www-form-urlencoded")
        message += " (a body sent as application/x-www-form-urlencoded, curl -d's default, may have at most 8192 "
                   "bytes; send Content-Type: application/json)";
    return message;
}

bool isOurPath(const std::string& path)
{
    for (const char* p : kPaths)
        if (path == p)
            return true;
    return false;
}

} // namespace

//! The events of one HTTP request's engine requests (its n choices), from the engine's thread.
struct ApiServer::Channel
{
    struct Event
    {
        int index = 0;
        std::string piece;
        json logprobs;  //!< streamed logprobs of the piece's tokens (null when not asked)
        bool finished = false;
        GenerationResult result;
    };
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Event> events;
    std::vector<size_t> tokensReported;  //!< per choice: tokens whose logprobs were streamed
    std::atomic<bool> cancelled{false};

    void push(Event e)
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            events.push_back(std::move(e));
        }
        changed.notify_all();
    }
    //! Waits up to `timeout` for events and takes them all.
    std::deque<Event> take(std::chrono::milliseconds timeout)
    {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait_for(lock, timeout, [this] { return !events.empty(); });
        std::deque<Event> out;
        out.swap(events);
        return out;
    }
};

//! What a streamed reply needs after its handler has returned (cpp-httplib writes it then).
struct ApiServer::Stream
{
    ParsedRequest request;
    ReplyHeader header;
    std::shared_ptr<Channel> channel;
    std::vector<int> ids;                  //!< its engine requests, one per choice
    std::deque<Channel::Event> events;     //!< taken, not written yet
    std::vector<FinishedChoice> choices;
    std::vector<StreamedToolCalls> calls;  //!< per choice, when the reply may hold tool calls
    bool forcedCall;
    ClientConnection client;
};

ApiServer::ApiServer(const ServerOptions& options) : options_(options), http_(new httplib::Server)
{
    startTime_ = unixTime();
    routes();
}

ApiServer::~ApiServer()
{
    if (httpThread_.joinable() || engineThread_.joinable())
        shutdown();
}

int ApiServer::bind()
{
    // cpp-httplib's default sets SO_REUSEPORT, which lets a second server take a port in use
    // (and share its connections): only SO_REUSEADDR, so that a busy port is an error.
    int listening = -1;
    http_->set_socket_options([&listening](int fd) {
        const int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
        listening = fd;
    });
    const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                        : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port <= 0)
        throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port));
    // Its backlog is 5, compiled in: a burst of new connections would wait for SYN retries.
    ::listen(listening, SOMAXCONN);
    return port;
}

void ApiServer::startServing()
{
    httpThread_ = std::thread([this] { http_->listen_after_bind(); });
}

void ApiServer::loadModel()
{
    cv::dnn::LLMLoadOptions load;
    load.contextLength = options_.contextLength;
    load.mmprojPath = options_.mmprojPath;
    load.maxParallelSequences = options_.parallel;
    model_ = cv::dnn::TextGenerationModel(options_.modelPath, load);
    for (const auto& a : options_.adapters)
    {
        const float scale = options_.adaptersWithoutApply ? 0.f : a.second;
        try
        {
            limits_.adapterIds.push_back(model_.loadAdapter(a.first, scale));
        }
        catch (const cv::Exception& e)
        {
            throw std::runtime_error("LoRA adapter " + a.first + ": " + e.err);
        }
        std::cerr << "llm_server: LoRA adapter " << limits_.adapterIds.back() << ": " << a.first << " (scale " << scale
                  << ")" << std::endl;
    }
    if (!options_.chatTemplate.empty())
    {
        if (cv::utils::fs::exists(options_.chatTemplate))
        {
            std::ifstream f(options_.chatTemplate);
            std::stringstream source;
            source << f.rdbuf();
            const cv::Ptr<cv::dnn::Tokenizer> t = model_.getTokenizer();
            const std::string bos = t->getBosId() >= 0 ? t->decode({t->getBosId()}, true) : std::string();
            const std::string eos = t->getEosId() >= 0 ? t->decode({t->getEosId()}, true) : std::string();
            model_.setCustomChatTemplate(cv::dnn::ChatTemplate::create(source.str(), bos, eos));
        }
        else
            model_.setChatTemplate(options_.chatTemplate);
    }
    try
    {
        model_.getChatTemplate();
    }
    catch (const cv::Exception&)
    {
        // As llama-server does: chat requests still work, in the most common format.
        std::cerr << "llm_server: the model has no chat template; using chatml (--chat-template chooses)" << std::endl;
        model_.setChatTemplate("chatml");
    }
    // The KV cache holds --parallel full contexts by default (its own default is one context, or
    // 4096 tokens): admission reserves each request's prompt and max_tokens, so a smaller budget
    // would run fewer requests at once than --parallel. Pages are allocated as they fill.
    cv::dnn::Net net = model_.getNetwork();
    const cv::Ptr<cv::dnn::KVCache> kv = cv::dnn::getLLMKVCache(net);
    const size_t kvTokens = options_.kvTokens > 0 ? (size_t)options_.kvTokens
                                                  : (size_t)options_.parallel * (size_t)kv->getMaxSequenceLength();
    if (options_.kvTokens > 0 || kvTokens * kv->getBytesPerToken() > kv->getMemoryBudget())
        kv->setMemoryBudget(kvTokens * kv->getBytesPerToken());
    std::cerr << "llm_server: KV cache budget " << kvTokens << " tokens (" << kv->getMemoryBudget() / (1 << 20)
              << " MiB, allocated as used), context " << kv->getMaxSequenceLength() << " tokens per request" << std::endl;
    tokenizer_ = model_.getTokenizer();
    limits_.hasProjector = !options_.mmprojPath.empty();
    limits_.vocabSize = tokenizer_->getVocabSize();
    const std::string templateSource = model_.getChatTemplate()->getSource();
    toolFormat_ = toolCallFormatOf(templateSource);
    // A built-in template has no source: the families that have a tool role name it "tool".
    limits_.templateKnowsToolRole = templateSource.empty() || templateSource.find("tool") != std::string::npos;
    engine_ = cv::dnn::GenerationEngine::create(model_);
    engine_->setMaxRunningRequests(options_.parallel);
    engineThread_ = std::thread([this] { engine_->run(); });
    ready_ = true;
}

void ApiServer::shutdown()
{
    stopping_ = true;
    http_->stop();  // no new connections; those open finish their request
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.shutdownSeconds);
    while (inFlight_ > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (engine_)
    {
        std::vector<int> ids;
        {
            std::lock_guard<std::mutex> lock(activeMutex_);
            ids.assign(activeIds_.begin(), activeIds_.end());
        }
        cancelAll(ids);
    }
    if (httpThread_.joinable())
        httpThread_.join();
    if (engine_)
        engine_->stop();
    if (engineThread_.joinable())
        engineThread_.join();
}

// Not held across submit(): the engine's thread may be finishing another request meanwhile.
void ApiServer::trackSubmitted(int id)
{
    std::lock_guard<std::mutex> lock(activeMutex_);
    if (!finishedEarly_.erase(id))
        activeIds_.insert(id);
}

void ApiServer::trackFinished(int id)
{
    std::lock_guard<std::mutex> lock(activeMutex_);
    if (!activeIds_.erase(id))
        finishedEarly_.insert(id);
}

void ApiServer::cancelAll(const std::vector<int>& ids)
{
    for (int id : ids)
        engine_->cancel(id);
}

std::string ApiServer::tokenText(int id) const
{
    return tokenizer_->tokenToPiece(id, true);  // with its leading space; maybe part of a character
}

void ApiServer::countResponse(const std::string& path, int status)
{
    std::lock_guard<std::mutex> lock(countsMutex_);
    responses_[std::make_pair(isOurPath(path) ? path : std::string("other"), status)] += 1;
}

bool ApiServer::authorized(const httplib::Request& req, httplib::Response& res) const
{
    if (options_.apiKey.empty() || req.path == "/health" || req.path == "/metrics" || req.path == "/" ||
        req.method == "OPTIONS")
        return true;
    const std::string header = req.get_header_value("Authorization");
    const std::string expected = "Bearer " + options_.apiKey;
    // Compared in time independent of where they differ.
    unsigned char diff = header.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < std::min(header.size(), expected.size()); i++)
        diff |= (unsigned char)(header[i] ^ expected[i]);
    if (diff == 0)
        return true;
    sendError(res, ApiError(401, header.empty() ? "no API key given (Authorization: Bearer KEY)" : "invalid API key"));
    return false;
}

void ApiServer::routes()
{
    httplib::Server& s = *http_;
    s.new_task_queue = [this] { return new httplib::ThreadPool((size_t)(options_.parallel + options_.maxQueue + 8)); };
    s.set_payload_max_length(options_.maxBodyBytes);
    s.set_read_timeout(options_.timeoutSeconds);
    s.set_write_timeout(options_.timeoutSeconds);
    s.set_keep_alive_timeout(5);
    s.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        return authorized(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                    : httplib::Server::HandlerResponse::Handled;
    });
    s.set_logger([this](const httplib::Request& req, const httplib::Response& res) { countResponse(req.path, res.status); });
    // Errors httplib answers itself (404, 413, a malformed request) get OpenAI's shape too.
    s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty())
            return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404 && isOurPath(req.path))
            res.status = 405;
        const std::string message = res.status == 404   ? "unknown path " + req.path
                                    : res.status == 405 ? req.method + " is not allowed on " + req.path
                                    : res.status == 413 ? tooLargeMessage(req)
                                                        : "HTTP error " + std::to_string(res.status);
        sendError(res, ApiError(res.status, message));
        return httplib::Server::HandlerResponse::Handled;
    }));
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        try
        {
            std::rethrow_exception(ep);
        }
        catch (const ApiError& e)
        {
            sendError(res, e);
        }
        catch (const std::exception& e)
        {
            sendError(res, ApiError(500, e.what()));
        }
        catch (...)
        {
            sendError(res, ApiError(500, "unknown error"));
        }
    });
    s.Options(".*", [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.status = 204;
    });

    s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kChatPageHtml, "text/html; charset=utf-8"); });
    s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        if (!ready_)
            sendError(res, ApiError(503, "loading model"));
        else
            res.set_content("{\"status\": \"ok\"}", "application/json");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { handleMetrics(res); });
    s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { handleModels(res); });
    s.Post("/v1/chat/completions",
           [this](const httplib::Request& req, httplib::Response& res) { handleGeneration(req, res, true); });
    s.Post("/v1/completions",
           [this](const httplib::Request& req, httplib::Response& res) { handleGeneration(req, res, false); });
    s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) { handleTokenize(req, res); });
    s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) { handleDetokenize(req, res); });
    s.Get("/lora-adapters", [this](const httplib::Request&, httplib::Response& res) { handleGetAdapters(res); });
    s.Post("/lora-adapters", [this](const httplib::Request& req, httplib::Response& res) { handleSetAdapters(req, res); });
}

// llama-server's list: [{"id", "path", "scale"}, ...], scale the default of requests without `lora`.
void ApiServer::handleGetAdapters(httplib::Response& res) const
{
    if (!ready_)
        throw ApiError(503, "loading model");
    json list = json::array();
    for (const cv::dnn::LoRAAdapterInfo& a : model_.getAdapters())
    {
        // The shortest decimal that reads back as the float: 0.7, not 0.699999988079071.
        double scale = a.scale;
        for (int digits = 6; digits <= 9; digits++)
        {
            scale = std::strtod(cv::format("%.*g", digits, a.scale).c_str(), nullptr);
            if ((float)scale == a.scale)
                break;
        }
        list.push_back({{"id", a.id}, {"path", a.path}, {"scale", scale}});
    }
    res.set_content(dumpJson(list), "application/json");
}

// As llama-server: the listed adapters get these default scales, the others 0. Requests
// admitted from now on use them (running ones keep theirs).
void ApiServer::handleSetAdapters(const httplib::Request& req, httplib::Response& res)
{
    if (!ready_)
        throw ApiError(503, "loading model");
    const std::vector<std::pair<int, float>> scales = parseLoraList(req.body, limits_);
    {
        std::lock_guard<std::mutex> lock(adaptersMutex_);
        for (int id : limits_.adapterIds)
        {
            float scale = 0.f;
            for (const auto& s : scales)
                if (s.first == id)
                    scale = s.second;
            model_.setAdapterScale(id, scale);
        }
    }
    res.set_content(dumpJson({{"success", true}}), "application/json");
}

void ApiServer::handleModels(httplib::Response& res) const
{
    res.set_content(dumpJson({{"object", "list"},
                              {"data", json::array({{{"id", options_.alias},
                                                     {"object", "model"},
                                                     {"created", startTime_},
                                                     {"owned_by", "opencv"}}})}}),
                    "application/json");
}

void ApiServer::handleTokenize(const httplib::Request& req, httplib::Response& res)
{
    if (!ready_)
        throw ApiError(503, "loading model");
    const TokenizeRequest t = parseTokenizeRequest(req.body);
    res.set_content(dumpJson({{"tokens", tokenizer_->encode(t.content, t.addSpecial, t.parseSpecial)}}), "application/json");
}

void ApiServer::handleDetokenize(const httplib::Request& req, httplib::Response& res)
{
    if (!ready_)
        throw ApiError(503, "loading model");
    const std::vector<int> ids = parseDetokenizeRequest(req.body, limits_.vocabSize);
    res.set_content(dumpJson({{"content", tokenizer_->decode(ids, false)}}), "application/json");
}

void ApiServer::handleMetrics(httplib::Response& res)
{
    std::ostringstream out;
    auto metric = [&out](const char* name, const char* type, const char* help, double value) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value
            << "\n";
    };
    cv::dnn::GenerationEngineStats st;
    if (ready_)
        st = engine_->getStats();
    metric("llm_requests_waiting", "gauge", "Requests submitted, not generating yet.", st.waitingRequests);
    metric("llm_requests_running", "gauge", "Requests generating.", st.runningRequests);
    metric("llm_requests_finished_total", "counter", "Requests ended (any reason).", st.finishedRequests);
    metric("llm_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", st.promptTokens);
    metric("llm_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the KV cache.", st.cachedPromptTokens);
    metric("llm_tokens_prefilled_total", "counter", "Prompt tokens run through the model.", st.prefilledTokens);
    metric("llm_tokens_generated_total", "counter", "Tokens generated.", st.generatedTokens);
    metric("llm_prefix_cache_hits_total", "counter", "Requests that reused a cached prefix.", st.cacheHits);
    metric("llm_prefill_tokens_per_second", "gauge", "Prompt tokens per second of prefill time.", st.prefillTokensPerSecond);
    metric("llm_decode_tokens_per_second", "gauge", "Generated tokens per second of decode time.", st.decodeTokensPerSecond);
    metric("llm_kv_pages_in_use", "gauge", "KV cache pages in use.", st.kvPagesInUse);
    metric("llm_kv_pages_free", "gauge", "KV cache pages free.", st.kvPagesFree);
    out << "# HELP llm_http_requests_total HTTP responses by path and status.\n# TYPE llm_http_requests_total counter\n";
    {
        std::lock_guard<std::mutex> lock(countsMutex_);
        for (const auto& kv : responses_)
            out << "llm_http_requests_total{path=\"" << kv.first.first << "\",status=\"" << kv.first.second << "\"} "
                << kv.second << "\n";
    }
    res.set_content(out.str(), "text/plain; version=0.0.4");
}

void ApiServer::handleGeneration(const httplib::Request& req, httplib::Response& res, bool chat)
{
    if (!ready_)
        throw ApiError(503, "loading model");
    if (stopping_)
        throw ApiError(503, "the server is shutting down");
    ParsedRequest p = chat ? parseChatRequest(req.body, limits_) : parseCompletionRequest(req.body, limits_);
    const bool forcedCall = p.toolChoice == ToolChoice::Required || p.toolChoice == ToolChoice::Named;
    if (forcedCall)
        p.request.config.jsonSchema = forcedCallSchema(p.toolsJson, p.namedTool, toolFormat_);
    const bool toolMode = p.toolChoice != ToolChoice::None;
    const std::vector<cv::dnn::GenerationRequest> requests = p.choiceRequests();
    const int choices = (int)requests.size();
    const int before = inFlight_.fetch_add(choices);  // counted now: concurrent handlers see it
    if (before + choices > options_.parallel + options_.maxQueue)
    {
        inFlight_ -= choices;
        throw ApiError(503, "the server is busy: " + std::to_string(before) + " requests are waiting or running "
                            "(--parallel=" + std::to_string(options_.parallel) + ", --max-queue=" +
                            std::to_string(options_.maxQueue) + "); retry later");
    }

    ReplyHeader header{randomId(chat ? "chatcmpl-" : "cmpl-"), unixTime(), p.model.empty() ? options_.alias : p.model};
    std::vector<FinishedChoice> finished(choices);
    for (int i = 0; i < choices; i++)
    {
        const cv::dnn::GenerationRequest& r = requests[i];
        finished[i].countsPrompt = i % p.n == 0;
        if (p.echo)
            finished[i].echoed = r.prompt.empty() ? tokenizer_->decode(r.promptTokenIds, false) : r.prompt;
    }
    std::shared_ptr<Channel> channel = std::make_shared<Channel>();
    channel->tokensReported.assign(choices, 0);
    const bool streamLogprobs = p.stream && p.logprobs && !toolMode;
    std::vector<int> ids;
    for (int i = 0; i < choices; i++)
    {
        cv::dnn::GenerationRequest r = requests[i];
        r.onPiece = [this, channel, i, streamLogprobs, chat](int id, const cv::String& piece) {
            Channel::Event e;
            e.index = i;
            e.piece = piece;
            if (streamLogprobs)
            {
                const GenerationResult sofar = engine_->takeResult(id);
                const size_t first = channel->tokensReported[i];
                channel->tokensReported[i] = std::min(sofar.tokenIds.size(), sofar.tokenLogprobs.size());
                e.logprobs = logprobsOf(sofar, first, channel->tokensReported[i], chat,
                                        [this](int t) { return tokenText(t); });
            }
            channel->push(std::move(e));
            return !channel->cancelled;
        };
        r.onFinish = [this, channel, i](const GenerationResult& result) {
            trackFinished(result.requestId);
            inFlight_--;
            Channel::Event e;
            e.index = i;
            e.finished = true;
            e.result = result;
            channel->push(std::move(e));
        };
        ids.push_back(engine_->submit(r));
        trackSubmitted(ids.back());
    }
    ClientConnection client(req.remote_addr, req.remote_port);
    auto clientGone = [channel, &client, this, ids]() {
        if (!client.isClosed())
            return false;
        channel->cancelled = true;
        cancelAll(ids);
        return true;
    };

    int done = 0;
    std::deque<Channel::Event> pending;
    // Until the first piece, the request may still fail as a whole (a prompt longer than the
    // context, a bad grammar): that is an HTTP error, not a stream.
    while (done < choices && (!p.stream || pending.empty()))
    {
        for (Channel::Event& e : channel->take(std::chrono::milliseconds(100)))
        {
            if (e.finished)
            {
                finished[e.index].result = e.result;
                done++;
                if (e.result.finishReason == "error" && e.result.generatedTokens == 0)
                {
                    channel->cancelled = true;
                    cancelAll(ids);
                    throw ApiError(400, e.result.error);
                }
            }
            if (p.stream)
                pending.push_back(std::move(e));
        }
        if (clientGone())
        {
            res.status = 499;  // nginx's "client closed request", for the logs and /metrics
            return;
        }
    }
    auto endChoice = [&](FinishedChoice& c) {
        const GenerationResult& r = c.result;
        if (r.finishReason == "error")
            throw ApiError(500, r.error);
        if (r.finishReason == "cancelled")
            throw ApiError(503, "the request was cancelled: the server is shutting down");
        if (toolMode && chat)
            c.reply = parseToolCalls(r.text, toolFormat_, forcedCall);
        else
            c.reply.content = r.text;
    };
    if (!p.stream)
    {
        for (FinishedChoice& c : finished)
            endChoice(c);
        res.set_content(completionBody(p, header, finished, [this](int t) { return tokenText(t); }), "application/json");
        return;
    }

    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // nginx: pass each event on at once
    std::shared_ptr<Stream> stream = std::make_shared<Stream>(Stream{p, header, channel, ids, std::move(pending),
                                                                     finished, {}, forcedCall, client});
    if (toolMode && chat)
        stream->calls.assign(choices, StreamedToolCalls(toolFormat_, forcedCall));
    res.set_chunked_content_provider("text/event-stream", [this, stream](size_t, httplib::DataSink& sink) {
        if (!writeStream(*stream, sink))
        {
            stream->channel->cancelled = true;  // the client is gone: its requests end now
            cancelAll(stream->ids);
            return false;
        }
        sink.done();
        return true;
    });
}

bool ApiServer::writeStream(Stream& s, httplib::DataSink& sink)
{
    const ParsedRequest& p = s.request;
    auto send = [&sink](const std::string& data) {
        const std::string event = "data: " + data + "\n\n";
        return sink.write(event.data(), event.size());
    };
    auto sendDelta = [&](int index, const json& delta, const std::string& finishReason, const json& logprobs) {
        return send(chunkBody(p, s.header, index, delta, finishReason, logprobs));
    };
    for (size_t i = 0; i < s.choices.size(); i++)
        if (!sendDelta((int)i, p.chat ? json{{"role", "assistant"}, {"content", ""}} : json{{"text", s.choices[i].echoed}},
                       "", nullptr))
            return false;
    int done = 0;
    for (;;)
    {
        for (Channel::Event& e : s.events)
        {
            if (!e.finished)
            {
                const std::string content = s.calls.empty() ? e.piece : s.calls[e.index].push(e.piece);
                if (!content.empty() &&
                    !sendDelta(e.index, p.chat ? json{{"content", content}} : json{{"text", content}}, "", e.logprobs))
                    return false;
                continue;
            }
            FinishedChoice& c = s.choices[e.index];
            c.result = e.result;
            done++;
            if (c.result.finishReason == "error" || c.result.finishReason == "cancelled")
            {
                const bool failed = c.result.finishReason == "error";
                s.channel->cancelled = true;  // the other choices end too
                cancelAll(s.ids);
                return send(errorBody(ApiError(failed ? 500 : 503, failed ? c.result.error
                                                                          : "cancelled: the server is shutting down")));
            }
            if (!s.calls.empty())
            {
                c.reply = s.calls[e.index].finish();
                if (!c.reply.content.empty() && !sendDelta(e.index, {{"content", c.reply.content}}, "", nullptr))
                    return false;
                if (!c.reply.calls.empty() &&
                    !sendDelta(e.index, {{"tool_calls", toolCallsDelta(c.reply.calls)}}, "", nullptr))
                    return false;
            }
            if (!sendDelta(e.index, json::object(), finishReasonOf(c), nullptr))
                return false;
        }
        if (done == (int)s.choices.size())
            break;
        if (s.client.isClosed())
            return false;
        s.events = s.channel->take(std::chrono::milliseconds(100));
    }
    if (p.includeUsage && !send(usageChunkBody(p, s.header, usageOf(s.choices))))
        return false;
    return send("[DONE]");
}

} // namespace llm_server
