#!/usr/bin/python3
"""Writes a small random-weight decoder-only LLM in the layout onnxruntime-genai's model builder
(builder.py) emits for Llama / Qwen2 / Phi-3 style models, for testing an importer of such graphs.

Usage: make_builder_style_model.py --out DIR [options]     (see --help)

DIR receives model.onnx (plus model.onnx.data with --external-data), genai_config.json in the
builder's format, and generator.json (this command line, so an oracle run can record it).
The output is a pure function of the arguments: numpy's PCG64 seeded with --seed, no timestamps,
so re-running gives byte-identical files.

Graph (names follow builder.py):
  Gather(embed_tokens) -> per layer: [Skip]SimplifiedLayerNormalization -> q/k/v MatMul (or one
  packed qkv MatMul) [+ bias Add] -> attention -> o_proj MatMul -> SkipSimplifiedLayerNormalization
  -> SwiGLU MLP (gate MatMul, Sigmoid, Mul, up MatMul, Mul, down MatMul) -> ... final
  SkipSimplifiedLayerNormalization -> lm_head MatMul -> logits.
Attention kinds:
  ms-attention  onnxruntime.transformers' GPT-2 form: com.microsoft Attention(input, weight [hidden, 3 * hidden],
              bias [3 * hidden], mask_index (attention_mask Cast to int32), past_N) -> (output, present_N), the
              cache [2, batch, heads, seq, head] (keys and values stacked), unidirectional=1, no rotary (no
              position information at all: a test of the attention and its cache, not a language model).
  gqa-rotary  com.microsoft GroupQueryAttention, do_rotary=1, cos_cache/sin_cache inputs;
              seqlens_k / total_sequence_length from attention_mask; no position_ids input.
  gqa         com.microsoft RotaryEmbedding on q and k (position_ids input), then
              GroupQueryAttention with do_rotary=0.
  mha         com.microsoft RotaryEmbedding on q and k, MultiHeadAttention with the builder's 4-D
              attention_bias (causal + padding) subgraph built from attention_mask. Its causal part
              is [seq, seq] Expanded to [seq, past + seq], which ONNX Runtime refuses for several
              new tokens after a cached prefix; --mha-mask offset builds it [seq, past + seq]
              instead (query i sees keys 0 .. past + i), so that step runs.
  onnx23      the standard ONNX opset-23 operators instead of the com.microsoft ones, as a model
              exported with opset 23 has them (opset_import ai.onnx 23, ir_version 11; com.microsoft
              only for MatMulNBits): RMSNormalization(X, scale; axis=-1, epsilon, stash_type=1)
              for every norm, the residuals as explicit Add nodes (no Skip norm);
              RotaryEmbedding(X [batch, seq, heads*head], cos_cache, sin_cache, position_ids;
              interleaved, num_heads, rotary_embedding_dim) on q and k;
              Attention(Q, K, V [batch, seq, heads*head], attn_mask "", past_key, past_value
              [batch, kv_heads, past, head] -> Y, present_key, present_value [batch, kv_heads,
              past + seq, head]; q_num_heads, kv_num_heads, is_causal=1, scale). No attn_mask:
              opset 23 allows only one of attn_mask and is_causal, and the causal mask is offset by
              the past length (query i attends keys 0..past+i, as the ONNX reference
              implementation and ONNX Runtime do it), so the graph has no attention_mask input
              (inputs: input_ids, position_ids, past_key_values.N.key|value).

Forms of other model families (builder.py's, off by default):
  --qk-norm 3d|4d     Qwen3 / Gemma 3 per-head Q and K RMS norms before the rotary: Reshape_1 to
                      [0, -1, head_size] (3d, builder.py's make_qk_norm) or [0, 0, heads, head_size],
                      SimplifiedLayerNormalization with a [head_size] scale, Reshape_2 to [0, -1, heads * head_size].
  --norm-offset runtime  every norm scale stored as w and computed as Add(w, 1) in the graph (Gemma's
                      (1 + w), as builder.py's OffsetRMSNorm writes it); baked (default) stores 1 + w.
  --embed-scale       Gemma: the embedding rows times sqrt(hidden) (Mul by a scalar constant).
  --activation gelu-tanh|gelu  the MLP gate through com.microsoft FastGelu (gelu_pytorch_tanh) or Gelu
                      (erf), as builder.py's make_gelu, instead of SiLU.
  --norm layer        LayerNorm with a bias: LayerNormalization (first norm) and com.microsoft
                      SkipLayerNormalization(input, skip, gamma, beta) as onnxruntime.transformers fuses GPT-2's.
  --pad-head-size P   (gqa-rotary) each head padded from --head-size to P for GroupQueryAttention, as
                      one does for a head size the fused kernels refuse (ONNX Runtime's GQA wants
                      multiples of 16 with do_rotary): the q/k/v projections get zero columns after each
                      head's --head-size ones, the cache is [batch, kv_heads, seq, P], cos/sin_cache
                      cover the real rotary dims (so GQA rotates only those), scale stays
                      1/sqrt(--head-size); after the attention Reshape [0, 0, heads, P], Slice
                      [0, --head-size) on the last axis, Reshape [0, 0, heads * --head-size] into o_proj.
                      The random weights are drawn as without padding (same seed: same model).
Without them the output is byte-identical to what the generator wrote before they existed.

Weights: --precision's float type, or MatMulNBits with --bits 2 / 4 / 8 (2 bits: four elements
per byte, element k of a block in bits 2*(k%4) of byte k/4, as the contrib-op spec packs them), or
--bf16-weights: every float initializer but cos/sin_cache stored as bfloat16 and Cast to float32
where it is used (the embedding after its Gather), with float32 activations: ONNX Runtime's CPU
provider has no bfloat16 MatMul / normalization / attention kernels, so this is the form of a
bfloat16 checkpoint it runs.

Made with Debian's python3-onnx 1.12: the contrib ops are not known to its checker, so the model
is assembled with onnx.helper and not checked (1.12 has no opset-23 schemas either).
"""
import argparse
import json
import os
import re
import shlex
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS_DOMAIN = "com.microsoft"
OPSET = 14          # what builder.py targets for these models (ir_version 7)
IR_VERSION = 7
OPSET_ONNX23 = 23   # --attention onnx23: RMSNormalization / RotaryEmbedding / Attention (ONNX 1.18, ir_version 11)
IR_VERSION_ONNX23 = 11


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--attention", choices=["gqa-rotary", "gqa", "mha", "onnx23", "ms-attention"], default="gqa-rotary")
    p.add_argument("--packed-qkv", action="store_true",
                   help="one q|k|v MatMul feeding GroupQueryAttention's query (key/value left empty); gqa-rotary only")
    p.add_argument("--qkv-bias", action="store_true", help="Add a bias after the q/k/v projections (Qwen2)")
    p.add_argument("--rotary-interleaved", type=int, choices=[0, 1], default=0,
                   help="1: rotate adjacent pairs (GPT-J); 0: rotate the two halves (GPT-NeoX, builder's default)")
    p.add_argument("--rotary-dim", type=int, default=0, help="rotated dims per head; 0 = head size (partial rotary if less)")
    p.add_argument("--precision", choices=["fp32", "fp16"], default="fp32",
                   help="activations, graph inputs/outputs, KV cache and float weights")
    p.add_argument("--bits", type=int, choices=[0, 2, 4, 8], default=0,
                   help="0: float MatMul; 2, 4 or 8: com.microsoft MatMulNBits for every projection and lm_head")
    p.add_argument("--bf16-weights", action="store_true",
                   help="float initializers (not cos/sin_cache) as bfloat16, each Cast to float32 where used; "
                        "needs --precision fp32 and --bits 0")
    p.add_argument("--mha-mask", choices=["builder", "offset"], default="builder",
                   help="--attention mha: the builder's causal bias ([seq, seq] Expanded; no multi-token step "
                        "after a cached prefix) or one offset by the past length")
    p.add_argument("--block-size", type=int, choices=[16, 32, 64, 128], default=32)
    p.add_argument("--zero-points", action="store_true", help="asymmetric quantization with packed uint8 zero_points")
    p.add_argument("--accuracy-level", type=int, choices=[0, 1, 2, 3, 4], default=0,
                   help="MatMulNBits accuracy_level (4: the input may be quantized to int8)")
    p.add_argument("--flat-quant-params", action="store_true",
                   help="scales [N*k_blocks] and zero_points [N*zp_bytes_per_row] as onnxruntime's quantizer writes "
                        "them (default: the 2-D [N, ...] shapes of the operator spec)")
    p.add_argument("--external-data", action="store_true", help="initializers in model.onnx.data")
    p.add_argument("--model-type", default="llama", help="genai_config model.type (llama, qwen2, phi3, ...)")
    p.add_argument("--qk-norm", choices=["none", "3d", "4d", "dynamic"], default="none",
                   help="Qwen3 / Gemma 3 per-head Q and K RMS norms before the rotary: Reshape to [0, -1, head] (3d, "
                        "builder.py's form) or [0, 0, heads, head] (4d), SimplifiedLayerNormalization, Reshape back; "
                        "dynamic: the shapes computed from Shape(x) as torch.onnx.export writes view(b, s, heads, head) "
                        "(Shape, Gather, Unsqueeze, Concat)")
    p.add_argument("--norm-offset", choices=["baked", "runtime"], default="baked",
                   help="norm scales near 1: stored as 1 + w (baked) or as w with an Add of the constant 1 in the "
                        "graph (runtime: Gemma's (1 + w), as builder.py's OffsetRMSNorm writes it)")
    p.add_argument("--norm", choices=["rms", "layer", "rms-ops"], default="rms",
                   help="layer: LayerNorm with a bias (GPT-2 / Phi-2 style): LayerNormalization(X, gamma, beta) "
                        "for the first norm, com.microsoft SkipLayerNormalization(input, skip, gamma, beta) for the "
                        "others (onnxruntime.transformers' fused form); rms-ops: every RMS norm written out as torch.onnx.export "
                        "writes Hugging Face's (Pow(x, 2), ReduceMean(axes=[-1]), Add eps, Sqrt, Reciprocal, Mul x, Mul "
                        "weight), the residuals as explicit Adds")
    p.add_argument("--embed-layer-norm", action="store_true",
                   help="with --norm layer: learned positions and the first LayerNorm fused as onnxruntime.transformers "
                        "writes GPT-2's: com.microsoft EmbedLayerNormalization(input_ids int32, word and position "
                        "embeddings, gamma, beta, position_ids int32) -> normalized, embedding_sum")
    p.add_argument("--folded-final-norm", action="store_true",
                   help="the final norm's scale computed by a constant subgraph for an importer's constant folding: "
                        "w * Where(Less(Range(0, hidden, 1), hidden / 2), 1, 0.5) reached through ConstantOfShape, Equal, "
                        "Unsqueeze, Transpose, Expand, Slice (negative step), Squeeze, Cast, Sqrt, Pow, Div, Neg")
    p.add_argument("--embed-scale", action="store_true",
                   help="Gemma: the embedding rows multiplied by sqrt(hidden) (a Mul by a scalar constant)")
    p.add_argument("--activation", choices=["silu", "gelu-tanh", "gelu", "gelu-tanh-ops", "gelu-erf-ops",
                                                     "fast-gelu-bias", "bias-gelu"], default="silu",
                   help="MLP gate activation: SiLU (Sigmoid, Mul), gelu-tanh (com.microsoft FastGelu, Gemma's "
                        "gelu_pytorch_tanh) or gelu (com.microsoft Gelu, erf); -ops: written out in elementary operators as "
                        "torch.onnx.export writes them (tanh form: Pow(x, 3), Mul, Add, Tanh; erf form: Div, Erf, Add, Mul); "
                        "fast-gelu-bias / bias-gelu: the gate projection's bias given to com.microsoft "
                        "FastGelu(x, bias) / BiasGelu(x, bias)")
    p.add_argument("--local-window", type=int, default=-1,
                   help="GroupQueryAttention local_window_size on even layers (Gemma 2 / Mistral sliding windows); -1: off")
    p.add_argument("--pad-head-size", type=int, default=0,
                   help="gqa-rotary: pad each head to this size around GroupQueryAttention (0: no padding)")
    p.add_argument("--softcap", type=float, default=0.0, help="GroupQueryAttention softcap (Gemma 2); 0: off")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-size", type=int, default=16)
    p.add_argument("--ffn", type=int, default=128, help="MLP intermediate size")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--context-length", type=int, default=512, help="rows of cos_cache/sin_cache")
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--rms-eps", type=float, default=1e-6)
    p.add_argument("--bos", type=int, default=1)
    p.add_argument("--eos", type=int, default=2)
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    rotary_dim = a.rotary_dim or a.head_size
    if a.attention == "ms-attention" and (a.kv_heads != a.heads or a.qk_norm != "none" or a.packed_qkv or a.bits
                                          or a.precision != "fp32" or a.bf16_weights):
        p.error("--attention ms-attention: fp32, --kv-heads == --heads, no --qk-norm / --packed-qkv / --bits")
    if a.embed_layer_norm and (a.norm != "layer" or a.embed_scale or a.bf16_weights or a.precision != "fp32"):
        p.error("--embed-layer-norm needs --norm layer (fp32, no --embed-scale / --bf16-weights)")
    if a.norm == "layer" and (a.qk_norm != "none" or a.attention == "onnx23"):
        p.error("--norm layer goes with neither --qk-norm nor --attention onnx23")
    if a.qk_norm != "none" and a.packed_qkv:
        p.error("--qk-norm needs separate q/k/v projections (not --packed-qkv)")
    if a.packed_qkv and a.attention != "gqa-rotary":
        p.error("--packed-qkv needs --attention gqa-rotary (the builder only packs when attention does the rotary)")
    if a.attention == "mha" and a.kv_heads != a.heads:
        p.error("--attention mha needs --kv-heads == --heads (MultiHeadAttention has no grouped KV heads)")
    if a.heads % a.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
    if a.bf16_weights and (a.precision != "fp32" or a.bits):
        p.error("--bf16-weights needs --precision fp32 and --bits 0")
    if a.mha_mask != "builder" and a.attention != "mha":
        p.error("--mha-mask needs --attention mha")
    if rotary_dim % 2 or rotary_dim > a.head_size:
        p.error("--rotary-dim must be even and <= --head-size")
    if a.pad_head_size and (a.pad_head_size <= a.head_size or a.attention != "gqa-rotary" or a.packed_qkv
                            or a.qk_norm != "none"):
        p.error("--pad-head-size must exceed --head-size, with --attention gqa-rotary (no --packed-qkv / --qk-norm)")
    return a


