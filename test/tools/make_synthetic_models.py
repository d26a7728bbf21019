#!/usr/bin/python3
"""Regenerates the synthetic GGUF models that test/data/oracle/synthetic_*.nlc.json describe.

Usage: make_synthetic_models.py OUTPUT_DIR

Each oracle file records the exact tools/gguf/make_synthetic_model.py command and the sha256 of
the model llama.cpp was run on; the model is made again here and must have the same bytes, so
the stored llama.cpp outputs apply to it. The same for test/data/oracle/rope_*.nlc.json (RoPE
scaling), swa_*.nlc.json (sliding windows), context_*.nlc.json (a chosen context length), gemma4_*.nlc.json and
hybrid_*.nlc.json (lfm2 / qwen35 / granitehybrid; a *_prompt400 file shares its model with the
short-prompt file of its type), and the model without scaling / window that each
of those records under "unscaled". Also writes
a GGUF v2 / alignment 64 variant of the llama F32 model (same weights, so llama.cpp's F32 outputs
apply to it as well), and the llama Q8_0 model with other weights (seed 28).
"""
import glob
import hashlib
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_generator(command, out_path):
    args = shlex.split(command)
    assert args[0] == "python3" and args[1] == "tools/gguf/make_synthetic_model.py", command
    i = args.index("--out")
    args[i + 1] = out_path
    subprocess.run([sys.executable] + args[1:], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    failures = []
    oracle_dir = os.path.join(ROOT, "test", "data", "oracle")
    oracles = sorted(glob.glob(os.path.join(oracle_dir, "synthetic_*.nlc.json")) +
                     glob.glob(os.path.join(oracle_dir, "rope_*.nlc.json")) +
                     glob.glob(os.path.join(oracle_dir, "swa_*.nlc.json")) +
                     glob.glob(os.path.join(oracle_dir, "context_*.nlc.json")) +
                     glob.glob(os.path.join(oracle_dir, "gemma4_*.nlc.json")) +
                     glob.glob(os.path.join(oracle_dir, "hybrid_*.nlc.json")))
    for oracle in oracles:
        with open(oracle) as f:
            ref = json.load(f)
        for model in [ref] + ([ref["unscaled"]] if "unscaled" in ref else []):
            path = os.path.join(out_dir, model["model_file"])
            if not (os.path.exists(path) and sha256(path) == model["model_sha256"]):
                run_generator(model["generator"], path)
                if sha256(path) != model["model_sha256"]:
                    failures.append(f"{model['model_file']}: sha256 differs from the oracle's model "
                                    f"(numpy {ref['numpy']} made it)")
    variant = os.path.join(out_dir, "synthetic_llama_F32_v2_align64.gguf")
    run_generator("python3 tools/gguf/make_synthetic_model.py --arch llama --type F32 --shape tiny "
                  "--seed 27 --version 2 --alignment 64 --out x", variant)
    # The llama Q8_0 model's shape with other weights (seed 28): a session of one must not load into the
    # other (test_kv_session.cpp).
    other = os.path.join(out_dir, "synthetic_llama_Q8_0_seed28.gguf")
    if not os.path.exists(other):
        run_generator("python3 tools/gguf/make_synthetic_model.py --arch llama --type Q8_0 --shape tiny "
                      "--seed 28 --out x", other)
    # Two LoRA adapters of the llama Q4_0 model (test_decode_allocations.cpp: a batch mixing them).
    for seed, rank in ((1, 8), (2, 16)):
        adapter = os.path.join(out_dir, f"synthetic_llama_Q4_0_lora_r{rank}.gguf")
        if not os.path.exists(adapter):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gguf", "make_lora_adapter.py"), "--base",
                            os.path.join(out_dir, "synthetic_llama_Q4_0.gguf"), "--out", adapter, "--rank", str(rank),
                            "--seed", str(seed), "-q"], check=True)
    if failures:
        sys.exit("\n".join(failures))
    print(f"{len(oracles)} synthetic models ready in {out_dir}")


if __name__ == "__main__":
    main()
