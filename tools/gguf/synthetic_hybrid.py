"""Hybrid recurrent architectures for make_synthetic_model.py: lfm2, qwen35, qwen35moe, granitehybrid.

Each model mixes recurrent layers with attention layers, with llama.cpp's tensor names, shapes
and metadata keys (src/models/lfm2.cpp, qwen35.cpp + delta-net-base.cpp, granite-hybrid.cpp +
mamba-base.cpp, src/llama-arch.cpp; the keys as conversion/{lfm2,qwen,granite}.py write them).
Shapes are fixed per architecture (`--shape tiny`), n_embd 256 so the K-quants apply; qwen35 also
takes `--shape qwen3.5-0.8b` (SHAPES below, for benchmarks; see its comment):

lfm2 (LFM2): 6 layers "rrarar" (--layer-types: r = short-convolution layer, a = attention
    layer; the file says which by lfm2.attention.head_count_kv, an array with 0 for r layers),
    4 query / 2 KV heads of 64 with per-head Q/K RMSNorm (attn_q_norm / attn_k_norm), NEOX
    rotary over the whole head, base 1e6, eps 1e-5, SwiGLU FFN 512 in every layer,
    lfm2.shortconv.l_cache 3 (a causal depthwise convolution of 3 taps, so 2 columns of state).
    Short-convolution layer: blk.N.shortconv.in_proj [n_embd -> 3 n_embd] (rows B | C | x),
    blk.N.shortconv.conv (ggml dims [l_cache, n_embd], F32: llama-quantize never quantizes it),
    blk.N.shortconv.out_proj [n_embd -> n_embd]. The final norm is token_embd_norm.weight
    (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2: "fix for wrong tensor name"; it is applied after the
    last layer, not to the embeddings). Real LFM2 checkpoints tie the output to token_embd (--tied).
qwen35 (Qwen3.5 dense): 6 layers, qwen35.full_attention_interval 3 (layer i is a linear-attention
    layer unless (i + 1) % 3 == 0: layers 2 and 5 are full attention; --full-attention-interval).
    Full attention: attn_q [n_embd -> 2 * 4 * 64] holding, per head, 64 query rows then 64 gate
    rows; attn_k / attn_v [n_embd -> 2 * 64]; per-head Q/K RMSNorm; partial IMROPE (interleaved
    multi-section) over rope.dimension_count 16 of the 64 dimensions (the converter writes
    head_dim * partial_rotary_factor 0.25) with rope.dimension_sections [3, 3, 2, 0]
    (proportional to Qwen3.5's [11, 11, 10, 0]; for text every rotated pair turns by the
    position); attention output times sigmoid(gate) before attn_output. Linear attention
    (gated delta net): qwen35.ssm.state_size 64 (key and value head size), ssm.group_count 2
    (key heads), ssm.time_step_rank 4 (value heads: 2 per key head), ssm.inner_size 256 (value
    width), ssm.conv_kernel 4; tensors attn_qkv [n_embd -> q 128 | k 128 | v 256], attn_gate (z)
    [n_embd -> 256], ssm_conv1d (ggml dims [4, 512], F32), ssm_dt.bias [4], ssm_a [4] (holding
    -exp(A_log), as the converter writes it), ssm_beta / ssm_alpha [n_embd -> 4], ssm_norm [64],
    ssm_out [256 -> n_embd]. Every layer: attn_norm, post_attention_norm (the FFN's input norm),
    SwiGLU FFN 512. Rope base 1e7, eps 1e-6, untied.
qwen35moe (Qwen3.5 mixture of experts, llama.cpp's qwen35moe.cpp): qwen35's layers and keys (tiny
    shape only), and in every layer a mixture-of-experts FFN instead of the dense one: the router
    ffn_gate_inp [n_embd -> n_expert] (F32, as the converter writes it and llama-quantize leaves
    it), experts ffn_gate_exps / ffn_up_exps (ggml dims [n_embd, n_ff_exp, n_expert]) and
    ffn_down_exps ([n_ff_exp, n_embd, n_expert]) (separate, not the fused ffn_gate_up_exps), and
    a shared expert ffn_gate_shexp / ffn_up_shexp [n_embd -> n_ff_shexp], ffn_down_shexp
    [n_ff_shexp -> n_embd] whose output is scaled by sigmoid(ffn_gate_inp_shexp . h)
    (ffn_gate_inp_shexp: one vector of n_embd, F32). Keys expert_count (--experts, default 8),
    expert_used_count (--experts-used, default 2), expert_feed_forward_length (--expert-ff,
    default 128: not a multiple of 256, so llama-quantize stores ffn_down_exps as Q5_0 / Q8_0
    where its mix says Q4_K / Q6_K), expert_shared_feed_forward_length 256; feed_forward_length
    512 is written (the converter writes intermediate_size) but not read. llama.cpp's graph
    fixes the rest: softmax over all experts, top-k, the k weights divided by their sum (qwen35moe
    reads no expert_weights_scale / expert_weights_norm / gating key), the gated shared expert
    added to the routed sum. Quantized with llama_tensor_get_type's 8-expert rules (attn_qkv /
    attn_v / attn_k Q8_0, Q4_K_M attn_output Q5_K; ffn_down_exps and ffn_down_shexp are both its
    "ffn_down" category, by layer).
granitehybrid (Granite 4.0-H): 6 layers "rrarra" (--layer-types; r = Mamba-2 layer, attention
    where granitehybrid.attention.head_count_kv is non-zero), attention 4 query / 2 KV heads of
    64, no rotary (granitehybrid.rope.scaling.finetuned false, as the converter writes for the
    hybrid Granite 4.0 checkpoints: NoPE), Mamba-2: ssm.inner_size 512 (= 2 n_embd, the only
    expansion llama.cpp accepts), ssm.state_size 64, ssm.group_count 2, ssm.time_step_rank 8
    (heads of 64), ssm.conv_kernel 4; tensors ssm_in [n_embd -> z 512 | xBC 512 + 2*2*64 | dt 8]
    (= 1288 rows), ssm_conv1d weight (ggml dims [4, 768]) and bias [768], ssm_dt.bias [8], ssm_a
    and ssm_d (ggml dims [1, 8]; no ".weight" suffix, so never quantized; ssm_a = -exp(A_log)),
    ssm_norm (ggml dims [256, 2]: a grouped RMSNorm weight), ssm_out [512 -> n_embd]; SwiGLU FFN
    512 in every layer, eps 1e-5, untied. Granite's --embedding-scale, --residual-scale,
    --attention-scale, --logit-scale are written when given (each optional for llama.cpp here).

Random values: the projections as make_model's llama tensors (unit-variance outputs for unit-RMS
inputs); convolution weights N(0, 1/taps) (plus N(0, 0.1^2) bias for Mamba-2); decay
parameters in the ranges of the checkpoints' initialisation: A = exp(A_log) uniform in [1, 16],
dt_bias the inverse softplus of a dt log-uniform in [0.001, 0.1], so a step multiplies the state
by exp(-A softplus(dt_raw + dt_bias)) between ~0.2 and ~0.999; Mamba-2's D uniform in [0.5, 1.5].
Quantization follows llama_tensor_get_type: attn_v / attn_qkv counted over the tensors of that
category in file order (not by layer: the attention layers of lfm2 / granitehybrid are numbered
among themselves, qwen35's attn_qkv and attn_v share one count); conv weights, norms, 1-D
tensors and ssm_a / ssm_d stay F32.
"""
import math
import zlib

