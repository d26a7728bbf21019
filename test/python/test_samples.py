"""The samples run end to end on stories260K: the chatbots (C++ and Python) non-interactively,
and the parallel completions."""
import os
import pathlib
import subprocess
import sys

from conftest import PROJECT_ROOT

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", PROJECT_ROOT / "build" / "bin"))


def test_cpp_chatbot_streams_replies_and_resets(shared_testdata):
    r = subprocess.run([str(BIN / "llm_chatbot"), f"--model={shared_testdata / 'stories260K.gguf'}",
                        "--template=zephyr", "--max_new_tokens=12"],
                       input="Tell me a story.\n/reset\nHi\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("tokens/s]") == 2 and "(new conversation)" in r.stdout


def test_python_chatbot_runs(shared_testdata):
    r = subprocess.run([sys.executable, str(PROJECT_ROOT / "samples" / "llm_chatbot.py"),
                        "--model", str(shared_testdata / "stories260K.gguf"), "--template", "zephyr",
                        "--max-new-tokens", "12"],
                       input="Tell me a story.\n", capture_output=True, text=True, timeout=60, env=os.environ)
    assert r.returncode == 0, r.stderr
    assert "tokens/s]" in r.stdout


def test_parallel_prints_each_completion(shared_testdata):
    r = subprocess.run([str(BIN / "llm_parallel"), f"--model={shared_testdata / 'stories260K.gguf'}", "--n=3",
                        "--max_new_tokens=8", "--parallel=2", "--sequential"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l[:3] for l in lines[:3]] == ["[0]", "[1]", "[2]"] and "3 completions" in lines[3]
    assert len(set(lines[:3])) > 1  # seeds S, S+1, S+2 give different samples
    assert "same tokens: yes" in lines[4]
