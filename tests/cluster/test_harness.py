"""Tests of the real-API-server harness itself (tests/cluster/harness.py)."""

import json
import time
import sys
from kubectl_kvcache.operator.api import GROUP, VERSION

# Tests that use the cluster/bare_cluster/cluster_binaries fixtures are marked
# `cluster` by conftest.py; the others run without any binaries.


def test_version_endpoint_reports_pinned_release(cluster):
    status, body = cluster.request("GET", "/version")
    assert status == 200
    assert body["gitVersion"] == cluster.kube_version
    if not cluster.from_kubebuilder_assets:
        assert cluster.kube_version == cluster.pinned_version
    assert body["major"] == "1"
    assert body["minor"] == cluster.kube_version.split(".")[1]


def test_kubectl_reports_pinned_release(cluster):
    out = cluster.kubectl("version", "-o", "json", check=True)
    v = json.loads(out.stdout)
    assert v["serverVersion"]["gitVersion"] == cluster.kube_version
    if not cluster.from_kubebuilder_assets:
        assert v["clientVersion"]["gitVersion"] == cluster.pinned_version


def test_crds_are_served_in_discovery(cluster):
    worker = cluster.request_ok("GET", f"/apis/{GROUP}/{VERSION}")
    by_name = {r["name"]: r for r in worker["resources"]}
    assert by_name["kvcachepoolbindings"]["namespaced"] is True
    assert "kvcpb" in by_name["kvcachepoolbindings"]["shortNames"]
    assert by_name["kvcachepools"]["namespaced"] is False
    assert "kvcp" in by_name["kvcachepools"]["shortNames"]
    assert by_name["modeldeployments"]["namespaced"] is True
    assert "md" in by_name["modeldeployments"]["shortNames"]
    assert "kvcachepoolbindings/status" in by_name
    assert "modeldeployments/status" in by_name

    core = cluster.request_ok("GET", "/apis/gpustack.ai/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["settings"]["kind"] == "Setting"
    assert by_name["settings"]["namespaced"] is True
    assert "set" in by_name["settings"]["shortNames"]
    assert "settings/status" in by_name

    # kubectl resolves the short names too.
    out = cluster.kubectl("api-resources", "--api-group=worker.gpustack.ai", "-o", "name",
                          check=True)
    assert "kvcachepoolbindings.worker.gpustack.ai" in out.stdout.split()


def test_bare_cluster_has_no_operator_crds(bare_cluster):
    status, _ = bare_cluster.request("GET", f"/apis/{GROUP}/{VERSION}")
    assert status == 404
    p = bare_cluster.kubectl("get", "kvcachepoolbindings", "-A")
    assert p.returncode != 0
    assert "the server doesn't have a resource type" in p.stderr
    # but it is a working cluster with the same users
    assert bare_cluster.kubectl("get", "pods", "-A",
                                kubeconfig=bare_cluster.reader_kubeconfig).returncode == 0


def _setting(value="true"):
    return {
        "apiVersion": "gpustack.ai/v1",
        "kind": "Setting",
        "metadata": {"name": "model-deployment-kv-cache-dtype-owned",
                     "namespace": "gpustack-system"},
        "spec": {"value": value},
    }


def test_setting_status_via_subresource(cluster):
    ns = cluster.new_namespace("setting")
    obj = dict(_setting(), metadata={"name": "dtype-owned", "namespace": ns})
    created, = cluster.apply(obj)
    assert "status" not in created or not created["status"].get("value")

    out = cluster.set_status("setting", "dtype-owned", namespace=ns,
                             status={"value": "false", "description": "d",
                                     "editable": True, "sensitive": False})
    assert out["status"]["value"] == "false"
    got = cluster.get("settings.gpustack.ai", "dtype-owned", namespace=ns)
    assert got["status"] == {"value": "false", "description": "d",
                             "editable": True, "sensitive": False}
    assert got["spec"] == {"value": "true"}  # spec untouched by the status write

    # apply() writes a status given in the input through the subresource
    obj2 = dict(_setting("0"), metadata={"name": "second", "namespace": ns},
                status={"value": "true", "editable": True})
    res, = cluster.apply(obj2)
    assert res["status"]["value"] == "true"


def test_reader_can_list_pods_but_not_patch_settings(cluster):
    ns = cluster.new_namespace("reader")
    cluster.apply(dict(_setting(), metadata={"name": "model-deployment-kv-cache-dtype-owned",
                                             "namespace": ns}))
    p = cluster.kubectl("get", "pods", "-A", kubeconfig=cluster.reader_kubeconfig)
    assert p.returncode == 0, p.stderr
    p = cluster.kubectl("get", "settings", "-n", ns,
                        kubeconfig=cluster.reader_kubeconfig)
    assert p.returncode == 0, p.stderr
    p = cluster.kubectl("get", "kvcpb,md", "-A", kubeconfig=cluster.reader_kubeconfig)
    assert p.returncode == 0, p.stderr
    p = cluster.kubectl("get", "kvcp", kubeconfig=cluster.reader_kubeconfig)
    assert p.returncode == 0, p.stderr
    p = cluster.kubectl("-n", ns, "patch", "setting",
                        "model-deployment-kv-cache-dtype-owned", "--type", "merge",
                        "-p", '{"spec":{"value":"false"}}',
                        kubeconfig=cluster.reader_kubeconfig)
    assert p.returncode != 0
    assert "Forbidden" in p.stderr and "kvcache-reader" in p.stderr, p.stderr
    status, body = cluster.request(
        "PATCH", f"/apis/gpustack.ai/v1/namespaces/{ns}/settings/"
        "model-deployment-kv-cache-dtype-owned", {"spec": {"value": "false"}},
        content_type="application/merge-patch+json", user="reader")
    assert status == 403, body
    assert cluster.get("setting", "model-deployment-kv-cache-dtype-owned",
                       namespace=ns)["spec"]["value"] == "true"


def test_nobody_is_forbidden(cluster):
    p = cluster.kubectl("get", "pods", "-n", "default", kubeconfig=cluster.nobody_kubeconfig)
    assert p.returncode != 0
    assert "Forbidden" in p.stderr and "kvcache-nobody" in p.stderr, p.stderr
    status, _ = cluster.request("GET", "/api/v1/pods", user="nobody")
    assert status == 403


def test_add_user_with_own_rights(cluster):
    ns = cluster.new_namespace("user")
    kc = cluster.add_user("pod-lister-only")
    assert cluster.kubectl("get", "pods", "-n", ns, kubeconfig=kc).returncode != 0
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "pods", "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "pods", "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": "pod-lister-only"}]},
    ])
    p = cluster.kubectl("auth", "can-i", "list", "pods", "-n", ns, kubeconfig=kc)
    assert p.stdout.strip() == "yes"
    p = cluster.kubectl("auth", "can-i", "list", "settings.gpustack.ai", "-n", ns,
                        kubeconfig=kc)
    assert p.stdout.strip() == "no"