import numpy as np

ARCHS = ("lfm2", "qwen35", "qwen35moe", "granitehybrid")
QWEN35_ARCHS = ("qwen35", "qwen35moe")
# rows for make_synthetic_model.ARCH_DEFAULTS (its argument checks read them)
ARCH_DEFAULTS = {
    "lfm2": dict(rope_base=1000000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=True),
    "qwen35": dict(rope_base=10000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True),
    "qwen35moe": dict(rope_base=10000000.0, rms_eps=1e-6, qkv_bias=False, qk_norm=True, moe=True),
    "granitehybrid": dict(rope_base=10000.0, rms_eps=1e-5, qkv_bias=False, qk_norm=False),
}
SHAPE = dict(n_embd=256, n_layer=6, n_head=4, n_head_kv=2, head_dim=64, n_ff=512, n_vocab=512, n_ctx=1024)
DEFAULT_LAYER_TYPES = {"lfm2": "rrarar", "granitehybrid": "rrarra"}
LFM2_L_CACHE = 3
QWEN35 = dict(d_conv=4, d_state=64, n_group=2, n_v_heads=4, n_rot=16, sections=[3, 3, 2, 0], interval=3)
# Named real-model shapes (make_synthetic_model.py adds them to its --shape choices). Qwen3.5-0.8B
# (its config.json: hidden 1024, 24 layers, full_attention_interval 4, 8 query / 2 KV heads of 256,
# partial_rotary_factor 0.25 -> 64 rotated dims, mrope_section [11, 11, 10], linear attention with
# 16 key heads and 16 value heads of 128, conv kernel 4, intermediate 3584, vocab 248320, tied
# embeddings; llama.cpp's qwen35.cpp calls 24 layers of n_embd 1024 LLM_TYPE_0_8B). The real
# context is 262144; n_ctx here is what the file says when --context-length is not given. Random
# weights, a synthetic SentencePiece-style vocabulary of that size (no tokenizer is copied).
SHAPES = {
    "qwen3.5-0.8b": dict(n_embd=1024, n_layer=24, n_head=8, n_head_kv=2, head_dim=256, n_ff=3584, n_vocab=248320,
                         n_ctx=262144, tied=True,
                         qwen35=dict(d_conv=4, d_state=128, n_group=16, n_v_heads=16, n_rot=64,
                                     sections=[11, 11, 10, 0], interval=4)),
}
MAMBA2 = dict(d_conv=4, d_state=64, n_group=2, n_head=8)
QWEN35MOE = dict(n_expert=8, n_expert_used=2, n_ff_exp=128, n_ff_shexp=256)


