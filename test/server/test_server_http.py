"""llm_server over raw HTTP: OpenAI's error shape for every kind of bad request, hostile input
(truncated / huge / deeply nested JSON, invalid UTF-8, absurd numbers, slow clients, clients
that vanish mid-stream), curl's view of the SSE framing, the API key, /health, /metrics, a
graceful SIGTERM, and LoRA adapters (/lora-adapters, per-request lists, against llama.cpp's
outputs). Each case checks that the server keeps serving others afterwards.

Run by ctest (server_http) with LLM_SERVER and LLM_DEMO_MODEL set."""
import concurrent.futures
import http.client
import json
import os
import pathlib
import shlex
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import LlmServer, ServerError, get, metric_value, post_json, request  # noqa: E402

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"


@pytest.fixture(scope="module")
def server():
    with LlmServer(["--parallel=4", "--timeout=2"]) as s:
        yield s


def chat_body(**fields):
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 8, "temperature": 0}
    body.update(fields)
    return body


def error_of(status_headers_body, status):
    got, _, body = status_headers_body
    assert got == status, body
    e = (json.loads(body) if isinstance(body, (bytes, str)) else body)["error"]
    assert set(e) == {"message", "type", "param", "code"} and e["message"], e
    return e


def assert_still_serving(server):
    status, _, body = post_json(server.base_url, CHAT, chat_body())
    assert status == 200, body
    assert body["choices"][0]["message"]["content"]


@pytest.mark.parametrize("body, param, words", [
    ({"messages": []}, "messages", "non-empty"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages", "wizard"),
    ({"messages": [{"content": "x"}]}, "messages", "role"),
    ({"messages": [{"role": "user"}]}, "messages", "content"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages", "content"),
    (chat_body(temperature=-1), "temperature", "[0.0, 2.0]"),
    (chat_body(temperature="hot"), "temperature", "number"),
    (chat_body(max_tokens=0), "max_tokens", "[1,"),
    (chat_body(max_tokens=1e300), "max_tokens", "integer"),
    (chat_body(max_tokens=2 ** 70), "max_tokens", "integer"),
    (chat_body(max_tokens=2 ** 63), "max_tokens", "at most"),
    (chat_body(top_p=0), "top_p", "greater than 0"),
    (chat_body(min_p=1), "min_p", "below 1"),
    (chat_body(n=1000), "n", "16"),
    (chat_body(seed="x"), "seed", "integer"),
    (chat_body(stop=[1, 2]), "stop", "strings"),
    (chat_body(stop=""), "stop", "empty"),
    (chat_body(presence_penalty=3), "presence_penalty", "[-2.0, 2.0]"),
    (chat_body(top_logprobs=3), "top_logprobs", "logprobs"),
    (chat_body(logprobs=True, top_logprobs=21), "top_logprobs", "20"),
    (chat_body(response_format={"type": "yaml"}), "response_format", "json_schema"),
    (chat_body(tool_choice="required"), "tool_choice", "tools"),
    (chat_body(tools=[{"type": "function"}]), "tools", "function"),
    (chat_body(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice={"type": "function",
                                                                                     "function": {"name": "g"}}),
     "tool_choice", "'g'"),
    (chat_body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]),
     "messages", "projector"),
    (chat_body(messages=[{"role": "user", "content": [{"type": "audio"}]}]), "messages", "audio"),
])
def test_bad_chat_requests_are_400_naming_the_field(server, body, param, words):
    e = error_of(post_json(server.base_url, CHAT, body), 400)
    assert e["type"] == "invalid_request_error" and e["param"] == param, e
    assert words in e["message"], e


def test_bad_completion_requests(server):
    for body, words in [({}, "prompt is required"), ({"prompt": ""}, "empty"), ({"prompt": [1, 2, 10 ** 9]}, "vocabulary"),
                        ({"prompt": ["a"] * 17}, "at most 16 prompts"), ({"prompt": ["a", "b"], "n": 9}, "at most 16"),
                        ({"prompt": ["a", {}]}, "list of those"), ({"prompt": [-1]}, "vocabulary"),
                        ({"prompt": {"x": 1}}, "prompt must")]:
        e = error_of(post_json(server.base_url, "/v1/completions", body), 400)
        assert words in e["message"], (body, e)


