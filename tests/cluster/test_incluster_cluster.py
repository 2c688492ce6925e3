"""deploy/'s RBAC, proven on a real API server through the in-cluster path: the manifest's
ServiceAccount, ClusterRole, Role and bindings created from the files themselves, the
ServiceAccount's token minted through the TokenRequest API (`kubectl create token`), and the
plugin run with KUBERNETES_SERVICE_HOST/PORT and the token, CA and namespace files at
/var/run/secrets/kubernetes.io/serviceaccount/, where client-go's rest.InClusterConfig reads them
(k8s.io/client-go@v0.37.2 rest/config.go InClusterConfig: the paths are constants, no override).
They get there in a private mount namespace (unshare -m, a tmpfs on /run, which /var/run points
to): nothing on the machine changes. The Job's and CronJob's own arguments succeed; each rule
taken away makes the plugin say what is forbidden. The CronJob keeps its reports in the cluster
(--apply-reports, the published PolicyReport CRDs of deploy/crds/ installed): the API server
stores them, a second run over a changed scene replaces them and deletes a namespace's stale one,
managedFields name the plugin's manager, another manager's fields stay, a dry run writes nothing."""

import copy
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

harness = sys.modules["kvcache_test_harness"]      # loaded by this folder's conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
CRDS = os.path.join(DEPLOY, "crds")
REPORTS = "/apis/wgpolicyk8s.io/v1alpha2"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Mount a tmpfs on the directory /var/run resolves to, put the files where client-go reads
# them, then run the command; all of it in this process's own mount namespace.
MOUNT = ('set -e; run=$(readlink -f /var/run); mount -t tmpfs -o size=1m,mode=0755 kvcache-sa "$run"; '
         f'mkdir -p {SA_DIR}; cp "$KVCACHE_SA_FILES"/token "$KVCACHE_SA_FILES"/ca.crt '
         f'"$KVCACHE_SA_FILES"/namespace {SA_DIR}/; exec "$@"')


def manifest(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def container_args(obj):
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"] == ["kubectl-kvcache"]
    return container["args"]


def _unshare_works():
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        "mount -t tmpfs none /mnt && umount /mnt"], capture_output=True, text=True)
    return None if p.returncode == 0 else f"no private mount namespace here: {p.stderr.strip()}"


