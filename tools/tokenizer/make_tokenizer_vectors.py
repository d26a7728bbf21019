#!/usr/bin/env python3
# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""Tokenizer test vectors with llama.cpp as the oracle (test/data/tokenizer/, read by
test/cpp/test_tokenizer_vectors.cpp).

    /usr/bin/python3 tools/tokenizer/make_tokenizer_vectors.py \\
        [--shared ../shared/testdata/llama.cpp-vocab] [--out test/data/tokenizer] [--nlc-dir /work/oracle-node]

Writes:
  corpus.inp            the inputs, separated by "\\n__ggml_vocab_test__\\n" (llama.cpp's format):
                        the inputs of llama.cpp's own vector files, strings aimed at what
                        pre-tokenizers treat differently (mixed case, numbers, decimals,
                        contractions, scripts, marks, emoji, Unicode whitespace, whitespace runs,
                        text that looks like special tokens), and random mixes of those pieces
                        (fixed seed).
  vocab/<set>.out       llama.cpp's ids for every input (add_special false), one line each, for
                        the vocabularies of SETS below; <set>.meta.json: its BOS / EOS / add_bos.
  gpt2-synthetic-Q8_0.nlc.json  llama.cpp's next-token probabilities and greedy ids after
                        GPT2_PROMPT (tools/oracle/nlc_logits.mjs) on make_vocab_variants.py's
                        random-weight gpt2 model with GPT-2's tokenizer; on that model llama.cpp
                        tokenizes the corpus exactly as under ggml-vocab-gpt-2.gguf (checked here),
                        so vocab/gpt-2*.out hold its ids too.
  pre/<vocab>/<name>.out  the same for the vocabulary of GPT-2 (50257 tokens) and of Llama 3
                        (llama-bpe, 128256 tokens, many CJK and digit merges) with
                        tokenizer.ggml.pre = <name>, for every name llama.cpp knows (PRE_NAMES)
                        and a few it does not; names whose ids are all equal share one file:
                        pre/<vocab>/index.tsv maps each name to its file. Names that llama.cpp
                        refuses hold "ERROR Failed to load model".

Runs tools/oracle/nlc_tokenize.mjs (node-llama-cpp 3.21.1); the variant vocabularies are
written to a temporary folder (tools/tokenizer/make_vocab_variants.py makes the Gemma ones, as
the test fixture does).
"""
import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "gguf"))
from gguf_writer import GGUFWriter, ValueType, copy_kv, read_gguf  # noqa: E402

SEPARATOR = "\n__ggml_vocab_test__\n"

# Every tokenizer.ggml.pre value of llama.cpp's src/llama-vocab.cpp (the version that
# node-llama-cpp 3.21.1 runs), and names it does not know.
PRE_NAMES = [
    "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
    "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "youtu", "falcon", "mpt", "starcoder", "gpt-2",
    "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
    "jais-2", "gemma4", "granite-embed-multi-311m", "sarvam-moe", "jina-v1-en", "jina-v2-code", "roberta-bpe",
    "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2",
    "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4", "chatglm-bpe", "viking", "jais", "tekken", "smollm",
    "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe", "chameleon", "minerva-7b", "megrez",
    "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe",
    "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan",
    "hunyuan-dense", "joyai-llm", "kimi-k2", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open", "mellum2",
]
UNKNOWN_PRE_NAMES = ["hy_v4", "no-such-pre-tokenizer", "GPT-2", "qwen3"]
# Also known to llama.cpp, but not run here: "whitespace" (jina-embeddings-v2-base-zh) splits at
# spaces and merges raw UTF-8, and llama.cpp aborts (GGML_ASSERT in find_bpe_rank) on any input
# with two spaces in a row. The project refuses it by name.

GPT2_PROMPT = "Once upon a time, there was a cat named Ca\u00f1a. It's 3.14 o'clock!"

# The vocabularies every pre-tokenizer name runs on.
PRE_VOCABS = ["gpt-2", "llama-bpe"]

# name: (vocabulary, parse_special); "shared:" is ../shared/testdata/llama.cpp-vocab/ggml-vocab-<x>.gguf,
# "variant:" a file of make_vocab_variants.py.
SETS = collections.OrderedDict([
    ("gpt-neox", ("shared:gpt-neox", False)),
    ("gpt-2", ("shared:gpt-2", False)),
    ("gpt-2.special", ("shared:gpt-2", True)),
    ("gemma-spm", ("variant:gemma-spm", False)),
    ("gemma-spm.special", ("variant:gemma-spm", True)),
    ("gemma4-bpe", ("variant:gemma4-bpe", False)),
    ("gemma4-bpe.special", ("variant:gemma4-bpe", True)),
])

HANDWRITTEN = [
    # mixed case
    "HelloWorld", "helloWorld", "iPhone iPad macOS", "McDonald's", "XMLHttpRequest", "camelCaseVariableName",
    "snake_case_name", "SCREAMING_CASE", "Hello WORLD hello World", "aBcDeF", "ABCdef", "abcDEF", "ÉCOLE école École",
    "ÀÉÎõü", "straße STRASSE", "ΑθήναΑθήνα", "МоскваMoscow", "İstanbul ıi", "ǅemal ǈubljana", "ǲ",
    # numbers and decimals
    "3.14159", "0.5", ".5", "5.", "-0.5e-10", "1,234,567.89", "1.000.000,00", "v1.2.3", "192.168.0.1", "12:34:56",
    "2024-01-15", "1234567890123", "12345678901234567890", "3 33 333 3333 33333 333333", "x1y22z333w4444",
    "١٢٣٤٥", "１２３４５６７", "½ ² ³ ① Ⅻ", "$100.00", "€5,50", "100%", "1e9", "0x1F 0b1010", "pi=3.14, e=2.718",
    # contractions
    "don't", "I'll", "she'd", "they're", "we've", "it's", "I'm", "DON'T", "I'M", "She'S", "WE'VE", "they'Re",
    "y'all", "rock'n'roll", "'s", "''s", "'tis", "o'clock", "l'amour", "ain't", "can't've", "It's 'quoted' text's",
    "'S 'T 'RE 'VE 'M 'LL 'D", "x'sy 'll' 'd'", "don’t", "it´s",
    # scripts, marks, symbols
    "нещо на Български", "Привет, мир!", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "हिन्दी", "สวัสดีชาวโลก",
    "안녕하세요 세계", "こんにちは世界", "カタカナ ひらがな", "你好，世界！", "中文和English混合", "𠀀𠀁", "e\u0301te\u0301",
    "a\u0308o\u0308u\u0308", "\u0915\u094D\u0937", "ꙮ", "ᏣᎳᎩ", "ʰʲʷ", "ªº", "™ © ®", "∑∫√∞≠≤", "← → ↑ ↓",
    "「引用」『二重』", "“smart quotes” ‘single’", "— – …", "！？。，、", "🦙🦙 🚀 😀😁", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵",
    "❤️", "✅ ✔ ✓", "\u2028\u2029", "ﬁﬂ", "Å Å", "ⓐⓑⓒ", "𝐀𝐁𝐂 𝑎𝑏𝑐",
    "中文 中文 English中文", " 你好 世界", "a中b", "中\u0301文", "。中文", "\u180e", "a \u180e b", "\u180e\u180e.",
    "Hello\u180e,world", " \u180e", "\u00a0\u180e\u3000",
    # whitespace
    " ", "  ", "   ", "    ", "        ", " " * 17, "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r",
    " \n", "\n ", " \n ", "\t\n", "\v", "\f", "\x1c\x1d\x1e\x1f", "a\u00a0b", "a\u3000b", "a\u2009b", "a\u0085b",
    "a\u1680b", "a\u180eb", "a\u200bb", "a\u202fb", "a\u205fb", "\u00a0\u00a0", "\u3000\u3000x", "x\u2003\u2003",
    "  leading", "trailing  ", "in  the   middle    of     text", "tab\tseparated\tvalues", "line1\nline2\n\nline4",
    "   \n   \n", "\n\n\n\nHello", "Hello\n\n\n\n", " \t \t ", "word \n\t word",
    # special-token-like text
    "<|endoftext|>", "a<|endoftext|>b", "<s>Hello</s>", "<unk>", "<0x41>", "[INST] hi [/INST]",
    "<|im_start|>user\nHi<|im_end|>", "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>", " <end_of_turn> ", "<table><h1>x</h1></table>", "<pad><mask>[multimodal]", "<unused0>",
    "<sentinel:12> IMGIMGABZ IMGIMGABCDEZ", "<|turn>x<turn|>",
    # code and markup
    "def f(x):\n    return x**2  # comment", "int main() { return 0; }", "if (a && b || !c) { x += 1; }",
    "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Users\\name\\file.txt", "<div class=\"x\">y</div>",
    "```python\nprint('hi')\n```", "$$E = mc^2$$", "a_b-c.d/e\\f|g", "((((nested))))", "!!!???...", "------======",
    "''''''```````\"\"\"\"......!!!!!!??????", "#!/bin/bash\necho $HOME",
]

# Pieces the random inputs are made of.
ATOMS = [
    "the", "The", "THE", "hello", "World", "iPhone", "camelCase", "ABC", "x", "I", "a", "straße", "École", "naïve",
    "0", "7", "42", "123", "2024", "3.14", "1,000", "99.9", "0.001", "1234567",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'", "''", "n't",
    ".", ",", ";", ":", "!", "?", "(", ")", "[", "]", "{", "}", "<", ">", "@", "#", "$", "%", "^", "&", "*", "-",
    "_", "=", "+", "/", "\\", "|", "`", "~", "\"", "...", "!!", "--", "==", "->", "<=",
    " ", " ", " ", "  ", "   ", "\t", "\n", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "\u2009", "\u0085",
    "\u1680", "\u180e", "\u200b", "\x0b", "\x0c", "\x1c", "\x1f",
    "é", "ß", "ſ", "İ", "Ω", "жизнь", "Жук", "عربي", "עברית", "हिन्दी", "ि", "ไทย", "한국어", "가", "カタカナ", "ひらがな",
    "中文", "字", "𠀀", "①", "½", "²", "٣", "５", "Ⅻ", "ǅ", "ʰ", "ª", "e\u0301", "\u0301", "🦙", "😀", "👨‍👩‍👧", "🇫🇷",
    "™", "€", "¥", "∑", "「", "」", "。", "，", "…", "—", "“", "”", "‘", "’", "！", "？", "ﬁ",
    "<|endoftext|>", "<s>", "</s>", "<start_of_turn>", "<end_of_turn>", "<table>", "<unk>", "<0x41>",
    "<|im_start|>", "<sentinel:7>", "IMGIMGABZ",
]


def corpus(n_random, seed):
    inputs = []
    vocab_dir = os.path.join(ROOT, "..", "shared", "testdata", "llama.cpp-vocab")
    seen = set()

    def add(text):
        if text not in seen and SEPARATOR.strip() not in text:
            seen.add(text)
            inputs.append(text)

    for name in sorted(os.listdir(vocab_dir)):
        if name.endswith(".inp"):
            with open(os.path.join(vocab_dir, name), encoding="utf-8", newline="") as f:
                parts = f.read().split(SEPARATOR)
            for text in parts[:-1] if parts and parts[-1] == "" else parts:
                add(text)
    for text in HANDWRITTEN:
        add(text)
    rng = random.Random(seed)
    target = len(inputs) + n_random
    while len(inputs) < target:
        add("".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 14))))
    return inputs


def write_pre_variant(src, name, path):
    w = GGUFWriter()
    for kv in src.kvs:
        if kv.key != "tokenizer.ggml.pre":
            copy_kv(w, kv)
    w.add_string("tokenizer.ggml.pre", name)
    w.write(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "testdata", "llama.cpp-vocab"))
    ap.add_argument("--out", default=os.path.join(ROOT, "test", "data", "tokenizer"))
    ap.add_argument("--nlc-dir", default=os.environ.get("NLC_DIR", "/work/oracle-node"))
    ap.add_argument("--random", type=int, default=150, help="random inputs")
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()

    inputs = corpus(args.random, args.seed)
    os.makedirs(os.path.join(args.out, "vocab"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "pre"), exist_ok=True)
    inp = os.path.join(args.out, "corpus.inp")
    with open(inp, "w", encoding="utf-8", newline="") as f:
        f.write("".join(text + SEPARATOR for text in inputs))

    tmp = tempfile.mkdtemp(prefix="tokenizer_vectors_")
    try:
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_vocab_variants.py"), args.shared, tmp])
        jobs = []
        for name, (vocab, special) in SETS.items():
            kind, base = vocab.split(":")
            path = (os.path.join(args.shared, "ggml-vocab-%s.gguf" % base) if kind == "shared"
                    else os.path.join(tmp, base + ".gguf"))
            jobs.append({"vocab": path, "inp": inp, "out": os.path.join(args.out, "vocab", name + ".out"),
                         "parse_special": special, "meta": os.path.join(args.out, "vocab", name + ".meta.json")})
        pre_outs = {}
        for base in PRE_VOCABS:
            src = read_gguf(os.path.join(args.shared, "ggml-vocab-%s.gguf" % base))
            for name in PRE_NAMES + UNKNOWN_PRE_NAMES:
                path = os.path.join(tmp, "pre-%s-%s.gguf" % (base, name))
                write_pre_variant(src, name, path)
                pre_outs[base, name] = os.path.join(tmp, "pre-%s-%s.out" % (base, name))
                jobs.append({"vocab": path, "inp": inp, "out": pre_outs[base, name]})
        model = os.path.join(tmp, "gpt2-synthetic-Q8_0.gguf")
        for special in (False, True):
            jobs.append({"vocab": model, "inp": inp, "out": os.path.join(tmp, "gpt2-synthetic%s.out" % (".special" if special else "")),
                         "parse_special": special})
        prompt_inp = os.path.join(tmp, "prompt.inp")
        with open(prompt_inp, "w", encoding="utf-8", newline="") as f:
            f.write(GPT2_PROMPT + SEPARATOR)
        jobs.append({"vocab": model, "inp": prompt_inp, "out": os.path.join(tmp, "prompt.out")})
        with open(os.path.join(tmp, "jobs.json"), "w") as f:
            json.dump(jobs, f)
        env = dict(os.environ, NLC_DIR=args.nlc_dir)
        subprocess.check_call(["node", os.path.join(ROOT, "tools", "oracle", "nlc_tokenize.mjs"),
                               os.path.join(tmp, "jobs.json")], env=env)

        # The synthetic gpt2 model tokenizes as GPT-2's vocabulary does; llama.cpp's outputs on it.
        for suffix in ("", ".special"):
            with open(os.path.join(tmp, "gpt2-synthetic%s.out" % suffix)) as a, \
                    open(os.path.join(args.out, "vocab", "gpt-2%s.out" % suffix)) as b:
                if a.read() != b.read():
                    raise SystemExit("llama.cpp tokenizes differently on the gpt2 model and on GPT-2's vocabulary")
        with open(os.path.join(tmp, "prompt.out")) as f:
            prompt_ids = f.read().strip()
        sys.path.insert(0, HERE)
        from make_vocab_variants import GPT2_MODEL_ARGS
        generator = ("python3 tools/gguf/make_synthetic_model.py %s --vocab-from "
                     "../shared/testdata/llama.cpp-vocab/ggml-vocab-gpt-2.gguf --out gpt2-synthetic-Q8_0.gguf" % GPT2_MODEL_ARGS)
        subprocess.check_call(["node", os.path.join(ROOT, "tools", "oracle", "nlc_logits.mjs"), model, "--ids", prompt_ids,
                               "--n", "8", "--top", "10", "--generator", generator, "--label", "prompt=" + GPT2_PROMPT,
                               "--seed", GPT2_MODEL_ARGS.split("--seed ")[1].split()[0],
                               "--out", os.path.join(args.out, "gpt2-synthetic-Q8_0.nlc.json")],
                              env=env, stdout=subprocess.DEVNULL)

        # One file per distinct result, named after the first name that gives it.
        shutil.rmtree(os.path.join(args.out, "pre"))
        n_files = 0
        for base in PRE_VOCABS:
            folder = os.path.join(args.out, "pre", base)
            os.makedirs(folder)
            files, index = {}, []
            for name in PRE_NAMES + UNKNOWN_PRE_NAMES:
                with open(pre_outs[base, name], encoding="utf-8") as f:
                    text = f.read()
                if text not in files:
                    files[text] = name + ".out"
                    with open(os.path.join(folder, files[text]), "w", encoding="utf-8") as f:
                        f.write(text)
                index.append("%s\t%s\n" % (name, files[text]))
            with open(os.path.join(folder, "index.tsv"), "w", encoding="utf-8") as f:
                f.write("".join(index))
            n_files += len(files)
    finally:
        shutil.rmtree(tmp)
    print("%d inputs, %d vocabularies, %d pre-tokenizer names on %d vocabularies in %d files" %
          (len(inputs), len(SETS), len(PRE_NAMES) + len(UNKNOWN_PRE_NAMES), len(PRE_VOCABS), n_files))


if __name__ == "__main__":
    main()
