"""Where a workload's Pod template lives (operator/paths.py), the one table the decoder, recover's
reader and its planner share: the template found, the merge patch that reaches it, and the decoder
naming the same path in its errors."""

import pytest

import objects as o
from kubectl_kvcache.errors import InvalidObject
from kubectl_kvcache.operator import decode, paths


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"])
def test_the_template_found_is_the_one_written_and_the_patch_reaches_it(kind):
    workload = o.workload("wl", [{"name": "vllm"}], kind=kind, binding_name="b1")
    template = paths.pod_template(workload)
    node = workload
    for key in paths.pod_template_path(kind):
        node = node[key]
    assert template is node and template["metadata"]["annotations"]["kvcache.gpustack.ai/binding"] == "b1"
    patch = paths.pod_template_patch(kind, {"kvcache.gpustack.ai/binding": "b2"})
    assert paths.pod_template(dict(patch, kind=kind)) == {"metadata": {"annotations": {
        "kvcache.gpustack.ai/binding": "b2"}}}


@pytest.mark.parametrize("spec", [None, {}, {"template": None}, {"template": []}, {"jobTemplate": "x"}, "x"])
def test_no_template_is_none(spec):
    for kind in ("Deployment", "CronJob"):
        assert paths.pod_template({"kind": kind, "spec": spec}) is None


def test_the_decoder_names_the_table_s_path():
    workload = o.workload("cj", [{"name": "vllm"}], kind="CronJob")
    workload["spec"]["jobTemplate"]["spec"]["template"] = []
    with pytest.raises(InvalidObject, match=r"spec\.jobTemplate\.spec\.template: must be an object, not a list"):
        decode.workload_record(workload)
