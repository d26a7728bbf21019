"""The samples run end to end on stories260K: the chatbots (C++ and Python) non-interactively,
and the parallel completions; the hello programs (C++ and Python) on the demo model. All of them,
and the tools in build/bin, share one command line (issue 14): --key=value with kebab-case keys,
one name per concept across programs, --help listing the keys, a wrong argument ending with
status 2 and a message, and every command line of README.md's "Tools and samples" section parses
and runs as written."""
import json
import os
import pathlib
import re
import shlex
import tempfile
import subprocess
import sys

import pytest

from conftest import PROJECT_ROOT, SHARED_TESTDATA
from synthetic_models import ORACLE_DIR, load_oracle, make_lora_adapters, make_model

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", PROJECT_ROOT / "build" / "bin"))
MODEL = SHARED_TESTDATA / "stories260K.gguf"
DEMO_MODEL = PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf"

# Each program's keys: the interface issue 14 asks for (the flags each program had, renamed to
# one convention; one name per concept: --chat-template, --json-schema, --gen-tokens for a count of
# tokens to generate, --repetitions for timed runs). --help must list exactly these (plus help).
HELLO_KEYS = ["model", "prompt"]
CHATBOT_KEYS = ["model", "system", "chat-template", "temperature", "top-p", "seed", "max-new-tokens", "threads", "context"]
KEYS = {
    "llm_hello": HELLO_KEYS,
    "llm_generate": ["model", "prompt", "prompt-ids", "max-new-tokens", "threads", "context", "print-token-ids",
                     "tokenize-only", "temperature", "top-k", "top-p", "min-p", "repeat-penalty", "seed", "stop",
                     "parallel", "draft-tokens", "lookup-ngram", "draft-model", "draft-p-min", "prompt-cache",
                     "mmproj", "image", "grammar-file", "json-schema", "json", "lora"],
    "llm_vision_chat": ["model", "mmproj", "image", "prompt", "max-new-tokens", "chat-template", "threads"],
    "llm_chatbot": CHATBOT_KEYS,
    "llm_parallel": ["model", "prompt", "prompts-file", "shared-prefix", "requests", "arrival-ms", "temperature", "seed",
                     "max-new-tokens", "parallel", "print-token-ids", "compare-alone", "threads", "lora",
                     "request-lora"],
    "llm_bench": ["model", "threads", "prompt-tokens", "gen-tokens", "repetitions", "batch", "depth", "draft-tokens",
                  "lookup-ngram", "draft-model", "draft-p-min", "prompt", "kv-type"],
    "llm_kv_bench": ["model", "threads", "gen-tokens"],
    "llm_soak": ["model", "gen-tokens", "report", "max-growth-mb", "threads"],
    "llm_rmsnorm_bench": ["rows", "dim", "eps"],
    "llm_matmul_bench": ["type", "rows", "out", "in", "repetitions", "threads", "copies"],
    "llm_grammar_bench": ["model", "json-schema", "text", "repetitions"],
    "llm_chatbot.py": CHATBOT_KEYS,
    "llm_hello.py": HELLO_KEYS,
}

# Arguments that pass every check but the one a test breaks (no model is opened: the command
# line is checked first).
VALID = {
    "llm_hello": [],
    "llm_generate": ["--model=x.gguf", "--prompt=a"],
    "llm_chatbot": [],
    "llm_vision_chat": ["--model=x.gguf", "--mmproj=y.gguf", "--image=z.ppm"],
    "llm_parallel": [],
    "llm_bench": ["--model=x.gguf", "--threads=1"],
    "llm_kv_bench": ["--model=x.gguf", "--threads=1"],
    "llm_soak": ["--model=x.gguf"],
    "llm_rmsnorm_bench": [],
    "llm_matmul_bench": [],
    "llm_grammar_bench": ["--model=x.gguf"],
    "llm_chatbot.py": [],
    "llm_hello.py": [],
}

