#!/usr/bin/env python3
"""Write a random-weight Llama-family GGUF model that llama.cpp loads.

    make_synthetic_model.py --arch llama|qwen2|qwen3|qwen3moe|gpt2|gptneox|phi2|stablelm|phi3|granite|smollm3|mistral3
                            --type Q4_K_M
                            --shape tiny --seed 1 --out m.gguf
                            [--tied] [--dequant-f32] [--version 3] [--context-length N] [--head-dim N]
                            [--layers N] [--rope-scaling linear|llama3|yarn --rope-factor F ...]

--type  F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K: "pure" files, every 2-D weight
        (token_embd and output included) in that type, like `llama-quantize --pure`.
        Q2_K Q3_K_M: llama.cpp's mixes of those names (llama_tensor_get_type, dense models):
        output Q6_K; Q2_K: attn_v Q3_K (Q4_K when n_head / n_head_kv >= 4), ffn_down and
        attn_output Q3_K, the rest Q2_K; Q3_K_M: attn_v Q5_K in layers 0-1 then Q4_K, ffn_down
        Q5_K in the first n/16 layers then Q4_K, attn_output Q4_K, the rest Q3_K.
        MXFP4_MOE: llama.cpp's mix for mixture-of-experts models (see gpt-oss).
        Q4_K_M Q5_K_M: llama.cpp's mixes (llama_tensor_get_type): output.weight (or token_embd
        when tied) Q6_K; attn_v (and a fused attn_qkv) and ffn_down Q6_K in the layers where use_more_bits(i, n) holds
        (i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2); everything else Q4_K / Q5_K.
        In every mode norms and biases stay F32, and a tensor whose ne[0] is not a multiple of
        the block size falls back like llama.cpp (Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, and
        output/tied token_embd -> Q8_0).
--dequant-f32  write the same model with every tensor stored as F32 holding the values the
        quantized file decodes to (per quants.py): an "F32 twin" for checking a quantized
        file's decoding against an implementation that is known to be right for F32.
--tied  no output.weight: the output projection shares token_embd.
--context-length N  <arch>.context_length (default: the shape's n_ctx).
--head-dim N  size of an attention head (default: the shape's, else n_embd / n_head); written as
        <arch>.attention.key_length and value_length when it is not n_embd / n_head, and always
        for qwen3 (as llama.cpp's converter does); q/k/v/o widths follow it.
--rope-scaling  linear: <arch>.rope.scaling.type = "linear" and <arch>.rope.scaling.factor =
        --rope-factor (llama.cpp then turns pair i by pos / factor * base^(-2i/n_rot)).
        llama3: no scaling keys, but a rope_freqs.weight tensor (F32, n_rot/2, first in the file)
        of per-pair frequency factors computed as llama.cpp's convert_hf_to_gguf.py does for a
        Llama 3.1 checkpoint's rope_scaling {rope_type llama3, factor, low_freq_factor,
        high_freq_factor, original_max_position_embeddings} (--rope-factor, --rope-low-freq-factor,
        --rope-high-freq-factor, --rope-original-context): pair i turns by
        pos * base^(-2i/n_rot) / rope_freqs[i]. llama only (llama.cpp's qwen2 graph has no
        rope_freqs tensor).
        yarn: <arch>.rope.scaling.type = "yarn", .factor = --rope-factor,
        .original_context_length = --rope-original-context (as the converter writes a rope_scaling
        {rope_type yarn, ...}); mistral3 also takes --yarn-beta-fast / --yarn-beta-slow
        (rope.scaling.yarn_beta_fast / _slow) and --yarn-log-mul (rope.scaling.yarn_log_multiplier),
        the keys llama.cpp reads for mistral3 only.
        The weights do not depend on these options: a model made without them is the same model
        with scaling ignored.
--layers N  block_count (default: the shape's).

Shapes: tiny (n_embd 256, 2 layers, 4/2 heads of 64, FFN 512, vocab 512, ctx 256),
        tinyllama (2048, 22 layers, 32/4 heads, FFN 5632, vocab 32000, ctx 2048),
        qwen2.5-0.5b (896, 24 layers, 14/2 heads, FFN 4864, vocab 151936, ctx 32768, rope 1e6),
        qwen3-0.6b (1024, 28 layers, 16/8 heads of 128, FFN 3072, vocab 151936, ctx 40960, rope 1e6),
        gemma3-1b (1152, 26 layers, 4/1 heads of 256, FFN 6912, vocab 262144, ctx 32768),
        qwen3-30b-a3b (2048, 48 layers, 32/4 heads of 128, FFN 6144, vocab 151936, ctx 40960, with
        --arch qwen3moe 128 experts, 8 used, 768 wide unless --experts / --experts-used / --expert-ff).
phi3 (llama.cpp's phi3 graph): one fused blk.N.attn_qkv.weight (rows q, k, v), ffn_up.weight of
2*n_ff rows holding gate then up (no ffn_gate), NEOX RoPE base 1e4, eps 1e-5, over --rope-dim
dimensions (default 3/4 of the head, like Phi-4-mini's partial rotary), and
phi3.rope.scaling.original_context_length = --rope-original-context. --rope-scaling longrope adds
rope_factors_long.weight / rope_factors_short.weight (F32, n_rot/2: short uniform in [1, 2.5],
long rising from 1 to ~20 plus noise) and phi3.rope.scaling.attn_factor, by the converter's
formula sqrt(1 + ln(ctx/orig) / ln(orig)) (1 when ctx <= orig) unless --rope-attn-factor is
given. --sliding-window N writes phi3.attention.sliding_window (llama.cpp ignores it for phi3).
qwen3moe (llama.cpp's qwen3moe graph): qwen3's attention (per-head Q/K RMSNorm, NEOX rotary,
key_length / value_length always written) and a mixture-of-experts FFN instead of the dense one:
blk.N.ffn_gate_inp.weight (the router, ggml dims [n_embd, n_expert], always F32: the converter
writes it F32 and llama-quantize never quantizes it), ffn_gate_exps / ffn_up_exps
([n_embd, n_ff_exp, n_expert]) and ffn_down_exps ([n_ff_exp, n_embd, n_expert]); keys
qwen3moe.expert_count (--experts, default 8), expert_used_count (--experts-used, default 2) and
expert_feed_forward_length (--expert-ff, default 256: a multiple of 256, so the K-quants apply to
ffn_down_exps too). llama.cpp's qwen3moe reads no gating / normalisation key (softmax over all
experts, top-k, weights renormalised to sum 1, all fixed in its graph), so none is written.
--arch llama --experts E: Mixtral, the same FFN with llama.expert_count / expert_used_count and
the experts feed_forward_length (= --expert-ff) wide; no dense ffn_gate / ffn_up / ffn_down.
Expert tensors are quantized per row like 2-D ones; the Q4_K_M / Q5_K_M mixes follow
llama_tensor_get_type for them (ffn_down_exps as ffn_down, by layer; with exactly 8 experts
attn_v and attn_k Q8_0 and, for Q4_K_M, attn_output Q5_K); Q2_K / Q3_K_M are refused for them.
qwen2 adds attn_q/k/v biases. qwen3 adds per-head Q/K RMSNorm weights (blk.N.attn_q_norm /
attn_k_norm, head_dim elements, like the other norms uniform in [0.6, 1.4]), no biases.
gpt2 (llama.cpp's graph): token_embd + position_embd (n_ctx rows), per block LayerNorm with bias
(attn_norm, ffn_norm: weights in [0.6, 1.4], biases N(0, 0.1^2)), fused attn_qkv with bias,
attn_output with bias, ffn_up / ffn_down with biases (GELU between), output_norm weight and bias;
<arch>.attention.layer_norm_epsilon 1e-5, no rotary keys; attn_qkv is quantized like an attn_v
(llama.cpp's quantizer, category_is_attn_v).
gptneox, phi2, stablelm (llama.cpp's graphs of those names): LayerNorm with bias (attn_norm,
ffn_norm where the graph has one, output_norm; epsilon 1e-5), NEOX rotary over --rope-dim of the 64
head dimensions (default 16, 32, 16: Pythia's rotary_pct 0.25, Phi-2's 32 of 80, StableLM's 25%),
no rope.freq_base key (llama.cpp's default 1e4), output.weight untied.
  gptneox: fused attn_qkv (rows q | k | v, as the converter regroups GPT-NeoX's per-head
  interleaved rows) with bias, attn_output / ffn_up / ffn_down with biases, GELU, 4 KV heads (no
  head_count_kv key: Pythia is multi-head), gptneox.use_parallel_residual true.
  phi2: one attn_norm feeding attention and the GELU MLP in parallel (no ffn_norm), separate
  attn_q / attn_k / attn_v with biases (Phi-2's current HF layout), attn_output, ffn_up / ffn_down
  with biases, output.bias; head_count_kv = head_count.
  stablelm: separate attn_q / k / v with biases, attn_output without bias, SwiGLU ffn_gate / up /
  down without biases, 4/2 heads; stablelm.use_parallel_residual (written, as the converter does;
  llama.cpp's graph ignores it). --qk-norm adds per-head LayerNorm weights attn_q_norm /
  attn_k_norm (ggml dims [head_dim, n_head] / [head_dim, n_head_kv], F32: never quantized);
  --parallel-residual drops ffn_norm (llama.cpp then feeds the FFN the attention's input norm,
  StableLM 2 12B) and writes use_parallel_residual true.
  llama.cpp's GELU here is ggml_gelu through its float16 table, as for gpt2.
gpt-oss (llama.cpp's openai-moe.cpp, arch string "gpt-oss"): attn_q / k / v / output with biases,
blk.N.attn_sinks.weight (F32, one logit per head), post_attention_norm (the FFN's input norm; no
ffn_norm), the MoE FFN with ffn_gate_inp.bias and per-expert biases ffn_{gate,up}_exps.bias
([n_ff_exp, n_expert]) and ffn_down_exps.bias ([n_embd, n_expert]), gate / up weights of std 3
(so llama.cpp's SwiGLU-OAI clamp at 7 acts), NEOX rotary base 150000, eps 1e-5; key_length /
value_length, expert_feed_forward_length (= feed_forward_length) and --sliding-window (required:
gpt-oss.attention.sliding_window; layers 0, 2, ... slide). --type MXFP4_MOE: llama-quantize's
mix (expert weights MXFP4, every other 2-D weight Q8_0, output Q8_0; MXFP4 blocks equal ggml's).
granite, smollm3, mistral3: llama's tensors (the same weights for the same seed) and NORM rotary,
with rope base 1e4 / 5e6 / 1e6 and eps 1e-5 / 1e-6 / 1e-5. granite writes --embedding-scale,
--residual-scale, --attention-scale (granite.embedding_scale, residual_scale, attention.scale, each
only when given) and --logit-scale (granite.logit_scale, required by llama.cpp). smollm3 has no
key of its own: llama.cpp leaves out the rotary of every fourth layer (layers 3, 7, ...), so give
it --layers 4 or more. mistral3: --attn-temperature-scale writes attention.temperature_scale
(llama.cpp then scales q by 1 + scale * ln(1 + floor(pos / original_context_length))).
lfm2, qwen35, qwen35moe, granitehybrid (hybrid recurrent models: short convolution, gated delta net,
Mamba-2 layers beside attention layers): see tools/gguf/synthetic_hybrid.py (--layer-types,
--full-attention-interval; granitehybrid takes granite's scale options; qwen35moe --experts,
--experts-used, --expert-ff, default 8, 2, 128).
Vocab 512 copies the tokenizer from stories260K.gguf; other sizes get a synthetic
SentencePiece-style vocab. --vocab-from FILE copies the tokenizer of any GGUF (e.g.
ggml-vocab-gpt-2.gguf) and makes the vocabulary that size.

Weights are N(0, sigma^2) from a per-tensor generator seeded by (seed, crc32(name)), scaled so
that the next-token distribution is peaked (logit std about 1.4*sqrt(2 ln n_vocab)).
Output is byte-for-byte deterministic for given arguments.
"""
import argparse
import math
import os
import sys
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quants  # noqa: E402
import synthetic_gemma4  # noqa: E402
import synthetic_hybrid  # noqa: E402
from gguf_writer import GGMLType, GGUFWriter, ValueType, copy_kv, read_gguf, BLOCK_LAYOUT  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The shared test data: $LLM_SHARED_TESTDATA (set by test.sh), else beside the project.
DEFAULT_VOCAB = os.path.join(os.environ.get("LLM_SHARED_TESTDATA") or
                             os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata")),
                             "stories260K.gguf")

