#!/usr/bin/python3
"""Writes a small random-weight decoder-only LLM as Hugging Face transformers' eager modules look
when optimum exports them with torch.onnx.export (task `causal-lm-with-past`): attention written
out as MatMul / Softmax / masking over `past_key_values.N.key|value` inputs, for testing an
importer of such graphs.

Usage: make_hf_style_model.py --arch ARCH --out DIR [options]      (see --help)
       make_hf_style_model.py --arch ARCH [options] --compare ORACLE.ort.json

DIR receives model.onnx, config.json (Hugging Face's keys for the architecture, as an optimum
export folder has it; no genai_config.json) and generator.json (this command line without --out,
so an oracle run can record it). The output is a pure function of the arguments: torch's CPU
generator seeded with --seed, then torch.onnx.export (opset 17, constant folding); re-running
gives byte-identical files (checked by test/tools/check_onnx_llm_models.py).

--compare runs the torch module itself on the decoding protocol an ort_logits.mjs oracle file
records (prompt, greedy steps with the cache fed back, the append branch) and prints the largest
|logit difference| against ONNX Runtime's rows: the proof that the export is faithful.

Architectures (the torch code below mirrors transformers' eager code, operation for operation):
  gpt2    wte + wpe (Gather by position_ids), LayerNorm, Conv1D c_attn (addmm: Gemm in ONNX) packed
          q|k|v, Split, view + permute to heads, Concat with the past, q @ k^T / sqrt(d) (a Div by a
          full([]) scalar), causal mask = the constant lower-triangular `bias` buffer [1, 1, 512, 512]
          sliced [k - q : k, :k] and torch.where(mask, w, finfo.min), plus the extended attention mask
          (1 - attention_mask) * finfo.min, Softmax, @ v, merge heads, c_proj, gelu_new MLP (tanh form,
          written out), ln_f, lm_head tied to wte.
          --no-position-ids: no position_ids input; positions are arange(past, past + seq) with past
          = past_key_values.0.key.shape[-2], as old GPT-2 exports compute them.
  llama   embed_tokens, RMSNorm written out (pow(2).mean(-1, keepdim), + eps, rsqrt, weight *),
          q/k/v/o without bias, rotary computed from position_ids as LlamaRotaryEmbedding does
          (inv_freq [d/2] expanded to [batch, d/2, 1] @ position_ids[:, None, :], transpose, cat,
          cos / sin), rotate_half (slices, neg, cat), cos.unsqueeze(1); present = Concat(past, new)
          with kv_heads; repeat_kv (expand + reshape) after it; q @ k^T / sqrt(d) + 4-D mask built as
          _update_causal_mask does (full(finfo.min) [seq, past + seq], triu(1), times arange(total) >
          cache_position, expand to batch, masked_fill where causal + attention_mask == 0), softmax
          in float32, @ v, o_proj; SwiGLU MLP; final norm; lm_head not tied.
          --mask-slice-assign: the padding part as transformers 4.38-4.52 write it, an in-place
          assignment to causal_mask[..., :mask_length] (ScatterND in ONNX); same values.
          --sdpa-style: the attention as torch's scaled_dot_product_attention export writes it
          (scale = 1 / sqrt(E) from Shape(q), then q * sqrt(scale), k^T * sqrt(scale), MatMul,
          + mask, Softmax, MatMul).
  qwen2   llama + bias on q/k/v, rope theta 1e6.
  qwen3   llama + per-head q/k RMSNorm ([head_dim] weights) on [batch, seq, heads, head_dim]
          before the transpose; head_dim 32 with hidden 64 and 4 heads (o_proj 128 -> 64).
  gemma   embedding times sqrt(hidden) (a constant Mul), RMSNorm with (1 + w) computed in float,
          MLP gelu(gate, approximate='tanh') * up, one KV head (MQA), head_dim 32 with hidden 64,
          lm_head tied to the embedding.
  phi2    PhiForCausalLM: q/k/v/dense with bias, partial rotary (rotary_ndims = partial_rotary_factor
          * head_dim = 8 of 16: q[..., :8] rotated as Llama's rotate_half with cos / sin from
          position_ids, q[..., 8:] passed through, Concat back), one LayerNorm feeding attention and
          MLP in parallel (x + attn(ln(x)) + mlp(ln(x))), gelu_new MLP fc1 / fc2 with bias,
          final_layernorm, lm_head with bias; the 4-D mask as llama's.
  gptj    GPTJForCausalLM: wte, q/k/v/out_proj without bias, rotary on the first rotary_dim = 8 of
          each head of 16 with GPT-J's interleaved pairs (rotate_every_two: x[..., ::2],
          x[..., 1::2], stack((-x2, x1), -1).flatten(-2); sin / cos gathered from the constant
          embed_positions [512, rotary_dim] by position_ids and repeat_interleave'd, written as
          stack((x, x), -1).flatten(-2) as torch 2.x exports it: torch 1.13 writes
          repeat_interleave as a Loop over sequences that real exports do not have), on
          [batch, seq, heads, d] before the permute; GPT-2's bias-buffer causal mask (Where) and
          extended attention mask; scores in float32 divided by sqrt(head_dim); one LayerNorm
          feeding attention and MLP in parallel; gelu_new MLP fc_in / fc_out with bias; ln_f;
          lm_head with bias.
  gptneox GPTNeoXForCausalLM (Pythia): embed_in, fused query_key_value with bias viewed as
          [batch, seq, heads, 3 * head_dim] (q, k, v interleaved per head) and q / k / v sliced off its
          last axis, then transposed; partial rotary (rotary_pct 0.25: 4 of 16) as phi2's; two
          LayerNorms in parallel (x + attn(ln1(x)) + mlp(ln2(x))); gelu (erf) MLP dense_h_to_4h /
          dense_4h_to_h with bias; dense with bias; final_layer_norm; embed_out without bias.
  --qkv-split: gptneox's q / k / v: `slice` (default; qkv[..., :d] of the [b, s, heads, 3 d] view,
          older transformers) or `chunk` (transformers >= 4.48: the view transposed to
          [b, heads, s, 3 d], then qkv.chunk(3, dim=-1), a Split of the last axis).
  --rotary-dim: the rotated dimensions per head (phi2, gptj, gptneox).
"""
import argparse
import io
import json
import math
import os
import shlex
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ARCH_DEFAULTS = {
    "gpt2":  dict(hidden=64, heads=4, kv_heads=4, head_dim=16, ffn=128, vocab=256, theta=0.0, eps=1e-5),
    "llama": dict(hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=160, vocab=256, theta=1e4, eps=1e-6),
    "qwen2": dict(hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256, theta=1e6, eps=1e-6),
    "qwen3": dict(hidden=64, heads=4, kv_heads=2, head_dim=32, ffn=128, vocab=256, theta=1e6, eps=1e-6),
    "gemma": dict(hidden=64, heads=4, kv_heads=1, head_dim=32, ffn=128, vocab=256, theta=1e4, eps=1e-6),
    "phi2":  dict(hidden=64, heads=4, kv_heads=4, head_dim=16, ffn=128, vocab=256, theta=1e4, eps=1e-5, rotary_dim=8),
    "gptneox": dict(hidden=64, heads=4, kv_heads=4, head_dim=16, ffn=256, vocab=256, theta=1e4, eps=1e-5,
                    rotary_dim=4),
    "gptj":  dict(hidden=64, heads=4, kv_heads=4, head_dim=16, ffn=128, vocab=256, theta=1e4, eps=1e-5, rotary_dim=8),
}
MAX_POSITIONS = 512
BOS, EOS = 1, 2


