"""GGUF architecture phi3 from Python: cv2.dnn.TextGenerationModel on the synthetic phi3 models
(fused attn_qkv, gate|up in one ffn_up, partial NEOX rotary, LongRoPE factors and attn_factor)
against llama.cpp's greedy ids stored in test/data/oracle, and readNet refusing phi3 variants it
does not implement."""
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, 8 greedy ids. Q4_K_M: the ids while llama.cpp's quantized
# run has a top-1/top-2 gap >= 0.5 nat (the first 2; the third is 0.01 nat).
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q4_K_M", 2)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("phi3", type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("phi3", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    msg = read_error(rewrite(path, tmp_path / "dynamic.gguf", set_kvs=[
        ("phi3.rope.scaling.type", "dynamic", ValueType.STRING),
        ("phi3.rope.scaling.factor", 4.0, ValueType.FLOAT32)]))
    assert "rope scaling type 'dynamic' is not supported" in msg

    msg = read_error(rewrite(path, tmp_path / "attn_factor.gguf", set_kvs=[
        ("phi3.rope.scaling.attn_factor", -1.0, ValueType.FLOAT32)]))
    assert "'phi3.rope.scaling.attn_factor' = -1 is out of range" in msg

    msg = read_error(rewrite(path, tmp_path / "no_up.gguf", drop_tensors=["blk.1.ffn_up.weight"]))
    assert "tensor 'blk.1.ffn_up.weight' is missing" in msg

    # The same file under `llama` (whose rope.scaling.attn_factor llama.cpp applies as phi3's):
    # the fused attn_qkv is not llama's.
    msg = read_error(rewrite(path, tmp_path / "as_llama.gguf", rename_arch="llama"))
    assert "tensor 'blk.0.attn_q.weight' is missing" in msg
