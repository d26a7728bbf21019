#!/usr/bin/python3
"""Serving speed of llm_server against llama.cpp's llama-server: one GGUF file, the same threads
and parallel slots, the same request mix; one server at a time on 127.0.0.1.

    tools/bench/server_bench.py --model=F.gguf [--threads=2] [--parallel=8] [--clients=8]
        [--requests=32] [--prompt-tokens=64] [--gen-tokens=64] [--context=0] [--shared-prefix=0]
        [--rounds=1] [--llm-server=build/bin/llm_server]
        [--llama-server=/work/llamacpp/build/bin/llama-server]
        [--llm-server-args=...] [--llama-server-args=...] [--only=llm_server|llama-server]

Each server is started (llm_server --model --threads --parallel --context; llama-server -m -t
-np -c with -c = parallel x context, since llama-server divides its context among its slots, and
continuous batching on), waited for until GET /health answers 200, warmed up with one request,
then driven by --clients threads that take the --requests requests from one shared list: POST
/v1/completions, stream true, max_tokens G, temperature 0, ignore_eos true (every request
generates exactly G tokens). Prompts are lists of P token ids (OpenAI's token-array prompt, so
both servers see exactly the same P tokens, without a BOS added), random ordinary tokens that
differ between all requests from the first on, so no server can reuse another request's prefix;
--shared-prefix=K makes the first K tokens the same in every prompt. The prompts are the same for
both servers; usage.prompt_tokens is checked against P. --rounds=R runs the servers R times,
alternating, and the ratios compare each server's medians.

Measured per request: time to first token (from sending the request to the first SSE chunk with
text) and generated tokens (usage.completion_tokens, else the chunks with text). Printed per
run: aggregate generated tokens/s (all generated tokens / wall time from the first request sent
to the last reply ended), p50 / p99 time to first token, p50 request latency, p50 decode speed
of one stream (its tokens after the first / the time after its first token), the CPU seconds of
the server process and of this client during the run, the load average; then the ratios
llm_server / llama-server, and llm_server's prefill and decode rates from its /metrics.
A stream that ends with an error chunk after its text (llama-server does so when its chat-output
parser meets invalid UTF-8, e.g. a random model's byte tokens) is counted apart, with the chunks
it received as its tokens. A server's log is kept (its path printed) only when something failed.
Every loop is bounded in count and time; only 127.0.0.1 is contacted.

llama-server is built outside the repository from the llama.cpp source bundled in the npm package
node-llama-cpp@3.21.1 (doc/performance.md, sections Setup and "HTTP server against llama-server").
"""
import argparse
import http.client
import json
import os
import pathlib
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLM_SERVER = "llm_server"
LLAMA_SERVER = "llama-server"
STARTUP_SECONDS = 300  # loading a model (and llama-server's warm-up) on a busy 2-core machine
STOP_SECONDS = 15  # SIGTERM, then SIGKILL
# Prompt tokens are drawn from these ids: ordinary tokens in every Llama-family vocabulary (past
# the control and byte tokens, below the smallest vocabulary size).
PROMPT_TOKEN_IDS = range(1000, 10000)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, timeout=30):
    """(status, body bytes) of one plain request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def request_json(port, method, path, body=None, timeout=30):
    """(status, parsed JSON or None) of one plain request."""
    status, raw = request(port, method, path, body, timeout)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


# llm_server's own account of where the time went (GET /metrics), printed after its run.
ENGINE_METRICS = ("llm_prefill_tokens_per_second", "llm_decode_tokens_per_second", "llm_tokens_prefilled_total",
                  "llm_prompt_tokens_cached_total")


def engine_metrics(port):
    status, raw = request(port, "GET", "/metrics")
    if status != 200:
        return ""
    found = {}
    for line in raw.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ENGINE_METRICS:
            found[parts[0]] = parts[1]
    return ", ".join(f"{k} {found[k]}" for k in ENGINE_METRICS if k in found)


class Server:
    """One server process on 127.0.0.1:port, its output in a log file; stopped on exit."""

    def __init__(self, name, cmd, port):
        self.name, self.port = name, port
        self.log = tempfile.NamedTemporaryFile(prefix=f"server_bench_{name}_", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.keep_log = False  # set when something went wrong

    def log_tail(self, chars=3000):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()[-chars:]

    def wait_healthy(self):
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if request_json(self.port, "GET", "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                pass  # not listening yet
            time.sleep(0.25)
        sys.exit(f"{self.name} did not answer /health with 200 within {STARTUP_SECONDS} s:\n{self.log_tail()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_SECONDS)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        if not self.keep_log and exc[0] is None:
            os.unlink(self.log.name)


def server_command(name, args, port, context):
    if name == LLM_SERVER:
        return [args.llm_server, f"--model={args.model}", f"--threads={args.threads}",
                f"--parallel={args.parallel}", f"--context={context}", "--host=127.0.0.1",
                f"--port={port}"] + shlex.split(args.llm_server_args)
    return [args.llama_server, "-m", args.model, "-t", str(args.threads), "-np", str(args.parallel),
            "-c", str(args.parallel * context), "--cont-batching", "--no-webui", "--host", "127.0.0.1",
            "--port", str(port)] + shlex.split(args.llama_server_args)


def make_prompts(count, length, shared, seed=1):
    """count prompts of `length` token ids; the first `shared` ids are the same in all, the next one
    differs between all prompts (so no prefix beyond the shared one is common)."""
    rng = random.Random(seed)
    prefix = [rng.choice(PROMPT_TOKEN_IDS) for _ in range(shared)]
    firsts = rng.sample(PROMPT_TOKEN_IDS, count)
    return [prefix + [first] + [rng.choice(PROMPT_TOKEN_IDS) for _ in range(length - shared - 1)]
            for first in firsts]


class StreamError(RuntimeError):
    """An error chunk that ended a stream after it had streamed text: the tokens were generated."""


def stream_completion(port, model_id, prompt, max_tokens, timeout):
    """One streamed completion: (time to first token, generated tokens, latency, decode tokens/s,
    None or the error chunk that ended the stream after its text)."""
    body = {"model": model_id, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        start = time.monotonic()
        conn.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"status {resp.status}: {resp.read()[:500]!r}")
        first = last = None
        chunks_with_text, usage_tokens, prompt_tokens, done, late_error = 0, None, len(prompt), False, None
        for _ in range(8 * max_tokens + 64):  # a chunk per token, plus role / finish / usage chunks
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"no end within {timeout} s")
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                break
            chunk = json.loads(data)
            if "error" in chunk:
                if first is None:
                    raise RuntimeError(f"error in stream: {chunk['error']}")
                late_error = StreamError(str(chunk["error"]))
                break
            if chunk.get("usage"):
                usage_tokens = chunk["usage"].get("completion_tokens")
                prompt_tokens = chunk["usage"].get("prompt_tokens", len(prompt))
            if any(c.get("text") for c in chunk.get("choices") or []):
                last = time.monotonic()
                first = first or last
                chunks_with_text += 1
        if not done and not late_error:
            raise RuntimeError("stream ended without [DONE]")
        if first is None:
            raise RuntimeError("no chunk with text")
        if prompt_tokens != len(prompt):
            raise RuntimeError(f"usage.prompt_tokens {prompt_tokens}, sent {len(prompt)} tokens")
        end = time.monotonic()
        tokens = usage_tokens if usage_tokens is not None else chunks_with_text
        decode = (tokens - 1) / (last - first) if tokens > 1 and last > first else float("nan")
        return first - start, tokens, end - start, decode, late_error
    finally:
        conn.close()


def drive(port, model_id, prompts, clients, max_tokens, timeout):
    """Sends every prompt once from `clients` threads; (results, errors, wall seconds)."""
    results, errors, lock = [], [], threading.Lock()
    next_index = [0]
    barrier = threading.Barrier(clients + 1)

    def client():
        barrier.wait()
        for _ in range(len(prompts)):  # at most every request
            with lock:
                i = next_index[0]
                if i >= len(prompts):
                    return
                next_index[0] += 1
            try:
                r = stream_completion(port, model_id, prompts[i], max_tokens, timeout)
                with lock:
                    results.append(r)
            except (OSError, RuntimeError, ValueError, http.client.HTTPException) as e:
                with lock:
                    errors.append(f"request {i}: {e}")

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.monotonic()
    deadline = start + timeout * -(-len(prompts) // clients)  # each client's share, one after another
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    wall = time.monotonic() - start
    if any(t.is_alive() for t in threads):
        errors.append("a client thread did not finish in time")
    return results, errors, wall


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, -(-len(s) * q // 100) - 1))]


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def run_server(name, args, context, prompts):
    """Starts the server, warms it up and drives the requests: (results, errors, wall seconds, server CPU
    seconds, client CPU seconds) of the driven requests."""
    port = free_port()
    cmd = server_command(name, args, port, context)
    print(f"{name}: {shlex.join(cmd)}", flush=True)
    with Server(name, cmd, port) as server:
        server.wait_healthy()
        status, models = request_json(port, "GET", "/v1/models")
        model_id = models["data"][0]["id"] if status == 200 and models and models.get("data") else "model"
        stream_completion(port, model_id, prompts[-1], args.gen_tokens, args.request_timeout)  # warm-up
        server_cpu, client_cpu = cpu_seconds(server.proc.pid), sum(os.times()[:2])
        results, errors, wall = drive(port, model_id, prompts[:-1], args.clients, args.gen_tokens,
                                      args.request_timeout)
        server_cpu, client_cpu = cpu_seconds(server.proc.pid) - server_cpu, sum(os.times()[:2]) - client_cpu
        if name == LLM_SERVER:
            print(f"{name} /metrics after the run: {engine_metrics(port) or 'none'}", flush=True)
        late = [r[4] for r in results if r[4]]
        if errors or late:
            server.keep_log = True
            print(f"{name}: {len(errors)} failed requests{', first: ' + errors[0] if errors else ''}; "
                  f"{len(late)} ended by an error after their text{', first: ' + str(late[0]) if late else ''}; "
                  f"server log: {server.log.name}", flush=True)
    return results, errors, wall, server_cpu, client_cpu


def summary(name, results, errors, wall, server_cpu, client_cpu):
    ttft = [r[0] * 1000 for r in results]
    generated = sum(r[1] for r in results)
    return {"server": name, "ok": len(results) - sum(1 for r in results if r[4]),
            "late": sum(1 for r in results if r[4]), "failed": len(errors), "generated": generated,
            "wall": wall, "tps": generated / wall if wall > 0 else 0.0,
            "ttft50": percentile(ttft, 50), "ttft99": percentile(ttft, 99),
            "lat50": percentile([r[2] for r in results], 50),
            "decode50": percentile([r[3] for r in results], 50), "load": os.getloadavg()[0],
            "server_cpu": server_cpu, "client_cpu": client_cpu}


RATIO_COLUMNS = ("tps", "ttft50", "ttft99", "lat50", "decode50")


def print_table(rows):
    print("| server | requests complete / ended by an error after their text / failed | generated tokens "
          "| wall s | aggregate tok/s | p50 TTFT ms | p99 TTFT ms | p50 latency s "
          "| p50 decode tok/s of one stream | CPU s: server / client | load after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['server']} | {r['ok']} / {r['late']} / {r['failed']} | {r['generated']} | {r['wall']:.1f} "
              f"| {r['tps']:.2f} | {r['ttft50']:.0f} | {r['ttft99']:.0f} | {r['lat50']:.2f} | {r['decode50']:.2f} "
              f"| {r['server_cpu']:.1f} / {r['client_cpu']:.1f} | {r['load']:.2f} |")
    medians = {}
    for name in (LLM_SERVER, LLAMA_SERVER):
        mine = [r for r in rows if r["server"] == name]
        if mine:
            medians[name] = {c: statistics.median(r[c] for r in mine) for c in RATIO_COLUMNS}
    if len(medians) == 2:
        a, b = medians[LLM_SERVER], medians[LLAMA_SERVER]
        label = "ratio llm_server / llama-server" + (" (medians of the rounds)" if len(rows) > 2 else "")
        print(f"| {label} | | | | " + " | ".join(f"{a[c] / b[c]:.2f}x" for c in RATIO_COLUMNS) + " | | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=8, help="slots: requests generating at once")
    ap.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--context", type=int, default=0,
                    help="context of one request (0: prompt + completion, rounded up to 256)")
    ap.add_argument("--shared-prefix", type=int, default=0, help="prompt tokens the same in every request")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each server, alternating")
    ap.add_argument("--request-timeout", type=float, default=600)
    ap.add_argument("--llm-server", default=str(ROOT / "build" / "bin" / "llm_server"))
    ap.add_argument("--llama-server", default="/work/llamacpp/build/bin/llama-server")
    ap.add_argument("--llm-server-args", default="", help="more arguments for llm_server")
    ap.add_argument("--llama-server-args", default="", help="more arguments for llama-server, e.g. '--poll 0'")
    ap.add_argument("--only", choices=[LLM_SERVER, LLAMA_SERVER])
    args = ap.parse_args()
    if not (0 <= args.shared_prefix < args.prompt_tokens) or min(args.requests, args.clients, args.gen_tokens,
                                                                args.rounds) < 1:
        sys.exit("need 0 <= --shared-prefix < --prompt-tokens and positive --requests, --clients, --gen-tokens, "
                 "--rounds")
    context = args.context or -(-(args.prompt_tokens + args.gen_tokens) // 256) * 256

    print(f"command: {shlex.join([sys.argv[0]] + sys.argv[1:])}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"model: {args.model}; threads {args.threads}, parallel {args.parallel}, clients {args.clients}, "
          f"requests {args.requests}, prompt {args.prompt_tokens} tokens (shared prefix {args.shared_prefix}), "
          f"completion {args.gen_tokens} tokens, context {context} per request", flush=True)

    names = [args.only] if args.only else [LLM_SERVER, LLAMA_SERVER]
    for name, exe in ((LLM_SERVER, args.llm_server), (LLAMA_SERVER, args.llama_server)):
        if name in names and not os.access(exe, os.X_OK):
            sys.exit(f"{name}: {exe} is not an executable (--llm-server / --llama-server)")
    prompts = make_prompts(args.requests + 1, args.prompt_tokens, args.shared_prefix)  # the last: warm-up
    rows = []
    for _ in range(args.rounds):
        for name in names:
            measured = run_server(name, args, context, prompts)
            if not measured[0]:
                sys.exit(f"{name}: no request succeeded")
            rows.append(summary(name, *measured))

    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print_table(rows)
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
