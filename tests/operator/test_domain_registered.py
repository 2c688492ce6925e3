"""DomainRegistered and status.kvCache as the operator writes them (gpustack/gpustack-operator
pkg/worker/controllers/worker/model_deployment_binding.go, read at
495764e848e4ebc48308b0e7d2521e1239a70dd1): modelDeploymentBindingUsable's order of reasons
(judge/holds.py binding_reason), the decode of the condition and the projection
(operator/decode.py), and the stand-in operator writing them the same way."""

import copy
import os
import sys

import pytest

import objects as o
from kubectl_kvcache.errors import InvalidObject
from kubectl_kvcache.judge import holds
from kubectl_kvcache.operator import decode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "cluster"))
import operator_standin  # noqa: E402


def record(obj):
    return decode.binding_record(obj)


def deleting(obj):
    obj = copy.deepcopy(obj)
    obj["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return obj


def test_binding_reason_follows_model_deployment_binding_usable():
    ready = o.binding("b1", "fp8")
    zero = o.binding("b1", "fp8", status=o.binding_status(granted=False))
    quota_false_but_ready = o.binding("b1", "fp8", status=dict(o.binding_status(granted=False), phase="Ready"))
    assert holds.binding_reason(record(ready)) == "Registered"
    assert holds.binding_reason(record(zero)) == "BindingNotReady"                   # phase not Ready
    assert holds.binding_reason(record(quota_false_but_ready)) == "BindingNotReady"  # QuotaGranted not True
    assert holds.binding_reason(record(deleting(zero))) == "BindingDeleting"         # asked first
    assert holds.binding_reason(record(deleting(ready))) == "BindingDeleting"
    assert holds.binding_reason(None) == "BindingNotFound"


def test_the_condition_and_projection_decode_and_bad_ones_exit_2():
    md = o.md_status(o.deployment("md"), domain=o.domain_condition("BindingDeleting", generation=7),
                     kv=o.kv_status(dtype="fp8_e4m3"))
    got = decode.deployment_record(md)
    assert (got.domain_registered.status, got.domain_registered.reason,
            got.domain_registered.observed_generation) == ("False", "BindingDeleting", 7)
    assert "the deletion waits until the deployment goes away" in got.domain_registered.message
    assert got.kv_status.dtype == got.status_dtype == "fp8_e4m3"
    none = decode.deployment_record(o.md_status(o.deployment("md")))
    assert none.domain_registered is None and none.kv_status is None
    bad = o.md_status(o.deployment("md"), kv=o.kv_status())
    bad["status"]["kvCache"]["domain"]["blockSize"] = "16"
    with pytest.raises(InvalidObject):
        decode.deployment_record(bad)


@pytest.mark.parametrize("read, reason", [
    (None, "BindingNotFound"),
    ({"binding": "b1", "usable": None}, "BindingDeleting"),
    ({"binding": "b1", "usable": False, "phase": "Error", "phaseMessage": "zero"}, "BindingNotReady"),
    ({"binding": "b1", "usable": False, "phase": "Ready", "quotaMessage": "no ledger"}, "BindingNotReady"),
    ({"binding": "b1", "usable": True, "phase": "Ready", "name": "default", "pool": "p"}, "Registered"),
])
def test_the_standin_writes_the_reasons_in_the_go_order(read, reason):
    c = operator_standin._domain_condition(True, "team", "b1", read, 3)
    assert (c["reason"], c["observedGeneration"]) == (reason, 3)
    assert c["status"] == ("True" if reason == "Registered" else "False")
    assert operator_standin._domain_condition(False, "team", None, None, 1)["reason"] == "NotApplicable"


def test_a_binding_found_gone_while_the_condition_still_says_registered():
    """Read on a cluster (read=True) and not there, while the operator's last pass registered it:
    the two disagree, and status.kvCache is the kept projection, not the current Binding."""
    md = decode.deployment_record(o.md_status(o.deployment("md"), domain=o.domain_condition("Registered", generation=2),
                                              kv=o.kv_status()))
    said = holds.domain_said(md, None, read=True)
    assert "the Binding as read now says BindingNotFound" in said
    assert "DomainRegistered=True (Registered, generation 2" in said
    assert "status.kvCache still names Binding b1" in said and "kept, not current" in said
    found = decode.deployment_record(o.md_status(o.deployment("md"), domain=o.domain_condition("BindingNotFound"),
                                                 kv=o.kv_status()))
    said = holds.domain_said(found, None, read=True)
    assert "says otherwise" not in said                 # the operator found it gone too
    assert "kept, not current" in said
