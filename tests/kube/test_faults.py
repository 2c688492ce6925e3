"""Faults a real API server cannot be made to produce, on a small loopback fake server: 429/503
storms with Retry-After, a body that drips one byte at a time, continue tokens that repeat or
never end, a request that hangs until Ctrl-C. The plugin runs as it does for users (cli.main in
process, or a subprocess for signals) through a kubeconfig naming the fake server.

Also what every request carries (User-Agent, no credentials over plain http) and that a bad name
never reaches the server."""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from kubectl_kvcache import __version__, cli
from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DISCOVERY = {
    "/apis/worker.gpustack.ai": {"kind": "APIGroup", "name": "worker.gpustack.ai",
                                 "versions": [{"version": VERSION}],
                                 "preferredVersion": {"version": VERSION}},
    f"/apis/{GROUP}/{VERSION}": {"resources": [{"name": "modeldeployments"},
                                                        {"name": "kvcachepoolbindings"}]},
    "/apis/gpustack.ai": {"versions": [{"version": "v1"}], "preferredVersion": {"version": "v1"}},
    "/apis/gpustack.ai/v1": {"resources": [{"name": "settings"}]},
}
EMPTY_LIST = {"kind": "List", "metadata": {}, "items": []}


class Fake:
    """Answers with `route(request) -> (status, headers, body)`; body may be an iterable of
    (bytes, seconds to wait before them) to drip it. Records every request."""

    def __init__(self, route):
        self.route = route
        self.hang_up = False
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = {"method": self.command, "raw_path": self.path, "path": parts.path,
                       "query": {k: v[0] for k, v in parse_qs(parts.query).items()},
                       "headers": dict(self.headers.items()), "body": body}
                with fake.lock:
                    fake.requests.append(req)
                status, headers, payload = fake.route(req)
                if status is None:          # hang up without answering
                    self.close_connection = True
                    return
                if fake.hang_up:
                    self.close_connection = True       # closes after this answer, without saying so
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if isinstance(payload, (dict, list)):
                    payload = json.dumps(payload).encode()
                if isinstance(payload, (bytes, bytearray)):
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece, wait in payload:
                    time.sleep(wait)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_PATCH = do_POST = handle_one

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass        # a client that hung up (timeouts, Ctrl-C) is what these tests do

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def paths(self):
        return [r["path"] for r in self.requests]


