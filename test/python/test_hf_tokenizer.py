"""Hugging Face tokenizer.json files through cv2.dnn.Tokenizer.create: the same ids as the
GGUF vocabulary of the same model."""
import pytest

import cv2 as cv

LLAMA2_FOLDER = "onnx/tiny-random-LlamaForCausalLM-fp16"


def test_tokenizer_json_encodes_like_gguf(shared_testdata):
    gguf = cv.dnn.Tokenizer.create(str(shared_testdata / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf"))
    from_json = cv.dnn.Tokenizer.create(str(shared_testdata / LLAMA2_FOLDER / "tokenizer.json"))
    from_folder = cv.dnn.Tokenizer.create(str(shared_testdata / LLAMA2_FOLDER))
    expected = list(gguf.encode("Hello world"))
    assert expected == [1, 15043, 3186]
    assert list(from_json.encode("Hello world")) == expected
    assert list(from_folder.encode("Hello world")) == expected
    assert from_json.decode(expected) == "Hello world"
    assert (from_json.getBosId(), from_json.getEosId(), from_json.getVocabSize()) == (1, 2, 32000)
    assert from_json.isEndOfGeneration(2)


def test_malformed_tokenizer_json_raises(tmp_path):
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": "x"}}}')
    with pytest.raises(cv.error, match=r"model.vocab\['a'\]"):
        cv.dnn.Tokenizer.create(str(tmp_path))
