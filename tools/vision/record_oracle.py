#!/usr/bin/env python3
"""Run tools/vision/mtmd_oracle (built as tools/vision/README.md says) on the vision test models
and write test/data/oracle/vision/*.json.

    python3 tools/vision/record_oracle.py ORACLE_BINARY MODELS_DIR OUT_DIR [llava] [idefics3]

MODELS_DIR is what test/tools/make_vision_models.py writes; OUT_DIR gets the JSON files and the
test images (test_image_<W>x<H>.ppm, made by make_test_image.py, which needs the project's cv2
on PYTHONPATH). Without a set named, all are recorded:

  llava      lm.gguf + mmproj.gguf: llava_mlp_56x56.json, llava_mlp_80x48.json
  idefics3   lm_idefics3.gguf + mmproj_idefics3.gguf: idefics3_56x56.json (3 x 3 tiles),
             idefics3_80x48.json (2 rows x 3 columns); + mmproj_idefics3_1tile.gguf:
             idefics3_1tile_80x48.json (one tile)
  llava16    lm.gguf + mmproj_llava16.gguf (image_grid_pinpoints): llava16_80x48.json (1 x 2
             tiles + overview), llava16_120x100.json (2 x 2), llava16_40x30.json (overview only)
"""
import hashlib
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
oracle, models, out = sys.argv[1:4]
sets = sys.argv[4:] or ["llava", "idefics3", "llava16"]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


LM_GEN = "python3 tools/gguf/make_synthetic_model.py --shape tiny --seed 27 -q"
IDEFICS3_GEN = "python3 tools/vision/make_synthetic_mmproj.py --projector idefics3 --layers 2"
cases = []
if "llava" in sets:
    for w, h in ((56, 56), (80, 48)):
        cases.append(("llava_mlp_%dx%d.json" % (w, h), w, h,
                      ("lm.gguf", LM_GEN + " --out lm.gguf"),
                      ("mmproj.gguf", "python3 tools/vision/make_synthetic_mmproj.py --out mmproj.gguf")))
if "idefics3" in sets:
    lm = ("lm_idefics3.gguf", LM_GEN + " --vocab-from vocab_idefics3.gguf --out lm_idefics3.gguf "
          "(vocab_idefics3.gguf: test/tools/make_vision_models.py)")
    for w, h in ((56, 56), (80, 48)):
        cases.append(("idefics3_%dx%d.json" % (w, h), w, h, lm,
                      ("mmproj_idefics3.gguf", IDEFICS3_GEN + " --out mmproj_idefics3.gguf")))
    cases.append(("idefics3_1tile_80x48.json", 80, 48, lm,
                  ("mmproj_idefics3_1tile.gguf", IDEFICS3_GEN + " --preproc-size 56 --out mmproj_idefics3_1tile.gguf")))
if "llava16" in sets:
    for w, h in ((80, 48), (120, 100), (40, 30)):
        cases.append(("llava16_%dx%d.json" % (w, h), w, h, ("lm.gguf", LM_GEN + " --out lm.gguf"),
                      ("mmproj_llava16.gguf", "python3 tools/vision/make_synthetic_mmproj.py --grid-pinpoints "
                       "56,112,112,56,112,112,168,56,56,168 --out mmproj_llava16.gguf")))

for record, w, h, (lm_name, lm_gen), (mm_name, mm_gen) in cases:
    lm, mm = os.path.join(models, lm_name), os.path.join(models, mm_name)
    img = os.path.join(out, "test_image_%dx%d.ppm" % (w, h))
    subprocess.check_call([sys.executable, os.path.join(here, "make_test_image.py"), str(w), str(h), img])
    res = json.loads(subprocess.check_output([oracle, lm, mm, img, "<__media__>Describe", "8", "1"]))
    models_rec = {"lm": {"generator": lm_gen, "sha256": sha(lm)}, "mmproj": {"generator": mm_gen, "sha256": sha(mm)}}
    if not record.startswith("llava_mlp"):
        models_rec["lm"]["file"], models_rec["mmproj"]["file"] = lm_name, mm_name
    rec = {
        "what": "llama.cpp libmtmd (tools/vision/mtmd_oracle.cpp): image embeddings, prompt chunks and greedy ids",
        "models": models_rec,
        "image": os.path.basename(img),
        "image_size": [w, h],
        "image_sha256": sha(img),
        "settings": {"threads": 1, "n_ctx": 256, "n_batch": 256, "kv_cache": "F32", "flash_attn": "disabled",
                     "mtmd_flash_attn": "disabled", "warmup": False},
    }
    rec.update(res)
    with open(os.path.join(out, record), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(record, "greedy", res["greedy_ids"], "encode_ms", res["encode_ms"])
