"""Shared by the per-architecture Python tests: the synthetic GGUF models of test/data/oracle made
again from their recorded generator commands, llama.cpp's greedy ids checked through
cv2.dnn.TextGenerationModel, and GGUF copies with keys or tensors changed for refusal tests."""
import hashlib
import json
import shlex
import subprocess
import sys

import pytest

import cv2 as cv

from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools" / "gguf"))
from gguf_writer import GGUFWriter, ValueType, copy_kv, read_gguf  # noqa: E402,F401  (ValueType: for the tests)

ORACLE_DIR = PROJECT_ROOT / "test" / "data" / "oracle"


def load_oracle(arch, type_name):
    return json.loads((ORACLE_DIR / f"synthetic_{arch}_{type_name}.nlc.json").read_text())


def make_model(oracle, out_dir):
    """The oracle's model, made again with its recorded generator command (same bytes)."""
    args = shlex.split(oracle["generator"])
    assert args[:2] == ["python3", "tools/gguf/make_synthetic_model.py"]
    path = out_dir / oracle["model_file"]
    args[args.index("--out") + 1] = str(path)
    subprocess.run([sys.executable] + args[1:] + ["-q"], cwd=PROJECT_ROOT, check=True)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == oracle["model_sha256"]
    return path


def make_lora_adapters(oracle, base_path, out_dir):
    """The LoRA adapters of a lora_*.nlc.json oracle, made again with their recorded
    make_lora_adapter.py commands for the base at base_path (same bytes): [(path, scale)]."""
    adapters = []
    for entry in oracle["lora"]:
        args = shlex.split(entry["generator"])
        assert args[:2] == ["python3", "tools/gguf/make_lora_adapter.py"]
        path = out_dir / entry["file"]
        args[args.index("--out") + 1] = str(path)
        args[args.index("--base") + 1] = str(base_path)
        subprocess.run([sys.executable] + args[1:] + ["-q"], cwd=PROJECT_ROOT, check=True)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], entry["file"]
        adapters.append((path, entry["scale"]))
    return adapters


def generate_matches_llama_cpp(oracle, out_dir, n, prompt="Once upon a time"):
    """TextGenerationModel on the oracle's model: the prompt's ids and the first n greedy ids are
    llama.cpp's, and the text is what the tokenizer decodes from them. Returns the text."""
    model = cv.dnn.TextGenerationModel(str(make_model(oracle, out_dir)))
    tokenizer = model.getTokenizer()
    assert list(tokenizer.encode(prompt)) == oracle["prompt_ids"]  # e.g. BOS 403 407 261 378
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = n
    text = model.generate(prompt, config)
    ids = list(model.getGeneratedTokenIds())
    assert ids == oracle["greedy_ids"][:n]
    # (decoding ids alone drops the leading space of a first "▁word" piece; after the prompt
    # the continuation keeps it)
    decoded = tokenizer.decode(ids)
    assert text in (decoded, " " + decoded)
    return text


def rewrite(src, dst, set_kvs=(), drop_tensors=(), rename_arch=None, drop_kvs=()):
    """A copy of a GGUF file with keys added, replaced or dropped, tensors dropped, or the
    architecture renamed (general.architecture and every `<arch>.` key)."""
    g = read_gguf(str(src))
    w = GGUFWriter(version=g.version, alignment=g.alignment, write_alignment_key=False)
    arch = g.kv("general.architecture")
    overrides = dict((k, (v, t)) for k, v, t in set_kvs)
    for kv in g.kvs:
        if kv.key in overrides or kv.key in drop_kvs:
            continue
        if rename_arch and kv.key == "general.architecture":
            w.add_string(kv.key, rename_arch)
        elif rename_arch and kv.key.startswith(arch + "."):
            w.add_kv(rename_arch + kv.key[len(arch):], kv.value, kv.vtype)
        else:
            copy_kv(w, kv)
    for k, (v, t) in overrides.items():
        w.add_kv(k, v, t)
    for t in g.tensors:
        if t.name not in drop_tensors:
            w.add_tensor(t.name, t.dims, t.gtype, bytes(g.tensor_bytes(t.name)))
    w.write(str(dst))
    return dst


def read_error(path):
    with pytest.raises(cv.error) as e:
        cv.dnn.readNet(str(path))
    return str(e.value)