SHAPES = {
    "tiny": dict(n_embd=256, n_layer=2, n_head=4, n_head_kv=2, n_ff=512, n_vocab=512, n_ctx=256),
    "tinyllama": dict(n_embd=2048, n_layer=22, n_head=32, n_head_kv=4, n_ff=5632, n_vocab=32000, n_ctx=2048),
    "qwen2.5-0.5b": dict(n_embd=896, n_layer=24, n_head=14, n_head_kv=2, n_ff=4864, n_vocab=151936,
                         n_ctx=32768),
    "qwen3-0.6b": dict(n_embd=1024, n_layer=28, n_head=16, n_head_kv=8, n_ff=3072, n_vocab=151936,
                       n_ctx=40960, head_dim=128),
    # Gemma 3 1B (use --sliding-window 512 as its file has)
    "gemma3-1b": dict(n_embd=1152, n_layer=26, n_head=4, n_head_kv=1, n_ff=6912, n_vocab=262144,
                      n_ctx=32768, head_dim=256),
    # Qwen3-30B-A3B (use --arch qwen3moe; moe: the default --experts, --experts-used, --expert-ff)
    "qwen3-30b-a3b": dict(n_embd=2048, n_layer=48, n_head=32, n_head_kv=4, n_ff=6144, n_vocab=151936,
                          n_ctx=40960, head_dim=128, moe=(128, 8, 768)),
}
SHAPES.update(synthetic_hybrid.SHAPES)  # qwen3.5-0.8b (--arch qwen35; written there)
ARCH_DEFAULTS = {
    "llama": dict(rope_base=10000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=False),
    "qwen2": dict(rope_base=1000000.0, rms_eps=1e-6, qkv_bias=True, qk_norm=False),
    "qwen3": dict(rope_base=1000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True),
    # qwen3's attention, a mixture-of-experts FFN (llama.cpp's qwen3moe graph)
    "qwen3moe": dict(rope_base=1000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True, moe=True),
    "gpt2": dict(rope_base=None, rms_eps=None, qkv_bias=True, qk_norm=False, norm_eps=1e-5),
    "phi3": dict(rope_base=10000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=False),
    "gemma2": dict(rope_base=10000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=False, post_norms=True),
    "gemma3": dict(rope_base=1000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True, post_norms=True),
    "olmo2": dict(rope_base=500000.0, rms_eps=1e-6, qkv_bias=False, qk_norm="whole", post_norms=True,
                  pre_norms=False),
    # llama's tensors and NORM rotary; what differs is in the metadata (see the docstring)
    "granite": dict(rope_base=10000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=False),
    "smollm3": dict(rope_base=5000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=False),
    "mistral3": dict(rope_base=1000000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=False),
    # the partial-rotary LayerNorm family (no rope.freq_base key: llama.cpp's default 1e4);
    # rope_frac: the default rope.dimension_count as a fraction of the head
    "gptneox": dict(rope_base=None, rms_eps=None, qkv_bias=True, qk_norm=False, norm_eps=1e-5, rope_frac=0.25),
    "phi2": dict(rope_base=None, rms_eps=None, qkv_bias=True, qk_norm=False, norm_eps=1e-5, rope_frac=0.5),
    "stablelm": dict(rope_base=None, rms_eps=None, qkv_bias=True, qk_norm=False, norm_eps=1e-5, rope_frac=0.25),
}
# gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE): biases everywhere, attention sinks, sliding window
# on even layers, a biased router whose softmax is taken over the chosen experts, clamped SwiGLU
ARCH_DEFAULTS["gpt-oss"] = dict(rope_base=150000.0, rms_eps=1e-5, qkv_bias=True, qk_norm=False, moe=True)
ARCH_DEFAULTS.update(synthetic_hybrid.ARCH_DEFAULTS)  # lfm2, qwen35, qwen35moe, granitehybrid (written there)
# Gemma 4 (llama.cpp's gemma4.cpp): written by synthetic_gemma4.py
ARCH_DEFAULTS["gemma4"] = dict(rope_base=1000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True, post_norms=True)
LAYERNORM_ARCHS = ("gpt2", "gptneox", "phi2", "stablelm")
PARTIAL_ROTARY_ARCHS = ("phi3", "gptneox", "phi2", "stablelm")
# llama_ftype values written as general.file_type
FILE_TYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9,
             "Q4_K": 14, "Q4_K_M": 15, "Q5_K": 16, "Q5_K_M": 17, "Q6_K": 18, "BF16": 32,
             "Q2_K": 10, "Q3_K_M": 12, "MXFP4_MOE": 38}
