"""make_synthetic_model.py --arch gemma4: a random-weight Gemma 4 text model as llama.cpp's
converter writes one (conversion/gemma.py, Gemma4Model) and its graph reads it
(src/models/gemma4.cpp). Kept apart from make_synthetic_model.py, which calls build_gemma4().

What the tiny file holds (--shape tiny: n_embd 256, 4 query heads, FFN 512, stories260K's vocab):
* 6 layers (--layers), of every --gemma4-swa-period (default 2) layers the last global: with
  the defaults layers 0, 2, 4 slide over --sliding-window positions (default 4), 1, 3, 5 are
  global. gemma4.attention.sliding_window_pattern is a per-layer bool array, as the converter
  writes it.
* Local layers: heads of 64 (attention.key_length_swa / value_length_swa), 2 KV heads, NEOX
  rotary over all 64 (rope.dimension_count_swa), base 1e4 (rope.freq_base_swa). Global layers:
  heads of --head-dim (default 128; attention.key_length / value_length), 1 KV head
  (head_count_kv is a per-layer array), rotary "proportional": rope.dimension_count = the head
  size and rope_freqs.weight (head/2 pairs: 1 for the first quarter of the pairs, 1e30 for the
  rest, so those do not turn), base 1e6.
* KV sharing: the last --gemma4-shared-kv layers (default 2; gemma4.attention.shared_kv_layers)
  compute no keys or values; llama.cpp gives a local one the cache of layer
  n_layer - shared - 2 and a global one that of n_layer - shared - 1 (the pattern must make
  those local and global). Their attn_k / attn_k_norm / attn_v are in the file all the same
  (checkpoints have them; llama.cpp loads and ignores them); their FFN is twice as wide
  (feed_forward_length is a per-layer array: use_double_wide_mlp).
* Attention: per-head Q and K RMSNorm with weights (scaled so that, with llama.cpp's score
  scale 1, scores have a std near 1.5), values RMS-normalized without weight; the last global
  layer that has its own KV has no attn_v (llama.cpp then uses the raw K projection as V).
* Per-layer embeddings (--gemma4-per-layer N, default 256; 0: none): per_layer_token_embd
  [N * n_layer, vocab], per_layer_model_proj [n_embd, N * n_layer] (always F32: llama-quantize
  keeps it), per_layer_proj_norm [N], and per block inp_gate [n_embd, N], proj [N, n_embd],
  post_norm [n_embd].
* blk.N.layer_output_scale.weight: one value per layer (in [0.6, 1.4]).
* Tied output (no output.weight), no final_logit_softcapping key: llama.cpp's default 30 applies.
Quantized mixes as llama-quantize makes them (tools/oracle/nlc_quantize.py on the F32 file gives
the same type for every tensor): attn_v's use_more_bits counts attn_v tensors (i_attention_wv /
n_attention_wv), per_layer_token_embd follows the tied token_embd's rule (Q6_K in Q4_K_M),
per_layer_model_proj and the 1-D tensors stay F32.
"""
import math
import zlib

import numpy as np

from gguf_writer import GGMLType, ValueType


def add_gemma4_options(ap):
    ap.add_argument("--gemma4-swa-period", type=int, default=2,
                    help="gemma4: of every N layers the last is global (default 2)")
    ap.add_argument("--gemma4-shared-kv", type=int, default=2,
                    help="gemma4: attention.shared_kv_layers, the last layers reading earlier layers' KV (default 2)")
    ap.add_argument("--gemma4-per-layer", type=int, default=256,
                    help="gemma4: embedding_length_per_layer_input (default 256, 0: no per-layer embeddings)")


def check_gemma4_options(ap, args):
    if args.arch != "gemma4":
        if (args.gemma4_swa_period, args.gemma4_shared_kv, args.gemma4_per_layer) != (2, 2, 256):
            ap.error("--gemma4-* options are for --arch gemma4")
        return
    if args.sliding_window is None:
        ap.error("gemma4 needs --sliding-window (llama.cpp requires gemma4.attention.sliding_window)")
    n_layer = args.layers or 6
    if args.gemma4_swa_period < 1 or not 0 <= args.gemma4_shared_kv <= n_layer - 2:
        ap.error("gemma4: --gemma4-swa-period must be >= 1 and --gemma4-shared-kv in 0..layers-2")
    swa = gemma4_swa_layers(n_layer, args.gemma4_swa_period)
    first_shared = n_layer - args.gemma4_shared_kv
    if args.gemma4_shared_kv and (swa[first_shared - 1] or not swa[first_shared - 2]):
        ap.error("gemma4: layer %d must be global and layer %d local (llama.cpp's KV sharing reads them)"
                 % (first_shared - 1, first_shared - 2))
    if args.gemma4_per_layer % 32:
        ap.error("gemma4: --gemma4-per-layer must be a multiple of 32")


