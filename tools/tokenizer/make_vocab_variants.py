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
  qwen35-chat.gguf  a Qwen3.5-style vocabulary: Qwen 2's byte-level BPE (ggml-vocab-qwen2.gguf)
                    with tokenizer.ggml.pre "qwen35" (letters joined by their marks), the added
                    tokens of Qwen3.5 in place of its first placeholders (control <|im_start|>
                    ... <|video_pad|>; user-defined <tool_call>, <think>, the FIM tokens, ...,
                    as the converter types HF's non-special added tokens), EOS <|im_end|>, and
                    Qwen3.5's chat template (../chat-templates/Qwen3.5-4B.jinja).
  gemma4-chat.gguf  a Gemma-4-style vocabulary: gemma4-bpe's pieces and merges with Gemma 4's
                    own tokens (<bos>, <eos>, <|turn> / <turn|>, <|think|>, <|tool>, control; the
                    ones llama.cpp's converter keeps visible, <|channel>, <|tool_call>,
                    <|tool_response>, <|"|>, ..., user-defined), scores, add_bos true, Llama's
                    </s> kept (llama.cpp makes it text when <|tool_response> exists), and Gemma
                    4's chat template (../chat-templates/google-gemma-4-31B-it-interleaved.jinja).
  qwen35-chat-hf/, gemma4-chat-hf/  the two as Hugging Face tokenizer.json +
                    tokenizer_config.json (gguf_vocab_to_tokenizer_json.py: Qwen's NFC normalizer,
                    Split with Qwen3.5's regex as its tokenizer.json writes it, ByteLevel; Gemma
                    4's "▁" Replace, Split " ", BPE merges with byte fallback).
  qwen35-chat-Q4_0.gguf, gemma4-chat-Q4_0.gguf  random-weight qwen2 / llama models (one layer,
                    tied embeddings) with those tokenizers and templates, for chat end to end.
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_vocab_to_tokenizer_json  # noqa: E402

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


def source(vocab_dir, name="llama-spm"):
    return read_gguf(os.path.join(vocab_dir, "ggml-vocab-%s.gguf" % name))


def chat_template(vocab_dir, name):
    with open(os.path.join(vocab_dir, "..", "chat-templates", name), encoding="utf-8") as f:
        return f.read()


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


def sentencepiece_bpe_merges(tokens, scores, types):
    """Every split of a normal piece into two normal pieces, in the order of the piece's score."""
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
    return merges


def gemma4_pieces(src, added):
    tokens = list(src.kv("tokenizer.ggml.tokens"))
    scores = list(np.asarray(src.kv("tokenizer.ggml.scores"), np.float32))
    types = list(np.asarray(src.kv("tokenizer.ggml.token_type"), np.int32))
    for text, kind, score in added:
        tokens.append(text)
        types.append(kind)
        scores.append(score)
    return tokens, scores, types


def gemma4_bpe(src):
    tokens, scores, types = gemma4_pieces(src, GEMMA_ADDED)
    index = {t: i for i, t in enumerate(tokens)}
    merges = sentencepiece_bpe_merges(tokens, scores, types)
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


# Gemma 4's own tokens (its chat template's markers), typed as llama.cpp's converter
# (conversion/gemma.py, Gemma4Model.set_vocab) writes them: HF's special added tokens are
# control, except the ones the chat parser reads, which it makes user-defined.
GEMMA4_ADDED = [
    ("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL), ("<mask>", CONTROL),
    ("<|tool>", CONTROL), ("<tool|>", CONTROL),
    ("<|tool_call>", USER_DEFINED), ("<tool_call|>", USER_DEFINED),
    ("<|tool_response>", USER_DEFINED), ("<tool_response|>", USER_DEFINED), ('<|"|>', USER_DEFINED),
    ("<|think|>", CONTROL), ("<|channel>", USER_DEFINED), ("<channel|>", USER_DEFINED),
    ("<|turn>", CONTROL), ("<turn|>", CONTROL),
    ("<|image|>", CONTROL), ("<|audio|>", CONTROL), ("<|video|>", CONTROL),
    ("<|image>", CONTROL), ("<image|>", CONTROL), ("<unused0>", CONTROL),
    ("\n", NORMAL), ("\n\n", NORMAL), ("\n\n\n", NORMAL), ("\n\n\n\n", NORMAL), ("\t", NORMAL), ("\t\t", NORMAL),
]


def gemma4_chat(src, vocab_dir):
    added = [(t, k, 0.0 if k != NORMAL else -5.0 - i) for i, (t, k) in enumerate(GEMMA4_ADDED)]
    tokens, scores, types = gemma4_pieces(src, added)
    index = {t: i for i, t in enumerate(tokens)}
    w = GGUFWriter()
    copy_general(w, src, "gemma4-style-chat")
    w.add_string("tokenizer.ggml.model", "gemma4")
    w.add_array("tokenizer.ggml.tokens", tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.scores", np.asarray(scores, np.float32), ValueType.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", np.asarray(types, np.int32), ValueType.INT32)
    w.add_array("tokenizer.ggml.merges", sentencepiece_bpe_merges(tokens, scores, types), ValueType.STRING)
    w.add_uint32("tokenizer.ggml.bos_token_id", index["<bos>"])
    w.add_uint32("tokenizer.ggml.eos_token_id", index["<eos>"])
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.padding_token_id", index["<pad>"])
    w.add_bool("tokenizer.ggml.add_space_prefix", False)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_string("tokenizer.chat_template", chat_template(vocab_dir, "google-gemma-4-31B-it-interleaved.jinja"))
    return w


# Qwen3.5's added tokens after <|im_end|> (HF's special flag: control, else user-defined).
QWEN35_ADDED = [
    ("<|object_ref_start|>", CONTROL), ("<|object_ref_end|>", CONTROL), ("<|box_start|>", CONTROL),
    ("<|box_end|>", CONTROL), ("<|quad_start|>", CONTROL), ("<|quad_end|>", CONTROL),
    ("<|vision_start|>", CONTROL), ("<|vision_end|>", CONTROL), ("<|vision_pad|>", CONTROL),
    ("<|image_pad|>", CONTROL), ("<|video_pad|>", CONTROL),
    ("<tool_call>", USER_DEFINED), ("</tool_call>", USER_DEFINED), ("<|fim_prefix|>", USER_DEFINED),
    ("<|fim_middle|>", USER_DEFINED), ("<|fim_suffix|>", USER_DEFINED), ("<|fim_pad|>", USER_DEFINED),
    ("<|repo_name|>", USER_DEFINED), ("<|file_sep|>", USER_DEFINED), ("<tool_response>", USER_DEFINED),
    ("</tool_response>", USER_DEFINED), ("<think>", USER_DEFINED), ("</think>", USER_DEFINED),
]


def qwen35_chat(src, vocab_dir):
    tokens = [str(t) for t in src.kv("tokenizer.ggml.tokens")]
    types = [int(t) for t in src.kv("tokenizer.ggml.token_type")]
    first = tokens.index("<|im_end|>") + 1
    for k, (text, kind) in enumerate(QWEN35_ADDED):
        assert tokens[first + k].startswith("[PAD"), tokens[first + k]
        tokens[first + k], types[first + k] = text, kind
    w = GGUFWriter()
    copy_general(w, src, "qwen35-style-chat")
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen35")
    w.add_array("tokenizer.ggml.tokens", tokens, ValueType.STRING)
    w.add_array("tokenizer.ggml.token_type", np.asarray(types, np.int32), ValueType.INT32)
    w.add_array("tokenizer.ggml.merges", [str(m) for m in src.kv("tokenizer.ggml.merges")], ValueType.STRING)
    w.add_uint32("tokenizer.ggml.eos_token_id", tokens.index("<|im_end|>"))
    w.add_uint32("tokenizer.ggml.padding_token_id", tokens.index("<|endoftext|>"))
    w.add_uint32("tokenizer.ggml.bos_token_id", tokens.index("<|endoftext|>"))
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_string("tokenizer.chat_template", chat_template(vocab_dir, "Qwen3.5-4B.jinja"))
    return w


VARIANTS = {"gemma-spm": gemma_spm, "gemma4-bpe": gemma4_bpe}
# Variants with a chat template: (source vocabulary, maker, make_synthetic_model.py arguments of
# a model with that tokenizer, written as <name>-Q4_0.gguf).
CHAT_VARIANTS = {
    "qwen35-chat": ("qwen2", qwen35_chat, "--arch qwen2 --type Q4_0 --shape tiny --layers 1 --seed 35 --tied --context-length 2048"),
    "gemma4-chat": ("llama-spm", gemma4_chat, "--arch llama --type Q4_0 --shape tiny --layers 1 --seed 4 --tied --context-length 2048"),
}

# make_synthetic_model.py's arguments for gpt2-synthetic-Q8_0.gguf (--vocab-from and --out added).
GPT2_MODEL_ARGS = "--arch gpt2 --type Q8_0 --shape tiny --seed 27 --tied"


def synthetic_model(args, vocab_path, path):
    generator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf", "make_synthetic_model.py")
    subprocess.check_call([sys.executable, generator] + args.split() + ["--vocab-from", vocab_path, "--out", path, "-q"])


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
    for name, (base, make, model_args) in CHAT_VARIANTS.items():
        path = os.path.join(out_dir, name + ".gguf")
        make(source(vocab_dir, base), vocab_dir).write(path)
        print("wrote", path)
        gguf_vocab_to_tokenizer_json.convert(path, os.path.join(out_dir, name + "-hf"), name)
        synthetic_model(model_args, path, os.path.join(out_dir, name + "-Q4_0.gguf"))
        print("wrote", os.path.join(out_dir, name + "-Q4_0.gguf"))
    path = os.path.join(out_dir, "gpt2-synthetic-Q8_0.gguf")
    synthetic_model(GPT2_MODEL_ARGS, os.path.join(vocab_dir, "ggml-vocab-gpt-2.gguf"), path)
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv)
