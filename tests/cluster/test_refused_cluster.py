"""A create the API server (or the operator) refuses, on a real kube-apiserver: `verify` and
`verify --wait` end at once quoting the refusal, instead of waiting for replicas that will not
come (issue 48 item 4); where events may not be listed, they say so.

The Event objects are written as the real controllers write them (there is no controller-manager
here, and no webhook server):
- the ReplicaSet controller, kubernetes pkg/controller/controller_utils.go RealPodControl.createPods:
  `Recorder.Eventf(object, v1.EventTypeWarning, FailedCreatePodReason, "Error creating: %v", err)`,
  reason `FailedCreate`, source component `replicaset-controller` (replica_set.go's recorder), the
  involvedObject the ReplicaSet; `err` an admission denial as the API server words it
  (apiserver/pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr:
  `pods "NAME" is forbidden: admission webhook "WEBHOOK" denied the request: MESSAGE`);
- the StatefulSet controller, pkg/controller/statefulset/stateful_pod_control.go recordPodEvent:
  `create Pod NAME in StatefulSet SET failed error: ERR`, component `statefulset-controller`;
- the operator, gpustack-operator model_deployment.go convergeModelDeployment: a pass that could
  not build a replica records `RenderFailed` (model_deployment_events.go) on the ModelDeployment
  with the renderer's error (its test: "has no runner backend").
The webhook's message is the injection webhook's own (pod_kv_cache_inject.go checkOwnedKeys at
1bd5867: `container %q already passes %s, so it already has a KV cache configured; two of them on
one command line is undiagnosable`); its name is from zz_generated.webhooks.go.
"""

import json
import os
import subprocess
import sys
import time

import pytest

import objects as o
from kubectl_kvcache.operator.api import GROUP

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEBHOOK = "mutate.gpustack-worker-kvcache.core.v1.pod"
DENIED = ('container "main" already passes --kv-transfer-config, so it already has a KV cache configured; two '
          'of them on one command line is undiagnosable')
RENDER = 'role "server": manufacturer "acme" has no runner backend'


def set_setting(cluster, value):
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": value}, "status": {"value": value, "editable": True}})


def run(cluster, *argv, kubeconfig=None, timeout=120):
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig",
                        kubeconfig or cluster.admin_kubeconfig], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - started


def event(name, ns, involved, reason, message, component, count=3):
    """A core/v1 Event as client-go's recorder writes one (record/event.go makeEvent: type,
    reason, message, source, first/last timestamps and count; the name `<object>.<hex>`)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{int(time.time() * 1e6):x}", "namespace": ns},
            "involvedObject": involved, "reason": reason, "message": message, "type": "Warning",
            "source": {"component": component}, "firstTimestamp": now, "lastTimestamp": now, "count": count,
            "reportingComponent": component, "reportingInstance": ""}


def held_deployment(cluster, ns):
    """A pool-attached ModelDeployment with one replica and no Pod, and the operator's RenderFailed."""
    md, = cluster.apply(o.deployment("chat", ns=ns, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": 1}]),
                        with_status=False)
    cluster.apply(o.binding("b1", "fp8", ns=ns), with_status=False)
    involved = {"kind": "ModelDeployment", "namespace": ns, "name": "chat", "uid": md["metadata"]["uid"],
                "apiVersion": md["apiVersion"], "resourceVersion": md["metadata"]["resourceVersion"]}
    cluster.apply(event("chat", ns, involved, "RenderFailed", RENDER, "gpustack-worker"), with_status=False)
    return md


def test_wait_ends_at_once_on_a_create_the_operator_refuses_and_verify_fails_quoting_it(cluster):
    """Before: `verify --wait` ran to its --timeout saying "wait for the operator to create it"."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused")
    held_deployment(cluster, ns)
    code, out, err, took = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "60s")
    assert code == 1 and took < 30, (took, err)
    assert f"ModelDeployment {ns}/chat: 1 replica without a Pod that the operator cannot create; it says: " \
           f"RenderFailed (x3, last " in err, err
    assert RENDER in err and "timed out" not in err, err
    assert out.splitlines()[1].split()[-1] == "NO-POD", out
    # the one-shot verify: the NO-POD row quotes it, and the verdict names the refusal (json)
    code, out, err, _ = run(cluster, "verify", "-n", ns, "-o", "json")
    report = json.loads(out)
    assert code == 1
    item, = report["items"]
    assert item["status"] == "NO-POD" and f"the operator cannot create it: RenderFailed" in item["reason"]
    assert item["fix"].startswith("the operator cannot create it (RenderFailed): fix what its event names")
    deployment, = report["deployments"]
    assert deployment["createRefused"]["message"] == RENDER and deployment["notCreated"] == 1
    reason, = [r for r in report["verdict"]["reasons"] if r["code"] == "create-refused"]
    assert (reason["kind"], reason["name"], reason["fails"]) == ("ModelDeployment", "chat", True)
    # describe says where the replica's release comes from, never "version from None"
    code, out, _, _ = run(cluster, "verify", "-n", ns, "-o", "describe")
    assert "Engine:" in out and "version from spec.engine.version" in out and "None" not in out, out


def test_an_event_from_before_the_spec_was_last_written_is_not_taken_for_it(cluster):
    """A refusal said before the user changed the spec is about the spec that was: waited past."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-old")
    md = held_deployment(cluster, ns)
    time.sleep(1.1)             # the next write is a later second than the event's last time
    md["spec"]["roles"][0]["extraArgs"] = ["--max-model-len", "4096"]
    cluster.apply(md, with_status=False)
    code, out, err, _ = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "3s")
    assert code == 1 and "timed out after 0m03s" in err and "cannot create" not in err, err


