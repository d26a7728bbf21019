#!/usr/bin/env python3
"""NumPy encoders and spec decoders for ggml tensor types.

Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4.

Block layouts (all little endian, "half" = IEEE fp16), as defined by ggml:

  Q8_0  32 elems, 34 B : half d; int8 qs[32]                     x[j] = d * qs[j]
  Q4_0  32 elems, 18 B : half d; u8 qs[16]                       x[j]    = d * ((qs[j] & 15) - 8)
                                                                 x[j+16] = d * ((qs[j] >> 4) - 8)
  Q4_1  32 elems, 20 B : half d; half m; u8 qs[16]               x = d * nibble + m (same nibble order)
  Q5_0  32 elems, 22 B : half d; u8 qh[4]; u8 qs[16]             5th bit of element j is bit j of the
                                                                 little-endian u32 qh; x = d * (q - 16)
  Q5_1  32 elems, 24 B : half d; half m; u8 qh[4]; u8 qs[16]     x = d * q + m
  Q2_K  256 elems, 84 B: u8 scales[16]; u8 qs[64]; half d; half dmin
        16 groups of 16; element e = 128h + 32j + 16u + l (h, u in 0..1, j < 4, l < 16) is
        q = (qs[32h + 16u + l] >> 2j) & 3 in group g = 8h + 2j + u:
        x = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4)
  Q3_K  256 elems, 110 B: u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
        as Q2_K's groups and low bits, plus the high bit (bit 4h + j of hmask[16u + l]):
        x = d * (s[g] - 32) * (q_low + 4 * high - 4), s[g] 6 bits: the low 4 are nibble g // 8
        of scales[g % 8], the high 2 are bits 2 (g // 4) of scales[8 + g % 4]
  Q4_K  256 elems, 144 B: half d; half dmin; u8 scales[12]; u8 qs[128]
        8 sub-blocks of 32 with 6-bit scale sc[i] and 6-bit min m[i] packed in `scales`:
          i < 4 : sc = scales[i] & 63,  m = scales[i+4] & 63
          i >= 4: sc = (scales[i+4] & 15) | ((scales[i-4] >> 6) << 4)
                  m  = (scales[i+4] >> 4) | ((scales[i]   >> 6) << 4)
        qs[32*c + l] holds sub-block 2c element l (low nibble) and sub-block 2c+1 element l (high)
        x = d * sc[i] * q - dmin * m[i]
  Q5_K  256 elems, 176 B: half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
        as Q4_K, plus the 5th bit of element l of sub-block i is bit i of qh[l]
  Q6_K  256 elems, 210 B: u8 ql[128]; u8 qh[64]; int8 scales[16]; half d
        per 128-element half n (ql += 64n, qh += 32n), l < 32:
          q[l]     = (ql[l]    & 15) | ((qh[l] >> 0 & 3) << 4)
          q[l+32]  = (ql[l+32] & 15) | ((qh[l] >> 2 & 3) << 4)
          q[l+64]  = (ql[l]    >> 4) | ((qh[l] >> 4 & 3) << 4)
          q[l+96]  = (ql[l+32] >> 4) | ((qh[l] >> 6 & 3) << 4)
        x[e] = d * scales[e // 16] * (q[e] - 32)
  MXFP4 32 elems, 17 B: u8 e (E8M0); u8 qs[16]                  x[j] = v[qs[j] & 15] * 2^(e - 128),
        x[j+16] = v[qs[j] >> 4] * 2^(e - 128), v = 0 1 2 3 4 6 8 12 0 -1 -2 -3 -4 -6 -8 -12 (FP4 E2M1
        values times 2, with ggml's half scale; e < 2 gives the subnormal 2^-128 / 2^-127).
        The encoder is ggml's quantize_row_mxfp4_ref (e = floor(log2f(amax)) - 2 + 127, each element
        the nearest of the 16 values, the lowest index on a tie), so its blocks equal ggml's.
  BF16: upper 16 bits of the fp32 value (encoder rounds to nearest even, NaN kept quiet).

Encoders are simple round-to-nearest quantizers (per-block max/min), not ggml's optimised
search; they produce valid blocks.  Decoders are written independently from the layouts above
(they do not reuse the encoder's packing code).

API:
    quantize(x, qtype)  -> np.ndarray uint8 (raw blocks; x's size must be a multiple of the block)
    dequantize(raw, qtype, n=None) -> np.ndarray float32 (n elements)
    block_dtype(qtype)  -> numpy structured dtype of one block
"""
from __future__ import annotations

