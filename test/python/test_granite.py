"""GGUF architecture granite from Python: cv2.dnn.TextGenerationModel on the synthetic granite
models (embedding scale 4, residual scale 0.5, attention scale 0.2, logit scale 2) against
llama.cpp's greedy ids stored in test/data/oracle, and readNet refusing granite files it does not
implement or that llama.cpp would not load."""
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, all 8 greedy ids. Q8_0: llama.cpp rounds activations to 8 bits
# and so do we, differently in detail: the ids while llama.cpp's top-1/top-2 gap is >= 0.5 nat
# (the first; the second is 0.39 nat).
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q8_0", 1)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("granite", type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("granite", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    # llama.cpp requires granite.logit_scale (the logits are divided by it)
    msg = read_error(rewrite(path, tmp_path / "no_logit_scale.gguf", drop_kvs=["granite.logit_scale"]))
    assert "metadata key 'granite.logit_scale' is missing" in msg
    msg = read_error(rewrite(path, tmp_path / "zero_logit_scale.gguf", set_kvs=[
        ("granite.logit_scale", 0.0, ValueType.FLOAT32)]))
    assert "'granite.logit_scale' = 0 is out of range" in msg

    msg = read_error(rewrite(path, tmp_path / "deepstack.gguf", set_kvs=[
        ("granite.deepstack_mapping", [-1, 1], ValueType.ARRAY)]))
    assert "'granite.deepstack_mapping'" in msg

    msg = read_error(rewrite(path, tmp_path / "rope_dim.gguf", set_kvs=[
        ("granite.rope.dimension_count", 32, ValueType.UINT32)]))
    assert "rope.dimension_count 32 != head size 64" in msg
