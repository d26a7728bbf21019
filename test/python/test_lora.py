"""LoRA adapters (issue 42) from Python against llama.cpp: the synthetic base models and the random
adapters of tools/gguf/make_lora_adapter.py, made again from the commands recorded in
test/data/oracle/lora_*.nlc.json (node-llama-cpp's context option `lora`, see the LoRA section of
test/data/oracle/README.md), through the Net API (cv.dnn.loadLLMAdapter / setLLMSequenceAdapters,
one adapter set per sequence, mixed in one batch) and TextGenerationModel (default adapters with
their scales, per-request adapters in GenerationConfig); and the malformed adapters llama.cpp
refuses, refused with a message that names the problem, leaving the model as it was."""
import json
import math
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

import cv2 as cv

from conftest import PROJECT_ROOT
from synthetic_models import ORACLE_DIR, make_lora_adapters, make_model

CPU_AVX2 = 11  # cv::CPU_AVX2 (the Python module has no name for it)
PROMPT = [1, 403, 407, 261, 378]
LORA_ORACLES = sorted(p.name[len("lora_"):-len(".nlc.json")] for p in ORACLE_DIR.glob("lora_*.nlc.json"))
# Adapter types whose matmuls round their activations in llama.cpp (F16, BF16, Q8_0): a float32
# difference in an activation next to a rounding midpoint flips that rounding, which moves p by up
# to ~1e-3 (F16; see the README), so these compare to 3e-3 and greedy ids only at clear gaps. A Q8_0
# adapter's A x (rank 32: one block with one scale) moves by a whole quantization step when such a
# flip happens there: 6.5e-3 at one step of llama_F32_q8 (all other steps within 3e-6), so 1e-2.
ROUNDED_CASES = ("f16", "bf16", "q8")
ROUNDED_TOLERANCE = {"f16": 3e-3, "bf16": 3e-3, "q8": 1e-2}


def load(name):
    return json.loads((ORACLE_DIR / f"lora_{name}.nlc.json").read_text())


def softmax(z):
    z = np.asarray(z, np.float64).ravel()
    p = np.exp(z - z.max())
    return p / p.sum()


def gap(step):
    """llama.cpp's top-1 / top-2 log-probability gap at a greedy step (nat)."""
    return math.log(step["top5"][0]["p"] / step["top5"][1]["p"])


def max_dp(p, expected):
    return max(abs(p[e["id"]] - e["p"]) for e in expected)


def make_twin(oracle, out_dir):
    twin = oracle["twin"]
    return make_model({"generator": twin["generator"], "model_file": twin["model_file"],
                       "model_sha256": twin["model_sha256"]}, out_dir)


def make_adapter(base_path, out_path, *options):
    """An adapter for base_path by make_lora_adapter.py with these options."""
    subprocess.run([sys.executable, str(PROJECT_ROOT / "tools" / "gguf" / "make_lora_adapter.py"),
                    "--base", str(base_path), "--out", str(out_path), "-q", *options], check=True)
    return out_path


def read_net(path, exact, monkeypatch):
    if exact:
        monkeypatch.setenv("OPENCV_DNN_LLM_INTEGER_DOT", "0")
    net = cv.dnn.readNet(str(path))
    monkeypatch.delenv("OPENCV_DNN_LLM_INTEGER_DOT", raising=False)
    return net


def forward(net, ids, sequences=None):
    cv.dnn.setLLMBatch(net, sequences if sequences is not None else [0] * len(ids))
    net.setInput(np.array([ids], np.float32))
    return net.forward().copy()


