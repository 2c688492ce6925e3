"""The upgrade guide's change window, walked end to end on the real API server with the operator
stand-in (operator_standin.py) playing the operator, exactly as the README's walk-through does:
check, the Setting, verify --wait, a crash-loop, recover, the Setting on again.

The assertions are about end states and exit codes (what a user sees at each step), not about the
wording of any one command, so the walk survives changes to recover, setting and --wait."""

import json
import os
import subprocess
import sys
import time

import pytest

from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
API = f"/apis/{GROUP}/{VERSION}"
SETTING = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings/model-deployment-kv-cache-dtype-owned"
NS = "llm-prod"


def plugin(cluster, *args, timeout=240):
    """The plugin as the user runs it, from a working directory of its own (recover's backups go there)."""
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=cluster.workdir, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


SCENE = os.path.join(ROOT, "examples", "change-window")   # the README's walk-through loads the same


def wait_for(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def crash_looping(cluster):
    for pod in cluster.request_ok("GET", f"/api/v1/namespaces/{NS}/pods")["items"]:
        for cs in (pod.get("status") or {}).get("containerStatuses") or ():
            if ((cs.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff":
                return True
    return False


@pytest.fixture(scope="module")
def fresh_cluster(cluster_binaries):
    """A cluster of its own, as `scripts/demo-cluster up` gives one: `setting on` asks check about the
    whole cluster, so other tests' objects must not be in it."""
    harness = sys.modules["kvcache_test_harness"]
    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-walk")
    try:
        c.start()
    except harness.ClusterError as e:
        pytest.fail(f"could not start the walk-through's cluster: {e}", pytrace=False)
    try:
        yield c
    finally:
        c.stop()


def test_the_change_window_end_to_end(fresh_cluster):
    cluster = fresh_cluster
    cluster.load_examples(SCENE)            # what `scripts/demo-cluster up --examples` loads
    with cluster.operator_standin([NS]) as standin:
        # 0. before the window: the Setting off, every replica running without the flag
        code, out, err = plugin(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 0, err

        # 1. check every Binding first: sgl-fp8's dtype is one SGLang rejects
        code, out, err = plugin(cluster, "check", "-n", NS)
        assert code == 1, out + err
        assert "sgl-fp8" in out

        # 2. the gate refuses to turn the Setting on while check finds errors; nothing changes
        code, out, err = plugin(cluster, "setting", "on", "--yes")
        assert code != 0, out + err
        assert cluster.request_ok("GET", SETTING)["spec"]["value"] == "false"

        # 3. the upgrade turns it on anyway (the guide's patch): the SGLang rollout crash-loops
        cluster.request_ok("PATCH", SETTING, {"spec": {"value": "true"}}, content_type="application/merge-patch+json")
        assert wait_for(lambda: crash_looping(cluster)), "no replica crash-looped"
        code, out, err = plugin(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 1, out + err         # ends at once on a confirmed rejection, not at the timeout
        assert "REJECTED" in out
        assert f"recover sgl-fp8 -n {NS}" in out + err

        # 4. the escape: the Setting off renders nothing, and every replica rolls back to running
        code, out, err = plugin(cluster, "setting", "off", "--yes")
        assert code == 0, out + err
        code, out, err = plugin(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 0, out + err
        assert not crash_looping(cluster)

        # 5. recover: a new Binding with a spelling SGLang accepts, the deployment recreated on it
        code, out, err = plugin(cluster, "recover", "sgl-fp8", "-n", NS, "--apply", "--yes", timeout=300)
        assert code == 0, out + err
        bindings = {b["metadata"]["name"]: b for b in
                    cluster.request_ok("GET", f"{API}/namespaces/{NS}/kvcachepoolbindings")["items"]}
        assert "sgl-fp8" not in bindings
        new = [b for b in bindings.values() if b["metadata"]["name"] != "chat-bf16"]
        assert len(new) == 1 and new[0]["spec"]["domain"]["dtype"] not in ("fp8", "auto")
        assert new[0]["spec"]["domain"]["name"] != "sgl"

        # 6. the Setting on again (recover may already have done it: then this is a no-op)
        if cluster.request_ok("GET", SETTING)["spec"]["value"] != "true":
            code, out, err = plugin(cluster, "setting", "on", "--yes", "--wait")
            assert code == 0, out + err

        # 7. the end state: every replica runs its Binding's dtype, and check is clean
        code, out, err = plugin(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m", "-o", "json")
        assert code == 0, err
        report = json.loads(out.strip().splitlines()[0] if out.strip().startswith("{\"") else out)
        assert report["summary"]["total"] == report["summary"]["OK"] == 3, report["summary"]
        assert {i["expected"] for i in report["items"]} == {"bfloat16", new[0]["spec"]["domain"]["dtype"]}
        code, out, err = plugin(cluster, "check", "-n", NS)
        assert code == 0, out + err
        assert cluster.request_ok("GET", SETTING)["status"]["value"] == "true"
        assert not crash_looping(cluster)
    assert standin.errors == []