from typing import Union

import numpy as np

try:
    from .gguf_writer import BLOCK_LAYOUT, GGMLType, ggml_type
except ImportError:  # used as a script / from tools/gguf on sys.path
    from gguf_writer import BLOCK_LAYOUT, GGMLType, ggml_type

QK_K = 256
# (new types go last: make_quant_vectors.py seeds each type by its index here)
SUPPORTED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "Q2_K", "Q3_K",
             "MXFP4")

_BLOCK_DTYPES = {
    GGMLType.Q8_0: np.dtype([("d", "<f2"), ("qs", "i1", (32,))]),
    GGMLType.Q4_0: np.dtype([("d", "<f2"), ("qs", "u1", (16,))]),
    GGMLType.Q4_1: np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))]),
    GGMLType.Q5_0: np.dtype([("d", "<f2"), ("qh", "u1", (4,)), ("qs", "u1", (16,))]),
    GGMLType.Q5_1: np.dtype([("d", "<f2"), ("m", "<f2"), ("qh", "u1", (4,)), ("qs", "u1", (16,))]),
    GGMLType.Q2_K: np.dtype([("scales", "u1", (16,)), ("qs", "u1", (64,)), ("d", "<f2"), ("dmin", "<f2")]),
    GGMLType.Q3_K: np.dtype([("hmask", "u1", (32,)), ("qs", "u1", (64,)), ("scales", "u1", (12,)), ("d", "<f2")]),
    GGMLType.Q4_K: np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qs", "u1", (128,))]),
    GGMLType.Q5_K: np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qh", "u1", (32,)),
                             ("qs", "u1", (128,))]),
    GGMLType.Q6_K: np.dtype([("ql", "u1", (128,)), ("qh", "u1", (64,)), ("scales", "i1", (16,)), ("d", "<f2")]),
    GGMLType.MXFP4: np.dtype([("e", "u1"), ("qs", "u1", (16,))]),
}
for _t, _dt in _BLOCK_DTYPES.items():
    assert _dt.itemsize == BLOCK_LAYOUT[_t][1], (_t, _dt.itemsize)

TypeLike = Union[str, int, GGMLType]


def block_dtype(qtype: TypeLike) -> np.dtype:
    return _BLOCK_DTYPES[ggml_type(qtype)]


def nbytes(qtype: TypeLike, n_elems: int) -> int:
    blk, bsz = BLOCK_LAYOUT[ggml_type(qtype)]
    if n_elems % blk:
        raise ValueError("%d elements is not a multiple of the %s block (%d)" % (n_elems, ggml_type(qtype).name, blk))
    return n_elems // blk * bsz


# ---------------------------------------------------------------------------------------------
# helpers

def _f16(a) -> np.ndarray:
    """Round to fp16 (nearest even, as F16C / ggml_fp32_to_fp16) and back to fp32."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


def _inv(a: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=np.float32)
    nz = a != 0
    out[nz] = 1.0 / a[nz]
    return out


def _round(a: np.ndarray) -> np.ndarray:
    """Round half away from zero (like C roundf / ggml's nearest_int for our purposes)."""
    return np.trunc(a + np.copysign(np.float32(0.5), a)).astype(np.float32)


def _signed_absmax(x: np.ndarray) -> np.ndarray:
    """Per row (last axis) the element with the largest magnitude, keeping its sign."""
    idx = np.argmax(np.abs(x), axis=-1)
    return np.take_along_axis(x, idx[..., None], axis=-1)[..., 0]


def fp32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16) & 0xFFFF
    r = np.where(nan, (u >> 16) | 64, r) & 0xFFFF
    return r.astype(np.uint16)


# ---------------------------------------------------------------------------------------------
# encoders (x: float32, shape (nblocks, block_elems)) -> structured block array

def _enc_q8_0(x):
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q8_0])
    d = _f16(np.abs(x).max(axis=1) / 127.0)
    b["d"] = d
    b["qs"] = np.clip(_round(x * _inv(d)[:, None]), -128, 127).astype(np.int8)
    return b