def test_prompt_longer_than_the_context_names_both_numbers(server):
    prompt = "hello " * 3000
    ids = post_json(server.base_url, "/tokenize", {"content": prompt, "add_special": True})[2]["tokens"]
    e = error_of(post_json(server.base_url, "/v1/completions", {"prompt": prompt, "max_tokens": 4}), 400)
    assert str(len(ids)) in e["message"] and "context holds" in e["message"], e
    e = error_of(post_json(server.base_url, CHAT, chat_body(stream=True, messages=[{"role": "user", "content": prompt}])),
                 400)  # a stream that cannot start is an HTTP error, not an event
    assert "context holds" in e["message"], e


def raw_post(server, body_bytes, content_type="application/json"):
    return request(server.base_url, "POST", CHAT, body_bytes, {"Content-Type": content_type})


def test_malformed_json_bodies(server):
    for body, words in [(b"{", "not valid JSON"), (b'{"messages": [', "not valid JSON"), (b"[]", "JSON object"),
                        (b"", "not valid JSON"), (b"\xff\xfe{}", "not valid JSON"),
                        (b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', "UTF-8"),
                        (b'{"messages": [], "max_tokens": 1e99999}', "not valid JSON"),  # out of range
                        (b"[" * 100000, "deeper than 64"), (b'{"a":' * 70 + b"1" + b"}" * 70, "deeper than 64")]:
        e = error_of(raw_post(server, body), 400)
        assert words in e["message"], (body[:40], e)
    assert_still_serving(server)


def test_body_too_large_is_413(server):
    e = error_of(raw_post(server, b"x" * (17 << 20)), 413)
    assert "too large" in e["message"]
    e = error_of(raw_post(server, b"x" * 9000, "application/x-www-form-urlencoded"), 413)
    assert "application/json" in e["message"], e  # says how to send it
    assert_still_serving(server)


def test_unknown_paths_and_methods(server):
    e = error_of(get(server.base_url, "/v1/nope"), 404)
    assert e["type"] == "not_found_error"
    e = error_of(get(server.base_url, CHAT), 405)
    assert "GET" in e["message"]


def test_tokenize_and_detokenize_round_trip(server):
    text = "Once upon a time, a cat named Tom"
    status, _, body = post_json(server.base_url, "/tokenize", {"content": text})
    assert status == 200
    ids = body["tokens"]
    assert ids and all(isinstance(i, int) for i in ids)
    status, _, body = post_json(server.base_url, "/detokenize", {"tokens": ids})
    assert status == 200 and body["content"].strip() == text
    error_of(post_json(server.base_url, "/detokenize", {"tokens": [1, "a"]}), 400)
    error_of(post_json(server.base_url, "/tokenize", {"text": "x"}), 400)


def test_curl_sees_sse_framing(server):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}})
    out = subprocess.run(["curl", "-sN", "-i", "-H", "Content-Type: application/json", "-d", body,
                          server.base_url + "/v1/completions"], capture_output=True, timeout=60, check=True).stdout
    head, _, events = out.decode().partition("\r\n\r\n")
    assert "content-type: text/event-stream" in head.lower() and "transfer-encoding: chunked" in head.lower()
    assert events.endswith("data: [DONE]\n\n"), events[-200:]
    frames = events.split("\n\n")[:-1]
    assert all(f.startswith("data: ") and "\n" not in f for f in frames), frames
    chunks = [json.loads(f[6:]) for f in frames[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 6
    text = "".join(c["choices"][0]["text"] for c in chunks[:-1])
    status, _, whole = post_json(server.base_url, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 6,
                                                                     "temperature": 0})
    assert text == whole["choices"][0]["text"]


def test_slow_client_is_cut_and_others_are_served(server):
    # Slowloris: headers sent a byte at a time, then nothing; the server's read timeout (2 s here)
    # closes the connection while other requests go on.
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    start = time.time()
    assert_still_serving(server)
    s.settimeout(10)
    try:
        data = s.recv(100)  # the server closes (b"") or answers 408 / 400
    except ConnectionResetError:
        data = b""
    assert time.time() - start < 9
    assert data == b"" or data.startswith(b"HTTP/1.1 4"), data
    s.close()


@pytest.mark.parametrize("stream", [True, False])
def test_client_gone_frees_its_sequences(stream):
    # 4 choices of up to 30000 tokens each (seconds of work); the client hangs up after the
    # headers (stream) or while waiting (not streamed): they must end at once, not run on.
    with LlmServer(["--context=32768", "--parallel=4"]) as server:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 30000, "ignore_eos": True, "stream": stream,
                           "n": 4}).encode()
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                  str(len(body)).encode() + b"\r\n\r\n" + body)
        if stream:
            assert b"200 OK" in s.recv(4096)
        else:
            time.sleep(0.3)
        deadline = time.time() + 2  # the counters are those of the last step
        while time.time() < deadline:
            running = metric_value(get(server.base_url, "/metrics")[2], "llm_requests_running")
            if running == 4:
                break
            time.sleep(0.02)
        assert running == 4, running  # still generating when the client leaves
        s.close()
        deadline = time.time() + 2
        while time.time() < deadline:
            metrics = get(server.base_url, "/metrics")[2]
            if metric_value(metrics, "llm_requests_running") == 0:
                break
            time.sleep(0.05)
        assert metric_value(metrics, "llm_requests_running") == 0, metrics
        assert metric_value(metrics, "llm_tokens_generated_total") < 4 * 30000
        assert_still_serving(server)


