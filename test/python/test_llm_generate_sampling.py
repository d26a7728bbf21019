"""llm_generate's sampling flags against their definitions.

The next token's logits come from the Net itself (cv.dnn.readNet + forward); the distribution
the flags define is computed here from the definitions (llama.cpp's sampler chain: repetition
penalty, top-k, top-p, min-p at temperature 1, then the temperature). llm_generate then draws
the first token with DRAWS seeds: every drawn token must be one the flags allow, and the
frequencies must match the distribution (a Chernoff bound, see expect_draws_follow).
"""
import json
import math
import os
import pathlib
import subprocess

import cv2 as cv
import numpy as np
import pytest

BIN = pathlib.Path(os.environ.get("LLM_BIN_DIR", pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))

# A prompt whose next token is uncertain, and whose likely next tokens include prompt tokens.
PROMPT = "The cat and the dog played. The"
DRAWS = 2000  # first tokens per case, in one --parallel run (completion i uses seed S + i)


FLAGS_WITHOUT_VALUE = {"--tokenize-only", "--print-token-ids"}


def command_line(args):
    """("--top-k", "4", "--print-token-ids") -> ["--top-k=4", "--print-token-ids"]: the samples'
    --key=value form."""
    out, i = [], 0
    while i < len(args):
        if args[i] in FLAGS_WITHOUT_VALUE:
            out.append(args[i])
            i += 1
        else:
            out.append(f"{args[i]}={args[i + 1]}")
            i += 2
    return out