def _nibbles(q):  # q (nb, 32) values 0..15 -> (nb,16) bytes, element j low, j+16 high
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def _qh5(q):  # 5th bits of 32 elements -> 4 bytes (little-endian u32, bit j = element j)
    bits = ((q >> 4) & 1).astype(np.uint32)
    u = (bits << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint64).astype(np.uint32)
    return u.astype("<u4").view(np.uint8).reshape(-1, 4)


def _enc_q4_0(x):
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q4_0])
    d = _f16(_signed_absmax(x) / -8.0)
    b["d"] = d
    q = np.clip(_round(x * _inv(d)[:, None]) + 8, 0, 15).astype(np.uint8)
    b["qs"] = _nibbles(q)
    return b


def _enc_q4_1(x):
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q4_1])
    mn, mx = x.min(axis=1), x.max(axis=1)
    d, m = _f16((mx - mn) / 15.0), _f16(mn)
    b["d"], b["m"] = d, m
    q = np.clip(_round((x - m[:, None]) * _inv(d)[:, None]), 0, 15).astype(np.uint8)
    b["qs"] = _nibbles(q)
    return b


def _enc_q5_0(x):
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q5_0])
    d = _f16(_signed_absmax(x) / -16.0)
    b["d"] = d
    q = np.clip(_round(x * _inv(d)[:, None]) + 16, 0, 31).astype(np.uint8)
    b["qs"] = _nibbles(q & 15)
    b["qh"] = _qh5(q)
    return b


def _enc_q5_1(x):
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q5_1])
    mn, mx = x.min(axis=1), x.max(axis=1)
    d, m = _f16((mx - mn) / 31.0), _f16(mn)
    b["d"], b["m"] = d, m
    q = np.clip(_round((x - m[:, None]) * _inv(d)[:, None]), 0, 31).astype(np.uint8)
    b["qs"] = _nibbles(q & 15)
    b["qh"] = _qh5(q)
    return b


def _pack_k4_scales(sc, m):
    """sc, m: (nb, 8) ints 0..63 -> (nb, 12) packed bytes."""
    sc = sc.astype(np.uint8)
    m = m.astype(np.uint8)
    out = np.zeros((len(sc), 12), np.uint8)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    return out


def _k_affine(x, nmax):
    """Shared Q4_K/Q5_K quantization: x (nb, 8, 32) -> d, dmin (nb,), sc, m (nb, 8), q (nb, 8, 32)."""
    mn = np.minimum(x.min(axis=2), 0.0)          # offsets are subtracted: min must be <= 0
    mx = x.max(axis=2)
    scale = (mx - mn) / nmax                      # (nb, 8) >= 0
    mins = -mn                                    # (nb, 8) >= 0
    d = _f16(scale.max(axis=1) / 63.0)
    dmin = _f16(mins.max(axis=1) / 63.0)
    sc = np.clip(_round(scale * _inv(d)[:, None]), 0, 63)
    m = np.clip(_round(mins * _inv(dmin)[:, None]), 0, 63)
    eff_d = d[:, None] * sc                       # (nb, 8)
    eff_m = dmin[:, None] * m
    q = np.clip(_round((x + eff_m[..., None]) * _inv(eff_d)[..., None]), 0, nmax).astype(np.uint8)
    return d, dmin, sc, m, q


def _k_low_nibbles(q):
    """q (nb, 8, 32) -> qs (nb, 128): qs[32c + l] = q[2c][l] | q[2c+1][l] << 4."""
    return ((q[:, 0::2, :] & 15) | ((q[:, 1::2, :] & 15) << 4)).reshape(len(q), 128).astype(np.uint8)


def _enc_q4_k(x):
    x = x.reshape(-1, 8, 32)
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q4_K])
    d, dmin, sc, m, q = _k_affine(x, 15)
    b["d"], b["dmin"] = d, dmin
    b["scales"] = _pack_k4_scales(sc, m)
    b["qs"] = _k_low_nibbles(q)
    return b


def _enc_q5_k(x):
    x = x.reshape(-1, 8, 32)
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q5_K])
    d, dmin, sc, m, q = _k_affine(x, 31)
    b["d"], b["dmin"] = d, dmin
    b["scales"] = _pack_k4_scales(sc, m)
    b["qs"] = _k_low_nibbles(q)
    hb = ((q >> 4) & 1).astype(np.uint8)          # (nb, 8, 32)
    b["qh"] = (hb << np.arange(8, dtype=np.uint8)[None, :, None]).sum(axis=1, dtype=np.uint32).astype(np.uint8)
    return b