TYPES = list(FILE_TYPE)
FALLBACK = {GGMLType.Q4_K: GGMLType.Q5_0, GGMLType.Q5_K: GGMLType.Q5_1, GGMLType.Q6_K: GGMLType.Q8_0}


def use_more_bits(i_layer, n_layers):
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def low_bit_mix_type(name, ftype, n_layer, n_gqa, layer):
    """llama.cpp's Q2_K and Q3_K_M mixes (llama_tensor_get_type, dense non-Falcon models) for a
    weight other than the output."""
    is_attn_v = name.endswith("attn_v.weight") or name.endswith("attn_qkv.weight")
    if ftype == "Q2_K":
        if is_attn_v:
            return GGMLType.Q4_K if n_gqa >= 4 else GGMLType.Q3_K
        if name.endswith("ffn_down.weight") or name.endswith("attn_output.weight"):
            return GGMLType.Q3_K
        return GGMLType.Q2_K
    if is_attn_v:  # Q3_K_M: the first two attn_v tensors Q5_K
        return GGMLType.Q5_K if layer < 2 else GGMLType.Q4_K
    if name.endswith("ffn_down.weight"):
        return GGMLType.Q5_K if layer < n_layer // 16 else GGMLType.Q4_K
    if name.endswith("attn_output.weight"):
        return GGMLType.Q4_K
    return GGMLType.Q3_K


def choose_type(name, ne0, ftype, n_layer, tied, layer, n_gqa=1, n_expert=0):
    """ggml type of a 2-D (or 3-D expert) weight, mirroring llama.cpp's quantizer for the mixes."""
    if name.endswith("ffn_gate_inp.weight") or name.endswith("_norm.weight") or name.endswith(".bias"):
        # (2-D norms: stablelm's per-head Q/K LayerNorm weights; "_norm.weight" is never quantized)
        # the router: convert_hf_to_gguf.py writes it F32 and llama-quantize never quantizes it
        return GGMLType.F32
    if ftype in ("F32", "F16", "BF16"):
        return GGMLType[ftype]
    is_output = name == "output.weight" or (tied and name == "token_embd.weight")
    if ftype == "MXFP4_MOE":
        # llama_tensor_get_type: 3-D (expert) weights MXFP4, every other 2-D weight Q8_0
        return GGMLType.MXFP4 if name.endswith("_exps.weight") else GGMLType.Q8_0
    if n_expert and ftype in ("Q2_K", "Q3_K_M"):
        raise SystemExit("--type %s: llama.cpp's mixes for mixture-of-experts models are not written here" % ftype)
    if ftype in ("Q2_K", "Q3_K_M"):
        t = (GGMLType.Q8_0 if ne0 % 256 else GGMLType.Q6_K) if is_output else \
            low_bit_mix_type(name, ftype, n_layer, n_gqa, layer)
        if ne0 % BLOCK_LAYOUT[t][0]:
            # llama.cpp falls back to IQ4_NL (Q2_K / Q3_K), Q5_0 (Q4_K), Q5_1 (Q5_K), Q8_0 (Q6_K)
            if t in (GGMLType.Q2_K, GGMLType.Q3_K):
                raise SystemExit("%s: ne[0] = %d is not a multiple of 256 and llama.cpp would store it as "
                                 "IQ4_NL, which this generator does not write" % (name, ne0))
            t = FALLBACK[t]
        return t
    mix = ftype.endswith("_M")
    base = GGMLType[ftype[:-2] if mix else ftype]
    t = base
    if mix:
        if is_output:
            t = GGMLType.Q8_0 if ne0 % BLOCK_LAYOUT[base][0] else GGMLType.Q6_K
        elif name.endswith("attn_v.weight") or name.endswith("attn_qkv.weight"):
            # (llama.cpp's quantizer counts a fused attn_qkv as an attn_v: category_is_attn_v)
            if use_more_bits(layer, n_layer):
                t = GGMLType.Q6_K
            if n_expert == 8:  # llama_tensor_get_type: "for the 8-expert model, bumping this to Q8_0"
                t = GGMLType.Q8_0
        elif name.endswith("attn_k.weight") and n_expert == 8:
            t = GGMLType.Q8_0
        elif name.endswith("attn_output.weight") and n_expert == 8 and ftype == "Q4_K_M":
            t = GGMLType.Q5_K
        elif (name.endswith("ffn_down.weight") or name.endswith("ffn_down_exps.weight")) and \
                use_more_bits(layer, n_layer):
            t = GGMLType.Q6_K
    blk = BLOCK_LAYOUT[t][0]
    if ne0 % blk:
        t = FALLBACK.get(t, t)
        if ne0 % BLOCK_LAYOUT[t][0]:
            t = GGMLType.F16
    return t


