#!/usr/bin/env python3
"""Generate the vision tests' models (test/data/oracle/vision/README.md) into OUT_DIR:

  lm.gguf                 make_synthetic_model.py --shape tiny --seed 27 (llama, F32, n_embd 256)
  mmproj.gguf             make_synthetic_mmproj.py (mlp projector, 56 px, patch 14, 3 blocks)
  mmproj_truncated.gguf   mmproj.gguf cut short (in the tensor data)
  mmproj_no_mm2.gguf      ... without mm.2.bias
  mmproj_no_q.gguf        ... without v.blk.0.attn_q.weight
  mmproj_pixtral.gguf     projector type "pixtral" (not supported)
  mmproj_width128.gguf    projector output 128 wide (does not match lm.gguf's 256)

  gemma3_vocab.gguf       stories260K's tokenizer with tokens 510, 511 made the control tokens
                          <start_of_image>, <end_of_image> (what libmtmd wraps a Gemma 3 image in)
  gemma3_lm.gguf          make_synthetic_model.py --arch gemma3 --shape tiny --seed 31
                          --sliding-window 8 --swa-pattern 2 (every other layer local, a window
                          shorter than the prompt) --vocab-from gemma3_vocab.gguf
  gemma3_mmproj.gguf      make_synthetic_mmproj.py --projector gemma3 --image-size 112
                          --layers 2 --scale-factor 2 (8 x 8 patches pooled to 16 tokens)
  gemma3_mmproj_no_norm.gguf    ... without mm.soft_emb_norm.weight
  gemma3_mmproj_bad_proj.gguf   ... mm.input_projection.weight [256, 63] (ggml dims)
  gemma3_mmproj_width128.gguf   ... projecting to 128 features (gemma3_lm.gguf has 256)
  gemma3_mmproj_pool4.gguf      ... without clip.vision.projector.scale_factor (llama.cpp: 4): 4 tokens
  gemma3_mmproj_56_pool3.gguf   56 px (4 x 4 patches), scale_factor 3: one window, 1 token

Idefics3 (SmolVLM):
  vocab_idefics3.gguf     stories260K's vocabulary (the tiny shape's) with its last 39 pieces
                          replaced by SmolVLM's image tokens: "\n\n" (normal) and the control
                          tokens <fake_token_around_image>, <global-img>, <row_R_col_C> (R, C 1..6)
  lm_idefics3.gguf        make_synthetic_model.py --shape tiny --seed 27 --vocab-from vocab_idefics3.gguf
  mmproj_idefics3.gguf    make_synthetic_mmproj.py --projector idefics3 (56 px, patch 14, scale
                          factor 2, 2 blocks, preproc_image_size 168: 3 x 3 tiles of a square image)
  mmproj_idefics3_1tile.gguf  ... preproc_image_size 56 (one tile and the overview)
  mmproj_idefics3_no_fc.gguf  ... without mm.model.fc.weight
  mmproj_idefics3_sf3.gguf    ... scale factor 3 (does not divide the 4 x 4 patch grid)

llava-1.6 (image_grid_pinpoints with the mlp projector):
  mmproj_llava16.gguf     mmproj.gguf's weights + pinpoints 56x112, 112x56, 112x112, 168x56, 56x168
                          (llava-1.6's 336-based list scaled to 56 px tiles)
  mmproj_llava16_bad.gguf ... a pinpoint 84x56 (not whole tiles)

Same arguments, same bytes; the oracle records the sha256 of lm.gguf and mmproj.gguf.
"""
import os
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
py = sys.executable


def run(*args):
    subprocess.check_call([py] + list(args))


mm = os.path.join(root, "tools", "vision", "make_synthetic_mmproj.py")
run(os.path.join(root, "tools", "gguf", "make_synthetic_model.py"), "--shape", "tiny", "--seed", "27", "-q",
    "--out", os.path.join(out, "lm.gguf"))
run(mm, "--out", os.path.join(out, "mmproj.gguf"))
run(mm, "--out", os.path.join(out, "mmproj_truncated.gguf"), "--truncate", "400000")
run(mm, "--out", os.path.join(out, "mmproj_no_mm2.gguf"), "--omit", "mm.2.bias")
run(mm, "--out", os.path.join(out, "mmproj_no_q.gguf"), "--omit", "v.blk.0.attn_q.weight")
run(mm, "--out", os.path.join(out, "mmproj_pixtral.gguf"), "--projector", "pixtral")
run(mm, "--out", os.path.join(out, "mmproj_width128.gguf"), "--text-embd", "128")

sys.path.insert(0, os.path.join(root, "tools", "gguf"))
from gguf_writer import GGUFWriter, ValueType, copy_kv, read_gguf  # noqa: E402
import make_synthetic_model  # noqa: E402

src = read_gguf(make_synthetic_model.DEFAULT_VOCAB)
vocab = GGUFWriter()
vocab.add_string("general.architecture", "llama")
for kv in src.kvs:
    if kv.key == "tokenizer.ggml.tokens":
        tokens = list(kv.value.items)
        tokens[510:512] = ["<start_of_image>", "<end_of_image>"]
        vocab.add_array(kv.key, tokens, ValueType.STRING)
    elif kv.key == "tokenizer.ggml.token_type":
        types = [int(t) for t in kv.value.items]
        types[510:512] = [3, 3]  # CONTROL
        vocab.add_array(kv.key, types, ValueType.INT32)
    elif kv.key.startswith("tokenizer."):
        copy_kv(vocab, kv)
