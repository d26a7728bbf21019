"""GGUF architecture phi2 from Python: cv2.dnn.TextGenerationModel on the synthetic phi2 models
(one LayerNorm feeding attention and GELU FFN in parallel, NEOX rotary over 32 of 64 head
dimensions, biases everywhere, output.bias) against llama.cpp's greedy ids stored in
test/data/oracle, and readNet refusing phi2 files it does not implement."""
import pytest

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, all 8 ids. Q4_K_M: the ids while llama.cpp's quantized run has a
# top-1/top-2 gap >= 0.5 nat (the first 4; the fifth is a 0.09-nat near-tie).
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q4_K_M", 4)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("phi2", type_name), tmp_path, n)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("phi2", "F32"), tmp_path)

    # llama.cpp requires the logits' bias and the output projection's
    msg = read_error(rewrite(path, tmp_path / "no_out_bias.gguf", drop_tensors=["output.bias"]))
    assert "tensor 'output.bias' is missing" in msg
    msg = read_error(rewrite(path, tmp_path / "no_o_bias.gguf", drop_tensors=["blk.0.attn_output.bias"]))
    assert "tensor 'blk.0.attn_output.bias' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "no_eps.gguf", drop_kvs=["phi2.attention.layer_norm_epsilon"]))
    assert "metadata key 'phi2.attention.layer_norm_epsilon' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "window.gguf", set_kvs=[
        ("phi2.attention.sliding_window", 16, ValueType.UINT32)]))
    assert "'phi2.attention.sliding_window' is not supported for phi2" in msg

    # The same tensors under `stablelm`: its FFN is gated (ffn_gate), phi2's is not.
    msg = read_error(rewrite(path, tmp_path / "as_stablelm.gguf", rename_arch="stablelm"))
    assert "tensor 'blk.0.ffn_gate.weight' is missing" in msg
