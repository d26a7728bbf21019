#!/usr/bin/python3
"""Checks that test/tools/make_onnx_llm_models.py still makes, byte for byte, the models that the
ONNX Runtime oracle files test/data/oracle/onnx/*.ort.json were computed on.

Usage: check_onnx_llm_models.py [--keep DIR]

Remakes every variant into a temporary folder (or DIR with --keep) and compares, per variant:
the generator command recorded in the oracle file with the one the variant list gives now, and
the sha256 of every recorded model file (model.onnx, model.onnx.data, genai_config.json). Also
reports variants without an oracle file and oracle files without a variant. Exit status 1 on any
difference: the oracle files then no longer describe the models and must be remade (README.md
next to them says how).
"""
import argparse
import glob
import hashlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx_llm_models as variants  # noqa: E402


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check(out_dir):
    problems = []
    oracle_files = {os.path.basename(p)[:-len(".ort.json")]: p
                    for p in glob.glob(os.path.join(variants.ORACLE_DIR, "*.ort.json"))}
    for name in sorted(set(oracle_files) - set(variants.VARIANTS)):
        problems.append(f"{name}: oracle file without a variant in make_onnx_llm_models.py")
    for name in variants.VARIANTS:
        if name not in oracle_files:
            problems.append(f"{name}: no oracle file {name}.ort.json")
            continue
        with open(oracle_files[name]) as f:
            oracle = json.load(f)
        folder = variants.make(name, out_dir)
        with open(os.path.join(folder, "generator.json")) as f:
            command = json.load(f)["command"]
        if command != oracle["generator"]:
            problems.append(f"{name}: generator command changed:\n  oracle: {oracle['generator']}\n  now:    {command}")
        made = {n for n in os.listdir(folder) if n != "generator.json"}
        if made != set(oracle["model_files"]):
            problems.append(f"{name}: files {sorted(made)}, oracle has {sorted(oracle['model_files'])}")
        for file_name, info in oracle["model_files"].items():
            path = os.path.join(folder, file_name)
            if os.path.exists(path) and sha256(path) != info["sha256"]:
                problems.append(f"{name}: {file_name} sha256 {sha256(path)} != oracle {info['sha256']}")
        print(f"{name}: {'ok' if not any(p.startswith(name + ':') for p in problems) else 'DIFFERENT'}")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keep", help="make the models here and leave them (default: a temporary folder)")
    a = p.parse_args()
    if a.keep:
        problems = check(a.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            problems = check(tmp)
    for line in problems:
        print(line, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