def check_run(net, adapters, expected, tol, min_gap, prompt_tol=None):
    """Sequence 0 with the adapters: llama.cpp's top 20 after the prompt (within prompt_tol,
    default tol), then its greedy tokens fed back one by one: each step's top 5 within tol, our
    top token llama.cpp's while its gap is >= min_gap (the first step always). Returns the
    largest |dp|."""
    ids = [cv.dnn.loadLLMAdapter(net, str(path)) for path, _ in adapters]
    cv.dnn.setLLMSequenceAdapters(net, 0, ids, [float(s) for _, s in adapters])
    p = softmax(forward(net, expected["prompt_ids"]))
    worst = max_dp(p, expected["top_k"])
    assert worst < (tol if prompt_tol is None else prompt_tol), f"prompt: max |dp| {worst:.2e} over llama.cpp's top 20"
    for i, step in enumerate(expected["greedy_steps"]):
        dp = max_dp(p, step["top5"])
        worst = max(worst, dp)
        assert dp < tol, f"step {i}: max |dp| {dp:.2e} over llama.cpp's top 5"
        if i == 0 or gap(step) >= min_gap:
            assert int(np.argmax(p)) == step["id"], f"step {i} (gap {gap(step):.3f} nat)"
        if i + 1 < len(expected["greedy_steps"]):
            p = softmax(forward(net, [step["id"]]))
    return worst


@pytest.mark.parametrize("name", LORA_ORACLES)
def test_exact_path_matches_llama_cpp(tmp_path, monkeypatch, name):
    """F32 bases (and the Q4_K_M base's F32 twin, against llama.cpp's twin run) on the exact float
    path: F32 adapters to 1e-4 and all greedy steps, adapters with rounded activations to 3e-3."""
    oracle = load(name)
    base = make_model(oracle, tmp_path)
    adapters = make_lora_adapters(oracle, base, tmp_path)
    expected = oracle
    if "twin" in oracle:
        base = make_twin(oracle, tmp_path)
        expected = dict(oracle["twin"], prompt_ids=oracle["prompt_ids"])
    rounded = oracle["case"] in ROUNDED_CASES
    net = read_net(base, True, monkeypatch)
    check_run(net, adapters, expected, ROUNDED_TOLERANCE[oracle["case"]] if rounded else 1e-4,
              0.05 if rounded else 0.002)


@pytest.mark.skipif(not cv.checkHardwareSupport(CPU_AVX2),
                    reason="the integer path needs AVX2 (without it every type takes the exact float path)")
@pytest.mark.parametrize("name", [n for n in LORA_ORACLES if "_Q4_K_M_" in n])
def test_default_path_matches_llama_cpp_quantized_run(tmp_path, monkeypatch, name):
    """The Q4_K_M base on the default path, where the base matmuls round their activations to
    8 bits as llama.cpp's do (test_llama_activation_rounding.py: < 1e-4 without adapters) and
    the adapters see the unrounded input, as in llama.cpp. After the prompt, F32 adapters agree
    to ~1e-6; at later steps an 8-bit rounding that float noise flips (in the base's Q8_K
    activations, or the adapters' fp16 / Q8_0 ones) moves p by up to ~1.6e-2, within llama.cpp's
    own noise between its quantized runs and their F32 twins (0.015-0.036, the README), while
    each adapter moves p by 0.15-0.97 from the base."""
    oracle = load(name)
    base = make_model(oracle, tmp_path)
    adapters = make_lora_adapters(oracle, base, tmp_path)
    rounded = oracle["case"] in ROUNDED_CASES
    net = read_net(base, False, monkeypatch)
    check_run(net, adapters, oracle, 2e-2 if rounded else 1e-2, 0.5, 2e-2 if rounded else 1e-4)


def base_oracle(oracle):
    return json.loads((ORACLE_DIR / oracle["base_oracle"]).read_text())