def run(*args):
    # errors="replace": a completion may end inside a UTF-8 character
    r = subprocess.run([str(BIN / "llm_generate"), *command_line(args)], capture_output=True, text=True,
                       errors="replace", timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def ids_line(out, name):
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return [int(x) for x in line.split(":", 1)[1].split()]
    raise AssertionError(f"no {name} line in {out!r}")


@pytest.fixture
def model(shared_testdata):
    return str(shared_testdata / "stories260K.gguf")


def prompt_and_logits(model):
    prompt = ids_line(run("--model", model, "--prompt", PROMPT, "--tokenize-only"), "prompt_ids")
    assert prompt == list(cv.dnn.Tokenizer.create(model).encode(PROMPT))
    net = cv.dnn.readNet(model)
    net.setInput(np.array([prompt], np.float32))
    return prompt, net.forward()[0].astype(np.float64)


def softmax(z, temperature=1.0):
    e = np.exp((z - z.max()) / temperature)
    return e / e.sum()


def end_of_generation(model):
    """The model's one end-of-generation token: a completion that draws it ends with no token."""
    tokenizer = cv.dnn.Tokenizer.create(model)
    ends = [t for t in range(tokenizer.getVocabSize()) if tokenizer.isEndOfGeneration(t)]
    assert ends == [tokenizer.getEosId()]
    return ends[0]


def first_tokens(model, *flags, seed=1):
    """The first generated token of DRAWS completions (seeds seed .. seed + DRAWS - 1)."""
    eos = end_of_generation(model)
    out = run("--model", model, "--prompt", PROMPT, "--max-new-tokens", "1", "--parallel", str(DRAWS),
              "--seed", str(seed), *flags)
    tokens = []
    for i in range(DRAWS):
        ids = ids_line(out, f"generated_ids[{i}]")
        tokens.append(ids[0] if ids else eos)
    return tokens


def single_run_first_token(model, *flags, seed):
    out = run("--model", model, "--prompt", PROMPT, "--max-new-tokens", "1", "--print-token-ids",
              "--seed", str(seed), *flags)
    ids = ids_line(out, "generated_ids")
    return ids[0] if ids else end_of_generation(model)


def kl_divergence(f, q):
    """Bernoulli KL divergence D(f || q)."""
    return sum(a * math.log(a / b) for a, b in ((f, q), (1 - f, 1 - q)) if a > 0)


def expect_draws_follow(model, q, flags):
    """The first tokens drawn with `flags` follow the distribution `q` (zero outside the allowed
    set). For each allowed token, the Chernoff-Hoeffding inequality bounds the chance that the
    frequency of DRAWS independent draws lands at Bernoulli KL divergence c or more from its
    probability by 2 exp(-DRAWS c); with c = ln(2 |allowed| / 1e-9) / DRAWS and a union bound, a
    correct sampler fails with probability below 1e-9. A token outside the set must never turn
    up; one of probability p >= 0.05 inside it that never turns up fails the bound."""
    allowed = [t for t in range(len(q)) if q[t] > 0]
    drawn = first_tokens(model, *flags)
    assert set(drawn) <= set(allowed), (sorted(set(drawn) - set(allowed), key=str), allowed)
    bound = math.log(2 * len(allowed) / 1e-9) / DRAWS
    for t in allowed:
        f = drawn.count(t) / DRAWS
        assert kl_divergence(f, q[t]) <= bound, (t, f, q[t])
    for seed in (3, 17):  # the single-completion path too
        assert single_run_first_token(model, *flags, seed=seed) in allowed


def truncated(z, allowed, temperature):
    q = np.zeros_like(z)
    q[allowed] = softmax(z[allowed], temperature)
    return q


def sorted_tokens(z):
    return sorted(range(len(z)), key=lambda t: (-z[t], t))


def test_top_k_1_is_greedy_whatever_the_seed(model, shared_testdata):
    ref = json.loads((shared_testdata / "reference" / "stories260K.nlc.json").read_text())
    for seed in (1, 2, 99):
        out = run("--model", model, "--prompt", ref["prompt"], "--max-new-tokens", "16", "--print-token-ids",
                  "--temperature", "1.5", "--top-k", "1", "--seed", str(seed))
        assert ids_line(out, "generated_ids") == ref["greedyIds"], seed  # llama.cpp's greedy ids
    # The first token of the uncertain prompt, over many seeds.
    _, z = prompt_and_logits(model)
    assert set(first_tokens(model, "--temperature", "2", "--top-k", "1")) == {int(np.argmax(z))}


@pytest.mark.parametrize("temperature", [0.6, 1.0, 1.8])
def test_temperature_alone(model, temperature):
    _, z = prompt_and_logits(model)
    expect_draws_follow(model, softmax(z, temperature), ["--temperature", str(temperature)])


def test_top_k_allows_the_k_most_likely_tokens(model):
    _, z = prompt_and_logits(model)
    k, temperature = 4, 3.0  # a high temperature: without the cut, many other tokens would turn up
    order = sorted_tokens(z)
    assert z[order[k - 1]] - z[order[k]] > 1e-3  # no tie at the cut
    allowed = order[:k]
    expect_draws_follow(model, truncated(z, allowed, temperature),
                        ["--temperature", str(temperature), "--top-k", str(k)])
    # Without --top-k, the same temperature draws tokens outside the top k.
    assert not set(first_tokens(model, "--temperature", str(temperature))) <= set(allowed)


def test_top_p_allows_the_smallest_set_reaching_p(model):
    _, z = prompt_and_logits(model)
    top_p, temperature = 0.65, 2.5
    p = softmax(z)  # the nucleus is cut at temperature 1
    order = sorted_tokens(z)
    cumulative = np.cumsum(p[order])
    size = int(np.searchsorted(cumulative, np.float32(top_p))) + 1  # first prefix whose mass reaches p
    assert size >= 3
    assert min(abs(cumulative - top_p)) > 1e-3  # no prefix sum near the threshold
    allowed = order[:size]
    expect_draws_follow(model, truncated(z, allowed, temperature),
                        ["--temperature", str(temperature), "--top-p", str(top_p)])


def test_min_p_allows_tokens_above_a_fraction_of_the_best(model):
    _, z = prompt_and_logits(model)
    min_p, temperature = 0.2, 2.5
    ratio = softmax(z) / softmax(z).max()  # at temperature 1
    assert min(abs(ratio - min_p)) > 1e-3
    allowed = [t for t in sorted_tokens(z) if ratio[t] >= np.float32(min_p)]
    assert len(allowed) >= 3
    expect_draws_follow(model, truncated(z, allowed, temperature),
                        ["--temperature", str(temperature), "--min-p", str(min_p)])


def penalised(z, history, penalty):
    z = z.copy()
    for t in set(history[-64:]):  # llm_generate's window: the last 64 tokens
        z[t] = z[t] / penalty if z[t] > 0 else z[t] * penalty
    return z


@pytest.mark.parametrize("penalty,changes_the_best", [(1.1, False), (1.5, True)])
def test_repeat_penalty_picks_the_best_penalised_token(model, penalty, changes_the_best):
    prompt, z = prompt_and_logits(model)
    zp = penalised(z, prompt, penalty)
    expected = int(np.argmax(zp))
    assert (expected != int(np.argmax(z))) == changes_the_best
    order = sorted_tokens(zp)
    assert zp[order[0]] - zp[order[1]] > 1e-3
    # Greedy and top-k 1 both take the best penalised logit.
    for flags in (["--repeat-penalty", str(penalty)],
                  ["--repeat-penalty", str(penalty), "--temperature", "1.5", "--top-k", "1"]):
        for seed in (1, 5):
            assert single_run_first_token(model, *flags, seed=seed) == expected, flags
    # Sampling with the penalty and top-k 3 allows the three best penalised tokens.
    expect_draws_follow(model, truncated(zp, order[:3], 2.0),
                        ["--repeat-penalty", str(penalty), "--temperature", "2", "--top-k", "3"])


def test_seed_repeats_and_differs(model):
    flags = ["--model", model, "--prompt", PROMPT, "--max-new-tokens", "12", "--print-token-ids",
             "--temperature", "1.2"]
    a = ids_line(run(*flags, "--seed", "5"), "generated_ids")
    assert ids_line(run(*flags, "--seed", "5"), "generated_ids") == a
    assert any(ids_line(run(*flags, "--seed", str(s)), "generated_ids") != a for s in (6, 7, 8))
