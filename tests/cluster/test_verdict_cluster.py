"""One verdict on the real API server path (issue 47 item 3): `verify --observe` through the real
kube-apiserver, pods/log and pods/proxy proxied to the kubelet stand-in, where an engine says
otherwise than the prediction, or a replica's previous container died at start-up out of
KV-cache memory. Every format's verdict is the exit code (tests/cli/test_verdict_matrix.py holds
the same rule over every fixture in-process)."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import objects as o

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # engine_lines, as the stand-ins import it
from test_verdict_matrix import OOM_TAIL, said  # noqa: E402  (one reading of every format's verdict)

MERGE = "application/merge-patch+json"
VERSION = "0.18.0"


def plugin(cluster, *args, timeout=120):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONPATH=ROOT, SOURCE_DATE_EPOCH="1773133200"))
    return p.returncode, p.stdout, p.stderr


def _pod(cluster, ns, deployment):
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"app.kubernetes.io/instance={deployment}")["items"]
    assert len(pods) == 1, pods
    return pods[0]


@pytest.fixture(scope="module")
def scene(cluster, kubelet):
    """Two vLLM 0.18.0 replicas the plugin predicts OK (`--kv-cache-dtype fp8`, their Binding's):
    `said` whose engine's own start-up line and /metrics say fp8_e5m2, and `oom` crash-looping
    (exit 1) whose previous log is a start-up failure out of KV-cache memory."""
    import engine_lines

    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}}, with_status=False)
    ns = cluster.new_namespace("verdict")
    cluster.apply([o.binding("f8", "fp8", ns=ns),
                   o.deployment("said", ns=ns, version=VERSION, binding_name="f8"),
                   o.deployment("oom", ns=ns, version=VERSION, binding_name="f8")], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(6):
        standin.reconcile()
    assert not standin.errors, standin.errors
    said_pod = _pod(cluster, ns, "said")
    name = said_pod["metadata"]["name"]
    kubelet.set_log(ns, name, "main", engine_lines.vllm_startup_log(VERSION, {"kv_cache_dtype": "fp8_e5m2"}))
    kubelet.set_metrics(said_pod["status"]["podIP"], 8000, engine_lines.vllm_metrics(VERSION, "fp8_e5m2"))
    oom = _pod(cluster, ns, "oom")
    name = oom["metadata"]["name"]
    status = oom["status"]
    cs = status["containerStatuses"][0]
    cs.update(ready=False, started=False, restartCount=3,
              state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container main"}},
              lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": cs["state"]["running"]["startedAt"],
                                        "finishedAt": cs["state"]["running"]["startedAt"],
                                        "containerID": f"containerd://{name}-0"}})
    status["conditions"] = [{"type": "Ready", "status": "False"}]
    cluster.request_ok("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status},
                       content_type=MERGE)
    kubelet.set_log(ns, name, "main", "", previous=OOM_TAIL)
    return ns


FORMATS = ("table", "wide", "describe", "csv", "json", "yaml", "markdown", "junit", "sarif")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("which", ["said", "oom"])
def test_the_engines_word_fails_the_run_in_every_format(cluster, scene, which, fmt):
    """--fail-on REJECTED: only the engine's own word can fail these OK replicas (the engine
    contradicting the prediction, a start-up failure after the parse): exit 1, and every format
    says FAILED with that code (today's main says PASSED in markdown, junit and sarif)."""
    code, out, err = plugin(cluster, "verify", "-n", scene, "-l", f"app.kubernetes.io/instance={which}",
                            "--observe", "--fail-on", "REJECTED", "-o", fmt)
    assert code == 1, (out, err)
    fails, named = said(fmt, out, err)
    assert fails, (out, err)
    assert named in (None, 1), (named, out, err)
    if fmt == "json":
        item, = json.loads(out)["items"]
        assert item["status"] == "OK" and item["outcome"] == "failed", item
        if which == "said":
            assert item["observed"]["dtype"] == "fp8_e5m2" and item["observed"]["agrees"] is False
        else:
            assert item["exitCause"]["kind"] == "startup"
            assert "No available memory for the cache blocks" in item["exitCause"]["line"]
    if fmt == "junit":
        failure = ET.fromstring(out.encode()).find(".//failure")
        assert failure is not None and failure.get("type") == ("OBSERVED-DIFFERS" if which == "said"
                                                              else "STARTUP-FAILED")
