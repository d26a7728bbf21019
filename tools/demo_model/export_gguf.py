"""Writes the trained model and its tokenizer as a llama GGUF with the project's writer."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from gguf_writer import GGUFWriter, ValueType  # noqa: E402

import spm_tokenizer as spm  # noqa: E402


def _f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def write_gguf(path, model, tok, chat_template, name, description):
    cfg = model.cfg
    w = GGUFWriter(version=3)
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", name)
    w.add_string("general.description", description)
    w.add_string("general.license", "Apache-2.0")
    w.add_uint32("general.file_type", 0)  # all F32
    w.add_uint32("llama.vocab_size", len(tok))
    w.add_uint32("llama.context_length", cfg.n_ctx)
    w.add_uint32("llama.embedding_length", cfg.n_embd)
    w.add_uint32("llama.block_count", cfg.n_layer)
    w.add_uint32("llama.feed_forward_length", cfg.n_ff)
    w.add_uint32("llama.attention.head_count", cfg.n_head)
    w.add_uint32("llama.attention.head_count_kv", cfg.n_head_kv)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", cfg.rms_eps)
    w.add_float32("llama.rope.freq_base", cfg.rope_base)
    w.add_uint32("llama.rope.dimension_count", cfg.head_dim)

    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tok.tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.scores", tok.scores, ValueType.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", tok.types, ValueType.INT32)
    w.add_uint32("tokenizer.ggml.unknown_token_id", spm.UNK)
    w.add_uint32("tokenizer.ggml.bos_token_id", spm.BOS)
    w.add_uint32("tokenizer.ggml.eos_token_id", spm.EOS)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", True)
    w.add_string("tokenizer.chat_template", chat_template)

    # A torch Linear weight is [out, in] (row-major): ggml dims [in, out], same bytes.
    def linear(gguf_name, weight):
        a = _f32(weight)
        w.add_tensor(gguf_name, [a.shape[1], a.shape[0]], "F32", a)

    def vector(gguf_name, weight):
        a = _f32(weight)
        w.add_tensor(gguf_name, [a.shape[0]], "F32", a)

    linear("token_embd.weight", model.tok_embd.weight)
    for i, b in enumerate(model.blocks):
        p = "blk.%d." % i
        vector(p + "attn_norm.weight", b.attn_norm.weight)
        linear(p + "attn_q.weight", b.wq.weight)
        linear(p + "attn_k.weight", b.wk.weight)
        linear(p + "attn_v.weight", b.wv.weight)
        linear(p + "attn_output.weight", b.wo.weight)
        vector(p + "ffn_norm.weight", b.ffn_norm.weight)
        linear(p + "ffn_gate.weight", b.w_gate.weight)
        linear(p + "ffn_up.weight", b.w_up.weight)
        linear(p + "ffn_down.weight", b.w_down.weight)
    vector("output_norm.weight", model.out_norm.weight)
    if model.output is not None:  # tied otherwise: llama.cpp reuses token_embd
        linear("output.weight", model.output.weight)
    w.write(path)