# (a value that is not a number, a value out of range with the range the message names) per program
# that takes numbers.
BAD_VALUES = {
    "llm_generate": ("--max-new-tokens=12abc", "--top-p=0", "--top-p must be in (0, 1], got 0"),
    "llm_chatbot": ("--seed=x", "--temperature=-1", "--temperature must be at least 0, got -1"),
    "llm_vision_chat": ("--max-new-tokens=12abc", "--max-new-tokens=0", "--max-new-tokens must be at least 1, got 0"),
    "llm_parallel": ("--requests=4.5", "--parallel=0", "--parallel must be at least 1, got 0"),
    "llm_bench": ("--prompt-tokens=1e3", "--repetitions=0", "--repetitions must be at least 1, got 0"),
    "llm_kv_bench": ("--gen-tokens=", "--gen-tokens=0", "--gen-tokens must be at least 1, got 0"),
    "llm_soak": ("--max-growth-mb=4MB", "--threads=0", "--threads must be -1 (OpenCV's default) or positive, got 0"),
    "llm_rmsnorm_bench": ("--eps=nan", "--eps=0", "--eps must be in (0, 1], got 0"),
    "llm_matmul_bench": ("--rows=8x", "--rows=0", "--rows must be in [1, 4096], got 0"),
    "llm_grammar_bench": ("--repetitions=2x", "--repetitions=0", "--repetitions must be at least 1, got 0"),
    "llm_chatbot.py": ("--max-new-tokens=12abc", "--top-p=0", "argument --top-p: must be in (0, 1], got '0'"),
}


def command(program):
    if program.endswith(".py"):
        return [sys.executable, str(PROJECT_ROOT / "samples" / program)]
    exe = BIN / program
    if not exe.exists():  # llm_kv_bench replaces malloc: not built with sanitizers
        pytest.skip(f"{program} is not built")
    return [str(exe)]


def run(program, *args, stdin=""):
    return subprocess.run(command(program) + list(args), input=stdin, capture_output=True, text=True, timeout=180,
                          env=os.environ)


@pytest.mark.parametrize("program", KEYS)
def test_help_lists_the_keys(program):
    for flag in ("--help", "-h"):
        r = run(program, flag)
        assert r.returncode == 0, r.stderr
        listed = set(re.findall(r"--([a-z][a-z0-9_-]*)", r.stdout)) - {"help", "usage"}
        assert listed == set(KEYS[program]), r.stdout
        assert all("_" not in k for k in listed)  # one convention: kebab-case


def test_an_optional_model_is_the_demo_model():
    # A program runs without --model exactly when VALID gives it none; then its help names the
    # demo model as the default.
    for program, keys in KEYS.items():
        if "model" in keys:
            text = " ".join(run(program, "--help").stdout.split())  # argparse wraps its lines
            optional = not any(a.startswith("--model=") for a in VALID[program])
            assert ("(default: the project's demo model" in text) == optional, (program, text)


