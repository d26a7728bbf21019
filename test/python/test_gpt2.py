"""GGUF architecture gpt2 from Python: cv2.dnn.TextGenerationModel on the synthetic gpt2 models
(learned positions, LayerNorm with bias, fused QKV with bias, no rotary, GELU FFN with biases)
against llama.cpp's greedy ids stored in test/data/oracle, rewinding and batching (positions come
from each sequence, not from the forward), and readNet refusing gpt2 files it does not implement."""
import numpy as np
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite


# F32: exact math on both sides, all 8 greedy ids. Q8_0: llama.cpp rounds activations to 8 bits
# and so do we, differently in detail: the ids while llama.cpp's top-1/top-2 gap is >= 0.5 nat.
@pytest.mark.parametrize("type_name,n", [("F32", 8), ("Q8_0", 5)])
def test_text_generation_model_matches_llama_cpp(tmp_path, type_name, n):
    generate_matches_llama_cpp(load_oracle("gpt2", type_name), tmp_path, n)


def softmax(z):
    z = np.asarray(z, np.float64).ravel()
    p = np.exp(z - z.max())
    return p / p.sum()


def test_positions_follow_each_sequence(tmp_path):
    """llama.cpp's next-token distributions after the prompt and after each greedy step, reached
    (a) the prompt in one forward, (b) after a rewind, (c) in a batch next to another sequence:
    the position embedding must use each token's position in its own sequence."""
    oracle = load_oracle("gpt2", "F32")
    net = cv.dnn.readNet(str(make_model(oracle, tmp_path)))
    prompt, greedy = oracle["prompt_ids"], oracle["greedy_ids"]

    def check(p, step):
        expected = oracle["greedy_steps"][step]["top5"] if step else oracle["top_k"]
        assert max(abs(p[e["id"]] - e["p"]) for e in expected) < 1e-4, step

    net.setInput(np.array([prompt], np.float32))
    check(softmax(net.forward()), 0)
    net.setInput(np.array([[greedy[0]]], np.float32))
    check(softmax(net.forward()), 1)

    # Rewind to the prompt's first 3 tokens and feed the rest again.
    cv.dnn.truncateLLMState(net, 3)
    net.setInput(np.array([prompt[3:] + greedy[:2]], np.float32))
    check(softmax(net.forward()), 2)

    # A batch: sequence 1 gets the whole prompt (positions 0..4) while sequence 0 continues at 7.
    cv.dnn.setLLMBatch(net, [0] + [1] * len(prompt))
    net.setInput(np.array([[greedy[2]] + prompt], np.float32))
    out = net.forward()
    check(softmax(out[0]), 3)
    check(softmax(out[1]), 0)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("gpt2", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    msg = read_error(rewrite(path, tmp_path / "no_pos.gguf", drop_tensors=["position_embd.weight"]))
    assert "tensor 'position_embd.weight' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "no_bias.gguf", drop_tensors=["blk.1.ffn_norm.bias"]))
    assert "tensor 'blk.1.ffn_norm.bias' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "soft.gguf", set_kvs=[
        ("gpt2.final_logit_softcapping", 30.0, ValueType.FLOAT32)]))
    assert "'gpt2.final_logit_softcapping' is not supported" in msg

    msg = read_error(rewrite(path, tmp_path / "noncausal.gguf", set_kvs=[
        ("gpt2.attention.causal", False, ValueType.BOOL)]))
    assert "'gpt2.attention.causal' = false" in msg

    # The same tensors under `llama`: its graph has separate Q/K/V projections.
    msg = read_error(rewrite(path, tmp_path / "as_llama.gguf", rename_arch="llama"))
    assert "tensor 'blk.0.attn_q.weight' is missing" in msg
