"""A rollout the operator holds, on the real kube-apiserver: the stand-in operator (shaped by
model_deployment_rollout.go and model_deployment_binding.go) leaves outdated replicas in place when
the KV cache connection does not resolve and says so on ReplicasUpToDate; `verify --wait` ends at
once (exit 1) naming the Binding that holds it. Also: the closed status schema prunes fields the
operator's Go type does not have."""

import os
import subprocess
import sys
import time

import objects as o
from kubectl_kvcache.operator.api import GROUP, VERSION

API = f"/apis/{GROUP}/{VERSION}"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def set_setting(cluster, value):
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": value}, "status": {"value": value, "editable": True}})


def run(cluster, *argv, timeout=120):
    """The plugin as a user runs it: a separate process."""
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


def test_wait_ends_at_once_on_a_held_rollout_naming_the_binding(cluster):
    set_setting(cluster, "true")
    ns = cluster.new_namespace("held")
    dark = f"{ns}-dark"                     # a pool that publishes no client endpoint
    cluster.apply([o.pool(dark, backends=[f"{ns}-mc"], endpoint=None)])
    md = o.deployment("chat", ns=ns, binding_name="b-held", roles=[o.role(replicas=2)])
    # two replicas rendered before, with the Binding's dtype: outdated once the connection is gone
    pods = [o.md_pod(f"chat-{n}", "chat", o.vllm_argv("fp8"), ns=ns) for n in range(2)]
    cluster.apply([o.binding("b-held", "fp8", ns=ns, pool=dark), md] + pods, with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60) and standin.errors == []
    got = cluster.request_ok("GET", f"{API}/namespaces/{ns}/modeldeployments/chat")
    cond, = [c for c in got["status"]["conditions"] if c["type"] == "ReplicasUpToDate"]
    assert (cond["status"], cond["reason"]) == ("False", "RolloutHeldByCache")
    assert cond["message"].startswith("2 of 2 replicas differ from what this pass rendered and were left in place")
    started = time.monotonic()
    code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "60s", timeout=90)
    elapsed = time.monotonic() - started
    assert code == 1, err
    assert elapsed < 30, f"--wait waited {elapsed:.0f}s on a hold"
    assert "rollout held by KVCachePoolBinding b-held" in err
    assert "RolloutHeldByCache" in err


def test_the_status_schema_prunes_what_the_operator_never_writes(cluster):
    ns = cluster.new_namespace("prune")
    md = o.md_status(o.deployment("chat", ns=ns), o.rollout_condition("UpToDate", generation=1))
    md["status"]["roles"][0].update(replicas=1, readyReplicas=1, updatedReplicas=1)
    md["status"]["observedGeneration"] = 1
    cluster.apply([md])
    got = cluster.request_ok("GET", f"{API}/namespaces/{ns}/modeldeployments/chat")["status"]
    assert "observedGeneration" not in got
    role, = got["roles"]
    assert set(role) == {"name", "desired", "ready", "quotaReserved", "unmanaged", "kind"}
