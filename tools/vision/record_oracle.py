#!/usr/bin/env python3
"""Run tools/vision/mtmd_oracle (built as tools/vision/README.md says) on the vision test models
and write test/data/oracle/vision/llava_mlp_<W>x<H>.json.

    python3 tools/vision/record_oracle.py ORACLE_BINARY MODELS_DIR OUT_DIR

MODELS_DIR holds lm.gguf and mmproj.gguf (test/tools/make_vision_models.py); OUT_DIR gets the
JSON files and the test images (test_image_<W>x<H>.ppm, made by make_test_image.py, which needs
the project's cv2 on PYTHONPATH).
"""
import hashlib
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
oracle, models, out = sys.argv[1:4]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


lm, mm = os.path.join(models, "lm.gguf"), os.path.join(models, "mmproj.gguf")
for w, h in ((56, 56), (80, 48)):
    img = os.path.join(out, "test_image_%dx%d.ppm" % (w, h))
    subprocess.check_call([sys.executable, os.path.join(here, "make_test_image.py"), str(w), str(h), img])
    res = json.loads(subprocess.check_output([oracle, lm, mm, img, "<__media__>Describe", "8", "1"]))
    rec = {
        "what": "llama.cpp libmtmd (tools/vision/mtmd_oracle.cpp): image embeddings, prompt chunks and greedy ids",
        "models": {
            "lm": {"generator": "python3 tools/gguf/make_synthetic_model.py --shape tiny --seed 27 -q --out lm.gguf",
                   "sha256": sha(lm)},
            "mmproj": {"generator": "python3 tools/vision/make_synthetic_mmproj.py --out mmproj.gguf",
                       "sha256": sha(mm)},
        },
        "image": os.path.basename(img),
        "image_size": [w, h],
        "image_sha256": sha(img),
        "settings": {"threads": 1, "n_ctx": 256, "n_batch": 256, "kv_cache": "F32", "flash_attn": "disabled",
                     "mtmd_flash_attn": "disabled", "warmup": False},
    }
    rec.update(res)
    with open(os.path.join(out, "llava_mlp_%dx%d.json" % (w, h)), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(w, h, "greedy", res["greedy_ids"], "encode_ms", res["encode_ms"])
