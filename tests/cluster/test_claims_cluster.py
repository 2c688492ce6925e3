"""binding-domain-claimed on the real API server: KVCachePools listed (cluster-scoped) decide
which master holds a domain, both Bindings on one master are flagged and the backend named, two
backends keep two ledgers; a user RBAC does not let list kvcachepools gets a note and
`unchecked`, never a guess (judge/checks/claims.py, load/cluster.py)."""

import io
import json

from kubectl_kvcache.cli import main
from kubectl_kvcache.operator.api import GROUP, VERSION

DOMAIN = "claims-shared"     # no other test's Binding registers it


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _pool(name, backend):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePool", "metadata": {"name": name},
            "spec": {"backends": [backend], "quota": {"total": "1Ti"}}}


def _binding(ns, name, pool):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding", "metadata": {"name": name, "namespace": ns},
            "spec": {"poolRef": {"name": pool}, "domain": {"name": DOMAIN, "blockSize": 64, "dtype": "bfloat16"},
                     "quotaCeiling": "64Gi"}}


def _no_pools_user(cluster):
    """May list what check reads (without the workload kinds), not kvcachepools."""
    kubeconfig = cluster.add_user("claims-no-pools")
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "claims-no-pools"},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                   {"apiGroups": ["worker.gpustack.ai"], "resources": ["kvcachepoolbindings", "modeldeployments"],
                    "verbs": ["list"]},
                   {"apiGroups": ["gpustack.ai"], "resources": ["settings"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "claims-no-pools"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "claims-no-pools"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "claims-no-pools"}]}])
    return kubeconfig


def _ours(report, code):
    return {f["name"]: f for f in report["findings"] if f["code"] == code and f["name"].startswith("claims-")}


def test_one_domain_is_contested_per_master_and_unknown_without_the_pools(cluster):
    a, b = cluster.ensure_namespace("claims-a"), cluster.ensure_namespace("claims-b")
    cluster.apply([_pool("claims-p1", "claims-mc-1"), _pool("claims-p2", "claims-mc-1"),
                   _pool("claims-p3", "claims-mc-2"),
                   _binding(a, "claims-x", "claims-p1"), _binding(b, "claims-y", "claims-p2"),
                   _binding(a, "claims-z", "claims-p3")])
    code, out, err = plugin(cluster.admin_kubeconfig, "check", "-A", "--skip-workloads", "-o", "json")
    report = json.loads(out)
    claimed = _ours(report, "binding-domain-claimed")
    assert sorted(claimed) == ["claims-x", "claims-y"] and code == 1, err
    assert "backend claims-mc-1 serves both Bindings' pools" in claimed["claims-x"]["message"]
    assert "claims-b/claims-y (pool claims-p2)" in claimed["claims-x"]["message"]
    assert not _ours(report, "unchecked") and "KVCachePools" not in err
    code, out, _ = plugin(cluster.admin_kubeconfig, "bindings", "-A", "--skip-workloads", "-o", "json")
    verdicts = {i["name"]: i["verdict"] for i in json.loads(out)["items"] if i["name"].startswith("claims-")}
    assert verdicts["claims-x"] == "DOMAIN CLAIMED by claims-b/claims-y" and "DOMAIN" not in verdicts["claims-z"]

    code, out, err = plugin(_no_pools_user(cluster), "check", "-A", "--skip-workloads", "-o", "json")
    assert "KVCachePools could not be listed" in err and "forbidden" in err, err
    report = json.loads(out)
    assert not _ours(report, "binding-domain-claimed")
    unchecked = _ours(report, "unchecked")
    assert sorted(unchecked) == ["claims-x", "claims-y", "claims-z"]
    assert all("could not be read" in f["message"] for f in unchecked.values())
