#!/usr/bin/python3
"""The cost of LoRA adapters (issue 42) on decode, prefill and mixed batches, through the Net API.

    PYTHONPATH=build/opencv/lib/python3 tools/bench/lora_bench.py --model=BASE.gguf \
        --lora=r8=A8.gguf --lora=r64=A64.gguf --lora=r8f16=A8_F16.gguf --lora=B=B8.gguf \
        [--threads=1,2] [--gen-tokens=64] [--prompt-tokens=8] [--prefill-tokens=256] \
        [--prefill-configs=base,r8] [--batch=8] [--batch-steps=16] [--mix=r8,B,base] [--repetitions=3]

One Net holds every adapter (loadLLMAdapter once); a configuration is the adapter set of a
sequence (setLLMSequenceAdapters, scale 1), "base" none. Configurations are interleaved within
each repetition (and the order reversed every other one) so that a noisy machine slows them
alike; each figure is the median over the repetitions.

- decode: one sequence per configuration, --prompt-tokens random ids prefilled (not timed), then
  --gen-tokens greedy single-token forwards timed (the argmax fed back; nothing ends
  generation); the configurations take turns at each step, each forward holding one sequence.
- prefill: one forward of --prefill-tokens random ids into an empty cache.
- batch: --batch sequences, each prefilled with --prompt-tokens ids (not timed), then
  --batch-steps forwards of one token per sequence timed. "mixed": the sequences cycle through
  the --mix sets in one batch (8 with r8,B,base: 3 / 3 / 2); "separate": each set's sequences as
  a batch of their own, one after another (the sum of their times); "same": every sequence
  with the first --mix set; "base": none. All of these sequences share the cache and the
  batches take turns at each step.

Prints one table per part: tokens per second (median) and the median of the per-repetition
ratios to the first configuration (decode, prefill) or to "mixed" (batch).
"""
import argparse
import statistics
import time

import numpy as np

import cv2 as cv


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--lora", action="append", default=[], metavar="NAME=PATH",
                   help="an adapter and the name of its configuration (repeatable)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--gen-tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=8)
    p.add_argument("--prefill-tokens", type=int, default=256)
    p.add_argument("--prefill-configs", default="base,r8", help="comma list ('' skips the prefill part)")
    p.add_argument("--decode-configs", default="", help="comma list; default base and every --lora")
    p.add_argument("--batch", type=int, default=8, help="0 skips the batch part")
    p.add_argument("--batch-steps", type=int, default=16)
    p.add_argument("--mix", default="r8,B,base", help="the adapter sets the batch's sequences cycle through")
    p.add_argument("--repetitions", type=int, default=3)
    return p.parse_args()


class Bench:
    def __init__(self, args):
        self.args = args
        self.net = cv.dnn.readNet(args.model)
        self.adapters = {"base": []}
        for item in args.lora:
            name, path = item.split("=", 1)
            self.adapters[name] = [cv.dnn.loadLLMAdapter(self.net, path)]
        self.rng = np.random.default_rng(1)
        self.prompt = self.rng.integers(3, 256, args.prompt_tokens).tolist()
        self.long_prompt = self.rng.integers(3, 256, args.prefill_tokens).tolist()

    def forward(self, ids, sequences):
        cv.dnn.setLLMBatch(self.net, sequences)
        self.net.setInput(np.array([ids], np.float32))
        return self.net.forward()

    def start(self, configs):
        """Empty cache; sequence i gets configs[i]'s adapters."""
        cv.dnn.resetLLMState(self.net)
        for seq, name in enumerate(configs):
            ids = self.adapters[name]
            cv.dnn.setLLMSequenceAdapters(self.net, seq, ids, [1.0] * len(ids))

    def decode(self, names, steps):
        """Seconds of `steps` greedy single-token forwards after the short prompt, one sequence per
        configuration: the configurations take turns step by step (each forward holds one
        sequence's token, as a lone run), so that the machine's noise falls on them alike."""
        self.start(names)
        tokens = [int(np.argmax(self.forward(self.prompt, [s] * len(self.prompt))[-1])) for s in range(len(names))]
        seconds = [0.0] * len(names)
        for step in range(steps):
            for s in (range(len(names)) if step % 2 == 0 else reversed(range(len(names)))):
                t0 = time.perf_counter()
                out = self.forward([tokens[s]], [s])
                seconds[s] += time.perf_counter() - t0
                tokens[s] = int(np.argmax(out[-1]))
        return seconds

    def prefill(self, name):
        self.start([name])
        t0 = time.perf_counter()
        self.forward(self.long_prompt, [0] * len(self.long_prompt))
        return time.perf_counter() - t0

    def batch(self, groups, steps):
        """Seconds of `steps` forwards per group, a group being a batch of sequences (their adapter
        configurations) that advance one token each per forward. Every group's sequences live in
        the cache together and the groups take turns at each step, as decode()'s configurations."""
        names = [n for g in groups for n in g]
        self.start(names)
        seqs, first = [], 0
        for g in groups:
            seqs.append(list(range(first, first + len(g))))
            first += len(g)
        tokens = []
        for ss in seqs:
            out = self.forward([t for _ in ss for t in self.prompt], [s for s in ss for _ in self.prompt])
            tokens.append(np.argmax(out, axis=1).tolist())
        seconds = [0.0] * len(groups)
        for step in range(steps):
            for i in (range(len(groups)) if step % 2 == 0 else reversed(range(len(groups)))):
                t0 = time.perf_counter()
                out = self.forward(tokens[i], seqs[i])
                seconds[i] += time.perf_counter() - t0
                tokens[i] = np.argmax(out, axis=1).tolist()
        return seconds