def add_arguments(ap):
    ap.add_argument("--layer-types", default=None,
                    help="lfm2, granitehybrid: one letter per layer, r (recurrent) or a (attention); "
                         "default rrarar (lfm2), rrarra (granitehybrid)")
    ap.add_argument("--full-attention-interval", type=int, default=None,
                    help="qwen35, qwen35moe: <arch>.full_attention_interval (default 3)")


def check_arguments(ap, args):
    if args.shape in SHAPES and args.arch != "qwen35":
        ap.error("--shape %s is a qwen35 shape" % args.shape)
    if args.arch not in ARCHS:
        if args.layer_types is not None or args.full_attention_interval is not None:
            ap.error("--layer-types and --full-attention-interval are options of " + ", ".join(ARCHS))
        return
    if args.shape not in ("tiny",) + tuple(SHAPES) or args.head_dim or args.vocab_from or \
            args.rope_scaling != "none":
        ap.error("%s: only --shape tiny%s, without --head-dim, --vocab-from or rope scaling"
                 % (args.arch, " or " + " / ".join(SHAPES) if args.arch == "qwen35" else ""))
    if args.type not in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K",
                         "Q6_K", "Q4_K_M", "Q5_K_M"):
        ap.error("%s: --type %s is not written for hybrid models" % (args.arch, args.type))
    if args.arch in QWEN35_ARCHS:
        if args.layer_types is not None:
            ap.error("%s takes --full-attention-interval, not --layer-types" % args.arch)
    else:
        if args.full_attention_interval is not None:
            ap.error("--full-attention-interval is an option of " + ", ".join(QWEN35_ARCHS))
        types = layer_types(args)
        if set(types) - set("ra") or "a" not in types or "r" not in types:
            ap.error("--layer-types: letters r and a only, at least one of each")
        if args.layers and args.layers != len(types):
            ap.error("--layers must equal the length of --layer-types")


