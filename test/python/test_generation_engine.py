"""cv2.dnn.GenerationEngine from Python: requests submitted at any time, streamed with
takeText(), each equal to a lone run of the same prompt and seed on a fresh model."""
import os
import pathlib
import threading
import time

import cv2 as cv
import pytest

PROJECT_ROOT = pathlib.Path(os.environ.get("LLM_PROJECT_ROOT", pathlib.Path(__file__).resolve().parents[2]))
MODEL = str(PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf")
PREFIX = "Once upon a time, in a small town by the sea, there lived a"
ENDINGS = [" little girl named Lily.", " big brown dog.", " cat"]


def config(temperature, seed, n=20):
    c = cv.dnn.GenerationConfig()
    c.temperature = temperature
    c.topK = 40
    c.seed = seed
    c.maxNewTokens = n
    return c


def alone(prompt, c):
    return cv.dnn.TextGenerationModel(MODEL).generate(prompt, c)


def request(prompt, c):
    r = cv.dnn.GenerationRequest()
    r.prompt = prompt
    r.config = c
    return r


def test_streamed_requests_equal_lone_runs():
    model = cv.dnn.TextGenerationModel(MODEL)
    engine = cv.dnn.GenerationEngine.create(model)
    ids = [engine.submit(request(PREFIX + e, config(0.7 * (i % 2), 5 + i))) for i, e in enumerate(ENDINGS)]
    streamed = {i: "" for i in ids}
    while engine.step():
        for i in ids:
            streamed[i] += engine.takeText(i)
    for k, i in enumerate(ids):
        assert engine.isDone(i)
        streamed[i] += engine.takeText(i)
        r = engine.takeResult(i)
        assert r.requestId == i
        assert r.text == streamed[i]
        assert r.text == alone(PREFIX + ENDINGS[k], config(0.7 * (k % 2), 5 + k))
        assert r.finishReason in ("stop", "length")
        assert r.generatedTokens == len(r.tokenIds) > 0
        assert 0 <= r.cachedPromptTokens < r.promptTokens
    stats = engine.getStats()
    assert stats.finishedRequests == 3 and stats.cacheHits >= 2
    assert stats.prefilledTokens + stats.cachedPromptTokens == stats.promptTokens


def test_chat_messages_and_a_run_thread():
    model = cv.dnn.TextGenerationModel(MODEL)
    engine = cv.dnn.GenerationEngine.create(model)
    loop = threading.Thread(target=engine.run)
    loop.start()
    try:
        r = cv.dnn.GenerationRequest()
        r.roles = ["user"]
        r.contents = ["Tell me a story about a cat."]
        r.config = config(0, 1, 24)
        chat_id = engine.submit(r)
        time.sleep(0.05)
        text_id = engine.submit(request(PREFIX, config(0, 1)))
        chat = engine.wait(chat_id)
        text = engine.wait(text_id)
    finally:
        engine.stop()
        loop.join()
    assert chat.text == cv.dnn.TextGenerationModel(MODEL).chat("Tell me a story about a cat.", config(0, 1, 24))
    assert text.text == alone(PREFIX, config(0, 1))


def test_bad_requests_end_with_errors_not_exceptions():
    engine = cv.dnn.GenerationEngine.create(cv.dnn.TextGenerationModel(MODEL))
    bad = cv.dnn.GenerationRequest()  # no prompt at all
    bad_id = engine.submit(bad)
    good_id = engine.submit(request(PREFIX, config(0, 1, 8)))
    while engine.step():
        pass
    r = engine.takeResult(bad_id)
    assert r.finishReason == "error" and "exactly one" in r.error
    assert engine.takeResult(good_id).text == alone(PREFIX, config(0, 1, 8))
    with pytest.raises(cv.error, match="no request"):
        engine.takeResult(bad_id)
    with pytest.raises(cv.error):
        cv.dnn.GenerationEngine.create("/nonexistent/model.gguf")


def test_messages_as_json_with_template_variables():
    # OpenAI-style messages (what an HTTP server receives) render like roles / contents.
    engine = cv.dnn.GenerationEngine.create(cv.dnn.TextGenerationModel(MODEL))
    r = cv.dnn.GenerationRequest()
    r.messagesJson = '[{"role": "user", "content": "Tell me a story about a cat."}]'
    r.chatContextJson = '{"tools": []}'
    r.config = config(0, 1, 24)
    result = engine.wait(engine.submit(r))
    assert result.finishReason in ("stop", "length"), result.error
    assert result.text == cv.dnn.TextGenerationModel(MODEL).chat("Tell me a story about a cat.", config(0, 1, 24))
