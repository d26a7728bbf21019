"""Starts build/bin/llm_server for a test and talks to it over HTTP on loopback; standard library
only, imported by the server tests of this folder.

    from server_process import LlmServer, post_json, get, stream_sse, metric_value

    with LlmServer(["--parallel=8"]) as server:   # --port=0; waits for `listening on ...`
        status, headers, body = post_json(server.base_url, "/v1/chat/completions",
                                          {"messages": [{"role": "user", "content": "Hi!"}]})
        print(server.pid, server.rss_kib())
    # leaving the block: SIGTERM, and (when the block raised nothing) a check that the server
    # exited with status 0 within the bound; SIGKILL when it did not exit in time.

The binary is $LLM_SERVER (default build/bin/llm_server) and the model $LLM_DEMO_MODEL (default
models/demo/demo-stories.gguf), as ctest sets them. Every target is 127.0.0.1 and every wait has
a time limit. A started process is killed (SIGKILL) if the test process dies first."""
import collections
import ctypes
import http.client
import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
import urllib.parse

PROJECT_ROOT = pathlib.Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
_LISTENING = re.compile(r"listening on (http://(\S+):(\d+))")


def _die_with_parent():
    """Runs in the child before exec: Linux sends it SIGKILL when the thread that started it
    exits (start processes from the main thread), so a test killed by ctest's timeout leaves no
    server behind."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ServerError(RuntimeError):
    """The process did not start, did not stop in time, or exited with a status other than 0;
    the message ends with the last lines it printed."""


class ManagedProcess:
    """A child process whose stdout and stderr are read by a thread into a bounded log (so a
    chatty child never blocks on a full pipe). stop() ends it: SIGTERM, then SIGKILL."""

    def __init__(self, argv, log_lines=400, env=None):
        self.argv = [str(a) for a in argv]
        self._log = collections.deque(maxlen=log_lines)
        self._log_lock = threading.Lock()
        self._line_seen = threading.Condition(self._log_lock)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()

    @property
    def pid(self):
        return self.proc.pid

    def _read_output(self):
        for raw in self.proc.stdout:
            with self._log_lock:
                self._log.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._line_seen.notify_all()
        with self._log_lock:
            self._line_seen.notify_all()

    def log_tail(self, lines=40):
        with self._log_lock:
            return "\n".join(list(self._log)[-lines:])

    def wait_for_line(self, pattern, timeout):
        """The first match of the regex `pattern` in the output, waiting at most `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._log_lock:
            while True:
                for line in self._log:
                    match = pattern.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    break
                self._line_seen.wait(min(left, 0.5))
        state = "exited with %s" % self.proc.returncode if self.proc.poll() is not None \
            else "still running after %.0f s" % timeout
        raise ServerError("%s: no line matching %r (%s); its output:\n%s"
                          % (self.argv[0], pattern.pattern, state, self.log_tail()))

    def rss_kib(self):
        """VmRSS of the process in KiB, from /proc/PID/status."""
        with open("/proc/%d/status" % self.pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise ServerError("no VmRSS for pid %d" % self.pid)

    def kill(self):
        """SIGKILL, as a crash; waits until the process is gone."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)

    def stop(self, timeout=20.0, check=True):
        """SIGTERM, and up to `timeout` s for the exit; SIGKILL after that. Returns the exit
        status (negative: the signal that ended it). With check, a process that had to be killed
        or exited with a status other than 0 raises ServerError."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                if check:
                    raise ServerError("%s did not exit within %.0f s of SIGTERM (killed); its output:\n%s"
                                      % (self.argv[0], timeout, self.log_tail()))
        self._reader.join(timeout=5)
        if check and self.proc.returncode != 0:
            raise ServerError("%s exited with status %s; its output:\n%s"
                              % (self.argv[0], self.proc.returncode, self.log_tail()))
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # After a failure in the block, stop without checking: the first error is the one to see.
        self.stop(check=exc_type is None)


class LlmServer(ManagedProcess):
    """llm_server on 127.0.0.1 with --port=0, started and waited for (`listening on` line, at
    most start_timeout s). base_url is http://127.0.0.1:PORT; extra_args are more --key=value
    flags (a --model among them replaces the default one)."""

    def __init__(self, extra_args=(), start_timeout=120.0, env=None):
        binary = os.environ.get("LLM_SERVER", str(PROJECT_ROOT / "build" / "bin" / "llm_server"))
        model = os.environ.get("LLM_DEMO_MODEL", str(PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf"))
        extra_args = list(extra_args)
        argv = [binary, "--host=" + LOOPBACK, "--port=0"]
        if not any(a.startswith("--model=") for a in extra_args):
            argv.append("--model=" + model)
        super().__init__(argv + extra_args, env=env)
        try:
            match = self.wait_for_line(_LISTENING, start_timeout)
        except BaseException:
            self.stop(check=False)
            raise
        self.base_url, self.host, self.port = match.group(1), match.group(2), int(match.group(3))


def _connection(base_url, timeout):
    url = urllib.parse.urlsplit(base_url)
    if url.scheme != "http" or url.hostname != LOOPBACK:
        raise ValueError("only http://127.0.0.1 is a target here, not %r" % base_url)
    return http.client.HTTPConnection(LOOPBACK, url.port, timeout=timeout)


def request(base_url, method, path, body=None, headers=None, timeout=60.0):
    """One request on a new connection. Returns (status, headers as a lower-case dict, body
    bytes). `body`: bytes, str, or an object sent as JSON."""
    headers = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        headers.setdefault("Content-Type", "application/json")
    if isinstance(body, str):
        body = body.encode("utf-8")
    conn = _connection(base_url, timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()


def get(base_url, path, headers=None, timeout=60.0):
    """GET: (status, headers, body as text)."""
    status, response_headers, data = request(base_url, "GET", path, headers=headers, timeout=timeout)
    return status, response_headers, data.decode("utf-8", "replace")


def post_json(base_url, path, obj, headers=None, timeout=60.0):
    """POST a JSON body: (status, headers, parsed JSON body). A body that is not JSON raises
    ValueError naming the status and the body."""
    status, response_headers, data = request(base_url, "POST", path, obj, headers, timeout)
    try:
        return status, response_headers, json.loads(data)
    except ValueError:
        raise ValueError("HTTP %d: the body is not JSON: %r" % (status, data[:500]))


SseReply = collections.namedtuple("SseReply", "status headers lines times complete")
SseReply.__doc__ = """A streamed reply. lines: every non-empty line of the body, decoded;
times: for each line, seconds from sending the request to reading it; complete: the body ended
cleanly (a truncated chunked body, a reset or a read timeout leave it False)."""


def stream_sse(base_url, path, obj, headers=None, timeout=60.0):
    """POST a JSON body and read the reply line by line as it arrives (server-sent events), at
    most `timeout` s per read. Returns an SseReply; a non-200 reply's body is in lines too."""
    conn = _connection(base_url, timeout)
    lines, times, complete = [], [], False
    sent = time.monotonic()
    try:
        conn.request("POST", path, body=json.dumps(obj).encode("utf-8"),
                     headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        response = conn.getresponse()
        response_headers = {k.lower(): v for k, v in response.getheaders()}
        # read1, not iteration: http.client's readline takes a truncated chunked body for its end.
        pending = b""
        try:
            while True:
                data = response.read1(65536)
                arrived = time.monotonic() - sent
                *received, pending = (pending + data).split(b"\n") if data else (pending, b"")
                for raw in received:
                    line = raw.decode("utf-8", "replace").strip()
                    if line:
                        lines.append(line)
                        times.append(arrived)
                if not data:
                    break
            complete = True
        except (http.client.HTTPException, OSError):
            pass
        return SseReply(response.status, response_headers, lines, times, complete)
    finally:
        conn.close()


_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_value(metrics_text, name, **labels):
    """The sum of the samples of `name` in a Prometheus text page whose labels include `labels`
    (0 when there is none): metric_value(text, "llm_http_requests_total",
    path="/v1/chat/completions", status="200")."""
    total = 0.0
    for line in metrics_text.splitlines():
        match = _METRIC_LINE.match(line)
        if not match or match.group(1) != name:
            continue
        sample_labels = dict(_LABEL.findall(match.group(2) or ""))
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total