def gpt2_tensor_specs(shape, tied):
    """gpt2's tensors in the order llama.cpp's converter writes them."""
    s = shape
    E, F, V = s["n_embd"], s["n_ff"], s["n_vocab"]
    qkv = s["n_head"] * s["head_dim"] + 2 * s["n_head_kv"] * s["head_dim"]
    specs = [("token_embd.weight", (V, E), "embd", -1), ("position_embd.weight", (s["n_ctx"], E), "pos", -1)]
    for i in range(s["n_layer"]):
        p = "blk.%d." % i
        specs += [(p + "attn_norm.weight", (E,), "norm", i), (p + "attn_norm.bias", (E,), "nbias", i),
                  (p + "attn_qkv.weight", (qkv, E), "wqkv", i), (p + "attn_qkv.bias", (qkv,), "bqkv", i),
                  (p + "attn_output.weight", (E, E), "wo", i), (p + "attn_output.bias", (E,), "bo", i),
                  (p + "ffn_norm.weight", (E,), "norm", i), (p + "ffn_norm.bias", (E,), "nbias", i),
                  (p + "ffn_up.weight", (F, E), "wup", i), (p + "ffn_up.bias", (F,), "bup", i),
                  (p + "ffn_down.weight", (E, F), "wdown", i), (p + "ffn_down.bias", (E,), "bdown", i)]
    specs += [("output_norm.weight", (E,), "out_norm", -1), ("output_norm.bias", (E,), "out_nbias", -1)]
    if not tied:
        specs.append(("output.weight", (V, E), "out", -1))
    return specs


def layernorm_family_specs(shape, arch, qk_norm, parallel):
    """gptneox, phi2, stablelm: llama.cpp's tensors for these graphs (LayerNorm with bias)."""
    s = shape
    hd = s["head_dim"]
    E, F, V = s["n_embd"], s["n_ff"], s["n_vocab"]
    q_out, kv_out = s["n_head"] * hd, s["n_head_kv"] * hd
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    for i in range(s["n_layer"]):
        p = "blk.%d." % i
        specs += [(p + "attn_norm.weight", (E,), "norm", i), (p + "attn_norm.bias", (E,), "nbias", i)]
        if arch == "gptneox":
            # fused, rows q | k | v (the converter regroups GPT-NeoX's per-head interleaved rows)
            specs += [(p + "attn_qkv.weight", (q_out + 2 * kv_out, E), "wqkv", i),
                      (p + "attn_qkv.bias", (q_out + 2 * kv_out,), "bqkv", i)]
        else:
            specs += [(p + "attn_q.weight", (q_out, E), "wq", i), (p + "attn_q.bias", (q_out,), "bq", i)]
            if qk_norm:  # stablelm: one LayerNorm weight per head, ggml dims [head_dim, n_head]
                specs.append((p + "attn_q_norm.weight", (s["n_head"], hd), "norm", i))
            specs += [(p + "attn_k.weight", (kv_out, E), "wk", i), (p + "attn_k.bias", (kv_out,), "bk", i)]
            if qk_norm:
                specs.append((p + "attn_k_norm.weight", (s["n_head_kv"], hd), "norm", i))
            specs += [(p + "attn_v.weight", (kv_out, E), "wv", i), (p + "attn_v.bias", (kv_out,), "bv", i)]
        specs.append((p + "attn_output.weight", (E, q_out), "wo", i))
        if arch != "stablelm":
            specs.append((p + "attn_output.bias", (E,), "bo", i))
        if arch == "gptneox" or (arch == "stablelm" and not parallel):
            specs += [(p + "ffn_norm.weight", (E,), "norm", i), (p + "ffn_norm.bias", (E,), "nbias", i)]
        if arch == "stablelm":  # SwiGLU, no biases
            specs += [(p + "ffn_gate.weight", (F, E), "wgate", i), (p + "ffn_up.weight", (F, E), "wup", i),
                      (p + "ffn_down.weight", (E, F), "wdown", i)]
        else:  # GELU with biases
            specs += [(p + "ffn_up.weight", (F, E), "wup", i), (p + "ffn_up.bias", (F,), "bup", i),
                      (p + "ffn_down.weight", (E, F), "wdown", i), (p + "ffn_down.bias", (E,), "bdown", i)]
    specs += [("output_norm.weight", (E,), "out_norm", -1), ("output_norm.bias", (E,), "out_nbias", -1),
              ("output.weight", (V, E), "out", -1)]
    if arch == "phi2":
        specs.append(("output.bias", (V,), "bout", -1))
    return specs


def gptoss_tensor_specs(shape):
    """gpt-oss's tensors (llama.cpp's openai-moe.cpp): every projection biased, attn_sinks (one
    logit per head), post_attention_norm as the FFN's input norm (there is no ffn_norm), router
    bias and per-expert biases ([n_ff_exp, n_expert] for gate / up, [n_embd, n_expert] for down)."""
    s = shape
    hd = s["head_dim"]
    E, V, X, FX = s["n_embd"], s["n_vocab"], s["n_expert"], s["n_ff_exp"]
    q_out, kv_out = s["n_head"] * hd, s["n_head_kv"] * hd
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    for i in range(s["n_layer"]):
        p = "blk.%d." % i
        specs += [(p + "attn_norm.weight", (E,), "norm", i),
                  (p + "attn_q.weight", (q_out, E), "wq", i), (p + "attn_q.bias", (q_out,), "bq", i),
                  (p + "attn_k.weight", (kv_out, E), "wk", i), (p + "attn_k.bias", (kv_out,), "bk", i),
                  (p + "attn_v.weight", (kv_out, E), "wv", i), (p + "attn_v.bias", (kv_out,), "bv", i),
                  (p + "attn_output.weight", (E, q_out), "wo", i), (p + "attn_output.bias", (E,), "bo", i),
                  (p + "attn_sinks.weight", (s["n_head"],), "sinks", i),
                  (p + "post_attention_norm.weight", (E,), "norm", i),
                  (p + "ffn_gate_inp.weight", (X, E), "wgate_inp", i), (p + "ffn_gate_inp.bias", (X,), "bgate_inp", i),
                  (p + "ffn_gate_exps.weight", (X, FX, E), "wgu_oai", i), (p + "ffn_gate_exps.bias", (X, FX), "bup", i),
                  (p + "ffn_up_exps.weight", (X, FX, E), "wgu_oai", i), (p + "ffn_up_exps.bias", (X, FX), "bup", i),
                  (p + "ffn_down_exps.weight", (X, E, FX), "wdown_oai", i), (p + "ffn_down_exps.bias", (X, E), "bdown", i)]
    specs += [("output_norm.weight", (E,), "out_norm", -1), ("output.weight", (V, E), "out", -1)]
    return specs