# --------------------------------------------------------------------------------------- GPT-2
class Conv1D(nn.Module):
    """GPT-2's Conv1D: a linear layer with the weight stored [in, out], computed with addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim = c.hidden
        self.num_heads = c.heads
        self.head_dim = c.head_dim
        self.split_size = c.hidden
        self.register_buffer("bias", torch.tril(torch.ones((MAX_POSITIONS, MAX_POSITIONS), dtype=torch.bool))
                             .view(1, 1, MAX_POSITIONS, MAX_POSITIONS), persistent=False)
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)

    def _attn(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                                 device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, layer_past, attention_mask):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        past_key, past_value = layer_past
        key = torch.cat((past_key, key), dim=-2)
        value = torch.cat((past_value, value), dim=-2)
        present = (key, value)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        return attn_output, present


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(c.ffn, c.hidden)
        self.c_proj = Conv1D(c.hidden, c.ffn)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = gelu_new(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.hidden, eps=c.eps)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.hidden, eps=c.eps)
        self.mlp = GPT2MLP(c)

    def forward(self, hidden_states, layer_past, attention_mask):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, present = self.attn(hidden_states, layer_past, attention_mask)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        return hidden_states, present


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.hidden)
        self.wpe = nn.Embedding(MAX_POSITIONS, c.hidden)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c.layers)])
        self.ln_f = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long,
                                        device=input_ids.device)
            position_ids = position_ids.unsqueeze(0)
        attention_mask = attention_mask.view(batch_size, -1)
        attention_mask = attention_mask[:, None, None, :]
        attention_mask = attention_mask.to(dtype=torch.float32)
        attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min

        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past, attention_mask)
            presents.append(present)
        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        return hidden_states, presents


class FlatSignature:
    """optimum's flat signature: input_ids, attention_mask, [position_ids], past k, past v, ... ->
    logits, present k, present v, ..."""

    def forward(self, input_ids, attention_mask, *rest):
        if self.c.position_ids:
            position_ids, past = rest[0], rest[1:]
        else:
            position_ids, past = None, rest
        pkv = [(past[2 * i], past[2 * i + 1]) for i in range(self.c.layers)]
        logits, presents = self.causal_lm(input_ids, attention_mask, position_ids, pkv)
        flat = [logits]
        for k, v in presents:
            flat += [k, v]
        return tuple(flat)


class GPT2LMHeadModel(FlatSignature, nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight      # tied

    def causal_lm(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.transformer(input_ids, attention_mask, position_ids, past_key_values)
        lm_logits = self.lm_head(hidden_states)
        return lm_logits, presents


# ------------------------------------------------------------------- Llama / Qwen2 / Qwen3 / Gemma
class RMSNorm(nn.Module):
    """LlamaRMSNorm (weight * x_normed) or, with offset, GemmaRMSNorm (x_normed * (1 + weight))."""

    def __init__(self, dim, eps, offset=False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim) if offset else torch.ones(dim))
        self.variance_epsilon = eps
        self.offset = offset

    def forward(self, hidden_states):
        if self.offset:
            x = hidden_states.float()
            output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            output = output * (1.0 + self.weight.float())
            return output.type_as(hidden_states)
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.head_dim = c.head_dim
        self.num_heads = c.heads
        self.num_key_value_heads = c.kv_heads
        self.num_key_value_groups = c.heads // c.kv_heads
        bias = c.arch == "qwen2"
        self.q_proj = nn.Linear(c.hidden, c.heads * c.head_dim, bias=bias)
        self.k_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=bias)
        self.v_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=bias)
        self.o_proj = nn.Linear(c.heads * c.head_dim, c.hidden, bias=False)
        if c.arch == "qwen3":
            self.q_norm = RMSNorm(c.head_dim, c.eps)
            self.k_norm = RMSNorm(c.head_dim, c.eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        if self.c.arch == "qwen3":     # Qwen3Attention: norm on [b, s, heads, d], then transpose
            hidden_shape = (*hidden_states.shape[:-1], -1, self.head_dim)
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states)
            key_states = self.k_proj(hidden_states)
            value_states = self.v_proj(hidden_states)
            query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
            key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
            value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        # DynamicCache.update: concatenation on the sequence axis; the present keeps kv_heads
        past_key, past_value = past_key_value
        key_states = torch.cat([past_key, key_states], dim=-2)
        value_states = torch.cat([past_value, value_states], dim=-2)
        present = (key_states, value_states)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]

        if self.c.sdpa_style:
            # torch.onnx's symbolic of scaled_dot_product_attention (opset 14+): the default scale
            # 1 / sqrt(E) from the query's shape (Shape, Slice [-1:], Cast, Sqrt, Div 1 by it, Cast),
            # both factors scaled by its square root (Sqrt, Mul q, Transpose k, Mul), MatMul, Add
            # the float mask, Softmax, MatMul v. torch 1.13 has no scaled_dot_product_attention, so
            # the same operators are written here.
            embedding_size = torch._shape_as_tensor(query_states)[-1:].to(query_states.dtype)
            scale = (1.0 / torch.sqrt(embedding_size)).to(query_states.dtype)
            query_scaled = query_states * torch.sqrt(scale)
            key_transposed_scaled = key_states.transpose(-2, -1) * torch.sqrt(scale)
            attn_weights = torch.matmul(query_scaled, key_transposed_scaled)
            attn_weights = attn_weights + causal_mask
            attn_weights = torch.softmax(attn_weights, dim=-1)
            attn_output = torch.matmul(attn_weights, value_states)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
            attn_weights = attn_weights + causal_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        attn_output = self.o_proj(attn_output)
        return attn_output, present


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.down_proj = nn.Linear(c.ffn, c.hidden, bias=False)
        self.gemma = c.arch == "gemma"

    def forward(self, x):
        if self.gemma:
            act = F.gelu(self.gate_proj(x), approximate="tanh")     # gelu_pytorch_tanh
        else:
            act = F.silu(self.gate_proj(x))
        return self.down_proj(act * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        offset = c.arch == "gemma"
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden, c.eps, offset)
        self.post_attention_layernorm = RMSNorm(c.hidden, c.eps, offset)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, attention_mask, position_embeddings, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states, present


class DecoderModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.layers)])
        self.norm = RMSNorm(c.hidden, c.eps, c.arch == "gemma")
        self.rotary_emb = RotaryEmbedding(c.head_dim, c.theta)

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position, past_seen_tokens):
        dtype = input_tensor.dtype
        min_dtype = torch.finfo(dtype).min
        sequence_length = input_tensor.shape[1]
        target_length = attention_mask.shape[-1]
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
        causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        if self.c.mask_slice_assign:
            # transformers 4.38-4.52 as written: the padding part through an in-place slice
            # assignment (ScatterND in ONNX)
            causal_mask = causal_mask.clone()
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
            return causal_mask
        # attention_mask covers the whole target length here, so the padding part is the whole mask
        padding_mask = causal_mask + attention_mask[:, None, None, :]
        padding_mask = padding_mask == 0
        causal_mask = causal_mask.masked_fill(padding_mask, min_dtype)
        return causal_mask

    def decode(self, inputs_embeds, attention_mask, position_ids, past_key_values, scale_embeddings=False):
        """The causal mask, the rotary tables and the layers over the embeddings (transformers'
        model forward between the embedding and the final norm); the hidden states and presents."""
        past_seen_tokens = past_key_values[0][0].shape[-2]
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, cache_position, past_seen_tokens)
        hidden_states = inputs_embeds
        if scale_embeddings:
            normalizer = torch.tensor(self.c.hidden ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, causal_mask, position_embeddings, past)
            presents.append(present)
        return hidden_states, presents

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.decode(self.embed_tokens(input_ids), attention_mask, position_ids,
                                              past_key_values, self.c.arch == "gemma")
        hidden_states = self.norm(hidden_states)
        return hidden_states, presents


class CausalLM(FlatSignature, nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = DecoderModel(c)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        if c.arch == "gemma":
            self.lm_head.weight = self.model.embed_tokens.weight     # tied

    def causal_lm(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.model(input_ids, attention_mask, position_ids, past_key_values)
        logits = self.lm_head(hidden_states)
        logits = logits.float()
        return logits, presents


# ------------------------------------------------------------------------------- Phi-2 / GPT-J
class PhiAttention(nn.Module):
    """PhiAttention (transformers 4.4x, eager): partial rotary on q[..., :rotary_ndims]."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.head_dim = c.head_dim
        self.num_heads = c.heads
        self.rotary_ndims = c.rotary_dim
        self.q_proj = nn.Linear(c.hidden, c.heads * c.head_dim, bias=True)
        self.k_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=True)
        self.v_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=True)
        self.dense = nn.Linear(c.heads * c.head_dim, c.hidden, bias=True)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.c.kv_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.c.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query_rot, query_pass = (query_states[..., : self.rotary_ndims], query_states[..., self.rotary_ndims:])
        key_rot, key_pass = (key_states[..., : self.rotary_ndims], key_states[..., self.rotary_ndims:])
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        past_key, past_value = past_key_value
        key_states = torch.cat([past_key, key_states], dim=-2)
        value_states = torch.cat([past_value, value_states], dim=-2)
        present = (key_states, value_states)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = torch.matmul(query_states.to(torch.float32), key_states.to(torch.float32).transpose(2, 3)) \
            / math.sqrt(self.head_dim)
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.dense(attn_output), present


