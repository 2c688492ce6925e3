"""verify against a real kube-apiserver: live results equal the same objects given with -f,
plugin discovery through the built kubectl, paging and an expired continue token, RBAC refusals,
and a cluster without the operator's CRDs."""

import base64
import copy
import io
import json
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.cli import main
from kubectl_kvcache.errors import ExpiredContinue
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
LAUNCHER = os.path.join(ROOT, "bin", "kubectl-kvcache")


def plugin(kubeconfig, command, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([command, "--kubeconfig", kubeconfig, *argv], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def set_setting(cluster, value):
    """Play the operator: spec.value and status.value both hold `value`."""
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": value}, "status": {"value": value, "editable": True}})


def seeded_example(cluster):
    """The examples/ cluster in two fresh namespaces; returns {old namespace: new namespace}."""
    with open(EXAMPLE) as f:
        items = json.load(f)["items"]
    mapping = {}
    objs = []
    for obj in items:
        if obj["kind"] == "Setting" or "namespace" not in obj["metadata"]:
            continue
        old = obj["metadata"]["namespace"]
        if old not in mapping:
            mapping[old] = cluster.new_namespace(old)
        obj = copy.deepcopy(obj)
        obj["metadata"]["namespace"] = mapping[old]
        objs.append(obj)
    cluster.apply(objs)
    return mapping


@pytest.fixture(scope="module")
def example_namespaces(cluster):
    set_setting(cluster, "true")
    return seeded_example(cluster)


def reports_equal(live, saved):
    assert live["setting"]["value"] == saved["setting"]["value"]
    assert live["items"] == saved["items"]
    assert live["summary"] == saved["summary"]


def test_live_equals_saved_files(cluster, example_namespaces, tmp_path):
    set_setting(cluster, "true")
    prod = example_namespaces["llm-prod"]
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", prod, "-o", "json")
    assert code == 1, err
    live = json.loads(out)
    assert live["setting"] == {"value": True, "source": "cluster"}
    statuses = sorted(i["status"] for i in live["items"])
    assert statuses == ["MISMATCH", "MISMATCH", "MISSING", "OK", "OK", "OK", "OK", "REJECTED"]
    assert all(i["namespace"] == prod for i in live["items"])

    dump = cluster.kubectl("get", "pods,modeldeployments,kvcachepoolbindings", "-n", prod, "-o", "json",
                           check=True).stdout
    setting = cluster.kubectl("get", "settings.gpustack.ai", "-n", "gpustack-system", "-o", "json",
                              check=True).stdout
    (tmp_path / "dump.json").write_text(dump)
    (tmp_path / "setting.json").write_text(setting)
    code, out, _ = plugin(cluster.admin_kubeconfig, "verify", "-f", str(tmp_path), "-o", "json")
    assert code == 1
    reports_equal(live, json.loads(out))


def _plugin_dir(tmp_path):
    """A PATH folder holding kubectl-kvcache: the installed console script when there is one."""
    installed = os.path.join(os.path.dirname(sys.executable), "kubectl-kvcache")
    folder = tmp_path / "plugins"
    folder.mkdir()
    target = folder / "kubectl-kvcache"
    if os.path.exists(installed):
        os.symlink(installed, target)
    else:
        target.write_text(f"#!/bin/sh\nexec {sys.executable} {LAUNCHER} \"$@\"\n")
        target.chmod(0o755)
    return str(folder)


def test_kubectl_plugin_discovery(cluster, example_namespaces, tmp_path):
    set_setting(cluster, "true")
    env = cluster.env()
    env["PATH"] = _plugin_dir(tmp_path) + os.pathsep + cluster.bin_dir + os.pathsep + "/usr/bin:/bin"
    listed = subprocess.run([cluster.kubectl_path, "plugin", "list"], capture_output=True, text=True, env=env)
    assert "kubectl-kvcache" in listed.stdout, listed.stdout + listed.stderr
    research = example_namespaces["llm-research"]
    p = subprocess.run([cluster.kubectl_path, "kvcache", "verify", "-n", research, "-o", "json"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [i["status"] for i in data["items"]] == ["OK", "OK"]
    p = subprocess.run([cluster.kubectl_path, "kvcache", "--help"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "kubectl kvcache" in p.stdout


def test_context_namespace_is_the_default(cluster, example_namespaces, tmp_path):
    set_setting(cluster, "true")
    research = example_namespaces["llm-research"]
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copy(cluster.admin_kubeconfig, kubeconfig)
    subprocess.run([cluster.kubectl_path, "--kubeconfig", str(kubeconfig), "config", "set-context", "--current",
                    f"--namespace={research}"], check=True, capture_output=True)
    code, out, err = plugin(str(kubeconfig), "verify", "-o", "json")
    assert code == 0, err
    assert {i["namespace"] for i in json.loads(out)["items"]} == {research}


def _pods(namespace, count, md="md"):
    pods = []
    for n in range(count):
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{md}-server-{n}", "namespace": namespace,
                         "labels": {"app.kubernetes.io/name": "model-deployment", "app.kubernetes.io/instance": md,
                                    "app.kubernetes.io/component": "server"},
                         "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
                                              "name": md, "uid": "00000000-0000-0000-0000-000000000001",
                                              "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": "gpustack/runner:cuda12.9-vllm0.29.0",
                                     "command": ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]}]}})
    return pods


