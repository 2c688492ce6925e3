"""A STAND-IN for a kubelet, for the test cluster and scripts/demo-cluster only.

The real kube-apiserver serves `pods/log` by calling the kubelet of the Pod's Node over HTTPS
(GET https://<node InternalIP>:<status.daemonEndpoints.kubeletEndpoint.Port>/containerLogs/NS/POD/C,
its client certificate from --kubelet-client-certificate, the kubelet's certificate checked with
--kubelet-certificate-authority), and `pods/proxy` by calling the Pod IP. Both go through the
"cluster" egress selector, which the harness points at a Unix socket (harness.Cluster.egress_socket).
This module serves that socket as an HTTP CONNECT proxy that dials loopback only, a loopback HTTPS
server that answers /containerLogs as pkg/kubelet/server/server.go getContainerLogs does, and one
loopback HTTP server per Pod endpoint for /metrics.

Pod IPs come from 198.18.0.0/15 (RFC 2544, benchmarking): the API server refuses to proxy to
loopback or link-local Pod IPs (pkg/registry/core/pod/strategy.go ResourceLocation ->
k8s.io/apimachinery/pkg/util/proxy IsProxyableIP), and the CONNECT proxy maps each such address
to its loopback server. Node `kvcache-node` has InternalIP 127.0.0.1.

Its Nodes (gpus.NODES: `kvcache-node`, where a Pod goes unless told otherwise, an H100; and
`gpu-a100-01`, `gpu-rtx3090-01`) all point at this one kubelet and carry the labels GPU Feature
Discovery writes for their GPU (gpus.gfd_labels: nvidia.com/gpu.product, .compute.major/.minor,
.family, ...), so a reader of the Pod's spec.nodeName finds the GPU as on a real GPU Node.

What is served (the kubelet's behaviour, from its code):
- path/validation errors: getContainerLogs' bodies and codes (400 `{"message": "Unable to decode
  query."}`, 422 `{"message": "Invalid request."}`, 404 `pod "P" does not exist`, 404
  `container "C" not found in pod "P"`);
- which container: pkg/kubelet/kubelet_pods.go validateContainerLogStatus on the Pod's status as
  stored: `previous` without lastState.terminated is 400 `previous terminated container "C" in pod
  "P" not found`; a container only waiting is 400 `container "C" in pod "P" is waiting to start:
  REASON`;
- the log options as pkg/kubelet/kuberuntime/logs ReadLogs applies them: sinceSeconds by each
  line's time, tailLines, timestamps (RFC3339Nano prefix), then limitBytes on the bytes written.

The log text itself is set by the test (or the operator stand-in) per container instance: see
set_log(); engine_lines.py produces it from the engines' own code. It keeps its state in memory:
scripts/demo-cluster runs it in the operator stand-in's process (operator_standin.py --kubelet).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import gpus
except ImportError:     # loaded by path (tests/cluster/conftest.py): its folder may not be on sys.path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpus

NODE_NAME = "kvcache-node"
POD_NET = ipaddress.ip_network("198.18.0.0/15")
MAX_QUERY_INT = 2 ** 63 - 1


def _rfc3339nano(t):
    """Go's time.RFC3339Nano in UTC, as the CRI log lines carry it (trailing zeros dropped)."""
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    frac = f"{d.microsecond:06d}000".rstrip("0")
    return d.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"



# The GPU the stand-in's Node has, as GPU Feature Discovery labels an H100 Node (NVIDIA/k8s-device-plugin
# internal/lm: gpu.compute.major/minor, gpu.family, gpu.product; verify reads them: docs/gpu.md)
GFD_LABELS = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.compute.major": "9",
              "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.count": "8"}

class _Instance:
    """One container instance's log: [(unix time, line bytes incl. newline)]."""

    def __init__(self, text, started):
        data = text.encode() if isinstance(text, str) else text
        lines = data.splitlines(keepends=True)
        self.lines = [(started + i * 0.001, ln) for i, ln in enumerate(lines)]