class FcMLP(nn.Module):
    """PhiMLP (fc1, fc2) / GPTJMLP (fc_in, fc_out): gelu_new between two biased linears."""

    def __init__(self, c, names):
        super().__init__()
        self.names = names
        setattr(self, names[0], nn.Linear(c.hidden, c.ffn))
        setattr(self, names[1], nn.Linear(c.ffn, c.hidden))

    def forward(self, x):
        return getattr(self, self.names[1])(gelu_new(getattr(self, self.names[0])(x)))


class PhiDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = PhiAttention(c)
        self.mlp = FcMLP(c, ("fc1", "fc2"))
        self.input_layernorm = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs, present = self.self_attn(hidden_states, attention_mask, position_embeddings, past_key_value)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_outputs + feed_forward_hidden_states + residual
        return hidden_states, present


class PhiModel(DecoderModel):
    def __init__(self, c):
        nn.Module.__init__(self)
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList([PhiDecoderLayer(c) for _ in range(c.layers)])
        self.final_layernorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.rotary_emb = RotaryEmbedding(c.rotary_dim, c.theta)

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.decode(self.embed_tokens(input_ids), attention_mask, position_ids, past_key_values)
        return self.final_layernorm(hidden_states), presents


class PhiForCausalLM(FlatSignature, nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = PhiModel(c)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=True)

    def causal_lm(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.model(input_ids, attention_mask, position_ids, past_key_values)
        return self.lm_head(hidden_states).float(), presents


class GPTNeoXAttention(PhiAttention):
    """GPTNeoXAttention (transformers, eager): one query_key_value projection, each head's q | k | v
    adjacent ([heads, 3 * head_dim]), sliced off the last axis of the 4-D view."""

    def __init__(self, c):
        nn.Module.__init__(self)
        self.c = c
        self.head_dim = c.head_dim
        self.num_heads = c.heads
        self.rotary_ndims = c.rotary_dim
        self.query_key_value = nn.Linear(c.hidden, 3 * c.hidden, bias=True)
        self.dense = nn.Linear(c.hidden, c.hidden, bias=True)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        qkv = self.query_key_value(hidden_states)
        if self.c.qkv_split == "chunk":
            # transformers >= 4.48: heads first, then qkv.chunk(3, dim=-1), which torch 2.x exports as
            # a Split of the last axis with a `split` input [d, d, d]. torch 1.13 knows no size for
            # that axis after the view and writes chunk as Slices whose bounds it computes from a
            # Shape at run time; split(d), the same three parts, makes it write torch 2.x's Split.
            qkv = qkv.view(bsz, q_len, -1, 3 * self.head_dim).transpose(1, 2)
            query_states, key_states, value_states = qkv.split(self.head_dim, dim=-1)
        else:
            qkv = qkv.view(bsz, q_len, self.num_heads, 3 * self.head_dim)
            d = self.head_dim
            query_states = qkv[..., :d].transpose(1, 2)
            key_states = qkv[..., d:2 * d].transpose(1, 2)
            value_states = qkv[..., 2 * d:].transpose(1, 2)
        cos, sin = position_embeddings
        query_rot, query_pass = (query_states[..., : self.rotary_ndims], query_states[..., self.rotary_ndims:])
        key_rot, key_pass = (key_states[..., : self.rotary_ndims], key_states[..., self.rotary_ndims:])
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        past_key, past_value = past_key_value
        key_states = torch.cat([past_key, key_states], dim=-2)
        value_states = torch.cat([past_value, value_states], dim=-2)
        present = (key_states, value_states)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.dense(attn_output), present


class GPTNeoXMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(c.hidden, c.ffn)
        self.dense_4h_to_h = nn.Linear(c.ffn, c.hidden)

    def forward(self, x):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.post_attention_layernorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.attention = GPTNeoXAttention(c)
        self.mlp = GPTNeoXMLP(c)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value):
        attn_output, present = self.attention(self.input_layernorm(hidden_states), attention_mask,
                                              position_embeddings, past_key_value)
        mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
        return mlp_output + attn_output + hidden_states, present  # use_parallel_residual


