"""A rollout the operator holds, on the real kube-apiserver: the stand-in operator (shaped by
model_deployment_rollout.go and model_deployment_binding.go) leaves outdated replicas in place when
the KV cache connection does not resolve and says so on ReplicasUpToDate; `verify --wait` ends at
once (exit 1) naming the Binding that holds it. A store blink (the pool's endpoint gone, then back)
promises no rollout and leaves the unedited replicas in place; an edit made during it rolls once
the store returns. DomainRegistered and status.kvCache as the controller writes them. Also: the
closed status schema prunes fields the operator's Go type does not have."""

import json
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


def _cond(got, kind):
    return next((c for c in got["status"].get("conditions") or () if c["type"] == kind), None)


def test_a_store_blink_holds_promises_no_rollout_and_unedited_replicas_stay(cluster):
    """The blink model_deployment_rollout.go describes (observeModelDeploymentRollout, the `held > 0`
    branch, read at 196051b8bc13c4c16c3d4725783aca69a913648f): the pool's store goes away, every
    replica differs from a render without a connector and is held; verify promises no rollout;
    the store returns, the replicas nobody edited match the render again and stay (same Pods).
    DomainRegistered and status.kvCache as model_deployment_binding.go (at
    495764e848e4ebc48308b0e7d2521e1239a70dd1) writes them: Registered throughout (the Binding's
    stored status is Ready), the projection there all along."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("blink")
    pool = o.pool(f"{ns}-pool", backends=[f"{ns}-mc"])
    cluster.apply([pool])
    md = o.deployment("chat", ns=ns, binding_name="b-blink", roles=[o.role(replicas=2)])
    cluster.apply([o.binding("b-blink", "fp8", ns=ns, pool=pool["metadata"]["name"]), md], with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60) and standin.errors == []
    path = f"{API}/namespaces/{ns}/modeldeployments/chat"

    def pods():
        listed = cluster.request_ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        return sorted(p["metadata"]["uid"] for p in listed if not p["metadata"].get("deletionTimestamp"))

    got = cluster.request_ok("GET", path)
    assert _cond(got, "ReplicasUpToDate")["reason"] == "UpToDate"
    assert _cond(got, "DomainRegistered")["reason"] == "Registered"
    assert got["status"]["kvCache"]["domain"]["dtype"] == "fp8"
    before = pods()
    assert len(before) == 2

    # the store blinks: the pool publishes no client endpoint
    cluster.set_status(pool, status={"clientEndpoint": None})
    assert standin.settle(timeout=60) and standin.errors == []
    got = cluster.request_ok("GET", path)
    held = _cond(got, "ReplicasUpToDate")
    assert (held["status"], held["reason"]) == ("False", "RolloutHeldByCache")
    assert held["message"].startswith("2 of 2 replicas differ")
    assert _cond(got, "DomainRegistered")["reason"] == "Registered"
    assert got["status"]["kvCache"]["binding"] == "b-blink"
    assert pods() == before                 # left in place
    code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "60s", timeout=90)
    assert code == 1, err
    assert f"its KVCachePool {ns}-pool" in err          # verify reads no pools: it says the pool is where to look
    assert "nothing is known to be waiting" in err
    assert "stay as they are (no rollout)" in err
    assert "roll once" not in err           # no rollout promised

    # the store returns: the replicas match the render again and stay
    cluster.set_status(pool, status={"clientEndpoint": "mc-leader.gpustack-system.svc:50051"})
    assert standin.settle(timeout=60) and standin.errors == []
    got = cluster.request_ok("GET", path)
    assert _cond(got, "ReplicasUpToDate")["reason"] == "UpToDate"
    assert pods() == before                 # nothing rolled
    code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "30s", timeout=60)
    assert code == 0, err


def test_a_blink_with_an_edit_waiting_says_the_edit_rolls(cluster):
    """Control: an edit made during the blink (a role's extraArgs) changes the rendered Pod; it waits
    with the held replicas and rolls once the store returns -- and only then."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("blinked")
    pool = o.pool(f"{ns}-pool", backends=[f"{ns}-mc"])
    cluster.apply([pool])
    md = o.deployment("chat", ns=ns, binding_name="b-blink", roles=[o.role(replicas=1)])
    cluster.apply([o.binding("b-blink", "fp8", ns=ns, pool=pool["metadata"]["name"]), md], with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60) and standin.errors == []
    cluster.set_status(pool, status={"clientEndpoint": None})
    assert standin.settle(timeout=60)
    path = f"{API}/namespaces/{ns}/modeldeployments/chat"
    cluster.request_ok("PATCH", path, {"spec": {"roles": [dict(o.role(replicas=1),
                                                               extraArgs=["--max-model-len", "8192"])]}},
                       content_type="application/merge-patch+json")
    assert standin.settle(timeout=60) and standin.errors == []
    assert _cond(cluster.request_ok("GET", path), "ReplicasUpToDate")["reason"] == "RolloutHeldByCache"
    code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "60s", timeout=90)
    assert code == 1, err
    assert "runs an earlier spec" in err and "the held replicas roll once the pool serves it" in err
    cluster.set_status(pool, status={"clientEndpoint": "mc-leader.gpustack-system.svc:50051"})
    assert standin.settle(timeout=60) and standin.errors == []
    assert _cond(cluster.request_ok("GET", path), "ReplicasUpToDate")["reason"] == "UpToDate"
    code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "30s", timeout=60)
    assert code == 0, err


def test_domain_registered_follows_the_binding_and_the_projection_is_kept(cluster):
    """model_deployment_binding.go (at 495764e848e4ebc48308b0e7d2521e1239a70dd1): DomainRegistered
    Registered on a usable Binding, BindingDeleting once it is being deleted (the deployment's claim
    holds the deletion), and status.kvCache projected all along -- written whenever the Binding is
    read, kept as it was."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("domreg")
    md = o.deployment("chat", ns=ns, binding_name="b-dom", roles=[o.role(replicas=1)])
    cluster.apply([o.binding("b-dom", "fp8", ns=ns), md], with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60) and standin.errors == []
    path = f"{API}/namespaces/{ns}/modeldeployments/chat"
    got = cluster.request_ok("GET", path)
    assert _cond(got, "DomainRegistered")["reason"] == "Registered"
    kv = got["status"]["kvCache"]
    assert (kv["binding"], kv["domain"]["dtype"]) == ("b-dom", "fp8")
    cluster.request_ok("DELETE", f"{API}/namespaces/{ns}/kvcachepoolbindings/b-dom")
    assert standin.settle(timeout=60) and standin.errors == []
    got = cluster.request_ok("GET", path)
    c = _cond(got, "DomainRegistered")
    assert (c["status"], c["reason"]) == ("False", "BindingDeleting")
    assert "the deletion waits until the deployment goes away" in c["message"]
    assert got["status"]["kvCache"] == kv
    code, out, err = run(cluster, "verify", "-n", ns, "-o", "json")
    d, = json.loads(out)["deployments"]
    assert "operatorDomain" not in d        # the Binding read (being deleted) and the condition agree
