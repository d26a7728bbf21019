#!/usr/bin/env python3
"""Run tools/vision/mtmd_oracle (built as tools/vision/README.md says) on the vision test models
and write test/data/oracle/vision/*.json.

    python3 tools/vision/record_oracle.py ORACLE_BINARY MODELS_DIR OUT_DIR [all|llava|gemma3|idefics3|llava16]

MODELS_DIR holds the models of test/tools/make_vision_models.py; OUT_DIR gets the
JSON files and the test images (test_image_<W>x<H>.ppm, made by make_test_image.py, which needs
the project's cv2 on PYTHONPATH).

  llava      lm.gguf + mmproj.gguf: llava_mlp_56x56.json, llava_mlp_80x48.json
  gemma3     gemma3_lm.gguf + gemma3_mmproj*.gguf: gemma3_*.json
  idefics3   lm_idefics3.gguf + mmproj_idefics3.gguf: idefics3_56x56.json (3 x 3 tiles),
             idefics3_80x48.json (2 rows x 3 columns); + mmproj_idefics3_1tile.gguf:
             idefics3_1tile_80x48.json (one tile)
  llava16    lm.gguf + mmproj_llava16.gguf (image_grid_pinpoints): llava16_80x48.json (1 x 2
             tiles + overview), llava16_120x100.json (2 x 2), llava16_40x30.json (overview only)

The idefics3 and llava16 records name their files (models.*.file).
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


def record(name, lm, mm, size, lm_gen, mm_gen, causal_too, name_files=False):
    w, h = size
    img = os.path.join(out, "test_image_%dx%d.ppm" % (w, h))
    subprocess.check_call([sys.executable, os.path.join(here, "make_test_image.py"), str(w), str(h), img])
    res = json.loads(subprocess.check_output([oracle, lm, mm, img, "<__media__>Describe", "8", "1"]))
    rec = {
        "what": "llama.cpp libmtmd (tools/vision/mtmd_oracle.cpp): image embeddings, prompt chunks and greedy ids",
        "models": {
            "lm": {"generator": lm_gen, "sha256": sha(lm)},
            "mmproj": {"generator": mm_gen, "sha256": sha(mm)},
        },
        "image": os.path.basename(img),
        "image_size": [w, h],
        "image_sha256": sha(img),
        "settings": {"threads": 1, "n_ctx": 256, "n_batch": 256, "kv_cache": "F32", "flash_attn": "disabled",
                     "mtmd_flash_attn": "disabled", "warmup": False},
    }
    if name_files:
        rec["models"]["lm"]["file"] = os.path.basename(lm)
        rec["models"]["mmproj"]["file"] = os.path.basename(mm)
    rec.update(res)
    if causal_too:
        # The same prompt with the image decoded under a causal mask (not what libmtmd does for
        # gemma3): the tests check that it is far from the real answer.
        c = json.loads(subprocess.check_output([oracle, lm, mm, img, "<__media__>Describe", "8", "1", "causal"]))
        rec["causal_greedy_ids"] = c["greedy_ids"]
        rec["causal_first_logits"] = c["first_logits"]
    with open(os.path.join(out, name % (w, h)), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(name % (w, h), "greedy", res["greedy_ids"], "encode_ms", res["encode_ms"])


which = sys.argv[4] if len(sys.argv) > 4 else "all"
if which in ("all", "llava"):
    for size in ((56, 56), (80, 48)):
        record("llava_mlp_%dx%d.json", os.path.join(models, "lm.gguf"), os.path.join(models, "mmproj.gguf"), size,
               "python3 tools/gguf/make_synthetic_model.py --shape tiny --seed 27 -q --out lm.gguf",
               "python3 tools/vision/make_synthetic_mmproj.py --out mmproj.gguf", False)
if which in ("all", "gemma3"):
    for size in ((112, 112), (200, 150)):
        record("gemma3_%dx%d.json", os.path.join(models, "gemma3_lm.gguf"), os.path.join(models, "gemma3_mmproj.gguf"),
               size, "test/tools/make_vision_models.py (gemma3_lm.gguf)",
               "python3 tools/vision/make_synthetic_mmproj.py --projector gemma3 --image-size 112 --layers 2 "
               "--scale-factor 2 --out gemma3_mmproj.gguf", True)
    # The pooling kernel's default (no scale_factor key: 4) and a grid that is not a multiple
    # of it (4 x 4 patches, kernel 3: ggml_pool_2d keeps one window).
    record("gemma3_pool4_%dx%d.json", os.path.join(models, "gemma3_lm.gguf"),
           os.path.join(models, "gemma3_mmproj_pool4.gguf"), (112, 112),
           "test/tools/make_vision_models.py (gemma3_lm.gguf)",
           "python3 tools/vision/make_synthetic_mmproj.py --projector gemma3 --image-size 112 --layers 2 "
           "--out gemma3_mmproj_pool4.gguf", False)
    record("gemma3_56_pool3_%dx%d.json", os.path.join(models, "gemma3_lm.gguf"),
           os.path.join(models, "gemma3_mmproj_56_pool3.gguf"), (56, 56),
           "test/tools/make_vision_models.py (gemma3_lm.gguf)",
           "python3 tools/vision/make_synthetic_mmproj.py --projector gemma3 --image-size 56 --layers 2 "
           "--scale-factor 3 --out gemma3_mmproj_56_pool3.gguf", False)
if which in ("all", "idefics3"):
    lm_gen = ("python3 tools/gguf/make_synthetic_model.py --shape tiny --seed 27 -q --vocab-from vocab_idefics3.gguf "
              "--out lm_idefics3.gguf (vocab_idefics3.gguf: test/tools/make_vision_models.py)")
    gen = "python3 tools/vision/make_synthetic_mmproj.py --projector idefics3 --layers 2"
    for size in ((56, 56), (80, 48)):
        record("idefics3_%dx%d.json", os.path.join(models, "lm_idefics3.gguf"),
               os.path.join(models, "mmproj_idefics3.gguf"), size, lm_gen, gen + " --out mmproj_idefics3.gguf",
               False, True)
    record("idefics3_1tile_%dx%d.json", os.path.join(models, "lm_idefics3.gguf"),
           os.path.join(models, "mmproj_idefics3_1tile.gguf"), (80, 48), lm_gen,
           gen + " --preproc-size 56 --out mmproj_idefics3_1tile.gguf", False, True)
if which in ("all", "llava16"):
    for size in ((80, 48), (120, 100), (40, 30)):
        record("llava16_%dx%d.json", os.path.join(models, "lm.gguf"), os.path.join(models, "mmproj_llava16.gguf"),
               size, "python3 tools/gguf/make_synthetic_model.py --shape tiny --seed 27 -q --out lm.gguf",
               "python3 tools/vision/make_synthetic_mmproj.py --grid-pinpoints 56,112,112,56,112,112,168,56,56,168 "
               "--out mmproj_llava16.gguf", False, True)