class GPTNeoXModel(DecoderModel):
    def __init__(self, c):
        nn.Module.__init__(self)
        self.c = c
        self.embed_in = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList([GPTNeoXLayer(c) for _ in range(c.layers)])
        self.final_layer_norm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.rotary_emb = RotaryEmbedding(c.rotary_dim, c.theta)

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.decode(self.embed_in(input_ids), attention_mask, position_ids, past_key_values)
        return self.final_layer_norm(hidden_states), presents


class GPTNeoXForCausalLM(FlatSignature, nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.gpt_neox = GPTNeoXModel(c)
        self.embed_out = nn.Linear(c.hidden, c.vocab, bias=False)

    def causal_lm(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.gpt_neox(input_ids, attention_mask, position_ids, past_key_values)
        return self.embed_out(hidden_states).float(), presents


def create_sinusoidal_positions(num_pos, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def repeat_interleave_2(x):
    # torch.repeat_interleave(x, 2, -1) as newer exporters write it (Unsqueeze, Concat, Reshape):
    # torch 1.13 exports repeat_interleave as a Loop over sequences, which no optimum export has.
    return torch.stack((x, x), dim=-1).flatten(-2)


def apply_rotary_pos_emb_gptj(tensor, sin, cos):
    sin = repeat_interleave_2(sin[:, :, None, :])
    cos = repeat_interleave_2(cos[:, :, None, :])
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class GPTJAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.register_buffer("bias", torch.tril(torch.ones((MAX_POSITIONS, MAX_POSITIONS), dtype=torch.bool))
                             .view(1, 1, MAX_POSITIONS, MAX_POSITIONS), persistent=False)
        self.embed_dim = c.hidden
        self.num_attention_heads = c.heads
        self.head_dim = c.head_dim
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.k_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.v_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.q_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.out_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.rotary_dim = c.rotary_dim
        self.embed_positions = create_sinusoidal_positions(MAX_POSITIONS, self.rotary_dim or self.embed_dim)

    def _split_heads(self, tensor, num_attention_heads, attn_head_size, rotary):
        new_shape = tensor.size()[:-1] + (num_attention_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        if rotary:
            return tensor
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = attn_weights / self.scale_attn
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        return torch.matmul(attn_weights, value)

    def _get_embed_positions(self, position_ids):
        return self.embed_positions.repeat(position_ids.shape[0], 1, 1)

    def forward(self, hidden_states, layer_past, attention_mask, position_ids):
        query = self.q_proj(hidden_states)
        key = self.k_proj(hidden_states)
        value = self.v_proj(hidden_states)
        query = self._split_heads(query, self.num_attention_heads, self.head_dim, True)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, True)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, False)
        embed_positions = self._get_embed_positions(position_ids)
        repeated_position_ids = position_ids.unsqueeze(-1).repeat(1, 1, embed_positions.shape[-1])
        sincos = torch.gather(embed_positions, 1, repeated_position_ids)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        if self.rotary_dim is not None:
            k_rot = key[:, :, :, : self.rotary_dim]
            k_pass = key[:, :, :, self.rotary_dim:]
            q_rot = query[:, :, :, : self.rotary_dim]
            q_pass = query[:, :, :, self.rotary_dim:]
            k_rot = apply_rotary_pos_emb_gptj(k_rot, sin, cos)
            q_rot = apply_rotary_pos_emb_gptj(q_rot, sin, cos)
            key = torch.cat([k_rot, k_pass], dim=-1)
            query = torch.cat([q_rot, q_pass], dim=-1)
        else:
            key = apply_rotary_pos_emb_gptj(key, sin, cos)
            query = apply_rotary_pos_emb_gptj(query, sin, cos)
        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        past_key, past_value = layer_past
        key = torch.cat((past_key, key), dim=-2)
        value = torch.cat((past_value, value), dim=-2)
        present = (key.to(hidden_states.dtype), value)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        return self.out_proj(attn_output), present


class GPTJBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.hidden, eps=c.eps)
        self.attn = GPTJAttention(c)
        self.mlp = FcMLP(c, ("fc_in", "fc_out"))

    def forward(self, hidden_states, layer_past, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, present = self.attn(hidden_states, layer_past, attention_mask, position_ids)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_output + feed_forward_hidden_states + residual
        return hidden_states, present


class GPTJModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.hidden)
        self.h = nn.ModuleList([GPTJBlock(c) for _ in range(c.layers)])
        self.ln_f = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        position_ids = position_ids.view(-1, input_shape[-1]).long()
        attention_mask = attention_mask.view(batch_size, -1)
        attention_mask = attention_mask[:, None, None, :]
        attention_mask = attention_mask.to(dtype=torch.float32)
        attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        hidden_states = self.wte(input_ids)
        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past, attention_mask, position_ids)
            presents.append(present)
        hidden_states = self.ln_f(hidden_states)
        return hidden_states.view(output_shape), presents