class KubeletStandIn:
    """The kubelet of Node `kvcache-node` for one harness.Cluster (see the module docstring).

    Use `with KubeletStandIn(cluster) as k:` or start()/stop(). set_log(ns, pod, container, text,
    previous=None) sets the current (and previous) instance's log; set_metrics(ip, port, text)
    serves /metrics there; next_ip() hands out Pod IPs.
    """

    def __init__(self, cluster, node=NODE_NAME, nodes=None):
        self.cluster = cluster
        self.node = node            # where a Pod goes unless the operator stand-in is told otherwise
        # every Node this kubelet serves: {name: gpus.Device or None (no GPU labels)}
        self.nodes = dict(gpus.NODES if nodes is None else nodes)
        self.nodes.setdefault(node, None)
        self.requests = []          # (path, query) of each /containerLogs request, for tests
        self.slow = None            # seconds between the bytes of every answer (logs, /metrics): a slow node
        self._logs = {}
        self._endpoints = {}        # (ip, port) -> (server, text holder)
        self._lock = threading.Lock()
        self._ips = POD_NET.hosts()
        self._threads = []
        self._servers = []
        self._egress = None
        self.port = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self):
        pki = os.path.dirname(self.cluster.ca_file)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(pki, "kubelet.crt"), os.path.join(pki, "kubelet.key"))
        ctx.verify_mode = ssl.CERT_REQUIRED        # the kubelet's --client-ca-file
        ctx.load_verify_locations(self.cluster.ca_file)
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        srv.daemon_threads = True
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        self.port = srv.server_address[1]
        self._serve(srv)
        self._start_egress()
        for name in self.nodes:
            self.register_node(name)
        return self

    def stop(self):
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
        if self._egress is not None:
            try:
                self._egress.shutdown(socket.SHUT_RDWR)     # wakes the accept() below (Linux)
            except OSError:
                pass
            self._egress.close()
            try:
                os.unlink(self.cluster.egress_socket)
            except OSError:
                pass
        for t in self._threads:
            t.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _serve(self, srv):
        self._servers.append(srv)
        # a short poll: stop() shuts every server down in turn (one per Pod endpoint)
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                             name="kubelet-standin", daemon=True)
        t.start()
        self._threads.append(t)

    # -- the Node ----------------------------------------------------------------------------------

    def register_node(self, name=None):
        """Create (or update) the Node with the stand-in's address and port, Ready, as a kubelet
        registers itself (pkg/kubelet/kubelet_node_status.go), with the GFD labels of its GPU."""
        c = self.cluster
        name = name or self.node
        device = self.nodes.get(name)
        labels = {"kubernetes.io/hostname": name} | (gpus.gfd_labels(device) if device else {})
        status, _ = c.request("GET", f"/api/v1/nodes/{name}")
        if status == 404:
            c.request_ok("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
        else:
            c.request_ok("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": labels}},
                         content_type="application/merge-patch+json")
        c.request_ok("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}]}},
            content_type="application/merge-patch+json")

    def next_ip(self):
        with self._lock:
            return str(next(self._ips))

    # -- content -----------------------------------------------------------------------------------

    def set_log(self, namespace, pod, container, text, previous=None, started=None):
        """The current instance's log text, and the previous (terminated) one's when given."""
        t = time.time() if started is None else started
        with self._lock:
            self._logs[(namespace, pod, container)] = (
                _Instance(text, t), None if previous is None else _Instance(previous, t - 60))

    def set_metrics(self, ip, port, text):
        """Serve `text` at http://IP:PORT/metrics (a loopback server the egress maps IP:PORT to)."""
        with self._lock:
            ep = self._endpoints.get((ip, int(port)))
            if ep is None:
                holder = {"text": text}
                srv = ThreadingHTTPServer(("127.0.0.1", 0), _metrics_handler(holder, self))
                srv.daemon_threads = True
                self._endpoints[(ip, int(port))] = (srv, holder)
                self._serve(srv)
            else:
                ep[1]["text"] = text

    def _instance(self, key, previous):
        with self._lock:
            cur, prev = self._logs.get(key, (None, None))
        return prev if previous else cur

    # -- the egress (HTTP CONNECT over the Unix socket) -------------------------------------------

    def _start_egress(self):
        path = self.cluster.egress_socket
        try:
            os.unlink(path)
        except OSError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(64)
        self._egress = s
        t = threading.Thread(target=self._accept, name="kubelet-egress", daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self):
        while True:
            try:
                conn, _ = self._egress.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(conn,), daemon=True).start()

    def _target(self, host, port):
        """Where CONNECT host:port really goes: the kubelet on loopback, a Pod endpoint's loopback
        server, or nowhere (None)."""
        if host in ("127.0.0.1", "localhost") and port == self.port:
            return ("127.0.0.1", port)
        with self._lock:
            ep = self._endpoints.get((host, port))
        return ("127.0.0.1", ep[0].server_address[1]) if ep else None

    def _connect(self, conn):
        try:
            conn.settimeout(30)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            target = None
            if len(line) == 3 and line[0] == "CONNECT":
                host, _, port = line[1].rpartition(":")
                if port.isdigit():
                    target = self._target(host.strip("[]"), int(port))
            if target is None:
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                return
            try:
                up = socket.create_connection(target, timeout=10)
            except OSError:
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
            if rest:
                up.sendall(rest)
            conn.settimeout(None)
            up.settimeout(None)
            threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()
            _pipe(conn, up)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass


def _pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


# -- /containerLogs ----------------------------------------------------------------------------------

def _int_param(query, name):
    """A PodLogOptions integer field as the parameter codec decodes it: None when absent,
    ValueError when not an int64."""
    vals = query.get(name)
    if not vals:
        return None
    v = int(vals[0])                     # ValueError: "Unable to decode query."
    if not -MAX_QUERY_INT - 1 <= v <= MAX_QUERY_INT:
        raise ValueError(name)
    return v


