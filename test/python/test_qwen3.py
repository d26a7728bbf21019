"""GGUF architecture qwen3 from Python: cv2.dnn.TextGenerationModel on the synthetic qwen3 models
(per-head Q/K RMSNorm, heads of 128 while n_embd / n_head = 64) against llama.cpp's greedy ids
stored in test/data/oracle, and readNet refusing qwen3 variants it does not implement."""
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, the first 8 greedy ids (the 4th and 5th are byte tokens that
# form no UTF-8 character: the text has U+FFFD there, as a Python str must).
# Q8_0: llama.cpp rounds activations to 8 bits and so do we, differently in detail: the ids
# while llama.cpp's top-1/top-2 gap is >= 0.5 nat (the first 2).
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q8_0", 2)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    text = generate_matches_llama_cpp(load_oracle("qwen3", type_name), tmp_path, n)
    if type_name == "F32":
        assert "\ufffd" in text


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("qwen3", "F32"), tmp_path)
    same = rewrite(path, tmp_path / "same.gguf")
    assert cv.dnn.readNet(str(same)) is not None  # the copy itself loads

    # YaRN and rope.scaling.attn_factor apply to every rotary architecture as in llama.cpp (their
    # numbers: test_gguf_synthetic's rope_llama_yarn and mistral3, phi3's attn_factor); scaling
    # types llama.cpp does not know are refused by name, attn_factor out of range too.
    yarn = rewrite(path, tmp_path / "yarn.gguf", set_kvs=[
        ("qwen3.rope.scaling.type", "yarn", ValueType.STRING),
        ("qwen3.rope.scaling.factor", 4.0, ValueType.FLOAT32),
        ("qwen3.rope.scaling.original_context_length", 64, ValueType.UINT32)])
    assert cv.dnn.readNet(str(yarn)) is not None
    msg = read_error(rewrite(path, tmp_path / "dynamic.gguf", set_kvs=[
        ("qwen3.rope.scaling.type", "dynamic", ValueType.STRING)]))
    assert "rope scaling type 'dynamic' is not supported (none, linear, llama3, yarn are)" in msg

    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "attn_factor.gguf", set_kvs=[
        ("qwen3.rope.scaling.attn_factor", 0.5, ValueType.FLOAT32)]))) is not None
    msg = read_error(rewrite(path, tmp_path / "attn_factor0.gguf", set_kvs=[
        ("qwen3.rope.scaling.attn_factor", 0.0, ValueType.FLOAT32)]))
    assert "'qwen3.rope.scaling.attn_factor' = 0 is out of range" in msg

    msg = read_error(rewrite(path, tmp_path / "noncausal.gguf", set_kvs=[
        ("qwen3.attention.causal", False, ValueType.BOOL)]))
    assert "'qwen3.attention.causal' = false" in msg

    msg = read_error(rewrite(path, tmp_path / "value_length.gguf", set_kvs=[
        ("qwen3.attention.value_length", 64, ValueType.UINT32)]))
    assert "attention.value_length != attention.key_length" in msg

    msg = read_error(rewrite(path, tmp_path / "no_q_norm.gguf", drop_tensors=["blk.1.attn_q_norm.weight"]))
    assert "tensor 'blk.1.attn_q_norm.weight' is missing" in msg

    # The same tensors under `llama`: its graph has no Q/K norm, so the file is refused rather
    # than computed without them.
    msg = read_error(rewrite(path, tmp_path / "as_llama.gguf", rename_arch="llama"))
    assert "tensor 'blk.0.attn_q_norm.weight' is not used by architecture 'llama'" in msg
