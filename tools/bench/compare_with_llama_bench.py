#!/usr/bin/python3
"""Runs llama.cpp's benchmark tools and our llm_bench on the same GGUF files with the same
threads, in one run, and prints the speeds side by side with their ratios.

    tools/bench/compare_with_llama_bench.py --llama-bench=PATH [--threads=1,2]
        [--prompt-tokens=512] [--gen-tokens=128] [--repetitions=3]
        [--batch=4,8,16] [--depth=2048,4096] [--plain] [--kv-type=f32] MODEL.gguf...

Plain (the default when neither --batch nor --depth is given, or with --plain): llama-bench
-p P -n G beside `llm_bench` (pp<P>, tg<G>).

--batch=K1,K2,...: K sequences of P prompt tokens each, prefilled and then decoded together
(G steps of K tokens): `llama-batched-bench -npp P -ntg G -npl K1,K2,...` beside
`llm_bench --batch=K`. Both totals are all sequences' tokens per second: llama-batched-bench's
S_PP t/s (pl*pp / t_pp) and S_TG t/s (pl*tg / t_tg) columns (tools/batched-bench/batched-bench.cpp).
llama-batched-bench runs each K once (it has no repetitions, after a warm-up); ours averages
--repetitions after an untimed one (llm_bench's warm-up: the first touch of the KV cache's pages,
which llama.cpp's tools pay when they create their context).
With K = 1 in the list, the last column is our speed-up over our own K = 1.

--depth=D1,D2,...: generation of G tokens after a D-token context: `llama-bench -d D -n G -p 0`
beside `llm_bench --depth=D` (tg<G>@d<D>). The model's context must hold D + G tokens
(tools/gguf/make_synthetic_model.py --context-length).

--kv-type: the element type of our stored keys and values (f32, the default; f16, which
llama.cpp's tools keep by default; q8), passed to every llm_bench run.

The output starts with the command line, the machine (CPU model, logical CPUs), the commit and
the load average before the run (idle or busy), and ends with the load average after it; each
row's last column is the 1-minute load average when it was measured (our run and llama.cpp's
take the row's threads: a load well above them means the machine was shared).

The llama.cpp tools are built outside the repository from the llama.cpp source bundled in the
npm package node-llama-cpp@3.21.1 (see doc/performance.md for the commands); they are not part
of the project. --llama-batched-bench defaults to llama-batched-bench beside --llama-bench.
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
IDLE_LOAD = 0.5  # 1-minute load average above what the benchmark itself runs: the machine is busy


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{shlex.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout, r.stderr


def llama_bench(exe, model, threads, p, n, reps):
    out, _ = run([exe, "-m", model, "-t", str(threads), "-p", str(p), "-n", str(n), "-r", str(reps), "-o", "json"])
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == p and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == n and r["n_prompt"] == 0)
    return pp, tg


def llama_bench_depth(exe, model, threads, depths, n, reps):
    """{depth: tokens/s} of llama-bench -d D1,D2 -n G -p 0."""
    out, _ = run([exe, "-m", model, "-t", str(threads), "-p", "0", "-n", str(n), "-d", ",".join(map(str, depths)),
                  "-r", str(reps), "-o", "json"])
    return {r["n_depth"]: r["avg_ts"] for r in json.loads(out) if r["n_gen"] == n and r["n_prompt"] == 0}


# One row of llama-batched-bench's table:
# |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|" + r"\s*([0-9.]+)\s*\|" * 6, re.M)


def llama_batched_bench(exe, model, threads, p, n, ks):
    """{K: (S_PP, S_TG, flash_attn)}: prefill and generation tokens/s of all K sequences together."""
    ctx = -(-max(ks) * (p + n) // 256) * 256  # every sequence's tokens, in llama.cpp's 256-cell steps
    out, err = run([exe, "-m", model, "-t", str(threads), "-c", str(ctx), "-npp", str(p), "-ntg", str(n),
                    "-npl", ",".join(map(str, ks))])
    text = out + err
    fa = re.search(r"flash_attn = (-?\d+)", text)
    res = {}
    for m in ROW.finditer(text):
        pp, tg, b = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if pp == p and tg == n:
            res[b] = (float(m.group(6)), float(m.group(8)), fa.group(1) if fa else "?")
    missing = [k for k in ks if k not in res]
    if missing:
        sys.exit(f"llama-batched-bench printed no row for B = {missing}:\n{text[-3000:]}")
    return res


def ours(exe, model, threads, p, n, reps, kv):
    out, _ = run([exe, f"--model={model}", f"--threads={threads}", f"--prompt-tokens={p}",
                  f"--gen-tokens={n}", f"--repetitions={reps}", f"--kv-type={kv}"])
    pp = float(re.search(rf"^pp{p}: ([0-9.]+) tok/s", out, re.M).group(1))
    tg = float(re.search(rf"^tg{n}: ([0-9.]+) tok/s", out, re.M).group(1))
    frac = re.search(r"= (\d+)% of it", out).group(1)
    return pp, tg, frac


def ours_batch(exe, model, threads, k, p, n, reps, kv):
    out, _ = run([exe, f"--model={model}", f"--threads={threads}", f"--batch={k}", f"--prompt-tokens={p}",
                  f"--gen-tokens={n}", f"--repetitions={reps}", f"--kv-type={kv}"])
    pp = float(re.search(rf"^batch{k} pp{p}: ([0-9.]+) tok/s", out, re.M).group(1))
    tg = float(re.search(rf"^batch{k} tg{n}: ([0-9.]+) tok/s", out, re.M).group(1))
    return pp, tg


def ours_depth(exe, model, threads, d, n, reps, kv):
    out, _ = run([exe, f"--model={model}", f"--threads={threads}", f"--depth={d}", f"--gen-tokens={n}",
                  f"--repetitions={reps}", f"--kv-type={kv}"])
    return float(re.search(rf"^tg{n}@d{d}: ([0-9.]+) tok/s", out, re.M).group(1))


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def load_text(own=0):
    """`own`: the threads of the benchmark just run, which the 1-minute average still counts."""
    l1, l5, l15 = os.getloadavg()
    return f"{l1:.2f} {l5:.2f} {l15:.2f} ({'idle' if l1 < own + IDLE_LOAD else 'busy'})"


def load1():
    """The 1-minute load average when a row is printed: above its threads, something else ran."""
    return f"{os.getloadavg()[0]:.2f}"


def ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--llama-batched-bench", help="default: llama-batched-bench beside --llama-bench")
    ap.add_argument("--llm-bench", default=str(ROOT / "build" / "bin" / "llm_bench"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--batch", type=ints, default=[], help="K1,K2,...: batched prefill and generation")
    ap.add_argument("--depth", type=ints, default=[], help="D1,D2,...: generation after a D-token context")
    ap.add_argument("--plain", action="store_true", help="also the plain pp/tg comparison with --batch / --depth")
    ap.add_argument("--kv-type", default="f32", choices=["f32", "f16", "q8"],
                    help="our stored keys and values (llm_bench --kv-type); llama.cpp's tools keep f16")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    p, n = a.prompt_tokens, a.gen_tokens
    batched_exe = a.llama_batched_bench or str(pathlib.Path(a.llama_bench).with_name("llama-batched-bench"))
    threads = ints(a.threads)
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        head = "?"
    print(f"command: {shlex.join([sys.argv[0]] + sys.argv[1:])}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs; threads {a.threads}; HEAD {head}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"load average before: {load_text()}\n", flush=True)

    if a.plain or not (a.batch or a.depth):
        print(f"| model | threads | pp{p} llama.cpp | pp{p} ours | ratio | tg{n} llama.cpp | tg{n} ours | ratio | ours: bandwidth used | load |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for model in a.models:
            for t in threads:
                lpp, ltg = llama_bench(a.llama_bench, model, t, p, n, a.repetitions)
                opp, otg, frac = ours(a.llm_bench, model, t, p, n, a.repetitions, a.kv_type)
                print(f"| {pathlib.Path(model).name} | {t} | {lpp:.2f} | {opp:.2f} | {opp / lpp:.2f}x "
                      f"| {ltg:.2f} | {otg:.2f} | {otg / ltg:.2f}x | {frac}% | {load1()} |", flush=True)
        print()

    if a.batch:
        print(f"Batched: K sequences x {p} prompt tokens, then {n} steps of K tokens; tokens/s of all sequences "
              f"(llama-batched-bench S_PP / S_TG, one run each; ours: mean of {a.repetitions})")
        print(f"| model | threads | K | pp{p} llama.cpp | pp{p} ours | ratio | tg{n} llama.cpp | tg{n} ours | ratio "
              f"| ours tg vs our K=1 | load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for model in a.models:
            for t in threads:
                lres = llama_batched_bench(batched_exe, model, t, p, n, a.batch)
                single = None
                for k in a.batch:
                    opp, otg = ours_batch(a.llm_bench, model, t, k, p, n, a.repetitions, a.kv_type)
                    if k == 1:
                        single = otg
                    lpp, ltg, _ = lres[k]
                    own = f"{otg / single:.2f}x" if single else "-"
                    print(f"| {pathlib.Path(model).name} | {t} | {k} | {lpp:.2f} | {opp:.2f} | {opp / lpp:.2f}x "
                          f"| {ltg:.2f} | {otg:.2f} | {otg / ltg:.2f}x | {own} | {load1()} |", flush=True)
                fa = next(iter(lres.values()))[2]
                print(f"(llama-batched-bench: flash_attn = {fa}{' (auto)' if fa == '-1' else ''})")
        print()

    if a.depth:
        print(f"Long context: {n} single-token steps after a D-token context (llama-bench -d D -n {n} -p 0, "
              f"mean of {a.repetitions}; ours: llm_bench --depth=D)")
        print(f"| model | threads | D | tg{n}@dD llama.cpp | tg{n}@dD ours | ratio | load |")
        print("|---|---|---|---|---|---|---|")
        for model in a.models:
            for t in threads:
                lres = llama_bench_depth(a.llama_bench, model, t, a.depth, n, a.repetitions)
                for d in a.depth:
                    otg = ours_depth(a.llm_bench, model, t, d, n, a.repetitions, a.kv_type)
                    print(f"| {pathlib.Path(model).name} | {t} | {d} | {lres[d]:.2f} | {otg:.2f} | {otg / lres[d]:.2f}x | {load1()} |",
                          flush=True)
        print()
    print(f"load average after: {load_text(max(threads))}")


if __name__ == "__main__":
    sys.exit(main())
