#!/usr/bin/python3
"""Scale-out the way it is deployed: Debian's nginx in front of two llm_server replicas, all on
127.0.0.1 ports, with the configuration doc/deployment.md explains (NGINX_CONFIG below).

1. spread: 20 requests through nginx (chat and completions, streamed and not) are all complete
   and valid, and each replica's /metrics counts exactly the requests nginx says (the X-Upstream
   header, nginx's $upstream_addr) it sent there: both served some.
2. crash: while long requests run on both replicas, replica A is killed (SIGKILL). Non-streamed
   requests it was running are retried by nginx on B and succeed (proxy_next_upstream error
   non_idempotent); streams A had begun end cut short (their bytes already reached the client:
   no balancer can retry those) and only those.
3. after: 10 new requests through nginx all succeed, served by B, which counts them.

Prints what happened and `N passed, N failed`; exits 1 on a failure.

    LLM_SERVER=build/bin/llm_server /usr/bin/python3 test/server/nginx_failover.py
"""
import collections
import os
import socket
import sys
import tempfile
import threading
import time
import traceback

from response_checks import KINDS, check_reply, check_stream
from server_process import LOOPBACK, LlmServer, ManagedProcess, get, metric_value, post_json, stream_sse

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
REPLICA_FLAGS = ["--parallel=4"]
START_TIMEOUT_S = 20
REQUEST_TIMEOUT_S = 60
# Long enough to be running when the replica is killed: ignore_eos makes each take every token.
LONG_TOKENS = 400