def _seed_paged(cluster, count=12):
    ns = cluster.new_namespace("paging")
    cluster.apply([
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
         "metadata": {"name": "b1", "namespace": ns},
         "spec": {"poolRef": {"name": "pool"}, "domain": {"name": "d", "dtype": "fp8", "blockSize": 16},
                  "quotaCeiling": "10Gi"}},
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
         "metadata": {"name": "md", "namespace": ns},
         "spec": {"engine": {"name": "vllm", "version": "0.29.0"}, "kvCache": {"poolRef": {"name": "b1"}},
                  "model": {"name": "m"},
                  "roles": [{"name": "server", "kind": "server", "replicas": count, "instanceType": "gpu"}]}},
    ] + _pods(ns, count), fix_owner_uids=True)
    return ns


def test_paging_reads_every_page(cluster, monkeypatch):
    set_setting(cluster, "true")
    ns = _seed_paged(cluster, 12)
    monkeypatch.setenv("KVCACHE_TRACE", "1")
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", ns, "--chunk-size", "5", "-o", "json")
    assert code == 1, err       # every replica OK as rendered, but Pending (no kubelet runs them): not done
    assert json.loads(out)["summary"] == {"total": 12, "OK": 12, "MISMATCH": 0, "MISSING": 0, "WILL-REJECT": 0,
                                          "REJECTED": 0, "UNKNOWN": 0, "NO-POD": 0}
    pod_pages = [line for line in err.splitlines() if "/pods?" in line and "model-deployment" in line]
    assert len(pod_pages) == 3 and sum("continue=" in line for line in pod_pages) == 2


