"""The llm_generate command line against llama.cpp's stored outputs."""
import json
import os
import pathlib
import subprocess

import pytest

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))


def run(*args):
    return subprocess.run([str(BIN / "llm_generate"), *args], capture_output=True, text=True, timeout=120)


def ids_line(out, name):
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return [int(x) for x in line.split(":", 1)[1].split()]
    raise AssertionError(f"no {name} line in {out!r}")


def test_text_prompt_greedy_matches_llama_cpp(shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    r = run("--model", str(shared_testdata / "stories260K.gguf"), "--prompt", ref["prompt"],
            "--max-new-tokens", "16", "--print-token-ids", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert ids_line(r.stdout, "prompt_ids") == ref["promptIds"]
    assert ids_line(r.stdout, "generated_ids") == ref["greedyIds"]
    assert ref["text"] in r.stdout


def test_prompt_ids_and_tokenize_only_on_a_vocabulary_file(shared_testdata):
    vocab = shared_testdata / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf"
    r = run("--model", str(vocab), "--prompt", "Hello world", "--tokenize-only")
    assert r.returncode == 0, r.stderr
    assert ids_line(r.stdout, "prompt_ids") == [1, 15043, 3186]  # BOS + llama.cpp's ids


@pytest.mark.parametrize("args,message", [
    ([], "--model is required"),
    (["--model", "/nonexistent.gguf", "--prompt-ids", "1"], "cannot open"),
    (["--model", "x.gguf", "--prompt-ids", "1,x"], "invalid number"),
    (["--model", "x.gguf", "--prompt", "a", "--prompt-ids", "1"], "either --prompt or --prompt-ids"),
    (["--bogus"], "unknown option"),
])
def test_errors_go_to_stderr_with_nonzero_status(args, message):
    r = run(*args)
    assert r.returncode != 0
    assert message in r.stderr
    assert r.stdout == ""


def test_parallel_reproduces_single_runs_with_consecutive_seeds(shared_testdata):
    model = str(shared_testdata / "stories260K.gguf")
    common = ["--model", model, "--prompt", "Once upon a time", "--max-new-tokens", "20",
              "--temperature", "0.9", "--top-k", "40"]
    r = run(*common, "--parallel", "4", "--seed", "11")
    assert r.returncode == 0, r.stderr
    batch = [ids_line(r.stdout, f"generated_ids[{i}]") for i in range(4)]
    assert len({tuple(ids) for ids in batch}) > 1  # different seeds, different samples
    for i in range(4):
        single = run(*common, "--seed", str(11 + i), "--print-token-ids")
        assert single.returncode == 0, single.stderr
        assert ids_line(single.stdout, "generated_ids") == batch[i], i


def test_parallel_greedy_matches_llama_cpp(shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    r = run("--model", str(shared_testdata / "stories260K.gguf"), "--prompt-ids",
            ",".join(map(str, ref["promptIds"])), "--max-new-tokens", "16", "--parallel", "3")
    assert r.returncode == 0, r.stderr
    for i in range(3):
        assert ids_line(r.stdout, f"generated_ids[{i}]") == ref["greedyIds"]
