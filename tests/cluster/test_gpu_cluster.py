"""The GPU decides, on a real kube-apiserver: Nodes created through the API with the labels GPU
Feature Discovery writes (tests/engine/test_gpu_labels.py cites them), engine Pods bound to them
(spec.nodeName), verify reads each Node once and turns the verdicts (an RTX 3090 on vLLM 0.11.0
with fp8: REJECTED at start-up, vLLM issue 26431; 0.24.0 on it and an H100: OK; a Node without the
labels: UNKNOWN naming the label). A user whose RBAC does not let get nodes gets one note and the
predictions as without the GPU (load/nodes.py)."""

import io
import json
import random
import string

from kubectl_kvcache.cli import main
from kubectl_kvcache.operator.api import GROUP, VERSION

SUFFIX = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
RTX, HOPPER, BARE = f"gpu-rtx3090-{SUFFIX}", f"gpu-h100-{SUFFIX}", f"gpu-bare-{SUFFIX}"
LABELS = {
    RTX: {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-3090", "nvidia.com/gpu.compute.major": "8",
          "nvidia.com/gpu.compute.minor": "6", "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.count": "2",
          "nvidia.com/gpu.present": "true"},
    HOPPER: {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.compute.major": "9",
             "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.count": "8"},
    BARE: {"kubernetes.io/arch": "amd64"},
}


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": LABELS[name]}}


def _pod(ns, name, node, release):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": "x", "kvcache.gpustack.ai/inject": "true"},
                         "annotations": {"kvcache.gpustack.ai/binding": "gpu-fp8", "kvcache.gpustack.ai/engine": "vLLM"}},
            "spec": {"nodeName": node, "containers": [{
                "name": "main", "image": f"vllm/vllm-openai:v{release}",
                "command": ["vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8", "--port", "8000"]}]}}


def _seed(cluster):
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}, "status": {"value": "true", "editable": True}})
    ns = cluster.new_namespace("gpu")
    cluster.apply([_node(RTX), _node(HOPPER), _node(BARE),
                   {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
                    "metadata": {"name": "gpu-fp8", "namespace": ns},
                    "spec": {"poolRef": {"name": "pool-a"}, "domain": {"name": f"gpu-{SUFFIX}", "blockSize": 64,
                                                                      "dtype": "fp8"}, "quotaCeiling": "64Gi"}},
                   _pod(ns, "rtx-old", RTX, "0.11.0"), _pod(ns, "rtx-new", RTX, "0.24.0"),
                   _pod(ns, "hopper-old", HOPPER, "0.11.0"), _pod(ns, "bare-old", BARE, "0.16.0")])
    return ns


