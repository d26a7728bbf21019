"""The llm_generate command line against llama.cpp's stored outputs."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from synthetic_models import ORACLE_DIR, load_oracle, make_lora_adapters, make_model

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))


def run(*args, env=None):
    return subprocess.run([str(BIN / "llm_generate"), *args], capture_output=True, text=True, timeout=120,
                          env=env)


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
    (["--model=x.gguf", "--prompt=a", "--lora=a.gguf:x"], 2, "--lora: invalid scale 'x' of a.gguf"),
    (["--model=x.gguf", "--prompt=a", "--lora=a.gguf,b.gguf:"], 2, "--lora: invalid scale '' of b.gguf"),
    (["--model=x.gguf", "--prompt=a", "--lora=:0.5"], 2, "--lora: an item without its file"),
    (["--model=x.gguf", "--prompt=a", "--lora=a.gguf", "--tokenize-only"], 2, "--lora does not go with"),
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


def prompt_cache_reused(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("prompt_cache_reused:")]
    assert len(lines) == 1, stderr
    return int(lines[0].split(":", 1)[1])


def test_prompt_cache_reuses_the_saved_prompt_and_changes_no_output(tmp_path):
    # The demo model (models/demo) with a prompt cache: the first run saves the prompt, a second
    # run of the same prompt loads it and processes one token (the last, for its logits), a
    # longer prompt reuses the shared prefix; each output equals the run without the cache.
    model = str(pathlib.Path(__file__).resolve().parents[2] / "models" / "demo" / "demo-stories.gguf")
    cache = tmp_path / "prompt.cache"
    prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside"
    common = [f"--model={model}", "--max-new-tokens=12", "--print-token-ids"]
    plain = run(*common, f"--prompt={prompt}")
    assert plain.returncode == 0, plain.stderr
    assert "prompt_cache_reused" not in plain.stderr
    n_prompt = len(ids_line(plain.stdout, "prompt_ids"))

    first = run(*common, f"--prompt={prompt}", f"--prompt-cache={cache}")
    assert first.returncode == 0, first.stderr
    assert first.stdout == plain.stdout
    assert prompt_cache_reused(first.stderr) == 0
    assert cache.exists()

    second = run(*common, f"--prompt={prompt}", f"--prompt-cache={cache}")
    assert second.returncode == 0, second.stderr
    assert second.stdout == plain.stdout
    assert prompt_cache_reused(second.stderr) == n_prompt - 1

    longer = prompt + " in the park."
    plain_longer = run(*common, f"--prompt={longer}")
    third = run(*common, f"--prompt={longer}", f"--prompt-cache={cache}")
    assert third.returncode == 0, third.stderr
    assert third.stdout == plain_longer.stdout
    longer_ids = ids_line(plain_longer.stdout, "prompt_ids")
    prompt_ids = ids_line(plain.stdout, "prompt_ids")
    common_prefix = next(i for i, (a, b) in enumerate(zip(prompt_ids + [None], longer_ids)) if a != b)
    assert prompt_cache_reused(third.stderr) == common_prefix

    # A damaged cache file is reported and ignored; the output does not change, and the file is rewritten.
    cache.write_bytes(cache.read_bytes()[:100])
    damaged = run(*common, f"--prompt={prompt}", f"--prompt-cache={cache}")
    assert damaged.returncode == 0, damaged.stderr
    assert damaged.stdout == plain.stdout
    assert "is not used" in damaged.stderr and prompt_cache_reused(damaged.stderr) == 0
    again = run(*common, f"--prompt={prompt}", f"--prompt-cache={cache}")
    assert prompt_cache_reused(again.stderr) == n_prompt - 1 and again.stdout == plain.stdout


def test_prompt_cache_never_overwrites_a_file_that_is_not_a_session(tmp_path):
    model = pathlib.Path(__file__).resolve().parents[2] / "models" / "demo" / "demo-stories.gguf"
    copy = tmp_path / "model.gguf"
    copy.write_bytes(model.read_bytes())
    r = run(f"--model={copy}", "--prompt=Once upon a time", "--max-new-tokens=4", f"--prompt-cache={copy}")
    assert r.returncode == 1 and "is not a session file" in r.stderr, r.stderr
    assert copy.read_bytes() == model.read_bytes()


# LoRA adapters (issue 42): qwen2's synthetic base and the two adapters of llama.cpp's
# lora_qwen2_F32_{one,half,two}.nlc.json oracles (test/data/oracle/README.md), made again from
# their recorded commands (same bytes), on the exact float path as test_lora.py runs them. The
# base, one, half and two start with four different greedy tokens.
LORA_PROMPT = "--prompt-ids=1,403,407,261,378"
EXACT = dict(os.environ, OPENCV_DNN_LLM_INTEGER_DOT="0")


def lora_oracle(case):
    return json.loads((ORACLE_DIR / f"lora_qwen2_F32_{case}.nlc.json").read_text())


@pytest.fixture(scope="module")
def qwen2_adapters(tmp_path_factory):
    """(base, adapter 1, adapter 2): adapter 1 rank 8 alpha 16, adapter 2 rank 16 alpha 8."""
    out = tmp_path_factory.mktemp("lora")
    two = lora_oracle("two")
    base = make_model(two, out)
    adapters = [path for path, _ in make_lora_adapters(two, base, out)]
    return base, adapters[0], adapters[1]


@pytest.mark.parametrize("lora,case", [
    ([], None),
    (["--lora={a1}"], "one"),
    (["--lora={a1}:0.5"], "half"),
    (["--lora={a1},{a2}:0.7"], "two"),
    (["--lora={a1}:1", "--lora={a2}:0.7"], "two"),  # the key repeated
    (["--lora={a1}:0"], None),                      # loaded, not applied
])
def test_lora_greedy_ids_match_llama_cpp(qwen2_adapters, lora, case):
    base, a1, a2 = qwen2_adapters
    expected = lora_oracle(case) if case else load_oracle("qwen2", "F32")
    r = run(f"--model={base}", LORA_PROMPT, "--max-new-tokens=8", "--print-token-ids", "--threads=1",
            *[arg.format(a1=a1, a2=a2) for arg in lora], env=EXACT)
    assert r.returncode == 0, r.stderr
    assert ids_line(r.stdout, "prompt_ids") == expected["prompt_ids"]
    assert ids_line(r.stdout, "generated_ids") == expected["greedy_ids"]


def test_lora_applies_to_every_parallel_completion(qwen2_adapters):
    base, a1, _ = qwen2_adapters
    r = run(f"--model={base}", LORA_PROMPT, "--max-new-tokens=8", "--parallel=3", f"--lora={a1}:0.5", env=EXACT)
    assert r.returncode == 0, r.stderr
    for i in range(3):
        assert ids_line(r.stdout, f"generated_ids[{i}]") == lora_oracle("half")["greedy_ids"], i


def test_lora_prompt_cache_is_reused_only_with_the_same_adapters(qwen2_adapters, tmp_path):
    """--prompt-cache with --lora: the session records the adapter; the same --lora reuses it and
    gives the same ids, another scale or no adapter computes the prompt again (llama.cpp's ids)."""
    base, a1, _ = qwen2_adapters
    cache = tmp_path / "lora.session"
    args = [f"--model={base}", LORA_PROMPT, "--max-new-tokens=8", "--print-token-ids", f"--prompt-cache={cache}"]
    first = run(*args, f"--lora={a1}", env=EXACT)
    assert first.returncode == 0 and prompt_cache_reused(first.stderr) == 0, first.stderr
    again = run(*args, f"--lora={a1}", env=EXACT)
    assert again.returncode == 0 and prompt_cache_reused(again.stderr) > 0, again.stderr
    assert ids_line(again.stdout, "generated_ids") == lora_oracle("one")["greedy_ids"]
    half = run(*args, f"--lora={a1}:0.5", env=EXACT)
    assert half.returncode == 0 and prompt_cache_reused(half.stderr) == 0, half.stderr
    assert ids_line(half.stdout, "generated_ids") == lora_oracle("half")["greedy_ids"]
    plain = run(*args, env=EXACT)  # the session's adapter is not loaded: the session is not used
    assert plain.returncode == 0 and prompt_cache_reused(plain.stderr) == 0, plain.stderr
    assert "not loaded" in plain.stderr
    assert ids_line(plain.stdout, "generated_ids") == load_oracle("qwen2", "F32")["greedy_ids"]


def test_lora_that_does_not_fit_the_model_is_refused(qwen2_adapters, tmp_path):
    base, a1, _ = qwen2_adapters
    llama = tmp_path / "llama.gguf"
    subprocess.run([sys.executable, str(ORACLE_DIR.parents[2] / "tools" / "gguf" / "make_lora_adapter.py"),
                    "--base", str(base), "--out", str(llama), "--arch", "llama", "-q"], check=True)
    for adapter, words in [(llama, ["llama", "qwen2"]), (tmp_path / "missing.gguf", ["missing.gguf"])]:
        r = run(f"--model={base}", LORA_PROMPT, "--max-new-tokens=2", f"--lora={a1},{adapter}")
        assert r.returncode == 1 and r.stdout == "", r.stderr
        assert all(w in r.stderr for w in words), r.stderr
