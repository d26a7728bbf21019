"""GGUF architecture stablelm from Python: cv2.dnn.TextGenerationModel on the synthetic stablelm
models against llama.cpp's greedy ids stored in test/data/oracle: StableLM 2 1.6B's form (Q/K/V
biases, attention and SwiGLU FFN in sequence, each after its LayerNorm) and 12B's (per-head Q/K
LayerNorms with a weight per head, no ffn_norm: the FFN on the attention's normed input, in
parallel), NEOX rotary over 16 of 64 head dimensions; and readNet refusing stablelm files it does
not implement."""
import pytest

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, all 8 ids. Quantized: the ids while llama.cpp's quantized run
# has a top-1/top-2 gap >= 0.5 nat.
@pytest.mark.parametrize("variant,type_name,n", [("stablelm", "F32", 8), ("stablelm", "Q8_0", 8),
                                                 ("stablelm_qknorm_par", "F32", 8),
                                                 ("stablelm_qknorm_par", "Q8_0", 6)])
def test_text_generation_model_matches_llama_cpp(tmp_path, variant, type_name, n):
    generate_matches_llama_cpp(load_oracle(variant, type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("stablelm_qknorm_par", "F32"), tmp_path)

    msg = read_error(rewrite(path, tmp_path / "no_eps.gguf", drop_kvs=["stablelm.attention.layer_norm_epsilon"]))
    assert "metadata key 'stablelm.attention.layer_norm_epsilon' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "scale.gguf", set_kvs=[
        ("stablelm.attention.scale", 0.5, ValueType.FLOAT32)]))
    assert "'stablelm.attention.scale' is not supported for stablelm" in msg

    # The same tensors under `qwen2`: its FFN always has a norm of its own (no parallel form).
    msg = read_error(rewrite(path, tmp_path / "as_qwen2.gguf", rename_arch="qwen2"))
    assert "tensor 'blk.0.ffn_norm.weight' is missing" in msg