def _etcd(cluster, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{cluster.etcd_port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_expired_continue_token_restarts_the_list(cluster, monkeypatch):
    """etcd compacted past the token's resourceVersion: the API server answers 410 Expired on the
    next page, and the list restarts from the first page instead of failing or losing items.
    (ConfigMaps: the harness serves them without the watch cache, as etcd-backed lists are.)"""
    ns = cluster.new_namespace("expire")
    cluster.apply([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{n}", "namespace": ns},
                    "data": {"n": str(n)}} for n in range(7)])
    client = kube.Client(Connection(kubeconfig=cluster.admin_kubeconfig))
    original = client.request
    seen = []

    def request(method, path, query=None, **kw):
        if query and query.get("continue") and not seen:
            cluster.kubectl("create", "configmap", "bump", "-n", ns, check=True)
            revision = int(_etcd(cluster, "/v3/kv/range",
                                 {"key": base64.b64encode(b"/registry").decode()})["header"]["revision"])
            _etcd(cluster, "/v3/kv/compaction", {"revision": revision, "physical": True})
        try:
            return original(method, path, query=query, **kw)
        except Exception as exc:
            seen.append(exc)
            raise

    monkeypatch.setattr(client, "request", request)
    names = client.list(f"/api/v1/namespaces/{ns}/configmaps", lambda o: o["metadata"]["name"], chunk=3)
    assert len(seen) == 1 and isinstance(seen[0], ExpiredContinue), seen
    assert "410" in str(seen[0]) or "gone" in str(seen[0])
    expected = [o["metadata"]["name"] for o in cluster.get("configmaps", namespace=ns)["items"]]
    assert sorted(names) == sorted(expected)  # every item once: nothing lost, nothing doubled
    assert {f"cm-{n}" for n in range(7)} | {"bump"} <= set(names)


def test_reader_can_verify(cluster, example_namespaces):
    set_setting(cluster, "true")
    code, out, err = plugin(cluster.reader_kubeconfig, "verify", "-n", example_namespaces["llm-research"],
                            "-o", "json")
    assert code == 0, err
    assert len(json.loads(out)["items"]) == 2


def test_nobody_gets_exit_2_naming_what_was_refused(cluster, example_namespaces):
    code, out, err = plugin(cluster.nobody_kubeconfig, "verify", "-A")
    assert code == 2 and out == ""
    assert err.startswith("error: forbidden: cannot list ") and "kvcache-nobody" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = plugin(cluster.nobody_kubeconfig, "verify", "-n", example_namespaces["llm-prod"])
    assert code == 2 and "forbidden" in err and example_namespaces["llm-prod"] in err


def test_impersonation_with_as(cluster, example_namespaces):
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-A", "--as", "kvcache-nobody")
    assert code == 2 and "kvcache-nobody" in err
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", example_namespaces["llm-research"],
                            "--as", "kvcache-reader", "-o", "json")
    assert code == 0, err


def test_missing_crds_is_a_clear_error(bare_cluster):
    code, out, err = plugin(bare_cluster.admin_kubeconfig, "verify", "-A")
    assert code == 2 and out == ""
    assert "does not serve the API group worker.gpustack.ai" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_credentials_are_a_clear_error(cluster, tmp_path):
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-A", "--token", "not-a-token", "--user",
                            "nobody-here")
    assert code == 2 and "does not exist in the kubeconfig" in err    # kubectl: auth info "nobody-here" does not exist
    kubeconfig = tmp_path / "token.kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": cluster.server, "certificate-authority": cluster.ca_file}}],
        "users": [{"name": "u", "user": {"token": "expired-or-bogus"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    code, out, err = plugin(str(kubeconfig), "verify", "-A")
    assert code == 2 and "401 Unauthorized" in err and "expired" in err


def test_tenant_without_setting_rights_needs_assume_setting(cluster, example_namespaces):
    """A namespace-scoped user cannot read the Setting in gpustack-system: verify says exactly
    that (exit 2) instead of guessing, and --assume-setting lets them judge anyway."""
    ns = example_namespaces["llm-research"]
    kubeconfig = cluster.add_user("kvcache-tenant")
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "kvcache-tenant", "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                   {"apiGroups": ["worker.gpustack.ai"], "resources": ["*"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "kvcache-tenant", "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kvcache-tenant"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kvcache-tenant"}]},
    ], with_status=False)
    code, out, err = plugin(kubeconfig, "verify", "-n", ns)
    assert code == 2 and out == ""
    assert "cannot get settings.gpustack.ai model-deployment-kv-cache-dtype-owned in namespace gpustack-system" in err
    code, out, err = plugin(kubeconfig, "verify", "-n", ns, "--assume-setting", "on", "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["setting"] == {"value": True, "source": "flag"} and len(data["items"]) == 2