@pytest.mark.parametrize("arch", ["llama", "qwen2", "phi3"])
def test_batch_mixing_adapter_sets_equals_lone_runs(tmp_path, monkeypatch, arch):
    """Three sequences in one forward, with no adapter, one adapter and two adapters at once:
    each row is llama.cpp's and bit-identical to the sequence run alone; then one decode step
    of all three together, again equal to lone runs."""
    one, two = load(f"{arch}_F32_one"), load(f"{arch}_F32_two")
    plain = base_oracle(one)
    base = make_model(one, tmp_path)
    a1, a2 = [path for path, _ in make_lora_adapters(two, base, tmp_path)]
    sets = {0: ([], []), 1: ([a1], [1.0]), 2: ([a1, a2], [1.0, 0.7])}
    expected = {0: plain, 1: one, 2: two}

    def with_sets(net):
        ids = {path: cv.dnn.loadLLMAdapter(net, str(path)) for path in (a1, a2)}
        for seq, (paths, scales) in sets.items():
            cv.dnn.setLLMSequenceAdapters(net, seq, [ids[p] for p in paths], scales)
        return net

    lone = {}
    for seq in sets:
        net = with_sets(read_net(base, True, monkeypatch))
        first = forward(net, PROMPT, [seq] * len(PROMPT))
        second = forward(net, [expected[seq]["greedy_ids"][0]], [seq])
        lone[seq] = (first[0], second[0])

    net = with_sets(read_net(base, True, monkeypatch))
    out = forward(net, PROMPT * 3, [0] * 5 + [1] * 5 + [2] * 5)
    assert out.shape[0] == 3
    step = forward(net, [expected[s]["greedy_ids"][0] for s in (0, 1, 2)], [0, 1, 2])
    for seq in sets:
        assert max_dp(softmax(out[seq]), expected[seq]["top_k"]) < 1e-4, seq
        assert max_dp(softmax(step[seq]), expected[seq]["greedy_steps"][1]["top5"]) < 1e-4, seq
        assert np.array_equal(out[seq], lone[seq][0]), f"sequence {seq}: batch differs from its lone run"
        assert np.array_equal(step[seq], lone[seq][1]), f"sequence {seq}: batched decode differs from its lone run"


def generated(model, config=None, n=8):
    config = config if config is not None else cv.dnn.GenerationConfig()
    config.maxNewTokens = n
    model.startWithTokenIds(PROMPT, config)
    while not model.isDone():
        model.next()
    return list(model.getGeneratedTokenIds())


def request(ids, scales=()):
    config = cv.dnn.GenerationConfig()
    config.adapterIds = list(ids)
    config.adapterScales = [float(s) for s in scales]
    return config


def test_text_generation_model_default_and_per_request_adapters(tmp_path):
    """Default adapters (loadAdapter's scale, setAdapterScale), per-request sets that replace
    them, unloading; each generation is llama.cpp's greedy ids for that set. Requests alternate
    between sets on one model, so a prefix cached under one set must not serve another. qwen2:
    the base, one, half and two start with four different tokens (llama's one and two share
    their greedy ids)."""
    one, half, two = load("qwen2_F32_one"), load("qwen2_F32_half"), load("qwen2_F32_two")
    plain = base_oracle(one)
    base = make_model(one, tmp_path)
    a1_path, a2_path = [path for path, _ in make_lora_adapters(two, base, tmp_path)]
    options = cv.dnn.LLMLoadOptions()
    options.integerDot = 0
    model = cv.dnn.TextGenerationModel(str(base), options)
    assert generated(model) == plain["greedy_ids"]

    a1 = model.loadAdapter(str(a1_path))  # scale 1: on for every request that names none
    assert generated(model) == one["greedy_ids"]
    assert generated(model, request([a1], [0.5])) == half["greedy_ids"]
    assert generated(model, request([a1])) == one["greedy_ids"]  # adapterScales empty: 1 each
    assert generated(model, request([a1], [0.0])) == plain["greedy_ids"]
    model.setAdapterScale(a1, 0.5)
    assert generated(model) == half["greedy_ids"]
    model.setAdapterScale(a1, 0.0)
    assert generated(model) == plain["greedy_ids"]

    a2 = model.loadAdapter(str(a2_path), 0.0)  # loaded, off by default
    assert a2 != a1
    assert generated(model) == plain["greedy_ids"]
    assert generated(model, request([a1, a2], [1.0, 0.7])) == two["greedy_ids"]
    model.setAdapterScale(a1, 1.0)
    model.setAdapterScale(a2, 0.7)
    assert generated(model) == two["greedy_ids"]
    # listed adapters replace the defaults: a2 off here although its default scale is 0.7
    assert generated(model, request([a1], [1.0])) == one["greedy_ids"]
    assert generated(model, request([a1, a2], [0.5, 0.0])) == half["greedy_ids"]

    model.unloadAdapter(a2)
    assert generated(model) == one["greedy_ids"]
    with pytest.raises(cv.error):
        generated(model, request([a2]))  # unloaded: no such adapter
    model.unloadAdapter(a1)
    assert generated(model) == plain["greedy_ids"]