@pytest.fixture(scope="module")
def incluster(cluster, tmp_path_factory):
    why = _unshare_works()
    if why:
        pytest.skip(f"the in-cluster files need a private mount namespace: {why}")
    rbac = manifest("rbac.yaml")
    cluster.install_crds(CRDS)          # the published PolicyReport (and OpenReports) CRDs, as checked in
    cluster.apply(rbac, with_status=False)
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}, "status": {"value": "true", "editable": True}})
    seeded = cluster.load_example_namespaces(os.path.join(ROOT, "examples", "cluster.json"), "incluster-")
    sa = next(o for o in rbac if o["kind"] == "ServiceAccount")
    name, namespace = sa["metadata"]["name"], sa["metadata"]["namespace"]
    token = cluster.kubectl("create", "token", name, "-n", namespace, "--duration", "1h", check=True).stdout.strip()
    files = tmp_path_factory.mktemp("serviceaccount")
    (files / "token").write_text(token)
    shutil.copy(cluster.ca_file, files / "ca.crt")
    (files / "namespace").write_text(namespace)
    home = tmp_path_factory.mktemp("home")           # no ~/.kube/config: kubectl's in-cluster fallback
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "KVCACHE_TRACE"))}
    env.update(HOME=str(home), KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(cluster.port),
               KVCACHE_SA_FILES=str(files), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    yield {"env": env, "rbac": rbac, "user": f"system:serviceaccount:{namespace}:{name}", "namespace": namespace,
           "seeded": seeded}
    cluster.delete("-f", os.path.join(DEPLOY, "rbac.yaml"), "--wait=false")


def _run_in_pod(incluster, *argv):
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", MOUNT, "sh", *argv],
                          env=incluster["env"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def in_pod(incluster, *argv):
    p = _run_in_pod(incluster, sys.executable, "-m", "kubectl_kvcache", *argv)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("file", ["job.yaml", "cronjob.yaml"])
def test_the_jobs_own_command_succeeds_with_the_manifests_rbac(cluster, incluster, file):
    (obj,) = manifest(file)
    assert obj["metadata"]["namespace"] == incluster["namespace"]
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    assert spec["template"]["spec"]["serviceAccountName"] == incluster["user"].rsplit(":", 1)[1]
    # the API server takes the manifest as it is (no controller runs it here)
    cluster.kubectl("apply", "--dry-run=server", "-f", os.path.join(DEPLOY, file), check=True)
    code, out, err = in_pod(incluster, *container_args(obj))
    assert code in (0, 1), err                   # the examples' cluster has findings: 1, never 2
    data = json.loads(out)                       # JSON on stdout, nothing else
    if obj["kind"] == "CronJob":                 # the reports it keeps in the cluster (the tests below)
        assert data["kind"] == "List" and data["items"], err
        assert {i["metadata"].get("namespace") for i in data["items"]} >= set(incluster["seeded"].values())
        assert "error:" not in err
        return
    assert data["kind"] in ("CheckReport", "VerifyReport")
    assert data["setting"]                       # the Setting was read (the Role's get)
    items = data.get("items") or data.get("findings")
    assert {i["namespace"] for i in items if i.get("namespace")} >= set(incluster["seeded"].values())
    assert "error:" not in err


def test_in_cluster_exactly_when_kubectl_is(cluster, incluster):
    """The real kubectl in the same mount namespace: it too lists Pods as the ServiceAccount
    (kubectl auth whoami), and with --as (no longer the default config: loader.go
    IsDefaultConfig) neither falls back to the in-cluster config (both go to localhost:8080)."""
    code, out, err = in_pod(incluster, "verify", "-A", "-o", "json")
    assert code in (0, 1) and json.loads(out)["items"], err
    kubectl = cluster.kubectl_path
    who = _run_in_pod(incluster, kubectl, "auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == incluster["user"]
    assert _run_in_pod(incluster, kubectl, "get", "pods", "-A").returncode == 0
    theirs = _run_in_pod(incluster, kubectl, "get", "pods", "-A", "--as", "someone")
    code, out, err = in_pod(incluster, "verify", "-A", "--as", "someone")
    assert theirs.returncode != 0 and "localhost:8080" in theirs.stderr
    assert code == 2 and "http://localhost:8080" in err, err


def _role(rbac, kind, name):
    return next(o for o in rbac if o["kind"] == kind and o["metadata"]["name"] == name)


def _rules_without(rbac, kind, name, index, resource):
    docs = copy.deepcopy(rbac)
    role = _role(docs, kind, name)
    rule = role["rules"][index]
    rule["resources"] = [r for r in rule["resources"] if r != resource]
    if not rule["resources"]:
        del role["rules"][index]
    return role


def _until(check, timeout=15):
    """RBAC changes reach the authorizer through an informer: wait for them."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result[0] or time.monotonic() > deadline:
            return result[1]
        time.sleep(0.3)


def _roles(rbac):
    return [o for o in rbac if o["kind"] in ("ClusterRole", "Role")]


def _removals(rbac):
    for role in _roles(rbac):
        for index, rule in enumerate(role["rules"]):
            for resource in rule["resources"]:
                yield role["kind"], role["metadata"]["name"], index, resource


def test_every_rule_is_needed(cluster, incluster):
    rbac = incluster["rbac"]
    removals = list(_removals(rbac))
    # 10 lists, the Nodes' get/list, the Setting's get, and the CronJob's two kinds of report
    assert len(removals) == 14
    cronjob = container_args(manifest("cronjob.yaml")[0])
    try:
        for kind, name, index, resource in removals:
            role = _role(rbac, kind, name)
            cluster.apply(_rules_without(rbac, kind, name, index, resource), with_status=False)
            if resource in ("policyreports", "clusterpolicyreports"):      # the CronJob's writes
                def forbidden():
                    code, out, err = in_pod(incluster, *cronjob)
                    return code == 2 and "forbidden" in err, (code, err)
                code, err = _until(forbidden)
                assert code == 2, (resource, err)
                errors = [line for line in err.strip().splitlines() if line.startswith("error:")]
                assert len(errors) == 1 and errors[0].startswith("error: forbidden: cannot "), (resource, err)
                assert f"{resource}.wgpolicyk8s.io" in errors[0] and incluster["user"] in errors[0], err
                cluster.apply(role, with_status=False)

                def written():
                    code, _, err = in_pod(incluster, *cronjob)
                    return code in (0, 1), (code, err)
                assert _until(written)[0] in (0, 1), resource
                continue
            if resource == "kvcachepools":      # the one list whose refusal is a note (docs/connection.md)
                def noted():
                    code, out, err = in_pod(incluster, "check", "-A", "-o", "json")
                    return code in (0, 1) and "kvcachepools" in err and "forbidden" in err, (code, err)
                code, err = _until(noted)
                assert code in (0, 1) and "note: the KVCachePools could not be listed" in err, err
                cluster.apply(role, with_status=False)

                def read():
                    err = in_pod(incluster, "check", "-A", "-o", "json")[2]
                    return "could not be listed" not in err, err
                assert "could not be listed" not in _until(read), resource
                continue

            if resource == "nodes":     # the GPU labels: a note, the predictions stand (docs/gpu.md)
                def denied():
                    code, out, err = in_pod(incluster, "verify", "-A", "-o", "wide")
                    return code in (0, 1) and "not allowed to get nodes" in err, (code, err)
                code, err = _until(denied)
                assert code in (0, 1) and "note: not allowed to get nodes" in err, err
                cluster.apply(role, with_status=False)

                def allowed():
                    err = in_pod(incluster, "verify", "-A", "-o", "wide")[2]
                    return "not allowed to get nodes" not in err, err
                assert "not allowed to get nodes" not in _until(allowed), resource
                continue

            def refused():
                code, out, err = in_pod(incluster, "check", "-A", "-o", "json")
                return code == 2 and "forbidden" in err, (code, err)
            code, err = _until(refused)
            assert code == 2, (resource, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: forbidden: cannot "), (resource, err)
            assert resource in lines[0] and incluster["user"] in lines[0], (resource, err)
            cluster.apply(role, with_status=False)

            def restored():
                code, _, err = in_pod(incluster, "check", "-A", "-o", "json")
                return code in (0, 1), (code, err)
            assert _until(restored)[0] in (0, 1), resource
    finally:
        for role in _roles(rbac):
            cluster.apply(role, with_status=False)


def _stored(cluster, namespace):
    """This namespace's verify report as the API server stores it, or None."""
    status, body = cluster.request("GET", f"{REPORTS}/namespaces/{namespace}/policyreports/kubectl-kvcache-verify")
    if status == 404:
        return None
    assert status == 200, body
    return body


def _results_of(printed, namespace):
    return next(i for i in json.loads(printed)["items"] if i["metadata"].get("namespace") == namespace)["results"]


def test_the_cronjob_keeps_its_reports_and_replaces_them(cluster, incluster):
    """The CronJob's own args, twice, in the Pod: the reports stored are the ones printed, with the
    plugin's manager; between the runs one namespace loses every replica and another one deployment;
    the second run replaces the first's results in place (same uid), deletes the emptied namespace's
    report, takes back the results another manager applied over its own (forced, as a controller
    owning the object) and leaves the label another manager added. Dry runs, server or client, write nothing."""
    scene = cluster.load_example_namespaces(os.path.join(ROOT, "examples", "cluster.json"), "polr-")
    prod, research = scene["llm-prod"], scene["llm-research"]
    args = container_args(manifest("cronjob.yaml")[0])
    for dry in ("--dry-run=server", "--dry-run=client"):
        code, out, err = in_pod(incluster, *args, dry)
        assert code == 1 and "error:" not in err, err
        assert f"kubectl-kvcache-verify -n {prod}" in err and "dry run" in err
        assert _stored(cluster, prod) is None and _stored(cluster, research) is None, dry

    code, out, err = in_pod(incluster, *args)
    assert code == 1 and "error:" not in err, err           # the verdict's code: replicas fail
    assert f"policyreport.wgpolicyk8s.io/kubectl-kvcache-verify serverside-applied -n {prod}" in err
    first = _stored(cluster, prod)
    assert first["results"] == _results_of(out, prod)      # stored as printed: nothing pruned by the schema
    assert first["summary"]["fail"] == sum(1 for r in first["results"] if r["result"] == "fail") > 0
    assert {(m["manager"], m["operation"]) for m in first["metadata"]["managedFields"]} == {("kubectl-kvcache",
                                                                                               "Apply")}
    assert _stored(cluster, research)["results"] == _results_of(out, research)
    assert cluster.request_ok("GET", f"{REPORTS}/clusterpolicyreports/kubectl-kvcache-verify")["kind"] == \
        "ClusterPolicyReport"
    cluster.kubectl("label", "policyreport", "kubectl-kvcache-verify", "-n", prod, "team=sre", check=True)
    # someone else applies results over the plugin's: the plugin's report, its next run takes them back
    tampered = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                "metadata": {"name": "kubectl-kvcache-verify", "namespace": prod},
                "results": [{"policy": "tampered", "result": "pass"}]}
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager", "someone", "-f", "-",
                    input=json.dumps(tampered), check=True)
    assert [r["policy"] for r in _stored(cluster, prod)["results"]] == ["tampered"]

    # the scene changes: llm-research has no replica any more, llm-prod one deployment less
    cluster.kubectl("delete", "modeldeployments.worker.gpustack.ai,pods", "--all", "-n", research, "--wait=false",
                    "--grace-period=0", "--force", check=True)
    cluster.kubectl("delete", "modeldeployments.worker.gpustack.ai/mistral-legacy", "pod/mistral-legacy-server-0",
                    "-n", prod, "--wait=false", "--grace-period=0", "--force", check=True)
    code, out, err = in_pod(incluster, *args)
    assert code == 1 and "error:" not in err, err
    assert f"policyreport.wgpolicyk8s.io/kubectl-kvcache-verify deleted -n {research}" in err
    assert _stored(cluster, research) is None                # the stale report: deleted, not left behind
    second = _stored(cluster, prod)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]            # replaced in place
    assert second["results"] == _results_of(out, prod) != first["results"]
    assert not [r for r in second["results"] if any(ref["name"].startswith("mistral-legacy")
                                                    for ref in r["resources"])]
    assert len(second["results"]) == len(first["results"]) - 1
    assert second["metadata"]["labels"]["team"] == "sre"      # another manager's field: left alone
    managers = {m["manager"] for m in second["metadata"]["managedFields"]}
    assert managers == {"kubectl-kvcache", "kubectl-label"}, managers     # `someone` owns nothing any more

    version = second["metadata"]["resourceVersion"]
    code, out, err = in_pod(incluster, *args, "--dry-run=server")
    assert code == 1 and "server dry run" in err, err
    assert _stored(cluster, prod)["metadata"]["resourceVersion"] == version


