"""Sessions on disk from Python: TextGenerationModel.saveSession / loadSession and
KVCache.saveSequence / loadSequence (cv2 bindings)."""
import numpy as np
import pytest

import cv2 as cv

from conftest import PROJECT_ROOT

DEMO = str(PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf")
PROMPT = "Once upon a time, there was a little girl named Lily."


def greedy(n):
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = n
    return config


def test_session_round_trip_continues_as_the_original(tmp_path):
    path = str(tmp_path / "session.bin")
    original = cv.dnn.TextGenerationModel(DEMO)
    first = original.generate(PROMPT, greedy(8))
    original.saveSession(path)
    fed = len(original.getPromptTokenIds()) + len(original.getGeneratedTokenIds()) - 1

    restored = cv.dnn.TextGenerationModel(DEMO)
    assert restored.loadSession(path) == fed
    longer = PROMPT + first + " One day"
    expected = original.generate(longer, greedy(10))
    assert restored.generate(longer, greedy(10)) == expected
    assert restored.getLastPrefillTokenCount() == original.getLastPrefillTokenCount()
    assert restored.getLastPrefillTokenCount() < len(restored.getPromptTokenIds()) - 8
    assert cv.dnn.TextGenerationModel(DEMO).generate(longer, greedy(10)) == expected


def test_bad_session_files_raise_and_change_nothing(tmp_path):
    path = tmp_path / "session.bin"
    model = cv.dnn.TextGenerationModel(DEMO)
    model.generate(PROMPT, greedy(4))
    model.saveSession(str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(cv.error, match="truncated or corrupted"):
        model.loadSession(str(path))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(flipped))
    with pytest.raises(cv.error, match="checksum"):
        model.loadSession(str(path))
    model.generate(PROMPT, greedy(4))
    assert model.getLastPrefillTokenCount() == 1  # the session was kept


def test_kv_cache_sequence_files(tmp_path):
    path = str(tmp_path / "sequence.bin")
    net = cv.dnn.readNet(DEMO)
    ids = [1, 403, 407, 261, 378]
    cv.dnn.setLLMBatch(net, [0] * len(ids))
    net.setInput(np.array([ids], dtype="float32"))
    logits = net.forward()
    cache = cv.dnn.getLLMKVCache(net)
    cache.saveSequence(0, path, ids)

    other = cv.dnn.readNet(DEMO)
    count, tokens = cv.dnn.getLLMKVCache(other).loadSequence(path, 3)
    assert count == len(ids) and list(tokens) == ids
    assert cv.dnn.getLLMKVCache(other).getSequenceLength(3) == len(ids)
    # The next token on both: the same logits.
    nxt = int(logits.reshape(-1).argmax())
    for n, seq in ((net, 0), (other, 3)):
        cv.dnn.setLLMBatch(n, [seq])
        n.setInput(np.array([[nxt]], dtype="float32"))
    assert np.array_equal(net.forward(), other.forward())