def test_engine_prefix_reuse_is_keyed_on_the_adapter_set(tmp_path):
    """GenerationEngine keeps finished sequences for prefix reuse: a prompt of several KV pages
    computed with adapter 1 serves a later request with adapter 1 (cachedPromptTokens > 0, same
    tokens), never one without it or with another scale (cachedPromptTokens 0, and the tokens of
    a fresh model with that set)."""
    one = load("qwen2_F32_one")
    base = make_model(one, tmp_path)
    (a1_path, _), = make_lora_adapters(one, base, tmp_path)
    options = cv.dnn.LLMLoadOptions()
    options.integerDot = 0
    prompt = [1] + [100 + (7 * i) % 300 for i in range(70)]  # more than one page of 16 tokens

    def fresh(config):
        model = cv.dnn.TextGenerationModel(str(base), options)
        if len(config.adapterIds):
            assert model.loadAdapter(str(a1_path), 0.0) == config.adapterIds[0]
        config.maxNewTokens, config.ignoreEndOfGeneration = 6, True
        model.startWithTokenIds(prompt, config)
        while not model.isDone():
            model.next()
        return list(model.getGeneratedTokenIds())

    model = cv.dnn.TextGenerationModel(str(base), options)
    a1 = model.loadAdapter(str(a1_path), 0.0)
    engine = cv.dnn.GenerationEngine.create(model)

    def run(config):
        r = cv.dnn.GenerationRequest()
        r.promptTokenIds = prompt
        config.maxNewTokens, config.ignoreEndOfGeneration = 6, True
        r.config = config
        result = engine.wait(engine.submit(r))
        assert result.finishReason == "length", result.error
        return list(result.tokenIds), result.cachedPromptTokens

    with_adapter, cached = run(request([a1]))
    assert cached == 0
    assert with_adapter == fresh(request([a1]))
    again, cached = run(request([a1]))
    assert cached > 0 and again == with_adapter  # the same set: reused
    plain, cached = run(cv.dnn.GenerationConfig())
    assert cached == 0 and plain == fresh(cv.dnn.GenerationConfig())
    assert plain != with_adapter
    half, cached = run(request([a1], [0.5]))
    assert cached == 0 and half == fresh(request([a1], [0.5]))
    plain_again, cached = run(cv.dnn.GenerationConfig())
    assert cached > 0 and plain_again == plain


