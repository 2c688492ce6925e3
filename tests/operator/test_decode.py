"""The record builders (operator/decode.py) check the type of every field they read, on the live-cluster path too (no
file there): the error names the object and the field path; valid objects are untouched."""

import copy

import pytest

import objects as o
from kubectl_kvcache.operator import decode
from kubectl_kvcache.errors import InvalidObject, PluginError


def as_listed(obj):
    """A list item as the API server returns it: no kind, no apiVersion."""
    obj = copy.deepcopy(obj)
    obj.pop("kind"), obj.pop("apiVersion")
    return obj


def test_a_listed_pod_with_a_bad_field_is_named_with_its_kind_and_path():
    pod = as_listed(o.md_pod("p0", "md", ["vllm", None]))
    with pytest.raises(InvalidObject) as err:
        decode.pod_record(pod, decode.Interner())
    assert str(err.value) == "Pod team/p0: spec.containers[0].command[1]: must be a string, not null"
    assert (err.value.what, err.value.path) == ("Pod team/p0", "spec.containers[0].command[1]")


@pytest.mark.parametrize("path, value, message", [
    (("status", "containerStatuses", 0, "lastState", "terminated", "exitCode"), True,
     "must be an integer, not a boolean"),
    (("status", "containerStatuses", 0, "lastState", "terminated", "exitCode"), 1 << 31, "integer out of range"),
    (("metadata", "ownerReferences"), [None], "must be an object, not null"),
    (("metadata", "labels", "app.kubernetes.io/component"), 3, "must be a string, not a number"),
    (("spec", "containers", 0, "env"), [{"name": "A", "valueFrom": {"secretKeyRef": "s"}}],
     "must be an object, not a string"),
])
def test_pod_fields_are_checked(path, value, message):
    pod = o.md_pod("p0", "md", o.vllm_argv("fp8"), exit_code=2)
    cur = pod
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    with pytest.raises(InvalidObject, match=message):
        decode.pod_record(pod)


def test_a_container_is_checked_even_when_an_equal_labels_map_was_seen_first():
    """The interner shares equal values across kinds of field; a value checked as labels is not
    thereby taken as a checked container."""
    intern = decode.Interner()
    first = o.md_pod("p0", "md", o.vllm_argv("fp8"))
    first["metadata"]["labels"] = {"name": "main", "command": "vllm serve"}
    decode.pod_record(first, intern)
    second = o.md_pod("p1", "md", None, containers=[{"name": "main", "command": "vllm serve"}])
    with pytest.raises(InvalidObject, match=r"spec.containers\[0\].command: must be a list of strings"):
        decode.pod_record(second, intern)


def test_replicas_share_checked_containers_and_stay_equal_to_unshared_records():
    intern = decode.Interner()
    pods = [o.md_pod(f"p{i}", "md", o.vllm_argv("fp8")) for i in range(3)]
    shared = [decode.pod_record(p, intern) for p in pods]
    alone = [decode.pod_record(p) for p in pods]
    assert shared == alone
    assert shared[0].containers[0] is shared[2].containers[0]


@pytest.mark.parametrize("builder, obj, path, message", [
    (decode.deployment_record, o.deployment("md", version=None), ("spec", "engine", "version"), "0.29"),
    (decode.binding_record, o.binding("b1", "fp8"), ("spec", "domain", "dtype"), ["fp8"]),
    (decode.setting_record, o.setting("true"), ("status", "value"), True),
])
def test_crd_fields_have_their_schema_types(builder, obj, path, message):
    cur = obj
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = 0.29 if message == "0.29" else message
    args = (obj, "cluster") if builder is decode.setting_record else (obj,)
    with pytest.raises(InvalidObject) as err:
        builder(*args)
    assert err.value.path == ".".join(path) and "must be a string" in err.value.problem


def test_a_pool_attached_deployment_must_name_its_binding():
    md = o.deployment("md")
    md["spec"]["kvCache"] = {"poolRef": {}}
    with pytest.raises(InvalidObject, match="missing spec.kvCache.poolRef.name"):
        decode.deployment_record(md)


def test_an_unexpected_exception_on_the_cluster_path_names_the_object(monkeypatch):
    """A bug in a builder (here: the engine model's container check) is still one line naming the
    object, without a file (the live-cluster path)."""
    def broken(*args):
        raise AttributeError("'NoneType' object has no attribute 'get'")

    monkeypatch.delenv("KVCACHE_DEBUG", raising=False)
    monkeypatch.setattr(decode, "_check_container", broken)
    with pytest.raises(PluginError) as err:
        decode.pod_record(as_listed(o.md_pod("p0", "md", o.vllm_argv("fp8"))))
    assert str(err.value).startswith("Pod team/p0: internal error while reading it: AttributeError")
    monkeypatch.setattr(decode, "as_env", broken)
    with pytest.raises(PluginError, match="^ModelDeployment team/md: internal error"):
        decode.deployment_record(o.deployment("md", roles=[{"name": "r", "env": []}]))
    monkeypatch.setenv("KVCACHE_DEBUG", "1")
    with pytest.raises(AttributeError):
        decode.deployment_record(o.deployment("md", roles=[{"name": "r", "env": []}]))