def test_env_points_kubectl_at_the_cluster(cluster):
    import subprocess
    env = cluster.env(cluster.reader_kubeconfig)
    p = subprocess.run(["kubectl", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
                       env=env, capture_output=True, text=True, check=True)
    assert p.stdout == "kvcache-reader"


def test_pods_with_owner_and_status(cluster):
    ns = cluster.new_namespace("pods")
    objs = [
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
         "metadata": {"name": "md1", "namespace": ns},
         "spec": {"engine": {"name": "vllm", "version": "0.29.0"}, "model": {"name": "m"},
                  "kvCache": {"poolRef": {"name": "b1"}},
                  "roles": [{"name": "server", "kind": "server", "replicas": 1, "instanceType": "gpu",
                             "extraArgs": ["--kv-cache-dtype", "fp8"]}]},
         # as the operator's Go type has it (model_deployment.go: ModelDeploymentStatus)
         "status": {"kvCache": {"binding": "b1", "pool": "pool-a",
                                "domain": {"name": "default", "blockSize": 16, "dtype": "fp8"}},
                    "roles": [{"name": "server", "desired": 1, "ready": 1, "quotaReserved": 1,
                               "unmanaged": False, "kind": "server"}]}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "md1-server-0", "namespace": ns,
                      "labels": {"app.kubernetes.io/instance": "md1"},
                      "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}",
                                           "kind": "ModelDeployment", "name": "md1",
                                           "uid": "bogus", "controller": True}]},
         "spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.29.0",
                                  "command": ["vllm", "serve", "m", "--kv-cache-dtype",
                                              "fp8"]}]},
         "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}]}},
    ]
    md, pod = cluster.apply(objs)
    assert md["status"]["kvCache"]["domain"]["dtype"] == "fp8"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == md["metadata"]["uid"]
    assert pod["status"]["phase"] == "Running"
    got = cluster.get("pods", "md1-server-0", namespace=ns)
    assert got["status"]["phase"] == "Running"
    assert got["spec"]["containers"][0]["command"][-2:] == ["--kv-cache-dtype", "fp8"]


