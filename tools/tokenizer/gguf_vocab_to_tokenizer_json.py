#!/usr/bin/env python3
# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""Writes a Hugging Face tokenizer.json + tokenizer_config.json from a GGUF vocabulary, laid
out the way Hugging Face has these tokenizers, so that the tokenizer.json reader can be
checked against llama.cpp's test vectors (ggml-vocab-*.gguf.inp/.out) for models whose
tokenizer.json is not among the test data.

    /usr/bin/python3 tools/tokenizer/gguf_vocab_to_tokenizer_json.py VOCAB.gguf OUT_DIR
    /usr/bin/python3 tools/tokenizer/gguf_vocab_to_tokenizer_json.py --all VOCAB_DIR OUT_DIR

--all converts every ggml-vocab-<name>.gguf of VOCAB_DIR whose tokenizer.ggml.pre is in
PRE_TOKENIZERS below (or that is SentencePiece-style) into OUT_DIR/<name>/.

Byte-level BPE ("gpt2"): model.vocab holds every token, merges come from tokenizer.ggml.merges
(alternately as "a b" strings and ["a", "b"] pairs, the two forms HF writes), control and
user-defined tokens become added_tokens (special true / false), and the pre_tokenizer is the
one HF's files for that model family have (PRE_TOKENIZERS).
SentencePiece-style ("llama"): merges are derived from the scores as HF's converter derives
them from a SentencePiece model: every split of a token into two tokens, ordered by the score
of the token they make.
Gemma 4 ("gemma4"): the file's merges, "▁" for spaces, byte fallback, as transformers'
GemmaTokenizer lays it out.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from gguf_writer import read_gguf  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


def digits(individual):
    return {"type": "Digits", "individual_digits": individual}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


DEEPSEEK_CJK = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"
DEEPSEEK_LETTERS = (
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
    "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
    "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
    "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC"
    "\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3"
    "\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"
    "\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF"
    "\U0001E900-\U0001E943]+")
DEEPSEEK_PUNCTUATION = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+"

# tokenizer.ggml.pre -> the pre_tokenizer of the model family's tokenizer.json
PRE_TOKENIZERS = {
    "gpt-2": byte_level(True),
    "mpt": byte_level(True),
    "starcoder": sequence(digits(True), byte_level(True)),
    "refact": sequence(digits(True), byte_level(True)),
    "falcon": sequence({"type": "Punctuation", "behavior": "Contiguous"}, byte_level(True), digits(False),
                       split("[0-9][0-9][0-9]")),
    "deepseek-coder": sequence(split("[\r\n]"), split("\\s?\\p{L}+"), split("\\s?\\p{P}+"), split(DEEPSEEK_CJK),
                               digits(True), byte_level(False)),
    "deepseek-llm": sequence(split("[\r\n]"), split(DEEPSEEK_LETTERS), split(DEEPSEEK_PUNCTUATION),
                             split("\\s+$"), split(DEEPSEEK_CJK), digits(False), byte_level(False)),
    "llama-bpe": sequence(split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
                                "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"), byte_level(False)),
    "qwen2": sequence(split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
                            "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"), byte_level(False)),
    # Qwen3.5: letters joined by their marks (\p{M}).
    "qwen35": sequence(split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                             "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"), byte_level(False)),
}

# The normalizer of the family's tokenizer.json (Qwen's NFC, which llama.cpp does not apply).
NORMALIZERS = {"qwen2": {"type": "NFC"}, "qwen35": {"type": "NFC"}}

# Phi-3's added tokens swallow the whitespace after them, except these.
PHI3_KEEPS_SPACE = {"<unk>", "<s>", "<|endoftext|>"}


def added_token(token_id, content, special, rstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": rstrip,
            "normalized": not special, "special": special}


def sentencepiece_merges(tokens, scores, types):
    """Every split of a normal token into two tokens, best-scored result first."""
    ids = {t: i for i, t in enumerate(tokens) if types[i] in (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE)}
    merges = []
    for i, text in enumerate(tokens):
        if types[i] != NORMAL or len(text) < 2:
            continue
        for k in range(1, len(text)):
            left, right = text[:k], text[k:]
            if left in ids and right in ids and types[ids[left]] == NORMAL and types[ids[right]] == NORMAL:
                merges.append((-scores[i], i, ids[left], ids[right], left, right))
    merges.sort()
    return [[m[4], m[5]] for m in merges]