def _sigint_default():
    """The plugin under test gets Ctrl-C as a terminal would deliver it, even when this test
    run was started in the background (where the shell leaves SIGINT ignored, and a child that
    starts with SIGINT ignored keeps it ignored, as kubectl would)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve(route):
    """A route that answers discovery and the Setting, and hands every other request to `route`."""
    def full(req):
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            return 404, {}, {"kind": "Status", "reason": "NotFound", "message": "not found"}
        return route(req)
    return full


@pytest.fixture
def fake_server(tmp_path):
    servers = []

    def start(route, raw=False):
        fake = Fake(route if raw else serve(route))
        servers.append(fake)
        kubeconfig = tmp_path / f"kubeconfig-{len(servers)}"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
            "users": [{"name": "u", "user": {"token": "secret-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u", "namespace": "llm-prod"}}]}))
        fake.kubeconfig = str(kubeconfig)
        return fake

    yield start
    for fake in servers:
        fake.close()


def run(fake, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv) + ["--kubeconfig", fake.kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def lists_empty(req):
    return 200, {}, EMPTY_LIST


# -- what every request carries ------------------------------------------------------------

def test_user_agent_names_the_plugin_and_its_version(fake_server):
    fake = fake_server(lists_empty)
    code, out, err = run(fake, "verify")
    assert code == 0, err
    agents = {r["headers"].get("User-Agent") for r in fake.requests}
    assert agents == {f"kubectl-kvcache/{__version__}"}


def test_no_credentials_over_plain_http_as_client_go(fake_server):
    """client-go reads a user's credentials only for a TLS server: the token never crosses a
    plain-http connection."""
    fake = fake_server(lists_empty)
    code, _, err = run(fake, "verify")
    assert code == 0, err
    assert all("Authorization" not in r["headers"] for r in fake.requests)


# -- names never become paths ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["../secrets/hf-token", "pod/log", "pod/proxy/metrics", "x?watch=1", "X",
                                  "a..b", "a-", "a" * 254, "pod%2Flog", "."])
def test_a_pod_name_that_kubernetes_would_refuse_is_refused_before_any_request(fake_server, name):
    fake = fake_server(lists_empty)
    code, out, err = run(fake, "verify", "-n", "llm-prod", name)
    assert code == 2
    assert "invalid Pod name" in one_error_line(err)
    assert fake.requests == []


@pytest.mark.parametrize("namespace", ["../kube-system", "llm.prod", "LLM", "a/b", "x?watch=1", "a" * 64])
def test_a_namespace_that_kubernetes_would_refuse_is_refused_before_any_request(fake_server, namespace):
    fake = fake_server(lists_empty)
    for argv in (("verify", "-n", namespace), ("check", "-n", namespace), ("bindings", "-n", namespace)):
        code, out, err = run(fake, *argv)
        assert code == 2
        assert "invalid namespace" in one_error_line(err)
    assert fake.requests == []


def test_a_valid_pod_name_is_one_quoted_path_segment(fake_server):
    def route(req):
        if req["path"] == "/api/v1/namespaces/llm-prod/pods/qwen.chat-0":
            return 404, {}, {"kind": "Status", "message": 'pods "qwen.chat-0" not found'}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify", "-n", "llm-prod", "qwen.chat-0")
    assert code == 2
    assert "not found" in one_error_line(err)
    assert "/api/v1/namespaces/llm-prod/pods/qwen.chat-0" in fake.paths()


@pytest.mark.parametrize("path", ["/api/v1/namespaces/llm-prod/pods/../secrets/x", "/api/v1/namespaces/./pods",
                                  "/api/v1/namespaces/llm-prod/pods/%2E%2E"])
def test_the_client_refuses_dot_segments_whoever_builds_the_path(fake_server, path):
    fake = fake_server(lists_empty)
    from kubectl_kvcache.kube.connection import Connection
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    with pytest.raises(kube.PluginError, match="refusing a request path"):
        client.get(path)
    assert fake.requests == []


def test_the_client_quotes_every_segment(fake_server):
    fake = fake_server(lists_empty)
    from kubectl_kvcache.kube.connection import Connection
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    client.get(kube.object_path("", "v1", "pods", "ns", "a?watch=1#x/y"))
    assert fake.requests[-1]["raw_path"] == "/api/v1/namespaces/ns/pods/a%3Fwatch%3D1%23x%2Fy"
    assert fake.requests[-1]["query"] == {}


# -- 429 and 503 with Retry-After --------------------------------------------------------------

def test_429_and_503_are_retried_as_retry_after_says(fake_server):
    answers = {"n": 0}

    def route(req):
        if "/pods" in req["path"]:
            answers["n"] += 1
            if answers["n"] == 1:
                return 429, {"Retry-After": "1"}, {"kind": "Status", "reason": "TooManyRequests"}
            if answers["n"] == 2:
                return 503, {"Retry-After": "0"}, {"kind": "Status", "reason": "ServiceUnavailable"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify")
    took = time.monotonic() - t0
    assert code == 0, err
    assert 1.0 <= took < 5, took       # waited the one second asked, not more
    pod_lists = [r for r in fake.requests if r["path"].endswith("/pods")]
    assert len(pod_lists) == 4         # two selectors, one of them answered twice with a retry


def test_a_storm_of_503_ends_after_a_bounded_number_of_retries_with_one_error_line(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 503, {"Retry-After": "0"}, {"kind": "Status", "reason": "ServiceUnavailable",
                                               "message": "the server is currently unable to handle the request"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    line = one_error_line(err)
    assert "503" in line and "modeldeployments" in line
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) == kube.MAX_RETRIES + 1


def test_retry_after_beyond_the_request_timeout_is_not_waited(fake_server):
    def route(req):
        if "/pods" in req["path"]:
            return 429, {"Retry-After": "30"}, {"kind": "Status", "reason": "TooManyRequests", "message": "slow down"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify", "--request-timeout", "2s")
    assert time.monotonic() - t0 < 2
    assert code == 2
    assert "429" in one_error_line(err)


def test_the_total_wait_for_retries_is_bounded(fake_server, monkeypatch):
    slept = []
    monkeypatch.setattr(kube.time, "sleep", lambda s: slept.append(s))

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            return 429, {"Retry-After": "10"}, {"kind": "Status", "reason": "TooManyRequests"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "429" in one_error_line(err)
    assert slept and sum(slept) <= kube.MAX_RETRY_WAIT
    assert len(slept) <= kube.MAX_RETRIES


# -- --request-timeout bounds the whole request ----------------------------------------------------

def test_request_timeout_bounds_a_body_that_drips(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            body = json.dumps(EMPTY_LIST).encode()
            return 200, {}, ((body[i:i + 1], 0.25) for i in range(len(body)))
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify", "--request-timeout", "1s")
    took = time.monotonic() - t0
    assert code == 2
    line = one_error_line(err)
    assert "did not answer within the request timeout of 1s" in line and fake.url in line
    assert took < 2.5, took


def test_request_timeout_bounds_headers_that_never_come(fake_server):
    release = threading.Event()

    def route(req):
        if "/pods" in req["path"]:
            release.wait(20)
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    try:
        code, out, err = run(fake, "verify", "--request-timeout", "500ms")
    finally:
        release.set()
    assert code == 2
    assert "request timeout" in one_error_line(err)
    assert time.monotonic() - t0 < 2


def test_a_slow_but_timely_body_is_read_whole(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            body = json.dumps(EMPTY_LIST).encode()
            return 200, {}, ((body[i:i + 8], 0.02) for i in range(0, len(body), 8))
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify", "--request-timeout", "5s")
    assert code == 0, err


# -- lists that never end --------------------------------------------------------------------------

def test_a_repeating_continue_token_stops_with_a_clear_error(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 200, {}, {"kind": "List", "metadata": {"continue": "same"}, "items": []}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "same continue token twice" in one_error_line(err)
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) <= 3


def test_pages_that_never_end_stop_with_a_clear_error(fake_server):
    counter = {"n": 0}

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            counter["n"] += 1
            return 200, {}, {"kind": "List", "metadata": {"continue": f"t{counter['n']}"}, "items": []}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "empty pages in a row" in one_error_line(err)
    assert counter["n"] <= kube.MAX_EMPTY_PAGES + 2


def test_every_page_is_read_when_the_tokens_move_on(fake_server):
    """The guard does not cut real paging: 3 pages of one deployment each."""
    def md(i):
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
                "metadata": {"name": f"md-{i}", "namespace": "llm-prod", "uid": f"u{i}"},
                "spec": {"engine": {"name": "vllm", "version": "0.29.0"}, "roles": []}}

    def route(req):
        if "/modeldeployments" in req["path"]:
            page = int(req["query"].get("continue", "0"))
            meta = {"continue": str(page + 1)} if page < 2 else {}
            return 200, {}, {"kind": "List", "metadata": meta, "items": [md(page)]}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "check", "-o", "json", "--chunk-size", "1")
    assert code in (0, 1), err
    assert [r["query"].get("continue") for r in fake.requests if r["path"].endswith("/modeldeployments")] == \
        [None, "1", "2"]


# -- Ctrl-C -----------------------------------------------------------------------------------------

def _hanging(release, where=("/pods", "/modeldeployments")):
    def route(req):
        if any(w in req["path"] for w in where):
            release.wait(30)
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            return 404, {}, {"kind": "Status", "reason": "NotFound", "message": "not found"}
        return 200, {}, EMPTY_LIST
    return route


@pytest.mark.parametrize("argv,where", [
    (("verify",), ("/pods", "/modeldeployments")),
    (("verify", "--request-timeout", "1m"), ("/pods", "/modeldeployments")),
    (("check",), ("/pods", "/modeldeployments")),
    (("verify",), ("/apis/",)),                  # while connecting, before the command's modules are loaded
], ids=["verify-lists", "verify-timeout-lists", "check-lists", "verify-discovery"])
def test_ctrl_c_ends_a_hung_request_at_once(fake_server, argv, where):
    release = threading.Event()
    fake = fake_server(_hanging(release, where), raw=True)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", fake.kubeconfig],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                         preexec_fn=_sigint_default)
    try:
        deadline = time.monotonic() + 20
        while not any(w in r["path"] for r in fake.requests for w in where):
            assert time.monotonic() < deadline, "the plugin never sent its lists"
            time.sleep(0.05)
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        release.set()
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, err
    assert err.strip() == "error: interrupted"
    assert took < 1.5, took


def test_without_retry_after_an_error_is_not_retried_as_client_go(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 503, {}, {"kind": "Status", "reason": "ServiceUnavailable", "message": "down"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2 and "503" in one_error_line(err)
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) == 1


def test_a_500_with_retry_after_is_retried_too(fake_server):
    answers = {"n": 0}

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            answers["n"] += 1
            if answers["n"] == 1:
                return 500, {"Retry-After": "0"}, {"kind": "Status", "reason": "InternalError"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 0, err
    assert answers["n"] == 2


def test_a_kept_alive_connection_the_server_closed_is_replaced_once(fake_server):
    fake = fake_server(lists_empty)
    fake.hang_up = True
    code, out, err = run(fake, "verify", "--chunk-size", "1")
    assert code == 0, err
    code, out, err = run(fake, "check")
    assert code == 0, err


def test_an_unreachable_server_is_one_line_naming_it(tmp_path):
    import socket as _socket

    s = _socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()       # nothing listens there now
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["verify", "--kubeconfig", str(kubeconfig)], stdin=io.StringIO(""), stdout=out, stderr=err)
    assert code == 2
    line = one_error_line(err.getvalue())
    assert f"cannot reach the API server at http://127.0.0.1:{port}" in line and "refused" in line.lower()


SETTING = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
           "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system",
                        "resourceVersion": "7"},
           "spec": {"value": "true"},
           "status": {"value": "true", "editable": True, "description": "d", "sensitive": False}}


def test_a_write_is_never_sent_twice_when_the_server_hangs_up(fake_server):
    def route(req):
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            if req["method"] == "PATCH":
                return None, None, None
            return 200, {}, SETTING
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        return 200, {}, EMPTY_LIST
    fake = fake_server(route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 2
    assert "closed the connection" in one_error_line(err)
    assert [r["method"] for r in fake.requests].count("PATCH") == 1


def test_a_write_goes_on_a_new_connection_so_a_stale_one_cannot_fail_it(fake_server):
    patched = []

    def route(req):
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            if req["method"] == "PATCH":
                patched.append(req)
                return 200, {}, dict(SETTING, spec={"value": "false"})
            return 200, {}, SETTING
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        return 200, {}, EMPTY_LIST
    fake = fake_server(route, raw=True)
    fake.hang_up = True         # every kept-alive connection is stale by the time it is reused
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 0, err
    assert len(patched) == 1


# -- the command line's own run: the snapshot is loaded while the command's modules import ------

def run_command_line(fake, *argv):
    """The real entry point in its own process (argv from the command line: the warm thread
    loads the snapshot verify and check read first)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", fake.kubeconfig],
                          capture_output=True, text=True, env=env, timeout=60)


