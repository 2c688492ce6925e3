"""The real API server, loaded with the CRDs generated from the operator's Go markers
(tools/operatordata/crds.py), refuses what the operator's own CRDs refuse and defaults what
they default.

The rules asserted here are the Go markers of gpustack/gpustack-operator
api/worker/v1alpha1/model_deployment.go at 049325a5 (ModelDeploymentEngine.Name enum
["vllm","sglang"]; ModelDeploymentRole.Kind enum ["server","prefill","decode"], default "server";
Replicas default 1, 1..1024; ModelDeploymentRouter.Name +required, enum
["llm-d-router","vllm-router","sglang-gateway"]) and kv_cache_pool_binding.go at 07a30545
(poolRef, domain, quotaCeiling +required; domain.name maxLength 63; dtype maxLength 32).
Each refusal is sent as a create through the REST API, so the answer is the server's schema
validation alone (no kubectl client-side check in between).
"""

import copy

import pytest

from kubectl_kvcache.operator.api import GROUP, VERSION

MINIMAL = {
    "apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
    "metadata": {"name": "m"},
    "spec": {"model": {"name": "Qwen/Qwen3-8B"}, "engine": {"name": "vllm"},
             "roles": [{"name": "main", "instanceType": "gpu-a"}]},
}
BINDING = {
    "apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
    "metadata": {"name": "b"},
    "spec": {"poolRef": {"name": "pool"}, "domain": {"name": "d", "blockSize": 16, "dtype": "fp8"},
             "quotaCeiling": "10Gi"},
}


def _create(cluster, ns, plural, obj):
    return cluster.request("POST", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{plural}", obj)


def _md(name, **spec_changes):
    o = copy.deepcopy(MINIMAL)
    o["metadata"]["name"] = name
    for k, v in spec_changes.items():
        o["spec"][k] = v
    return o


@pytest.fixture(scope="module")
def ns(cluster):
    return cluster.new_namespace("crd-schema")


def _refused(status, body, *words):
    assert status == 422, (status, body)
    text = body.get("message", "") if isinstance(body, dict) else str(body)
    for w in words:
        assert w in text, text
    return text


def test_minimal_deployment_is_admitted_and_defaulted(cluster, ns):
    status, body = _create(cluster, ns, "modeldeployments", _md("minimal"))
    assert status == 201, body
    role = body["spec"]["roles"][0]
    # Defaults from the markers: kind "server", replicas 1, size 1.
    assert (role["kind"], role["replicas"], role["size"]) == ("server", 1, 1)


def test_engine_name_is_lowercase_enum(cluster, ns):
    status, body = _create(cluster, ns, "modeldeployments",
                           _md("vllm-cap", engine={"name": "vLLM"}))
    _refused(status, body, "spec.engine.name", 'Unsupported value: "vLLM"')
    status, body = _create(cluster, ns, "modeldeployments",
                           _md("sglang-cap", engine={"name": "SGLang"}))
    _refused(status, body, "spec.engine.name", 'Unsupported value: "SGLang"')
    status, _ = _create(cluster, ns, "modeldeployments", _md("sglang", engine={"name": "sglang"}))
    assert status == 201


def test_role_kind_is_closed_lowercase(cluster, ns):
    roles = [{"name": "p", "instanceType": "gpu-a", "kind": "Prefill"}]
    status, body = _create(cluster, ns, "modeldeployments", _md("kind-cap", roles=roles))
    _refused(status, body, "spec.roles[0].kind", 'Unsupported value: "Prefill"')
    roles = [{"name": "p", "instanceType": "gpu-a", "kind": "prefill"},
             {"name": "d", "instanceType": "gpu-a", "kind": "decode"}]
    status, body = _create(cluster, ns, "modeldeployments", _md("kind-ok", roles=roles))
    assert status == 201, body


def test_router_must_name_itself(cluster, ns):
    status, body = _create(cluster, ns, "modeldeployments",
                           _md("router-anon", router={"replicas": 1}))
    _refused(status, body, "spec.router.name", "Required value")
    status, body = _create(cluster, ns, "modeldeployments",
                           _md("router-bad", router={"name": "llm-d"}))
    _refused(status, body, "spec.router.name", 'Unsupported value: "llm-d"')
    status, body = _create(cluster, ns, "modeldeployments",
                           _md("router-ok", router={"name": "llm-d-router"}))
    assert status == 201, body


def test_bounds_and_required_fields(cluster, ns):
    cases = [
        ("replicas-0", {"roles": [{"name": "a", "instanceType": "i", "replicas": 0}]},
         "spec.roles[0].replicas"),
        ("replicas-big", {"roles": [{"name": "a", "instanceType": "i", "replicas": 1025}]},
         "spec.roles[0].replicas"),
        ("size-big", {"roles": [{"name": "a", "instanceType": "i", "size": 65}]},
         "spec.roles[0].size"),
        ("no-itype", {"roles": [{"name": "a"}]}, "spec.roles[0].instanceType"),
        ("bad-name", {"roles": [{"name": "Main", "instanceType": "i"}]}, "spec.roles[0].name"),
        ("no-roles", {"roles": []}, "spec.roles"),
        ("long-version", {"engine": {"name": "vllm", "version": "x" * 65}},
         "spec.engine.version"),
        ("no-model", {"model": {}}, "spec.model.name"),
    ]
    for name, spec, field in cases:
        status, body = _create(cluster, ns, "modeldeployments", _md(name, **spec))
        _refused(status, body, field)


def test_binding_required_fields_and_bounds(cluster, ns):
    status, body = _create(cluster, ns, "kvcachepoolbindings", BINDING)
    assert status == 201, body
    for drop, field in (("poolRef", "spec.poolRef"), ("domain", "spec.domain"),
                        ("quotaCeiling", "spec.quotaCeiling")):
        o = copy.deepcopy(BINDING)
        o["metadata"]["name"] = f"no-{drop.lower()}"
        del o["spec"][drop]
        _refused(*_create(cluster, ns, "kvcachepoolbindings", o), field, "Required value")
    o = copy.deepcopy(BINDING)
    o["metadata"]["name"] = "long"
    o["spec"]["domain"] = {"name": "d" * 64, "blockSize": 16, "dtype": "x" * 33}
    text = _refused(*_create(cluster, ns, "kvcachepoolbindings", o), "spec.domain.name")
    assert "spec.domain.dtype" in text


def test_printer_columns_are_the_operators(cluster, ns):
    p = cluster.kubectl("get", "modeldeployments", "-n", ns, check=True)
    assert p.stdout.split("\n")[0].split() == ["NAME", "ENGINE", "PHASE", "ENDPOINT"]
    p = cluster.kubectl("get", "kvcachepoolbindings", "-n", ns, check=True)
    assert p.stdout.split("\n")[0].split() == ["NAME", "POOL", "DOMAIN", "EFFECTIVE", "USAGE",
                                               "PHASE", "AGE"]
