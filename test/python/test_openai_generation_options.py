"""The generation options an OpenAI-compatible server passes through, from Python: frequency /
presence penalties, log-probabilities, compact JSON."""
import json
import os
import pathlib

import cv2 as cv
import pytest

PROJECT_ROOT = pathlib.Path(os.environ.get("LLM_PROJECT_ROOT", pathlib.Path(__file__).resolve().parents[2]))
SHARED_TESTDATA = pathlib.Path(os.environ.get("LLM_SHARED_TESTDATA", PROJECT_ROOT.parent / "shared" / "testdata"))
STORIES = SHARED_TESTDATA / "stories260K.gguf"
PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def stories():
    if not STORIES.exists():
        pytest.skip("model missing: %s" % STORIES)
    return cv.dnn.TextGenerationModel(str(STORIES))


def test_penalties_are_fields_and_forbid_repeats(stories):
    cfg = cv.dnn.GenerationConfig()
    assert cfg.presencePenalty == 0.0 and cfg.frequencyPenalty == 0.0
    cfg.maxNewTokens = 30
    cfg.ignoreEndOfGeneration = True
    cfg.repetitionWindow = -1
    cfg.presencePenalty = 1000.0
    stories.generate(PROMPT, cfg)
    ids = list(stories.getPromptTokenIds()) + list(stories.getGeneratedTokenIds())
    assert len(ids) == len(set(ids))
    cfg.presencePenalty = float("nan")
    with pytest.raises(cv.error, match="presence penalty"):
        stories.generate(PROMPT, cfg)


def test_logprobs_reach_python(stories):
    engine = cv.dnn.GenerationEngine.create(stories)
    request = cv.dnn.GenerationRequest()
    request.prompt = PROMPT
    cfg = cv.dnn.GenerationConfig()
    cfg.maxNewTokens = 6
    cfg.topLogprobs = 3
    request.config = cfg  # a copy: set it whole
    result = engine.wait(engine.submit(request))
    ids = list(result.tokenIds)
    assert len(ids) == 6
    assert len(result.tokenLogprobs) == 6
    assert len(result.topLogprobTokenIds) == 18 and len(result.topLogprobs) == 18
    # greedy: each chosen token is the most likely one, and a log-probability is at most 0
    assert list(result.topLogprobTokenIds)[::3] == ids
    assert all(lp <= 0 for lp in result.tokenLogprobs)
    cfg.topLogprobs = 21
    request.config = cfg
    failed = engine.wait(engine.submit(request))
    assert failed.finishReason == "error" and "topLogprobs" in failed.error


def test_json_is_compact_unless_asked(stories):
    cfg = cv.dnn.GenerationConfig()
    assert cfg.jsonFreeWhitespace is False
    cfg.jsonSchema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    cfg.maxNewTokens = 30
    text = stories.generate(PROMPT, cfg)
    assert json.loads(text)["a"] is not None and " " not in text and "\n" not in text
    cfg.jsonFreeWhitespace = True  # llama.cpp's rule (its effect is checked in C++)
    assert cfg.jsonFreeWhitespace is True