def table(title, results, part, threads, names, ref):
    """Median tokens/s per configuration and the median over repetitions of its ratio to `ref`
    in the same repetition (paired: a slow stretch of the machine moves both)."""
    print(f"\n{title}")
    print(f"| threads | config | tokens/s (median) | runs | vs {ref} (median of paired ratios) |")
    print("|---|---|---|---|---|")
    for t in threads:
        base = results[(part, t, ref)]
        for n in names:
            runs = results[(part, t, n)]
            ratio = statistics.median(r / b for r, b in zip(runs, base))
            print(f"| {t} | {n} | {statistics.median(runs):.2f} | {' '.join(f'{x:.1f}' for x in runs)} | {ratio:.3f} |")


def main():
    args = parse()
    b = Bench(args)
    threads = [int(t) for t in args.threads.split(",")]
    decode_configs = args.decode_configs.split(",") if args.decode_configs else list(b.adapters)
    prefill_configs = [c for c in args.prefill_configs.split(",") if c]
    mix = args.mix.split(",")
    mixed = [mix[i % len(mix)] for i in range(args.batch)]
    groups = [[m for m in mixed if m == name] for name in dict.fromkeys(mix)]
    # batch: "separate" is several groups whose times add up; the others one group each.
    batch_groups = [("mixed", mixed), ("same", [mix[0]] * args.batch), ("base", ["base"] * args.batch)]
    batch_groups += [("separate", g) for g in groups if g]
    batch_configs = ["mixed", "separate", "same", "base"] if args.batch > 0 else []

    def run_batch():
        seconds = b.batch([g for _, g in batch_groups], args.batch_steps)
        total = {}
        for (name, _), sec in zip(batch_groups, seconds):
            total[name] = total.get(name, 0.0) + sec
        return total

    # A job returns {config: seconds}; decode and batch run all their configurations in one job, step by step.
    jobs = [("decode", lambda: dict(zip(decode_configs, b.decode(decode_configs, args.gen_tokens))),
             args.gen_tokens)] if decode_configs else []
    jobs += [("prefill", (lambda c=c: {c: b.prefill(c)}), args.prefill_tokens) for c in prefill_configs]
    jobs += [("batch", run_batch, args.batch * args.batch_steps)] if batch_configs else []

    for t in threads:  # warm up: repacked weights, adapter buffers, cache pages
        cv.setNumThreads(t)
        if decode_configs:
            b.decode(decode_configs, 4)
        if batch_configs:
            b.batch([g for _, g in batch_groups], 2)

    results = {}
    for rep in range(args.repetitions):
        order = [(t, j) for t in threads for j in jobs]
        for t, (part, f, tokens) in (order if rep % 2 == 0 else order[::-1]):
            cv.setNumThreads(t)
            for name, seconds in f().items():
                results.setdefault((part, t, name), []).append(tokens / seconds)
        print(f"repetition {rep + 1}/{args.repetitions} done", flush=True)

    print(f"\nmodel {args.model}; adapters: " + ", ".join(args.lora) + f"; repetitions {args.repetitions}")
    if decode_configs:
        table(f"decode: {args.gen_tokens} tokens after {args.prompt_tokens}, configurations step by step",
              results, "decode", threads, decode_configs, decode_configs[0])
    if prefill_configs:
        table(f"prefill: {args.prefill_tokens} tokens", results, "prefill", threads, prefill_configs,
              prefill_configs[0])
    if batch_configs:
        table(f"batch: {args.batch} sequences x {args.batch_steps} steps, mix {args.mix}",
              results, "batch", threads, batch_configs, "mixed")


if __name__ == "__main__":
    main()