def test_sessions_record_their_adapters(tmp_path):
    """A session computed with an adapter records it: loading it needs that adapter loaded (any
    id, found by its contents), and its keys and values serve the next prompt only under the
    same adapter and scale; the text equals a fresh model's either way."""
    one = load("qwen2_F32_one")
    base = make_model(one, tmp_path)
    (a1_path, _), = make_lora_adapters(one, base, tmp_path)
    options = cv.dnn.LLMLoadOptions()
    options.integerDot = 0
    session = str(tmp_path / "with_adapter.session")
    longer = PROMPT + [300, 301, 302]

    def model_with_adapter(scale, other_first=False):
        m = cv.dnn.TextGenerationModel(str(base), options)
        if other_first:  # another id for the same contents
            m.loadAdapter(str(tmp_path / "other.gguf"), 0.0)
        return m, m.loadAdapter(str(a1_path), scale)

    def generate(m, prompt, config):
        config.maxNewTokens, config.ignoreEndOfGeneration = 4, True
        m.startWithTokenIds(prompt, config)
        while not m.isDone():
            m.next()
        return list(m.getGeneratedTokenIds())

    make_adapter(base, tmp_path / "other.gguf", "--seed", "9")
    m, a1 = model_with_adapter(1.0)
    generate(m, PROMPT, cv.dnn.GenerationConfig())
    m.saveSession(session)
    fresh, fa1 = model_with_adapter(0.0)
    expected_with = generate(fresh, longer, request([fa1]))
    expected_without = generate(fresh, longer, cv.dnn.GenerationConfig())
    assert expected_with != expected_without

    plain = cv.dnn.TextGenerationModel(str(base), options)
    with pytest.raises(cv.error, match=a1_path.name):
        plain.loadSession(session)  # its adapter is not loaded

    m2, b1 = model_with_adapter(0.0, other_first=True)
    assert b1 != a1
    m2.loadSession(session)
    assert generate(m2, longer, request([b1])) == expected_with
    assert m2.getLastPrefillTokenCount() < len(longer)  # the session's keys and values served it
    m3, c1 = model_with_adapter(0.0)
    m3.loadSession(session)
    assert generate(m3, longer, request([c1], [0.5])) != expected_with
    assert m3.getLastPrefillTokenCount() == len(longer)  # another scale: computed again
    m4, _ = model_with_adapter(0.0)
    m4.loadSession(session)
    assert generate(m4, longer, cv.dnn.GenerationConfig()) == expected_without
    assert m4.getLastPrefillTokenCount() == len(longer)


@pytest.mark.parametrize("arch", ["llama", "phi3"])
def test_text_generation_model_matches_llama_cpp(tmp_path, arch):
    for case in ("one", "half", "noalpha"):
        oracle = load(f"{arch}_F32_{case}")
        base = make_model(oracle, tmp_path)
        (path, scale), = make_lora_adapters(oracle, base, tmp_path)
        options = cv.dnn.LLMLoadOptions()
        options.integerDot = 0
        model = cv.dnn.TextGenerationModel(str(base), options)
        model.loadAdapter(str(path), float(scale))
        steps = oracle["greedy_steps"]
        n = next((i for i in range(1, len(steps)) if gap(steps[i]) < 0.002), len(steps))
        assert generated(model, n=n) == oracle["greedy_ids"][:n], case


def test_norm_tensors_are_skipped(tmp_path, monkeypatch):
    """convert_lora_to_gguf.py keeps mergekit's norm vectors; llama.cpp skips every *_norm.weight
    of an adapter: the same pairs with and without them give the same logits."""
    oracle = load("llama_F32_one")
    base = make_model(oracle, tmp_path)
    (path, _), = make_lora_adapters(oracle, base, tmp_path)
    args = shlex.split(oracle["lora"][0]["generator"])
    options = args[args.index("--base") + 2:args.index("--out")]  # --rank 8 --alpha 16 --seed 1
    normed = make_adapter(base, tmp_path / "normed.gguf", *options, "--with-norms")
    assert normed.stat().st_size > path.stat().st_size
    logits = []
    for adapter in (path, normed):
        net = read_net(base, True, monkeypatch)
        cv.dnn.setLLMSequenceAdapters(net, 0, [cv.dnn.loadLLMAdapter(net, str(adapter))], [1.0])
        logits.append(forward(net, PROMPT))
    assert np.array_equal(logits[0], logits[1])
    assert max_dp(softmax(logits[1]), oracle["top_k"]) < 1e-4


def truncated(src, dst, keep):
    dst.write_bytes(src.read_bytes()[:keep])
    return dst


