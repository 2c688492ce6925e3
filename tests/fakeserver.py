"""The one fake API server, for faults a real API server cannot be made to produce: a loopback
HTTP/1.1 server that answers each request with `route(request) -> (status, headers, body)`, a body
being JSON, bytes, or pieces streamed as chunks (dripped, a watch's lines, a hang); every request
is recorded. Command flows that need a scripted cluster rather than a faulty wire use the
in-process fake behind the real client instead (tests/fakeapi.py)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from kubectl_kvcache.operator.api import GROUP, VERSION

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
    (bytes, seconds to wait before them), not a list, to drip it as chunks (bytes None: only wait, e.g. a quiet
    watch until its timeout); status None hangs up without an answer. Records every request."""

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
                    if piece:
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
    """start(route, raw=False, namespace, token) -> a Fake with `.kubeconfig` naming it (raw: the
    route answers discovery too; token None: no credentials)."""
    servers = []

    def start(route, raw=False, namespace="llm-prod", token="secret-token"):
        fake = Fake(route if raw else serve(route))
        servers.append(fake)
        kubeconfig = tmp_path / f"kubeconfig-{len(servers)}"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
            "users": [{"name": "u", "user": {"token": token} if token else {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u", "namespace": namespace}}]}))
        fake.kubeconfig = str(kubeconfig)
        return fake

    yield start
    for fake in servers:
        fake.close()