def test_each_verb_of_the_reports_rule_is_needed(cluster, incluster):
    """list (this command's reports), patch (the apply), create (the apply of a report that does
    not exist yet: the real API server asks for both) and delete (a stale one): each taken away,
    the CronJob's run says what is forbidden, exit 2."""
    rbac = incluster["rbac"]
    role = _role(rbac, "ClusterRole", "kubectl-kvcache-reports")
    (rule,) = role["rules"]
    assert sorted(rule["verbs"]) == ["create", "delete", "list", "patch"]
    args = container_args(manifest("cronjob.yaml")[0])
    stale = cluster.new_namespace("polr-stale")
    try:
        for verb in ("list", "patch", "delete", "create"):
            if verb == "create":    # no report yet: each apply creates one
                cluster.kubectl("delete", "policyreports", "-A", "-l", "kubectl-kvcache/command=verify", check=True)
            # a report of an earlier run in a namespace with nothing to report: the run deletes it
            cluster.apply({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                           "metadata": {"name": "kubectl-kvcache-verify", "namespace": stale,
                                        "labels": {"app.kubernetes.io/managed-by": "kubectl-kvcache",
                                                   "kubectl-kvcache/command": "verify"}},
                           "results": []}, with_status=False)
            fewer = copy.deepcopy(role)
            fewer["rules"][0]["verbs"] = [v for v in rule["verbs"] if v != verb]
            cluster.apply(fewer, with_status=False)

            def refused():
                code, out, err = in_pod(incluster, *args)
                return code == 2, (code, err)
            code, err = _until(refused)
            assert code == 2, (verb, err)
            errors = [line for line in err.strip().splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and errors[0].startswith(
                f"error: forbidden: cannot {'apply' if verb in ('patch', 'create') else verb} "), (verb, err)
            assert f'cannot {verb} resource "policyreports"' in errors[0], (verb, err)
            cluster.apply(role, with_status=False)

            def done():
                code, _, err = in_pod(incluster, *args)
                return code in (0, 1), (code, err)
            assert _until(done)[0] in (0, 1), (verb, err)
            assert _stored(cluster, stale) is None
    finally:
        cluster.apply(role, with_status=False)


# the token as the kubelet projects it: a link into a folder it rewrites (atomic writer), so a
# rotation outside the mount namespace is seen inside it
LINKED = ('set -e; run=$(readlink -f /var/run); mount -t tmpfs -o size=1m,mode=0755 kvcache-sa "$run"; '
          f'mkdir -p {SA_DIR}; ln -s "$KVCACHE_SA_FILES"/token {SA_DIR}/token; cp "$KVCACHE_SA_FILES"/ca.crt '
          f'"$KVCACHE_SA_FILES"/namespace {SA_DIR}/; exec "$@"')


def test_a_long_watch_survives_a_token_rotation_that_revokes_the_old_token(cluster, incluster, tmp_path):
    """`verify -A --watch` in the Pod, its token bound to a Secret (TokenRequest's bound-object);
    while it watches, the token file is rewritten with a new token (as the kubelet rotates it) and
    the Secret deleted, which invalidates the old token at once (the real server answers it 401).
    Each watch is resumed every 2 s: the run goes on to its --timeout, no error, as client-go's
    re-read of the token file keeps kubectl's running."""
    namespace = incluster["namespace"]
    name = incluster["user"].rsplit(":", 1)[1]
    holder = "kvcache-token-rotation"
    # deploy/rbac.yaml grants what the Job's verify/check need; --watch needs watch as well
    watcher = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": holder},
                "rules": [{"apiGroups": ["", "worker.gpustack.ai", "gpustack.ai"],
                           "resources": ["pods", "modeldeployments", "kvcachepoolbindings", "settings"],
                           "verbs": ["get", "list", "watch"]}]},
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": holder},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": holder},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}]
    cluster.apply(watcher, with_status=False)
    try:
        _rotate_during_a_watch(cluster, incluster, tmp_path, namespace, name, holder)
    finally:
        cluster.delete("clusterrolebinding", holder, "--wait=false")
        cluster.delete("clusterrole", holder, "--wait=false")