def test_binding_schema(cluster):
    """The generated CRD (tools/operatordata/crds.py; kv_cache_pool_binding.go at 07a30545) is
    closed: kubectl's strict field validation refuses a field the Go type does not have, and the
    dtype's maxLength 32 holds."""
    ns = cluster.new_namespace("schema")
    ok = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
          "metadata": {"name": "b1", "namespace": ns},
          "spec": {"poolRef": {"name": "pool-a"},
                   "domain": {"name": "default", "blockSize": 16, "dtype": "bf16"},
                   "quotaCeiling": "10Gi"}}
    b, = cluster.apply(ok)
    assert b["spec"]["domain"]["dtype"] == "bf16"
    unknown = json.loads(json.dumps(ok))
    unknown["metadata"]["name"] = "b3"
    unknown["spec"]["somethingElse"] = {"kept": True}
    p = cluster.kubectl("apply", "-f", "-", input=json.dumps(unknown))
    assert p.returncode != 0 and "unknown field" in p.stderr and "somethingElse" in p.stderr
    too_long = json.loads(json.dumps(ok))
    too_long["metadata"]["name"] = "b2"
    too_long["spec"]["domain"]["dtype"] = "x" * 33
    p = cluster.kubectl("apply", "-f", "-", input=json.dumps(too_long))
    assert p.returncode != 0
    assert "spec.domain.dtype" in p.stderr


def test_paging_with_continue(cluster):
    ns = cluster.new_namespace("paging")
    cluster.apply([{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i:02d}", "namespace": ns},
                    "data": {"i": str(i)}} for i in range(30)])
    names, pages, cont = [], 0, None
    while True:
        query = {"limit": 10}
        if cont:
            query["continue"] = cont
        body = cluster.request_ok("GET", f"/api/v1/namespaces/{ns}/configmaps", query=query)
        pages += 1
        assert len(body["items"]) <= 10
        names += [i["metadata"]["name"] for i in body["items"]]
        cont = body["metadata"].get("continue")
        if not cont:
            break
        assert pages < 10
    assert pages >= 3
    assert sorted(names) == [f"cm-{i:02d}" for i in range(30)]
    # kubectl pages the same way
    p = cluster.kubectl("get", "configmaps", "-n", ns, "--chunk-size=10", "-o", "name",
                        check=True)
    assert len(p.stdout.split()) == 30


def test_new_namespace_is_unique(cluster):
    a, b = cluster.new_namespace("Same_Prefix"), cluster.new_namespace("Same_Prefix")
    assert a != b and a.startswith("same-prefix-")
    assert cluster.get("namespace", a)["status"]["phase"] == "Active"
    assert cluster.get("namespace", "gpustack-system")["metadata"]["name"] == "gpustack-system"


