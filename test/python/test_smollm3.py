"""GGUF architecture smollm3 from Python: cv2.dnn.TextGenerationModel on the synthetic smollm3 models
(4 layers; llama.cpp gives the fourth no rotary) against llama.cpp's greedy ids stored in
test/data/oracle, and readNet refusing smollm3 files llama.cpp would not run."""
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides. Q4_K_M: llama.cpp rounds activations to 8 bits and so do we,
# differently in detail; every one of llama.cpp's 8 steps has a top-1/top-2 gap >= 0.58 nat.
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q4_K_M", 8)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("smollm3", type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("smollm3", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    # llama.cpp's smollm3 graph asserts that the rotary covers the whole head
    msg = read_error(rewrite(path, tmp_path / "rope_dim.gguf", set_kvs=[
        ("smollm3.rope.dimension_count", 32, ValueType.UINT32)]))
    assert "rope.dimension_count 32 != head size 64" in msg
