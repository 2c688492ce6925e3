"""Watch faults the real API server cannot be made to produce on demand: connections that drop
(reconnects are bounded, with backoff) and a watch the server ends at once. The one fake server
(tests/fakeserver.py) speaks just enough of the API (discovery, lists with a resourceVersion,
streamed watch lines); the real kube client and the real command run against it."""

import io
import json
import threading

import pytest

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.kube import watch as kube_watch
from kubectl_kvcache.operator.api import GROUP, VERSION


def listing(items):
    return {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items}


def running_pod():
    pod = o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))
    pod["metadata"]["resourceVersion"] = "11"
    pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                                                "state": {"running": {}}}]}
    return pod


class Cluster:
    """Just enough of the API on the one fake server (tests/fakeserver.py): discovery, lists with a
    resourceVersion, and the Pods' watch as `pod_watch(n)` says for its n-th request ("drop": the
    connection breaks before an answer, "empty": the server ends it at once, else the events);
    other watches stay quiet until their timeout."""

    def __init__(self, pod_watch, deployments=True):
        self.pod_watch = pod_watch
        self.deployments = deployments
        self.pod_watches = 0
        self.lock = threading.Lock()

    def route(self, req):
        path, query = req["path"], req["query"]
        if path == "/apis/worker.gpustack.ai":
            return 200, {}, {"versions": [{"version": VERSION}], "preferredVersion": {"version": VERSION}}
        if path == f"/apis/{GROUP}/{VERSION}":
            return 200, {}, {"resources": [{"name": "modeldeployments"}, {"name": "kvcachepoolbindings"}]}
        if path == "/apis/gpustack.ai":
            return 404, {}, {"kind": "Status", "code": 404, "message": "not found"}
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": path.split("/")[-1]}}
        if query.get("watch") == "true":
            return self.watch(path, query)
        if path.endswith("/modeldeployments"):
            return 200, {}, listing([o.deployment("md")] if self.deployments else [])
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, listing([o.binding("b1", "fp8")])
        if path.endswith("/pods"):
            return 200, {}, listing([])
        return 404, {}, {"kind": "Status", "code": 404, "message": path}

    def watch(self, path, query):
        if not (path.endswith("/pods") and "model-deployment" in query.get("labelSelector", "")):
            return 200, {}, ((None, min(float(query.get("timeoutSeconds", "1")), 5)),)    # (a tuple: streamed)
        with self.lock:
            self.pod_watches += 1
            n = self.pod_watches
        what = self.pod_watch(n)
        if what == "drop":
            return None, {}, None
        if what == "empty":
            return 200, {}, ()
        return 200, {}, tuple((json.dumps(event).encode() + b"\n", 0) for event in what) + ((None, 2),)


@pytest.fixture
def serve(fake_server, monkeypatch):
    """start(pod_watch, deployments=True) -> (the Cluster, its kubeconfig), namespace `team`."""
    monkeypatch.setattr(kube_watch, "BACKOFF", 0.01)

    def start(pod_watch, deployments=True):
        cluster = Cluster(pod_watch, deployments)
        fake = fake_server(cluster.route, raw=True, namespace="team", token=None)
        return cluster, fake.kubeconfig

    return start


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
    monkeypatch.setattr(kube_watch, "MAX_RECONNECTS", 3)
    server, config = serve(lambda n: "drop")
    code, out, err = wait_verify(config)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: cannot reach the API server") and "(gave up after 3 reconnects)" in lines[-1]
    assert server.pod_watches == 4 and sum(line.startswith("error:") for line in lines) == 1


def test_a_watch_the_server_ends_at_once_backs_off_and_is_bounded(serve, monkeypatch):
    monkeypatch.setattr(kube_watch, "MAX_RECONNECTS", 2)
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


def test_nothing_to_wait_for(serve):
    server, config = serve(lambda n: "drop", deployments=False)
    code, out, err = wait_verify(config)
    assert code == 1, err           # issue 48: a wait on a scope that held nothing is no pass
    assert err.strip().splitlines()[-2:] == [
        "nothing to wait for: no pool-attached ModelDeployment in scope",
        "verdict: FAILED (exit code 1): no pool-attached engine pods found in namespace team: nothing was verified "
        "there"], err


def test_watch_with_nothing_yet_says_so_and_ends_at_its_timeout(serve):
    server, config = serve(lambda n: [], deployments=False)
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", "--watch", "--timeout", "2s", "--kubeconfig", config], stdin=io.StringIO(""),
                stdout=out, stderr=err)
    assert code == 1, err.getvalue()        # issue 48: ending at --timeout, nothing was verified (verify's verdict)
    assert out.getvalue() == ""
    assert "No pool-attached engine pods (yet: watching) found in team namespace." in err.getvalue()
    assert ("verdict: FAILED (exit code 1): no pool-attached engine pods found in namespace team: nothing was "
            "verified there") in err.getvalue().splitlines()
