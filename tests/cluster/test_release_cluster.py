"""The engine release a role runs, on the real API server: the role's spec.roles[].image (a stated
image always wins: controllers/worker/model_deployment_render.go, renderModelDeploymentPodTemplate),
else spec.engine.version. The API server stores `image` on the role (the test CRD types it as the
operator's ModelDeploymentRole.Image does) and check judges the Binding's dtype at that release."""

import io
import json

from kubectl_kvcache.cli import main
from kubectl_kvcache.operator.api import GROUP, VERSION


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _objects(ns, image=None):
    role = {"name": "server", "kind": "server", "replicas": 1, "instanceType": "h100"}
    if image:
        role["image"] = image
    binding = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
               "metadata": {"name": "bf16", "namespace": ns},
               "spec": {"poolRef": {"name": "release-pool"},
                        "domain": {"name": f"release-{ns}", "blockSize": 64, "dtype": "bfloat16"},
                        "quotaCeiling": "64Gi"}}
    md = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "metadata": {"name": "chat", "namespace": ns},
          "spec": {"model": {"name": "Qwen/Qwen3-8B"}, "engine": {"name": "vllm", "version": "0.29.0"},
                   "kvCache": {"poolRef": {"name": "bf16"}}, "roles": [role]}}
    return [binding, md]


def _engines(cluster, ns):
    code, out, err = plugin(cluster.kubeconfig, "bindings", "-n", ns, "-o", "json")
    return next(b for b in json.loads(out)["items"] if b["name"] == "bf16")["engines"]


def test_the_role_image_decides_the_release_on_the_real_api_server(cluster):
    ns = cluster.new_namespace("release")
    cluster.apply(_objects(ns, image="vllm/vllm-openai:v0.10.2"))
    stored = cluster.get("modeldeployments", "chat", namespace=ns)
    assert stored["spec"]["roles"][0]["image"] == "vllm/vllm-openai:v0.10.2"   # kept, not pruned
    code, out, err = plugin(cluster.kubeconfig, "check", "-n", ns, "-o", "json")
    report = json.loads(out)
    found = [f for f in report["findings"] if f["code"] == "binding-dtype-rejected"]
    assert code != 0 and len(found) == 1, (out, err)
    assert "vLLM 0.10.2 (from spec.roles[].image)" in found[0]["message"]
    assert _engines(cluster, ns) == [{"engine": "vllm", "version": "0.10.2", "versionSource": "spec.roles[].image"}]


def test_without_a_role_image_engine_version_decides_on_the_real_api_server(cluster):
    ns = cluster.new_namespace("release")
    cluster.apply(_objects(ns))
    code, out, err = plugin(cluster.kubeconfig, "check", "-n", ns, "-o", "json")
    report = json.loads(out)
    assert not [f for f in report["findings"] if f["code"] == "binding-dtype-rejected"], out
    assert _engines(cluster, ns) == [{"engine": "vllm", "version": "0.29.0", "versionSource": "spec.engine.version"}]