@pytest.mark.parametrize("program", KEYS)
def test_wrong_arguments_exit_2_with_a_message(program):
    cpp = not program.endswith(".py")
    cases = [(["--bogus=1"], "unknown option --bogus" if cpp else "unrecognized arguments: --bogus=1")]
    if program in BAD_VALUES:
        not_a_number, out_of_range, range_message = BAD_VALUES[program]
        cases += [([not_a_number], f"{not_a_number.split('=')[0]}: invalid number '{not_a_number.split('=')[1]}'"
                   if cpp else "invalid number"),
                  ([out_of_range], range_message)]
    if cpp:
        key = KEYS[program][0]
        cases += [([f"--{key}", "5"], f"--{key} needs a value: --{key}=VALUE"),   # the space form
                  (["stray"], "unexpected argument 'stray'"),
                  ([f"--{key}=5", f"--{key}=6"], f"--{key} is given twice")]
    for args, message in cases:
        r = run(program, *VALID[program], *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        if cpp:
            assert r.stdout == ""
            assert r.stderr.rstrip().endswith(f"(see {program} --help)"), r.stderr


def test_flags_take_no_value_or_a_boolean():
    r = run("llm_generate", f"--model={SHARED_TESTDATA / 'llama.cpp-vocab' / 'ggml-vocab-llama-spm.gguf'}",
            "--prompt=Hello world", "--tokenize-only=true")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "prompt_ids: 1 15043 3186\n"  # BOS + llama.cpp's ids
    r = run("llm_generate", "--model=x.gguf", "--prompt=a", "--tokenize-only=yes")
    assert r.returncode == 2 and "--tokenize-only takes no value or one of true, false, 1, 0" in r.stderr


def readme_commands():
    """The command lines of README.md's "Tools and samples" section (continuations joined)."""
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text.split("## Tools and samples")[1].split("\n## ")[0]
    commands = []
    for line in section.splitlines():
        if not line.startswith("    "):
            continue
        code = line[4:].split("  #")[0].rstrip()
        if code.startswith(" "):
            commands[-1] += " " + code.strip()
        else:
            commands.append(code)
    return commands


# What the README's placeholders stand for: small counts, stories260K, one thread.
PLACEHOLDERS = {"FILE": str(MODEL), "TEXT": "Once upon a time", "NAME": "zephyr"}
# A LoRA adapter of stories260K (tools/gguf/make_lora_adapter.py), made by stories_adapter().
STORIES_ADAPTER = os.path.join(tempfile.mkdtemp(prefix="llm_lora"), "stories260K_lora.gguf")
# --prompt-cache writes its file: a fresh folder's, never FILE (the shared model).
KEY_PLACEHOLDERS = {"--threads": "1", "--context": "256",
                    "--prompt-cache": os.path.join(tempfile.mkdtemp(prefix="llm_prompt_cache"), "prompt.cache"),
                    "--lora": STORIES_ADAPTER, "--request-lora": "base;0;0:0.5",
                    "--grammar-file": str(PROJECT_ROOT / "samples" / "grammars" / "list.gbnf"),
                    "--json-schema": "@" + str(PROJECT_ROOT / "samples" / "grammars" / "person.schema.json")}
# The vision models come from the make_vision_models fixture (test/data/oracle/vision/README.md).
VISION = {"MODEL": str(BIN.parent / "test-models" / "vision" / "lm.gguf"),
          "MMPROJ": str(BIN.parent / "test-models" / "vision" / "mmproj.gguf"),
          "IMAGE": str(PROJECT_ROOT / "test" / "data" / "oracle" / "vision" / "test_image_80x48.ppm")}
PROGRAM_PLACEHOLDERS = {
    "llm_generate": {"N": "8", "T": "0.8", "K": "40", "P": "0.9", "R": "1.1", "S": "3", **VISION},
    "llm_vision_chat": {"N": "8", "NAME": "chatml", **VISION},
    "llm_parallel": {"N": "2", "T": "0"},
    "llm_bench": {"P": "16", "G": "8", "K": "3", "N": "2", "D": "16"},
    "llm_kv_bench": {"G": "4"},
    "llm_soak": {"N": "600", "M": "4"},
    "llm_rmsnorm_bench": {"N": "64", "D": "256"},
    "llm_matmul_bench": {"NAME": "Q4_K", "N": "9", "O": "64", "I": "512", "C": "2"},
    "llm_grammar_bench": {"N": "1"},
}


def stories_adapter():
    if not os.path.exists(STORIES_ADAPTER):
        subprocess.run([sys.executable, str(PROJECT_ROOT / "tools" / "gguf" / "make_lora_adapter.py"), "--base",
                        str(MODEL), "--out", STORIES_ADAPTER, "-q"], check=True)
    return STORIES_ADAPTER


def expand(command):
    """The argument lists a README command line stands for: every optional part given, one list
    per alternative of a `(A | B)` group, and the same without the flags (`--tokenize-only` would
    stop llm_generate before generating); placeholders replaced."""
    tokens = shlex.split(command)
    program = pathlib.Path(tokens[0]).name
    fixed, alternatives, in_group = [], [], False
    for t in tokens[1:]:
        if t == "|":
            continue
        opens, closes = t.startswith("("), t.endswith(")")
        t = t.strip("()").replace("...", "").strip("[]")
        key, eq, value = t.partition("=")
        if eq and re.fullmatch(r"[A-Z]+", value):
            table = {**PLACEHOLDERS, **PROGRAM_PLACEHOLDERS.get(program, {})}
            assert key in KEY_PLACEHOLDERS or value in table, f"placeholder {value} of {program} in README.md"
            t = f"{key}={KEY_PLACEHOLDERS.get(key) or table[value]}"
        if opens or in_group:
            alternatives.append(t)
            in_group = not closes
        else:
            fixed.append(t)
    variants = [fixed + [alt] for alt in alternatives] or [fixed]
    without_flags = [[a for a in v if "=" in a] for v in variants]
    return program, variants + [v for v in without_flags if v not in variants]


def test_readme_shows_every_program():
    assert {pathlib.Path(shlex.split(c)[0]).name for c in readme_commands()} == set(KEYS)


@pytest.mark.parametrize("command_line", readme_commands())
def test_readme_command_lines_run_as_written(command_line):
    if "--lora=" in command_line:
        stories_adapter()
    program, variants = expand(command_line)
    for args in variants:
        r = run(program, *args, stdin="Hello\n")
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])


def test_cpp_chatbot_streams_replies_and_resets():
    r = run("llm_chatbot", f"--model={MODEL}", "--chat-template=zephyr", "--max-new-tokens=12",
            stdin="Tell me a story.\n/reset\nHi\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("tokens/s]") == 2 and "(new conversation)" in r.stdout


def test_python_chatbot_runs():
    r = run("llm_chatbot.py", f"--model={MODEL}", "--chat-template=zephyr", "--max-new-tokens=12",
            stdin="Tell me a story.\n")
    assert r.returncode == 0, r.stderr
    assert "tokens/s]" in r.stdout


