#!/usr/bin/python3
"""Makes the synthetic onnxruntime-genai style decoder models that test/data/oracle/onnx/*.ort.json
describe, each into OUTPUT_DIR/<name>/ (model.onnx [+ model.onnx.data], genai_config.json,
generator.json); the hf_* variants are Hugging Face / optimum style exports made by
tools/onnx/make_hf_style_model.py (torch.onnx.export; config.json instead of genai_config.json).

Usage: make_onnx_llm_models.py OUTPUT_DIR [--only NAME[,NAME...]] [--oracle]

  --only    make just these variants
  --oracle  also run ONNX Runtime (tools/oracle/ort_logits.mjs, node + onnxruntime-node) on each
            model and write test/data/oracle/onnx/<name>.ort.json; only needed when a variant or
            the generator changes (see test/data/oracle/onnx/README.md)

The models are small (2 layers, hidden 64-128, vocab 256-512) and a pure function of the
arguments below, so tests remake them and check the sha256 recorded in the oracle files instead of
storing them.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "tools", "onnx", "make_builder_style_model.py")
HF_GENERATOR = os.path.join(ROOT, "tools", "onnx", "make_hf_style_model.py")
ORACLE = os.path.join(ROOT, "tools", "oracle", "ort_logits.mjs")
ORACLE_DIR = os.path.join(ROOT, "test", "data", "oracle", "onnx")

PROMPT = "1 17 42 99 5 200"
GREEDY_STEPS = 8
# Append case for the oracle: the cache of the first 3 prompt tokens, then 3 new tokens in one run.
BRANCH = "3:7 8 9"

# name -> generator arguments (without --out). Seeds are picked so that no greedy step of ONNX
# Runtime's run has a near-tie (top-1/top-2 logit gap; see the README).
VARIANTS = {
    # Llama-style, fp32, GQA with the rotary inside the attention op.
    "gqa_rotary_fp32": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 160 "
                       "--vocab 256 --seed 5",
    # Phi-3 style int4: one packed qkv MatMulNBits, GQA key/value inputs empty, symmetric (no zero points).
    "gqa_rotary_packed_q4_b32": "--attention gqa-rotary --packed-qkv --heads 8 --kv-heads 2 --head-size 16 "
                                "--hidden 128 --ffn 256 --vocab 384 --bits 4 --block-size 32 --model-type phi3 --seed 17",
    # Separate RotaryEmbedding nodes (interleaved pairs) + GQA without rotary; int4 block 16 with zero points.
    "gqa_rope_interleaved_q4_b16_zp": "--attention gqa --rotary-interleaved 1 --heads 4 --kv-heads 2 --head-size 16 "
                                      "--hidden 64 --ffn 128 --vocab 256 --bits 4 --block-size 16 --zero-points --seed 10",
    # int8 block 64 with zero points, 6:2 heads; hidden 96 and ffn 160 are not multiples of the block
    # (the last block of every column is zero-padded); scales/zero_points in the quantizer's 1-D layout.
    "gqa_rotary_q8_b64_zp_flat": "--attention gqa-rotary --heads 6 --kv-heads 2 --head-size 16 --hidden 96 --ffn 160 "
                                 "--vocab 320 --bits 8 --block-size 64 --zero-points --flat-quant-params --seed 16",
    # int8 block 128 symmetric, 4:4 heads (plain multi-head attention through the GQA op).
    "gqa_rotary_q8_b128": "--attention gqa-rotary --heads 4 --kv-heads 4 --head-size 32 --hidden 128 --ffn 256 "
                          "--vocab 256 --bits 8 --block-size 128 --seed 14",
    # Like tiny-random-LlamaForCausalLM-fp16: fp16 everywhere, MultiHeadAttention with the builder's
    # attention_bias subgraph, RotaryEmbedding nodes, weights in model.onnx.data.
    "mha_fp16": "--attention mha --precision fp16 --heads 4 --kv-heads 4 --head-size 16 --hidden 64 --ffn 128 "
                "--vocab 512 --external-data --seed 5",
    # Partial rotary (Phi-2 / StableLM style): 16 of 32 dims per head rotated, by the GQA op.
    "gqa_rotary_partial": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 32 --rotary-dim 16 --hidden 128 "
                          "--ffn 256 --vocab 256 --model-type phi --seed 10",
    # Qwen2 style: q/k/v bias, rope theta 1e6, eps 1e-6.
    # int4 with zero points and accuracy_level 4: ONNX Runtime may quantize the input to int8 (as
    # we do: Q4_1 integer kernels); the builder's usual setting for CPU.
    "gqa_rotary_q4_b32_zp_acc4": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --hidden 128 --ffn 256 "
                                 "--vocab 256 --bits 4 --block-size 32 --zero-points --accuracy-level 4 --seed 1",
    "qwen_bias": "--attention gqa-rotary --qkv-bias --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 128 "
                 "--vocab 256 --rope-theta 1000000 --model-type qwen2 --seed 14",
    # fp16 activations with int4 weights (fp16 scales), as GPU-targeted builder models have.
    "gqa_rotary_fp16_q4_b32_zp": "--attention gqa-rotary --precision fp16 --heads 4 --kv-heads 1 --head-size 16 "
                                 "--hidden 64 --ffn 128 --vocab 256 --bits 4 --block-size 32 --zero-points --seed 8",
    # Standard ONNX opset-23 ops instead of the com.microsoft ones: RMSNormalization + explicit residual
    # Adds, RotaryEmbedding (3-D, num_heads), Attention (3-D, is_causal=1, past/present BNSH), no
    # attention_mask input. Same arguments and seed as gqa_rotary_fp32, hence the same weights: ONNX
    # Runtime's logits equal that variant's to 5e-6.
    "onnx23_gqa_fp32": "--attention onnx23 --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 160 "
                       "--vocab 256 --seed 5",
    # opset 23 with interleaved partial rotary (8 of 16 dims) on 8:2 heads and int4 MatMulNBits
    # (com.microsoft, block 32, no zero points).
    "onnx23_gqa_rope_partial_interleaved_q4_b32": "--attention onnx23 --rotary-interleaved 1 --rotary-dim 8 --heads 8 "
                                                  "--kv-heads 2 --head-size 16 --hidden 128 --ffn 256 --vocab 384 "
                                                  "--bits 4 --block-size 32 --seed 3",
    # 2-bit MatMulNBits (four elements per byte), block 16 with zero points (ffn 160 = 10 blocks: the
    # zero points' last byte is half padding).
    "gqa_rotary_q2_b16_zp": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 160 "
                            "--vocab 256 --bits 2 --block-size 16 --zero-points --seed 6",
    # 2-bit symmetric (zero point 2), block 64 over K = 96 and 160: the last block zero-padded.
    "gqa_rotary_q2_b64": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --hidden 96 --ffn 160 "
                         "--vocab 256 --bits 2 --block-size 64 --seed 8",
    # bfloat16 weights (Cast to float32 where used; fp32 activations): gqa_rotary_fp32's arguments and
    # seed, so its weights rounded to bfloat16.
    "gqa_rotary_bf16_weights": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 160 "
                               "--vocab 256 --bf16-weights --seed 5",
    # fp32 MultiHeadAttention whose attention_bias subgraph offsets the causal mask by the past length,
    # so ONNX Runtime runs the append step (mha_fp16's builder mask refuses it).
    "mha_fp32_offset_mask": "--attention mha --heads 4 --kv-heads 4 --head-size 16 --hidden 64 --ffn 128 "
                            "--vocab 256 --mha-mask offset --seed 9",
    # Qwen3 (builder.py's make_qk_norm): per-head Q and K RMS norms reached through Reshape to
    # [batch, seq * heads, head_size] and back, then RotaryEmbedding nodes and GQA; rope theta 1e6.
    "qwen3_qk_norm": "--attention gqa --qk-norm 3d --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 128 "
                     "--vocab 256 --rope-theta 1000000 --model-type qwen3 --seed 13",
    # qwen3_qk_norm's model with the Reshape shapes computed from Shape(q) as torch.onnx.export writes
    # view(b, s, heads, head) (Shape, Gather, Unsqueeze, Concat: entries that stand for the batch size
    # and the token count); ONNX Runtime's logits equal qwen3_qk_norm's exactly.
    "qwen3_qk_norm_dynamic_shapes": "--attention gqa --qk-norm dynamic --heads 4 --kv-heads 2 --head-size 16 --hidden 64 "
                                    "--ffn 128 --vocab 256 --rope-theta 1000000 --model-type qwen3 --seed 13",
    # LayerNorm with a bias (Phi-2 / GPT-2 style): LayerNormalization, then com.microsoft SkipLayerNormalization
    # (gamma, beta) as onnxruntime.transformers fuses them; FastGelu MLP; MultiHeadAttention with the offset mask.
    "phi2_layer_norm": "--attention mha --mha-mask offset --norm layer --activation gelu-tanh --heads 4 --kv-heads 4 "
                       "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type phi --seed 13",
    # GELU written out in elementary operators as torch.onnx.export writes them (with LayerNorm + bias norms):
    # GPT-2's gelu_new (Pow(x, 3), Mul, Add, Tanh) and the exact one (Div by sqrt(2), Erf, Add, Mul).
    "layer_norm_gelu_tanh_ops": "--attention gqa-rotary --norm layer --activation gelu-tanh-ops --heads 4 --kv-heads 2 "
                                "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type phi --seed 5",
    "layer_norm_gelu_erf_ops": "--attention gqa --norm layer --activation gelu-erf-ops --heads 4 --kv-heads 2 "
                               "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type phi --seed 5",
    # onnxruntime.transformers' GPT-2 attention: com.microsoft Attention with the packed q|k|v weight and bias
    # as its inputs, past_N / present_N [2, batch, heads, seq, head], unidirectional; LayerNorm + bias norms,
    # FastGelu. No position information (no rotary, no position embedding): attention and cache only.
    "ms_attention_past_present": "--attention ms-attention --norm layer --activation gelu-tanh --heads 4 --kv-heads 4 "
                                 "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type gpt2 --seed 2",
    # ms_attention_past_present with GPT-2's fused embeddings: com.microsoft EmbedLayerNormalization (word +
    # learned position embedding by position_ids, LayerNorm; outputs normalized and embedding_sum).
    "ms_attention_embed_layer_norm": "--attention ms-attention --norm layer --embed-layer-norm --activation gelu-tanh "
                                     "--heads 4 --kv-heads 4 --head-size 16 --hidden 64 --ffn 128 --vocab 256 "
                                     "--model-type gpt2 --seed 5",
    # GroupQueryAttention local_window_size 4 on layer 0 (Gemma 2 / Mistral sliding windows; seed 4: the
    # first of 1..4 without near ties) and softcap 1.5 on both layers (gqa_rotary_fp32's weights).
    "gqa_local_window": "--attention gqa-rotary --local-window 4 --heads 4 --kv-heads 2 --head-size 16 --hidden 64 "
                        "--ffn 160 --vocab 256 --seed 4",
    "gqa_softcap": "--attention gqa-rotary --softcap 1.5 --heads 4 --kv-heads 2 --head-size 16 --hidden 64 "
                   "--ffn 160 --vocab 256 --seed 5",
    # The gate projection's bias fused into com.microsoft FastGelu(x, bias) / BiasGelu(x, bias) (erf).
    "fast_gelu_bias": "--attention gqa-rotary --norm layer --activation fast-gelu-bias --heads 4 --kv-heads 2 "
                      "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type phi --seed 1",
    "bias_gelu": "--attention gqa-rotary --norm layer --activation bias-gelu --heads 4 --kv-heads 2 "
                 "--head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type phi --seed 1",
    # The final norm's scale computed by a constant subgraph (Shape, Squeeze, Range, Less, Equal, ConstantOfShape,
    # Pow, Sqrt, Div, Neg, Where, Unsqueeze, Transpose, Expand, Slice with a negative step, Cast, Mul): the
    # importer folds it. Seed 9 (smallest relative top-2 gap 1.3%, no seed of 1..9 reached 2% on every step).
    "folded_final_norm": "--attention gqa-rotary --folded-final-norm --heads 4 --kv-heads 2 --head-size 16 --hidden 64 "
                         "--ffn 160 --vocab 256 --seed 9",
    # Every RMS norm written out as torch.onnx.export writes Hugging Face's (Pow, ReduceMean, Add eps, Sqrt,
    # Reciprocal, Mul, Mul weight; residual Adds): gqa_rotary_fp32's arguments and seed, hence its weights.
    "rms_norm_ops": "--attention gqa-rotary --norm rms-ops --heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 160 "
                    "--vocab 256 --seed 5",
    # Gemma: norm scales as Add(w, 1) in the graph (folded at import), embedding times sqrt(hidden),
    # FastGelu (gelu_pytorch_tanh) MLP, one KV head.
    "gemma_fast_gelu": "--attention gqa-rotary --norm-offset runtime --embed-scale --activation gelu-tanh --heads 4 "
                       "--kv-heads 1 --head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type gemma --seed 3",
    # Gemma 3 style: Gemma's forms plus per-head Q/K norms (Reshape to [0, 0, heads, head_size]) with
    # the (1 + w) scales, exact (erf) com.microsoft Gelu, rotary in GQA.
    "gemma3_qk_norm_gelu": "--attention gqa-rotary --qk-norm 4d --norm-offset runtime --embed-scale --activation gelu "
                           "--heads 4 --kv-heads 2 --head-size 16 --hidden 64 --ffn 128 --vocab 256 --model-type gemma3 "
                           "--seed 24",
    # Heads padded for GroupQueryAttention and the padding sliced off after it (Reshape [0, 0, heads, 32],
    # Slice [0, 16) on the last axis, Reshape back: onnxruntime-genai's way around a head size its
    # kernels refuse): q/k/v weights with zero columns after each head's 16, the cache [.., 32], cos/sin
    # over the real 16 dims. gqa_rotary_fp32's arguments and seed, hence its weights: ONNX Runtime's
    # logits equal that variant's exactly.
    "gqa_padded_head": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 16 --pad-head-size 32 --hidden 64 "
                       "--ffn 160 --vocab 256 --seed 5",
    # Head 48 padded to 64 (a Slice [0, 48) that is not a half), rotary over the 48 real dims.
    "gqa_padded_head_48": "--attention gqa-rotary --heads 4 --kv-heads 2 --head-size 48 --pad-head-size 64 --hidden 128 "
                          "--ffn 256 --vocab 256 --seed 10",
}

# Hugging Face transformers' eager modules written in torch and exported with torch.onnx.export
# (opset 17) in optimum's causal-lm-with-past layout: attention decomposed into MatMul / Softmax /
# masking over past_key_values.N.key|value inputs (see tools/onnx/make_hf_style_model.py and the
# README). The names start with hf_: make() runs that generator for them.
HF_VARIANTS = {
    # GPT-2: learned positions by position_ids, Conv1D (Gemm) packed q|k|v + Split, bias-buffer causal
    # mask + Where, LayerNormalization, gelu_new written out, tied lm_head.
    "hf_gpt2": "--arch gpt2 --seed 11",
    # hf_gpt2's weights without the position_ids input: positions Range(past, past + seq) from the
    # shape of past_key_values.0.key, as old GPT-2 exports compute them; ONNX Runtime's logits equal
    # hf_gpt2's.
    "hf_gpt2_no_position_ids": "--arch gpt2 --no-position-ids --seed 11",
    # Llama: RMSNorm written out, rotary computed from position_ids (inv_freq MatMul, Cos, Sin),
    # rotate_half, GQA 4:2 with repeat_kv after the cache Concat, 4-D causal + padding mask.
    "hf_llama": "--arch llama --seed 6",
    # hf_llama's weights with the attention as torch's scaled_dot_product_attention export writes it
    # (q and k^T each times sqrt(1 / sqrt(d))); ONNX Runtime's logits equal hf_llama's to rounding.
    "hf_llama_sdpa": "--arch llama --sdpa-style --seed 6",
    # hf_llama's weights with the padding part of the mask written as transformers 4.38-4.52 write it:
    # an in-place slice assignment, ScatterND in the graph (what most optimum Llama exports hold);
    # ONNX Runtime's logits equal hf_llama's.
    "hf_llama_scatter_mask": "--arch llama --mask-slice-assign --seed 6",
    # Qwen2: q/k/v bias, theta 1e6.
    "hf_qwen2": "--arch qwen2 --seed 9",
    # Qwen3: per-head q/k RMSNorm on [b, s, heads, 32] before the transpose; head_dim 32 x 4 heads
    # with hidden 64.
    "hf_qwen3": "--arch qwen3 --seed 6",
    # Gemma: embedding times sqrt(64), norms x * (1 + w), gelu tanh gate, MQA (1 KV head), head_dim 32
    # with hidden 64, tied lm_head.
    "hf_gemma": "--arch gemma --seed 25",
    # Phi-2: partial rotary written out (q[..., :8] of each head of 16 rotated as rotate_half, the rest
    # passed through and Concat'ed back), q/k/v/dense with bias, one LayerNorm feeding attention and
    # MLP in parallel, gelu_new MLP, lm_head with bias.
    "hf_phi2": "--arch phi2 --seed 12",
    # GPT-J: rotary on the first 8 of each head of 16 with interleaved pairs (rotate_every_two: x[..., ::2],
    # x[..., 1::2], stack((-x2, x1), -1).flatten(-2)), sin / cos gathered from the constant embed_positions
    # by position_ids, Split, repeated per pair (stack((x, x), -1).flatten(-2)); rotation on
    # [b, s, heads, d] before the permute; one LayerNorm feeding attention and MLP in parallel; lm_head
    # with bias.
    "hf_gptj": "--arch gptj --seed 3",
    # GPT-NeoX (Pythia): fused query_key_value with bias viewed as [b, s, heads, 3 * 16] and q / k / v sliced
    # off the last axis (each head's q | k | v adjacent); partial rotary as Phi-2's on 4 of 16; two LayerNorms
    # in parallel; gelu MLP; embed_out without bias.
    "hf_gptneox": "--arch gptneox --seed 1",
    # hf_gptneox's weights as transformers >= 4.48 writes the attention: the [b, s, heads, 3 * 16] view
    # transposed to heads first, then qkv.chunk(3, dim=-1), one Split of the last axis into q, k, v;
    # ONNX Runtime's logits equal hf_gptneox's.
    "hf_gptneox_chunk": "--arch gptneox --qkv-split chunk --seed 1",
}
VARIANTS.update(HF_VARIANTS)


def make(name, out_dir):
    folder = os.path.join(out_dir, name)
    generator = HF_GENERATOR if name in HF_VARIANTS else GENERATOR
    subprocess.run([sys.executable, generator] + VARIANTS[name].split() + ["--out", folder], check=True)
    return folder


def run_oracle(name, folder):
    os.makedirs(ORACLE_DIR, exist_ok=True)
    out = os.path.join(ORACLE_DIR, name + ".ort.json")
    subprocess.run(["node", ORACLE, folder, "--ids", PROMPT, "--n", str(GREEDY_STEPS), "--branch", BRANCH,
                    "--out", out], check=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--only", help="comma-separated variant names")
    p.add_argument("--oracle", action="store_true", help="also write test/data/oracle/onnx/<name>.ort.json")
    a = p.parse_args()
    names = a.only.split(",") if a.only else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    for name in names:
        folder = make(name, a.out_dir)
        print(folder)
        if a.oracle:
            print(run_oracle(name, folder))


if __name__ == "__main__":
    main()
