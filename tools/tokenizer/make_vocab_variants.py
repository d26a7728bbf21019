#!/usr/bin/env python3
# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""Vocabulary-only GGUF files of tokenizer kinds that the shared test data lacks, made from the
shared llama.cpp vocabularies (../shared/testdata/llama.cpp-vocab) by changing their metadata:

  gemma-spm.gguf    Gemma 1/2/3's SentencePiece settings on Llama's 32000-token vocabulary:
                    tokenizer.ggml.model "llama", add_space_prefix false (no "▁" before the
                    text), byte fallback (<0xXX> tokens), add_bos true / add_eos false, and
                    Gemma's kinds of added tokens: control <start_of_turn> / <end_of_turn> /
                    <pad> / <mask> / [multimodal], user-defined <table> / <h1> / <unused0>,
                    newline and tab runs as normal pieces.
  gemma4-bpe.gguf   Gemma 4's tokenizer (tokenizer.ggml.model "gemma4": BPE merges on
                    "▁"-escaped raw UTF-8, <0xXX> byte tokens) on the same pieces, with merges
                    derived from the SentencePiece scores (every split of a piece into two
                    pieces, in the order of the piece's score, as Hugging Face converts
                    SentencePiece BPE models; none for runs of more than two newlines, which
                    llama.cpp's Gemma 4 rule looks up whole), add_bos false (which llama.cpp
                    overrides).
  gpt2-synthetic-Q8_0.gguf  a random-weight gpt2 model (tools/gguf/make_synthetic_model.py,
                    GPT2_MODEL_ARGS) with GPT-2's real tokenizer (50257 tokens), for the
                    TextGenerationModel test.

    /usr/bin/python3 tools/tokenizer/make_vocab_variants.py SHARED_VOCAB_DIR OUT_DIR

Deterministic (same bytes on every run). llama.cpp (tools/oracle/nlc_tokenize.mjs) loads both.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from gguf_writer import GGUFWriter, ValueType, copy_kv, read_gguf  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# (text, type, score) appended to Llama's vocabulary for the Gemma-style one.
GEMMA_ADDED = [
    ("<pad>", CONTROL, 0.0),
    ("<mask>", CONTROL, 0.0),
    ("[multimodal]", CONTROL, 0.0),
    ("<start_of_turn>", CONTROL, 0.0),
    ("<end_of_turn>", CONTROL, 0.0),
    ("<unused0>", USER_DEFINED, 0.0),
    ("<table>", USER_DEFINED, 0.0),
    ("<h1>", USER_DEFINED, 0.0),
    ("\n", NORMAL, -5.0),
    ("\n\n", NORMAL, -6.0),
    ("\n\n\n", NORMAL, -7.0),
    ("\t", NORMAL, -8.0),
    ("\t\t", NORMAL, -9.0),
]


def source(vocab_dir):
    return read_gguf(os.path.join(vocab_dir, "ggml-vocab-llama-spm.gguf"))


def copy_general(w, src, name):
    for kv in src.kvs:
        if kv.key.startswith("general.") and kv.key != "general.name":
            copy_kv(w, kv)
    w.add_string("general.name", name)


def gemma_spm(src):
    tokens = list(src.kv("tokenizer.ggml.tokens"))
    scores = np.asarray(src.kv("tokenizer.ggml.scores"), np.float32)
    types = np.asarray(src.kv("tokenizer.ggml.token_type"), np.int32)
    tokens += [t for t, _, _ in GEMMA_ADDED]
    types = np.concatenate([types, np.asarray([k for _, k, _ in GEMMA_ADDED], np.int32)])
    scores = np.concatenate([scores, np.asarray([s for _, _, s in GEMMA_ADDED], np.float32)])
    w = GGUFWriter()
    copy_general(w, src, "gemma-style-spm")
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.scores", scores, ValueType.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, ValueType.INT32)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.padding_token_id", tokens.index("<pad>"))
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)
    return w


def gemma4_bpe(src):
    tokens = list(src.kv("tokenizer.ggml.tokens"))
    scores = list(np.asarray(src.kv("tokenizer.ggml.scores"), np.float32))
    types = list(np.asarray(src.kv("tokenizer.ggml.token_type"), np.int32))
    for text, kind, score in GEMMA_ADDED:
        tokens.append(text)
        types.append(kind)
        scores.append(score)
    index = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i in sorted(range(len(tokens)), key=lambda i: (-scores[i], i)):
        t = tokens[i]
        # No merge makes a run of more than two newlines: those tokens are reached only by
        # llama.cpp's Gemma 4 rule that looks a word of newlines up whole.
        if types[i] != NORMAL or len(t) < 2 or (t.strip("\n") == "" and len(t) > 2):
            continue
        for k in range(1, len(t)):
            a, b = t[:k], t[k:]
            if a in index and b in index and types[index[a]] == NORMAL and types[index[b]] == NORMAL:
                merges.append(a + " " + b)
    w = GGUFWriter()
    copy_general(w, src, "gemma4-style-bpe")
    w.add_string("tokenizer.ggml.model", "gemma4")
    w.add_array("tokenizer.ggml.tokens", tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.token_type", np.asarray(types, np.int32), ValueType.INT32)
    w.add_array("tokenizer.ggml.merges", merges, ValueType.STRING)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.padding_token_id", index["<pad>"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    return w


VARIANTS = {"gemma-spm": gemma_spm, "gemma4-bpe": gemma4_bpe}

# make_synthetic_model.py's arguments for gpt2-synthetic-Q8_0.gguf (--vocab-from and --out added).
GPT2_MODEL_ARGS = "--arch gpt2 --type Q8_0 --shape tiny --seed 27 --tied"


def gpt2_model(vocab_dir, path):
    generator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf", "make_synthetic_model.py")
    subprocess.check_call([sys.executable, generator] + GPT2_MODEL_ARGS.split() +
                          ["--vocab-from", os.path.join(vocab_dir, "ggml-vocab-gpt-2.gguf"), "--out", path, "-q"])


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    vocab_dir, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    src = source(vocab_dir)
    for name, make in VARIANTS.items():
        path = os.path.join(out_dir, name + ".gguf")
        make(src).write(path)
        print("wrote", path)
    path = os.path.join(out_dir, "gpt2-synthetic-Q8_0.gguf")
    gpt2_model(vocab_dir, path)
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv)
