"""`kubectl kvcache recover --apply` against a real kube-apiserver, the test playing the operator.

The harness has no operator, so `Operator` (a thread) does what the GPUStack Operator would, on
one namespace: it reports the Setting's spec.value in status.value, keeps each Binding's
status (phase Bound, usedBy: the ModelDeployments naming it) and its finalizer, releasing the
finalizer of a deleted Binding only once no deployment names it, and marks ModelDeployments
Available (unless the test holds one back: no spare capacity). It records when each deployment
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
            self.req("PATCH", f"{API}/namespaces/{self.ns}/modeldeployments/{name}/status",
                     {"status": {"observedGeneration": gen, "conditions": [
                         {"type": "Available", "status": "True", "observedGeneration": gen,
                          "reason": "MinimumReplicasAvailable", "message": "every role has its minimum replicas ready",
                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, MERGE)
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
            if st.get("phase") != "Bound" or (st.get("usedBy") or []) != used_by:
                self.req("PATCH", path + "/status", {"status": {"phase": "Bound", "usedBy": used_by}}, MERGE)
        for hook in list(self.hooks):
            hook(self)


def available(md):
    gen = md["metadata"].get("generation")
    return any(c.get("type") == "Available" and c.get("status") == "True" and c.get("observedGeneration") == gen
               for c in (md.get("status") or {}).get("conditions") or ())


# -- the scene --------------------------------------------------------------------------------

def _setting(value="true"):
    return {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
            "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
            "spec": {"value": value},
            "status": {"value": value, "editable": True, "description": "owned", "sensitive": False}}


def _md(ns, name, binding, engine="SGLang", version="0.5.18", extra=(), finalizers=()):
    meta = {"name": name, "namespace": ns, "labels": {"gpustack.ai/model": name},
            "annotations": {"team": "serving"}}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "metadata": meta,
            "spec": {"engine": {"name": engine, "version": version}, "kvCache": {"poolRef": {"name": binding}},
                     "model": {"name": f"org/{name}", "source": "huggingface"},
                     "roles": [{"name": "server", "kind": "server", "replicas": 1, "size": 1,
                                "extraArgs": ["--tp-size", "1", *extra]}]}}


def _binding(ns, name, pool, domain, dtype):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns, "finalizers": [FINALIZER]},
            "spec": {"poolRef": {"name": pool}, "domain": {"name": domain, "blockSize": 64, "dtype": dtype},
                     "quotaCeiling": "256Gi"}}


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
        cluster.request("PATCH", f"{API}/namespaces/{ns}/modeldeployments/alpha",
                        {"metadata": {"finalizers": None}}, content_type=MERGE)
        deadline = time.monotonic() + 10
        while "alpha" in mds(cluster, ns):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        p = plugin(cluster, *resume_argv(err), "--yes", cwd=tmp_path)
        assert p.returncode == 0, p.stderr + p.stdout
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
                                                        "size": 1}]}}, MERGE)
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
                   str(tmp_path / "b"), kubeconfig=kc, cwd=tmp_path)
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


def test_without_spare_capacity_it_times_out_and_deletes_nothing(scene, tmp_path):
    cluster, ns = scene
    with Operator(cluster, ns) as op:
        op.hold.add("alpha-fp8-e4m3")
        p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", "--timeout", "2s",
                   "--backup-dir", str(tmp_path / "b"), cwd=tmp_path)
    assert p.returncode == 2
    line = one_error_line(p.stderr)
    assert f"timed out after 2s waiting until ModelDeployment {ns}/alpha-fp8-e4m3 is available " \
           f"(no Available condition yet)" in line, line
    assert f"waiting until ModelDeployment {ns}/alpha-fp8-e4m3 is available (up to 2s)" in p.stderr
    assert "Stopped at step 6 of 16. Done: 1, 2, 3, 4, 5. Left: 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16." in p.stderr
    assert {"alpha", "beta", "alpha-fp8-e4m3"} <= set(mds(cluster, ns))


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
    cluster.apply([_binding(other, "bad", f"pool-{other}", "d", "fp8"), _md(other, "gamma", "bad")])
    try:
        with Operator(cluster, ns) as op:
            p = plugin(cluster, "recover", "sgl-fp8", "-n", ns, "--apply", "--yes", cwd=tmp_path)
            assert p.returncode == 2, p.stderr + p.stdout
            assert "Before turning it on, check -A found 1 error: the Setting is not turned on. Each with its fix:" \
                in p.stdout
            assert f"kubectl kvcache recover bad -n {other}" in p.stdout
            # the scene's own pre-existing error (other names a Binding that does not exist) does not hold it
            assert re.search(r"Turning it on does not change \d+ errors? that exists? with the Setting off too:",
                             p.stdout)
            line = one_error_line(p.stderr)
            assert line.startswith("error: refusing to turn the Setting on: check found 1 error") and "rerun" in line
            assert "Stopped at step 15 of 16" in p.stderr and setting_value(cluster) == "false"
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
