"""Held rollouts and the operator's own status (judge/holds.py), on objects shaped as the
operator's Go types write them (tests/objects.py md_status, rollout_condition)."""

import json

import objects as o
from kubectl_kvcache.judge import rollout, verify
from kubectl_kvcache.load import manifests
from kubectl_kvcache.load.scope import Scope


def snapshot_of(*objs, tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return manifests.load_files([str(path)], Scope())


def unusable_binding():
    """QuotaGranted False (ZeroGranted), as after a master restart: the connection does not resolve."""
    return o.binding("b1", "fp8", status=o.binding_status(granted=False))


def held_md(replicas=2):
    md = o.deployment("md", roles=[o.role(replicas=replicas)])
    return o.md_status(md, o.rollout_condition("RolloutHeldByCache", held=replicas, outdated=replicas))


def test_status_roles_are_read_as_the_operator_writes_them(tmp_path):
    md = o.md_status(o.deployment("md", roles=[o.role(replicas=2)]), ready=1)
    snap = snapshot_of(o.binding("b1", "fp8"), md, tmp_path=tmp_path)
    status = snap.deployments["team", "md"].role_status("server")
    assert (status.desired, status.ready, status.quota_reserved, status.unmanaged, status.kind) == (2, 1, 2, False,
                                                                                                   "server")
    report = verify.verify(snap)
    assert "status.roles reports 2 desired, 1 ready" in report.items[0].reason
    assert "None" not in report.items[0].reason


def test_a_held_rollout_is_reported_held_with_its_cause_not_as_the_next_reconcile(tmp_path):
    pods = [o.md_pod(f"md-{n}", "md", o.vllm_argv()) for n in range(2)]      # rendered before: no dtype
    report = verify.verify(snapshot_of(unusable_binding(), held_md(), *pods, tmp_path=tmp_path))
    rows = [i for i in report.items if i.pod]
    assert rows and all(i.status == verify.MISSING for i in rows)
    for item in rows:
        assert "held" in item.fix and "KVCachePoolBinding b1" in item.fix and "QuotaGranted" in item.fix
        assert "next reconcile" not in item.fix
    d, = report.deployments
    assert d.hold is not None and d.hold.binding == "b1" and not d.complete
    assert d.to_dict()["held"]["reason"] == "RolloutHeldByCache"


def test_a_hold_ends_the_wait_at_once_naming_the_binding(tmp_path):
    pods = [o.md_pod(f"md-{n}", "md", o.vllm_argv()) for n in range(2)]
    snap = snapshot_of(unusable_binding(), held_md(), *pods, tmp_path=tmp_path)
    progress = rollout.progress(verify.verify(snap), snap.deployments, snap.setting)
    assert progress.outcome == rollout.HELD
    assert [h.binding for h in progress.held] == ["b1"]


def test_a_hold_on_a_usable_binding_points_at_the_pool(tmp_path):
    pods = [o.md_pod(f"md-{n}", "md", o.vllm_argv()) for n in range(2)]
    pool = o.pool(endpoint=None)
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), pool, held_md(), *pods, tmp_path=tmp_path))
    d, = report.deployments
    assert "KVCachePool pool-a publishes no client endpoint" in d.hold.cause


def test_a_replica_created_during_a_hold_is_recognised(tmp_path):
    """The operator reports UpToDate (the replica matches a render without a connector); the Binding
    does not resolve, so no reconcile brings the dtype until it does."""
    md = o.md_status(o.deployment("md"), o.rollout_condition("UpToDate"))
    report = verify.verify(snapshot_of(unusable_binding(), md, o.md_pod("md-0", "md", o.vllm_argv()),
                                       tmp_path=tmp_path))
    item, = report.items
    assert item.status == verify.MISSING
    assert "created while the connection did not resolve" in item.fix
    assert "when the replica rolls at" not in item.fix


def test_complete_needs_replicas_up_to_date_for_the_current_generation(tmp_path):
    binding = o.binding("b1", "fp8")
    pod = o.md_pod("md-0", "md", o.vllm_argv("fp8"))

    def complete(condition, generation=None):
        md = o.md_status(o.deployment("md"), condition, generation=generation)
        d, = verify.verify(snapshot_of(binding, md, pod, tmp_path=tmp_path)).deployments
        return d.complete

    assert complete(o.rollout_condition("UpToDate", generation=3), generation=3)
    assert not complete(o.rollout_condition("UpToDate", generation=2), generation=3)
    assert not complete(o.rollout_condition("RolloutInProgress", outdated=1))
    assert not complete(o.rollout_condition("RolloutNotObserved"))
    assert complete(None)           # an operator that writes no such condition: the argv decides


def test_a_mismatch_is_not_settled_while_the_operator_says_it_is_rolling(tmp_path):
    md = o.md_status(o.deployment("md"), o.rollout_condition("RolloutInProgress", outdated=1))
    snap = snapshot_of(o.binding("b1", "fp8"), md, o.md_pod("md-0", "md", o.vllm_argv("fp8_e5m2")),
                       tmp_path=tmp_path)
    item, = verify.verify(snap).items
    assert item.status == verify.MISMATCH
    assert not rollout.settled(item, snap.deployments["team", "md"])


def test_a_hold_on_weights_names_weights_ready_not_the_store(tmp_path):
    md = o.md_status(o.deployment("md"), {"type": "ReplicasUpToDate", "status": "False",
                                          "reason": "RolloutHeldByWeights", "message": "held"})
    snap = snapshot_of(o.binding("b1", "fp8"), md, o.md_pod("md-0", "md", o.vllm_argv()), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert d.hold.reason == "RolloutHeldByWeights" and "WeightsReady" in d.hold.cause
    assert rollout.progress(verify.verify(snap), snap.deployments, snap.setting).outcome == rollout.HELD
