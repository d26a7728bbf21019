// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// GenerationEngine: requests from any thread into the model's decode loop (decode_loop.hpp).
// Two locks, never nested the other way: `state_` (submitted requests, cancels, results; held
// briefly by any thread) inside the model's loopMutex (held by whoever steps the loop, callbacks
// included).

#include "../../precomp.hpp"
#include "text_generation_impl.hpp"

#include <climits>
#include <condition_variable>
#include <deque>
#include <map>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

GenerationEngine::~GenerationEngine() {}

namespace {

class GenerationEngineImpl CV_FINAL : public GenerationEngine
{
public:
    explicit GenerationEngineImpl(const TextGenerationModel& model, const Ptr<TextGenerationModel::Impl>& impl)
        : model_(model), impl_(*impl)
    {
    }

    // The model outlives its engine: requests still in its loop end now, so that no callback
    // reaches a destroyed engine (no run() may be running: the caller joins it first).
    ~GenerationEngineImpl() CV_OVERRIDE
    {
        std::lock_guard<std::mutex> loopLock(impl_.loopMutex);
        std::vector<int> ids;
        {
            std::lock_guard<std::mutex> lock(stateMutex_);
            for (const auto& r : requests_)
                ids.push_back(r.first);
            submitted_.clear();
        }
        for (int id : ids)
            impl_.loop->cancel(id);
    }

    int submit(const GenerationRequest& request) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        const int id = nextId_;
        nextId_ = nextId_ == INT_MAX ? 1 : nextId_ + 1;  // positive: the model's own requests are negative
        Request& r = requests_[id];
        r.onPiece = request.onPiece;
        r.onFinish = request.onFinish;
        submitted_.emplace_back(id, request);
        wake_.notify_all();
        return id;
    }

    bool cancel(int requestId) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        auto it = requests_.find(requestId);
        if (it == requests_.end() || it->second.done)
            return false;
        cancelled_.push_back(requestId);
        wake_.notify_all();
        return true;
    }

    bool step() CV_OVERRIDE
    {
        std::lock_guard<std::mutex> loopLock(impl_.loopMutex);
        std::deque<std::pair<int, GenerationRequest>> submitted;
        std::vector<int> cancelled;
        {
            std::lock_guard<std::mutex> lock(stateMutex_);
            submitted.swap(submitted_);
            cancelled.swap(cancelled_);
        }
        for (const auto& s : submitted)
            enqueue(s.first, s.second);
        for (int id : cancelled)
            impl_.loop->cancel(id);
        const bool more = impl_.loop->step();
        const GenerationEngineStats stats = loopStats();
        std::lock_guard<std::mutex> lock(stateMutex_);
        lastStats_ = stats;
        return more || !submitted_.empty() || !cancelled_.empty();
    }

    void run() CV_OVERRIDE
    {
        struct Running  // counted while it runs, whatever ends it
        {
            GenerationEngineImpl& e;
            explicit Running(GenerationEngineImpl& engine) : e(engine)
            {
                std::lock_guard<std::mutex> lock(e.stateMutex_);
                e.runners_++;
            }
            ~Running()
            {
                std::lock_guard<std::mutex> lock(e.stateMutex_);
                if (--e.runners_ == 0)
                    e.stopping_ = false;  // the stop is done: a later run() runs
                e.finished_.notify_all();
            }
        } running(*this);
        while (!stopping_)
        {
            if (step())
                continue;
            std::unique_lock<std::mutex> lock(stateMutex_);
            wake_.wait(lock, [&] { return stopping_ || !submitted_.empty() || !cancelled_.empty(); });
        }
    }

    void stop() CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        if (runners_ > 0)  // stops the run() calls now running; none to stop: nothing to do
            stopping_ = true;
        wake_.notify_all();
    }

    String takeText(int requestId) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        auto it = requests_.find(requestId);
        if (it == requests_.end())
            return String();
        String text;
        text.swap(it->second.newText);
        return text;
    }

    bool isDone(int requestId) const CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        auto it = requests_.find(requestId);
        return it != requests_.end() && it->second.done;
    }

    GenerationResult takeResult(int requestId) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        auto it = requests_.find(requestId);
        if (it == requests_.end())
            CV_Error(Error::StsBadArg, format("GenerationEngine: no request %d (its result was taken, it was given to "
                                              "onFinish, or it was never submitted)", requestId));
        GenerationResult result = it->second.result;
        if (it->second.done)
            requests_.erase(it);
        else
        {
            result.requestId = requestId;
            result.text = it->second.text;
        }
        return result;
    }

    GenerationResult wait(int requestId) CV_OVERRIDE
    {
        for (;;)
        {
            {
                std::unique_lock<std::mutex> lock(stateMutex_);
                auto it = requests_.find(requestId);
                if (it == requests_.end())
                    CV_Error(Error::StsBadArg, format("GenerationEngine::wait: no request %d", requestId));
                if (it->second.done)
                {
                    GenerationResult result = it->second.result;
                    requests_.erase(it);
                    return result;
                }
                if (runners_ > 0)  // a run() thread steps the loop: wait for it to end the request
                {
                    finished_.wait(lock);
                    continue;
                }
            }
            step();
        }
    }

    void setMaxRunningRequests(int n) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> loopLock(impl_.loopMutex);
        impl_.loop->setMaxRunning(n);
    }

    int getMaxRunningRequests() const CV_OVERRIDE
    {
        return impl_.loop->maxRunning();
    }

    void setPrefixReuse(bool enabled) CV_OVERRIDE
    {
        std::lock_guard<std::mutex> loopLock(impl_.loopMutex);
        keepForReuse_ = enabled;
        if (!enabled)
            impl_.loop->prefixCache().clear();
    }

    void clearPrefixCache() CV_OVERRIDE
    {
        std::lock_guard<std::mutex> loopLock(impl_.loopMutex);
        impl_.loop->prefixCache().clear();
    }

    GenerationEngineStats getStats() const CV_OVERRIDE
    {
        // A run() thread takes the loop's lock again as soon as it lets it go: a monitor (a
        // server's /metrics) would wait for the load to end. It gets the counters of the last
        // step instead.
        std::unique_lock<std::mutex> loopLock(impl_.loopMutex, std::try_to_lock);
        GenerationEngineStats stats;
        if (loopLock.owns_lock())
            stats = loopStats();
        std::lock_guard<std::mutex> lock(stateMutex_);
        if (!loopLock.owns_lock())
            stats = lastStats_;
        stats.waitingRequests += (int)submitted_.size();
        return stats;
    }

