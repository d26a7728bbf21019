"""cv2.dnn KV cache API from Python: ragged batches, sequences, statistics."""
import numpy as np
import pytest

import cv2 as cv


def forward(net, ids, sequences):
    cv.dnn.setLLMBatch(net, sequences)
    net.setInput(np.array([ids], np.float32))
    return net.forward().copy()


def test_batch_rows_equal_lone_runs(shared_testdata):
    model = str(shared_testdata / "stories260K.gguf")
    prompts = [[1, 403, 407, 261, 378], [1, 290, 331]]
    alone = []
    for p in prompts:
        net = cv.dnn.readNet(model)
        alone.append(forward(net, p, [0] * len(p)))
        alone.append(forward(net, [5], [0]))
    net = cv.dnn.readNet(model)
    forward(net, prompts[0], [3] * 5)
    forward(net, prompts[1], [8] * 3)
    both = forward(net, [5, 5], [3, 8])
    assert both.shape == (2, 512)
    assert np.array_equal(both[0], alone[1][0]) and np.array_equal(both[1], alone[3][0])

    cache = cv.dnn.getLLMKVCache(net)
    assert list(cache.getSequenceIds()) == [3, 8]
    assert cache.getSequenceLength(3) == 6 and cache.getPagesInUse() == 2
    cache.forkSequence(3, 4)
    assert cache.getPagesShared() == 1
    cache.truncateSequence(4, 2)
    cache.removeSequence(3)
    assert cache.getPagesShared() == 0
    cache.clear()
    assert cache.getPagesInUse() == 0


def test_budget_and_storage_type(shared_testdata):
    net = cv.dnn.readNet(str(shared_testdata / "stories260K.gguf"))
    cache = cv.dnn.getLLMKVCache(net)
    cache.setStorageType(cv.CV_16F)
    assert cache.getStorageType() == cv.CV_16F
    cache.setMemoryBudget(cache.getBytesPerToken() * 16)  # one page
    forward(net, list(range(1, 17)), [0] * 16)
    with pytest.raises(cv.error, match="budget"):
        forward(net, [5], [0])
    assert cache.getSequenceLength(0) == 16
