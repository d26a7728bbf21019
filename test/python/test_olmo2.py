"""GGUF architecture olmo2 from Python: cv2.dnn.TextGenerationModel on the synthetic olmo2 models
(no norms before attention and FFN, norms after them, Q/K RMSNorm over the whole projections)
against llama.cpp's greedy ids stored in test/data/oracle."""
import pytest

from synthetic_models import generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# The ids while llama.cpp's top-1/top-2 gap is >= 0.5 nat (6 of 8 for F32 and Q8_0).
@pytest.mark.parametrize("type_name,n", [("F32", 6), ("Q8_0", 6)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("olmo2", type_name), tmp_path, n)


def test_readnet_refuses_files_of_other_blocks(tmp_path):
    # A llama file under olmo2: no Q/K norms (olmo2 needs them), and its pre-norms are not read.
    msg = read_error(rewrite(make_model(load_oracle("llama", "F32"), tmp_path), tmp_path / "as_olmo2.gguf",
                             rename_arch="olmo2"))
    assert "tensor 'blk.0.attn_q_norm.weight' is missing" in msg
    # olmo2's Q norm spans the whole projection, not one head: gemma3's per-head norms are refused.
    msg = read_error(rewrite(make_model(load_oracle("gemma3", "F32"), tmp_path), tmp_path / "g3_as_olmo2.gguf",
                             rename_arch="olmo2"))
    assert "tensor 'blk.0.attn_q_norm.weight' has 96 elements in 1 dims, expected a vector of 384" in msg