def test_truncated_request_body(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000\r\n\r\n{\"messages\": [")
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    s.recv(4096)  # closed or an error: no crash, no hang past the timeout
    s.close()
    assert_still_serving(server)


def test_health_and_metrics(server):
    status, _, body = get(server.base_url, "/health")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    metrics = get(server.base_url, "/metrics")[2]
    for name in ["llm_requests_waiting", "llm_requests_running", "llm_tokens_generated_total",
                 "llm_prompt_tokens_cached_total", "llm_kv_pages_in_use", "llm_decode_tokens_per_second"]:
        assert "# TYPE " + name in metrics and metric_value(metrics, name) >= 0, name
    assert metric_value(metrics, "llm_http_requests_total", path=CHAT, status="200") >= 1


def test_api_key():
    with LlmServer(["--api-key=sesame"]) as s:
        e = error_of(post_json(s.base_url, CHAT, chat_body()), 401)
        assert e["type"] == "authentication_error" and "no API key" in e["message"]
        e = error_of(post_json(s.base_url, CHAT, chat_body(), {"Authorization": "Bearer sesam"}), 401)
        assert "invalid" in e["message"]
        assert post_json(s.base_url, CHAT, chat_body(), {"Authorization": "Bearer sesame"})[0] == 200
        assert get(s.base_url, "/health")[0] == 200 and get(s.base_url, "/metrics")[0] == 200


def sse_events(base_url, path, body, timeout=60):
    """The data of each event of a streamed reply, as they arrive (a generator; close() hangs up)."""
    port = int(base_url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200, response.read()
        pending = b""
        while True:
            data = response.read1(65536)
            if not data:
                return
            *frames, pending = (pending + data).split(b"\n\n")
            for f in frames:
                yield f.decode()[len("data: "):]
    finally:
        conn.close()


def test_queue_full_is_503_with_retry_after():
    with LlmServer(["--parallel=1", "--max-queue=0", "--context=32768"]) as s:  # a stream of seconds
        long = {"prompt": "Once upon a time", "max_tokens": 100000, "ignore_eos": True, "stream": True}
        events = sse_events(s.base_url, "/v1/completions", long)  # holds the one slot while read
        next(events)
        status, headers, body = post_json(s.base_url, "/v1/completions", {"prompt": "Hi", "max_tokens": 2})
        e = error_of((status, headers, body), 503)
        assert headers.get("retry-after") == "1", headers
        assert "busy" in e["message"]
        events.close()


def test_sigterm_finishes_running_requests_and_exits_0():
    s = LlmServer(["--shutdown-timeout=20"])
    try:
        events = sse_events(s.base_url, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 64,
                                                            "ignore_eos": True, "stream": True})
        first = next(events)
        s.proc.send_signal(15)
        rest = list(events)  # the running request is finished, not cut
        assert rest[-1] == "[DONE]", rest[-3:]
        assert s.proc.wait(timeout=30) == 0
        assert first
    finally:
        s.kill()


def test_health_is_503_while_loading_and_a_bad_model_exits_1(tmp_path):
    # A model path that is a FIFO blocks the loader until something writes to it: /health must
    # answer 503 meanwhile; the bytes written then are not a model, and the server exits 1.
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    binary = os.environ.get("LLM_SERVER", "build/bin/llm_server")
    proc = subprocess.Popen([binary, "--port=0", "--model=" + str(fifo)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + 20
        while port is None and time.time() < deadline:
            for line in os.popen("ss -ltnpH 2>/dev/null").read().splitlines():
                if "pid=%d," % proc.pid in line:
                    port = int(line.split()[3].rsplit(":", 1)[1])
            time.sleep(0.05)
        assert port, "the server did not listen while loading"
        status, headers, body = get("http://127.0.0.1:%d" % port, "/health")
        assert status == 503 and headers.get("retry-after") == "1", (status, body)
        assert json.loads(body)["error"]["message"] == "loading model"
        status, _, body = post_json("http://127.0.0.1:%d" % port, CHAT, chat_body())
        assert status == 503, body
        try:
            with open(fifo, "wb") as w:
                w.write(b"GGUF not really a model")
        except BrokenPipeError:  # the loader stopped reading at the bad header
            pass
        assert proc.wait(timeout=20) == 1
        assert "cannot load the model" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_metrics_answer_at_once_under_load():
    # The engine's thread takes its loop's lock again right after each step: /metrics must not
    # wait for the load to end (it reads the counters of the last step).
    with LlmServer(["--context=32768", "--parallel=2"]) as s:
        events = sse_events(s.base_url, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 30000,
                                                            "ignore_eos": True, "stream": True})
        next(events)
        seen_running = 0
        for _ in range(20):  # the counters are those of the last step: the first may still run
            start = time.time()
            metrics = get(s.base_url, "/metrics")[2]
            assert time.time() - start < 1.0
            seen_running += metric_value(metrics, "llm_requests_running") == 1
            time.sleep(0.02)
        assert seen_running >= 10, metrics
        events.close()


def test_a_list_of_prompts_gets_a_choice_set_each(server):
    prompts = ["Once upon a time", "Tom the cat"]
    alone = [post_json(server.base_url, "/v1/completions", {"prompt": q, "max_tokens": 8, "temperature": 0})[2]
             for q in prompts]
    status, _, both = post_json(server.base_url, "/v1/completions", {"prompt": prompts, "max_tokens": 8,
                                                                      "temperature": 0, "n": 2, "echo": True})
    assert status == 200, both
    texts = [c["text"] for c in sorted(both["choices"], key=lambda c: c["index"])]
    assert texts == [q + a["choices"][0]["text"] for q, a in zip(prompts, alone) for _ in range(2)]
    assert both["usage"]["prompt_tokens"] == sum(a["usage"]["prompt_tokens"] for a in alone)
    assert both["usage"]["completion_tokens"] == 4 * 8


# LoRA adapters (issue 42), as llama-server has them: --lora / --lora-scaled /
# --lora-init-without-apply, GET / POST /lora-adapters, a request's "lora" list. The model is qwen2's
# synthetic base with the two adapters of llama.cpp's lora_qwen2_F32_* oracles (test/data/oracle,
# made again from their recorded commands: same bytes), on the exact float path as test_lora.py
# runs them; the base, one (adapter 0), half (adapter 0 at 0.5) and two (adapter 0 and adapter 1
# at 0.7) start with four different greedy tokens.
ORACLE_DIR = pathlib.Path(__file__).resolve().parents[1] / "data" / "oracle"
LORA_PROMPT = [1, 403, 407, 261, 378]
EXACT = dict(os.environ, OPENCV_DNN_LLM_INTEGER_DOT="0")


def lora_oracle(name):
    return json.loads((ORACLE_DIR / name).read_text())


def run_generator(command, replace):
    """A recorded `python3 tools/gguf/...` command with its --out / --base paths replaced."""
    args = shlex.split(command)
    for key, value in replace.items():
        args[args.index(key) + 1] = str(value)
    subprocess.run([sys.executable] + args[1:] + ["-q"], cwd=ORACLE_DIR.parents[2], check=True)


@pytest.fixture(scope="module")
def lora_files(tmp_path_factory):
    """(base, adapter 0, adapter 1) and the greedy ids of each set."""
    out = tmp_path_factory.mktemp("lora")
    two = lora_oracle("lora_qwen2_F32_two.nlc.json")
    base = out / two["model_file"]
    run_generator(two["generator"], {"--out": base})
    adapters = []
    for entry in two["lora"]:
        adapters.append(out / entry["file"])
        run_generator(entry["generator"], {"--out": adapters[-1], "--base": base})
    greedy = {case: lora_oracle(f"lora_qwen2_F32_{case}.nlc.json")["greedy_ids"] for case in ("one", "half", "two")}
    greedy["base"] = lora_oracle("synthetic_qwen2_F32.nlc.json")["greedy_ids"]
    return base, adapters, greedy


@pytest.fixture(scope="module")
def lora_server(lora_files):
    base, (a0, a1), _ = lora_files
    with LlmServer([f"--model={base}", "--parallel=4", f"--lora={a0}", f"--lora-scaled={a1}:0.7"], env=EXACT) as s:
        yield s


def complete(server, path=COMPLETIONS, **fields):
    body = {"max_tokens": 8, "temperature": 0, **fields}
    if path == COMPLETIONS:
        body.setdefault("prompt", LORA_PROMPT)
    else:
        body.setdefault("messages", [{"role": "user", "content": "Once upon a time"}])
    status, _, reply = post_json(server.base_url, path, body)
    assert status == 200, reply
    choice = reply["choices"][0]
    return choice["text"] if path == COMPLETIONS else choice["message"]["content"]


def llama_cpp_text(server, ids):
    return post_json(server.base_url, "/detokenize", {"tokens": ids})[2]["content"]


def set_defaults(server, scales):
    status, _, reply = post_json(server.base_url, "/lora-adapters", [{"id": i, "scale": s} for i, s in scales])
    assert status == 200 and reply == {"success": True}, reply


# A request's "lora" list -> the oracle case it gives (adapters not listed: off).
PER_REQUEST = [
    (None, "two"),                                          # no field: the defaults (1 and 0.7 as started)
    ([], "two"),                                            # an empty list: the defaults too
    ([{"id": 0, "scale": 1}], "one"),
    ([{"id": 0, "scale": 0.5}], "half"),
    ([{"id": 0, "scale": 0.5}, {"id": 1, "scale": 0}], "half"),
    ([{"id": 1, "scale": 0.7}, {"id": 0, "scale": 1.0}], "two"),
    ([{"id": 0, "scale": 0}], "base"),
]


def test_per_request_lora_gives_llama_cpps_completion(lora_server, lora_files):
    greedy = lora_files[2]
    texts = {case: llama_cpp_text(lora_server, ids) for case, ids in greedy.items()}
    assert len(set(texts.values())) == 4
    for lora, case in PER_REQUEST:
        fields = {} if lora is None else {"lora": lora}
        assert complete(lora_server, **fields) == texts[case], (lora, case)


def test_lora_adapters_get_and_post_round_trip(lora_server, lora_files):
    base, (a0, a1), greedy = lora_files
    status, _, listed = get(lora_server.base_url, "/lora-adapters")
    assert status == 200, listed
    assert json.loads(listed) == [{"id": 0, "path": str(a0), "scale": 1.0}, {"id": 1, "path": str(a1), "scale": 0.7}]
    try:
        # As llama-server: the adapters a POST leaves out get scale 0.
        set_defaults(lora_server, [(0, 0.5)])
        assert json.loads(get(lora_server.base_url, "/lora-adapters")[2]) == [
            {"id": 0, "path": str(a0), "scale": 0.5}, {"id": 1, "path": str(a1), "scale": 0.0}]
        assert complete(lora_server) == llama_cpp_text(lora_server, greedy["half"])
        set_defaults(lora_server, [])
        assert [a["scale"] for a in json.loads(get(lora_server.base_url, "/lora-adapters")[2])] == [0.0, 0.0]
        assert complete(lora_server) == llama_cpp_text(lora_server, greedy["base"])
        # The defaults a POST sets and the same set named per request give the same completion,
        # on both endpoints (the chat one has no oracle: the two ways must agree).
        for scales in ([(0, 1.0)], [(0, 1.0), (1, 0.7)], [(1, 0.7)]):
            lora = [{"id": i, "scale": s} for i, s in scales]
            per_request = [complete(lora_server, lora=lora), complete(lora_server, CHAT, lora=lora)]
            set_defaults(lora_server, scales)
            assert [complete(lora_server), complete(lora_server, CHAT)] == per_request, scales
            set_defaults(lora_server, [])
    finally:
        set_defaults(lora_server, [(0, 1.0), (1, 0.7)])


def test_requests_of_different_adapters_run_together(lora_server, lora_files):
    """--parallel=4: four requests of four adapter sets sent at once run in the same batches; each
    gets the completion of its set."""
    greedy = lora_files[2]
    sets = {"base": [{"id": 0, "scale": 0}], "one": [{"id": 0, "scale": 1}], "half": [{"id": 0, "scale": 0.5}],
            "two": [{"id": 0, "scale": 1}, {"id": 1, "scale": 0.7}]}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = {(case, k): pool.submit(complete, lora_server, lora=lora, max_tokens=8)
                   for k in range(2) for case, lora in sets.items()}
        for (case, _), f in futures.items():
            assert f.result() == llama_cpp_text(lora_server, greedy[case]), case


@pytest.mark.parametrize("lora, words", [
    ([{"id": 2, "scale": 1}], "no LoRA adapter has id 2 (2 loaded"),
    ([{"id": -1, "scale": 1}], "no LoRA adapter has id -1"),
    ([{"id": 2 ** 63, "scale": 1}], "no LoRA adapter has id 9223372036854775808"),
    ([{"id": 2 ** 32, "scale": 1}], "no LoRA adapter has id 4294967296"),
    ([{"id": "0", "scale": 1}], "integer id"),
    ([{"id": 0.5, "scale": 1}], "integer id"),
    ([{"id": 0}], "number scale"),
    ([{"id": 0, "scale": "1"}], "number scale"),
    ([{"id": 0, "scale": 1e300}], "finite"),
    ([{"id": 0, "scale": 1}, {"id": 0, "scale": 0.5}], "given twice"),
    ([0], "must be an object"),
    ({"id": 0, "scale": 1}, "must be a list"),
    ("0", "must be a list"),
])
def test_bad_lora_lists_are_400(lora_server, lora, words):
    for path in (COMPLETIONS, CHAT):
        body = {"max_tokens": 4, "lora": lora, **({"prompt": LORA_PROMPT} if path == COMPLETIONS else
                                                  {"messages": [{"role": "user", "content": "Hi"}]})}
        e = error_of(post_json(lora_server.base_url, path, body), 400)
        assert e["type"] == "invalid_request_error" and e["param"] == "lora", e
        assert words in e["message"], e
    before = get(lora_server.base_url, "/lora-adapters")[2]
    e = error_of(post_json(lora_server.base_url, "/lora-adapters", lora), 400)  # the same list as the body
    assert words in e["message"], e
    assert get(lora_server.base_url, "/lora-adapters")[2] == before  # nothing changed


def test_lora_init_without_apply_and_a_server_without_adapters(lora_files, server):
    base, (a0, a1), greedy = lora_files
    with LlmServer([f"--model={base}", f"--lora={a0},{a1}", "--lora-init-without-apply"], env=EXACT) as s:
        assert [a["scale"] for a in json.loads(get(s.base_url, "/lora-adapters")[2])] == [0.0, 0.0]
        assert complete(s) == llama_cpp_text(s, greedy["base"])
        assert complete(s, lora=[{"id": 0, "scale": 1}]) == llama_cpp_text(s, greedy["one"])
    assert json.loads(get(server.base_url, "/lora-adapters")[2]) == []
    e = error_of(post_json(server.base_url, COMPLETIONS, {"prompt": "Hi", "lora": [{"id": 0, "scale": 1}]}), 400)
    assert "0 loaded" in e["message"], e
    assert complete(server, prompt="Hi", lora=[]) == complete(server, prompt="Hi")


def test_an_adapter_that_does_not_fit_stops_the_server_with_a_message(lora_files, tmp_path):
    base, (a0, _), _ = lora_files
    other = tmp_path / "llama_arch.gguf"
    subprocess.run([sys.executable, str(ORACLE_DIR.parents[2] / "tools" / "gguf" / "make_lora_adapter.py"), "--base",
                    str(base), "--out", str(other), "--arch", "llama", "-q"], check=True)
    for args, words in [([f"--lora={a0},{other}"], ["LoRA adapter " + str(other), "llama"]),
                        ([f"--lora-scaled={a0}"], ["--lora-scaled", "FILE:SCALE"])]:
        with pytest.raises(ServerError) as e:
            LlmServer([f"--model={base}"] + args, start_timeout=60)
        assert all(w in str(e.value) for w in words), str(e.value)
