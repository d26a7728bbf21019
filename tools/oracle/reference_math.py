"""What the float64 NumPy reference forwards (gemma4_reference.py, hybrid_reference.py) share:
reading a GGUF model into float64 tensors, RMSNorm, NEOX rotary, softmax. Written from llama.cpp's
definitions (ggml_rms_norm, ggml_rope_ext with NEOX pairs), independent of the C++ code under test."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gguf"))
import quants  # noqa: E402
from gguf_writer import read_gguf  # noqa: E402


def load(path):
    """The model's metadata (tokenizer keys left out) and every tensor decoded to float64, numpy
    shape = reversed ggml dims (so a weight of ggml dims [in, out] is an (out, in) matrix)."""
    f = read_gguf(path)
    kv = {k.key: f.kv(k.key) for k in f.kvs if not k.key.startswith("tokenizer.")}
    t = {}
    for ti in f.tensors:
        x = quants.dequantize(f.tensor_bytes(ti.name), ti.gtype, int(np.prod(ti.dims)))
        t[ti.name] = np.asarray(x, dtype=np.float64).reshape(list(reversed(ti.dims)))
    return kv, t


def rms_norm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) over the last axis, times w (None: no weight)."""
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def rope_neox(x, pos, n_rot, base, factors=None):
    """NEOX rotary of the first n_rot dims of each row of x ([heads, head_dim]): pair i (< n_rot/2)
    is (x[i], x[i + n_rot/2]) turned by pos * base^(-2i/n_rot) / factors[i]; dims from n_rot on
    pass through."""
    half = n_rot // 2
    theta = pos * base ** (-2.0 * np.arange(half, dtype=np.float64) / n_rot)
    if factors is not None:
        theta = theta / factors[:half]
    c, s = np.cos(theta), np.sin(theta)
    y = x.copy()
    a, b = x[:, :half], x[:, half:n_rot]
    y[:, :half] = a * c - b * s
    y[:, half:n_rot] = a * s + b * c
    return y


def probs(logits):
    e = np.exp(logits - logits.max())
    return e / e.sum()