class GPTJForCausalLM(FlatSignature, nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = GPTJModel(c)
        self.lm_head = nn.Linear(c.hidden, c.vocab)

    def causal_lm(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden_states, presents = self.transformer(input_ids, attention_mask, position_ids, past_key_values)
        return self.lm_head(hidden_states).to(torch.float32), presents


# ------------------------------------------------------------------------------------ building
def init_weights(model, c):
    """Seeded random weights scaled so that logits have a spread of a few units: embeddings (GPT-2's
    position embedding too) and the (tied or not) lm_head with std 3 / sqrt(hidden), projections std
    1 / sqrt(fan_in) (times 1.5 for q and k, to give attention some contrast; times 3 for the
    projections back into the residual stream when the lm_head is tied, or the greedy step would
    mostly repeat its input token; Gemma: times 3 sqrt(hidden), its embedding's own factor), biases
    std 0.1, norm scales 1 + N(0, 0.1) (Gemma: the stored w is N(0, 0.1))."""
    torch.manual_seed(c.seed)
    tied = c.arch in ("gpt2", "gemma")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name.endswith(".b"):
                p.normal_(0.0, 0.1)
            elif "norm" in name or name.split(".")[-2].startswith("ln"):
                if c.arch == "gemma":
                    p.normal_(0.0, 0.1)
                else:
                    p.normal_(1.0, 0.1)
            elif name.endswith("wte.weight") or name.endswith("embed_tokens.weight") or name == "lm_head.weight" \
                    or name.endswith("embed_in.weight") or name == "embed_out.weight":
                p.normal_(0.0, 3.0 / math.sqrt(c.hidden))
            elif name.endswith("wpe.weight"):
                p.normal_(0.0, 3.0 / math.sqrt(c.hidden))
            else:
                fan_in = p.shape[0] if "c_attn" in name or "c_proj" in name or "c_fc" in name else p.shape[1]
                gain = 1.5 if any(s in name for s in ("q_proj", "k_proj", "c_attn", "query_key_value")) else 1.0
                if tied and any(s in name for s in ("c_proj", "o_proj", "down_proj")):
                    # Gemma: the embedding enters the residual stream times sqrt(hidden)
                    gain = 3.0 * (math.sqrt(c.hidden) if c.arch == "gemma" else 1.0)
                p.normal_(0.0, gain / math.sqrt(fan_in))


def build(c):
    torch.manual_seed(c.seed)
    model = {"gpt2": GPT2LMHeadModel, "phi2": PhiForCausalLM, "gptj": GPTJForCausalLM,
             "gptneox": GPTNeoXForCausalLM}.get(c.arch, CausalLM)(c)
    init_weights(model, c)
    model.eval()
    return model


def config_json(c):
    if c.arch == "gpt2":
        return {
            "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": c.vocab,
            "n_embd": c.hidden, "n_head": c.heads, "n_layer": c.layers, "n_inner": c.ffn,
            "n_positions": MAX_POSITIONS, "n_ctx": MAX_POSITIONS, "activation_function": "gelu_new",
            "layer_norm_epsilon": c.eps, "scale_attn_weights": True, "tie_word_embeddings": True,
            "bos_token_id": BOS, "eos_token_id": EOS, "use_cache": True, "torch_dtype": "float32",
        }
    if c.arch == "gptj":
        return {
            "architectures": ["GPTJForCausalLM"], "model_type": "gptj", "vocab_size": c.vocab, "n_embd": c.hidden,
            "n_head": c.heads, "n_layer": c.layers, "n_inner": c.ffn, "n_positions": MAX_POSITIONS,
            "rotary_dim": c.rotary_dim, "activation_function": "gelu_new", "layer_norm_epsilon": c.eps,
            "tie_word_embeddings": False, "bos_token_id": BOS, "eos_token_id": EOS, "use_cache": True,
            "torch_dtype": "float32",
        }
    if c.arch == "gptneox":
        return {
            "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "vocab_size": c.vocab,
            "hidden_size": c.hidden, "intermediate_size": c.ffn, "num_hidden_layers": c.layers,
            "num_attention_heads": c.heads, "max_position_embeddings": MAX_POSITIONS,
            "rotary_pct": c.rotary_dim / c.head_dim, "rotary_emb_base": c.theta, "rope_scaling": None,
            "hidden_act": "gelu", "layer_norm_eps": c.eps, "use_parallel_residual": True,
            "attention_bias": True, "tie_word_embeddings": False, "bos_token_id": BOS, "eos_token_id": EOS,
            "use_cache": True, "torch_dtype": "float32",
        }
    if c.arch == "phi2":
        return {
            "architectures": ["PhiForCausalLM"], "model_type": "phi", "vocab_size": c.vocab, "hidden_size": c.hidden,
            "intermediate_size": c.ffn, "num_hidden_layers": c.layers, "num_attention_heads": c.heads,
            "num_key_value_heads": c.kv_heads, "max_position_embeddings": MAX_POSITIONS,
            "partial_rotary_factor": c.rotary_dim / c.head_dim, "rope_theta": c.theta, "rope_scaling": None,
            "hidden_act": "gelu_new", "layer_norm_eps": c.eps, "qk_layernorm": False, "tie_word_embeddings": False,
            "bos_token_id": BOS, "eos_token_id": EOS, "use_cache": True, "torch_dtype": "float32",
        }
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
            "gemma": "GemmaForCausalLM"}[c.arch]
    cfg = {
        "architectures": [arch], "model_type": c.arch, "vocab_size": c.vocab, "hidden_size": c.hidden,
        "intermediate_size": c.ffn, "num_hidden_layers": c.layers, "num_attention_heads": c.heads,
        "num_key_value_heads": c.kv_heads, "head_dim": c.head_dim, "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": c.eps, "rope_theta": c.theta, "rope_scaling": None,
        "hidden_act": "gelu_pytorch_tanh" if c.arch == "gemma" else "silu",
        "tie_word_embeddings": c.arch == "gemma", "attention_bias": c.arch == "qwen2",
        "bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": 0, "use_cache": True, "torch_dtype": "float32",
    }
    if c.sdpa_style:
        cfg["_attn_implementation"] = "sdpa"
    return cfg


def names(c):
    inputs = ["input_ids", "attention_mask"] + (["position_ids"] if c.position_ids else [])
    outputs = ["logits"]
    for i in range(c.layers):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    return inputs, outputs


def feeds(c, tokens, past, past_length, batch=1):
    """The inputs of one run as ort_logits.mjs feeds them: mask all ones, positions past + i."""
    ids = torch.tensor([tokens] * batch, dtype=torch.int64)
    args = [ids, torch.ones(batch, past_length + len(tokens), dtype=torch.int64)]
    if c.position_ids:
        args.append(torch.arange(past_length, past_length + len(tokens), dtype=torch.int64)[None].expand(batch, -1)
                    .contiguous())
    return args + list(past)


def empty_past(c, batch=1, length=0):
    g = torch.Generator().manual_seed(1234)
    return [torch.randn(batch, c.kv_heads, length, c.head_dim, generator=g) for _ in range(2 * c.layers)]


def export(c, model):
    inputs, outputs = names(c)
    # Traced with batch 2, 3 past positions and 4 new tokens, so nothing is specialised to 1 or 0.
    args = tuple(feeds(c, [3, 4, 5, 6], empty_past(c, 2, 3), 3, batch=2))
    dynamic_axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
                    "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
                    "logits": {0: "batch_size", 1: "sequence_length"}}
    if c.position_ids:
        dynamic_axes["position_ids"] = {0: "batch_size", 1: "sequence_length"}
    for i in range(c.layers):
        for kv in ("key", "value"):
            dynamic_axes[f"past_key_values.{i}.{kv}"] = {0: "batch_size", 2: "past_sequence_length"}
            dynamic_axes[f"present.{i}.{kv}"] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
    buf = io.BytesIO()
    # Gemma's normalizer is a torch.tensor constant in transformers too: the tracer's warning about it
    # is expected.
    warnings.filterwarnings("ignore", message="torch.tensor results are registered as constants")
    with torch.no_grad():
        torch.onnx.export(model, args, buf, input_names=inputs, output_names=outputs, dynamic_axes=dynamic_axes,
                          opset_version=17, do_constant_folding=True)
    return buf.getvalue()


