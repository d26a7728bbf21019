#!/usr/bin/python3
"""Runs llama.cpp's llama-bench and our llm_bench on the same GGUF files with the same threads,
in one run, and prints the speeds side by side with their ratios.

    tools/bench/compare_with_llama_bench.py --llama-bench=PATH [--threads=1,2]
        [--prompt-tokens=512] [--gen-tokens=128] [--repetitions=3] MODEL.gguf...

llama-bench is built outside the repository from the llama.cpp source bundled in the npm package
node-llama-cpp@3.21.1 (see doc/performance.md for the commands); it is not part of the project.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def llama_bench(exe, model, threads, p, n, reps):
    out = subprocess.run([exe, "-m", model, "-t", str(threads), "-p", str(p), "-n", str(n),
                          "-r", str(reps), "-o", "json"], capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == p and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == n and r["n_prompt"] == 0)
    return pp, tg


def ours(exe, model, threads, p, n, reps):
    out = subprocess.run([exe, f"--model={model}", f"--threads={threads}", f"--prompt-tokens={p}",
                          f"--gen-tokens={n}", f"--repetitions={reps}"],
                         capture_output=True, text=True, check=True).stdout
    pp = float(re.search(rf"^pp{p}: ([0-9.]+) tok/s", out, re.M).group(1))
    tg = float(re.search(rf"^tg{n}: ([0-9.]+) tok/s", out, re.M).group(1))
    frac = re.search(r"= (\d+)% of it", out).group(1)
    return pp, tg, frac


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--llm-bench", default=str(ROOT / "build" / "bin" / "llm_bench"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    p, n = a.prompt_tokens, a.gen_tokens
    print(f"| model | threads | pp{p} llama.cpp | pp{p} ours | ratio | tg{n} llama.cpp | tg{n} ours | ratio | ours: bandwidth used |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in a.models:
        for t in [int(x) for x in a.threads.split(",")]:
            lpp, ltg = llama_bench(a.llama_bench, model, t, p, n, a.repetitions)
            opp, otg, frac = ours(a.llm_bench, model, t, p, n, a.repetitions)
            print(f"| {pathlib.Path(model).name} | {t} | {lpp:.2f} | {opp:.2f} | {opp / lpp:.2f}x "
                  f"| {ltg:.2f} | {otg:.2f} | {otg / ltg:.2f}x | {frac}% |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