def test_malformed_adapters_are_refused_and_leave_the_model_as_it_was(tmp_path, monkeypatch):
    oracle = load("llama_F32_one")
    plain = base_oracle(oracle)
    base = make_model(oracle, tmp_path)
    (good, _), = make_lora_adapters(oracle, base, tmp_path)
    size = good.stat().st_size
    bad = {
        # file -> words the message must hold (each a list of alternatives, case-insensitive)
        make_adapter(base, tmp_path / "arch.gguf", "--arch", "qwen2"): [["qwen2"], ["llama"], ["architecture", "arch"]],
        make_adapter(base, tmp_path / "shape.gguf", "--bad-shape"): [["blk.0.attn_q.weight"], ["shape"]],
        make_adapter(base, tmp_path / "no_b.gguf", "--drop-b"): [["blk.0.attn_q.weight"], ["lora_b"]],
        make_adapter(base, tmp_path / "extra.gguf", "--extra-tensor", "blk.0.attn_qkv.weight"):
            [["blk.0.attn_qkv.weight"], ["not in the base", "does not exist", "no such", "base model", "missing"]],
        truncated(good, tmp_path / "cut_data.gguf", size - 1000): [["truncated", "file", "bounds", "end"]],
        truncated(good, tmp_path / "cut_header.gguf", 1000): [["truncated", "file", "bounds", "end"]],
        base: [["general.type", "adapter"]],  # a model, not an adapter
    }
    net = read_net(base, True, monkeypatch)
    model = cv.dnn.TextGenerationModel(str(base))
    for path, words in bad.items():
        for load_adapter in (lambda p: cv.dnn.loadLLMAdapter(net, str(p)), lambda p: model.loadAdapter(str(p))):
            with pytest.raises(cv.error) as e:
                load_adapter(path)
            msg = str(e.value).lower()
            for alternatives in words:
                assert any(w.lower() in msg for w in alternatives), (path.name, alternatives, str(e.value))
    # nothing was applied: the base model's output, then the good adapter still loads and works
    assert max_dp(softmax(forward(net, PROMPT)), plain["top_k"]) < 1e-4
    assert generated(model, n=1) == plain["greedy_ids"][:1]
    gid = cv.dnn.loadLLMAdapter(net, str(good))
    cv.dnn.setLLMSequenceAdapters(net, 1, [gid], [1.0])
    assert max_dp(softmax(forward(net, PROMPT, [1] * len(PROMPT))), oracle["top_k"]) < 1e-4
    with pytest.raises(cv.error):
        cv.dnn.setLLMSequenceAdapters(net, 2, [gid + 12345], [1.0])  # an id this Net never gave out
    with pytest.raises(cv.error):
        cv.dnn.setLLMSequenceAdapters(net, 2, [gid], [1.0, 0.5])  # two scales for one adapter


def test_unload_through_the_net_api(tmp_path, monkeypatch):
    oracle = load("llama_F32_one")
    plain = base_oracle(oracle)
    base = make_model(oracle, tmp_path)
    (path, _), = make_lora_adapters(oracle, base, tmp_path)
    net = read_net(base, True, monkeypatch)
    aid = cv.dnn.loadLLMAdapter(net, str(path))
    cv.dnn.setLLMSequenceAdapters(net, 0, [aid], [1.0])
    assert max_dp(softmax(forward(net, PROMPT)), oracle["top_k"]) < 1e-4
    cv.dnn.setLLMSequenceAdapters(net, 1, [], [])
    assert max_dp(softmax(forward(net, PROMPT, [1] * len(PROMPT))), plain["top_k"]) < 1e-4
    cv.dnn.getLLMKVCache(net).clear()
    cv.dnn.setLLMSequenceAdapters(net, 0, [], [])
    cv.dnn.unloadLLMAdapter(net, aid)
    assert max_dp(softmax(forward(net, PROMPT)), plain["top_k"]) < 1e-4
    with pytest.raises(cv.error):
        cv.dnn.setLLMSequenceAdapters(net, 0, [aid], [1.0])  # unloaded


def test_oracles_record_how_they_were_made():
    """Every LoRA oracle names its base oracle (same model bytes) and its adapters' commands."""
    assert len(LORA_ORACLES) == 24
    for name in LORA_ORACLES:
        oracle = load(name)
        assert oracle["model_sha256"] == base_oracle(oracle)["model_sha256"], name
        for entry in oracle["lora"]:
            assert entry["generator"].startswith("python3 tools/gguf/make_lora_adapter.py --base "), name
            assert os.path.basename(shlex.split(entry["generator"])[-1]) == entry["file"], name