def shape_of(args):
    """The shape dict: SHAPE for tiny (QWEN35 its qwen35 part), else SHAPES[--shape]."""
    shape = dict(SHAPES[args.shape]) if args.shape in SHAPES else dict(SHAPE)
    shape.setdefault("qwen35", QWEN35)
    return shape


def layer_types(args):
    """'r' / 'a' per layer."""
    if args.arch in QWEN35_ARCHS:
        shape = shape_of(args)
        n = args.layers or shape["n_layer"]
        interval = args.full_attention_interval or shape["qwen35"]["interval"]
        return "".join("r" if (i + 1) % interval else "a" for i in range(n))
    return args.layer_types or (DEFAULT_LAYER_TYPES[args.arch] if not args.layers else
                                (DEFAULT_LAYER_TYPES[args.arch] * args.layers)[:args.layers])


def _attention_specs(p, i, s, arch):
    """(name, numpy shape, kind, layer) of one attention layer's projections and norms."""
    E, hd = s["n_embd"], s["head_dim"]
    q_out, kv_out = s["n_head"] * hd, s["n_head_kv"] * hd
    if arch in QWEN35_ARCHS:  # per head: hd query rows then hd gate rows
        q_spec = (p + "attn_q.weight", (2 * q_out, E), "wq_gate", i)
    else:
        q_spec = (p + "attn_q.weight", (q_out, E), "wq", i)
    specs = [q_spec, (p + "attn_k.weight", (kv_out, E), "wk", i), (p + "attn_v.weight", (kv_out, E), "wv", i),
             (p + "attn_output.weight", (E, q_out), "wo", i)]
    if arch in ("lfm2",) + QWEN35_ARCHS:
        specs += [(p + "attn_q_norm.weight", (hd,), "norm", i), (p + "attn_k_norm.weight", (hd,), "norm", i)]
    return specs


def _moe_specs(p, i, s):
    """qwen35moe's FFN: router, experts stacked in 3-D tensors, the gated shared expert."""
    E, X, FX, FS = s["n_embd"], s["n_expert"], s["n_ff_exp"], s["n_ff_shexp"]
    return [(p + "ffn_gate_inp.weight", (X, E), "wgate_inp", i),
            (p + "ffn_gate_exps.weight", (X, FX, E), "wgate", i),
            (p + "ffn_up_exps.weight", (X, FX, E), "wup", i),
            (p + "ffn_down_exps.weight", (X, E, FX), "wdown_exps", i),
            (p + "ffn_gate_inp_shexp.weight", (E,), "wgate_inp_shexp", i),
            (p + "ffn_gate_shexp.weight", (FS, E), "wgate", i),
            (p + "ffn_up_shexp.weight", (FS, E), "wup", i),
            (p + "ffn_down_shexp.weight", (E, FS), "wdown_shexp", i)]