def _no_nodes_user(cluster):
    """Reads what verify reads in a namespace (the built-in view role, the operator's kinds), not nodes."""
    name = f"gpu-no-nodes-{SUFFIX}"
    kubeconfig = cluster.add_user(name)
    rbac = "rbac.authorization.k8s.io"
    cluster.apply([
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list"]},
                   {"apiGroups": ["worker.gpustack.ai"], "resources": ["*"], "verbs": ["get", "list"]},
                   {"apiGroups": ["gpustack.ai"], "resources": ["settings"], "verbs": ["get", "list"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
         "subjects": [{"apiGroup": rbac, "kind": "User", "name": name}]}])
    return kubeconfig


def test_the_nodes_labels_decide_and_a_403_leaves_the_predictions(cluster):
    ns = _seed(cluster)
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", ns, "-o", "json")
    rows = {i["pod"]: i for i in json.loads(out)["items"]}
    assert code == 1, err
    assert rows["rtx-old"]["status"] == "REJECTED" and "fp8e4nv" in rows["rtx-old"]["reason"], rows["rtx-old"]
    assert rows["rtx-old"]["gpu"]["computeCapability"] == "8.6"
    assert rows["rtx-new"]["status"] == "OK" and rows["hopper-old"]["status"] == "OK"
    assert rows["bare-old"]["status"] == "UNKNOWN"
    assert rows["bare-old"]["cause"] == {"code": "gpu", "subject": "nvidia.com/gpu.compute.major"}

    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", ns, "-o", "wide")
    header, *lines = out.splitlines()
    col = header.split().index("GPU")
    cells = {line.split()[0]: line.split()[col] for line in lines}
    assert cells["rtx-old"] == "NVIDIA-GeForce-RTX-3090/8.6" and cells["hopper-old"] == "NVIDIA-H100-80GB-HBM3/9.0"
    assert cells["bare-old"] == "<unlabelled>"

    code, out, err = plugin(_no_nodes_user(cluster), "verify", "-n", ns, "-o", "json")
    rows = json.loads(out)["items"]
    assert err.count("not allowed to get nodes") == 1, err
    assert all("gpu" not in r for r in rows)
    assert {r["pod"]: r["status"] for r in rows} == {"rtx-old": "OK", "rtx-new": "OK", "hopper-old": "OK",
                                                      "bare-old": "OK"}


V100 = f"gpu-v100-{SUFFIX}"
LABELS[V100] = {"nvidia.com/gpu.product": "Tesla-V100-DGXS-32GB", "nvidia.com/gpu.compute.major": "7",
                "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "volta"}


def _md_scene(cluster, node):
    """A vLLM 0.16.0 ModelDeployment on an fp8 Binding, its one replica bound to `node` (vLLM PR
    35720: a V100 on 0.16.0 with fp8 crashes), as the operator renders it (the Binding's dtype
    in its argv)."""
    ns = cluster.new_namespace("gpu-rec")
    md = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "metadata": {"name": "llama", "namespace": ns},
          "spec": {"engine": {"name": "vllm", "version": "0.16.0"}, "kvCache": {"poolRef": {"name": "v-fp8"}},
                   "model": {"name": "unsloth/Meta-Llama-3.1-8B-Instruct"},
                   "roles": [{"name": "server", "kind": "server", "replicas": 1, "size": 1,
                              "instanceType": "gpu"}]}}
    pool = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePool", "metadata": {"name": f"pool-gpu-{SUFFIX}"},
            "spec": {"backends": [f"mooncake-gpu-{SUFFIX}"], "quota": {"total": "1Ti"}}}
    made = cluster.apply([_node(node), md, pool,
                          {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
                           "metadata": {"name": "v-fp8", "namespace": ns},
                           "spec": {"poolRef": {"name": f"pool-gpu-{SUFFIX}"},
                                    "domain": {"name": f"v-{SUFFIX}-{ns}", "blockSize": 64,
                                                                             "dtype": "fp8"}, "quotaCeiling": "64Gi"}}])
    uid = made[1]["metadata"]["uid"]
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "llama-server-0", "namespace": ns,
        "labels": {"app.kubernetes.io/name": "model-deployment", "app.kubernetes.io/instance": "llama",
                   "app.kubernetes.io/component": "server", "modeldeployment.gpustack.ai/role-kind": "server"},
        "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "name": "llama", "uid": uid,
                             "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "gpustack/runner:cuda12.9-vllm0.16.0",
                                                   "command": ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]}]}},
        fix_owner_uids=False)
    return ns


def test_recover_proposes_no_fp8_spelling_on_a_v100(cluster):
    """On an H100 nothing refuses fp8 (nothing to recover); on a V100 every fp8 spelling fails on
    Triton, so recover proposes none, and --dtype fp8_e5m2 is refused naming the GPU."""
    hopper = _md_scene(cluster, HOPPER)
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "v-fp8", "-n", hopper)
    assert code == 0 and "nothing to recover" in out, (code, out, err)
    volta = _md_scene(cluster, V100)
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "v-fp8", "-n", volta)
    assert code != 0 and "no spelling of 'fp8' is accepted" in out + err, (code, out, err)
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "v-fp8", "-n", volta, "--dtype", "fp8_e5m2")
    assert code != 0 and "Tesla-V100-DGXS-32GB" in out + err and "fp8_e5m2" in out + err, (code, out, err)
    # bfloat16 below SM 8.0 on 0.16.0's Triton is not read: not refused, never proposed
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "v-fp8", "-n", volta, "--dtype", "bfloat16", "-o", "json")
    assert code == 0 and "bfloat16" in out, (code, out, err)