NGINX_CONFIG = """
daemon off;                  # the test (or systemd, or a container) supervises it
master_process off;          # one process: the test stops it with SIGTERM
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 256; }}
http {{
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    log_format upstream '$request $status upstream=$upstream_addr upstream_status=$upstream_status $request_time s';
    access_log {dir}/access.log upstream;

    upstream llm_servers {{
        # A replica that fails 3 times (refused connection, reset, 503) within 10 s is left
        # out for the next 10 s.
        server {host}:{port_a} max_fails=3 fail_timeout=10s;
        server {host}:{port_b} max_fails=3 fail_timeout=10s;
        keepalive 16;                          # reuse connections to the replicas
    }}
    server {{
        listen {host}:{port};
        client_max_body_size 16m;              # as llm_server's --max-body
        location / {{
            proxy_pass http://llm_servers;
            proxy_http_version 1.1;            # chunked streaming and keep-alive upstream
            proxy_set_header Connection "";
            proxy_buffering off;               # SSE: pass each token on as it comes
            proxy_read_timeout 300s;           # the longest gap between two bytes of a reply
            proxy_connect_timeout 2s;
            # A replica down, restarting (503 while loading) or with a full queue (503): try the
            # other. non_idempotent: a completion changes nothing, so a POST the failed replica
            # had received may be sent again. A stream whose first bytes went out is not retried.
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries 2;
            add_header X-Upstream $upstream_addr always;   # which replica answered (tests, logs)
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def start_nginx(work_dir, port_a, port_b):
    port = free_port()
    config_path = os.path.join(work_dir, "nginx.conf")
    with open(config_path, "w") as config:
        config.write(NGINX_CONFIG.format(dir=work_dir, host=LOOPBACK, port=port, port_a=port_a, port_b=port_b))
    nginx = ManagedProcess([NGINX, "-p", work_dir, "-c", config_path, "-e", os.path.join(work_dir, "error.log")])
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and nginx.proc.poll() is None:
        try:
            socket.create_connection((LOOPBACK, port), timeout=1).close()
            return nginx, "http://%s:%d" % (LOOPBACK, port)
        except OSError:
            time.sleep(0.05)
    nginx.stop(check=False)
    raise RuntimeError("nginx did not listen on port %d within %d s:\n%s\n%s"
                       % (port, START_TIMEOUT_S, nginx.log_tail(), tail(os.path.join(work_dir, "error.log"))))


def tail(path, lines=30):
    try:
        with open(path) as log:
            return "".join(log.readlines()[-lines:])
    except OSError as error:
        return str(error)


def body_for(kind, stream, max_tokens, n, long=False):
    body = {"max_tokens": max_tokens, "temperature": 0.7, "seed": n}
    if kind == "chat":
        body["messages"] = [{"role": "user", "content": "Tell me a story about Tom, number %d." % n}]
    else:
        body["prompt"] = "Story %d. Once upon a time" % n
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    if long:
        body["ignore_eos"] = True
    return body


Outcome = collections.namedtuple("Outcome", "kind stream upstreams error")
Outcome.__doc__ = """A request sent through nginx: upstreams, the replicas nginx tried in order
(its X-Upstream header); error, None or what was wrong with the reply."""


def send(base_url, n, long=False):
    """Request n through nginx, its kind and streaming chosen by n: an Outcome."""
    kind, stream = ("chat", "completion")[n % 2], (n // 2) % 2 == 0
    max_tokens = LONG_TOKENS if long else 8 + n % 9
    body, path = body_for(kind, stream, max_tokens, n, long), KINDS[kind][0]
    upstreams = []
    try:
        if stream:
            reply = stream_sse(base_url, path, body, timeout=REQUEST_TIMEOUT_S)
            upstreams = reply.headers.get("x-upstream", "").replace(" ", "").split(",")
            check_stream(kind, reply, max_tokens)
        else:
            status, headers, reply = post_json(base_url, path, body, timeout=REQUEST_TIMEOUT_S)
            upstreams = headers.get("x-upstream", "").replace(" ", "").split(",")
            check_reply(kind, status, headers, reply, max_tokens)
        return Outcome(kind, stream, upstreams, None)
    except Exception as error:  # the caller decides whether this request was allowed to fail
        return Outcome(kind, stream, upstreams, "%s: %s" % (type(error).__name__, error))


def send_concurrently(base_url, numbers, long=False, started=None):
    """Sends the requests numbered `numbers` at once, one thread each; `started` (optional) runs
    once they are under way. Returns {n: send(...)}."""
    results = {}

    def client(n):
        results[n] = send(base_url, n, long)

    threads = [threading.Thread(target=client, args=(n,)) for n in numbers]
    for thread in threads:
        thread.start()
    try:
        if started:
            started()
    finally:
        for thread in threads:
            thread.join(timeout=REQUEST_TIMEOUT_S * 3)
    return results


def served(replica):
    """Requests of both endpoints the replica answered with 200, from its /metrics."""
    status, _, text = get(replica.base_url, "/metrics")
    if status != 200:
        raise RuntimeError("GET %s/metrics: HTTP %d" % (replica.base_url, status))
    return sum(metric_value(text, "llm_http_requests_total", path=KINDS[k][0], status="200") for k in KINDS)


def wait_until_running(replica, count, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, _, text = get(replica.base_url, "/metrics")
        if status == 200 and metric_value(text, "llm_requests_running") >= count:
            return True
        time.sleep(0.02)
    return False


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, condition, detail=""):
        print("%s %s%s" % ("ok  " if condition else "FAIL", name, "" if condition else ": " + detail))
        self.passed, self.failed = self.passed + bool(condition), self.failed + (not condition)


def print_outcomes(outcomes):
    for n, o in sorted(outcomes.items()):
        print("  request %d (%s, %s): via %s: %s" % (n, o.kind, "streamed" if o.stream else "not streamed",
                                                    " then ".join(o.upstreams), (o.error or "ok")[:140]))


def run(report, replica_a, replica_b, nginx_url):
    a, b = ("%s:%d" % (LOOPBACK, r.port) for r in (replica_a, replica_b))
    print("replica A pid %d at %s, replica B pid %d at %s, nginx at %s"
          % (replica_a.pid, replica_a.base_url, replica_b.pid, replica_b.base_url, nginx_url))
    status, _, _ = get(nginx_url, "/health")
    report.check("GET /health through nginx: 200", status == 200, "HTTP %d" % status)

    print("-- 1. spread: 20 requests through nginx, 4 at a time")
    spread = {}
    for first in range(0, 20, 4):
        spread.update(send_concurrently(nginx_url, range(first, first + 4)))
    errors = {n: o.error for n, o in spread.items() if o.error}
    report.check("20 requests through nginx: all complete and valid", not errors, repr(errors))
    by_header = [sum(1 for o in spread.values() if o.upstreams == [address]) for address in (a, b)]
    by_metrics = [served(replica) for replica in (replica_a, replica_b)]
    print("served (X-Upstream / /metrics): A %d / %d, B %d / %d"
          % (by_header[0], by_metrics[0], by_header[1], by_metrics[1]))
    report.check("each replica's /metrics counts the requests nginx sent it, and both served some",
                 by_header == by_metrics and min(by_metrics) > 0 and sum(by_metrics) == 20,
                 "by X-Upstream %r, by /metrics %r" % (by_header, by_metrics))

    print("-- 2. crash: 8 requests of %d tokens; replica A killed (SIGKILL) while it runs some" % LONG_TOKENS)
    killed = {}

    def kill_a_when_busy():
        killed["running"] = wait_until_running(replica_a, 2, REQUEST_TIMEOUT_S)
        replica_a.kill()

    crash = send_concurrently(nginx_url, range(100, 108), long=True, started=kill_a_when_busy)
    report.check("replica A was running requests when it was killed", killed.get("running"))
    print_outcomes(crash)
    cut = [n for n, o in crash.items() if o.error and o.stream and o.upstreams == [a]]
    retried = [n for n, o in crash.items() if not o.error and o.upstreams == [a, b]]
    print("  %d streams A had begun were cut short; %d requests were retried on B by nginx" % (len(cut), len(retried)))
    unexpected = {n: o for n, o in crash.items() if o.error and n not in cut}
    report.check("every request fails only if it is a stream replica A had begun", not unexpected, repr(unexpected))

    print("-- 3. after: 10 new requests through nginx, 2 at a time")
    after = {}
    for first in range(200, 210, 2):
        after.update(send_concurrently(nginx_url, range(first, first + 2)))
    print_outcomes(after)
    errors = {n: o.error for n, o in after.items() if o.error}
    report.check("10 new requests after the crash: all complete and valid", not errors, repr(errors))
    report.check("all of them were answered by replica B", all(o.upstreams[-1:] == [b] for o in after.values()))
    answered_b = sum(1 for o in list(crash.values()) + list(after.values()) if not o.error and o.upstreams[-1:] == [b])
    served_b = served(replica_b) - by_metrics[1]
    report.check("replica B's /metrics counts what it answered since the spread (%d)" % answered_b,
                 served_b == answered_b, "counted %d" % served_b)


def main():
    report = Report()
    processes = []
    with tempfile.TemporaryDirectory(prefix="llm_nginx_") as work_dir:
        try:
            replica_a = LlmServer(REPLICA_FLAGS)
            processes.append(replica_a)
            replica_b = LlmServer(REPLICA_FLAGS)
            processes.append(replica_b)
            nginx, nginx_url = start_nginx(work_dir, replica_a.port, replica_b.port)
            processes.append(nginx)
            run(report, replica_a, replica_b, nginx_url)
            report.check("replica B and nginx exit with status 0 on SIGTERM",
                         replica_b.stop(check=False) == 0 and nginx.stop(check=False) == 0,
                         "B %s, nginx %s" % (replica_b.proc.returncode, nginx.proc.returncode))
        except Exception:
            traceback.print_exc()
            report.failed += 1
            for process in processes:
                print("last lines of %s (pid %d):\n%s" % (os.path.basename(process.argv[0]), process.pid,
                                                          process.log_tail(15)))
            print("nginx error.log:\n" + tail(os.path.join(work_dir, "error.log")))
        finally:
            for process in reversed(processes):
                process.stop(check=False)
        if report.failed:
            print("nginx access.log:\n" + tail(os.path.join(work_dir, "access.log"), 60))
    print("%d passed, %d failed" % (report.passed, report.failed))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
