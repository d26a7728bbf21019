#!/usr/bin/env python3
"""Write a random LoRA adapter, in the GGUF form llama.cpp loads, for a base GGUF model.

    make_lora_adapter.py --base BASE.gguf --out ADAPTER.gguf [--rank 8] [--alpha 16 | --no-alpha]
                         [--type F32|F16|BF16|Q8_0] [--seed 1] [--magnitude 0.25]
                         [--targets attn_q,attn_k,...] [--with-norms]
                         [--arch NAME] [--bad-shape] [--drop-b] [--extra-tensor NAME]

The file is what llama.cpp's convert_lora_to_gguf.py writes and src/llama-adapter.cpp reads:
keys general.architecture (the base's, or --arch), general.type = "adapter", adapter.type =
"lora", adapter.lora.alpha (FLOAT32; --no-alpha leaves it out, and llama.cpp then uses the
scale alone); per targeted weight W = `<name>` of ggml dims [in, out] (numpy (out, in)) a pair
`<name>.lora_a` of dims [in, rank] (numpy (rank, in)) and `<name>.lora_b` of dims [rank, out]
(numpy (out, rank)). llama.cpp computes W x + s * B (A x) with s = scale * alpha / rank
(scale alone without alpha; rank = lora_b's ne[0]).

--targets  comma list of name suffixes: attn_q attn_k attn_v attn_output attn_qkv ffn_gate
        ffn_up ffn_down ... (matching blk.N.<suffix>.weight) and output (output.weight).
        Default: every 2-D blk.N.*.weight that is no norm, plus output.weight when the base has
        it (token_embd never: llama.cpp reads a token_embd adapter with A and B swapped).
--type  the adapter tensors' type. Q8_0 needs in % 32 == 0 (lora_a's rows) and rank % 32 == 0
        (lora_b's rows).
--magnitude m  A ~ N(0, 1/in) and B ~ N(0, (m * rms(W) * sqrt(in))^2 / rank), so for a unit-rms
        input B (A x) is about m times W x: with the defaults (m 0.25, alpha 16, rank 8) each
        targeted projection moves by about half its own size at scale 1, far enough to change
        the synthetic models' greedy output. rms(W) is the base tensor's rms (decoded, for
        quantized bases) rounded to the nearest power of sqrt(2), so an F32 base and its
        quantized versions get the same adapter bytes.
--with-norms  also write blk.N.attn_norm.weight / ffn_norm.weight (and output_norm.weight) as
        plain F32 vectors, as convert_lora_to_gguf.py keeps mergekit's norms: llama.cpp skips
        every tensor named *_norm.weight in an adapter. The lora pairs are the same bytes with
        or without them.
Refusal-test options (llama.cpp refuses each of these files; the message it gives in brackets):
--arch NAME        general.architecture = NAME ("model arch and LoRA arch mismatch").
--bad-shape        the first target's lora_a gets in + 32 columns ("tensor '<name>' has
                   incorrect shape").
--drop-b           the first target's lora_b is left out ("LoRA tensor pair for '<name>' is
                   missing one component").
--extra-tensor N   also a pair N.lora_a / N.lora_b of dims [256, rank] / [rank, 256] for a
                   weight N the base lacks ("LoRA tensor 'N' does not exist in base model").

Random values: per tensor default_rng([seed, crc32(tensor name)]), as make_synthetic_model.py
does, so the bytes depend only on the command line (and the base's tensor names, shapes and
rms), and one target's pair does not depend on which other targets are written.
"""
import argparse
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quants  # noqa: E402
from gguf_writer import GGUFWriter, read_gguf  # noqa: E402

ADAPTER_TYPES = ("F32", "F16", "BF16", "Q8_0")


def tensor_rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def default_target(t):
    if t.name == "output.weight":
        return True
    return (t.name.startswith("blk.") and t.name.endswith(".weight") and len(t.dims) == 2
            and "norm" not in t.name.split(".")[-2])


def select_targets(base, suffixes):
    if suffixes is None:
        return [t for t in base.tensors if default_target(t)]
    wanted = set()
    for s in suffixes:
        matches = [t for t in base.tensors
                   if (s == "output" and t.name == "output.weight")
                   or (t.name.startswith("blk.") and t.name.endswith("." + s + ".weight"))]
        if not matches:
            raise SystemExit("--targets: the base has no tensor for '%s'" % s)
        for t in matches:
            if len(t.dims) != 2:
                raise SystemExit("--targets: %s is not a 2-D weight (dims %s)" % (t.name, t.dims))
            if t.name == "token_embd.weight":
                raise SystemExit("--targets: token_embd adapters are not written by this tool")
        wanted.update(t.name for t in matches)
    return [t for t in base.tensors if t.name in wanted]


