#!/usr/bin/env python3
"""Deterministic test vectors for a ggml dequantizer.

Usage: make_quant_vectors.py OUT_DIR [--seed N]

For every type in quants.SUPPORTED writes
    OUT_DIR/quant_<TYPE>.bin   raw ggml data (whole blocks, little endian)
    OUT_DIR/quant_<TYPE>.f32   the expected float32 values (little endian), from the spec
                               decoder in quants.py
and OUT_DIR/quant_vectors.json describing them (type, ggml type id, element and byte counts,
block size, sha256 of both files).

Quantized types get blocks encoded from random data at several magnitudes plus hand-built raw
blocks covering edge cases: zero scales, all-minimum / all-maximum nibbles and high bits,
negative d (and negative dmin / negative int8 sub-block scales), extreme and subnormal fp16
scales, fully random payload bytes (MXFP4: mxfp4_edge_blocks).  F32/F16/BF16 get random values plus signed zeros,
subnormals and the largest finite values (no Inf/NaN, so results compare with ==).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quants  # noqa: E402
from gguf_writer import BLOCK_LAYOUT, GGMLType  # noqa: E402

F16_MAX = 65504.0
F16_MIN_SUB = float(np.float16(2.0 ** -24))


def _random_raw_blocks(rng, t, n, d_values):
    """n blocks of random bytes with the fp16 fields replaced by finite values from d_values."""
    dt = quants.block_dtype(t)
    b = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8).view(dt)
    for name in dt.names:
        if dt[name].base == np.dtype("<f2"):
            b[name] = rng.choice(np.asarray(d_values, np.float32), size=n).astype(np.float16)
    return b


def quantized_blocks(rng, t):
    t = GGMLType[t]
    blk, _ = BLOCK_LAYOUT[t]
    dt = quants.block_dtype(t)
    pieces = []

    # 1) encoder output for typical data at several magnitudes, incl. a skewed (all-positive) block
    data = [rng.standard_normal(blk) * s for s in (1.0, 1e-3, 37.0)]
    data.append(np.abs(rng.standard_normal(blk)) + 0.5)
    data.append(-np.abs(rng.standard_normal(blk)) - 2.0)
    data.append(np.zeros(blk))
    data.append(np.linspace(-1, 1, blk))
    x = np.concatenate(data).astype(np.float32)
    pieces.append(quants.quantize(x, t).view(dt))

    if t == GGMLType.MXFP4:
        pieces.extend(mxfp4_edge_blocks(rng, dt))
        return np.concatenate(pieces).view(np.uint8)

    fields = dt.names
    edge = []

    def new():
        return np.zeros(1, dt)

    # 2) zero scale(s) with non-zero payload
    edge.append(_random_raw_blocks(rng, t, 1, [0.0]))
    # 3) minimum quants (all payload bits zero), positive scale
    b = new()
    b["d"] = 1.5
    if "m" in fields:
        b["m"] = -2.25
    if "dmin" in fields:
        b["dmin"] = 0.5
        b["scales"] = 0xFF          # every 6-bit scale and min = 63
    if t == GGMLType.Q6_K:
        b["scales"] = 127
    edge.append(b)
    # 4) maximum quants (all payload bits one), negative d
    b = new()
    for f in ("qs", "qh", "ql", "hmask"):
        if f in fields:
            b[f] = -1 if dt[f].base == np.dtype("i1") else 0xFF
    b["d"] = -0.75
    if "m" in fields:
        b["m"] = 3.0
    if "dmin" in fields:
        b["dmin"] = -0.125         # negative dmin is legal in the format
        b["scales"] = np.arange(dt["scales"].shape[0], dtype=np.uint8) * 21  # mixed packed scale bits
    if t == GGMLType.Q3_K:
        b["scales"] = np.arange(12, dtype=np.uint8) * 21
    if t == GGMLType.Q6_K:
        b["scales"] = np.array([-128, 127, -1, 1, 0, 64, -64, 5, -5, 100, -100, 33, -33, 2, -2, 7], np.int8)
    edge.append(b)
    # 5) extreme fp16 scales
    edge.append(_random_raw_blocks(rng, t, 2, [F16_MAX, -F16_MAX]))
    edge.append(_random_raw_blocks(rng, t, 2, [F16_MIN_SUB, -F16_MIN_SUB, 6.1e-5]))
    # 6) fully random payloads with ordinary scales (exercise every bit of the packing)
    edge.append(_random_raw_blocks(rng, t, 6, [0.25, -0.5, 0.0078125, 1.0, -3.0, 0.1]))
    # 7) one-hot patterns: a single element at its max in each position class
    if t == GGMLType.Q8_0:
        b = new()
        b["d"] = 0.5
        b["qs"] = np.resize(np.array([-128, 127, -127, 0, 1, -1, 64, -64], np.int8), 32)
        edge.append(b)
    if t in (GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1):
        b = new()
        b["d"] = 1.0
        b["qs"][0, 3] = 0x0F        # element 3 low nibble
        b["qs"][0, 9] = 0xF0        # element 25 high nibble
        if "qh" in fields:
            b["qh"][0] = [0x01, 0x00, 0x80, 0x00]  # elements 0 and 23
        edge.append(b)
    if t in (GGMLType.Q4_K, GGMLType.Q5_K):
        b = new()
        b["d"] = 1.0
        b["dmin"] = 1.0
        b["scales"] = [1, 2, 3, 4, 5, 6, 7, 8, 0x21, 0x43, 0x65, 0x87]  # low-bit scales/mins only
        b["scales"][0, 0:8] |= np.array([0, 1, 2, 3, 0, 1, 2, 3], np.uint8) << 6  # high bits of sub 4..7
        b["qs"][0, 0] = 0x0F
        b["qs"][0, 127] = 0xF0
        if "qh" in fields:
            b["qh"][0, 0] = 0x01
            b["qh"][0, 31] = 0x80
        edge.append(b)
    if t == GGMLType.Q2_K:
        b = new()
        b["d"] = 1.0
        b["dmin"] = 0.5
        b["scales"] = np.arange(16, dtype=np.uint8) | (np.arange(15, -1, -1, dtype=np.uint8) << 4)
        b["qs"][0, 0] = 0x03        # element 0 (group 0) at 3
        b["qs"][0, 63] = 0xC0       # element 255 (group 15) at 3
        edge.append(b)
    if t == GGMLType.Q3_K:
        b = new()
        b["d"] = 1.0
        b["scales"] = [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, 0x1B, 0xE4, 0x00, 0xFF]
        b["qs"][0, 0] = 0x03
        b["qs"][0, 63] = 0xC0
        b["hmask"][0, 0] = 0x01     # element 0's high bit
        b["hmask"][0, 31] = 0x80    # element 255's high bit
        edge.append(b)
    if t == GGMLType.Q6_K:
        b = new()
        b["d"] = 1.0
        b["scales"] = np.arange(1, 17, dtype=np.int8)
        b["ql"][0, 0] = 0x0F
        b["ql"][0, 127] = 0xF0
        b["qh"][0, 0] = 0x03
        b["qh"][0, 63] = 0xC0
        edge.append(b)
    pieces.extend(edge)
    blocks = np.concatenate(pieces)
    return blocks.view(np.uint8)


def mxfp4_edge_blocks(rng, dt):
    """MXFP4's 14 edge blocks (21 with the 7 encoded ones, as every 32-element type: the matmul test
    takes 21 vectors). Scales: E8M0 bytes 0 and 1 (ggml's subnormal half scales 2^-128, 2^-127), 255
    and 254 (2^127, 2^126: one small quant each, so that decoded values and the matmul test's dot
    products stay finite), 240 with random quants; ties of the encoder (values halfway between two
    FP4 levels go to the lower index, ggml's strict "<")."""
    def raw(e, qs=None):
        b = np.zeros(1, dt)
        b["e"] = e
        b["qs"] = rng.integers(0, 256, size=16, dtype=np.uint8) if qs is None else qs
        return b

    halfway = [0.5, 1.5, 2.5, 3.5, 5.0, 7.0, 10.0]
    ties = np.array(halfway + [-v for v in halfway] + [0.0, -0.0, 11.0, -9.0, 6.0, -6.0, 1e-3, -1e-3]
                    + list(np.linspace(-8.0, 8.0, 10)), np.float32)  # max |x| 11: scale 2^0
    assert ties.size == 32
    edge = [quants.quantize(ties, GGMLType.MXFP4).view(dt)]
    edge += [raw(0), raw(1)]                              # subnormal scales, random quants
    edge.append(raw(127, np.zeros(16, np.uint8)))         # every quant 0
    edge.append(raw(130, np.full(16, 0xFF, np.uint8)))    # every quant -12
    one = np.zeros(16, np.uint8)
    one[5] = 0x01                                         # element 5: 1 * 2^127
    edge.append(raw(255, one))
    one = np.zeros(16, np.uint8)
    one[4] = 0xB0                                         # element 20: -3 * 2^126
    edge.append(raw(254, one))
    edge.append(raw(240))                                 # 2^112, random quants
    edge += [raw(int(e)) for e in rng.integers(118, 137, size=5)]
    one = np.zeros(16, np.uint8)
    one[3] = 0x07                                         # element 3: 12
    one[9] = 0xF0                                         # element 25: -12
    edge.append(raw(127, one))
    return edge


def float_values(rng, t):
    x = [rng.standard_normal(200).astype(np.float32),
         (rng.standard_normal(40) * 1e4).astype(np.float32),
         (rng.standard_normal(40) * 1e-6).astype(np.float32)]
    special = [0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, -65504.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -14,
               6.0e-8, 1.0009765625, 1.00048828125, 1.0 + 2 ** -8, 1.0 + 2 ** -9, 3.0e38, -3.0e38, 1e-40]
    x.append(np.asarray(special, np.float32))
    x = np.concatenate(x)
    if t == "F16":
        x = x[np.abs(x) <= 65504.0]
    raw = quants.quantize(x, t)
    if t == "BF16":  # add raw bit patterns that are finite (exponent != 0xFF)
        bits = rng.integers(0, 65536, size=64, dtype=np.uint32).astype(np.uint16)
        bits = bits[(bits & 0x7F80) != 0x7F80]
        raw = np.concatenate([raw, bits.astype("<u2").view(np.uint8)])
    if t == "F16":
        bits = rng.integers(0, 65536, size=64, dtype=np.uint32).astype(np.uint16)
        bits = bits[(bits & 0x7C00) != 0x7C00]
        raw = np.concatenate([raw, bits.astype("<u2").view(np.uint8)])
    return raw


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=20240601)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    entries = []
    for i, t in enumerate(quants.SUPPORTED):
        rng = np.random.default_rng([a.seed, i])
        raw = float_values(rng, t) if t in ("F32", "F16", "BF16") else quantized_blocks(rng, t)
        raw = np.ascontiguousarray(raw, np.uint8)
        ref = quants.dequantize(raw, t)
        assert np.all(np.isfinite(ref)), t
        blk, bsz = BLOCK_LAYOUT[GGMLType[t]]
        assert raw.size % bsz == 0 and ref.size == raw.size // bsz * blk
        fb = os.path.join(a.out_dir, "quant_%s.bin" % t)
        ff = os.path.join(a.out_dir, "quant_%s.f32" % t)
        rb = raw.tobytes()
        fbytes = ref.astype("<f4").tobytes()
        with open(fb, "wb") as f:
            f.write(rb)
        with open(ff, "wb") as f:
            f.write(fbytes)
        entries.append({
            "type": t, "ggml_type": int(GGMLType[t]), "block_elems": blk, "block_bytes": bsz,
            "n_blocks": raw.size // bsz, "n_elements": int(ref.size),
            "bin": os.path.basename(fb), "bin_bytes": len(rb), "bin_sha256": hashlib.sha256(rb).hexdigest(),
            "f32": os.path.basename(ff), "f32_bytes": len(fbytes),
            "f32_sha256": hashlib.sha256(fbytes).hexdigest(),
        })
    meta = {"generator": "tools/gguf/make_quant_vectors.py", "seed": a.seed,
            "note": ("expected values = spec decoder in tools/gguf/quants.py, bit-exact with ggml's "
                     "dequantization (float32, (d*sc)*q - dmin*m order); no NaN/Inf. Compare exactly, "
                     "or within 1 ulp if the decoder is compiled with FMA contraction"),
            "types": entries}
    with open(os.path.join(a.out_dir, "quant_vectors.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    for e in entries:
        print("%-5s id=%-2d %5d elems %6d bytes" % (e["type"], e["ggml_type"], e["n_elements"], e["bin_bytes"]))


if __name__ == "__main__":
    main()