def gemma4_swa_layers(n_layer, period):
    return [i % period < period - 1 for i in range(n_layer)]


def gemma4_shape(shape, args):
    """The tiny shape's sizes per layer type."""
    s = dict(shape)
    s["n_layer"] = args.layers or 6
    s["hd_swa"] = s["n_embd"] // s["n_head"]
    s["hd_full"] = args.head_dim or 2 * s["hd_swa"]
    s["kv_swa"], s["kv_full"] = 2, 1
    s["swa"] = gemma4_swa_layers(s["n_layer"], args.gemma4_swa_period)
    s["first_shared"] = s["n_layer"] - args.gemma4_shared_kv
    s["ff"] = [s["n_ff"] if i < s["first_shared"] else 2 * s["n_ff"] for i in range(s["n_layer"])]
    s["n_epl"] = args.gemma4_per_layer
    own_global = [i for i in range(s["first_shared"]) if not s["swa"][i]]
    s["no_v_layer"] = own_global[-1] if len(own_global) > 1 else -1
    return s


def gemma4_metadata(w, s, args):
    a = "gemma4."
    L = s["n_layer"]
    w.add_uint32(a + "context_length", s["n_ctx"])
    w.add_uint32(a + "embedding_length", s["n_embd"])
    w.add_uint32(a + "block_count", L)
    w.add_array(a + "feed_forward_length", s["ff"], ValueType.INT32)
    w.add_uint32(a + "attention.head_count", s["n_head"])
    w.add_array(a + "attention.head_count_kv", [s["kv_swa"] if x else s["kv_full"] for x in s["swa"]], ValueType.INT32)
    w.add_uint32(a + "attention.key_length", s["hd_full"])
    w.add_uint32(a + "attention.value_length", s["hd_full"])
    w.add_uint32(a + "attention.key_length_swa", s["hd_swa"])
    w.add_uint32(a + "attention.value_length_swa", s["hd_swa"])
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(a + "rope.freq_base", 1000000.0)
    w.add_float32(a + "rope.freq_base_swa", 10000.0)
    w.add_uint32(a + "rope.dimension_count", s["hd_full"])
    w.add_uint32(a + "rope.dimension_count_swa", s["hd_swa"])
    w.add_uint32(a + "attention.sliding_window", args.sliding_window)
    w.add_array(a + "attention.sliding_window_pattern", s["swa"], ValueType.BOOL)
    w.add_uint32(a + "attention.shared_kv_layers", L - s["first_shared"])
    w.add_uint32(a + "embedding_length_per_layer_input", s["n_epl"])


