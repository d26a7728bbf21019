#!/usr/bin/python3
"""Float64 NumPy forward pass of the hybrid recurrent GGUF models (lfm2, qwen35, qwen35moe, granitehybrid),
written from llama.cpp's graphs, to check that tools/gguf/make_synthetic_model.py writes what
llama.cpp reads (and as the reading guide to the math of those graphs).

    hybrid_reference.py MODEL.gguf --oracle ORACLE.nlc.json   # compare with llama.cpp's outputs
    hybrid_reference.py MODEL.gguf --ids "1 403 407 261 378" [--n 8]  # top 5 and greedy ids

With --oracle the prompt is the oracle's prompt_ids and the decode steps are fed the oracle's
greedy ids (teacher forcing), so every step's distribution is compared even after a near-tie;
it prints max |p_ours - p_llama.cpp| over the oracle's top 20 after the prompt and over the top 5
of every greedy step. Tokens are processed one at a time in the recurrent form (llama.cpp's CPU
backend runs the same recurrences token by token inside its fused ggml_gated_delta_net and
ggml_ssm_scan ops, so a prompt gives the same math whether it comes in one batch or in pieces).

Conventions (numpy shapes are ggml's dims reversed: a weight of ggml dims [n_in, n_out] is a
numpy (n_out, n_in) matrix W and the layer computes W @ x; rows of a fused projection are
outputs):
  rms_norm(x, w) = x / sqrt(mean(x^2) + eps) * w over the last axis (eps = the file's
      <arch>.attention.layer_norm_rms_epsilon everywhere, also inside the recurrent blocks);
  l2_norm(x) = x / max(sqrt(sum(x^2)), eps) (ggml_l2_norm: eps clamps the norm, it is not added);
  softplus(x) = log(1 + exp(x)), x itself when x > 20 (ggml);  silu(x) = x * sigmoid(x);
  SwiGLU FFN: W_down @ (silu(W_gate @ h) * (W_up @ h)) in every layer of lfm2, qwen35, granitehybrid;
  qwen35moe's FFN (llama.cpp's build_moe_ffn + qwen35moe.cpp build_layer_ffn): see moe_ffn;
  attention: softmax(q . k * scale) over positions 0..t (causal), query head h reads KV head
      h // (n_head / n_head_kv) (ggml broadcasts the KV heads in blocks).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_math import load, probs, rms_norm, rope_neox  # noqa: E402

# --mistake: deliberate errors, to measure how far each piece of the math moves the outputs
MISTAKES = {
    "conv_state_dropped": "every causal conv starts from zeros at each token (no conv state)",
    "conv_taps_reversed": "conv tap j multiplies the input d_conv-1-j tokens back instead of j - (d_conv-1)",
    "recurrent_state_dropped": "the delta-net / Mamba-2 state is zero at each token",
    "lfm2_qk_norm_skipped": "lfm2: no per-head RMSNorm of q and k",
    "gdn_heads_interleaved": "qwen35: value head j reads key head j // (H_v/H_k) instead of j % H_k",
    "gdn_decay_after_update": "qwen35: S = exp(g) (S + d k^T) with d from the undecayed S",
    "gdn_q_unscaled": "qwen35: q not multiplied by 1/sqrt(d_k)",
    "gdn_gate_norm_skipped": "qwen35: no RMSNorm (ssm_norm) before the silu(z) gate",
    "qwen35_attn_gate_skipped": "qwen35: full attention without the sigmoid(gate)",
    "qwen35_rope_whole_head": "qwen35: rotary over the whole head instead of rope.dimension_count dims",
    "moe_weights_unnormalized": "qwen35moe: the top-k softmax weights not divided by their sum",
    "moe_shexp_ungated": "qwen35moe: the shared expert added without its sigmoid gate",
    "mamba_groups_tiled": "granitehybrid: head j reads group j % G instead of j // (H/G)",
    "mamba_d_skipped": "granitehybrid: no D skip term",
    "mamba_norm_ungrouped": "granitehybrid: one RMSNorm over all of d_inner instead of per group",
    "mamba_conv_bias_skipped": "granitehybrid: no ssm_conv1d.bias",
}
MISTAKE = set()


def l2_norm(x, eps):
    return x / np.maximum(np.sqrt(np.sum(x * x, axis=-1, keepdims=True)), eps)


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def causal_conv_step(state, x_t, w, bias=None):
    """One token of llama.cpp's ggml_ssm_conv with its state (short conv, delta-net conv, Mamba-2).
    state: (d_conv - 1, channels), the previous inputs oldest first (zeros at the start; llama.cpp
    keeps it as the conv_state ggml dims [d_conv - 1, channels]: per channel, its last d_conv - 1
    inputs oldest first); w: numpy (channels, d_conv) = ggml dims [d_conv, channels], tap d_conv - 1
    multiplying the current input: out[c] = sum_j window[j, c] * w[c, j] with window = state then x_t.
    Returns (out, new state = the window's last d_conv - 1 rows)."""
    if "conv_state_dropped" in MISTAKE:
        state = np.zeros_like(state)
    window = np.vstack([state, x_t[None, :]])
    out = np.einsum("jc,cj->c", window, w[:, ::-1] if "conv_taps_reversed" in MISTAKE else w)
    if bias is not None:
        out = out + bias
    return out, window[1:]


class Attention:
    """Causal GQA over a growing cache (one layer)."""

    def __init__(self):
        self.k, self.v = [], []

    def step(self, q, k, v, scale):
        self.k.append(k)
        self.v.append(v)
        K, V = np.stack(self.k), np.stack(self.v)  # (T, n_head_kv, hd)
        n_head, n_kv = q.shape[0], K.shape[1]
        out = np.empty((n_head, V.shape[2]))
        for h in range(n_head):
            kh = h // (n_head // n_kv)
            s = K[:, kh, :] @ q[h] * scale
            p = np.exp(s - s.max())
            out[h] = (p / p.sum()) @ V[:, kh, :]
        return out


def ffn(t, p, h):
    return t[p + "ffn_down.weight"] @ (silu(t[p + "ffn_gate.weight"] @ h) * (t[p + "ffn_up.weight"] @ h))


def moe_ffn(t, p, h, n_used, stats=None):
    """qwen35moe: probs = softmax(W_gate_inp @ h) over all experts; the n_used largest (ggml_argsort_top_k);
    weights = those probs / max(their sum, 6.103515625e-5) (norm_w is fixed true, no scale);
    routed = sum_e weight_e * SwiGLU_e(h); shared = SwiGLU_shexp(h) * sigmoid(ffn_gate_inp_shexp . h);
    out = routed + shared. stats (a list) gets the gap p_k - p_(k+1) between the last chosen and the
    first unchosen expert: a small one can flip the choice between llama.cpp's runs."""
    pr = probs(t[p + "ffn_gate_inp.weight"] @ h)
    order = np.argsort(-pr, kind="stable")
    sel = order[:n_used]
    if stats is not None:
        stats.append(pr[order[n_used - 1]] - pr[order[n_used]])
    wts = pr[sel]
    if "moe_weights_unnormalized" not in MISTAKE:
        wts = wts / max(wts.sum(), 6.103515625e-5)
    out = np.zeros_like(h)
    for e, wt in zip(sel, wts):
        out += wt * (t[p + "ffn_down_exps.weight"][e] @
                     (silu(t[p + "ffn_gate_exps.weight"][e] @ h) * (t[p + "ffn_up_exps.weight"][e] @ h)))
    shared = t[p + "ffn_down_shexp.weight"] @ (silu(t[p + "ffn_gate_shexp.weight"] @ h) *
                                              (t[p + "ffn_up_shexp.weight"] @ h))
    if "moe_shexp_ungated" not in MISTAKE:
        shared = shared * sigmoid(t[p + "ffn_gate_inp_shexp.weight"] @ h)
    return out + shared


class Model:
    def __init__(self, path):
        self.kv, self.t = load(path)
        self.arch = self.kv["general.architecture"]
        a = self.arch
        self.n_layer = self.kv[a + ".block_count"]
        self.n_embd = self.kv[a + ".embedding_length"]
        self.n_head = self.kv[a + ".attention.head_count"]
        hkv = self.kv[a + ".attention.head_count_kv"]
        self.n_head_kv = [int(x) for x in hkv] if hasattr(hkv, "__len__") else [int(hkv)] * self.n_layer
        self.head_dim = self.kv.get(a + ".attention.key_length", self.n_embd // self.n_head)
        self.eps = self.kv[a + ".attention.layer_norm_rms_epsilon"]
        self.rope_base = self.kv.get(a + ".rope.freq_base", 10000.0)
        self.n_expert_used = self.kv.get(a + ".expert_used_count", 0)
        self.router_gaps = []  # qwen35moe: see moe_ffn
        if a in ("qwen35", "qwen35moe"):
            interval = self.kv.get(a + ".full_attention_interval", 4)
            self.recurrent = [(i + 1) % interval != 0 for i in range(self.n_layer)]
            self.n_rot = self.kv[a + ".rope.dimension_count"]
            sections = list(self.kv[a + ".rope.dimension_sections"])
            assert self.text_rope_is_neox(sections, self.n_rot), "sections leave pairs unrotated: not written here"
        else:  # lfm2, granitehybrid: a layer without KV heads is recurrent
            self.recurrent = [n == 0 for n in self.n_head_kv]
            self.n_rot = self.kv.get(a + ".rope.dimension_count", self.head_dim)
        self.reset()

    @staticmethod
    def text_rope_is_neox(sections, n_rot):
        """IMROPE (ggml_mrope_cache_init, is_imrope): pair i of the rotated dims takes sector
        i % sum(sections); sector % 3 == 1 and < 3 s1 -> the 'h' position, % 3 == 2 and < 3 s2 -> 'w',
        % 3 == 0 and < 3 s0 -> 't', else 'e'. For text llama.cpp sets t = h = w = pos and e = 0, so
        a pair that falls to 'e' is not rotated at all. True when no pair does."""
        total = sum(sections)
        for i in range(n_rot // 2):
            s = i % total
            if not ((s % 3 == 1 and s < 3 * sections[1]) or (s % 3 == 2 and s < 3 * sections[2]) or
                    (s % 3 == 0 and s < 3 * sections[0])):
                return False
        return True

    def reset(self):
        self.pos = 0
        self.state = [None] * self.n_layer
        self.trace = []  # per token: the residual stream after each layer (see --dump)
        self.logits_trace = []

    # ---- lfm2 ---------------------------------------------------------------------------------
    def lfm2_shortconv(self, i, h):
        """LFM2 short convolution (lfm2.cpp build_shortconv_block):
        bcx = in_proj @ h, rows split in thirds B | C | x (in that order); bx = B * x;
        conv = causal depthwise conv of bx over l_cache taps (state: the previous l_cache - 1 bx
        rows); y = C * conv; out = out_proj @ y. No bias, no activation, no norm."""
        t, p, E = self.t, "blk.%d." % i, self.n_embd
        bcx = t[p + "shortconv.in_proj.weight"] @ h
        b, c, x = bcx[:E], bcx[E:2 * E], bcx[2 * E:]
        w = t[p + "shortconv.conv.weight"]  # numpy (n_embd, l_cache)
        st = self.state[i] if self.state[i] is not None else np.zeros((w.shape[1] - 1, E))
        conv, self.state[i] = causal_conv_step(st, b * x, w)
        return t[p + "shortconv.out_proj.weight"] @ (c * conv)

    def lfm2_attention(self, i, h):
        """LFM2 attention (lfm2.cpp build_attn_block): q, k, v projections; per-head RMSNorm of q
        and k (attn_q_norm / attn_k_norm, head_dim weights); NEOX rotary over the whole head
        (rope.dimension_count defaults to head_dim), base rope.freq_base; scale 1/sqrt(head_dim)."""
        t, p, hd = self.t, "blk.%d." % i, self.head_dim
        q = (t[p + "attn_q.weight"] @ h).reshape(self.n_head, hd)
        k = (t[p + "attn_k.weight"] @ h).reshape(self.n_head_kv[i], hd)
        v = (t[p + "attn_v.weight"] @ h).reshape(self.n_head_kv[i], hd)
        if "lfm2_qk_norm_skipped" not in MISTAKE:
            q, k = rms_norm(q, t[p + "attn_q_norm.weight"], self.eps), rms_norm(k, t[p + "attn_k_norm.weight"], self.eps)
        q = rope_neox(q, self.pos, self.n_rot, self.rope_base)
        k = rope_neox(k, self.pos, self.n_rot, self.rope_base)
        if self.state[i] is None:
            self.state[i] = Attention()
        o = self.state[i].step(q, k, v, 1.0 / math.sqrt(hd))
        return t[p + "attn_output.weight"] @ o.reshape(-1)

    # ---- qwen35 -------------------------------------------------------------------------------
    def qwen35_linear(self, i, h):
        """Qwen3.5 gated delta net (qwen35.cpp build_layer_attn_linear + delta-net-base.cpp, and the
        CPU op ggml_compute_forward_gated_delta_net that llama.cpp runs for it).
        Sizes: dk = dv = ssm.state_size (llama.cpp requires the key and value head sizes equal),
        H_k = ssm.group_count key heads, H_v = ssm.time_step_rank value heads, value width
        ssm.inner_size = H_v * dv.
          qkv = attn_qkv @ h: rows q (H_k*dk) | k (H_k*dk) | v (H_v*dv), head-major inside each;
          z = attn_gate @ h (H_v*dv);  beta = sigmoid(ssm_beta @ h) (H_v);
          g = softplus(ssm_alpha @ h + ssm_dt.bias) * ssm_a (H_v; ssm_a holds -exp(A_log) < 0);
          qkv -> causal conv over ssm.conv_kernel taps (ssm_conv1d, no bias; state: the previous
          kernel - 1 qkv rows, all 2*H_k*dk + H_v*dv channels) -> silu;
          q, k = l2_norm per head (eps = rms eps), then q *= 1/sqrt(dk);
          value head j uses key head j % H_k (ggml_repeat tiles the key heads; the converter
          reorders the checkpoint's value heads so this tiling is right: NOT j // (H_v/H_k));
          per value head, state S (dv x dk, zero at the start), in this order:
            S = exp(g) * S;  d = beta * (v - S k);  S = S + d k^T;  o = S q
          (llama.cpp stores S transposed: its ggml dims [dv, dv, H_v] have k's index fastest);
          o = rms_norm(o, ssm_norm) per head (dv weights) * silu(z) per head; out = ssm_out @ o."""
        t, p = self.t, "blk.%d." % i
        a = self.arch
        dk = self.kv[a + ".ssm.state_size"]
        hk = self.kv[a + ".ssm.group_count"]
        hv = self.kv[a + ".ssm.time_step_rank"]
        dv = self.kv[a + ".ssm.inner_size"] // hv
        assert dv == dk
        qkv = t[p + "attn_qkv.weight"] @ h
        z = (t[p + "attn_gate.weight"] @ h).reshape(hv, dv)
        beta = sigmoid(t[p + "ssm_beta.weight"] @ h)
        g = softplus(t[p + "ssm_alpha.weight"] @ h + t[p + "ssm_dt.bias"]) * t[p + "ssm_a"]
        w = t[p + "ssm_conv1d.weight"]  # numpy (channels, kernel)
        if self.state[i] is None:
            self.state[i] = [np.zeros((w.shape[1] - 1, w.shape[0])), np.zeros((hv, dv, dk))]
        conv, self.state[i][0] = causal_conv_step(self.state[i][0], qkv, w)
        conv = silu(conv)
        q = l2_norm(conv[:hk * dk].reshape(hk, dk), self.eps) / (1.0 if "gdn_q_unscaled" in MISTAKE else math.sqrt(dk))
        k = l2_norm(conv[hk * dk:2 * hk * dk].reshape(hk, dk), self.eps)
        v = conv[2 * hk * dk:].reshape(hv, dv)
        if "recurrent_state_dropped" in MISTAKE:
            self.state[i][1][:] = 0
        S = self.state[i][1]
        o = np.empty((hv, dv))
        for j in range(hv):
            kh = j // (hv // hk) if "gdn_heads_interleaved" in MISTAKE else j % hk
            if "gdn_decay_after_update" in MISTAKE:
                d = beta[j] * (v[j] - S[j] @ k[kh])
                S[j] = math.exp(g[j]) * (S[j] + np.outer(d, k[kh]))
            else:
                S[j] *= math.exp(g[j])
                d = beta[j] * (v[j] - S[j] @ k[kh])
                S[j] += np.outer(d, k[kh])
            o[j] = S[j] @ q[kh]
        if "gdn_gate_norm_skipped" not in MISTAKE:
            o = rms_norm(o, t[p + "ssm_norm.weight"], self.eps)
        o = o * silu(z)
        return t[p + "ssm_out.weight"] @ o.reshape(-1)

    def qwen35_attention(self, i, h):
        """Qwen3.5 gated full attention (qwen35.cpp build_layer_attn):
        attn_q @ h gives per head hd query values then hd gate values (rows [q_0 g_0 q_1 g_1 ...]);
        q = rms_norm per head (attn_q_norm); k = rms_norm per head (attn_k_norm); v plain;
        rotary (IMROPE, text) = NEOX over the first rope.dimension_count dims, base rope.freq_base;
        o = attention(q, k, v) with scale 1/sqrt(hd) (attention.scale when the file has it);
        o = o * sigmoid(gate) (per element, flattened heads); out = attn_output @ o."""
        t, p, hd = self.t, "blk.%d." % i, self.head_dim
        qg = (t[p + "attn_q.weight"] @ h).reshape(self.n_head, 2, hd)
        q, gate = qg[:, 0], qg[:, 1]
        k = (t[p + "attn_k.weight"] @ h).reshape(self.n_head_kv[i], hd)
        v = (t[p + "attn_v.weight"] @ h).reshape(self.n_head_kv[i], hd)
        n_rot = hd if "qwen35_rope_whole_head" in MISTAKE else self.n_rot
        q = rope_neox(rms_norm(q, t[p + "attn_q_norm.weight"], self.eps), self.pos, n_rot, self.rope_base)
        k = rope_neox(rms_norm(k, t[p + "attn_k_norm.weight"], self.eps), self.pos, n_rot, self.rope_base)
        if self.state[i] is None:
            self.state[i] = Attention()
        scale = self.kv.get(self.arch + ".attention.scale", 1.0 / math.sqrt(hd))
        o = self.state[i].step(q, k, v, scale)
        if "qwen35_attn_gate_skipped" not in MISTAKE:
            o = o * sigmoid(gate)
        return t[p + "attn_output.weight"] @ o.reshape(-1)

    # ---- granitehybrid ------------------------------------------------------------------------
    def mamba2(self, i, h):
        """Mamba-2 (mamba-base.cpp build_mamba2_layer + ggml_compute_forward_ssm_scan_f32).
        Sizes: d_inner = ssm.inner_size, N = ssm.state_size, G = ssm.group_count,
        H = ssm.time_step_rank heads of P = d_inner / H.
          zxbcdt = ssm_in @ h: rows z (d_inner) | xBC (d_inner + 2*G*N) | dt (H);
          xBC -> causal conv over ssm.conv_kernel taps (ssm_conv1d weight, + ssm_conv1d.bias; state:
          the previous kernel - 1 xBC rows) -> silu;  then xBC rows x (H*P) | B (G*N) | C (G*N);
          dt = softplus(dt + ssm_dt.bias) (H);  A = ssm_a (H; holds -exp(A_log));
          head j uses group j // (H / G) (repeat_interleave, unlike qwen35's key heads);
          per head, state s (P x N, zero at the start):
            s = exp(dt_j * A_j) * s + (dt_j * x_j) B_g^T;  y_j = s C_g  (P)
          y = y + ssm_d[j] * x_j;  y = y * silu(z);
          grouped RMSNorm: y as G groups of d_inner / G, each rms-normalised, times ssm_norm
          (numpy (G, d_inner/G)); out = ssm_out @ y."""
        t, p = self.t, "blk.%d." % i
        a = self.arch
        d_inner = self.kv[a + ".ssm.inner_size"]
        N = self.kv[a + ".ssm.state_size"]
        G = self.kv[a + ".ssm.group_count"]
        H = self.kv[a + ".ssm.time_step_rank"]
        P = d_inner // H
        zxbcdt = t[p + "ssm_in.weight"] @ h
        z = zxbcdt[:d_inner]
        xbc = zxbcdt[d_inner:2 * d_inner + 2 * G * N]
        dt = zxbcdt[2 * d_inner + 2 * G * N:]
        w = t[p + "ssm_conv1d.weight"]
        if self.state[i] is None:
            self.state[i] = [np.zeros((w.shape[1] - 1, w.shape[0])), np.zeros((H, P, N))]
        bias = None if "mamba_conv_bias_skipped" in MISTAKE else t[p + "ssm_conv1d.bias"]
        xbc, self.state[i][0] = causal_conv_step(self.state[i][0], xbc, w, bias)
        xbc = silu(xbc)
        x = xbc[:d_inner].reshape(H, P)
        B = xbc[d_inner:d_inner + G * N].reshape(G, N)
        C = xbc[d_inner + G * N:].reshape(G, N)
        dt = softplus(dt + t[p + "ssm_dt.bias"])
        A = t[p + "ssm_a"].reshape(-1)
        D = t[p + "ssm_d"].reshape(-1)
        if "recurrent_state_dropped" in MISTAKE:
            self.state[i][1][:] = 0
        if "mamba_d_skipped" in MISTAKE:
            D = 0 * D
        s = self.state[i][1]
        y = np.empty((H, P))
        for j in range(H):
            g = j % G if "mamba_groups_tiled" in MISTAKE else j // (H // G)
            s[j] = s[j] * math.exp(dt[j] * A[j]) + np.outer(x[j] * dt[j], B[g])
            y[j] = s[j] @ C[g] + D[j] * x[j]
        y = y.reshape(-1) * silu(z)
        if "mamba_norm_ungrouped" in MISTAKE:
            y = rms_norm(y, t[p + "ssm_norm.weight"].reshape(-1), self.eps)
        else:
            y = rms_norm(y.reshape(G, -1), t[p + "ssm_norm.weight"], self.eps).reshape(-1)
        return t[p + "ssm_out.weight"] @ y

    def granite_attention(self, i, h):
        """Granite attention (granite-hybrid.cpp build_attention_layer): q, k, v, no norms; rotary
        only when rope.scaling.finetuned is true (default true; the hybrid checkpoints write false:
        no positional encoding at all); scale attention.scale (1/sqrt(hd) when absent)."""
        t, p, hd = self.t, "blk.%d." % i, self.head_dim
        q = (t[p + "attn_q.weight"] @ h).reshape(self.n_head, hd)
        k = (t[p + "attn_k.weight"] @ h).reshape(self.n_head_kv[i], hd)
        v = (t[p + "attn_v.weight"] @ h).reshape(self.n_head_kv[i], hd)
        if self.kv.get(self.arch + ".rope.scaling.finetuned", True):
            raise NotImplementedError("granitehybrid with rotary (NORM pairs) is not written here")
        if self.state[i] is None:
            self.state[i] = Attention()
        o = self.state[i].step(q, k, v, self.kv.get(self.arch + ".attention.scale", 1.0 / math.sqrt(hd)))
        return t[p + "attn_output.weight"] @ o.reshape(-1)

    # ---- the whole model ----------------------------------------------------------------------
    def step(self, token):
        """Logits after one more token."""
        t, a, eps = self.t, self.arch, self.eps
        x = t["token_embd.weight"][token].copy()
        if a == "granitehybrid":
            x *= self.kv.get(a + ".embedding_scale", 1.0)
        res_scale = self.kv.get(a + ".residual_scale", 1.0) if a == "granitehybrid" else 1.0
        layers_out = [x]
        for i in range(self.n_layer):
            p = "blk.%d." % i
            h = rms_norm(x, t[p + "attn_norm.weight"], eps)
            if a == "lfm2":
                out = self.lfm2_shortconv(i, h) if self.recurrent[i] else self.lfm2_attention(i, h)
            elif a in ("qwen35", "qwen35moe"):
                out = self.qwen35_linear(i, h) if self.recurrent[i] else self.qwen35_attention(i, h)
            else:
                out = self.mamba2(i, h) if self.recurrent[i] else self.granite_attention(i, h)
            x = x + res_scale * out
            # the FFN's input norm: ffn_norm, qwen35's post_attention_norm
            norm = t[p + ("post_attention_norm.weight" if a in ("qwen35", "qwen35moe") else "ffn_norm.weight")]
            h = rms_norm(x, norm, eps)
            x = x + res_scale * (moe_ffn(t, p, h, self.n_expert_used, self.router_gaps) if a == "qwen35moe"
                                 else ffn(t, p, h))
            layers_out.append(x)
        # lfm2's final norm is stored as token_embd_norm.weight
        x = rms_norm(x, t["token_embd_norm.weight" if a == "lfm2" else "output_norm.weight"], eps)
        logits = t.get("output.weight", t["token_embd.weight"]) @ x
        if a == "granitehybrid":
            logits = logits / self.kv.get(a + ".logit_scale", 1.0)
        self.trace.append(np.stack(layers_out))
        self.logits_trace.append(logits)
        self.pos += 1
        return logits


def run(model, prompt, forced=None, n=8):
    """Distributions after the prompt and after each next token (forced ids, else greedy)."""
    model.reset()
    for tok in prompt:
        logits = model.step(tok)
    out = [logits]
    ids = []
    for s in range(n - 1):
        nxt = forced[s] if forced is not None else int(np.argmax(logits))
        ids.append(nxt)
        logits = model.step(nxt)
        out.append(logits)
    return out, ids


def compare(model, oracle):
    """max |dp| over the oracle's top 20 after the prompt, and per greedy step over its top 5."""
    greedy = oracle["greedy_ids"]
    dists, _ = run(model, oracle["prompt_ids"], forced=greedy, n=len(greedy))
    p0 = probs(dists[0])
    d_top = max(abs(p0[e["id"]] - e["p"]) for e in oracle["top_k"])
    d_steps = []
    for s, st in enumerate(oracle["greedy_steps"]):
        ps = probs(dists[s])
        d_steps.append(max(abs(ps[e["id"]] - e["p"]) for e in st["top5"]))
    return d_top, d_steps, p0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--oracle", help="nlc_logits.mjs JSON of this model (or of the model whose twin this is: "
                                     "--twin compares with its 'twin' entry)")
    ap.add_argument("--twin", action="store_true")
    ap.add_argument("--ids", default="1 403 407 261 378")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--dump", metavar="FILE.npz",
                    help="with --ids: save, for every token fed (the prompt, then the greedy ids but the last), "
                         "'ids', 'hidden' (tokens, n_layer + 1, n_embd: the scaled embedding, then the residual "
                         "stream after each layer) and 'logits' (tokens, n_vocab), float64")
    ap.add_argument("--mistake", action="append", default=[], choices=sorted(MISTAKES),
                    help="a deliberate error (repeatable): " + "; ".join("%s: %s" % kv for kv in MISTAKES.items()))
    args = ap.parse_args()
    MISTAKE.update(args.mistake)
    model = Model(args.model)
    if args.oracle:
        with open(args.oracle) as f:
            o = json.load(f)
        ref = dict(o["twin"], prompt_ids=o["prompt_ids"]) if args.twin else o
        d_top, d_steps, p0 = compare(model, ref)
        print("%s%s: prompt %d ids; max |dp| top20 %.2e; greedy steps top5 max |dp| %s (max %.2e)"
              % (os.path.basename(args.model), "".join(" [%s]" % m for m in args.mistake), len(ref["prompt_ids"]), d_top,
                 " ".join("%.1e" % d for d in d_steps), max(d_steps)))
        return
    prompt = [int(s) for s in args.ids.replace(",", " ").split()]
    dists, ids = run(model, prompt, n=args.n)
    if args.dump:
        np.savez(args.dump, hidden=np.stack(model.trace), logits=np.stack(model.logits_trace),
                 ids=np.asarray(prompt + ids))
    ids.append(int(np.argmax(dists[-1])))
    lg = dists[0]
    order = np.argsort(-lg)
    print("top5 after the prompt:", " ".join("%d:%.4f" % (j, probs(lg)[j]) for j in order[:5]))
    print("first-step top1-top2 logit gap %.3f; greedy ids %s; min gap over steps %.3f"
          % (lg[order[0]] - lg[order[1]], " ".join(map(str, ids)),
             min(np.sort(d)[-1] - np.sort(d)[-2] for d in dists)))
    if model.router_gaps:
        print("smallest router gap p_k - p_(k+1) over all layers and tokens %.2e" % min(model.router_gaps))


if __name__ == "__main__":
    main()
