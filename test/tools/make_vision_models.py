#!/usr/bin/env python3
"""Generate the vision tests' models (test/data/oracle/vision/README.md) into OUT_DIR:

  lm.gguf                 make_synthetic_model.py --shape tiny --seed 27 (llama, F32, n_embd 256)
  mmproj.gguf             make_synthetic_mmproj.py (mlp projector, 56 px, patch 14, 3 blocks)
  mmproj_truncated.gguf   mmproj.gguf cut short (in the tensor data)
  mmproj_no_mm2.gguf      ... without mm.2.bias
  mmproj_no_q.gguf        ... without v.blk.0.attn_q.weight
  mmproj_gemma3.gguf      projector type "gemma3" (not supported yet)
  mmproj_width128.gguf    projector output 128 wide (does not match lm.gguf's 256)

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
run(mm, "--out", os.path.join(out, "mmproj_gemma3.gguf"), "--projector", "gemma3")
run(mm, "--out", os.path.join(out, "mmproj_width128.gguf"), "--text-embd", "128")


def idefics3_vocab(path):
    sys.path.insert(0, os.path.join(root, "tools", "gguf"))
    from gguf_writer import GGUFWriter, copy_kv, read_gguf, ValueType
    src = read_gguf(os.environ.get("LLM_SHARED_TESTDATA", os.path.join(root, "..", "shared", "testdata"))
                    + "/stories260K.gguf")
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
for record in ("llava_mlp_56x56.json", "idefics3_56x56.json", "idefics3_1tile_80x48.json", "llava16_120x100.json"):
    if not os.path.exists(os.path.join(oracle_dir, record)):
        continue  # not recorded yet (tools/vision/record_oracle.py)
    ref = json.load(open(os.path.join(oracle_dir, record)))
    for key in ("lm", "mmproj"):
        name = ref["models"][key]["file"] if "file" in ref["models"][key] else key + ".gguf"
        with open(os.path.join(out, name), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != ref["models"][key]["sha256"]:
            sys.exit("make_vision_models: %s differs from the file the oracle was computed on (sha256 %s, recorded %s)"
                     % (name, got, ref["models"][key]["sha256"]))
