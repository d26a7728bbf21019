"""ONNX Runtime GenAI model folders (model.onnx + tokenizer.json + genai_config.json) from Python
and the command line, against ONNX Runtime 1.30's stored outputs (../shared/testdata/reference)."""
import json
import os
import pathlib
import subprocess

import cv2 as cv
import numpy as np
import pytest

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))


def reference(shared_testdata, name):
    return json.loads((shared_testdata / "reference" / f"{name}.ort.json").read_text())


def ids_line(out, name):
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return [int(x) for x in line.split(":", 1)[1].split()]
    raise AssertionError(f"no {name} line in {out!r}")


def test_readnet_greedy_matches_onnx_runtime(shared_testdata):
    ref = reference(shared_testdata, "tiny-graph-capture-gqa")
    net = cv.dnn.readNet(str(shared_testdata / "onnx" / "tiny-graph-capture-gqa" / "model.onnx"))
    ids, feed = [], ref["promptIds"]
    for _ in ref["greedyIds"]:
        net.setInput(np.array([feed], np.float32))
        ids.append(int(np.argmax(net.forward())))
        feed = [ids[-1]]
    assert ids == ref["greedyIds"]
    assert cv.dnn.getLLMSequenceLength(net) == len(ref["promptIds"]) + len(ref["greedyIds"]) - 1


def test_text_generation_model_on_an_onnx_folder(shared_testdata):
    ref = reference(shared_testdata, "tiny-random-LlamaForCausalLM-fp16")
    model = cv.dnn.TextGenerationModel(str(shared_testdata / "onnx" / "tiny-random-LlamaForCausalLM-fp16" / "model.onnx"))
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = len(ref["greedyIds"])
    model.generate("Once upon a time", config)  # tokenizer.json: BOS + Llama 2 pieces
    assert list(model.getPromptTokenIds()) == ref["promptIds"]
    assert list(model.getGeneratedTokenIds()) == ref["greedyIds"]
    assert model.getTokenizer().decode(model.getGeneratedTokenIds()) != ""


def test_llm_generate_with_text_and_with_ids(shared_testdata):
    ref = reference(shared_testdata, "tiny-random-LlamaForCausalLM-fp16")
    model = str(shared_testdata / "onnx" / "tiny-random-LlamaForCausalLM-fp16" / "model.onnx")
    for prompt in ("--prompt=Once upon a time", "--prompt-ids=" + ",".join(map(str, ref["promptIds"]))):
        r = subprocess.run([str(BIN / "llm_generate"), f"--model={model}", prompt, "--max-new-tokens=16",
                            "--print-token-ids"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert ids_line(r.stdout, "prompt_ids") == ref["promptIds"]
        assert ids_line(r.stdout, "generated_ids") == ref["greedyIds"]


def test_onnx_folder_without_tokenizer_or_vocab_size_is_a_clear_error(tmp_path, shared_testdata):
    src = shared_testdata / "onnx" / "tiny-graph-capture-gqa"
    (tmp_path / "model.onnx").write_bytes((src / "model.onnx").read_bytes())
    with pytest.raises(cv.error) as info:
        cv.dnn.TextGenerationModel(str(tmp_path / "model.onnx"))
    assert "has no tokenizer.json" in str(info.value) and "vocab_size" in str(info.value)


def test_onnx_folder_without_tokenizer_generates_token_ids(tmp_path, shared_testdata):
    """model.onnx + genai_config.json, no tokenizer.json: ids in, ids out (ONNX Runtime's greedy ids);
    text in is an error that says why."""
    ref = reference(shared_testdata, "tiny-graph-capture-gqa")
    src = shared_testdata / "onnx" / "tiny-graph-capture-gqa"
    for name in ("model.onnx", "genai_config.json"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    model = cv.dnn.TextGenerationModel(str(tmp_path / "model.onnx"))
    cfg = cv.dnn.GenerationConfig()
    cfg.maxNewTokens = len(ref["greedyIds"])
    model.startWithTokenIds(ref["promptIds"], cfg)
    while not model.isDone():
        model.next()
    assert list(model.getGeneratedTokenIds()) == ref["greedyIds"]
    with pytest.raises(cv.error, match="encoding text needs a tokenizer"):
        model.start("Once upon a time", cfg)
    out = subprocess.run([str(BIN / "llm_generate"), f"--model={tmp_path / 'model.onnx'}",
                          "--prompt-ids=" + ",".join(map(str, ref["promptIds"])),
                          f"--max-new-tokens={len(ref['greedyIds'])}"],
                         capture_output=True, text=True, check=True).stdout
    assert ids_line(out, "generated_ids") == ref["greedyIds"]


def test_hugging_face_export_folder_generates_onnx_runtimes_ids():
    """An optimum-style folder (model.onnx with attention written out + Hugging Face's config.json,
    no genai_config.json, no tokenizer.json), made by the make_onnx_llm_models fixture: ids in, ONNX
    Runtime's greedy ids out, through cv2 (test/data/oracle/onnx/hf_qwen2.ort.json)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    ref = json.loads((root / "test" / "data" / "oracle" / "onnx" / "hf_qwen2.ort.json").read_text())
    folder = BIN.parent / "test-models" / "onnx_llm" / "hf_qwen2"
    assert (folder / "config.json").exists() and not (folder / "genai_config.json").exists()
    model = cv.dnn.TextGenerationModel(str(folder / "model.onnx"))
    cfg = cv.dnn.GenerationConfig()
    cfg.maxNewTokens = len(ref["greedy_ids"])
    model.startWithTokenIds(ref["prompt_ids"], cfg)
    while not model.isDone():
        model.next()
    assert list(model.getGeneratedTokenIds()) == ref["greedy_ids"]