def _k16_groups(x):
    """x (nb, 256) -> (nb, 16, 16): group g = 8h + 2j + u holds elements 128h + 32j + 16u + l."""
    return x.reshape(len(x), 16, 16)  # that order is plain consecutive 16s


def _pack_2bit(q):
    """q (nb, 16, 16) values 0..3 by group -> qs (nb, 64): bits 2j of qs[32h + 16u + l]."""
    q = q.reshape(len(q), 2, 4, 2, 16).astype(np.uint8)  # h, j, u, l
    qs = np.zeros((len(q), 2, 2, 16), np.uint8)          # h, u, l
    for j in range(4):
        qs |= q[:, :, j] << (2 * j)
    return qs.reshape(len(q), 64)


def _enc_q2_k(x):
    xs = _k16_groups(x)
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q2_K])
    mn = np.minimum(xs.min(axis=2), 0.0)             # offsets are subtracted: min must be <= 0
    scale = (xs.max(axis=2) - mn) / 3.0
    d = _f16(scale.max(axis=1) / 15.0)
    dmin = _f16((-mn).max(axis=1) / 15.0)
    sc = np.clip(_round(scale * _inv(d)[:, None]), 0, 15)
    m = np.clip(_round(-mn * _inv(dmin)[:, None]), 0, 15)
    q = np.clip(_round((xs + (dmin[:, None] * m)[..., None]) * _inv(d[:, None] * sc)[..., None]), 0, 3)
    b["d"], b["dmin"] = d, dmin
    b["scales"] = (sc.astype(np.uint8) | (m.astype(np.uint8) << 4))
    b["qs"] = _pack_2bit(q)
    return b