# ------------------------------------------------------------------------ torch-side protocol
def run_protocol(c, model, prompt, steps, branch_prefix=None, branch_ids=None, branch_steps=4):
    """ort_logits.mjs's protocol on the torch module: returns (main rows, branch rows)."""

    def step(tokens, past, past_length):
        with torch.no_grad():
            out = model(*feeds(c, tokens, past, past_length))
        return out[0][0, -1].double().numpy(), list(out[1:])

    def greedy(tokens, past, position, n):
        rows = []
        fed = tokens
        for _ in range(n + 1):
            row, past = step(fed, past, position)
            rows.append(row)
            position += len(fed)
            fed = [int(np.argmax(row))]
        return rows

    main_rows = greedy(prompt, empty_past(c), 0, steps)
    branch_rows = None
    if branch_prefix is not None:
        _, cache = step(prompt, empty_past(c), 0)
        prefix = [t[:, :, :branch_prefix].contiguous() for t in cache]
        branch_rows = greedy(branch_ids, prefix, branch_prefix, branch_steps)
    return main_rows, branch_rows


def compare(c, model, oracle_path):
    with open(oracle_path) as f:
        ref = json.load(f)
    br = ref.get("branch")
    has_branch = br is not None and "steps" in br
    main_rows, branch_rows = run_protocol(c, model, ref["prompt_ids"], len(ref["greedy_ids"]),
                                          br["prefix_length"] if has_branch else None,
                                          br["fed_ids"] if has_branch else None,
                                          len(br["greedy_ids"]) if has_branch else 4)
    worst, argmax_ok = 0.0, True
    pairs = list(zip(main_rows, ref["steps"])) + (list(zip(branch_rows, br["steps"])) if has_branch else [])
    for row, s in pairs:
        ort = np.array(s["logits"], dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(row - ort))))
        argmax_ok &= int(np.argmax(row)) == s["argmax"]
    scale = max(float(np.max(np.abs(np.array(s["logits"])))) for _, s in pairs)
    print(f"{oracle_path}: torch vs ONNX Runtime over {len(pairs)} rows: max |dlogit| {worst:.3g} "
          f"(largest |logit| {scale:.3g}), argmax {'equal' if argmax_ok else 'DIFFERENT'}")
    return worst, argmax_ok


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", required=True, choices=sorted(ARCH_DEFAULTS))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    for k in ("hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"):
        p.add_argument("--" + k.replace("_", "-"), type=int)
    p.add_argument("--rotary-dim", type=int,
                   help="phi2 / gptj / gptneox: rotated dimensions per head (default 8; gptneox 4)")
    p.add_argument("--qkv-split", choices=("slice", "chunk"), default="slice",
                   help="gptneox: q / k / v Sliced off the [b, s, heads, 3 d] view (default) or the view "
                        "transposed to heads first and chunked (Split)")
    p.add_argument("--theta", type=float, help="rope theta (default: 1e4, qwen2/qwen3 1e6)")
    p.add_argument("--eps", type=float)
    p.add_argument("--no-position-ids", dest="position_ids", action="store_false",
                   help="gpt2 only: positions from the past length in the graph, no position_ids input")
    p.add_argument("--sdpa-style", action="store_true",
                   help="attention as torch's scaled_dot_product_attention export writes it (not gpt2)")
    p.add_argument("--mask-slice-assign", action="store_true",
                   help="not gpt2: the padding part of the 4-D mask written as transformers does, an in-place "
                        "slice assignment (ScatterND), instead of one masked_fill on the whole mask")
    p.add_argument("--out", help="output folder")
    p.add_argument("--compare", metavar="ORT_JSON",
                   help="run the torch module on the oracle file's protocol and compare its logits rows")
    p.add_argument("--tolerance", type=float, default=1e-4, help="--compare: largest |dlogit| accepted")
    a = p.parse_args(argv)
    for k, v in ARCH_DEFAULTS[a.arch].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.rotary_dim is not None and a.arch not in ("phi2", "gptj", "gptneox"):
        p.error("--rotary-dim is for phi2, gptj and gptneox")
    if a.qkv_split != "slice" and a.arch != "gptneox":
        p.error("--qkv-split is for gptneox")
    if a.arch in ("phi2", "gptj", "gptneox") and (a.rotary_dim % 2 or not 0 < a.rotary_dim <= a.head_dim):
        p.error("--rotary-dim must be even and in (0, head_dim]")
    if a.arch in ("gptj", "gptneox") and (a.kv_heads != a.heads or a.head_dim * a.heads != a.hidden):
        p.error(a.arch + ": kv heads = heads and head_dim * heads = hidden")
    if not a.position_ids and a.arch != "gpt2":
        p.error("--no-position-ids is for --arch gpt2 (the rotary needs position_ids)")
    if a.mask_slice_assign and a.arch in ("gpt2", "gptj"):
        p.error("--mask-slice-assign is for the rotary architectures")
    if a.sdpa_style and a.arch in ("gpt2", "gptj", "phi2", "gptneox"):
        p.error("--sdpa-style is for the rotary architectures")
    if a.arch == "gpt2" and (a.kv_heads != a.heads or a.head_dim * a.heads != a.hidden):
        p.error("gpt2: kv heads = heads and head_dim * heads = hidden")
    if a.heads % a.kv_heads:
        p.error("heads must be a multiple of kv heads")
    if not a.out and not a.compare:
        p.error("give --out and/or --compare")
    return a


def main(argv):
    c = parse_args(argv)
    torch.set_num_threads(1)
    model = build(c)
    if c.out:
        data = export(c, model)
        os.makedirs(c.out, exist_ok=True)
        with open(os.path.join(c.out, "model.onnx"), "wb") as f:
            f.write(data)
        with open(os.path.join(c.out, "config.json"), "w") as f:
            json.dump(config_json(c), f, indent=2)
            f.write("\n")
        skip = {"--out", "--compare", "--tolerance"}
        args = [x for j, x in enumerate(argv) if x not in skip and (j == 0 or argv[j - 1] not in skip)]
        command = " ".join(["python3", "tools/onnx/make_hf_style_model.py"] + [shlex.quote(x) for x in args])
        import onnx
        with open(os.path.join(c.out, "generator.json"), "w") as f:
            json.dump({"command": command, "torch": torch.__version__, "numpy": np.__version__,
                       "onnx": onnx.__version__}, f, indent=1)
            f.write("\n")
    if c.compare:
        worst, argmax_ok = compare(c, model, c.compare)
        if worst > c.tolerance or not argmax_ok:
            sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
