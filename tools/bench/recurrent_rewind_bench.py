#!/usr/bin/python3
"""What rewinding a hybrid model's recurrent state costs (issue 43), through the Net API.

    PYTHONPATH=build/opencv/lib/python3 tools/bench/recurrent_rewind_bench.py --model=M.gguf \
        [--threads=1] [--prompt-tokens=300] [--steps=20] [--recompute=10] [--repetitions=5]

A prompt of random ids (below 500: any vocabulary) in one forward (its end becomes a checkpoint), then single-token decode
steps; then, each repetition: truncateSequence back to the prompt's end (restoring the
checkpoint: one copy of the state block), and the same again followed by --recompute tokens in
one forward (what rewinding to a length between checkpoints costs: the checkpoint, then the
tokens after it fed again); the decode steps are fed again before the next repetition. Prints the
state's size, the median decode step and the medians of both kinds of rewind.
"""

import argparse
import sys
import time

import numpy as np
import cv2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=300)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--recompute", type=int, default=10)
    ap.add_argument("--repetitions", type=int, default=5)
    args = ap.parse_args()
    cv2.setNumThreads(args.threads)
    net = cv2.dnn.readNet(args.model)
    cache = cv2.dnn.getLLMKVCache(net)
    if cache.getRecurrentStateBytes() == 0:
        sys.exit("%s has no recurrent layers" % args.model)

    def forward(ids):
        net.setInput(np.array([ids], np.float32))
        return net.forward()

    rng = np.random.default_rng(1)
    prompt = [float(i) for i in rng.integers(3, 500, args.prompt_tokens)]
    steps = [float(i) for i in rng.integers(3, 500, args.steps)]
    forward(prompt)
    decode, restore, recompute = [], [], []
    for rep in range(args.repetitions):
        for t in steps:
            start = time.perf_counter()
            forward([t])
            decode.append(time.perf_counter() - start)
        start = time.perf_counter()
        cache.truncateSequence(0, args.prompt_tokens)
        restore.append(time.perf_counter() - start)
        start = time.perf_counter()
        forward(steps[:args.recompute])
        cache.truncateSequence(0, args.prompt_tokens)
        recompute.append(time.perf_counter() - start)
    ms = lambda xs: 1e3 * float(np.median(xs))
    print("state %d bytes a sequence; threads %d; decode step %.1f ms" %
          (cache.getRecurrentStateBytes(), args.threads, ms(decode)))
    print("rewind to a checkpoint (one state copy): %.2f ms" % ms(restore))
    print("rewind %d tokens past a checkpoint (the copy, then %d tokens in one forward): %.1f ms" %
          (args.recompute, args.recompute, ms(recompute)))


if __name__ == "__main__":
    main()
