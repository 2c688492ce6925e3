"""Watch faults the real API server cannot be made to produce on demand: connections that drop
(reconnects are bounded, with backoff) and a watch the server ends at once. A small loopback
HTTP server speaks just enough of the API (discovery, lists with a resourceVersion, streamed
watch lines); the real kube.Client and the real command run against it."""

import http.server
import io
import json
import threading
import urllib.parse

import pytest

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.cli.flows import verify as verify_cmd
from kubectl_kvcache.operator.api import GROUP, VERSION


class FakeServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, pod_watch):
        super().__init__(("127.0.0.1", 0), Handler)
        self.pod_watch = pod_watch       # callable(n) -> "drop" | "empty" | list of events, n = 1, 2, ...
        self.pod_watches = 0
        self.lock = threading.Lock()


def listing(items):
    return {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items}


def running_pod():
    pod = o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))
    pod["metadata"]["resourceVersion"] = "11"
    pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                                                "state": {"running": {}}}]}
    return pod


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        path = url.path
        if path == "/apis/worker.gpustack.ai":
            return self._json({"versions": [{"version": VERSION}], "preferredVersion": {"version": VERSION}})
        if path == f"/apis/{GROUP}/{VERSION}":
            return self._json({"resources": [{"name": "modeldeployments"}, {"name": "kvcachepoolbindings"}]})
        if path == "/apis/gpustack.ai":
            return self._json({"kind": "Status", "code": 404, "message": "not found"}, 404)
        if query.get("watch") == "true":
            return self._watch(path, query)
        if path.endswith("/modeldeployments"):
            return self._json(listing([o.deployment("md")]))
        if path.endswith("/kvcachepoolbindings"):
            return self._json(listing([o.binding("b1", "fp8")]))
        if path.endswith("/pods"):
            return self._json(listing([]))
        return self._json({"kind": "Status", "code": 404, "message": path}, 404)

    def _watch(self, path, query):
        if not (path.endswith("/pods") and "model-deployment" in query.get("labelSelector", "")):
            self.send_response(200)          # other watches: quiet until the server's timeout
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            threading.Event().wait(min(float(query.get("timeoutSeconds", "1")), 5))
            self.wfile.write(b"0\r\n\r\n")
            return
        with self.server.lock:
            self.server.pod_watches += 1
            n = self.server.pod_watches
        what = self.server.pod_watch(n)
        if what == "drop":                   # the connection breaks before an answer
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in ([] if what == "empty" else what):
            line = json.dumps(event).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
        if what != "empty":
            threading.Event().wait(2)
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def serve(tmp_path, monkeypatch):
    monkeypatch.setattr(verify_cmd, "BACKOFF", 0.01)
    servers = []

    def start(pod_watch):
        server = FakeServer(pod_watch)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        config = tmp_path / "kubeconfig"
        config.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u", "namespace": "team"}}]}))
        return server, str(config)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def wait_verify(kubeconfig, *extra):
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", "--wait", "--timeout", "30s", "--kubeconfig", kubeconfig, *extra],
                stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_dropped_watches_are_reconnected_and_the_rollout_completes(serve):
    server, config = serve(lambda n: "drop" if n <= 2 else [{"type": "ADDED", "object": running_pod()}])
    code, out, err = wait_verify(config)
    assert code == 0, err
    assert server.pod_watches == 3
    assert err.count("; reconnecting") == 2 and "cannot reach the API server" in err
    assert "md-server-0" in out and "rollout complete" in err


def test_reconnects_are_bounded(serve, monkeypatch):
    monkeypatch.setattr(verify_cmd, "MAX_RECONNECTS", 3)
    server, config = serve(lambda n: "drop")
    code, out, err = wait_verify(config)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: cannot reach the API server") and "(gave up after 3 reconnects)" in lines[-1]
    assert server.pod_watches == 4 and sum(line.startswith("error:") for line in lines) == 1


def test_a_watch_the_server_ends_at_once_backs_off_and_is_bounded(serve, monkeypatch):
    monkeypatch.setattr(verify_cmd, "MAX_RECONNECTS", 2)
    server, config = serve(lambda n: "empty")
    code, out, err = wait_verify(config)
    assert code == 2
    assert "the API server ended the watch at once (gave up after 2 reconnects)" in err.strip().splitlines()[-1]
    assert server.pod_watches == 3


def test_an_error_event_410_lists_again(serve):
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                        "message": "too old resource version"}}
    server, config = serve(lambda n: [gone] if n == 1 else [{"type": "BOOKMARK", "object": {
        "kind": "Pod", "metadata": {"resourceVersion": "12"}}}, {"type": "ADDED", "object": running_pod()}])
    code, out, err = wait_verify(config)
    assert code == 0, err
    assert "its resourceVersion expired (410 Gone); listed again" in err and server.pod_watches == 2


def test_nothing_to_wait_for(serve, monkeypatch):
    server, config = serve(lambda n: "drop")
    monkeypatch.setattr(Handler, "do_GET", _without_deployments(Handler.do_GET))
    code, out, err = wait_verify(config)
    assert code == 0, err
    assert err.strip().splitlines()[-1] == "nothing to wait for: no pool-attached ModelDeployment in scope"


def _without_deployments(do_get):
    def do_GET(self):
        if self.path.split("?")[0].endswith("/modeldeployments") and "watch=true" not in self.path:
            return self._json(listing([]))
        return do_get(self)
    return do_GET


def test_watch_with_nothing_yet_says_so_and_ends_at_its_timeout(serve, monkeypatch):
    server, config = serve(lambda n: [])
    monkeypatch.setattr(Handler, "do_GET", _without_deployments(Handler.do_GET))
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", "--watch", "--timeout", "2s", "--kubeconfig", config], stdin=io.StringIO(""),
                stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert out.getvalue() == ""
    assert "No pool-attached engine pods (yet: watching) found in team namespace." in err.getvalue()