def tensor_specs(shape, arch, tied, qk_norm=False, parallel=False):
    """[(name, numpy shape (rows, cols) = reversed ggml dims, kind, layer)] in file order."""
    if arch == "gpt2":
        return gpt2_tensor_specs(shape, tied)
    if arch in ("gptneox", "phi2", "stablelm"):
        return layernorm_family_specs(shape, arch, qk_norm, parallel)
    if arch == "gpt-oss":
        return gptoss_tensor_specs(shape)
    s = shape
    hd = s["head_dim"]
    E, F, V = s["n_embd"], s["n_ff"], s["n_vocab"]
    q_out, kv_out = s["n_head"] * hd, s["n_head_kv"] * hd
    ad = ARCH_DEFAULTS[arch]
    whole = ad["qk_norm"] == "whole"  # olmo2: Q/K norms over the whole projections
    pre, post = ad.get("pre_norms", True), ad.get("post_norms", False)
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    for i in range(s["n_layer"]):
        p = "blk.%d." % i
        if pre:
            specs.append((p + "attn_norm.weight", (E,), "norm", i))
        specs.append((p + "attn_q.weight", (q_out, E), "wq", i))
        if ad["qkv_bias"]:
            specs.append((p + "attn_q.bias", (q_out,), "bq", i))
        if ad["qk_norm"]:
            specs.append((p + "attn_q_norm.weight", (q_out if whole else hd,), "norm", i))
        specs.append((p + "attn_k.weight", (kv_out, E), "wk", i))
        if ad["qkv_bias"]:
            specs.append((p + "attn_k.bias", (kv_out,), "bk", i))
        if ad["qk_norm"]:
            specs.append((p + "attn_k_norm.weight", (kv_out if whole else hd,), "norm", i))
        specs.append((p + "attn_v.weight", (kv_out, E), "wv", i))
        if ad["qkv_bias"]:
            specs.append((p + "attn_v.bias", (kv_out,), "bv", i))
        specs.append((p + "attn_output.weight", (E, q_out), "wo", i))
        if post:
            specs.append((p + "post_attention_norm.weight", (E,), "norm", i))
        if pre:
            specs.append((p + "ffn_norm.weight", (E,), "norm", i))
        if s.get("n_expert"):
            # router [n_embd -> n_expert] and the experts stacked in 3-D tensors: ggml dims
            # [n_embd, n_ff_exp, n_expert] (gate, up) and [n_ff_exp, n_embd, n_expert] (down)
            X, FX = s["n_expert"], s["n_ff_exp"]
            specs.append((p + "ffn_gate_inp.weight", (X, E), "wgate_inp", i))
            specs.append((p + "ffn_gate_exps.weight", (X, FX, E), "wgate", i))
            specs.append((p + "ffn_up_exps.weight", (X, FX, E), "wup", i))
            specs.append((p + "ffn_down_exps.weight", (X, E, FX), "wdown_exps", i))
        else:
            specs.append((p + "ffn_gate.weight", (F, E), "wgate", i))
            specs.append((p + "ffn_up.weight", (F, E), "wup", i))
            specs.append((p + "ffn_down.weight", (E, F), "wdown", i))
        if post:
            specs.append((p + "post_ffw_norm.weight", (E,), "norm", i))
    specs.append(("output_norm.weight", (E,), "out_norm", -1))
    if not tied:
        specs.append(("output.weight", (V, E), "out", -1))
    return specs


def phi3_tensor_specs(shape, tied):
    """tensor_specs for phi3: fused attn_qkv (kind wqkv) and gate|up in ffn_up (kind wgateup)."""
    s = shape
    hd = s["head_dim"]
    E, F, V = s["n_embd"], s["n_ff"], s["n_vocab"]
    q_out, kv_out = s["n_head"] * hd, s["n_head_kv"] * hd
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    for i in range(s["n_layer"]):
        p = "blk.%d." % i
        specs.append((p + "attn_norm.weight", (E,), "norm", i))
        specs.append((p + "attn_qkv.weight", (q_out + 2 * kv_out, E), "wqkv", i))
        specs.append((p + "attn_output.weight", (E, q_out), "wo", i))
        specs.append((p + "ffn_norm.weight", (E,), "norm", i))
        specs.append((p + "ffn_up.weight", (2 * F, E), "wgateup", i))
        specs.append((p + "ffn_down.weight", (E, F), "wdown", i))
    specs.append(("output_norm.weight", (E,), "out_norm", -1))
    if not tied:
        specs.append(("output.weight", (V, E), "out", -1))
    return specs


def phi3_values(name, npshape, kind, shape, seed, tied):
    """make_values for phi3's fused tensors: each part scaled as its unfused kind (q and k rows
    like wq / wk, v rows like wv; gate and up rows like wgate / wup)."""
    if kind not in ("wqkv", "wgateup"):
        return make_values(name, npshape, kind, shape, seed, tied)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    E = shape["n_embd"]
    x = rng.standard_normal(int(np.prod(npshape)), dtype=np.float32).reshape(npshape)
    if kind == "wqkv":
        hd = shape["head_dim"]
        qk = shape["n_head"] * hd + shape["n_head_kv"] * hd
        x[:qk] *= np.float32(math.sqrt(1.5 / E))
        x[qk:] *= np.float32(1.0 / math.sqrt(E))
    else:
        x *= np.float32(1.0 / math.sqrt(E))
    return x


def phi3_rope_factors(pairs, seed):
    """LongRoPE-like factors (long, short), float32: short in [1, 2.5], long rising to ~20."""
    rng = np.random.default_rng([seed, zlib.crc32(b"rope_factors")])
    short = rng.uniform(1.0, 2.5, size=pairs).astype(np.float32)
    ramp = np.linspace(0.0, 1.0, pairs) ** 2
    long = (1.0 + 19.0 * ramp + rng.uniform(0.0, 1.0, size=pairs)).astype(np.float32)
    return long, short


EMBD_SIGMA = 0.05  # small, so the layers (not the current token's own embedding) dominate the
                   # residual stream; with tied embeddings a large one would make the current
                   # token win every prediction


def llama3_rope_factors(n_rot, base, factor, low_freq_factor, high_freq_factor, original_context):
    """Per-pair frequency factors, as convert_hf_to_gguf.py's LlamaModel computes rope_freqs for
    rope_type llama3 (float32 inverse frequencies, python floats for the rest)."""
    freqs = 1.0 / (np.float32(base) ** (np.arange(0, n_rot, 2, dtype=np.float32) / np.float32(n_rot)))
    low_freq_wavelen = original_context / low_freq_factor
    high_freq_wavelen = original_context / high_freq_factor
    factors = []
    for freq in freqs.astype(np.float32):
        wavelen = 2 * math.pi / float(freq)
        if wavelen < high_freq_wavelen:
            factors.append(1.0)
        elif wavelen > low_freq_wavelen:
            factors.append(factor)
        else:
            smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            factors.append(1.0 / ((1.0 - smooth) / factor + smooth))
    return np.asarray(factors, dtype=np.float32)


