#!/usr/bin/env python3
"""Write a random-weight llama.cpp `mmproj` GGUF (a CLIP-style vision encoder + projector).

The file has the layout llama.cpp's libmtmd (tools/mtmd/clip.cpp) reads: general.architecture
"clip", clip.has_vision_encoder, clip.projector_type, the clip.vision.* hyper-parameters and the
tensors v.patch_embd.weight ([p, p, 3, D] in ggml order), v.patch_embd.bias, v.class_embd,
v.position_embd.weight, v.pre_ln.*, v.blk.N.{ln1,attn_q,attn_k,attn_v,attn_out,ln2,ffn_up,
ffn_down}.*, and the LLaVA `mlp` projector mm.0.* / mm.2.* whose output width (--text-embd)
must equal the language model's n_embd.

    python3 tools/vision/make_synthetic_mmproj.py --out mmproj.gguf --text-embd 256

--projector gemma3 writes Gemma 3's layout instead (llama.cpp's clip_graph_siglip): no class
embedding, v.post_ln.*, clip.use_gelu, image mean / std 0.5, clip.vision.projector.scale_factor
(--scale-factor; the pooling kernel, 4 when absent), all blocks used, and the projector
mm.soft_emb_norm.weight (D) and mm.input_projection.weight (ggml dims [--text-embd, D]).

--projector idefics3 writes SmolVLM's layout instead (llama.cpp's SigLIP graph): no class
embedding and no pre-LayerNorm, v.post_ln.*, clip.use_gelu, mean / std 0.5, every block used,
clip.vision.projector.scale_factor (--scale-factor, default 2) and clip.vision.preproc_image_size
(--preproc-size, the longest side libmtmd resizes the image to before cutting image_size
tiles), and the projector mm.model.fc.weight (PyTorch [--text-embd, embd * scale^2], no bias).

    python3 tools/vision/make_synthetic_mmproj.py --projector idefics3 --out mmproj.gguf

--grid-pinpoints W,H,... adds llava-1.6's clip.vision.image_grid_pinpoints to the mlp layout
(libmtmd then tiles images larger than one tile).

Variants for the error tests: --omit TENSOR drops a tensor, --projector NAME writes another
projector type name (other than gemma3, its tensors are still the mlp ones), --truncate N cuts
the file to N bytes, --bad-shape TENSOR writes that tensor with its last ggml dim one short.
Same arguments, same bytes (numpy's seeded generator).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from gguf_writer import GGUFWriter, ValueType  # noqa: E402


def add_vit_keys(w, args, S, P, D, F, T, eps):
    """The encoder's clip.vision.* hyper-parameters, in the order every file here writes them."""
    w.add_uint32("clip.vision.image_size", S)
    w.add_uint32("clip.vision.patch_size", P)
    w.add_uint32("clip.vision.embedding_length", D)
    w.add_uint32("clip.vision.feed_forward_length", F)
    w.add_uint32("clip.vision.projection_dim", T)
    w.add_uint32("clip.vision.attention.head_count", args.heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", eps)
    w.add_uint32("clip.vision.block_count", args.layers)


def vit_block_tensors(layers, D, F, mat, vec):
    """The ViT blocks' tensors (LayerNorms, attention and MLP with biases), drawn in this order."""
    tensors = []
    for il in range(layers):
        b = "v.blk.%d." % il
        tensors += [
            (b + "ln1.weight", vec(D, 0.1, 1.0)), (b + "ln1.bias", vec(D)),
            (b + "attn_q.weight", mat(D, D)), (b + "attn_q.bias", vec(D)),
            (b + "attn_k.weight", mat(D, D)), (b + "attn_k.bias", vec(D)),
            (b + "attn_v.weight", mat(D, D)), (b + "attn_v.bias", vec(D)),
            (b + "attn_out.weight", mat(D, D)), (b + "attn_out.bias", vec(D)),
            (b + "ln2.weight", vec(D, 0.1, 1.0)), (b + "ln2.bias", vec(D)),
            (b + "ffn_up.weight", mat(F, D)), (b + "ffn_up.bias", vec(F)),
            (b + "ffn_down.weight", mat(D, F)), (b + "ffn_down.bias", vec(D)),
        ]
    return tensors


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--image-size", type=int, default=56)
    ap.add_argument("--patch-size", type=int, default=14)
    ap.add_argument("--embd", type=int, default=64, help="vision width")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--layers", type=int, default=3,
                    help="block count (llava runs all but the last one: the default feature layer)")
    ap.add_argument("--text-embd", type=int, default=256, help="projector output (the language model's n_embd)")
    ap.add_argument("--mm-hidden", type=int, default=0, help="projector hidden width (default: --text-embd)")
    ap.add_argument("--projector", default="mlp")
    ap.add_argument("--gelu", action="store_true", help="clip.use_gelu = true (else quick GELU, LLaVA 1.5's CLIP)")
    ap.add_argument("--no-class-embd", action="store_true")
    ap.add_argument("--type", choices=("F32", "F16"), default="F32",
                    help="type of the matrices and the patch embedding (vectors stay F32, as llama.cpp's converter writes them)")
    ap.add_argument("--grid-pinpoints", default="",
                    help="mlp: clip.vision.image_grid_pinpoints, comma-separated width,height pairs (llava-1.6 tiling)")
    ap.add_argument("--preproc-size", type=int, default=168, help="idefics3: clip.vision.preproc_image_size")
    ap.add_argument("--omit", action="append", default=[], help="leave this tensor out")
    ap.add_argument("--truncate", type=int, default=0, help="cut the written file to this many bytes")
    ap.add_argument("--scale-factor", type=int, default=0,
                    help="gemma3: clip.vision.projector.scale_factor (0: not written, llama.cpp uses 4); "
                         "idefics3: the pixel shuffle factor (0: 2)")
    ap.add_argument("--bad-shape", action="append", default=[], help="write this tensor with its last ggml dim (first numpy axis) one short")
    args = ap.parse_args(argv)

    if args.projector == "idefics3":
        return write_idefics3(ap, args)
    rng = np.random.default_rng(args.seed)
    gemma3 = args.projector == "gemma3"
    if gemma3:
        args.no_class_embd = True
        args.gelu = True
    D, F, P, S = args.embd, args.ff, args.patch_size, args.image_size
    n_pos = (S // P) ** 2 + (0 if args.no_class_embd else 1)
    T = args.text_embd
    H = args.mm_hidden or T

    def mat(out_f, in_f, scale=None):
        # A PyTorch [out, in] weight: ggml dims [in, out].
        s = scale if scale is not None else 1.0 / np.sqrt(in_f)
        return (rng.standard_normal((out_f, in_f)) * s).astype(np.float32)

    def vec(n, scale=0.1, offset=0.0):
        return (offset + rng.standard_normal(n) * scale).astype(np.float32)

    w = GGUFWriter()
    w.add_string("general.architecture", "clip")
    w.add_string("general.name", "synthetic-gemma3-mmproj" if gemma3 else "synthetic-llava-mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_text_encoder", False)
    if not gemma3:
        w.add_bool("clip.has_llava_projector", True)
    w.add_string("clip.projector_type", args.projector)
    w.add_bool("clip.use_gelu", bool(args.gelu))
    add_vit_keys(w, args, S, P, D, F, T, 1e-6 if gemma3 else 1e-5)
    if gemma3:  # SigLIP's
        w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5], ValueType.FLOAT32)
        w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5], ValueType.FLOAT32)
        if args.scale_factor:
            w.add_uint32("clip.vision.projector.scale_factor", args.scale_factor)
    else:
        w.add_array("clip.vision.image_mean", [0.48145466, 0.4578275, 0.40821073], ValueType.FLOAT32)
        w.add_array("clip.vision.image_std", [0.26862954, 0.26130258, 0.27577711], ValueType.FLOAT32)
    if args.grid_pinpoints:
        w.add_array("clip.vision.image_grid_pinpoints", [int(v) for v in args.grid_pinpoints.split(",")], ValueType.INT32)

    tensors = []
    # Conv weight [D, 3, P, P] (PyTorch) = ggml dims [P, P, 3, D].
    tensors.append(("v.patch_embd.weight", (rng.standard_normal((D, 3, P, P)) / np.sqrt(3 * P * P)).astype(np.float32)))
    tensors.append(("v.patch_embd.bias", vec(D)))
    if not args.no_class_embd:
        tensors.append(("v.class_embd", vec(D, 1.0)))
    tensors.append(("v.position_embd.weight", (rng.standard_normal((n_pos, D)) * 0.5).astype(np.float32)))
    tensors.append(("v.pre_ln.weight", vec(D, 0.1, 1.0)))
    tensors.append(("v.pre_ln.bias", vec(D)))
    tensors += vit_block_tensors(args.layers, D, F, mat, vec)
    if gemma3:
        tensors += [("v.post_ln.weight", vec(D, 0.1, 1.0)), ("v.post_ln.bias", vec(D))]
        # The RMS-normed pooled features times a [D, T] matrix (ggml dims [T, D]): llama.cpp
        # multiplies by its transpose. Rows of unit scale, like a trained projector's output.
        tensors += [("mm.soft_emb_norm.weight", vec(D, 0.1, 1.0)),
                    ("mm.input_projection.weight", (rng.standard_normal((D, T)) / np.sqrt(D)).astype(np.float32))]
    else:
        # Image embeddings of unit scale per feature, like a trained projector's.
        tensors += [("mm.0.weight", mat(H, D)), ("mm.0.bias", vec(H)),
                    ("mm.2.weight", mat(T, H)), ("mm.2.bias", vec(T))]

    finish(ap, args, w, tensors)
    return 0


