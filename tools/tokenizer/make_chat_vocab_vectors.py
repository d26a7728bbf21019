#!/usr/bin/env python3
# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""llama.cpp's ids for the chat vocabularies of make_vocab_variants.py (qwen35-chat: Qwen3.5-style,
gemma4-chat: Gemma-4-style), read by test/cpp/test_tokenizer_vectors.cpp and
test/cpp/test_chat_vocabularies.cpp:

    /usr/bin/python3 tools/tokenizer/make_chat_vocab_vectors.py [--nlc-dir /work/oracle]

Writes into test/data/tokenizer/:
  vocab/<name>.out, vocab/<name>.special.out  llama.cpp's ids of corpus.inp (the inputs every
        vocabulary runs), parse_special false / true; <name>[.special].meta.json: BOS, EOS, EOT
        (left out when llama.cpp has none), add_bos / add_eos and "eog", every id llama.cpp ends a
        generation at.
  chat/<name>.json  the vocabulary's chat template (its tokenizer.chat_template) rendered by
        Python's jinja2 as transformers renders it (tools/chat_template/transformers_env.py) for
        the conversations of tools/chat_template/render_reference.py, with BOS / EOS texts of
        the vocabulary, and llama.cpp's ids of each rendering: "ids" (parse_special true,
        add_special false) and "prompt_ids", the prompt llama.cpp's chat runs (a BOS text the
        template writes first dropped when llama.cpp adds BOS, then tokenized with add_special:
        BOS added as the vocabulary says). Conversations the template refuses are left out.

Runs tools/oracle/nlc_tokenize.mjs (node-llama-cpp 3.21.1). Deterministic.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "gguf"))
sys.path.insert(0, os.path.join(ROOT, "tools", "chat_template"))
sys.path.insert(0, HERE)
from gguf_writer import read_gguf  # noqa: E402
import render_reference  # noqa: E402
import transformers_env  # noqa: E402
from make_vocab_variants import CHAT_VARIANTS  # noqa: E402

SEPARATOR = "\n__ggml_vocab_test__\n"


def write_inputs(path, texts):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(text + SEPARATOR for text in texts))


def read_ids(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if lines and lines[0].startswith("ERROR"):
        raise SystemExit("%s: %s" % (path, lines[0]))
    return [[int(x) for x in line.split()] for line in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "testdata", "llama.cpp-vocab"))
    ap.add_argument("--out", default=os.path.join(ROOT, "test", "data", "tokenizer"))
    ap.add_argument("--nlc-dir", default=os.environ.get("NLC_DIR", "/work/oracle-node"))
    args = ap.parse_args()

    corpus = os.path.join(args.out, "corpus.inp")
    os.makedirs(os.path.join(args.out, "chat"), exist_ok=True)
    env = transformers_env.make_environment()
    with tempfile.TemporaryDirectory(prefix="chat_vocab_vectors_") as tmp:
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_vocab_variants.py"), args.shared, tmp],
                              stdout=subprocess.DEVNULL)
        jobs, renderings = [], {}
        for name in CHAT_VARIANTS:
            vocab = os.path.join(tmp, name + ".gguf")
            g = read_gguf(vocab)
            tokens = [str(t) for t in g.kv("tokenizer.ggml.tokens")]
            for special in (False, True):
                set_name = name + (".special" if special else "")
                jobs.append({"vocab": vocab, "inp": corpus, "out": os.path.join(args.out, "vocab", set_name + ".out"),
                             "parse_special": special, "eog": len(tokens),
                             "meta": os.path.join(args.out, "vocab", set_name + ".meta.json")})
            bos, eos = tokens[g.kv("tokenizer.ggml.bos_token_id")], tokens[g.kv("tokenizer.ggml.eos_token_id")]
            source = str(g.kv("tokenizer.chat_template"))
            cases = []
            for case, messages, generation_prompt, extra in render_reference.CASES:
                try:
                    text = transformers_env.render(env, source, messages, generation_prompt, bos, eos, extra)
                except Exception:  # the template refuses this conversation (test_jinja_reference checks that)
                    continue
                cases.append({"case": case, "messages": messages, "add_generation_prompt": generation_prompt,
                              "extra": extra, "text": text})
            renderings[name] = {"bos_token": bos, "eos_token": eos, "cases": cases}
            texts = [c["text"] for c in cases]
            without_bos = [t[len(bos):] if t.startswith(bos) else t for t in texts]
            write_inputs(os.path.join(tmp, name + ".chat.inp"), texts + without_bos)
            jobs.append({"vocab": vocab, "inp": os.path.join(tmp, name + ".chat.inp"),
                         "out": os.path.join(tmp, name + ".chat.out"), "parse_special": True})
        with open(os.path.join(tmp, "jobs.json"), "w") as f:
            json.dump(jobs, f)
        subprocess.check_call(["node", os.path.join(ROOT, "tools", "oracle", "nlc_tokenize.mjs"),
                               os.path.join(tmp, "jobs.json")], env=dict(os.environ, NLC_DIR=args.nlc_dir))

        # OpenCV's JSON reader (the C++ tests read these) has no null: an absent id is left out.
        for job in jobs:
            if "meta" in job:
                with open(job["meta"]) as f:
                    meta = json.load(f)
                with open(job["meta"], "w") as f:
                    f.write(json.dumps({k: v for k, v in meta.items() if v is not None}, separators=(",", ":")) + "\n")
        for name, rendered in renderings.items():
            with open(os.path.join(args.out, "vocab", name + ".meta.json")) as f:
                meta = json.load(f)
            ids = read_ids(os.path.join(tmp, name + ".chat.out"))
            n = len(rendered["cases"])
            for k, case in enumerate(rendered["cases"]):
                case["ids"] = ids[k]
                # llama.cpp's chat: the template's BOS text gives way to the BOS that tokenizing adds.
                bos_text = rendered["bos_token"]
                if meta["add_bos"]:
                    case["prompt_ids"] = [meta["bos"]] + (ids[n + k] if case["text"].startswith(bos_text) else ids[k])
                else:
                    case["prompt_ids"] = ids[k]
            out = {"generator": "tools/tokenizer/make_chat_vocab_vectors.py (node-llama-cpp 3.21.1, jinja2 %s)"
                                % transformers_env.jinja2.__version__,
                   "vocabulary": name + ".gguf (tools/tokenizer/make_vocab_variants.py)",
                   "now": transformers_env.NOW.isoformat(), "bos_token": rendered["bos_token"],
                   "eos_token": rendered["eos_token"], "cases": rendered["cases"]}
            path = os.path.join(args.out, "chat", name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(out, f, ensure_ascii=False, indent=1)
            print("wrote %s: %d conversations" % (path, n))


if __name__ == "__main__":
    main()
