#!/usr/bin/python3
"""Makes broken variants of a small builder-style ONNX decoder, for the importer's error tests
(test/cpp/test_onnx_llm.cpp, ONNXLanguageModelErrors). Each goes to OUTPUT_DIR/<name>/:

  unsupported_op      the MLP's Sigmoid replaced by Softplus (an operator the importer does not know)
  transpose_activation a Transpose(0, 2, 1) of the embedding output (on activations only the head
                      transposes of attention are taken; on constants Transpose folds)
  token_count_arithmetic  --qk-norm dynamic, the token count from Shape(q) doubled by a Mul before
                      the Concat of the Reshape's shape (computing with it is refused, naming the Mul)
  view_into_matmul    the first q_proj MatMul fed [batch, seq * 4, 16] (a Reshape of the normed
                      input into rows of 16): a view where a matmul needs whole tokens
  external_escape     an external-data location that leaves the model's folder ("../...")
  external_truncated  model.onnx.data cut in half: offsets point past its end
  truncated_model     model.onnx cut in half (not a valid protobuf message any more)
  present_consumed    a layer reads present.0.key, which the KV cache does not produce

Hugging Face style exports (tools/onnx/make_hf_style_model.py --arch llama) broken on purpose:

  hf_no_causal_mask      the 4-D mask no longer added to the scores (attention not causal)
  hf_keys_without_cache  layer 0's scores multiply q by the new keys alone, not the cache's

and the inputs tools/fuzz/fuzz_onnx_llm found (test/cpp/test_fuzz_regressions.cpp):

  fuzz_packed_head_overflow  packed-QKV GroupQueryAttention with num_heads = kv_num_heads = 2^30
                             (num_heads + 2 * kv_num_heads overflowed int)
  fuzz_config_float_int      genai_config.json's context_length 1e+30 (json's float-to-int cast
                             was undefined behaviour)
  fuzz_skip_norm_no_input    a SkipSimplifiedLayerNormalization whose input 0 is empty (a map
                             lookup before the input check threw std::out_of_range)

Usage: make_onnx_llm_error_models.py OUTPUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import onnx
import onnx.numpy_helper
from onnx import helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "tools", "onnx", "make_builder_style_model.py")
HF_GENERATOR = os.path.join(ROOT, "tools", "onnx", "make_hf_style_model.py")
BASE_ARGS = ["--attention", "gqa-rotary", "--heads", "4", "--kv-heads", "2", "--head-size", "16",
             "--hidden", "64", "--ffn", "128", "--vocab", "256", "--seed", "3"]


def make_base(out, external, extra=()):
    subprocess.run([sys.executable, GENERATOR, "--out", out] + BASE_ARGS + (["--external-data"] if external else [])
                   + list(extra), check=True, stdout=subprocess.DEVNULL)


def main(out_root):
    def folder(name, external=False, extra=()):
        d = os.path.join(out_root, name)
        shutil.rmtree(d, ignore_errors=True)
        make_base(d, external, extra)
        return d

    d = folder("unsupported_op")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    next(n for n in m.graph.node if n.op_type == "Sigmoid").op_type = "Softplus"
    onnx.save(m, path)

    d = folder("transpose_activation")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    gather = next(n for n in m.graph.node if n.name == "/model/embed_tokens/Gather")
    t = helper.make_node("Transpose", [gather.output[0]], ["transposed"], name="bad_transpose", perm=[0, 2, 1])
    for n in m.graph.node:
        for i, x in enumerate(n.input):
            if x == gather.output[0]:
                n.input[i] = "transposed"
    m.graph.node.insert(list(m.graph.node).index(gather) + 1, t)
    onnx.save(m, path)

    d = folder("token_count_arithmetic", extra=["--qk-norm", "dynamic"])
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    un = next(n for n in m.graph.node if n.name == "/model/layers.0/attn/q_norm/Unsqueeze_1")
    two = onnx.numpy_helper.from_array(__import__("numpy").array(2, "int64"), "two")
    m.graph.initializer.append(two)
    mul = helper.make_node("Mul", [un.input[0], "two"], ["doubled"], name="token_count_times_two")
    un.input[0] = "doubled"
    m.graph.node.insert(list(m.graph.node).index(un), mul)
    onnx.save(m, path)

    d = folder("view_into_matmul")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    q = next(n for n in m.graph.node if n.name == "/model/layers.0/attn/q_proj/MatMul")
    shape = onnx.numpy_helper.from_array(__import__("numpy").array([0, -1, 16], "int64"), "view_shape")
    m.graph.initializer.append(shape)
    r = helper.make_node("Reshape", [q.input[0], "view_shape"], ["viewed"], name="bad_view")
    q.input[0] = "viewed"
    m.graph.node.insert(list(m.graph.node).index(q), r)
    onnx.save(m, path)

    d = folder("external_escape", external=True)
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path, load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../external_truncated/model.onnx.data"
    onnx.save(m, path)

    d = folder("external_truncated", external=True)
    data = os.path.join(d, "model.onnx.data")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)

    d = folder("truncated_model")
    path = os.path.join(d, "model.onnx")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)

    d = folder("present_consumed")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    logits = next(n for n in m.graph.node if "logits" in n.output)
    add = helper.make_node("Add", [logits.input[0], "present.0.key"], ["mixed"], name="consumes_present")
    logits.input[0] = "mixed"
    m.graph.node.insert(list(m.graph.node).index(logits), add)
    onnx.save(m, path)

    d = folder("fuzz_skip_norm_no_input")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    next(n for n in m.graph.node if n.op_type == "SkipSimplifiedLayerNormalization").input[0] = ""
    onnx.save(m, path)

    d = folder("fuzz_packed_head_overflow", extra=["--packed-qkv"])
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    for n in m.graph.node:
        if n.op_type == "GroupQueryAttention":
            for a in n.attribute:
                if a.name in ("num_heads", "kv_num_heads"):
                    a.i = 1 << 30
    onnx.save(m, path)

    d = folder("fuzz_config_float_int")
    path = os.path.join(d, "genai_config.json")
    with open(path) as f:
        config = json.load(f)
    config["model"]["context_length"] = 1e30
    with open(path, "w") as f:
        json.dump(config, f, indent=4)

    # Hugging Face style exports (attention written out) with the pieces the importer relies on broken.
    def hf_folder(name):
        d = os.path.join(out_root, name)
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run([sys.executable, HF_GENERATOR, "--arch", "llama", "--seed", "6", "--out", d], check=True,
                       stdout=subprocess.DEVNULL)
        return d

    # The 4-D mask is not added to the scores: every new token would see the ones after it.
    d = hf_folder("hf_no_causal_mask")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    for n in m.graph.node:
        if n.op_type == "Softmax":
            masked = next(p for p in m.graph.node if p.output[0] == n.input[0])
            n.input[0] = masked.input[0]  # the scaled scores before the mask's Add
    onnx.save(m, path)

    # Layer 0's scores use the new keys only (k^T of the rotated keys, not of the Concat with the past).
    d = hf_folder("hf_keys_without_cache")
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    scores = next(n for n in m.graph.node if n.name == "/model/layers.0/self_attn/MatMul")
    concat = next(n for n in m.graph.node if n.op_type == "Concat" and n.input[0] == "past_key_values.0.key")
    t = helper.make_node("Transpose", [concat.input[1]], ["new_keys_transposed"], name="keys_without_cache",
                         perm=[0, 1, 3, 2])
    scores.input[1] = "new_keys_transposed"
    m.graph.node.insert(list(m.graph.node).index(scores), t)
    onnx.save(m, path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