def finish(ap, args, w, tensors):
    """Adds the tensors (less --omit, matrices in --type) and writes / truncates the file."""
    names = {n for n, _ in tensors}
    for o in args.omit + args.bad_shape:
        if o not in names:
            ap.error("--omit / --bad-shape %s: no such tensor" % o)
    tensors = [(n, np.ascontiguousarray(a[:-1]) if n in args.bad_shape else a) for n, a in tensors]
    for name, arr in tensors:
        if name not in args.omit:
            if args.type == "F16" and arr.ndim >= 2 and name != "v.position_embd.weight":
                arr = arr.astype(np.float16)
            w.add_tensor(name, None, None, arr)
    w.write(args.out)
    if args.truncate:
        with open(args.out, "r+b") as f:
            f.truncate(args.truncate)


def write_idefics3(ap, args):
    """SmolVLM's mmproj layout (llama.cpp's convert_hf_to_gguf.py for Idefics3 / SmolVLM)."""
    rng = np.random.default_rng(args.seed)
    D, F, P, S, T, SF = args.embd, args.ff, args.patch_size, args.image_size, args.text_embd, args.scale_factor or 2
    n_pos = (S // P) ** 2

    def mat(out_f, in_f):
        return (rng.standard_normal((out_f, in_f)) / np.sqrt(in_f)).astype(np.float32)

    def vec(n, scale=0.1, offset=0.0):
        return (offset + rng.standard_normal(n) * scale).astype(np.float32)

    w = GGUFWriter()
    w.add_string("general.architecture", "clip")
    w.add_string("general.name", "synthetic-idefics3-mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_text_encoder", False)
    w.add_string("clip.projector_type", "idefics3")
    w.add_bool("clip.use_gelu", True)
    add_vit_keys(w, args, S, P, D, F, T, 1e-6)
    w.add_uint32("clip.vision.projector.scale_factor", SF)
    w.add_uint32("clip.vision.preproc_image_size", args.preproc_size)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5], ValueType.FLOAT32)
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5], ValueType.FLOAT32)

    tensors = [
        ("v.patch_embd.weight", (rng.standard_normal((D, 3, P, P)) / np.sqrt(3 * P * P)).astype(np.float32)),
        ("v.patch_embd.bias", vec(D)),
        ("v.position_embd.weight", (rng.standard_normal((n_pos, D)) * 0.5).astype(np.float32)),
    ]
    tensors += vit_block_tensors(args.layers, D, F, mat, vec)
    tensors += [("v.post_ln.weight", vec(D, 0.1, 1.0)), ("v.post_ln.bias", vec(D)),
                ("mm.model.fc.weight", mat(T, D * SF * SF))]
    finish(ap, args, w, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
