"""Mixture-of-experts GGUF models from Python (qwen3moe, llama with expert_count: Mixtral, and
gpt-oss: attention sinks, a window on every second layer, biases, MXFP4 experts):
cv2.dnn.TextGenerationModel on the synthetic models against llama.cpp's greedy ids stored in
test/data/oracle, an 85-token prompt whose tokens route to every expert in one forward, and
readNet refusing MoE files llama.cpp would not run or that this project does not implement."""
import numpy as np
import pytest

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite

# The 85-token prompt of the *_long oracles (llama.cpp's tokenization with BOS, as mistral3's).
LONG_PROMPT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
               "One day, she saw a big red ball. It was so shiny that she wanted to play with it. She ran to the "
               "ball and kicked it high into the sky.")


@pytest.mark.parametrize("arch", ["qwen3moe", "mixtral", "gpt-oss"])
@pytest.mark.parametrize("type_name", ["F32", "Q4_K_M"])
def test_text_generation_model_matches_llama_cpp(tmp_path, arch, type_name):
    oracle = load_oracle(arch, type_name)
    steps = oracle["greedy_steps"]
    # the default (8-bit) path is compared while llama.cpp's own choice is clear (>= 0.5 nat)
    n = 1
    while n < len(steps) and np.log(steps[n]["top5"][0]["p"] / steps[n]["top5"][1]["p"]) >= 0.5:
        n += 1
    generate_matches_llama_cpp(oracle, tmp_path, 8 if type_name == "F32" else n)


def test_gpt_oss_mxfp4_experts_match_llama_cpp(tmp_path):
    generate_matches_llama_cpp(load_oracle("gpt-oss", "MXFP4_MOE"), tmp_path, 8)


@pytest.mark.parametrize("arch", ["qwen3moe", "mixtral", "gpt-oss"])
def test_long_prompt_routes_every_expert_and_matches_llama_cpp(tmp_path, arch):
    generate_matches_llama_cpp(load_oracle(arch, "F32_long"), tmp_path, 8, LONG_PROMPT)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("qwen3moe", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    msg = read_error(rewrite(path, tmp_path / "used.gguf", set_kvs=[
        ("qwen3moe.expert_used_count", 9, ValueType.UINT32)]))
    assert "expert_used_count 9 > expert_count 8" in msg

    msg = read_error(rewrite(path, tmp_path / "count.gguf", set_kvs=[
        ("qwen3moe.expert_count", 4, ValueType.UINT32)]))
    assert "ffn_gate_inp.weight' has shape [256, 8], expected [256, 4]" in msg

    msg = read_error(rewrite(path, tmp_path / "dense.gguf", drop_kvs=["qwen3moe.expert_count"]))
    assert "qwen3moe.expert_count" in msg and "missing" in msg

    msg = read_error(rewrite(path, tmp_path / "no_router.gguf", drop_tensors=["blk.1.ffn_gate_inp.weight"]))
    assert "tensor 'blk.1.ffn_gate_inp.weight' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "huge.gguf", set_kvs=[
        ("qwen3moe.expert_count", 100000, ValueType.UINT32)]))
    assert "expert_count" in msg and "out of range" in msg

    # an architecture without experts in llama.cpp refuses them by name
    qwen3 = rewrite(path, tmp_path / "qwen3.gguf", rename_arch="qwen3")
    assert "mixture-of-experts files of architecture 'qwen3' are not supported" in read_error(qwen3)

    # a llama file with experts' tensors but no expert_count reads as dense, which it is not
    mixtral = make_model(load_oracle("mixtral", "F32"), tmp_path)
    msg = read_error(rewrite(mixtral, tmp_path / "dense_llama.gguf", drop_kvs=["llama.expert_count"]))
    assert "tensor 'blk.0.ffn_gate.weight' is missing" in msg


def test_readnet_refuses_gpt_oss_files_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("gpt-oss", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    # llama.cpp requires the window (its layers 0, 2, ... use it)
    msg = read_error(rewrite(path, tmp_path / "window.gguf", drop_kvs=["gpt-oss.attention.sliding_window"]))
    assert "gpt-oss.attention.sliding_window' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "sinks.gguf", drop_tensors=["blk.0.attn_sinks.weight"]))
    assert "tensor 'blk.0.attn_sinks.weight' is missing" in msg

    msg = read_error(rewrite(path, tmp_path / "bias.gguf", drop_tensors=["blk.1.ffn_up_exps.bias"]))
    assert "tensor 'blk.1.ffn_up_exps.bias' is missing" in msg  # llama.cpp requires them

    msg = read_error(rewrite(path, tmp_path / "scale.gguf", set_kvs=[
        ("gpt-oss.attention.scale", 0.5, ValueType.FLOAT32)]))
    assert "gpt-oss.attention.scale' is not supported for gpt-oss" in msg
