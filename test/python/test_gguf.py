"""GGUF models through cv2: readNet, greedy decoding against llama.cpp's stored output,
and the metadata reader."""
import json

import numpy as np
import pytest

import cv2 as cv


def greedy(net, prompt, n):
    out = []
    net.setInput(np.array([prompt], np.float32))
    logits = net.forward()
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        net.setInput(np.array([[out[-1]]], np.float32))
        logits = net.forward()
    return out


def test_stories260k_greedy_matches_llama_cpp(shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    net = cv.dnn.readNet(str(shared_testdata / "stories260K.gguf"))
    assert greedy(net, ref["promptIds"], 16) == ref["greedyIds"]
    cv.dnn.resetLLMState(net)
    assert cv.dnn.getLLMSequenceLength(net) == 0
    assert greedy(net, ref["promptIds"], 3) == ref["greedyIds"][:3]


def test_gguf_metadata(shared_testdata):
    f = cv.dnn.GGUFFile.open(str(shared_testdata / "stories260K.gguf"))
    assert f.getVersion() == 3
    assert f.getString("general.architecture") == "llama"
    assert f.getNumber("llama.context_length") == 512
    assert f.getMetadataType("tokenizer.ggml.scores") == "array[float32]"
    tokens = f.getStringArray("tokenizer.ggml.tokens")
    assert len(tokens) == 512 and tokens[1] == "<s>"
    assert list(f.getTensorShape("output.weight")) == [64, 512]
    with pytest.raises(cv.error, match="is missing"):
        f.getString("no.such.key")


def test_truncated_file_is_a_cv_error(tmp_path, shared_testdata):
    data = (shared_testdata / "stories260K.gguf").read_bytes()
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(data[:5000])
    with pytest.raises(cv.error, match="GGUF"):
        cv.dnn.readNet(str(bad))


def test_tokenizer_matches_llama_cpp_vectors(shared_testdata):
    vocab_dir = shared_testdata / "llama.cpp-vocab"
    for name in ["ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"]:
        tok = cv.dnn.Tokenizer.create(str(vocab_dir / name))
        inputs = (vocab_dir / (name + ".inp")).read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
        outputs = (vocab_dir / (name + ".out")).read_text(encoding="utf-8").split("\n")
        for text, expected in list(zip(inputs, outputs))[:20]:
            assert list(tok.encode(text, False)) == [int(x) for x in expected.split()], (name, text)
    tok = cv.dnn.Tokenizer.create(str(shared_testdata / "stories260K.gguf"))
    ids = tok.encode("Once upon a time")
    assert list(ids) == [1, 403, 407, 261, 378] and tok.getBosId() == 1 and tok.isEndOfGeneration(2)
    assert tok.decode(ids) == "Once upon a time"