def _enc_q3_k(x):
    xs = _k16_groups(x)
    b = np.zeros(len(x), _BLOCK_DTYPES[GGMLType.Q3_K])
    scale = _signed_absmax(xs) / -4.0                 # the largest magnitude maps to q = -4
    d = _f16(np.abs(scale).max(axis=1) / 31.0)
    s = np.clip(_round(scale * _inv(d)[:, None]), -32, 31).astype(np.int32)
    q = (np.clip(_round(xs * _inv(d[:, None] * s)[..., None]), -4, 3) + 4).astype(np.uint8)  # 0..7
    b["d"] = d
    b["qs"] = _pack_2bit(q & 3)
    high = (q >> 2).reshape(len(x), 2, 4, 2, 16)      # h, j, u, l
    hmask = np.zeros((len(x), 2, 16), np.uint8)       # u, l
    for h in range(2):
        for j in range(4):
            hmask |= high[:, h, j] << (4 * h + j)
    b["hmask"] = hmask.reshape(len(x), 32)
    u = (s + 32).astype(np.uint8)                     # 6 bits
    scales = np.zeros((len(x), 12), np.uint8)
    for g in range(16):
        scales[:, g % 8] |= (u[:, g] & 15) << (4 * (g // 8))
        scales[:, 8 + g % 4] |= (u[:, g] >> 4) << (2 * (g // 4))
    b["scales"] = scales
    return b


def _enc_q6_k(x):
    nb = len(x)
    xs = x.reshape(nb, 16, 16)
    b = np.zeros(nb, _BLOCK_DTYPES[GGMLType.Q6_K])
    scale = _signed_absmax(xs) / -32.0           # (nb, 16), may be negative
    d = _f16(np.abs(scale).max(axis=1) / 127.0)
    sc = np.clip(_round(scale * _inv(d)[:, None]), -128, 127)
    b["d"] = d
    b["scales"] = sc.astype(np.int8)
    eff = d[:, None] * sc
    q = (np.clip(_round(xs * _inv(eff)[..., None]), -32, 31) + 32).astype(np.uint8).reshape(nb, 2, 4, 32)
    # q[n, k, l] = element 128n + 32k + l
    ql = np.empty((nb, 2, 64), np.uint8)
    ql[:, :, 0:32] = (q[:, :, 0] & 15) | ((q[:, :, 2] & 15) << 4)
    ql[:, :, 32:64] = (q[:, :, 1] & 15) | ((q[:, :, 3] & 15) << 4)
    qh = (q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6)
    b["ql"] = ql.reshape(nb, 128)
    b["qh"] = qh.reshape(nb, 64)
    return b


_FP4_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)


def _e8m0_half(e):
    """ggml's GGML_E8M0_TO_FP32_HALF: 2^(e - 128) as float32 (subnormal for e < 2)."""
    e = np.asarray(e, np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << 23).astype(np.uint32)
    return bits.view(np.float32)


def _enc_mxfp4(x):
    amax = np.abs(x).max(axis=1)
    # floorf(log2f(amax)): log2 in float64 rounded to float32 reproduces log2f's rounding, which
    # matters just below a power of two (log2f there rounds up to the integer)
    with np.errstate(divide="ignore"):
        l2 = np.floor(np.log2(amax.astype(np.float64)).astype(np.float32))
    e = np.where(amax > 0, (l2 - 2 + 127).astype(np.int64) & 0xFF, 0).astype(np.uint8)
    d = _e8m0_half(e)
    err = np.abs(_FP4_VALUES[None, None, :] * d[:, None, None] - x[:, :, None])  # float32, as ggml
    idx = np.argmin(err, axis=2).astype(np.uint8)  # first minimum: ggml's strict "<"
    out = np.zeros(x.shape[0], _BLOCK_DTYPES[GGMLType.MXFP4])
    out["e"] = e
    out["qs"] = idx[:, :16] | (idx[:, 16:] << 4)
    return out


_ENCODERS = {
    GGMLType.Q8_0: _enc_q8_0, GGMLType.Q4_0: _enc_q4_0, GGMLType.Q4_1: _enc_q4_1,
    GGMLType.Q5_0: _enc_q5_0, GGMLType.Q5_1: _enc_q5_1, GGMLType.Q2_K: _enc_q2_k,
    GGMLType.Q3_K: _enc_q3_k, GGMLType.Q4_K: _enc_q4_k, GGMLType.Q5_K: _enc_q5_k, GGMLType.Q6_K: _enc_q6_k,
    GGMLType.MXFP4: _enc_mxfp4,
}


def quantize(x, qtype: TypeLike, chunk_elems: int = 1 << 22) -> np.ndarray:
    """Encode float data (any shape, C order, size a multiple of the block size) to raw ggml
    bytes (uint8 array).  Rows must not straddle blocks: callers quantizing a matrix need
    ne[0] (the last numpy axis) to be a multiple of the block size."""
    qtype = ggml_type(qtype)
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if qtype == GGMLType.F32:
        return x.astype("<f4").view(np.uint8)
    if qtype == GGMLType.F16:
        return x.astype("<f2").view(np.uint8)
    if qtype == GGMLType.BF16:
        return fp32_to_bf16_bits(x).astype("<u2").view(np.uint8)
    if qtype not in _ENCODERS:
        raise NotImplementedError("no encoder for %s" % qtype.name)
    blk, bsz = BLOCK_LAYOUT[qtype]
    if x.size % blk:
        raise ValueError("%d elements is not a multiple of the %s block (%d)" % (x.size, qtype.name, blk))
    if not np.all(np.isfinite(x)):
        raise ValueError("cannot quantize non-finite values")
    out = np.empty(x.size // blk * bsz, np.uint8)
    step = max(blk, chunk_elems // blk * blk)
    enc = _ENCODERS[qtype]
    with np.errstate(over="ignore", invalid="ignore"):
        for s in range(0, x.size, step):
            blocks = enc(x[s:s + step].reshape(-1, blk))
            out[s // blk * bsz:(s // blk + len(blocks)) * bsz] = blocks.view(np.uint8)
    return out


# ---------------------------------------------------------------------------------------------
# spec decoders (raw block bytes -> float32)

def _blocks(raw, qtype):
    raw = np.frombuffer(memoryview(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    dt = _BLOCK_DTYPES[qtype]
    if raw.size % dt.itemsize:
        raise ValueError("%d bytes is not a whole number of %s blocks" % (raw.size, qtype.name))
    return raw.view(dt)


def _half(a):
    return a.astype(np.float32)


def _dec_q8_0(b):
    return _half(b["d"])[:, None] * b["qs"].astype(np.float32)


def _dec_nibbles(qs):
    """(nb,16) bytes -> (nb,32): element j = low nibble of byte j, element j+16 = high nibble."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)


def _dec_q4_0(b):
    return _half(b["d"])[:, None] * (_dec_nibbles(b["qs"]) - 8).astype(np.float32)


def _dec_q4_1(b):
    return _half(b["d"])[:, None] * _dec_nibbles(b["qs"]).astype(np.float32) + _half(b["m"])[:, None]


def _dec_qh32(qh):
    u = qh.astype(np.uint32)
    word = u[:, 0] | (u[:, 1] << 8) | (u[:, 2] << 16) | (u[:, 3] << 24)
    return ((word[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)


def _dec_q5_0(b):
    q = _dec_nibbles(b["qs"]) | (_dec_qh32(b["qh"]) << 4)
    return _half(b["d"])[:, None] * (q - 16).astype(np.float32)


def _dec_q5_1(b):
    q = _dec_nibbles(b["qs"]) | (_dec_qh32(b["qh"]) << 4)
    return _half(b["d"])[:, None] * q.astype(np.float32) + _half(b["m"])[:, None]


def _k_scale_min(scales):
    """(nb,12) packed -> sc, m (nb, 8) per ggml get_scale_min_k4."""
    s = scales.astype(np.int32)
    sc = np.empty((len(s), 8), np.int32)
    m = np.empty((len(s), 8), np.int32)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            m[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0x0F) | ((s[:, j - 4] >> 6) << 4)
            m[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc.astype(np.float32), m.astype(np.float32)


def _dec_q4_k(b):
    nb = len(b)
    d, dmin = _half(b["d"]), _half(b["dmin"])
    sc, m = _k_scale_min(b["scales"])
    qs = b["qs"].astype(np.int32).reshape(nb, 4, 32)
    y = np.empty((nb, 8, 32), np.float32)
    for c in range(4):
        for h, sub in ((0, 2 * c), (1, 2 * c + 1)):
            q = ((qs[:, c, :] >> (4 * h)) & 0x0F).astype(np.float32)
            y[:, sub, :] = (d * sc[:, sub])[:, None] * q - (dmin * m[:, sub])[:, None]
    return y.reshape(nb, 256)


def _dec_q5_k(b):
    nb = len(b)
    d, dmin = _half(b["d"]), _half(b["dmin"])
    sc, m = _k_scale_min(b["scales"])
    qs = b["qs"].astype(np.int32).reshape(nb, 4, 32)
    qh = b["qh"].astype(np.int32)  # (nb, 32)
    y = np.empty((nb, 8, 32), np.float32)
    for c in range(4):
        for h, sub in ((0, 2 * c), (1, 2 * c + 1)):
            q = (((qs[:, c, :] >> (4 * h)) & 0x0F) + (((qh >> sub) & 1) << 4)).astype(np.float32)
            y[:, sub, :] = (d * sc[:, sub])[:, None] * q - (dmin * m[:, sub])[:, None]
    return y.reshape(nb, 256)


def _k16_low2(qs, g):
    """Q2_K / Q3_K: the low 2 bits of group g's 16 elements (nb, 16): bits 2j of qs[32h + 16u + l]
    for g = 8h + 2j + u."""
    h, j, u = g // 8, (g // 2) % 4, g % 2
    return (qs[:, 32 * h + 16 * u:32 * h + 16 * u + 16] >> (2 * j)) & 3


def _dec_q2_k(b):
    nb = len(b)
    d, dmin = _half(b["d"]), _half(b["dmin"])
    sc = b["scales"].astype(np.int32)
    qs = b["qs"].astype(np.int32)
    y = np.empty((nb, 256), np.float32)
    for g in range(16):
        dl = d * (sc[:, g] & 15).astype(np.float32)
        ml = dmin * (sc[:, g] >> 4).astype(np.float32)
        y[:, 16 * g:16 * g + 16] = dl[:, None] * _k16_low2(qs, g).astype(np.float32) - ml[:, None]
    return y


def _dec_q3_k(b):
    nb = len(b)
    d = _half(b["d"])
    qs = b["qs"].astype(np.int32)
    hm = b["hmask"].astype(np.int32)
    s = b["scales"].astype(np.int32)
    y = np.empty((nb, 256), np.float32)
    for g in range(16):
        h, j, u = g // 8, (g // 2) % 4, g % 2
        six = ((s[:, g % 8] >> (4 * (g // 8))) & 15) | (((s[:, 8 + g % 4] >> (2 * (g // 4))) & 3) << 4)
        high = (hm[:, 16 * u:16 * u + 16] >> (4 * h + j)) & 1
        dl = d * (six - 32).astype(np.float32)
        y[:, 16 * g:16 * g + 16] = dl[:, None] * (_k16_low2(qs, g) - 4 + 4 * high).astype(np.float32)
    return y


def _dec_q6_k(b):
    nb = len(b)
    d = _half(b["d"])
    sc = b["scales"].astype(np.float32)       # (nb, 16) signed
    ql = b["ql"].astype(np.int32)
    qh = b["qh"].astype(np.int32)
    y = np.empty((nb, 256), np.float32)
    for n in range(2):
        L = ql[:, 64 * n:64 * n + 64]
        H = qh[:, 32 * n:32 * n + 32]
        parts = (
            (L[:, 0:32] & 15) | (((H >> 0) & 3) << 4),
            (L[:, 32:64] & 15) | (((H >> 2) & 3) << 4),
            (L[:, 0:32] >> 4) | (((H >> 4) & 3) << 4),
            (L[:, 32:64] >> 4) | (((H >> 6) & 3) << 4),
        )
        for k, q in enumerate(parts):
            e0 = 128 * n + 32 * k
            for half16 in range(2):
                s = (e0 + 16 * half16) // 16
                seg = slice(16 * half16, 16 * half16 + 16)
                y[:, e0 + 16 * half16:e0 + 16 * half16 + 16] = \
                    (d * sc[:, s])[:, None] * (q[:, seg] - 32).astype(np.float32)
    return y


def _dec_mxfp4(b):
    # the table is written out here rather than shared with the encoder
    v = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)
    e = b["e"].astype(np.uint32)
    d = np.where(e < 2, (np.uint32(0x00200000) << e), (e - 1) << 23).astype(np.uint32).view(np.float32)
    qs = b["qs"]
    return np.concatenate([v[qs & 15], v[qs >> 4]], axis=1) * d[:, None]


_DECODERS = {
    GGMLType.Q8_0: _dec_q8_0, GGMLType.Q4_0: _dec_q4_0, GGMLType.Q4_1: _dec_q4_1,
    GGMLType.Q5_0: _dec_q5_0, GGMLType.Q5_1: _dec_q5_1, GGMLType.Q2_K: _dec_q2_k,
    GGMLType.Q3_K: _dec_q3_k, GGMLType.Q4_K: _dec_q4_k, GGMLType.Q5_K: _dec_q5_k, GGMLType.Q6_K: _dec_q6_k,
    GGMLType.MXFP4: _dec_mxfp4,
}


def dequantize(raw, qtype: TypeLike, n: int = None) -> np.ndarray:
    """Decode raw ggml bytes to a flat float32 array (first n elements if n is given)."""
    qtype = ggml_type(qtype)
    a = np.frombuffer(memoryview(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) \
        else np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    if qtype == GGMLType.F32:
        y = a.view("<f4").astype(np.float32)
    elif qtype == GGMLType.F16:
        y = a.view("<f2").astype(np.float32)
    elif qtype == GGMLType.BF16:
        y = (a.view("<u2").astype(np.uint32) << 16).view(np.float32)
    elif qtype in _DECODERS:
        bs = _BLOCK_DTYPES[qtype].itemsize
        parts = []
        step = max(1, (1 << 22) // BLOCK_LAYOUT[qtype][0]) * bs
        for s in range(0, a.size, step):
            parts.append(_DECODERS[qtype](_blocks(a[s:s + step], qtype)).reshape(-1))
        y = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    else:
        raise NotImplementedError("no decoder for %s" % qtype.name)
    return y[:n] if n is not None else y


def quantize_dequantize(x, qtype: TypeLike) -> np.ndarray:
    """Round trip (what a reader of the quantized tensor sees), same shape as x."""
    x = np.asarray(x, dtype=np.float32)
    return dequantize(quantize(x, qtype), qtype, x.size).reshape(x.shape)


if __name__ == "__main__":
    import time
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    for t in SUPPORTED:
        t0 = time.time()
        raw = quantize(x, t)
        t1 = time.time()
        y = dequantize(raw, t, x.size)
        t2 = time.time()
        rel = np.sqrt(np.mean((x - y) ** 2)) / np.sqrt(np.mean(x ** 2))
        print("%-5s %8d B  rel.rmse %.5f  enc %.2fs dec %.2fs" % (t, raw.size, rel, t1 - t0, t2 - t1))