def test_parse_objects_flattens_lists_and_yaml_streams():
    from kvcache_test_harness import parse_objects  # loaded by conftest
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
"""
    assert [o["metadata"]["name"] for o in parse_objects(text)] == ["a", "b", "c"]
    assert parse_objects({"kind": "X", "metadata": {"name": "d"}})[0]["kind"] == "X"
    assert parse_objects(json.dumps({"kind": "PodList", "items": []})) == []


def test_demo_cluster_up_status_down(cluster_binaries, tmp_path):
    import os
    import subprocess
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "demo-cluster")
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
         "metadata": {"name": "b", "namespace": "demo-ns"},
         "spec": {"poolRef": {"name": "p"}, "domain": {"name": "d", "blockSize": 16, "dtype": "fp8"},
                  "quotaCeiling": "1Gi"},
         "status": {"phase": "Ready"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "demo-ns"},
         "spec": {"containers": [{"name": "main", "image": "x"}]},
         "status": {"phase": "Running"}},
    ]}))
    # a shell as the README's reader has it after its first command: no kubectl-kvcache on PATH
    # (issue 48: `kubectl kvcache` was "unknown command" on the first try)
    import shutil
    bare = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "kubectl-kvcache")))
    venv_bin = os.path.join(os.environ.get("KVCACHE_VENV") or os.path.join(os.path.dirname(demo), "..", ".venv"), "bin")
    front = [os.path.realpath(venv_bin)] + ([] if shutil.which("kubectl", path=bare) else [cluster_binaries])
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), KUBEBUILDER_ASSETS=cluster_binaries, PATH=bare)
    run = lambda *a: subprocess.run([sys.executable, demo, *a], env=env, capture_output=True, text=True,
                                    timeout=300)
    try:
        up = run("up", "--examples", str(examples))
        assert up.returncode == 0, up.stderr
        line, path_line = up.stdout.splitlines()
        assert line.startswith("export KUBECONFIG=")
        assert path_line.startswith("export PATH=") and path_line.endswith(':"$PATH"'), path_line
        named = path_line[len("export PATH="):-len(':"$PATH"')].split(":")
        assert [os.path.realpath(d) for d in named] == [os.path.realpath(d) for d in front], path_line
        # the README's next step, in the shell that evaluated those lines: kubectl runs the plugin
        shell = subprocess.run(["bash", "-c", 'eval "$1" && kubectl kvcache verify -n demo-ns', "sh",
                                up.stdout], env=env, capture_output=True, text=True, timeout=120)
        assert "unknown command" not in shell.stderr and shell.returncode in (0, 1), shell.stderr
        kubeconfig = line.split("=", 1)[1]
        assert kubeconfig.startswith(str(tmp_path / "kubectl-kvcache-demo"))
        kenv = dict(env, KUBECONFIG=kubeconfig)
        out = subprocess.run([os.path.join(cluster_binaries, "kubectl"), "get", "kvcpb,pods",
                              "-n", "demo-ns", "-o", "json"], env=kenv, capture_output=True,
                             text=True, check=True)
        items = {i["kind"]: i for i in json.loads(out.stdout)["items"]}
        assert items["KVCachePoolBinding"]["status"]["phase"] == "Ready"
        assert items["Pod"]["status"]["phase"] == "Running"
        st = run("status")
        assert st.returncode == 0 and st.stdout == up.stdout, st.stderr
        assert "operator: stand-in controller and kubelet, pid" in st.stderr   # the stand-ins run beside it
        standin = int(st.stderr.split("stand-in controller and kubelet, pid ", 1)[1].split()[0])
        node = None
        for _ in range(100):                # the stand-in kubelet registers Node kvcache-node
            got = subprocess.run([os.path.join(cluster_binaries, "kubectl"), "get", "node", "kvcache-node",
                                  "-o", "json"], env=kenv, capture_output=True, text=True)
            node = json.loads(got.stdout) if got.returncode == 0 else None
            if node and (node.get("status") or {}).get("daemonEndpoints"):
                break
            time.sleep(0.1)
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
        again = run("up")  # idempotent
        assert again.returncode == 0 and again.stdout == up.stdout
    finally:
        down = run("down")
    assert down.returncode == 0, down.stderr
    assert not (tmp_path / "kubectl-kvcache-demo").exists()
    assert not os.path.exists(f"/proc/{standin}/cmdline") or b"operator_standin" not in open(
        f"/proc/{standin}/cmdline", "rb").read()          # down stopped the stand-in it started
    assert run("status").returncode == 3