def _rotate_during_a_watch(cluster, incluster, tmp_path, namespace, name, holder):
    def can_watch():
        r = _run_in_pod(incluster, cluster.kubectl_path, "auth", "can-i", "watch", "modeldeployments.worker.gpustack.ai",
                        "-A")
        return r.stdout.strip() == "yes", r.stdout
    assert _until(can_watch) == "yes\n"
    cluster.kubectl("create", "secret", "generic", holder, "-n", namespace, check=True)
    old = cluster.kubectl("create", "token", name, "-n", namespace, "--bound-object-kind", "Secret",
                          "--bound-object-name", holder, check=True).stdout.strip()
    new = cluster.kubectl("create", "token", name, "-n", namespace, "--duration", "1h", check=True).stdout.strip()
    files = tmp_path / "sa"
    files.mkdir()
    for part in ("ca.crt", "namespace"):
        shutil.copy(os.path.join(incluster["env"]["KVCACHE_SA_FILES"], part), files / part)
    (files / "token").write_text(old)
    env = dict(incluster["env"], KVCACHE_SA_FILES=str(files), KVCACHE_WATCH_SECONDS="2")
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", LINKED, "sh",
                          sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "--watch", "--timeout", "25s"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        time.sleep(7)
        assert p.poll() is None, p.communicate()
        (files / "token.new").write_text(new + "\n")
        os.replace(files / "token.new", files / "token")
        cluster.kubectl("delete", "secret", holder, "-n", namespace, check=True)

        def revoked():
            r = cluster.kubectl("get", "--raw", "/api", "--token", old, "--kubeconfig", os.devnull,
                                "--server", cluster.server, "--certificate-authority", cluster.ca_file)
            return "Unauthorized" in r.stderr, r.stderr
        assert "Unauthorized" in _until(revoked), "the old token is still accepted"
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert "Traceback" not in err, err
    assert p.returncode in (0, 1), err
    assert "error:" not in err and "401" not in err, err
    assert out.strip(), "the watch printed its table"
