"""GGUF architecture gptneox (Pythia, GPT-NeoX) from Python: cv2.dnn.TextGenerationModel on the
synthetic gptneox models (fused q|k|v with bias, NEOX rotary over rope.dimension_count < head
size, LayerNorms with bias, GELU FFN, parallel residual) against llama.cpp's greedy ids stored in
test/data/oracle, and readNet refusing gptneox files it does not implement."""
import pytest

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, all 8 ids. Q8_0: the ids while llama.cpp's quantized run has a
# top-1/top-2 gap >= 0.5 nat (all 8; Q4_K_M's second step is a 0.23-nat near-tie).
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q8_0", 8)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("gptneox", type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("gptneox", "F32"), tmp_path)

    # llama.cpp requires use_parallel_residual for gptneox (no default)
    msg = read_error(rewrite(path, tmp_path / "no_par.gguf", drop_kvs=["gptneox.use_parallel_residual"]))
    assert "metadata key 'gptneox.use_parallel_residual' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "no_eps.gguf", drop_kvs=["gptneox.attention.layer_norm_epsilon"]))
    assert "metadata key 'gptneox.attention.layer_norm_epsilon' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "no_bias.gguf", drop_tensors=["blk.1.attn_qkv.bias"]))
    assert "tensor 'blk.1.attn_qkv.bias' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "clamp.gguf", set_kvs=[
        ("gptneox.attention.clamp_kqv", 8.0, ValueType.FLOAT32)]))
    assert "'gptneox.attention.clamp_kqv' is not supported for gptneox" in msg

    msg = read_error(rewrite(path, tmp_path / "odd_rot.gguf", set_kvs=[
        ("gptneox.rope.dimension_count", 17, ValueType.UINT32)]))
    assert "rope.dimension_count 17 must be even" in msg

    # The same tensors under `llama`: its graph has separate Q/K/V projections.
    msg = read_error(rewrite(path, tmp_path / "as_llama.gguf", rename_arch="llama"))
    assert "tensor 'blk.0.attn_q.weight' is missing" in msg