vocab.write(os.path.join(out, "gemma3_vocab.gguf"))
run(os.path.join(root, "tools", "gguf", "make_synthetic_model.py"), "--arch", "gemma3", "--shape", "tiny", "--seed", "31",
    "--sliding-window", "8", "--swa-pattern", "2", "--vocab-from", os.path.join(out, "gemma3_vocab.gguf"), "-q",
    "--out", os.path.join(out, "gemma3_lm.gguf"))
g3 = ["--projector", "gemma3", "--image-size", "112", "--layers", "2", "--scale-factor", "2"]
run(mm, *g3, "--out", os.path.join(out, "gemma3_mmproj.gguf"))
run(mm, *g3, "--out", os.path.join(out, "gemma3_mmproj_no_norm.gguf"), "--omit", "mm.soft_emb_norm.weight")
run(mm, *g3, "--out", os.path.join(out, "gemma3_mmproj_bad_proj.gguf"), "--bad-shape", "mm.input_projection.weight")
run(mm, *g3, "--out", os.path.join(out, "gemma3_mmproj_width128.gguf"), "--text-embd", "128")
run(mm, "--projector", "gemma3", "--image-size", "112", "--layers", "2", "--out",
    os.path.join(out, "gemma3_mmproj_pool4.gguf"))  # no scale_factor key: llama.cpp pools 4 x 4
run(mm, "--projector", "gemma3", "--image-size", "56", "--layers", "2", "--scale-factor", "3", "--out",
    os.path.join(out, "gemma3_mmproj_56_pool3.gguf"))  # 4 x 4 patches, one 3 x 3 window


def idefics3_vocab(path):
    src = read_gguf(make_synthetic_model.DEFAULT_VOCAB)
    tokens = list(src.kv("tokenizer.ggml.tokens"))
    types = [int(t) for t in src.kv("tokenizer.ggml.token_type")]
    extra = ["\n\n", "<fake_token_around_image>", "<global-img>"] + \
        ["<row_%d_col_%d>" % (r, c) for r in range(1, 7) for c in range(1, 7)]
    first = len(tokens) - len(extra)
    for i, t in enumerate(extra):
        tokens[first + i] = t
        types[first + i] = 1 if t == "\n\n" else 3
    w = GGUFWriter()
    w.add_string("general.architecture", "llama")
    for kv in src.kvs:
        if kv.key == "tokenizer.ggml.tokens":
            w.add_array(kv.key, tokens, ValueType.STRING)
        elif kv.key == "tokenizer.ggml.token_type":
            w.add_array(kv.key, types, ValueType.INT32)
        elif kv.key.startswith("tokenizer."):
            copy_kv(w, kv)
    w.write(path)


idefics3_vocab(os.path.join(out, "vocab_idefics3.gguf"))
run(os.path.join(root, "tools", "gguf", "make_synthetic_model.py"), "--shape", "tiny", "--seed", "27", "-q",
    "--vocab-from", os.path.join(out, "vocab_idefics3.gguf"), "--out", os.path.join(out, "lm_idefics3.gguf"))
idefics3 = ["--projector", "idefics3", "--layers", "2"]
run(mm, *idefics3, "--out", os.path.join(out, "mmproj_idefics3.gguf"))
run(mm, *idefics3, "--preproc-size", "56", "--out", os.path.join(out, "mmproj_idefics3_1tile.gguf"))
run(mm, *idefics3, "--omit", "mm.model.fc.weight", "--out", os.path.join(out, "mmproj_idefics3_no_fc.gguf"))
run(mm, *idefics3, "--scale-factor", "3", "--out", os.path.join(out, "mmproj_idefics3_sf3.gguf"))
LLAVA16_PINPOINTS = "56,112,112,56,112,112,168,56,56,168"
run(mm, "--grid-pinpoints", LLAVA16_PINPOINTS, "--out", os.path.join(out, "mmproj_llava16.gguf"))
run(mm, "--grid-pinpoints", "84,56," + LLAVA16_PINPOINTS, "--out", os.path.join(out, "mmproj_llava16_bad.gguf"))

# The oracle (test/data/oracle/vision) was computed on these bytes.
import hashlib  # noqa: E402
import json  # noqa: E402

oracle_dir = os.path.join(root, "test", "data", "oracle", "vision")
for oracle, files in (("llava_mlp_56x56.json", (("lm", "lm.gguf"), ("mmproj", "mmproj.gguf"))),
                      ("gemma3_112x112.json", (("lm", "gemma3_lm.gguf"), ("mmproj", "gemma3_mmproj.gguf"))),
                      ("idefics3_56x56.json", (("lm", "lm_idefics3.gguf"), ("mmproj", "mmproj_idefics3.gguf"))),
                      ("idefics3_1tile_80x48.json", (("lm", "lm_idefics3.gguf"), ("mmproj", "mmproj_idefics3_1tile.gguf"))),
                      ("llava16_120x100.json", (("lm", "lm.gguf"), ("mmproj", "mmproj_llava16.gguf")))):
    path = os.path.join(oracle_dir, oracle)
    if not os.path.exists(path) and not oracle.startswith("llava_mlp"):
        continue  # not recorded yet (tools/vision/record_oracle.py)
    ref = json.load(open(path))
    for key, name in files:
        with open(os.path.join(out, name), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != ref["models"][key]["sha256"]:
            sys.exit("make_vision_models: %s differs from the file the oracle was computed on (sha256 %s, recorded %s)"
                     % (name, got, ref["models"][key]["sha256"]))
