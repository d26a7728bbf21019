"""GGUF architectures gemma2 and gemma3 from Python: cv2.dnn.TextGenerationModel on the synthetic
models (sliding windows of 4 positions on the local layers, soft-capped scores and logits, GELU
gate, post-norms, scaled embeddings; gemma3 with per-head Q/K norm and five local layers per
global one) against llama.cpp's greedy ids stored in test/data/oracle, the KV cache releasing the
local layers' pages, and readNet refusing gemma variants it does not implement."""
import numpy as np
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# The ids while llama.cpp's top-1/top-2 gap is >= 0.5 nat (gemma2 F32: 7 of 8; Q8_0: all 8).
@pytest.mark.parametrize("arch,type_name,n", [("gemma2", "F32", 7), ("gemma2", "Q8_0", 8),
                                              ("gemma3", "F32", 8), ("gemma3", "Q4_K_M", 8)])
def test_text_generation_model_matches_llama_cpp(tmp_path, arch, type_name, n):
    generate_matches_llama_cpp(load_oracle(arch, type_name), tmp_path, n)


def test_local_layers_release_their_pages(tmp_path):
    path = make_model(load_oracle("gemma3", "F32"), tmp_path)  # window 4 on 5 of 6 layers
    net = cv.dnn.readNet(str(path))
    cache = cv.dnn.getLLMKVCache(net)
    net.setInput(np.array([[1] + [400 + i % 50 for i in range(99)]], np.float32))
    net.forward()
    net.setInput(np.array([[7]], np.float32))
    net.forward()
    # 101 tokens: the global layer holds 7 pages of 16 tokens, each local layer the page of the
    # last 4 positions (plus the page the step wrote into).
    full = cache.getBytesPerToken() * 7 * 16
    assert cache.getBytesInUse() <= full / 6 + 5 * 2 * full / 6 / 7
    assert cache.getResumableLength(0, 101) == 101
    assert cache.getResumableLength(0, 50) == 0  # the local layers no longer hold positions 47..49
    with pytest.raises(cv.error, match="sliding-window layers have released"):
        cache.truncateSequence(0, 50)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("gemma3", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    msg = read_error(rewrite(path, tmp_path / "softcap.gguf", set_kvs=[
        ("gemma3.attn_logit_softcapping", 50.0, ValueType.FLOAT32)]))
    assert "'gemma3.attn_logit_softcapping' is not supported for gemma3" in msg

    msg = read_error(rewrite(path, tmp_path / "pattern.gguf", set_kvs=[
        ("gemma3.attention.sliding_window_pattern", [True, False] * 3, ValueType.ARRAY)]))
    assert "'gemma3.attention.sliding_window_pattern' as a per-layer array is not supported" in msg

    msg = read_error(rewrite(path, tmp_path / "no_post_norm.gguf", drop_tensors=["blk.2.post_ffw_norm.weight"]))
    assert "tensor 'blk.2.post_ffw_norm.weight' is missing" in msg

    # gemma2's output always shares token_embd: an output.weight is refused, not used (a gemma3
    # file without its Q/K norms renamed: output.weight is then the one tensor gemma2 does not read).
    norms = [f"blk.{i}.attn_{n}_norm.weight" for i in range(6) for n in "qk"]
    msg = read_error(rewrite(path, tmp_path / "as_gemma2.gguf", drop_tensors=norms, rename_arch="gemma2"))
    assert "tensor 'output.weight' is not used by architecture 'gemma2'" in msg