def convert(gguf_path, out_dir, name):
    g = read_gguf(gguf_path)
    model = g.kv("tokenizer.ggml.model")
    tokens = [str(t) for t in g.kv("tokenizer.ggml.tokens")]
    types = [int(t) for t in g.kv("tokenizer.ggml.token_type")]
    bos, eos = g.kv("tokenizer.ggml.bos_token_id"), g.kv("tokenizer.ggml.eos_token_id")
    unk = g.kv("tokenizer.ggml.unknown_token_id")

    added = [added_token(i, t, types[i] in (CONTROL, UNKNOWN)) for i, t in enumerate(tokens)
             if types[i] in (CONTROL, UNKNOWN, USER_DEFINED)]
    if model == "gpt2":
        pre = g.kv("tokenizer.ggml.pre")
        merges = [str(m) for m in g.kv("tokenizer.ggml.merges")]
        # Both spellings HF writes: pairs (tokenizers >= 0.20) and "a b" strings (before).
        merges = [m.split(" ", 1) for m in merges] if name not in ("gpt-2", "falcon") else merges
        tokenizer = {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": NORMALIZERS.get(pre),
            "pre_tokenizer": PRE_TOKENIZERS[pre],
            "post_processor": byte_level(True), "decoder": byte_level(True),
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": pre == "llama-bpe",
                      "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
        }
    elif model == "llama":
        scores = [float(s) for s in g.kv("tokenizer.ggml.scores")]
        if name == "phi-3":
            added = [added_token(a["id"], a["content"], a["special"], a["content"] not in PHI3_KEEPS_SPACE)
                     for a in added]
        tokenizer = {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
            "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": tokens[bos], "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [], "special_tokens": {tokens[bos]: {"id": tokens[bos], "ids": [bos],
                                                                            "tokens": [tokens[bos]]}}},
            "decoder": None,
            "model": {"type": "BPE", "dropout": None, "unk_token": tokens[unk] if unk is not None else None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                      "byte_fallback": True, "ignore_merges": False,
                      "vocab": {t: i for i, t in enumerate(tokens) if types[i] != USER_DEFINED},
                      "merges": sentencepiece_merges(tokens, scores, types)},
        }
    elif model == "gemma4":
        # As transformers' GemmaTokenizer writes Gemma 4's: spaces replaced by "▁" (no prefix),
        # a Split on " " that then splits nothing, BPE with the file's merges and byte fallback.
        tokenizer = {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                              "invert": False},
            "post_processor": None,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": tokens[unk] if unk is not None else None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                      "byte_fallback": True, "ignore_merges": False,
                      "vocab": {t: i for i, t in enumerate(tokens)},
                      "merges": [str(m).split(" ", 1) for m in g.kv("tokenizer.ggml.merges")]},
        }
    else:
        raise SystemExit(f"{gguf_path}: tokenizer.ggml.model {model!r} is not converted")

    config = {"bos_token": tokens[bos] if bos is not None else None,
              "eos_token": tokens[eos] if eos is not None else None}
    if g.kv("tokenizer.ggml.add_bos_token") is not None:
        config["add_bos_token"] = bool(g.kv("tokenizer.ggml.add_bos_token"))
    if g.kv("tokenizer.ggml.add_eos_token") is not None:
        config["add_eos_token"] = bool(g.kv("tokenizer.ggml.add_eos_token"))
    if g.kv("tokenizer.chat_template") is not None:
        config["chat_template"] = str(g.kv("tokenizer.chat_template"))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=(name != "gpt-2"))  # both escapings of non-ASCII
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)


def convertible(gguf_path):
    g = read_gguf(gguf_path)
    model = g.kv("tokenizer.ggml.model")
    return model == "llama" or (model == "gpt2" and g.kv("tokenizer.ggml.pre") in PRE_TOKENIZERS)


def main(argv):
    if len(argv) == 4 and argv[1] == "--all":
        vocab_dir, out_root = argv[2], argv[3]
        for file in sorted(os.listdir(vocab_dir)):
            if not (file.startswith("ggml-vocab-") and file.endswith(".gguf")):
                continue
            path = os.path.join(vocab_dir, file)
            if not os.path.exists(path + ".inp") or not convertible(path):
                continue
            name = file[len("ggml-vocab-"):-len(".gguf")]
            convert(path, os.path.join(out_root, name), name)
            print("wrote", os.path.join(out_root, name, "tokenizer.json"))
    elif len(argv) == 3:
        name = os.path.basename(argv[1])
        name = name[len("ggml-vocab-"):-len(".gguf")] if name.startswith("ggml-vocab-") else name
        convert(argv[1], argv[2], name)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
