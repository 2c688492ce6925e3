"""Record builders check the type of every field they read, on the live-cluster path too (no
file there): the error names the object and the field path; valid objects are untouched."""

import copy

import pytest

import objects as o
from kubectl_kvcache.operator import records
from kubectl_kvcache.errors import InvalidObject


def as_listed(obj):
    """A list item as the API server returns it: no kind, no apiVersion."""
    obj = copy.deepcopy(obj)
    obj.pop("kind"), obj.pop("apiVersion")
    return obj


def test_a_listed_pod_with_a_bad_field_is_named_with_its_kind_and_path():
    pod = as_listed(o.md_pod("p0", "md", ["vllm", None]))
    with pytest.raises(InvalidObject) as err:
        records.pod_record(pod, records.Interner())
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
        records.pod_record(pod)


def test_a_container_is_checked_even_when_an_equal_labels_map_was_seen_first():
    """The interner shares equal values across kinds of field; a value checked as labels is not
    thereby taken as a checked container."""
    intern = records.Interner()
    first = o.md_pod("p0", "md", o.vllm_argv("fp8"))
    first["metadata"]["labels"] = {"name": "main", "command": "vllm serve"}
    records.pod_record(first, intern)
    second = o.md_pod("p1", "md", None, containers=[{"name": "main", "command": "vllm serve"}])
    with pytest.raises(InvalidObject, match=r"spec.containers\[0\].command: must be a list of strings"):
        records.pod_record(second, intern)


def test_replicas_share_checked_containers_and_stay_equal_to_unshared_records():
    intern = records.Interner()
    pods = [o.md_pod(f"p{i}", "md", o.vllm_argv("fp8")) for i in range(3)]
    shared = [records.pod_record(p, intern) for p in pods]
    alone = [records.pod_record(p) for p in pods]
    assert shared == alone
    assert shared[0].containers[0] is shared[2].containers[0]


@pytest.mark.parametrize("builder, obj, path, message", [
    (records.deployment_record, o.deployment("md", version=None), ("spec", "engine", "version"), "0.29"),
    (records.binding_record, o.binding("b1", "fp8"), ("spec", "domain", "dtype"), ["fp8"]),
    (records.setting_record, o.setting("true"), ("status", "value"), True),
])
def test_crd_fields_have_their_schema_types(builder, obj, path, message):
    cur = obj
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = 0.29 if message == "0.29" else message
    args = (obj, "cluster") if builder is records.setting_record else (obj,)
    with pytest.raises(InvalidObject) as err:
        builder(*args)
    assert err.value.path == ".".join(path) and "must be a string" in err.value.problem


def test_a_pool_attached_deployment_must_name_its_binding():
    md = o.deployment("md")
    md["spec"]["kvCache"] = {"poolRef": {}}
    with pytest.raises(InvalidObject, match="missing spec.kvCache.poolRef.name"):
        records.deployment_record(md)


def test_an_unexpected_exception_on_the_cluster_path_names_the_object(monkeypatch):
    """A bug in a builder (here: the engine model's container check) is still one line naming the
    object, without a file (the live-cluster path)."""
    def broken(*args):
        raise AttributeError("'NoneType' object has no attribute 'get'")

    monkeypatch.delenv("KVCACHE_DEBUG", raising=False)
    monkeypatch.setattr(records, "_check_container", broken)
    with pytest.raises(records.PluginError) as err:
        records.pod_record(as_listed(o.md_pod("p0", "md", o.vllm_argv("fp8"))))
    assert str(err.value).startswith("Pod team/p0: internal error while reading it: AttributeError")
    monkeypatch.setattr(records, "_env", broken)
    with pytest.raises(records.PluginError, match="^ModelDeployment team/md: internal error"):
        records.deployment_record(o.deployment("md", roles=[{"name": "r", "env": []}]))
    monkeypatch.setenv("KVCACHE_DEBUG", "1")
    with pytest.raises(AttributeError):
        records.deployment_record(o.deployment("md", roles=[{"name": "r", "env": []}]))