def refused_replicaset(cluster, ns):
    """An opt-in ReplicaSet with one Pod that cannot create the next one: its FailedCreate quotes
    the injection webhook's refusal (the message, as the controller records it)."""
    cluster.apply(o.binding("b1", "fp8", ns=ns), with_status=False)
    rs, = cluster.apply({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                         "metadata": {"name": "web-7d4b9c", "namespace": ns},
                         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                  "template": {"metadata": {"labels": {"app": "web"}},
                                               "spec": {"containers": [{"name": "main", "image": "x"}]}}}},
                        with_status=False)
    pod = o.injected_pod("web-7d4b9c-abcde", "b1", ns=ns,
                         containers=[o.container("main", command=["vllm", "serve", "m"],
                                                 args=["--kv-cache-dtype", "fp8"], image="vllm/vllm-openai:v0.29.0")])
    pod["metadata"].setdefault("labels", {})["app"] = "web"
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c",
                                           "uid": rs["metadata"]["uid"], "controller": True}]
    cluster.apply(pod, with_status=False)
    denied = (f'Error creating: pods "web-7d4b9c-fghij" is forbidden: admission webhook "{WEBHOOK}" denied the '
              f'request: {DENIED}')
    cluster.apply(event("web-7d4b9c", ns, {"kind": "ReplicaSet", "namespace": ns, "name": "web-7d4b9c",
                                           "uid": rs["metadata"]["uid"], "apiVersion": "apps/v1"},
                        "FailedCreate", denied, "replicaset-controller", count=13), with_status=False)
    return denied


def test_an_injection_refused_by_the_webhook_fails_verify_quoting_the_replicasets_failedcreate(cluster):
    """The opt-in Pods' ReplicaSet cannot create the next one: the webhook's refusal is quoted."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-rs")
    denied = refused_replicaset(cluster, ns)
    code, out, err, _ = run(cluster, "verify", "-n", ns, "-o", "json")
    assert code == 1, err
    reason, = [r for r in json.loads(out)["verdict"]["reasons"] if r["code"] == "create-refused"]
    assert (reason["kind"], reason["name"], reason["fails"]) == ("ReplicaSet", "web-7d4b9c", True)
    assert "the injection webhook refuses them: FailedCreate (x13, last " in reason["message"]
    assert reason["message"].endswith(denied), reason
    code, out, err, _ = run(cluster, "verify", "-n", ns)
    assert code == 1 and f"ReplicaSet {ns}/web-7d4b9c cannot create its Pods" in err, err


@pytest.mark.parametrize("fmt,beside", [("table", True), ("json", True), ("table", False)])
def test_wait_ends_at_once_on_an_opt_in_replicasets_failedcreate(cluster, fmt, beside):
    """Issue 48 item 4, the injection webhook's half: `verify --wait` followed deployments only, so
    an opt-in ReplicaSet whose next Pod the webhook refuses was waited out to --timeout beside a
    deployment still rolling (`beside`: one replica without a Pod, nothing refused), and alone
    ended at once "nothing to wait for", exit 0 (the one-shot verify already failed on it). It
    ends at once: outcome refused, the one-shot's create-refused reason, the refusal quoted."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-rs-wait")
    denied = refused_replicaset(cluster, ns)
    if beside:
        cluster.apply(o.deployment("chat", ns=ns, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": 1}]),
                      with_status=False)
    code, out, err, took = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "20s", "-o", fmt, timeout=60)
    assert code == 1 and took < 10 and "timed out" not in err, (took, err)
    assert f"ReplicaSet {ns}/web-7d4b9c cannot create its Pods: the injection webhook refuses them: " \
           f"FailedCreate (x13, last " in err, err
    assert denied in err, err
    if fmt == "table" and beside:       # the replica left, on stdout
        assert [line.split()[-1] for line in out.splitlines()[1:]] == ["NO-POD"], out
    if fmt == "json":
        verdict = json.loads(out)["verdict"]
        codes = [r["code"] for r in verdict["reasons"]]
        assert "wait-refused" in codes and verdict["exitCode"] == 1, verdict
        reason, = [r for r in verdict["reasons"] if r["code"] == "create-refused"]
        assert (reason["kind"], reason["name"], reason["fails"]) == ("ReplicaSet", "web-7d4b9c", True)
        assert reason["message"].endswith(denied), reason