def make_values(name, npshape, kind, shape, seed, tied=False):
    """Deterministic float32 values of one tensor."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    E, F, V = shape["n_embd"], shape["n_ff"], shape["n_vocab"]
    n = int(np.prod(npshape))
    if kind == "wqkv":
        # q and k rows as wq / wk (scores with std ~1.5), v rows as wv
        x = rng.standard_normal(n, dtype=np.float32).reshape(npshape)
        qk = npshape[0] - (npshape[0] - E) // 2  # q is n_embd wide, k and v equal
        x[:qk] *= np.float32(math.sqrt(1.5 / E))
        x[qk:] *= np.float32(1.0 / math.sqrt(E))
        return x
    if kind == "out_nbias":
        target = 1.4 * math.sqrt(2.0 * math.log(V))
        g = target / math.sqrt(E) / (shape.get("embd_sigma", EMBD_SIGMA) if tied else 1.0)
        return (rng.standard_normal(n, dtype=np.float32).reshape(npshape) * np.float32(0.3 * g))
    if kind == "norm":
        return rng.uniform(0.6, 1.4, size=npshape).astype(np.float32)
    if kind == "out_norm":
        # logits = W_out (unit-rms h * g); W_out entries have std s -> logit std ~ s*sqrt(E)*rms(g)
        target = 1.4 * math.sqrt(2.0 * math.log(V))
        g = target / math.sqrt(E) / (shape.get("embd_sigma", EMBD_SIGMA) if tied else 1.0)
        u = rng.uniform(0.5, 1.5, size=npshape).astype(np.float32)
        return (u * (g / float(np.sqrt(np.mean(u.astype(np.float64) ** 2))))).astype(np.float32)
    sigma = {
        "embd": shape.get("embd_sigma", EMBD_SIGMA), "out": 1.0,
        # attention scores q.k/sqrt(hd) with std ~1.5 so attention is neither uniform nor one-hot
        # (score std = sigma_q * sigma_k * n_embd for unit-rms inputs)
        "wq": math.sqrt(1.5 / E), "wk": math.sqrt(1.5 / E),
        "wv": 1.0 / math.sqrt(E), "wo": 1.0 / math.sqrt(E),
        "wgate": 1.0 / math.sqrt(E), "wup": 1.0 / math.sqrt(E), "wdown": 1.0 / math.sqrt(F),
        # router logits with std ~1.5 (unit-rms input): the experts' probabilities are spread
        # enough that the top-k choice differs from token to token but is rarely a near-tie
        "wgate_inp": 1.5 / math.sqrt(E), "wdown_exps": 1.0 / math.sqrt(shape.get("n_ff_exp", F)),
        "bq": 0.5, "bk": 0.5, "bv": 0.2,
        "pos": EMBD_SIGMA, "nbias": 0.1, "bqkv": 0.2, "bo": 0.1, "bup": 0.2, "bdown": 0.1,
        "bout": 0.3,  # phi2's output.bias, added to the logits
        # gpt-oss: sink logits like the attention scores; router bias; gate / up wide enough
        # (std 3) that the SwiGLU's clamp at 7 acts on some values; down scaled to match
        "sinks": 1.5, "bgate_inp": 0.5, "wgu_oai": 3.0 / math.sqrt(E),
        "wdown_oai": 0.2 / math.sqrt(shape.get("n_ff_exp", F)),
    }[kind]
    x = rng.standard_normal(n, dtype=np.float32).reshape(npshape)
    x *= np.float32(sigma)
    return x


def synthetic_spm_vocab(n_vocab):
    """tokens, scores, token types of a SentencePiece-like vocab: <unk> <s> </s>, 256 byte
    tokens <0x00>..<0xFF>, then unique pieces (alternately with and without the U+2581 prefix)."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
    types = [2, 3, 3] + [6] * 256
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(tokens) < n_vocab:
        k, w = i // 2 + 1, ""          # bijective base-26: a..z, aa..zz, ...
        while k > 0:
            k -= 1
            w = letters[k % 26] + w
            k //= 26
        tokens.append(("\u2581" + w) if i % 2 == 0 else w)
        types.append(1)
        i += 1
    scores = np.zeros(n_vocab, np.float32)
    scores[259:] = -np.arange(n_vocab - 259, dtype=np.float32)
    return tokens, scores, np.asarray(types, np.int32)


def add_tokenizer(w, n_vocab, vocab_from):
    if vocab_from:
        src = read_gguf(vocab_from)
        n = len(src.kv("tokenizer.ggml.tokens"))
        if n != n_vocab:
            raise SystemExit("%s has %d tokens, need %d" % (vocab_from, n, n_vocab))
        for kv in src.kvs:
            if kv.key.startswith("tokenizer."):
                copy_kv(w, kv)
        return "copied from " + os.path.basename(vocab_from)
    tokens, scores, types = synthetic_spm_vocab(n_vocab)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.scores", scores, ValueType.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, ValueType.INT32)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    return "synthetic SentencePiece-style"


def add_window_keys(w, arch, args):
    """gemma2 / gemma3 / olmo2: sliding window, its layer pattern, the local layers' rotary
    base and the soft-capping values, each written only when given (llama.cpp's defaults
    apply otherwise: gemma2 window 4096, attention cap 50, final cap 30)."""
    if args.sliding_window is not None:
        w.add_uint32(arch + ".attention.sliding_window", args.sliding_window)
    if args.swa_pattern is not None:
        w.add_uint32(arch + ".attention.sliding_window_pattern", args.swa_pattern)
    if args.rope_base_swa is not None:
        w.add_float32(arch + ".rope.freq_base_swa", args.rope_base_swa)
    if args.attn_softcap is not None:
        w.add_float32(arch + ".attn_logit_softcapping", args.attn_softcap)
    if args.final_softcap is not None:
        w.add_float32(arch + ".final_logit_softcapping", args.final_softcap)