def gemma4_tensor_specs(s):
    """[(name, numpy shape, kind, layer)] in the converter's order (kinds: see gemma4_values)."""
    E, V, L, P = s["n_embd"], s["n_vocab"], s["n_layer"], s["n_epl"]
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    if P:
        specs += [("per_layer_token_embd.weight", (V, P * L), "ple_embd", -1),
                  ("per_layer_model_proj.weight", (P * L, E), "ple_model_proj", -1),
                  ("per_layer_proj_norm.weight", (P,), "norm", -1)]
    specs.append(("rope_freqs.weight", (s["hd_full"] // 2,), "rope_freqs", -1))
    for i in range(L):
        p = "blk.%d." % i
        hd = s["hd_swa"] if s["swa"][i] else s["hd_full"]
        kv = s["kv_swa"] if s["swa"][i] else s["kv_full"]
        specs += [(p + "attn_norm.weight", (E,), "norm", i),
                  (p + "attn_q.weight", (s["n_head"] * hd, E), "w", i),
                  (p + "attn_q_norm.weight", (hd,), "qk_norm", i),
                  (p + "attn_k.weight", (kv * hd, E), "w", i),
                  (p + "attn_k_norm.weight", (hd,), "qk_norm", i)]
        if i != s["no_v_layer"]:
            specs.append((p + "attn_v.weight", (kv * hd, E), "w", i))
        F = s["ff"][i]
        specs += [(p + "attn_output.weight", (E, s["n_head"] * hd), "w", i),
                  (p + "post_attention_norm.weight", (E,), "norm", i),
                  (p + "ffn_norm.weight", (E,), "norm", i),
                  (p + "ffn_gate.weight", (F, E), "w", i),
                  (p + "ffn_up.weight", (F, E), "w", i),
                  (p + "ffn_down.weight", (E, F), "wdown", i),
                  (p + "post_ffw_norm.weight", (E,), "norm", i)]
        if P:
            specs += [(p + "inp_gate.weight", (P, E), "w", i),
                      (p + "proj.weight", (E, P), "wproj", i),
                      (p + "post_norm.weight", (E,), "norm", i)]
        specs.append((p + "layer_output_scale.weight", (1,), "norm", i))
    specs.append(("output_norm.weight", (E,), "out_norm", -1))
    return specs


def gemma4_values(name, npshape, kind, s, seed, make_values):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    n = int(np.prod(npshape))
    if kind in ("embd", "norm", "out_norm"):
        return make_values(name, npshape, kind, s, seed, True)
    if kind == "rope_freqs":
        # the converter's "proportional" rope: partial_rotary_factor 0.25 of the pairs turn
        pairs = npshape[0]
        turning = int(2 * pairs * 0.25 / 2)
        return np.asarray([1.0] * turning + [1e30] * (pairs - turning), dtype=np.float32)
    if kind == "qk_norm":
        # llama.cpp scales the scores by 1: q.k of unit-rms heads has std ~ sqrt(head size) * w^2
        return (rng.uniform(0.6, 1.4, size=npshape) * math.sqrt(1.5 / math.sqrt(npshape[0]))).astype(np.float32)
    sigma = {"w": 1.0 / math.sqrt(npshape[-1]), "wdown": 1.0 / math.sqrt(npshape[-1]),
             "wproj": 1.0 / math.sqrt(npshape[-1]),
             # after llama.cpp's sqrt(n_embd_per_layer) the per-layer rows have unit rms
             "ple_embd": 1.0 / math.sqrt(s["n_epl"] or 1), "ple_model_proj": 1.0}[kind]
    x = rng.standard_normal(n, dtype=np.float32).reshape(npshape)
    x *= np.float32(sigma)
    return x


def build_gemma4(args, w, shape, m):
    """Writes the gemma4 keys and tensors into GGUFWriter w (general.* already written); m is
    make_synthetic_model (choose_type, make_values, add_tokenizer, quants). Returns (hist, tok)."""
    s = gemma4_shape(shape, args)
    s["head_dim"] = s["hd_swa"]
    gemma4_metadata(w, s, args)
    tok = m.add_tokenizer(w, s["n_vocab"], args.vocab_from or (m.DEFAULT_VOCAB if s["n_vocab"] == 512 else None))
    specs = gemma4_tensor_specs(s)
    n_attn_v = sum(1 for name, _, _, _ in specs if name.endswith("attn_v.weight"))
    i_attn_v = 0
    hist = {}
    for name, npshape, kind, layer in specs:
        dims = list(reversed(npshape))
        if len(npshape) == 1 or name == "per_layer_model_proj.weight":
            gt = GGMLType.F32
        elif name == "per_layer_token_embd.weight":  # llama-quantize: output-like, as the tied token_embd
            gt = m.choose_type("token_embd.weight", dims[0], args.type, s["n_layer"], True, layer)
        elif name.endswith("attn_v.weight"):  # llama.cpp counts attn_v tensors, not layers
            gt = m.choose_type(name, dims[0], args.type, n_attn_v, True, i_attn_v)
            i_attn_v += 1
        else:
            gt = m.choose_type(name, dims[0], args.type, s["n_layer"], True, layer)
        out_t = GGMLType.F32 if args.dequant_f32 else gt
        hist[gt.name] = hist.get(gt.name, 0) + 1

        def produce(name=name, npshape=npshape, kind=kind, gt=gt):
            x = gemma4_values(name, npshape, kind, s, args.seed, m.make_values)
            raw = m.quants.quantize(x, gt)
            if args.dequant_f32:
                return m.quants.dequantize(raw, gt).astype("<f4").view(np.uint8)
            return raw
        w.add_tensor(name, dims, out_t, produce)
    return hist, tok