def test_without_rbac_for_events_it_says_so_instead_of_waiting_silently(cluster):
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-rbac")
    held_deployment(cluster, ns)
    user = "kvcache-no-events"
    config = cluster.add_user(user)
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
         "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]},
                   {"apiGroups": [GROUP], "resources": ["*"], "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["gpustack.ai"], "resources": ["settings"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}])
    code, out, err, _ = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "3s", kubeconfig=config)
    assert code == 1 and "timed out after 0m03s" in err, err
    assert err.count(f"note: not allowed to list events in namespace {ns}: whether the Pods of 1 object short of "
                     f"Pods are refused creation (FailedCreate) is not read") == 1, err


def test_a_deployment_whose_create_the_webhook_refuses_is_not_waited_out(cluster):
    """Issue 48 item 4: a ModelDeployment passing its own --kv-cache-dtype while the Setting is on
    (which `validate.worker.gpustack.ai.v1alpha1.modeldeployment` refuses on create: here stored
    because no webhook runs) made `verify --wait` run to its timeout. With no Pod at all it ends
    at once, naming the entries to remove; one that has Pods (stored before the Setting went on)
    is judged by its Pods as before."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-spec")
    cluster.apply([o.binding("b1", "fp8", ns=ns),
                   o.deployment("chat", ns=ns, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": 1,
                                                       "extraArgs": ["--kv-cache-dtype", "fp8_e5m2"]}])],
                  with_status=False)
    code, out, err, took = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "60s")
    assert code == 1 and took < 30 and "timed out" not in err, (took, err)
    assert (f"ModelDeployment {ns}/chat: 1 replica without a Pod, and none can be created as the spec stands: "
            f"admission webhook 'validate.worker.gpustack.ai.v1alpha1.modeldeployment' refuses this spec on create "
            f"and update: spec.roles[0].extraArgs[0]: --kv-cache-dtype is set by the operator") in err, err
    assert "  fix: remove spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1] from ModelDeployment chat" in err, err
    code, out, err, _ = run(cluster, "verify", "-n", ns, "-o", "json")
    reason, = [r for r in json.loads(out)["verdict"]["reasons"] if r["code"] == "create-refused"]
    assert code == 1 and reason["name"] == "chat" and "cannot be created as its spec stands" in reason["message"]


def test_a_refusal_said_while_waiting_ends_the_wait_within_the_polling_interval(cluster):
    """The operator's events are read again every 5 s while replicas have no Pod, with no other
    event to wake the wait: a refusal said after the wait began ends it then, not at --timeout."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-late")
    md, = cluster.apply(o.deployment("chat", ns=ns, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": 1}]),
                        with_status=False)
    cluster.apply(o.binding("b1", "fp8", ns=ns), with_status=False)
    p = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", "verify", "-n", ns, "--wait", "--timeout", "90s",
                          "--kubeconfig", cluster.admin_kubeconfig], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        seen = p.stderr.readline()
        assert seen.startswith("rollout: 1 NO-POD"), seen
        time.sleep(1.0)
        said = time.monotonic()
        involved = {"kind": "ModelDeployment", "namespace": ns, "name": "chat", "uid": md["metadata"]["uid"],
                    "apiVersion": md["apiVersion"]}
        cluster.apply(event("chat", ns, involved, "RenderFailed", RENDER, "gpustack-worker"), with_status=False)
        out, err = p.communicate(timeout=60)
        took = time.monotonic() - said
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1 and took < 8, (took, err)
    assert "that the operator cannot create; it says: RenderFailed" in err, err


def test_watch_alone_ends_with_the_refusal_the_one_shot_verify_fails_on(cluster):
    """`verify --watch` without --wait, at --timeout, ends with the one-shot verify's verdict: the
    opt-in ReplicaSet's FailedCreate (read once as it ends) fails it, quoted. It ended PASSED,
    exit 0 (the one Pod there runs its expected value)."""
    set_setting(cluster, "true")
    ns = cluster.new_namespace("refused-rs-watch")
    denied = refused_replicaset(cluster, ns)
    code, out, err, took = run(cluster, "verify", "-n", ns, "--watch", "--timeout", "3s", timeout=60)
    assert code == 1 and took < 30, (code, took, err)
    verdict, = [line for line in err.splitlines() if line.startswith("verdict: ")]
    assert verdict.startswith("verdict: FAILED (exit code 1): ReplicaSet "), err
    assert f"{ns}/web-7d4b9c cannot create its Pods: the injection webhook refuses them: FailedCreate (x13" in verdict
    assert verdict.endswith(denied), verdict
