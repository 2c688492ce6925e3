"""operator/binding_status.py: whether a KVCachePoolBinding is usable, from the phases and
conditions the operator's pool reconciler writes (kv_cache_pool.go: observeKVCachePoolBinding,
summarizeKVCachePoolBinding) and the rule its deployments read it by
(model_deployment_binding.go: modelDeploymentBindingUsable)."""

import pytest

import objects as o
from kubectl_kvcache.operator import binding_status as bs


def _with(status, deleting=False):
    b = o.binding("new", "fp8_e4m3", domain="d2", status=status)
    if deleting:
        b["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return b


def _granted_false(reason="NoLedgerEntry"):
    st = o.binding_status("d2", granted=False)
    st["conditions"][2]["reason"] = reason
    return st


@pytest.mark.parametrize("status, state, words", [
    (o.binding_status("d2"), bs.USABLE, "phase Ready, QuotaGranted=True"),
    # an operator release before the QuotaGranted axis: Ready was reached on observation alone
    ({"phase": "Ready", "phaseMessage": "read"}, bs.USABLE, "no QuotaGranted condition"),
    ({}, bs.WAITING, "no phase yet"),                   # its pool's pass has not reached it (or never will)
    ({"phase": "Provisioning", "phaseMessage": "QuotaGranted has not been observed yet"}, bs.WAITING,
     "phase Provisioning: QuotaGranted has not been observed yet"),
    (o.binding_status("d2", granted=False), bs.WAITING, 'phase Error: the master grants reuse domain "d2" zero'),
    (_granted_false(), bs.WAITING, "phase Error"),     # no ledger entry yet: the ledger converges
    ({"phase": "Degraded"}, bs.WAITING, "phase Degraded"),
    # Ready with QuotaGranted False is not usable (modelDeploymentBindingUsable checks the axis itself)
    ({**o.binding_status("d2", granted=False), "phase": "Ready"}, bs.WAITING, "QuotaGranted=False (ZeroGranted)"),
    # the word the plugin used to wait for: never written by the operator, never usable
    ({"phase": "Bound"}, bs.WAITING, "phase Bound"),
    (o.binding_status("d2", contested_by=["team-b/other"]), bs.NEVER,
     "DomainExclusive=False (DomainClaimedByMultipleBindings): reuse domain \"d2\" is also claimed by team-b/other"),
])
def test_readiness_follows_the_operators_phases_and_conditions(status, state, words):
    found = bs.readiness(_with(status))
    assert (found.state, words in found.text) == (state, True), found.text


def test_a_binding_being_deleted_never_becomes_usable_whatever_its_phase():
    found = bs.readiness(_with({"phase": "Deleting", "phaseMessage": "deletion is held"}, deleting=True))
    assert found.state == bs.NEVER and "being deleted" in found.text
    assert bs.readiness(_with(o.binding_status("d2"), deleting=True)).state == bs.NEVER


def test_not_there_is_waited_for():
    assert bs.readiness(None).state == bs.WAITING


def test_the_phases_are_the_operators_five():
    assert bs.PHASES == ("Provisioning", "Ready", "Degraded", "Error", "Deleting")
