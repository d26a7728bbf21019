"""cv2.dnn.TextGenerationModel from Python: the simplest call, the step API, configs."""
import json

import pytest

import cv2 as cv


@pytest.fixture
def stories(shared_testdata):
    return str(shared_testdata / "stories260K.gguf")


def test_simplest_call_matches_llama_cpp(stories, shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    model = cv.dnn.TextGenerationModel(stories)
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = 16
    assert model.generate("Once upon a time", config) == ref["text"]
    assert list(model.getGeneratedTokenIds()) == ref["greedyIds"]
    assert len(model.generate("Once upon a time")) > 0  # default config


def test_step_api_streams_the_same_text(stories):
    model = cv.dnn.TextGenerationModel(stories)
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = 20
    config.stopStrings = ["Lily"]
    model.start("Once upon a time", config)
    pieces = []
    while not model.isDone():
        pieces.append(model.next())
    assert "".join(pieces) == ", there was a little girl named "


def test_sampling_and_batches(stories):
    model = cv.dnn.TextGenerationModel(cv.dnn.readNet(stories))
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = 16
    config.temperature = 0.8
    config.topK = 40
    config.seed = 3
    a = model.generateBatch(["The dog", "A bird"], config)
    b = model.generateBatch(["The dog", "A bird"], config)
    assert len(a) == 2 and list(a) == list(b)


def test_chat_with_a_named_template(stories):
    model = cv.dnn.TextGenerationModel(stories)
    model.setChatTemplate("chatml")
    text = model.applyChatTemplate(["user"], ["Hi"])
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = 8
    model.startChat("Hi", config)
    while not model.isDone():
        model.next()
    assert isinstance(model.chat("More?", config), str)


def test_bad_config_is_a_cv_error(stories):
    model = cv.dnn.TextGenerationModel(stories)
    config = cv.dnn.GenerationConfig()
    config.temperature = 1.0
    config.topP = 2.0
    with pytest.raises(cv.error, match="top-p"):
        model.generate("Once", config)