def refuse_pods(req):
    if req["path"].endswith("/pods"):
        return 403, {}, {"kind": "Status", "reason": "Forbidden",
                         "message": 'pods is forbidden: User "u" cannot list resource "pods"'}
    return 200, {}, EMPTY_LIST


@pytest.mark.parametrize("command", ["verify", "check"])
def test_a_refusal_met_while_loading_ahead_is_the_commands_one_error_line(fake_server, command):
    fake = fake_server(refuse_pods)
    p = run_command_line(fake, command, "-n", "llm-prod")
    assert p.returncode == 2 and p.stdout == ""
    assert one_error_line(p.stderr) == ('error: forbidden: cannot list pods in namespace llm-prod: pods is '
                                        'forbidden: User "u" cannot list resource "pods"')


def test_the_snapshot_loaded_ahead_is_the_one_judged_and_each_list_is_asked_for_once(fake_server):
    fake = fake_server(lists_empty)
    p = run_command_line(fake, "verify", "-n", "llm-prod", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["items"] == []
    lists = [r["path"] for r in fake.requests if r["path"].endswith(("/pods", "/modeldeployments",
                                                                      "/kvcachepoolbindings"))]
    assert sorted(lists) == sorted(["/api/v1/namespaces/llm-prod/pods"] * 2 + [
        f"/apis/{GROUP}/{VERSION}/namespaces/llm-prod/modeldeployments",
        f"/apis/{GROUP}/{VERSION}/namespaces/llm-prod/kvcachepoolbindings"])