private:
    //! The loop's counters (under the loop's lock).
    GenerationEngineStats loopStats() const
    {
        GenerationEngineStats stats = impl_.loop->stats();
        stats.finishedRequests += endedBeforeTheLoop_;
        return stats;
    }

    struct Request
    {
        String text, newText;  // all of it; what takeText() has not taken
        GenerationResult result;
        bool done = false;
        std::function<bool(int, const String&)> onPiece;
        std::function<void(const GenerationResult&)> onFinish;
    };

    // Turns a submitted request into the loop's (token ids, images): a request that cannot be
    // turned ends here with its error.
    void enqueue(int id, const GenerationRequest& request)
    {
        llm::LoopRequest r;
        try
        {
            r = impl_.makeLoopRequest(request);
        }
        catch (...)
        {
            llm::LoopSequence failed;
            failed.request.id = id;
            failed.failure = std::current_exception();
            try
            {
                std::rethrow_exception(failed.failure);
            }
            catch (const cv::Exception& e)
            {
                failed.error = e.err;
            }
            catch (const std::exception& e)
            {
                failed.error = e.what();
            }
            failed.finishReason = llm::FinishReason::Error;
            endedBeforeTheLoop_++;
            finish(failed);
            return;
        }
        r.id = id;
        r.keepForReuse = keepForReuse_;
        r.onPiece = [this, id](const String& piece) { return onPiece(id, piece); };
        r.onTokens = [this](const llm::LoopSequence& s) { updateSnapshot(s); };
        r.onFinish = [this](const llm::LoopSequence& s) { finish(s); };
        impl_.loop->enqueue(r);
    }

    // A running request's result (takeResult()) has its tokens and log-probabilities so far.
    void updateSnapshot(const llm::LoopSequence& s)
    {
        std::lock_guard<std::mutex> lock(stateMutex_);
        auto it = requests_.find(s.request.id);
        if (it != requests_.end() && !it->second.done)
            s.updateResult(it->second.result);
    }

    bool onPiece(int id, const String& piece)
    {
        std::function<bool(int, const String&)> callback;
        {
            std::lock_guard<std::mutex> lock(stateMutex_);
            auto it = requests_.find(id);
            if (it != requests_.end())
            {
                it->second.text += piece;
                it->second.newText += piece;
                callback = it->second.onPiece;
            }
        }
        return !callback || callback(id, piece);
    }

    void finish(const llm::LoopSequence& s)
    {
        GenerationResult result = s.result();
        std::function<void(const GenerationResult&)> callback;
        {
            std::lock_guard<std::mutex> lock(stateMutex_);
            auto it = requests_.find(s.request.id);
            if (it == requests_.end())
                return;
            callback = it->second.onFinish;
            if (callback)
                requests_.erase(it);  // given to onFinish, not kept
            else
            {
                it->second.result = result;
                it->second.done = true;
                it->second.text.clear();  // the result holds it
            }
            finished_.notify_all();
        }
        if (callback)
        {
            try
            {
                callback(result);
            }
            catch (...)  // the caller's callback: nothing else depends on it
            {
            }
        }
    }

    TextGenerationModel model_;  // keeps the model (and impl_) alive
    TextGenerationModel::Impl& impl_;
    mutable std::mutex stateMutex_;
    std::condition_variable wake_, finished_;
    std::deque<std::pair<int, GenerationRequest>> submitted_;
    std::vector<int> cancelled_;
    std::map<int, Request> requests_;
    int nextId_ = 1;
    std::atomic<bool> stopping_{false};
    int runners_ = 0;
    bool keepForReuse_ = true;      // used under the loop's lock
    double endedBeforeTheLoop_ = 0; // requests that could not be turned into token ids (the loop's lock)
    GenerationEngineStats lastStats_; // as of the end of the last step (stateMutex_)
};

} // namespace

Ptr<GenerationEngine> GenerationEngine::create(const TextGenerationModel& model)
{
    const Ptr<TextGenerationModel::Impl>& impl = model.impl;
    if (!impl)
        CV_Error(Error::StsError, "GenerationEngine::create: no model loaded");
    impl->checkLoaded();
    std::lock_guard<std::mutex> lock(impl->engineMutex);
    Ptr<GenerationEngine> e = impl->engine.lock();
    if (!e)
    {
        e = makePtr<GenerationEngineImpl>(model, impl);
        impl->engine = e;
    }
    return e;
}

Ptr<GenerationEngine> GenerationEngine::create(const String& modelPath, const LLMLoadOptions& options)
{
    return create(TextGenerationModel(modelPath, options));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
