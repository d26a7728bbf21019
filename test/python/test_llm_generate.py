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
    r = run(f"--model={shared_testdata / 'stories260K.gguf'}", f"--prompt={ref['prompt']}",
            "--max-new-tokens=16", "--print-token-ids", "--threads=1")
    assert r.returncode == 0, r.stderr
    assert ids_line(r.stdout, "prompt_ids") == ref["promptIds"]
    assert ids_line(r.stdout, "generated_ids") == ref["greedyIds"]
    assert ref["text"] in r.stdout


def test_prompt_ids_and_tokenize_only_on_a_vocabulary_file(shared_testdata):
    vocab = shared_testdata / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf"
    r = run(f"--model={vocab}", "--prompt=Hello world", "--tokenize-only")
    assert r.returncode == 0, r.stderr
    assert ids_line(r.stdout, "prompt_ids") == [1, 15043, 3186]  # BOS + llama.cpp's ids


@pytest.mark.parametrize("args,status,message", [
    ([], 2, "--model is required"),
    (["--model=/nonexistent.gguf", "--prompt-ids=1"], 1, "cannot open"),
    (["--model=x.gguf", "--prompt-ids=1,x"], 2, "--prompt-ids: invalid number 'x'"),
    (["--model=x.gguf", "--prompt=a", "--prompt-ids=1"], 2, "either --prompt or --prompt-ids"),
    (["--bogus"], 2, "unknown option --bogus"),
    (["--model", "x.gguf", "--prompt=a"], 2, "--model needs a value"),
    (["--model=x.gguf", "--prompt=a", "--top-p=1.5"], 2, "--top-p must be in (0, 1], got 1.5"),
    (["--model=x.gguf", "--prompt=a", "--max-new-tokens=12abc"], 2, "--max-new-tokens: invalid number '12abc'"),
    (["--model=x.gguf", "--prompt=a", "--seed=1", "--seed=2"], 2, "--seed is given twice"),
])
def test_errors_go_to_stderr_with_nonzero_status(args, status, message):
    r = run(*args)
    assert r.returncode == status, r.stderr
    assert message in r.stderr
    assert r.stdout == ""


def test_stop_may_be_given_several_times(shared_testdata):
    # Greedy continuation: ", there was a little girl named Lily. She loved to play" (llama.cpp,
    # shared/testdata/MANIFEST.md). Each stop string alone cuts it where that text begins.
    common = [f"--model={shared_testdata / 'stories260K.gguf'}", "--prompt=Once upon a time", "--max-new-tokens=16"]
    assert run(*common, "--stop=Lily").stdout.rstrip("\n") == ", there was a little girl named "
    assert run(*common, "--stop=girl").stdout.rstrip("\n") == ", there was a little "
    both = run(*common, "--stop=Lily", "--stop=girl")
    assert both.returncode == 0, both.stderr
    assert both.stdout.rstrip("\n") == ", there was a little "


def test_parallel_reproduces_single_runs_with_consecutive_seeds(shared_testdata):
    model = str(shared_testdata / "stories260K.gguf")
    common = [f"--model={model}", "--prompt=Once upon a time", "--max-new-tokens=20", "--temperature=0.9", "--top-k=40"]
    r = run(*common, "--parallel=4", "--seed=11")
    assert r.returncode == 0, r.stderr
    batch = [ids_line(r.stdout, f"generated_ids[{i}]") for i in range(4)]
    assert len({tuple(ids) for ids in batch}) > 1  # different seeds, different samples
    for i in range(4):
        single = run(*common, f"--seed={11 + i}", "--print-token-ids")
        assert single.returncode == 0, single.stderr
        assert ids_line(single.stdout, "generated_ids") == batch[i], i


def test_parallel_greedy_matches_llama_cpp(shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    r = run(f"--model={shared_testdata / 'stories260K.gguf'}", "--prompt-ids=" + ",".join(map(str, ref["promptIds"])),
            "--max-new-tokens=16", "--parallel=3")
    assert r.returncode == 0, r.stderr
    for i in range(3):
        assert ids_line(r.stdout, f"generated_ids[{i}]") == ref["greedyIds"]