def rounded_rms(base, t):
    w = quants.dequantize(base.tensor_bytes(t.name), t.gtype).astype(np.float64)
    rms = float(np.sqrt(np.mean(w * w)))
    # the nearest power of sqrt(2): quantizing the base moves its rms by < 1%, the synthetic
    # models' sigmas (1/sqrt(in), sqrt(1.5/in)) sit far from the rounding boundaries
    return float(2.0 ** (np.round(2.0 * np.log2(rms)) / 2.0)) if rms > 0 else 1.0


def encode(x, qtype, name):
    if qtype == "Q8_0" and x.shape[-1] % 32:
        raise SystemExit("--type Q8_0: %s has rows of %d values, not a multiple of 32" % (name, x.shape[-1]))
    return quants.quantize(x.astype(np.float32), qtype)


def lora_pair(seed, name, n_in, n_out, rank, magnitude, w_rms):
    a = tensor_rng(seed, name + ".lora_a").standard_normal((rank, n_in)) / np.sqrt(n_in)
    b_sigma = magnitude * w_rms * np.sqrt(n_in) / np.sqrt(rank)
    b = tensor_rng(seed, name + ".lora_b").standard_normal((n_out, rank)) * b_sigma
    return a.astype(np.float32), b.astype(np.float32)


def build(args):
    base = read_gguf(args.base)
    arch = args.arch or base.kv("general.architecture")
    suffixes = [s.strip() for s in args.targets.split(",") if s.strip()] if args.targets else None
    targets = select_targets(base, suffixes)
    if not targets:
        raise SystemExit("no target tensors in %s" % args.base)

    w = GGUFWriter(version=3)
    w.add_string("general.architecture", arch)
    w.add_string("general.type", "adapter")
    w.add_string("general.name", "synthetic-lora-r%d-seed%d" % (args.rank, args.seed))
    w.add_string("adapter.type", "lora")
    if not args.no_alpha:
        w.add_float32("adapter.lora.alpha", args.alpha)

    target_names = set(t.name for t in targets)
    first = targets[0].name
    for t in base.tensors:
        if args.with_norms and t.name.endswith("_norm.weight") and len(t.dims) == 1 \
                and (t.name.startswith("blk.") or t.name == "output_norm.weight"):
            # values llama.cpp never reads (it skips *_norm.weight): if anything applied them
            # the output would move
            g = tensor_rng(args.seed, t.name).uniform(0.5, 1.5, t.dims[0]).astype(np.float32)
            w.add_tensor(t.name, [t.dims[0]], "F32", g)
        if t.name not in target_names:
            continue
        n_in, n_out = t.dims
        a, b = lora_pair(args.seed, t.name, n_in, n_out, args.rank, args.magnitude, rounded_rms(base, t))
        if args.bad_shape and t.name == first:
            a = np.concatenate([a, a[:, :32]], axis=1)  # in + 32 columns (still Q8_0 rows)
        w.add_tensor(t.name + ".lora_a", [a.shape[1], args.rank], args.type, encode(a, args.type, t.name + ".lora_a"))
        if not (args.drop_b and t.name == first):
            w.add_tensor(t.name + ".lora_b", [args.rank, n_out], args.type, encode(b, args.type, t.name + ".lora_b"))
    for name in args.extra_tensor:
        a, b = lora_pair(args.seed, name, 256, 256, args.rank, args.magnitude, 1.0 / 16)
        w.add_tensor(name + ".lora_a", [256, args.rank], args.type, encode(a, args.type, name + ".lora_a"))
        w.add_tensor(name + ".lora_b", [args.rank, 256], args.type, encode(b, args.type, name + ".lora_b"))
    return w, len(targets)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the base model (GGUF)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--no-alpha", action="store_true", help="leave adapter.lora.alpha out")
    ap.add_argument("--type", choices=ADAPTER_TYPES, default="F32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--magnitude", type=float, default=0.25)
    ap.add_argument("--targets", default=None, help="comma list of suffixes (default: every projection + output)")
    ap.add_argument("--with-norms", action="store_true")
    ap.add_argument("--arch", default=None, help="general.architecture (default: the base's)")
    ap.add_argument("--bad-shape", action="store_true")
    ap.add_argument("--drop-b", action="store_true")
    ap.add_argument("--extra-tensor", action="append", default=[], metavar="NAME")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()
    if args.rank < 1:
        ap.error("--rank must be >= 1")
    if args.type == "Q8_0" and args.rank % 32:
        ap.error("--type Q8_0 needs --rank a multiple of 32 (lora_b's rows are rank values)")
    w, n = build(args)
    tmp = args.out + ".tmp"
    size = w.write(tmp)
    os.replace(tmp, args.out)
    if not args.quiet:
        print("wrote %s: %d bytes, %d targets, %d tensors, rank %d, %s"
              % (args.out, size, n, len(w.tensors), args.rank, args.type))


if __name__ == "__main__":
    main()