def build(args):
    if args.arch in synthetic_hybrid.ARCHS:
        return synthetic_hybrid.build(sys.modules[__name__], args)
    shape = dict(SHAPES[args.shape])
    arch = args.arch
    ad = ARCH_DEFAULTS[arch]
    tied = args.tied or arch == "gemma2"  # llama.cpp's gemma2 always shares token_embd
    if arch.startswith("gemma"):
        # gemma scales the embeddings by sqrt(n_embd): keep them as small in the residual stream
        shape["embd_sigma"] = EMBD_SIGMA / math.sqrt(shape["n_embd"])
    hd = args.head_dim or shape.get("head_dim", shape["n_embd"] // shape["n_head"])
    shape["head_dim"] = hd
    w = GGUFWriter(version=args.version, alignment=args.alignment,
                   write_alignment_key=args.alignment != 32)
    w.add_string("general.architecture", arch)
    # llama.cpp gives Phi-3 vocabularies special attributes when general.name contains "phi3" or
    # "phi-3", and fails on a vocabulary without <|endoftext|>: keep those strings out of the name
    w.add_string("general.name", "synthetic-%s-%s-%s%s" % (arch.replace("phi3", "phi_3"), args.shape, args.type,
                                                          "-tied" if tied else ""))
    w.add_string("general.description", "random weights, seed %d, tools/gguf/make_synthetic_model.py" % args.seed)
    w.add_uint32("general.file_type", 0 if args.dequant_f32 else FILE_TYPE[args.type])
    if args.type not in ("F32", "F16", "BF16") and not args.dequant_f32:
        w.add_uint32("general.quantization_version", 2)
    if args.vocab_from:  # the model takes that vocabulary, whatever its size
        shape["n_vocab"] = len(read_gguf(args.vocab_from).kv("tokenizer.ggml.tokens"))
    w.add_uint32(arch + ".vocab_size", shape["n_vocab"])
    if args.context_length:
        shape["n_ctx"] = args.context_length
    if args.layers:
        shape["n_layer"] = args.layers
    if arch == "gemma4":
        hist, tok = synthetic_gemma4.build_gemma4(args, w, shape, sys.modules[__name__])
        return w, hist, tok
    if arch in ("gptneox", "phi2"):  # multi-head attention, as Pythia and Phi-2 have
        shape["n_head_kv"] = shape["n_head"]
    moe_defaults = shape.pop("moe", (8, 2, 256))  # the shape's expert count, used count, width
    if ad.get("moe") or args.experts:
        shape["n_expert"] = args.experts or moe_defaults[0]
        shape["n_expert_used"] = args.experts_used or moe_defaults[1]
        shape["n_ff_exp"] = args.expert_ff or moe_defaults[2]
        if arch in ("llama", "gpt-oss"):  # Mixtral: the experts are feed_forward_length wide, no
            shape["n_ff"] = shape["n_ff_exp"]  # dense FFN; gpt-oss's converter writes both the same
    w.add_uint32(arch + ".context_length", shape["n_ctx"])
    w.add_uint32(arch + ".embedding_length", shape["n_embd"])
    w.add_uint32(arch + ".block_count", shape["n_layer"])
    w.add_uint32(arch + ".feed_forward_length", shape["n_ff"])
    w.add_uint32(arch + ".attention.head_count", shape["n_head"])
    if arch != "gptneox":  # (its converter writes no head_count_kv: llama.cpp then takes head_count)
        w.add_uint32(arch + ".attention.head_count_kv", shape["n_head_kv"])
    if arch in ("qwen3", "qwen3moe", "gpt-oss") or hd != shape["n_embd"] // shape["n_head"]:
        w.add_uint32(arch + ".attention.key_length", hd)
        w.add_uint32(arch + ".attention.value_length", hd)
    if shape.get("n_expert"):
        # as convert_hf_to_gguf.py writes num_experts / num_experts_per_tok (and qwen's
        # moe_intermediate_size); llama's experts are feed_forward_length wide (Mixtral)
        w.add_uint32(arch + ".expert_count", shape["n_expert"])
        w.add_uint32(arch + ".expert_used_count", shape["n_expert_used"])
        if arch != "llama":
            w.add_uint32(arch + ".expert_feed_forward_length", shape["n_ff_exp"])
    if arch in PARTIAL_ROTARY_ARCHS[1:]:
        n_rot = args.rope_dim or int(ad["rope_frac"] * hd) // 2 * 2
        w.add_uint32(arch + ".rope.dimension_count", n_rot)
        if arch != "phi2":  # llama.cpp's gptneox reads it (stablelm's converter writes it, unread)
            w.add_bool(arch + ".use_parallel_residual", arch == "gptneox" or args.parallel_residual)
    if arch in LAYERNORM_ARCHS:
        w.add_float32(arch + ".attention.layer_norm_epsilon", ad["norm_eps"])
    else:
        w.add_float32(arch + ".attention.layer_norm_rms_epsilon", ad["rms_eps"])
        w.add_float32(arch + ".rope.freq_base", ad["rope_base"])
    if arch == "phi3":
        n_rot = args.rope_dim or (hd * 3 // 4) // 2 * 2
        w.add_uint32(arch + ".rope.dimension_count", n_rot)
        w.add_uint32(arch + ".rope.scaling.original_context_length", args.rope_original_context)
        if args.rope_scaling == "longrope":
            attn_factor = args.rope_attn_factor
            if attn_factor is None:
                scale = shape["n_ctx"] / args.rope_original_context
                attn_factor = math.sqrt(1 + math.log(scale) / math.log(args.rope_original_context)) if scale > 1 else 1.0
            w.add_float32(arch + ".rope.scaling.attn_factor", attn_factor)
        if args.sliding_window is not None:
            w.add_uint32(arch + ".attention.sliding_window", args.sliding_window)
    elif arch not in LAYERNORM_ARCHS:
        w.add_uint32(arch + ".rope.dimension_count", hd)
    if arch in ("gemma2", "gemma3", "olmo2"):
        add_window_keys(w, arch, args)
    if arch == "gpt-oss":  # required by llama.cpp; layers 0, 2, ... slide (period 2, its default)
        w.add_uint32(arch + ".attention.sliding_window", args.sliding_window)
    if args.rope_scaling == "linear":
        w.add_string(arch + ".rope.scaling.type", "linear")
        w.add_float32(arch + ".rope.scaling.factor", args.rope_factor)
    if args.rope_scaling == "yarn":
        # as convert_hf_to_gguf.py writes a rope_scaling {rope_type yarn, factor,
        # original_max_position_embeddings} (and Mistral's beta / alpha as beta_fast / beta_slow)
        w.add_string(arch + ".rope.scaling.type", "yarn")
        w.add_float32(arch + ".rope.scaling.factor", args.rope_factor)
        w.add_uint32(arch + ".rope.scaling.original_context_length", args.rope_original_context)
        if args.yarn_beta_fast is not None:
            w.add_float32(arch + ".rope.scaling.yarn_beta_fast", args.yarn_beta_fast)
        if args.yarn_beta_slow is not None:
            w.add_float32(arch + ".rope.scaling.yarn_beta_slow", args.yarn_beta_slow)
    if args.yarn_log_mul is not None:
        w.add_float32(arch + ".rope.scaling.yarn_log_multiplier", args.yarn_log_mul)
    if args.attn_temperature_scale is not None:
        w.add_float32(arch + ".attention.temperature_scale", args.attn_temperature_scale)
    for key, value in (("attention.scale", args.attention_scale), ("embedding_scale", args.embedding_scale),
                       ("residual_scale", args.residual_scale), ("logit_scale", args.logit_scale)):
        if value is not None:  # granite (convert_hf_to_gguf.py's GraniteModel order)
            w.add_float32(arch + "." + key, value)
    tok = add_tokenizer(w, shape["n_vocab"], args.vocab_from or (DEFAULT_VOCAB if shape["n_vocab"] == 512 else None))

    hist = {}
    if args.rope_scaling == "llama3":
        factors = llama3_rope_factors(hd, ad["rope_base"], args.rope_factor, args.rope_low_freq_factor,
                                      args.rope_high_freq_factor, args.rope_original_context)
        w.add_tensor("rope_freqs.weight", [hd // 2], GGMLType.F32, factors.astype("<f4").view(np.uint8))
        hist["F32"] = 1
    if args.rope_scaling == "longrope":
        long_f, short_f = phi3_rope_factors(n_rot // 2, args.seed)
        w.add_tensor("rope_factors_long.weight", [n_rot // 2], GGMLType.F32, long_f.astype("<f4").view(np.uint8))
        w.add_tensor("rope_factors_short.weight", [n_rot // 2], GGMLType.F32, short_f.astype("<f4").view(np.uint8))
        hist["F32"] = hist.get("F32", 0) + 2
    specs = phi3_tensor_specs(shape, tied) if arch == "phi3" else \
        tensor_specs(shape, arch, tied, args.qk_norm, args.parallel_residual)
    values = phi3_values if arch == "phi3" else make_values
    for name, npshape, kind, layer in specs:
        dims = list(reversed(npshape))
        if len(npshape) == 1:
            gt = GGMLType.F32
        else:
            gt = choose_type(name, dims[0], args.type, shape["n_layer"], tied, layer,
                             shape["n_head"] // shape["n_head_kv"], shape.get("n_expert", 0))
        out_t = GGMLType.F32 if args.dequant_f32 else gt
        hist[gt.name] = hist.get(gt.name, 0) + 1

        def produce(name=name, npshape=npshape, kind=kind, gt=gt):
            x = values(name, npshape, kind, shape, args.seed, tied)
            raw = quants.quantize(x, gt)
            if args.dequant_f32:
                return quants.dequantize(raw, gt).astype("<f4").view(np.uint8)
            return raw
        w.add_tensor(name, dims, out_t, produce)
    return w, hist, tok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(ARCH_DEFAULTS), default="llama")
    ap.add_argument("--type", choices=TYPES, default="F32")
    ap.add_argument("--shape", choices=list(SHAPES), default="tiny")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--dequant-f32", action="store_true")
    ap.add_argument("--version", type=int, choices=(2, 3), default=3)
    ap.add_argument("--alignment", type=int, default=32)
    ap.add_argument("--context-length", type=int, default=0, help="default: the shape's")
    ap.add_argument("--head-dim", type=int, default=0, help="default: the shape's, else n_embd / n_head")
    ap.add_argument("--rope-scaling", choices=("none", "linear", "llama3", "longrope", "yarn"), default="none")
    ap.add_argument("--rope-factor", type=float, default=8.0)
    ap.add_argument("--rope-low-freq-factor", type=float, default=1.0)
    ap.add_argument("--rope-high-freq-factor", type=float, default=4.0)
    ap.add_argument("--rope-original-context", type=int, default=8192)
    ap.add_argument("--rope-dim", type=int, default=0,
                    help="phi3, gptneox, phi2, stablelm: rope.dimension_count (default 3/4, 1/4, 1/2, 1/4 of the head)")
    ap.add_argument("--qk-norm", action="store_true", help="stablelm: per-head Q/K LayerNorm weights")
    ap.add_argument("--parallel-residual", action="store_true",
                    help="stablelm: no ffn_norm (the FFN reads the attention's input norm), use_parallel_residual true")
    ap.add_argument("--rope-attn-factor", type=float, default=None, help="phi3 longrope: attn_factor")
    ap.add_argument("--sliding-window", type=int, default=None,
                    help="phi3, gemma2, gemma3, olmo2: attention.sliding_window")
    ap.add_argument("--swa-pattern", type=int, default=None, help="gemma2/3, olmo2: attention.sliding_window_pattern")
    ap.add_argument("--rope-base-swa", type=float, default=None, help="gemma2/3, olmo2: rope.freq_base_swa")
    ap.add_argument("--attn-softcap", type=float, default=None, help="gemma2: attn_logit_softcapping")
    ap.add_argument("--final-softcap", type=float, default=None, help="gemma2/3: final_logit_softcapping")
    ap.add_argument("--layers", type=int, default=0, help="block count (default: the shape's)")
    ap.add_argument("--yarn-beta-fast", type=float, default=None, help="mistral3 yarn: rope.scaling.yarn_beta_fast")
    ap.add_argument("--yarn-beta-slow", type=float, default=None, help="mistral3 yarn: rope.scaling.yarn_beta_slow")
    ap.add_argument("--yarn-log-mul", type=float, default=None, help="mistral3: rope.scaling.yarn_log_multiplier")
    ap.add_argument("--attn-temperature-scale", type=float, default=None,
                    help="mistral3: attention.temperature_scale")
    for key in ("embedding", "residual", "attention", "logit"):
        ap.add_argument("--%s-scale" % key, type=float, default=None, help="granite: %s scale" % key)
    ap.add_argument("--experts", type=int, default=0,
                    help="qwen3moe (default 8), llama (Mixtral when given): expert_count")
    ap.add_argument("--experts-used", type=int, default=0, help="expert_used_count (default 2)")
    ap.add_argument("--expert-ff", type=int, default=0,
                    help="width of an expert's FFN (default 256): qwen3moe's expert_feed_forward_length, "
                         "llama's feed_forward_length")
    ap.add_argument("--vocab-from", default=None,
                    help="GGUF whose tokenizer.* keys are copied; the vocab size becomes its token count "
                         "(default: stories260K.gguf's for the 512-token shapes, else a synthetic vocab)")
    synthetic_hybrid.add_arguments(ap)
    synthetic_gemma4.add_gemma4_options(ap)
    ap.add_argument("--out", required=True)
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.rope_scaling == "llama3" and args.arch != "llama":
        ap.error("--rope-scaling llama3 needs --arch llama (llama.cpp reads rope_freqs.weight only there)")
    if (args.rope_scaling == "longrope") != (args.arch == "phi3" and args.rope_scaling != "none"):
        ap.error("--rope-scaling longrope is phi3's (and phi3 takes no other scaling here)")
    if args.arch not in PARTIAL_ROTARY_ARCHS and args.rope_dim:
        ap.error("--rope-dim is an option of " + ", ".join(PARTIAL_ROTARY_ARCHS))
    if args.arch != "phi3" and args.rope_attn_factor is not None:
        ap.error("--rope-attn-factor is a phi3 option")
    if args.arch != "stablelm" and (args.qk_norm or args.parallel_residual):
        ap.error("--qk-norm and --parallel-residual are stablelm options")
    if args.arch in LAYERNORM_ARCHS and args.rope_scaling != "none":
        ap.error("no rope scaling for " + args.arch)
    windowed = ("phi3", "gemma2", "gemma3", "olmo2", "gpt-oss", "gemma4")
    if args.arch not in windowed and args.sliding_window is not None:
        ap.error("--sliding-window is an option of " + ", ".join(windowed))
    if args.arch not in windowed[1:4] and (args.swa_pattern is not None or args.rope_base_swa is not None or
                                          args.attn_softcap is not None or args.final_softcap is not None):
        ap.error("--swa-pattern, --rope-base-swa, --attn-softcap and --final-softcap are gemma2/3 and olmo2 options")
    if args.rope_scaling != "none" and not args.rope_factor > 0:
        ap.error("--rope-factor must be positive")
    granite_scales = (args.embedding_scale, args.residual_scale, args.attention_scale, args.logit_scale)
    if args.arch not in ("granite", "granitehybrid") and any(v is not None for v in granite_scales):
        ap.error("--embedding-scale, --residual-scale, --attention-scale and --logit-scale are granite(hybrid) options")
    if args.arch == "granite" and args.logit_scale is None:
        ap.error("granite needs --logit-scale (llama.cpp requires granite.logit_scale)")
    mistral3_keys = (args.yarn_beta_fast, args.yarn_beta_slow, args.yarn_log_mul, args.attn_temperature_scale)
    if args.arch != "mistral3" and any(v is not None for v in mistral3_keys):
        ap.error("--yarn-beta-fast, --yarn-beta-slow, --yarn-log-mul and --attn-temperature-scale are mistral3 "
                 "options (llama.cpp reads those keys only there)")
    if (args.yarn_beta_fast is not None or args.yarn_beta_slow is not None) and args.rope_scaling != "yarn":
        ap.error("--yarn-beta-fast / --yarn-beta-slow need --rope-scaling yarn")
    moe = ARCH_DEFAULTS[args.arch].get("moe") or (args.arch == "llama" and args.experts)
    if args.arch == "gpt-oss" and args.sliding_window is None:
        ap.error("gpt-oss needs --sliding-window (llama.cpp requires gpt-oss.attention.sliding_window)")
    if args.type == "MXFP4_MOE" and not moe:
        ap.error("--type MXFP4_MOE is for mixture-of-experts models")
    if not moe and (args.experts or args.experts_used or args.expert_ff):
        ap.error("--experts, --experts-used and --expert-ff are options of qwen3moe, qwen35moe and llama (Mixtral)")
    moe_defaults = SHAPES[args.shape].get("moe", (8, 2, 256))
    if moe and not 0 < (args.experts_used or moe_defaults[1]) <= (args.experts or moe_defaults[0]):
        ap.error("--experts-used must be in 1..--experts")
    synthetic_hybrid.check_arguments(ap, args)
    synthetic_gemma4.check_gemma4_options(ap, args)
    t0 = time.time()
    w, hist, tok = build(args)
    tmp = args.out + ".tmp"
    size = w.write(tmp)
    os.replace(tmp, args.out)
    if not args.quiet:
        print("wrote %s: %d bytes, %d tensors %s, tokenizer %s, %.2fs"
              % (args.out, size, len(w.tensors), hist, tok, time.time() - t0))


if __name__ == "__main__":
    main()