class GraphBuilder:
    """Collects nodes and initializers; names follow builder.py (/model/layers.N/attn/q_proj/MatMul)."""

    def __init__(self, args):
        self.a = args
        self.rng = np.random.default_rng(args.seed)
        self.float_type = TensorProto.FLOAT16 if args.precision == "fp16" else TensorProto.FLOAT
        self.np_float = np.float16 if args.precision == "fp16" else np.float32
        self.nodes, self.initializers, self.constants = [], [], {}

    # ---- primitives ----------------------------------------------------------------------
    def node(self, op, name, inputs, outputs=None, domain="", **attrs):
        outputs = outputs or [f"{name}/output_0"]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, domain=domain or None, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def initializer(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, np_value):
        """One Constant node per distinct value, named like builder.py's /model/constants/...."""
        value = np.asarray(np_value)
        type_name = TensorProto.DataType.Name(numpy_helper.from_array(value).data_type)
        text = ", ".join(str(v) for v in value.reshape(-1).tolist())
        key = f"/model/constants/TensorProto.{type_name}/{value.ndim}D/{text}"
        if key not in self.constants:
            self.constants[key] = key
            self.nodes.append(helper.make_node("Constant", [], [key], name=key.replace("constants", "constant_nodes"),
                                               value=numpy_helper.from_array(value, key)))
        return key

    def float_weight(self, name, array):
        """A float initializer in the weight type; with --bf16-weights a bfloat16 one (float32 rounded
        to nearest even) and a Cast to float32, whose output is returned."""
        if not self.a.bf16_weights:
            return self.initializer(name, array.astype(self.np_float))
        self.initializers.append(bf16_tensor(name, array))
        return self.node("Cast", f"{name}/Cast", [name], to=TensorProto.FLOAT)

    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    # ---- layers ----------------------------------------------------------------------------
    def linear(self, name, x, weight, bias=None, output=None):
        """x @ weight (weight [K, N] float32) as MatMul or MatMulNBits, plus an optional bias Add."""
        layer = re.match(r"model\.layers\.(\d+)\.(.*)", name)    # model.layers.0.attn.q_proj -> /model/layers.0/attn/q_proj
        prefix = f"/model/layers.{layer[1]}/" + layer[2].replace(".", "/") if layer else "/" + name
        init_name = f"{name}.MatMul.weight"
        outputs = [output] if output and bias is None else None
        if self.a.bits:
            y = self.matmul_nbits(f"{prefix}/MatMul", x, init_name, weight, outputs)
        else:
            y = self.node("MatMul", f"{prefix}/MatMul", [x, self.float_weight(init_name, weight)], outputs)
        if bias is not None:
            bias_name = self.float_weight(f"{name}.Add.bias", bias)
            y = self.node("Add", f"{prefix}/Add", [y, bias_name], [output] if output else None)
        return y

    def matmul_nbits(self, node_name, x, init_name, weight, outputs):
        """MatMulNBits per the contrib-op spec: B [N, k_blocks, block_size*bits/8] uint8, element k of
        a block in byte k*bits/8 (4 bits: even k in the low nibble, odd k in the high nibble);
        scales [N, k_blocks]; zero_points uint8 [N, ceil(k_blocks*bits/8)] packed like B, default
        2^(bits-1) when absent. dequantized = (q - zero_point) * scale."""
        bits, block = self.a.bits, self.a.block_size
        k, n = weight.shape
        k_blocks = -(-k // block)
        # Pad K with zeros to whole blocks (as onnxruntime's quantizer does), blocks along K per column.
        w = np.zeros((n, k_blocks * block), np.float32)
        w[:, :k] = weight.T
        w = w.reshape(n, k_blocks, block)
        q_max = (1 << bits) - 1
        if self.a.zero_points:
            lo = np.minimum(w.min(axis=2), 0.0)
            hi = np.maximum(w.max(axis=2), 0.0)
            scale = (hi - lo) / q_max
            scale[scale == 0] = 1.0
            zero_point = np.clip(np.round(-lo / scale), 0, q_max).astype(np.uint8)
        else:
            scale = np.abs(w).max(axis=2) / (q_max >> 1)
            scale[scale == 0] = 1.0
            zero_point = np.full((n, k_blocks), 1 << (bits - 1), np.uint8)
        scale = scale.astype(self.np_float)     # the kernel dequantizes with the stored (rounded) scale
        q = np.clip(np.round(w / scale.astype(np.float32)[:, :, None]) + zero_point[:, :, None], 0, q_max)
        q = q.astype(np.uint8)
        if bits == 4:
            packed_b = q[:, :, 0::2] | (q[:, :, 1::2] << 4)
            zp_padded = np.zeros((n, k_blocks + (k_blocks & 1)), np.uint8)
            zp_padded[:, :k_blocks] = zero_point
            packed_zp = zp_padded[:, 0::2] | (zp_padded[:, 1::2] << 4)
        elif bits == 2:
            packed_b = q[:, :, 0::4] | (q[:, :, 1::4] << 2) | (q[:, :, 2::4] << 4) | (q[:, :, 3::4] << 6)
            zp_padded = np.zeros((n, -(-k_blocks // 4) * 4), np.uint8)
            zp_padded[:, :k_blocks] = zero_point
            packed_zp = (zp_padded[:, 0::4] | (zp_padded[:, 1::4] << 2) | (zp_padded[:, 2::4] << 4)
                         | (zp_padded[:, 3::4] << 6))
        else:
            packed_b, packed_zp = q, zero_point
        inputs = [x, self.initializer(f"{init_name}_Q{bits}", packed_b)]
        flat = self.a.flat_quant_params
        inputs.append(self.initializer(f"{init_name}_scales", scale.reshape(-1) if flat else scale))
        if self.a.zero_points:
            inputs.append(self.initializer(f"{init_name}_zero_points", packed_zp.reshape(-1) if flat else packed_zp))
        return self.node("MatMulNBits", node_name, inputs, outputs, domain=MS_DOMAIN,
                         K=k, N=n, bits=bits, block_size=block, accuracy_level=self.a.accuracy_level)

    def rotary_caches(self):
        """cos/sin [context_length, rotary_dim/2] of position * theta^(-2i/rotary_dim), float64 math."""
        dim = self.a.rotary_dim or self.a.head_size
        inv_freq = 1.0 / (self.a.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
        angles = np.outer(np.arange(self.a.context_length, dtype=np.float64), inv_freq)
        self.initializer("cos_cache", np.cos(angles).astype(self.np_float))
        self.initializer("sin_cache", np.sin(angles).astype(self.np_float))

    def gqa_mask_inputs(self):
        """builder.py's attn_mask_subgraph for GroupQueryAttention: seqlens_k = ReduceSum(mask, axis 1,
        keepdims) - 1 as int32 [batch, 1]; total_sequence_length = Shape(mask)[1] as int32 scalar."""
        base = "/model/attn_mask_reformat/attn_mask_subgraph"
        one = self.constant(np.array([1], np.int64))
        reduce_sum = self.node("ReduceSum", f"{base}/ReduceSum", ["attention_mask", one])
        sub = self.node("Sub", f"{base}/Sub", [reduce_sum, one])
        seqlens_k = self.node("Cast", f"{base}/Sub/Cast", [sub], to=TensorProto.INT32)
        shape = self.node("Shape", f"{base}/Shape", ["attention_mask"])
        total = self.node("Gather", f"{base}/Gather", [shape, self.constant(np.array(1, np.int64))], axis=0)
        total_i32 = self.node("Cast", f"{base}/Gather/Cast", [total], to=TensorProto.INT32)
        return seqlens_k, total_i32

    def mha_attention_bias(self):
        """builder.py's attn_mask_reformat subgraph for MultiHeadAttention: a [batch, 1, seq, total]
        additive bias = causal part (0 on/below the diagonal of the new tokens, float min above;
        built [1, 1, seq, seq] and Expanded to [batch, 1, seq, total], so it only broadcasts when
        past is empty or seq is 1, as in the builder) + padding part (float min where
        attention_mask is 0). --mha-mask offset: the causal part is built [seq, total] directly,
        row i allowing columns 0 .. past + i."""
        i64 = lambda v: self.constant(np.array(v, np.int64))
        f_min = np.finfo(self.np_float).min
        base = "/model/attn_mask_reformat"
        ids, msk = f"{base}/input_ids_subgraph", f"{base}/attn_mask_subgraph"

        past_shape = self.node("Shape", f"{base}/past_key_subgraph/Shape", ["past_key_values.0.key"])
        past_len = self.node("Gather", f"{base}/past_key_subgraph/Gather", [past_shape, i64(2)], axis=0)

        ids_shape_1 = self.node("Shape", f"{ids}/Shape_1", ["input_ids"])
        ids_shape_2 = self.node("Shape", f"{ids}/Shape_2", ["input_ids"])
        batch = self.node("Gather", f"{ids}/Gather_1", [ids_shape_1, i64(0)], axis=0)
        seq = self.node("Gather", f"{ids}/Gather_2", [ids_shape_2, i64(1)], axis=0)
        total = self.node("Add", f"{ids}/Add_1", [seq, past_len])
        total_1d = self.node("Unsqueeze", f"{ids}/Unsqueeze_3", [total, i64([0])])
        seq_1d_a = self.node("Unsqueeze", f"{ids}/Unsqueeze_4", [seq, i64([0])])
        seq_1d_b = self.node("Unsqueeze", f"{ids}/Unsqueeze_5", [seq, i64([0])])
        seq_1d_c = self.node("Unsqueeze", f"{ids}/Unsqueeze_6", [seq, i64([0])])
        offset = self.a.mha_mask == "offset"
        seq_seq = self.node("Concat", f"{ids}/Concat_2", [seq_1d_a, total_1d if offset else seq_1d_b], axis=0)
        min_fill = self.node("ConstantOfShape", f"{ids}/ConstantOfShape_2", [seq_seq],
                             value=numpy_helper.from_array(np.array([f_min], self.np_float)))
        # row index + 1 as a column [seq, 1], column index as a row: Less gives the causal lower triangle
        shape_4 = self.node("Shape", f"{ids}/Shape_4", [min_fill])
        last_dim = self.node("Slice", f"{ids}/Slice_1", [shape_4, i64([-1]), i64([np.iinfo(np.int64).max]), i64([0])])
        last_dim = self.node("Squeeze", f"{ids}/Squeeze_1", [last_dim, i64([0])])
        last_dim = self.node("Unsqueeze", f"{ids}/output_0", [last_dim, i64([0])])
        column_shape = self.node("Concat", f"{ids}/Concat_3", [last_dim, i64([1])], axis=0)
        shape_5 = self.node("Shape", f"{ids}/Shape_5", [min_fill])
        n = self.node("Slice", f"{ids}/Slice_2", [shape_5, i64([-1]), i64([np.iinfo(np.int64).max]), i64([0])])
        n = self.node("Squeeze", f"{ids}/Squeeze_2", [n, i64([0])])
        cols = self.node("Range", f"{ids}/Range", [i64(0), n, i64(1)])
        if offset:  # past + i + 1 for the new tokens' rows i, as a column [seq, 1]
            first = self.node("Add", f"{ids}/Add_3", [past_len, i64(1)])
            stop = self.node("Add", f"{ids}/Add_4", [total, i64(1)])
            rows_plus_1 = self.node("Range", f"{ids}/Range_1", [first, stop, i64(1)])
            column_shape = self.node("Concat", f"{ids}/Concat_4", [seq_1d_b, i64([1])], axis=0)
        else:
            rows_plus_1 = self.node("Add", f"{ids}/Add_2", [cols, i64(1)])
        rows_plus_1 = self.node("Reshape", f"{ids}/Reshape", [rows_plus_1, column_shape])
        lower = self.node("Less", f"{ids}/Less", [cols, rows_plus_1])
        causal = self.node("Where", f"{ids}/Where_2", [lower, self.constant(np.array(0, self.np_float)), min_fill])
        causal = self.node("Unsqueeze", f"{ids}/Unsqueeze_8", [causal, i64([0])])
        causal = self.node("Unsqueeze", f"{ids}/Unsqueeze_9", [causal, i64([1])])
        batch_1d = self.node("Unsqueeze", f"{ids}/Unsqueeze_1", [batch, i64([0])])
        seq_1d = self.node("Unsqueeze", f"{ids}/Unsqueeze_2", [seq, i64([0])])
        target = self.node("Concat", f"{ids}/Concat_1", [batch_1d, i64([1]), seq_1d, total_1d], axis=0)
        causal = self.node("Expand", f"{ids}/Expand", [causal, self.expand_shape(ids, target, "ConstantOfShape_1")])

        mask_4d = self.node("Unsqueeze", f"{msk}/Unsqueeze_3", ["attention_mask", i64([1])])
        mask_4d = self.node("Unsqueeze", f"{msk}/Unsqueeze_4", [mask_4d, i64([2])])
        mask_shape_1 = self.node("Shape", f"{msk}/Shape_1", ["attention_mask"])
        mask_shape_2 = self.node("Shape", f"{msk}/Shape_2", ["attention_mask"])
        mask_batch = self.node("Gather", f"{msk}/Gather_1", [mask_shape_1, i64(0)], axis=0)
        mask_total = self.node("Gather", f"{msk}/Gather_2", [mask_shape_2, i64(1)], axis=0)
        mask_batch = self.node("Unsqueeze", f"{msk}/Unsqueeze_1", [mask_batch, i64([0])])
        mask_total = self.node("Unsqueeze", f"{msk}/Unsqueeze_2", [mask_total, i64([0])])
        mask_target = self.node("Concat", f"{msk}/Concat", [mask_batch, i64([1]), seq_1d_c, mask_total], axis=0)
        mask_4d = self.node("Expand", f"{msk}/Expand", [mask_4d, self.expand_shape(msk, mask_target, "ConstantOfShape")])
        mask_f = self.node("Cast", f"{msk}/Cast_1", [mask_4d], to=self.float_type)
        inverted = self.node("Sub", f"{msk}/Sub", [self.constant(np.array(1, self.np_float)), mask_f])
        inverted_bool = self.node("Cast", f"{msk}/Cast_2", [inverted], to=TensorProto.BOOL)
        padding = self.node("Where", f"{msk}/Where_2",
                            [inverted_bool, self.constant(np.array(f_min, self.np_float)), inverted])
        bias = self.node("Add", f"{base}/Add", [padding, causal])
        return self.node("Tile", f"{base}/Tile", [bias, i64([1, 1, 1, 1])])

    def expand_shape(self, base, shape, ones_name):
        """Where(shape == -1, 1, shape): builder.py's guard that turns -1 dims into broadcastable 1s."""
        ones = self.node("ConstantOfShape", f"{base}/{ones_name}",
                         [self.node("Shape", f"{base}/Shape_3", [shape])],
                         value=numpy_helper.from_array(np.array([1], np.int64)))
        minus_ones = self.node("Mul", f"{base}/Mul", [ones, self.constant(np.array(-1, np.int64))])
        is_minus_one = self.node("Equal", f"{base}/Equal", [shape, minus_ones])
        return self.node("Where", f"{base}/Where_1", [is_minus_one, ones, shape])

    def rotary(self, name, x, num_heads):
        a = self.a
        partial = a.rotary_dim and a.rotary_dim != a.head_size
        if a.attention == "onnx23":
            # ai.onnx RotaryEmbedding-23: inputs (X, cos_cache, sin_cache, position_ids); X is 3-D
            # [batch, seq, num_heads * head_size], so num_heads is required; rotary_embedding_dim 0 = whole head.
            return self.node("RotaryEmbedding", name, [x, "cos_cache", "sin_cache", "position_ids"],
                             interleaved=a.rotary_interleaved, num_heads=num_heads,
                             rotary_embedding_dim=a.rotary_dim if partial else 0)
        # num_heads / rotary_embedding_dim stay 0 (= whole head) unless rotary is partial, as in builder.py
        return self.node("RotaryEmbedding", name, [x, "position_ids", "cos_cache", "sin_cache"], domain=MS_DOMAIN,
                         interleaved=a.rotary_interleaved, num_heads=num_heads if partial else 0,
                         rotary_embedding_dim=a.rotary_dim if partial else 0)

    def layer(self, i, normed, mask_inputs):
        a = self.a
        pre = f"/model/layers.{i}/attn"
        q_size, kv_size = a.heads * a.head_size, a.kv_heads * a.head_size
        w = {p: self.normal(shape, 0.1) for p, shape in
             [("q", (a.hidden, q_size)), ("k", (a.hidden, kv_size)), ("v", (a.hidden, kv_size))]}
        b = {p: self.normal(w[p].shape[1], 0.1) for p in "qkv"} if a.qkv_bias else {p: None for p in "qkv"}
        if a.attention == "ms-attention":
            # onnxruntime.transformers' GPT-2 form: com.microsoft Attention with the packed [hidden, 3 * hidden]
            # q|k|v weight and bias as its inputs, the cache as past_N / present_N [2, batch, heads, seq, head]
            # (keys and values stacked), unidirectional (causal), no rotary.
            b = {p: self.normal(w[p].shape[1], 0.1) for p in "qkv"}
            weight = self.initializer(f"model.layers.{i}.attn.qkv_proj.weight", np.concatenate([w["q"], w["k"], w["v"]], axis=1))
            bias = self.initializer(f"model.layers.{i}.attn.qkv_proj.bias", np.concatenate([b["q"], b["k"], b["v"]]))
            attn = self.node("Attention", f"{pre}/Attention", [normed, weight, bias, mask_inputs, f"past_{i}"],
                             [f"{pre}/Attention/output_0", f"present_{i}"], domain=MS_DOMAIN, num_heads=a.heads,
                             unidirectional=1)[0]
            return self.linear(f"model.layers.{i}.attn.o_proj", attn, self.normal((q_size, a.hidden), 0.1))
        if a.pad_head_size:  # zero columns after each head's own (the projections' outputs padded per head)
            pad = lambda m, heads: np.pad(m.reshape(m.shape[:-1] + (heads, a.head_size)),
                                          [(0, 0)] * (m.ndim - 1) + [(0, 0), (0, a.pad_head_size - a.head_size)]
                                          ).reshape(m.shape[:-1] + (heads * a.pad_head_size,))
            n_heads = {"q": a.heads, "k": a.kv_heads, "v": a.kv_heads}
            w = {p: pad(w[p], n_heads[p]) for p in "qkv"}
            b = {p: None if b[p] is None else pad(b[p], n_heads[p]) for p in "qkv"}
        if a.packed_qkv:
            packed_bias = np.concatenate([b["q"], b["k"], b["v"]]) if a.qkv_bias else None
            q = self.linear(f"model.layers.{i}.attn.qkv_proj", normed,
                            np.concatenate([w["q"], w["k"], w["v"]], axis=1), packed_bias)
            k = v = ""
        else:
            q, k, v = (self.linear(f"model.layers.{i}.attn.{p}_proj", normed, w[p], b[p]) for p in "qkv")

        if a.qk_norm != "none":
            q = self.qk_norm(f"{pre}/q_norm", f"model.layers.{i}.attn.q_norm.layernorm.weight", q, a.heads)
            k = self.qk_norm(f"{pre}/k_norm", f"model.layers.{i}.attn.k_norm.layernorm.weight", k, a.kv_heads)

        past = [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        present = [f"present.{i}.key", f"present.{i}.value"]
        scale = float(1.0 / np.sqrt(a.head_size))
        if a.attention in ("gqa", "mha", "onnx23"):
            q = self.rotary(f"{pre}/q_rotary/RotaryEmbedding", q, a.heads)
            k = self.rotary(f"{pre}/k_rotary/RotaryEmbedding", k, a.kv_heads)
        if a.attention == "onnx23":
            # ai.onnx Attention-23 with 3-D Q/K/V (so q_num_heads/kv_num_heads are required), no
            # attn_mask, is_causal=1, the KV cache concatenated inside the op (past/present BNSH).
            attn = self.node("Attention", f"{pre}/Attention", [q, k, v, ""] + past,
                             [f"{pre}/Attention/output_0"] + present,
                             q_num_heads=a.heads, kv_num_heads=a.kv_heads, is_causal=1, scale=scale)[0]
        elif a.attention == "mha":
            attn = self.node("MultiHeadAttention", f"{pre}/MultiHeadAttention",
                             [q, k, v, "", "", mask_inputs] + past, [f"{pre}/MultiHeadAttention/output_0"] + present,
                             domain=MS_DOMAIN, num_heads=a.heads, scale=scale)[0]
        else:
            rotary_inputs = ["cos_cache", "sin_cache"] if a.attention == "gqa-rotary" else []
            attn = self.node("GroupQueryAttention", f"{pre}/GroupQueryAttention",
                             [q, k, v] + past + list(mask_inputs) + rotary_inputs,
                             [f"{pre}/GroupQueryAttention/output_0"] + present, domain=MS_DOMAIN,
                             num_heads=a.heads, kv_num_heads=a.kv_heads, scale=scale,
                             local_window_size=a.local_window if i % 2 == 0 else -1,
                             softcap=float(a.softcap), do_rotary=int(a.attention == "gqa-rotary"),
                             rotary_interleaved=a.rotary_interleaved if a.attention == "gqa-rotary" else 0)[0]
        if a.pad_head_size:  # the padding sliced off each head before o_proj
            i64 = lambda v: self.constant(np.array(v, np.int64))
            heads_4d = self.node("Reshape", f"{pre}/unpad/Reshape", [attn, i64([0, 0, a.heads, a.pad_head_size])])
            sliced = self.node("Slice", f"{pre}/unpad/Slice", [heads_4d, i64([0]), i64([a.head_size]), i64([-1])])
            attn = self.node("Reshape", f"{pre}/unpad/Reshape_1", [sliced, i64([0, 0, a.heads * a.head_size])])
        return self.linear(f"model.layers.{i}.attn.o_proj", attn, self.normal((q_size, a.hidden), 0.1))

    def qk_norm(self, name, weight_name, x, heads):
        """builder.py's make_qk_norm: Reshape_1 to rows of one head, SimplifiedLayerNormalization with a
        [head_size] scale, Reshape_2 back to [batch, seq, heads * head_size]."""
        a = self.a
        back = None
        if a.qk_norm == "3d":
            shape = self.constant(np.array([0, -1, a.head_size], np.int64))
        elif a.qk_norm == "4d":
            shape = self.constant(np.array([0, 0, heads, a.head_size], np.int64))
        else:  # [b, s, heads, head] and [b, s, -1] with b and s taken from Shape(x)
            dims = self.node("Shape", f"{name}/Shape", [x])
            axis0 = self.constant(np.array([0], np.int64))
            bs = [self.node("Unsqueeze", f"{name}/Unsqueeze_{k}",
                            [self.node("Gather", f"{name}/Gather_{k}", [dims, self.constant(np.array(k, np.int64))]), axis0])
                  for k in (0, 1)]
            shape = self.node("Concat", f"{name}/Concat", bs + [self.constant(np.array([heads, a.head_size], np.int64))], axis=0)
            back = self.node("Concat", f"{name}/Concat_1", bs + [self.constant(np.array([-1], np.int64))], axis=0)
        rows = self.node("Reshape", f"{name}/Reshape_1", [x, shape])
        weight = self.norm_weight(weight_name, a.head_size)
        normed = self.rms_norm(name, rows, weight)
        back = back or self.constant(np.array([0, -1, heads * a.head_size], np.int64))
        return self.node("Reshape", f"{name}/Reshape_2", [normed, back])

    def mlp(self, i, x):
        a = self.a
        pre = f"/model/layers.{i}/mlp"
        gate = self.linear(f"model.layers.{i}.mlp.gate_proj", x, self.normal((a.hidden, a.ffn), 0.1))
        up = self.linear(f"model.layers.{i}.mlp.up_proj", x, self.normal((a.hidden, a.ffn), 0.1))
        if a.activation == "silu":
            sig = self.node("Sigmoid", f"{pre}/act_fn/Sigmoid", [gate])
            act = self.node("Mul", f"{pre}/act_fn/Mul", [gate, sig])
        elif a.activation == "gelu-tanh-ops":  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            f = lambda v: self.constant(np.array(v, self.np_float))
            cube = self.node("Pow", f"{pre}/act_fn/Pow", [gate, f(3.0)])
            inner = self.node("Add", f"{pre}/act_fn/Add", [gate, self.node("Mul", f"{pre}/act_fn/Mul", [cube, f(0.044715)])])
            t = self.node("Tanh", f"{pre}/act_fn/Tanh", [self.node("Mul", f"{pre}/act_fn/Mul_1", [inner, f(0.7978845608028654)])])
            half = self.node("Mul", f"{pre}/act_fn/Mul_2", [gate, f(0.5)])
            act = self.node("Mul", f"{pre}/act_fn/Mul_3", [half, self.node("Add", f"{pre}/act_fn/Add_1", [t, f(1.0)])])
        elif a.activation in ("fast-gelu-bias", "bias-gelu"):  # the gate's bias fused into the activation
            op = "FastGelu" if a.activation == "fast-gelu-bias" else "BiasGelu"
            bias = self.initializer(f"model.layers.{i}.mlp.gate_proj.bias", self.normal(a.ffn, 0.1).astype(self.np_float))
            act = self.node(op, f"{pre}/act_fn/{op}", [gate, bias], domain=MS_DOMAIN)
        elif a.activation == "gelu-erf-ops":  # x * 0.5 * (1 + erf(x / sqrt(2)))
            f = lambda v: self.constant(np.array(v, self.np_float))
            e = self.node("Erf", f"{pre}/act_fn/Erf", [self.node("Div", f"{pre}/act_fn/Div", [gate, f(1.4142135381698608)])])
            act = self.node("Mul", f"{pre}/act_fn/Mul_1", [self.node("Mul", f"{pre}/act_fn/Mul", [gate, self.node("Add", f"{pre}/act_fn/Add", [e, f(1.0)])]), f(0.5)])
        else:  # builder.py's make_gelu: com.microsoft FastGelu (tanh approximation) or Gelu (erf)
            op = "FastGelu" if a.activation == "gelu-tanh" else "Gelu"
            act = self.node(op, f"{pre}/act_fn/{op}", [gate], domain=MS_DOMAIN)
        prod = self.node("Mul", f"{pre}/Mul", [act, up])
        return self.linear(f"model.layers.{i}.mlp.down_proj", prod, self.normal((a.ffn, a.hidden), 0.1))

    def folded_scale(self, weight):
        """weight * Where(Less(Range(0, H, 1), H / 2), 1, 0.5), through shape and data-movement operators on
        constants only (ONNX Runtime computes them; an importer folds them)."""
        a, pre = self.a, "/model/final_norm_scale"
        i64 = lambda v: self.constant(np.array(v, np.int64))
        f = lambda v: self.constant(np.array(v, np.float32))
        hidden = self.node("Shape", f"{pre}/Shape", [weight])                                 # [H]
        r = self.node("Range", f"{pre}/Range", [i64(0), self.node("Squeeze", f"{pre}/Squeeze_h", [hidden, i64([0])]), i64(1)])
        low = self.node("Less", f"{pre}/Less", [r, i64(a.hidden // 2)])
        same = self.node("Equal", f"{pre}/Equal", [r, r])                                     # all true
        ones = self.node("ConstantOfShape", f"{pre}/ConstantOfShape", [hidden],
                         value=numpy_helper.from_array(np.array([1.0], np.float32)))
        half = self.node("Div", f"{pre}/Div", [ones, self.node("Sqrt", f"{pre}/Sqrt", [self.node("Pow", f"{pre}/Pow", [f(2.0), f(2.0)])])])
        pick = self.node("Where", f"{pre}/Where", [low, ones, half])
        pick = self.node("Where", f"{pre}/Where_1", [same, pick, self.node("Neg", f"{pre}/Neg", [ones])])
        col = self.node("Transpose", f"{pre}/Transpose", [self.node("Unsqueeze", f"{pre}/Unsqueeze", [pick, i64([0])])], perm=[1, 0])
        wide = self.node("Expand", f"{pre}/Expand", [col, i64([a.hidden, 3])])                # [H, 3]
        back = self.node("Slice", f"{pre}/Slice", [wide, i64([-1]), i64([-3]), i64([1]), i64([-2])])   # column 2: [H, 1]
        scale = self.node("Squeeze", f"{pre}/Squeeze", [back, i64([1])])
        scale = self.node("Cast", f"{pre}/Cast", [scale], to=self.float_type)
        return self.node("Mul", f"{pre}/Mul", [weight, scale])

    def norm_weight(self, name, size=None):
        w = self.normal(size or self.a.hidden, 0.1)
        if self.a.norm_offset == "baked":
            return self.float_weight(name, 1.0 + w)
        # w stored, 1 + w computed in the graph (an Add of two constants)
        one = self.constant(np.array([1.0], self.np_float))
        return self.node("Add", f"{name}/Add_offset", [self.float_weight(name, w), one])

    def norm_bias(self, name):
        """--norm layer: the LayerNorm's beta (shift), one per feature."""
        return self.float_weight(name.strip("/").replace("/", ".") + ".bias", self.normal(self.a.hidden, 0.1))

    def rms_norm(self, name, x, weight, output=None):
        """RMS norm without a residual Add: SimplifiedLayerNormalization (ai.onnx domain, onnxruntime's)
        for the model's first norm as builder.py emits it, or the standard RMSNormalization-23 for onnx23
        (every norm; skip_norm puts an Add in front)."""
        output = output or f"{name}/output_0"
        if self.a.norm == "rms-ops":
            f = lambda v: self.constant(np.array(v, self.np_float))
            sq = self.node("Pow", f"{name}/Pow", [x, f(2.0)])
            mean = self.node("ReduceMean", f"{name}/ReduceMean", [sq], axes=[-1], keepdims=1)
            root = self.node("Sqrt", f"{name}/Sqrt", [self.node("Add", f"{name}/Add", [mean, f(self.a.rms_eps)])])
            inv = self.node("Reciprocal", f"{name}/Reciprocal", [root])
            return self.node("Mul", f"{name}/Mul_1", [weight, self.node("Mul", f"{name}/Mul", [x, inv])], [output])
        if self.a.norm == "layer":
            return self.node("LayerNormalization", f"{name}/LayerNorm", [x, weight, self.norm_bias(name)], [output],
                             epsilon=self.a.rms_eps, axis=-1)
        if self.a.attention == "onnx23":
            return self.node("RMSNormalization", f"{name}/RMSNorm", [x, weight], [output],
                             axis=-1, epsilon=self.a.rms_eps, stash_type=1)
        return self.node("SimplifiedLayerNormalization", f"{name}/LayerNorm", [x, weight], [output],
                         epsilon=self.a.rms_eps, axis=-1, stash_type=1)

    def skip_norm(self, name, residual, x, weight, keep_sum=True):
        """SkipSimplifiedLayerNormalization(input, skip, gamma): output 0 = RMSNorm(input + skip),
        output 3 = input + skip (the residual stream, carried to the next Skip norm). onnx23: an
        explicit Add (the residual stream) and RMSNormalization of it."""
        if self.a.attention == "onnx23" or self.a.norm == "rms-ops":
            total = self.node("Add", f"{name}/Add" if self.a.norm != "rms-ops" else f"{name}/residual/Add", [residual, x])
            return self.rms_norm(name, total, weight), (total if keep_sum else None)
        outputs = [f"{name}/output_0", "", "", f"{name}/output_3"] if keep_sum else [f"{name}/output_0"]
        if self.a.norm == "layer":
            out = self.node("SkipLayerNormalization", f"{name}/SkipLayerNorm", [residual, x, weight, self.norm_bias(name)],
                            outputs, domain=MS_DOMAIN, epsilon=self.a.rms_eps)
            return (out[0], out[3]) if keep_sum else (out, None)
        out = self.node("SkipSimplifiedLayerNormalization", f"{name}/SkipLayerNorm", [residual, x, weight],
                        outputs, domain=MS_DOMAIN, epsilon=self.a.rms_eps)
        return (out[0], out[3]) if keep_sum else (out, None)

    def build(self):
        a = self.a
        if a.attention == "mha":
            mask_inputs = self.mha_attention_bias()
        elif a.attention == "onnx23":
            mask_inputs = None      # is_causal=1, no attention_mask input
        elif a.attention == "ms-attention":  # mask_index: the 2-D attention mask as int32
            mask_inputs = self.node("Cast", "/model/attn_mask_reformat/Cast", ["attention_mask"], to=TensorProto.INT32)
        else:
            mask_inputs = self.gqa_mask_inputs()
        self.rotary_caches()
        table = self.normal((a.vocab, a.hidden), 0.5)
        if a.bf16_weights:     # rows gathered in bfloat16, then Cast
            self.initializers.append(bf16_tensor("model.embed_tokens.weight", table))
            residual = self.node("Gather", "/model/embed_tokens/Gather", ["model.embed_tokens.weight", "input_ids"])
            residual = self.node("Cast", "/model/embed_tokens/Cast", [residual], to=TensorProto.FLOAT)
        else:
            embed = self.initializer("model.embed_tokens.weight", table.astype(self.np_float))
            residual = self.node("Gather", "/model/embed_tokens/Gather", [embed, "input_ids"])
        if a.embed_scale:  # Gemma: rows times sqrt(hidden), a Mul by a scalar constant
            scale = self.constant(np.array(np.sqrt(a.hidden), self.np_float))
            residual = self.node("Mul", "/model/embed_tokens/Mul", [residual, scale])
        if a.embed_layer_norm:  # the Gather above is replaced by the fused op (its table stays the same)
            self.nodes = [n for n in self.nodes if n.name != "/model/embed_tokens/Gather"]
            ids32 = self.node("Cast", "/model/embed_tokens/Cast", ["input_ids"], to=TensorProto.INT32)
            pos32 = self.node("Cast", "/model/embed_positions/Cast", ["position_ids"], to=TensorProto.INT32)
            positions = self.initializer("model.embed_positions.weight", self.normal((a.context_length, a.hidden), 0.1))
            gamma = self.norm_weight("model.layers.0.input_layernorm.weight")
            beta = self.norm_bias("/model/layers.0/input_layernorm")
            name = "/model/embed_layer_norm/EmbedLayerNormalization"
            normed, _, residual = self.node("EmbedLayerNormalization", name,
                                            [ids32, "", "model.embed_tokens.weight", positions, "", gamma, beta, "", pos32],
                                            [f"{name}/output_0", f"{name}/output_1", f"{name}/output_2"],
                                            domain=MS_DOMAIN, epsilon=a.rms_eps)
        else:
            normed = self.rms_norm("/model/layers.0/input_layernorm", residual,
                                   self.norm_weight("model.layers.0.input_layernorm.weight"))
        for i in range(a.layers):
            if i > 0:
                normed, residual = self.skip_norm(f"/model/layers.{i}/input_layernorm", residual, mlp_out,
                                                  self.norm_weight(f"model.layers.{i}.input_layernorm.weight"))
            attn_out = self.layer(i, normed, mask_inputs)
            normed, residual = self.skip_norm(f"/model/layers.{i}/post_attention_layernorm", residual, attn_out,
                                              self.norm_weight(f"model.layers.{i}.post_attention_layernorm.weight"))
            mlp_out = self.mlp(i, normed)
        final_weight = self.norm_weight(f"model.layers.{a.layers}.final_norm_layernorm.weight")
        if a.folded_final_norm:
            final_weight = self.folded_scale(final_weight)
        final, _ = self.skip_norm(f"/model/layers.{a.layers}/final_norm_layernorm", residual, mlp_out, final_weight, False)
        self.linear("lm_head", final, self.normal((a.hidden, a.vocab), 0.3), output="logits")
        return self.model()

    def model(self):
        a = self.a
        ft = self.float_type
        cache_head = a.pad_head_size or a.head_size
        cache_in = ["batch_size", a.kv_heads, "past_sequence_length", cache_head]
        cache_out = ["batch_size", a.kv_heads, "total_sequence_length", cache_head]
        onnx23 = a.attention == "onnx23"
        inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])]
        if not onnx23:
            inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                        ["batch_size", "total_sequence_length"]))
        if a.attention not in ("gqa-rotary", "ms-attention") or a.embed_layer_norm:
            inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
        outputs = [helper.make_tensor_value_info("logits", ft, ["batch_size", "sequence_length", a.vocab])]
        for i in range(a.layers):
            if a.attention == "ms-attention":
                inputs.append(helper.make_tensor_value_info(f"past_{i}", ft, [2] + cache_in))
                outputs.append(helper.make_tensor_value_info(f"present_{i}", ft, [2] + cache_out))
                continue
            for kind in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", ft, cache_in))
                outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", ft, cache_out))
        graph = helper.make_graph(self.nodes, "main_graph", inputs, outputs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET_ONNX23 if onnx23 else OPSET)]
        if not onnx23 or a.bits:
            opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
        model = helper.make_model(graph, producer_name="onnxruntime-genai-style synthetic (tools/onnx)",
                                  opset_imports=opsets)
        model.ir_version = IR_VERSION_ONNX23 if onnx23 else IR_VERSION
        return model


def bf16_tensor(name, array):
    """A BFLOAT16 TensorProto (raw little-endian bits) of float32 values rounded to nearest even
    (python3-onnx 1.12's numpy_helper has no bfloat16)."""
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(array.shape)
    t.raw_data = rounded.tobytes()
    return t


def genai_config(a):
    inputs = {"input_ids": "input_ids"}
    if a.attention != "onnx23":
        inputs["attention_mask"] = "attention_mask"
    if a.attention != "gqa-rotary":
        inputs["position_ids"] = "position_ids"
    inputs.update({"past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"})
    return {
        "model": {
            "bos_token_id": a.bos,
            "context_length": a.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx",
                "head_size": a.pad_head_size or a.head_size,
                "hidden_size": a.hidden,
                "inputs": inputs,
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": a.heads,
                "num_hidden_layers": a.layers,
                "num_key_value_heads": a.kv_heads,
            },
            "eos_token_id": a.eos,
            "pad_token_id": a.pad,
            "type": a.model_type,
            "vocab_size": a.vocab,
        },
        "search": {"do_sample": False, "max_length": a.context_length, "min_length": 0, "num_beams": 1,
                   "num_return_sequences": 1, "past_present_share_buffer": False, "top_k": 1, "top_p": 1.0},
    }


def write_external_data(model, out_dir):
    """All initializers into model.onnx.data, in graph order, each at a 16-byte aligned offset
    (deterministic; onnx.save's own external-data path is not needed for that)."""
    data = bytearray()
    for tensor in model.graph.initializer:
        data.extend(b"\0" * (-len(data) % 16))
        raw = tensor.raw_data
        offset = len(data)
        data.extend(raw)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "model.onnx.data"), ("offset", str(offset)), ("length", str(len(raw)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    with open(os.path.join(out_dir, "model.onnx.data"), "wb") as f:
        f.write(data)


def main(argv):
    a = parse_args(argv)
    model = GraphBuilder(a).build()
    os.makedirs(a.out, exist_ok=True)
    data_path = os.path.join(a.out, "model.onnx.data")
    if a.external_data:
        write_external_data(model, a.out)
    elif os.path.exists(data_path):
        os.remove(data_path)     # a stale one from an earlier --external-data run would mislead
    with open(os.path.join(a.out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(a.out, "genai_config.json"), "w") as f:
        json.dump(genai_config(a), f, indent=4)
        f.write("\n")
    # The command without --out, so that a record of it stays valid wherever the model is remade.
    args = [x for j, x in enumerate(argv) if x != "--out" and (j == 0 or argv[j - 1] != "--out")]
    command = " ".join(["python3", "tools/onnx/make_builder_style_model.py"] + [shlex.quote(x) for x in args])
    with open(os.path.join(a.out, "generator.json"), "w") as f:
        json.dump({"command": command, "numpy": np.__version__, "onnx": onnx.__version__}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
