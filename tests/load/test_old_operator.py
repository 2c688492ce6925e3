"""Objects written before the operator's CRD rules still read: tests/load/old_operator/
cluster-before-schema.json is examples/cluster.json as it was saved before the examples were held
to the schema the Go markers generate (gpustack/gpustack-operator api/worker/v1alpha1/
model_deployment.go at 049325a: `spec.engine.name` enum vllm|sglang, `roles[].kind` enum
server|prefill|decode defaulting to server, `router.name` required, `roles[].instanceType`
required; kv_cache_pool_binding.go at 07a3054: `spec.quotaCeiling`, where the types at 6678d71
spelled `spec.quota.ceiling`). A file or a cluster may still hold such objects (an API server
keeps what it stored under an older CRD). Every judging command reads the old form without a
traceback and answers as it does on the new one: the same exit code and the same rows."""

import copy
import io
import json
import os

import pytest

from kubectl_kvcache.cli import main
from kubectl_kvcache.render import formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEW = os.path.join(ROOT, "examples", "cluster.json")
OLD = os.path.join(ROOT, "tests", "load", "old_operator", "cluster-before-schema.json")


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _items(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["items"]


def _of(items, kind):
    return [o for o in items if o["kind"] == kind]


def test_the_old_file_is_in_the_old_form_and_the_example_in_the_new():
    """Guards the comparison below: were the two files the same form, it would prove nothing."""
    old, new = _items(OLD), _items(NEW)
    old_mds, new_mds = _of(old, "ModelDeployment"), _of(new, "ModelDeployment")
    assert {m["spec"]["engine"]["name"] for m in old_mds} >= {"vLLM", "SGLang"}
    assert {r.get("kind") for m in old_mds for r in m["spec"]["roles"]} >= {"Prefill", "Decode"}
    assert any(m["spec"].get("router") == {"enabled": True, "replicas": 1} for m in old_mds)
    assert not any("instanceType" in r for m in old_mds for r in m["spec"]["roles"])
    assert any("quota" in b["spec"] for b in _of(old, "KVCachePoolBinding"))
    assert {m["spec"]["engine"]["name"] for m in new_mds} == {"vllm", "sglang"}
    assert {r["kind"] for m in new_mds for r in m["spec"]["roles"]} == {"server", "prefill", "decode"}
    assert all(r.get("instanceType") for m in new_mds for r in m["spec"]["roles"])
    assert all(m["spec"]["router"]["name"] for m in new_mds if "router" in m["spec"])
    assert all("quotaCeiling" in b["spec"] and "quota" not in b["spec"] for b in _of(new, "KVCachePoolBinding"))
    # the same snapshot otherwise: the same objects, by kind and name
    assert [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in old] == \
        [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in new]


@pytest.mark.parametrize("command", formats.JUDGING)
@pytest.mark.parametrize("output", ["json", "wide"])
def test_the_old_form_reads_and_answers_as_the_new(command, output):
    new = run(command, "-A", "-f", NEW, "-o", output)
    old = run(command, "-A", "-f", OLD, "-o", output)
    assert "Traceback" not in old[2] and not old[2].startswith("error:"), old[2]
    assert new[1], f"{command} printed no rows"
    assert old[:2] == new[:2]           # exit code and rows, byte for byte


def _variant(change):
    items = copy.deepcopy(_items(NEW))
    for o in items:
        change(o)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _roles(o):
    return o["spec"]["roles"] if o["kind"] == "ModelDeployment" else []


def _engine_case(o):
    if o["kind"] == "ModelDeployment":
        o["spec"]["engine"]["name"] = {"vllm": "vLLM", "sglang": "SGLang"}[o["spec"]["engine"]["name"]]


def _kind_case(o):
    for r in _roles(o):
        r["kind"] = r["kind"].capitalize()


def _kind_absent(o):            # stored before kinds existed: the CRD's default (server) was never applied
    for r in _roles(o):
        if r["kind"] == "server":
            del r["kind"]


def _router_enabled(o):
    if o["kind"] == "ModelDeployment" and "router" in o["spec"]:
        o["spec"]["router"] = {"enabled": True, "replicas": 1}


def _no_instance_type(o):
    for r in _roles(o):
        del r["instanceType"]


def _quota_ceiling(o):
    if o["kind"] == "KVCachePoolBinding":
        o["spec"]["quota"] = {"ceiling": o["spec"].pop("quotaCeiling")}


@pytest.mark.parametrize("change", [_engine_case, _kind_case, _kind_absent, _router_enabled, _no_instance_type,
                                   _quota_ceiling], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("command", ["verify", "check"])
def test_each_old_spelling_alone_answers_as_the_new(tmp_path, change, command):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(_variant(change)), encoding="utf-8")
    new = run(command, "-A", "-f", NEW, "-o", "json")
    old = run(command, "-A", "-f", str(path), "-o", "json")
    assert "Traceback" not in old[2] and not old[2].startswith("error:"), old[2]
    assert old[:2] == new[:2]


def test_the_records_of_old_and_new_deployments_agree():
    """The decoded ModelDeployment (operator/decode.py) is what every judge reads: its role kinds
    are lowercased and its engine normalises to the same engine."""
    from kubectl_kvcache.engine import normalise_engine
    from kubectl_kvcache.operator.decode import deployment_record

    old = {o["metadata"]["name"]: deployment_record(o) for o in _of(_items(OLD), "ModelDeployment")}
    new = {o["metadata"]["name"]: deployment_record(o) for o in _of(_items(NEW), "ModelDeployment")}
    assert old.keys() == new.keys() and "qwen-pd" in new
    for name, md in new.items():
        assert normalise_engine(old[name].engine) == md.engine, name
        assert [(r.name, r.kind) for r in old[name].roles] == [(r.name, r.kind) for r in md.roles], name
        assert old[name].binding == md.binding
    assert [r.kind for r in new["qwen-pd"].roles] == ["prefill", "decode"]
