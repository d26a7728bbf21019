#!/usr/bin/python3
"""KV-cache memory per token of a GGUF model after N tokens, against a full cache.

    PYTHONPATH=build/opencv/lib/python3 tools/bench/kv_memory.py MODEL.gguf N

Feeds N random token ids (below 256: in any vocabulary) in 256-token pieces (then one more token, so the cache has released
what sliding-window layers no longer attend to) and prints KVCache::getBytesInUse() per token
beside getBytesPerToken() (every layer holding every token).
"""
import sys

import numpy as np

import cv2 as cv


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    net = cv.dnn.readNet(path)
    cache = cv.dnn.getLLMKVCache(net)
    rng = np.random.default_rng(1)
    fed = 0
    while fed < n:
        k = min(256, n - fed)
        net.setInput(rng.integers(3, 256, (1, k)).astype(np.float32))
        net.forward()
        fed += k
    net.setInput(np.array([[5]], np.float32))
    net.forward()
    fed += 1
    print(f"{path}: {fed} tokens; in use {cache.getBytesInUse() / fed:.0f} bytes/token; "
          f"full cache {cache.getBytesPerToken()} bytes/token")


if __name__ == "__main__":
    main()