def _bool_param(query, name):
    vals = query.get(name)
    if not vals:
        return False
    v = vals[0]
    if v in ("true", "True", "TRUE", "1", "t", "T"):
        return True
    if v in ("false", "False", "FALSE", "0", "f", "F", ""):
        return False
    raise ValueError(name)


def _validation_error(tail, limit, since):
    """pkg/apis/core/validation ValidatePodLogOptions' checks on the fields read here."""
    return ((tail is not None and tail < 0) or (limit is not None and limit < 1)
            or (since is not None and since < 1))


def _container_names(pod):
    spec = pod.get("spec") or {}
    return {c.get("name") for key in ("containers", "initContainers", "ephemeralContainers")
            for c in spec.get(key) or ()}


def _status_error(pod, name, container, previous):
    """validateContainerLogStatus (pkg/kubelet/kubelet_pods.go): the error text, or None."""
    st = pod.get("status") or {}
    statuses = [cs for key in ("containerStatuses", "initContainerStatuses",
                               "ephemeralContainerStatuses") for cs in st.get(key) or ()]
    cs = next((s for s in statuses if s.get("name") == container), None)
    if cs is None:
        return f'container "{container}" in pod "{name}" is not available'
    last = (cs.get("lastState") or {}).get("terminated")
    state = cs.get("state") or {}
    if previous:
        if not last or not last.get("containerID"):
            return f'previous terminated container "{container}" in pod "{name}" not found'
        return None
    if state.get("running") or state.get("terminated") or last:
        return None
    if state.get("waiting") is not None:
        reason = (state.get("waiting") or {}).get("reason") or ""
        return f'container "{container}" in pod "{name}" is waiting to start: {reason}'
    return f'container "{container}" in pod "{name}" is terminated'


def _handler(kubelet):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _error(self, code, text):
            # go-restful's WriteError: the error's text as the body, text/plain
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            parts = url.path.split("/")
            if len(parts) < 2 or parts[1] != "containerLogs":
                return self._error(404, "404 page not found")
            ns, pod_name, container = (parts[2:5] + ["", "", ""])[:3]
            if not pod_name:
                return self._error(400, '{"message": "Missing podID."}')
            if not container:
                return self._error(400, '{"message": "Missing container name."}')
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            kubelet.requests.append((url.path, query))
            if "tail" in query:               # the kubelet's backwards-compatible `tail`
                if query["tail"][0] == "all":
                    query.pop("tailLines", None)
                else:
                    query["tailLines"] = query["tail"]
            try:
                previous = _bool_param(query, "previous")
                timestamps = _bool_param(query, "timestamps")
                tail = _int_param(query, "tailLines")
                limit = _int_param(query, "limitBytes")
                since = _int_param(query, "sinceSeconds")
            except ValueError:
                return self._error(400, '{"message": "Unable to decode query."}')
            if _validation_error(tail, limit, since):
                return self._error(422, '{"message": "Invalid request."}')
            status, pod = kubelet.cluster.request(
                "GET", f"/api/v1/namespaces/{urllib.parse.quote(ns)}/pods/"
                f"{urllib.parse.quote(pod_name)}")
            if status != 200 or (pod.get("spec") or {}).get("nodeName") not in kubelet.nodes:
                return self._error(404, f'pod "{pod_name}" does not exist')
            if container not in _container_names(pod):
                return self._error(404, f'container "{container}" not found in pod "{pod_name}"')
            err = _status_error(pod, pod_name, container, previous)
            if err:
                return self._error(400, err)
            inst = kubelet._instance((ns, pod_name, container), previous)
            lines = list(inst.lines) if inst else []
            if since is not None:
                cutoff = time.time() - since
                lines = [ln for ln in lines if ln[0] >= cutoff]
            if tail is not None:
                lines = lines[-tail:] if tail else []
            out = b"".join((_rfc3339nano(t).encode() + b" " if timestamps else b"") + ln
                           for t, ln in lines)
            if limit is not None:
                out = out[:limit]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            _write(self.wfile, out, kubelet.slow)

    return Handler


def _write(wfile, body, slow):
    """The body at once, or (`slow`) a byte every `slow` seconds until the reader hangs up."""
    if not slow:
        wfile.write(body)
        return
    try:
        for i in range(len(body)):
            wfile.write(body[i:i + 1])
            wfile.flush()
            time.sleep(slow)
    except OSError:
        pass


def _metrics_handler(holder, kubelet=None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if urllib.parse.urlsplit(self.path).path != "/metrics":
                body, code, ctype = b"Not Found", 404, "text/plain"
            else:   # prometheus_client's text exposition format
                body, code = holder["text"].encode(), 200
                ctype = "text/plain; version=0.0.4; charset=utf-8"
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            _write(self.wfile, body, kubelet.slow if kubelet is not None else None)

    return Handler
