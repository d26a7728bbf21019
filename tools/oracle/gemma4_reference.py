#!/usr/bin/python3
"""Float64 NumPy forward pass of a gemma4 GGUF (Gemma 4's dense text model), written from
llama.cpp's src/models/gemma4.cpp and its KV-sharing rule (llama-model.cpp), to check that
tools/gguf/synthetic_gemma4.py writes what llama.cpp reads and that the llama.cpp oracles are the
math the C++ implementation is written from.

    gemma4_reference.py MODEL.gguf --oracle ORACLE.nlc.json [--part twin|unscaled] [--mistake NAME] [--exact-gelu]

The prompt is the oracle's prompt_ids and the decode steps are fed the oracle's greedy ids
(teacher forcing); prints max |p_ref - p_llama.cpp| over the oracle's top 20 after the prompt and
over the top 5 of every step. Tokens run one at a time (attention over the cached keys / values).

The math (numpy shapes are ggml dims reversed, W @ x):
  x0 = token_embd[t] * sqrt(n_embd)
  per-layer inputs (P = embedding_length_per_layer_input > 0), for layer l:
     in_l = (rms_norm(per_layer_model_proj[l*P:(l+1)*P] @ x0 / sqrt(n_embd), per_layer_proj_norm)
             + per_layer_token_embd[t, l*P:(l+1)*P] * sqrt(P)) / sqrt(2)
  block l (local when sliding_window_pattern[l]: heads of key_length_swa, rotary over
  rope.dimension_count_swa with base rope.freq_base_swa; global: key_length, rope.dimension_count,
  rope.freq_base and the per-pair factors of rope_freqs.weight):
     h = rms_norm(x, attn_norm); q = rms_norm_head(Wq h, attn_q_norm) rotated (NEOX)
     own KV (l < n_layer - shared_kv_layers): k = rms_norm_head(Wk h, attn_k_norm) rotated,
         v = rms_norm_head(Wv h) (no weight; Wk h where attn_v is absent), cached for layer l
     shared: keys / values of layer n_layer - shared - 2 (local) or - 1 (global)
     a = softmax(q . k * 1) v over the positions the layer sees (window: the last n_swa)
     x = x + rms_norm(Wo a, post_attention_norm)
     x = x + rms_norm(W_down (gelu(W_gate f) * (W_up f)), post_ffw_norm), f = rms_norm(x, ffn_norm)
     x = x + rms_norm(proj (gelu(inp_gate x) * in_l), post_norm)      (P > 0)
     x = x * layer_output_scale
  logits = c tanh(output(rms_norm(x, output_norm)) / c), c = final_logit_softcapping (default 30)
GELU is ggml_gelu as llama.cpp's CPU backend computes it (its float16 table: input and result
rounded to half precision, 0 below -10, x above 10) unless --exact-gelu.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_math import load, probs, rms_norm, rope_neox  # noqa: E402

MISTAKES = {
    "v_norm_skipped": "values not RMS-normalized",
    "k_as_v_normed": "layers without attn_v take the normed, rotated K as V",
    "kv_sharing_ignored": "the sharing layers compute keys and values from their own attn_k / attn_v",
    "rope_freqs_ignored": "global layers rotate every pair (no rope_freqs factors)",
    "rope_freqs_on_local": "local layers use rope_freqs too",
    "per_layer_input_skipped": "no per-layer embeddings",
    "layer_output_scale_skipped": "no layer_output_scale",
    "softcap_default_ignored": "no final soft-cap when final_logit_softcapping is absent",
    "scale_inv_sqrt_d": "scores scaled by 1/sqrt(head size) instead of 1",
}
MISTAKE = set()


def gelu(x, exact):
    if exact:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * x * (1.0 + 0.044715 * x * x)))
    h = x.astype(np.float16).astype(np.float64)
    y = (0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * h * (1.0 + 0.044715 * h * h)))).astype(np.float16)
    return np.where(x <= -10.0, 0.0, np.where(x >= 10.0, x, y.astype(np.float64)))


def per_layer(kv, key, n, default=None):
    v = kv.get(key, default)
    if v is None:
        raise SystemExit("missing " + key)
    return list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v] * n


class Gemma4:
    def __init__(self, path, exact_gelu):
        kv, self.t = load(path)
        a = "gemma4."
        self.exact_gelu = exact_gelu
        self.E = kv[a + "embedding_length"]
        self.L = kv[a + "block_count"]
        self.H = kv[a + "attention.head_count"]
        self.eps = kv[a + "attention.layer_norm_rms_epsilon"]
        self.local = [bool(x) for x in per_layer(kv, a + "attention.sliding_window_pattern", self.L)]
        self.window = kv[a + "attention.sliding_window"]
        self.hd_full = kv[a + "attention.key_length"]
        self.hd_swa = kv.get(a + "attention.key_length_swa", self.hd_full)
        self.rot_full = kv.get(a + "rope.dimension_count", self.hd_full)
        self.rot_swa = kv.get(a + "rope.dimension_count_swa", self.rot_full)
        self.base = kv.get(a + "rope.freq_base", 10000.0)
        self.base_swa = kv.get(a + "rope.freq_base_swa", 10000.0)
        self.kv_heads = per_layer(kv, a + "attention.head_count_kv", self.L, self.H)
        shared = kv.get(a + "attention.shared_kv_layers", 0)
        self.first_shared = self.L - shared
        self.P = kv[a + "embedding_length_per_layer_input"]
        self.cap = kv.get(a + "final_logit_softcapping", 0.0 if "softcap_default_ignored" in MISTAKE else 30.0)
        self.freqs = self.t.get("rope_freqs.weight")
        self.reset()

    def reset(self):
        self.pos = 0
        self.cache = [([], []) for _ in range(self.L)]

    def source(self, i):
        if i < self.first_shared or "kv_sharing_ignored" in MISTAKE:
            return i
        return self.first_shared - (2 if self.local[i] else 1)

    def attention(self, i, h):
        t, p = self.t, "blk.%d." % i
        local = self.local[i]
        hd, n_rot = (self.hd_swa, self.rot_swa) if local else (self.hd_full, self.rot_full)
        base = self.base_swa if local else self.base
        factors = None
        if (not local and "rope_freqs_ignored" not in MISTAKE) or (local and "rope_freqs_on_local" in MISTAKE):
            factors = self.freqs
        q = rms_norm((t[p + "attn_q.weight"] @ h).reshape(self.H, hd), t[p + "attn_q_norm.weight"], self.eps)
        q = rope_neox(q, self.pos, n_rot, base, factors)
        src = self.source(i)
        if src == i:
            kvh = self.kv_heads[i]
            kraw = (t[p + "attn_k.weight"] @ h).reshape(kvh, hd)
            k = rope_neox(rms_norm(kraw, t[p + "attn_k_norm.weight"], self.eps), self.pos, n_rot, base, factors)
            if p + "attn_v.weight" in t:
                vraw = (t[p + "attn_v.weight"] @ h).reshape(kvh, hd)
            else:
                vraw = k if "k_as_v_normed" in MISTAKE else kraw
            v = vraw if "v_norm_skipped" in MISTAKE or vraw is k else rms_norm(vraw, None, self.eps)
            self.cache[i][0].append(k)
            self.cache[i][1].append(v)
        keys, values = np.array(self.cache[src][0]), np.array(self.cache[src][1])  # (positions, kvh, hd)
        first = max(0, self.pos - self.window + 1) if local else 0
        keys, values = keys[first:], values[first:]
        group = self.H // keys.shape[1]
        scale = 1.0 / math.sqrt(hd) if "scale_inv_sqrt_d" in MISTAKE else 1.0
        out = np.zeros((self.H, hd))
        for head in range(self.H):
            s = keys[:, head // group, :] @ q[head] * scale
            w = np.exp(s - s.max())
            out[head] = (w / w.sum()) @ values[:, head // group, :]
        return t[p + "attn_output.weight"] @ out.ravel()

    def step(self, token):
        t = self.t
        x = t["token_embd.weight"][token] * math.sqrt(self.E)
        inputs = None
        if self.P and "per_layer_input_skipped" not in MISTAKE:
            proj = t["per_layer_model_proj.weight"] @ x / math.sqrt(self.E)
            proj = rms_norm(proj.reshape(self.L, self.P), t["per_layer_proj_norm.weight"], self.eps)
            rows = t["per_layer_token_embd.weight"][token].reshape(self.L, self.P) * math.sqrt(self.P)
            inputs = (proj + rows) / math.sqrt(2.0)
        for i in range(self.L):
            p = "blk.%d." % i
            a = self.attention(i, rms_norm(x, t[p + "attn_norm.weight"], self.eps))
            x = x + rms_norm(a, t[p + "post_attention_norm.weight"], self.eps)
            f = rms_norm(x, t[p + "ffn_norm.weight"], self.eps)
            f = t[p + "ffn_down.weight"] @ (gelu(t[p + "ffn_gate.weight"] @ f, self.exact_gelu) * (t[p + "ffn_up.weight"] @ f))
            x = x + rms_norm(f, t[p + "post_ffw_norm.weight"], self.eps)
            if inputs is not None:
                e = gelu(t[p + "inp_gate.weight"] @ x, self.exact_gelu) * inputs[i]
                x = x + rms_norm(t[p + "proj.weight"] @ e, t[p + "post_norm.weight"], self.eps)
            if p + "layer_output_scale.weight" in t and "layer_output_scale_skipped" not in MISTAKE:
                x = x * t[p + "layer_output_scale.weight"][0]
        self.pos += 1
        h = rms_norm(x, t["output_norm.weight"], self.eps)
        logits = t.get("output.weight", t["token_embd.weight"]) @ h
        if self.cap:
            logits = self.cap * np.tanh(logits / self.cap)
        return logits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--mistake", choices=sorted(MISTAKES), action="append", default=[])
    ap.add_argument("--exact-gelu", action="store_true")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--part", choices=("twin", "unscaled"), default=None,
                    help="compare with the oracle's twin / unscaled run (MODEL is that file)")
    args = ap.parse_args()
    MISTAKE.update(args.mistake)
    with open(args.oracle) as f:
        ref = json.load(f)
    prompt = ref["prompt_ids"]
    if args.part:
        ref = ref[args.part]
    m = Gemma4(args.model, args.exact_gelu)
    for tok in prompt[:-1]:
        m.step(tok)
    p = probs(m.step(prompt[-1]))
    first = max(abs(p[e["id"]] - e["p"]) for e in ref["top_k"])
    steps = []
    for s in range(1, min(args.steps, len(ref["greedy_ids"]))):
        q = probs(m.step(ref["greedy_ids"][s - 1]))
        steps.append(max(abs(q[e["id"]] - e["p"]) for e in ref["greedy_steps"][s]["top5"]))
    print("%s: prompt max|dp| %.2e, steps max|dp| %.2e, top1 %d (llama.cpp %d)" % (
        os.path.basename(args.model), first, max(steps) if steps else 0.0, int(np.argmax(p)), ref["top_k"][0]["id"]))


if __name__ == "__main__":
    main()
