#!/usr/bin/env python3
"""Generate the vision tests' models (test/data/oracle/vision/README.md) into OUT_DIR:

  lm.gguf                 make_synthetic_model.py --shape tiny --seed 27 (llama, F32, n_embd 256)
  mmproj.gguf             make_synthetic_mmproj.py (mlp projector, 56 px, patch 14, 3 blocks)
  mmproj_truncated.gguf   mmproj.gguf cut short (in the tensor data)
  mmproj_no_mm2.gguf      ... without mm.2.bias
  mmproj_no_q.gguf        ... without v.blk.0.attn_q.weight
  mmproj_gemma3.gguf      projector type "gemma3" (not supported yet)
  mmproj_width128.gguf    projector output 128 wide (does not match lm.gguf's 256)

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

# The oracle (test/data/oracle/vision) was computed on these bytes.
import hashlib  # noqa: E402
import json  # noqa: E402

ref = json.load(open(os.path.join(root, "test", "data", "oracle", "vision", "llava_mlp_56x56.json")))
for key, name in (("lm", "lm.gguf"), ("mmproj", "mmproj.gguf")):
    with open(os.path.join(out, name), "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != ref["models"][key]["sha256"]:
        sys.exit("make_vision_models: %s differs from the file the oracle was computed on (sha256 %s, recorded %s)"
                 % (name, got, ref["models"][key]["sha256"]))
