"""GGUF architecture mistral3 from Python: cv2.dnn.TextGenerationModel on the synthetic mistral3 model
(YaRN with the file's yarn_beta_fast / yarn_beta_slow / yarn_log_multiplier, attention temperature
scaling past original_context_length 64) against llama.cpp's greedy ids stored in
test/data/oracle; the temperature follows each sequence's own positions in a batch; readNet
refusing mistral3 files it does not implement."""
import numpy as np

import cv2 as cv

from synthetic_models import ValueType, generate_matches_llama_cpp, load_oracle, make_model, read_error, rewrite

# 85 tokens with BOS (llama.cpp's tokenization, test/data/oracle/README.md): positions 64..84 of
# the prompt and every generated token have an attention temperature above 1.
PROMPT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
          "One day, she saw a big red ball. It was so shiny that she wanted to play with it. She ran to the "
          "ball and kicked it high into the sky.")


def test_text_generation_model_matches_llama_cpp(tmp_path):
    generate_matches_llama_cpp(load_oracle("mistral3", "F32"), tmp_path, 8, PROMPT)


def softmax(z):
    z = np.asarray(z, np.float64).ravel()
    p = np.exp(z - z.max())
    return p / p.sum()


def test_temperature_follows_each_sequence(tmp_path):
    """llama.cpp's distributions after the prompt and after greedy steps, reached in batches next
    to another sequence at other positions: the temperature of a row is its own position's."""
    oracle = load_oracle("mistral3", "F32")
    net = cv.dnn.readNet(str(make_model(oracle, tmp_path)))
    prompt, greedy = oracle["prompt_ids"], oracle["greedy_ids"]

    def check(p, step):
        expected = oracle["greedy_steps"][step]["top5"] if step else oracle["top_k"]
        assert max(abs(p[e["id"]] - e["p"]) for e in expected) < 1e-4, step

    other = prompt[:70]  # sequence 1: 70 tokens, then decoding beside sequence 0
    cv.dnn.setLLMBatch(net, [1] * len(other))
    net.setInput(np.array([other], np.float32))
    net.forward()
    cv.dnn.setLLMBatch(net, [1] + [0] * len(prompt))
    net.setInput(np.array([[prompt[70]] + prompt], np.float32))
    out = net.forward()
    assert out.shape[0] == 2
    check(softmax(out[1]), 0)
    for step in (1, 2, 3):
        cv.dnn.setLLMBatch(net, [0, 1])
        net.setInput(np.array([[greedy[step - 1], 5]], np.float32))
        check(softmax(net.forward()[0]), step)


def test_readnet_refuses_what_it_does_not_implement(tmp_path):
    path = make_model(load_oracle("mistral3", "F32"), tmp_path)
    assert cv.dnn.readNet(str(rewrite(path, tmp_path / "same.gguf"))) is not None

    msg = read_error(rewrite(path, tmp_path / "beta.gguf", set_kvs=[
        ("mistral3.rope.scaling.yarn_beta_fast", 0.0, ValueType.FLOAT32)]))
    assert "yarn_beta_fast 0" in msg and "out of range" in msg

    msg = read_error(rewrite(path, tmp_path / "dynamic.gguf", set_kvs=[
        ("mistral3.rope.scaling.type", "dynamic", ValueType.STRING)]))
    assert "rope scaling type 'dynamic' is not supported" in msg