def tensor_specs(s, arch, types, tied):
    E, F, V = s["n_embd"], s["n_ff"], s["n_vocab"]
    specs = [("token_embd.weight", (V, E), "embd", -1)]
    for i, t in enumerate(types):
        p = "blk.%d." % i
        specs.append((p + "attn_norm.weight", (E,), "norm", i))
        if t == "a":
            specs += _attention_specs(p, i, s, arch)
        elif arch == "lfm2":
            specs += [(p + "shortconv.in_proj.weight", (3 * E, E), "wup", i),
                      (p + "shortconv.conv.weight", (E, LFM2_L_CACHE), "conv", i),
                      (p + "shortconv.out_proj.weight", (E, E), "wo", i)]
        elif arch in QWEN35_ARCHS:
            q = s["qwen35"]
            key_dim, value_dim = q["d_state"] * q["n_group"], q["d_state"] * q["n_v_heads"]
            specs += [(p + "attn_qkv.weight", (2 * key_dim + value_dim, E), "wup", i),
                      (p + "attn_gate.weight", (value_dim, E), "wup", i),
                      (p + "ssm_conv1d.weight", (2 * key_dim + value_dim, q["d_conv"]), "conv", i),
                      (p + "ssm_dt.bias", (q["n_v_heads"],), "dt_bias", i),
                      (p + "ssm_a", (q["n_v_heads"],), "ssm_a", i),
                      (p + "ssm_beta.weight", (q["n_v_heads"], E), "wup", i),
                      (p + "ssm_alpha.weight", (q["n_v_heads"], E), "walpha", i),
                      (p + "ssm_norm.weight", (q["d_state"],), "norm", i),
                      (p + "ssm_out.weight", (E, value_dim), "wssm_out", i)]
        else:  # granitehybrid: Mamba-2
            m = MAMBA2
            d_inner = 2 * E
            channels = d_inner + 2 * m["n_group"] * m["d_state"]
            specs += [(p + "ssm_in.weight", (d_inner + channels + m["n_head"], E), "wssm_in", i),
                      (p + "ssm_conv1d.weight", (channels, m["d_conv"]), "conv", i),
                      (p + "ssm_conv1d.bias", (channels,), "conv_bias", i),
                      (p + "ssm_dt.bias", (m["n_head"],), "dt_bias", i),
                      (p + "ssm_a", (m["n_head"], 1), "ssm_a", i),
                      (p + "ssm_d", (m["n_head"], 1), "ssm_d", i),
                      (p + "ssm_norm.weight", (m["n_group"], d_inner // m["n_group"]), "norm", i),
                      (p + "ssm_out.weight", (E, d_inner), "wssm_out", i)]
        if arch in QWEN35_ARCHS:
            specs.append((p + "post_attention_norm.weight", (E,), "norm", i))
        else:
            specs.append((p + "ffn_norm.weight", (E,), "norm", i))
        if arch == "qwen35moe":
            specs += _moe_specs(p, i, s)
        else:
            specs += [(p + "ffn_gate.weight", (F, E), "wgate", i), (p + "ffn_up.weight", (F, E), "wup", i),
                      (p + "ffn_down.weight", (E, F), "wdown", i)]
    specs.append(("token_embd_norm.weight" if arch == "lfm2" else "output_norm.weight", (E,), "out_norm", -1))
    if not tied:
        specs.append(("output.weight", (V, E), "out", -1))
    return specs


def make_values(base, name, npshape, kind, shape, seed, tied):
    """float32 values of one tensor: the hybrid kinds here, the others as make_synthetic_model's."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    E = shape["n_embd"]
    n = int(np.prod(npshape))
    if kind == "conv":  # taps in the last numpy axis: output ~ unit variance for unit inputs
        return (rng.standard_normal(n, dtype=np.float32) * np.float32(1.0 / math.sqrt(npshape[-1]))).reshape(npshape)
    if kind == "conv_bias":
        return rng.standard_normal(n, dtype=np.float32).reshape(npshape) * np.float32(0.1)
    if kind == "dt_bias":
        # the inverse softplus of dt, dt log-uniform in [0.001, 0.1] (Mamba's dt initialisation)
        dt = np.exp(rng.uniform(math.log(0.001), math.log(0.1), size=npshape))
        return (dt + np.log(-np.expm1(-dt))).astype(np.float32)
    if kind == "ssm_a":  # -exp(A_log) with A_log = log(uniform [1, 16]) (as the converter stores it)
        return (-rng.uniform(1.0, 16.0, size=npshape)).astype(np.float32)
    if kind == "ssm_d":
        return rng.uniform(0.5, 1.5, size=npshape).astype(np.float32)
    if kind in ("wgate_inp_shexp", "wdown_shexp"):
        # the shared expert's gate logit ~ N(0, 1) for unit-rms inputs (sigmoid mostly between
        # ~0.1 and ~0.9); its down projection scaled by its own width
        x = rng.standard_normal(n, dtype=np.float32).reshape(npshape)
        return x * np.float32(1.0 / math.sqrt(E if kind == "wgate_inp_shexp" else npshape[1]))
    if kind in ("walpha", "wssm_out", "wq_gate", "wssm_in"):
        x = rng.standard_normal(n, dtype=np.float32).reshape(npshape)
        if kind == "walpha":  # alpha = x.w ~ N(0, 0.5^2): the decay varies around dt_bias's
            x *= np.float32(0.5 / math.sqrt(E))
        elif kind == "wssm_out":
            x *= np.float32(1.0 / math.sqrt(npshape[1]))
        elif kind == "wq_gate":  # query rows like wq, gate rows unit variance
            hd = shape["head_dim"]
            x = x.reshape(-1, 2, hd, E)
            x[:, 0] *= np.float32(math.sqrt(1.5 / E))
            x[:, 1] *= np.float32(1.0 / math.sqrt(E))
            x = x.reshape(npshape)
        else:  # ssm_in: z and xBC rows unit variance, the dt rows N(0, 0.5^2) like alpha
            x *= np.float32(1.0 / math.sqrt(E))
            x[-MAMBA2["n_head"]:] *= np.float32(0.5)
        return x
    return base.make_values(name, npshape, kind, shape, seed, tied)


def tensor_type(base, name, npshape, ftype, n_layer, tied, layer, attn_v_index, n_attn_v, n_expert=0):
    """ggml type as llama-quantize chooses it (llama_tensor_get_type / tensor_allows_quantization)."""
    GGMLType = base.GGMLType
    if len(npshape) == 1 or not name.endswith("weight") or "ssm_conv1d" in name or "shortconv.conv" in name:
        return GGMLType.F32
    if name.endswith("attn_v.weight") or name.endswith("attn_qkv.weight"):
        # i_attention_wv / n_attention_wv: this tensor's place among the attn_v-like ones
        return base.choose_type(name, npshape[-1], ftype, n_attn_v, tied, attn_v_index, 1, n_expert)
    if name.endswith("ffn_down_shexp.weight"):  # llama-quantize's "ffn_down" category, by layer
        name = name.replace("ffn_down_shexp", "ffn_down")
    return base.choose_type(name, npshape[-1], ftype, n_layer, tied, layer, 1, n_expert)


def build(base, args):
    """The GGUFWriter of an lfm2 / qwen35 / qwen35moe / granitehybrid model (see the module docstring)."""
    arch = args.arch
    shape = shape_of(args)
    if args.context_length:
        shape["n_ctx"] = args.context_length
    types = layer_types(args)
    shape["n_layer"] = len(types)
    if arch == "qwen35moe":
        m = QWEN35MOE
        shape.update(n_expert=args.experts or m["n_expert"], n_expert_used=args.experts_used or m["n_expert_used"],
                     n_ff_exp=args.expert_ff or m["n_ff_exp"], n_ff_shexp=m["n_ff_shexp"])
    tied = args.tied or shape.get("tied", False)
    ad = ARCH_DEFAULTS[arch]
    E, hd = shape["n_embd"], shape["head_dim"]
    w = base.GGUFWriter(version=args.version, alignment=args.alignment, write_alignment_key=args.alignment != 32)
    w.add_string("general.architecture", arch)
    w.add_string("general.name", "synthetic-%s-%s-%s%s" % (arch, args.shape, args.type, "-tied" if tied else ""))
    w.add_string("general.description", "random weights, seed %d, tools/gguf/make_synthetic_model.py" % args.seed)
    w.add_uint32("general.file_type", 0 if args.dequant_f32 else base.FILE_TYPE[args.type])
    if args.type not in ("F32", "F16", "BF16") and not args.dequant_f32:
        w.add_uint32("general.quantization_version", 2)
    w.add_uint32(arch + ".vocab_size", shape["n_vocab"])
    w.add_uint32(arch + ".context_length", shape["n_ctx"])
    w.add_uint32(arch + ".embedding_length", E)
    w.add_uint32(arch + ".block_count", shape["n_layer"])
    w.add_uint32(arch + ".feed_forward_length", shape["n_ff"])
    w.add_uint32(arch + ".attention.head_count", shape["n_head"])
    if arch in QWEN35_ARCHS:
        w.add_uint32(arch + ".attention.head_count_kv", shape["n_head_kv"])
    else:  # 0 marks a recurrent layer (both converters write the per-layer array)
        w.add_array(arch + ".attention.head_count_kv",
                    [shape["n_head_kv"] if t == "a" else 0 for t in types], base.ValueType.INT32)
    w.add_float32(arch + ".attention.layer_norm_rms_epsilon", ad["rms_eps"])
    if arch != "granitehybrid":
        w.add_float32(arch + ".rope.freq_base", ad["rope_base"])
    if arch == "lfm2":
        w.add_uint32(arch + ".shortconv.l_cache", LFM2_L_CACHE)
    elif arch in QWEN35_ARCHS:
        q = shape["qwen35"]
        w.add_uint32(arch + ".attention.key_length", hd)
        w.add_uint32(arch + ".attention.value_length", hd)
        w.add_uint32(arch + ".ssm.conv_kernel", q["d_conv"])
        w.add_uint32(arch + ".ssm.state_size", q["d_state"])
        w.add_uint32(arch + ".ssm.group_count", q["n_group"])
        w.add_uint32(arch + ".ssm.time_step_rank", q["n_v_heads"])
        w.add_uint32(arch + ".ssm.inner_size", q["d_state"] * q["n_v_heads"])
        w.add_uint32(arch + ".full_attention_interval", args.full_attention_interval or q["interval"])
        w.add_uint32(arch + ".rope.dimension_count", q["n_rot"])
        w.add_array(arch + ".rope.dimension_sections", q["sections"], base.ValueType.INT32)
        if arch == "qwen35moe":  # as the converter's TextModel / Qwen2MoeModel write them
            w.add_uint32(arch + ".expert_count", shape["n_expert"])
            w.add_uint32(arch + ".expert_used_count", shape["n_expert_used"])
            w.add_uint32(arch + ".expert_feed_forward_length", shape["n_ff_exp"])
            w.add_uint32(arch + ".expert_shared_feed_forward_length", shape["n_ff_shexp"])
    else:
        m = MAMBA2
        for key, value in (("attention.scale", args.attention_scale), ("embedding_scale", args.embedding_scale),
                           ("residual_scale", args.residual_scale), ("logit_scale", args.logit_scale)):
            if value is not None:
                w.add_float32(arch + "." + key, value)
        w.add_uint32(arch + ".ssm.conv_kernel", m["d_conv"])
        w.add_uint32(arch + ".ssm.state_size", m["d_state"])
        w.add_uint32(arch + ".ssm.group_count", m["n_group"])
        w.add_uint32(arch + ".ssm.inner_size", 2 * E)
        w.add_uint32(arch + ".ssm.time_step_rank", m["n_head"])
        w.add_bool(arch + ".rope.scaling.finetuned", False)
    # the 512-token shape takes stories260K's vocabulary, a named shape a synthetic one of its size
    tok = base.add_tokenizer(w, shape["n_vocab"], None if args.shape in SHAPES else base.DEFAULT_VOCAB)

    specs = tensor_specs(shape, arch, types, tied)
    attn_v_names = [sp[0] for sp in specs if sp[0].endswith("attn_v.weight") or sp[0].endswith("attn_qkv.weight")]
    hist = {}
    for name, npshape, kind, layer in specs:
        dims = list(reversed(npshape))
        i_v = attn_v_names.index(name) if name in attn_v_names else -1
        gt = tensor_type(base, name, npshape, args.type, shape["n_layer"], tied, layer, i_v, len(attn_v_names),
                         shape.get("n_expert", 0))
        out_t = base.GGMLType.F32 if args.dequant_f32 else gt
        hist[gt.name] = hist.get(gt.name, 0) + 1

        def produce(name=name, npshape=npshape, kind=kind, gt=gt):
            x = make_values(base, name, npshape, kind, shape, args.seed, tied)
            raw = base.quants.quantize(x, gt)
            if args.dequant_f32:
                return base.quants.dequantize(raw, gt).astype("<f4").view(np.uint8)
            return raw
        w.add_tensor(name, dims, out_t, produce)
    return w, hist, tok