def test_cpp_and_python_chatbots_reply_alike():
    # The same keys mean the same thing in both: greedy replies of the same model are equal.
    args = [f"--model={MODEL}", "--chat-template=zephyr", "--max-new-tokens=10", "--system=Be brief."]
    cpp, py = run("llm_chatbot", *args, stdin="Hi\n"), run("llm_chatbot.py", *args, stdin="Hi\n")
    assert cpp.returncode == 0 and py.returncode == 0, cpp.stderr + py.stderr
    reply = lambda out: out.replace("> ", "").split("\n  [")[0]
    assert reply(cpp.stdout) == reply(py.stdout) != ""


def test_parallel_prints_each_completion():
    r = run("llm_parallel", f"--model={MODEL}", "--requests=3", "--max-new-tokens=8", "--parallel=2",
            "--arrival-ms=0", "--compare-alone")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l[:3] for l in lines[:3]] == ["[1]", "[2]", "[3]"] and len(set(lines[:3])) == 3
    assert "requests: 3," in r.stdout and "ids equal to lone runs: 3/3" in r.stdout


def test_parallel_runs_requests_of_different_adapters_in_one_batch(tmp_path):
    """LoRA adapters per request (issue 42): qwen2's synthetic base with the two adapters of
    llama.cpp's lora_qwen2_F32_* oracles; five requests of the same prompt submitted at once with
    the sets base, adapter 0, adapter 0 at 0.5, both (1 and 0.7) and the defaults (both, as
    loaded): each completion is llama.cpp's greedy ids for its set and equal to its lone run."""
    oracle = lambda case: json.loads((ORACLE_DIR / f"lora_qwen2_F32_{case}.nlc.json").read_text())
    two = oracle("two")
    base = make_model(two, tmp_path)
    adapters = [str(path) for path, _ in make_lora_adapters(two, base, tmp_path)]
    env = dict(os.environ, OPENCV_DNN_LLM_INTEGER_DOT="0")  # the exact float path, as the oracles' tests
    r = subprocess.run(command("llm_parallel") + [
        f"--model={base}", "--prompt=Once upon a time", "--shared-prefix=", "--requests=5", "--arrival-ms=0",
        "--max-new-tokens=8", "--parallel=5", "--print-token-ids", "--compare-alone", "--threads=1",
        f"--lora={adapters[0]},{adapters[1]}:0.7", "--request-lora=base;0;0:0.5;0,1:0.7;default"],
        capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    ids = {}
    for i, line in enumerate(lines):
        m = re.match(r"\[(\d+)\] \(length; prompt 5 tokens, \d+ cached; lora ([^)]*)\)", line)
        if m:
            assert lines[i + 1].startswith("    ids:"), lines[i + 1]
            ids[m.group(2)] = [int(t) for t in lines[i + 1].split(":")[1].split()]
    expected = {"base": load_oracle("qwen2", "F32"), "0": oracle("one"), "0:0.5": oracle("half"),
                "0,1:0.7": two, "default": two}
    assert set(ids) == set(expected), r.stdout
    for name, ref in expected.items():
        assert ids[name] == ref["greedy_ids"], name
    assert "ids equal to lone runs: 5/5" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--request-lora=0"], "--request-lora needs --lora"),
    (["--lora=a.gguf", "--request-lora=1"], "--request-lora must be in [0, 0], got 1"),
    (["--lora=a.gguf", "--request-lora=base;0:x"], "--request-lora: invalid scale 'x' in '0:x'"),
    (["--lora=a.gguf", "--request-lora=0,0"], "adapter 0 is given twice"),
    (["--lora=a.gguf:"], "--lora: invalid scale '' of a.gguf"),
])
def test_parallel_adapter_options_are_checked(args, message):
    r = run("llm_parallel", *args)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert message in r.stderr


@pytest.mark.parametrize("program", ["llm_hello", "llm_hello.py"])
@pytest.mark.parametrize("prompt", [None, "The little dog"])
def test_hello_prints_the_demo_models_greedy_completion(program, prompt):
    # Without --model the hello programs load the demo model; their text is the prompt followed by
    # llm_generate's greedy completion of it (32 new tokens) on the same model.
    hello = run(program, *([f"--prompt={prompt}"] if prompt else []))
    assert hello.returncode == 0, hello.stderr
    prompt = prompt or "Once upon a time"  # the programs' default prompt
    generate = run("llm_generate", f"--model={DEMO_MODEL}", f"--prompt={prompt}", "--max-new-tokens=32")
    assert generate.returncode == 0, generate.stderr
    assert generate.stdout.strip() != ""
    assert hello.stdout == prompt + generate.stdout
