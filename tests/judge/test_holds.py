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


# -- a store blink (gpustack/gpustack-operator pkg/worker/controllers/worker/model_deployment_rollout.go,
# observeModelDeploymentRollout, the `held > 0` branch, read at 196051b8bc13c4c16c3d4725783aca69a913648f):
# without the connection the desired render has no connector, so every attached replica differs from it
# "whether or not anyone edited the deployment"; the condition "DOES NOT SAY A CHANGE IS WAITING". When the
# store returns, replicas nobody edited match again and stay; only an edit that changed a running replica's
# rendered Pod (withheld, not dropped) rolls.

def blink_pods(n=2, extra=()):
    """Replicas rendered before the outage, with the connector's dtype: what a blink leaves running."""
    return [o.md_pod(f"md-{k}", "md", o.vllm_argv("fp8", extra=extra)) for k in range(n)]


def test_a_store_blink_promises_no_rollout(tmp_path):
    snap = snapshot_of(unusable_binding(), held_md(), *blink_pods(), tmp_path=tmp_path)
    report = verify.verify(snap)
    d, = report.deployments
    text = d.hold.text
    assert "nothing is known to be waiting" in text
    assert "whether or not the deployment was edited" in text
    assert "stay as they are (no rollout)" in text and "only a replica whose rendered Pod changed" in text
    assert "roll once" not in text and "the held replicas roll" not in text
    assert d.hold.waiting == "" and d.to_dict()["held"]["waiting"] is None
    assert "QuotaGranted" in text           # what ends the hold is still named
    progress = rollout.progress(report, snap.deployments, snap.setting)
    assert progress.outcome == rollout.HELD  # waiting does not end it either way


def test_a_store_blink_on_a_pool_without_endpoint_promises_no_rollout(tmp_path):
    snap = snapshot_of(o.binding("b1", "fp8"), o.pool(endpoint=None), held_md(), *blink_pods(), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "publishes no client endpoint" in d.hold.cause
    assert "nothing is known to be waiting" in d.hold.text and "roll once" not in d.hold.text


def test_a_hold_with_an_edited_role_still_says_the_edit_rolls(tmp_path):
    """Control: the role's extraArgs changed after the replicas were rendered (their argv lacks
    them): that edit waits behind the hold and rolls once the connection resolves."""
    md = o.deployment("md", roles=[o.role(replicas=2, extra_args=["--max-model-len", "8192"])])
    md = o.md_status(md, o.rollout_condition("RolloutHeldByCache", held=2, outdated=2))
    snap = snapshot_of(unusable_binding(), md, *blink_pods(), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "2 of its replicas run an earlier spec" in d.hold.waiting
    assert "the held replicas roll once it is Ready with QuotaGranted=True" in d.hold.text
    assert "nothing is known to be waiting" not in d.hold.text


def test_a_hold_after_a_spec_edit_the_operator_has_not_answered_keeps_the_rollout(tmp_path):
    """Control: metadata.generation ahead of the hold's observedGeneration."""
    md = o.md_status(o.deployment("md", roles=[o.role(replicas=2)]),
                     o.rollout_condition("RolloutHeldByCache", held=2, outdated=2, generation=1), generation=2)
    d, = verify.verify(snapshot_of(unusable_binding(), md, *blink_pods(), tmp_path=tmp_path)).deployments
    assert "generation 2, the condition is for 1" in d.hold.waiting
    assert "the held replicas roll once" in d.hold.text


def test_each_held_replica_is_told_its_own_case(tmp_path):
    """verify's per-replica fix (judge/verify.py _held_fix) words the replica's own case."""
    md = o.deployment("md", roles=[o.role(replicas=2)])
    md = o.md_status(md, o.rollout_condition("RolloutHeldByCache", held=2, outdated=2))
    pods = [o.md_pod("md-0", "md", o.vllm_argv("fp8_e5m2")), o.md_pod("md-1", "md", o.vllm_argv())]
    items = {i.pod: i for i in verify.verify(snapshot_of(unusable_binding(), md, *pods, tmp_path=tmp_path)).items}
    assert "this replica runs an earlier spec" in items["md-0"].fix and "it rolls once" in items["md-0"].fix
    assert "this replica has no --kv-cache-dtype" in items["md-1"].fix and "it rolls once" in items["md-1"].fix
    assert "nothing is known to be waiting" not in items["md-0"].fix


# -- DomainRegistered and status.kvCache (model_deployment_binding.go, read at
# 495764e848e4ebc48308b0e7d2521e1239a70dd1: resolveModelDeploymentDomain, modelDeploymentBindingUsable,
# observeModelDeploymentDomain)

def test_decode_reads_domain_registered_and_the_kv_cache_status(tmp_path):
    md = o.md_status(o.deployment("md"), domain=o.domain_condition("BindingNotFound", generation=4),
                     kv=o.kv_status(dtype="fp8"))
    got = snapshot_of(md, tmp_path=tmp_path).deployments["team", "md"]
    c = got.domain_registered
    assert (c.status, c.reason, c.observed_generation, c.since) == ("False", "BindingNotFound", 4,
                                                                    "2026-01-01T00:00:00Z")
    assert (got.kv_status.binding, got.kv_status.pool, got.kv_status.domain, got.kv_status.block_size,
            got.kv_status.dtype) == ("b1", "pool-a", "default", 16, "fp8")


def test_a_binding_not_in_the_input_is_told_by_the_operators_condition(tmp_path):
    md = o.md_status(o.deployment("md"), o.rollout_condition("RolloutHeldByCache", held=1, outdated=1),
                     domain=o.domain_condition("BindingNotReady", phase="Error", phase_message="zero bytes",
                                               generation=3),
                     kv=o.kv_status())
    snap = snapshot_of(md, o.md_pod("md-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "the Binding b1 is not in the input" in d.hold.cause
    assert "DomainRegistered=False (BindingNotReady, generation 3" in d.hold.cause
    assert "is Error: zero bytes" in d.hold.cause
    assert "status.kvCache names Binding b1 (domain default, dtype fp8, pool pool-a) (as that pass read it)" \
        in d.hold.cause


def test_a_kept_kv_cache_status_after_the_binding_is_gone_is_the_last_known(tmp_path):
    md = o.md_status(o.deployment("md"), domain=o.domain_condition("BindingNotFound"), kv=o.kv_status())
    snap = snapshot_of(md, o.md_pod("md-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "the last it read before the Binding went away" in d.domain
    assert d.to_dict()["operatorDomain"] == d.domain


def test_the_binding_read_and_the_operators_condition_disagreeing_is_said(tmp_path):
    """The Binding read now is Ready with QuotaGranted; the operator's last pass found it not ready."""
    md = o.md_status(o.deployment("md"), o.rollout_condition("UpToDate"),
                     domain=o.domain_condition("BindingNotReady", phase="Error", phase_message="zero bytes",
                                               generation=2), kv=o.kv_status())
    snap = snapshot_of(o.binding("b1", "fp8"), md, o.md_pod("md-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "the Binding as read now says Registered" in d.domain
    assert "DomainRegistered=False (BindingNotReady, generation 2" in d.domain
    agree = o.md_status(o.deployment("md"), o.rollout_condition("UpToDate"),
                        domain=o.domain_condition("Registered"), kv=o.kv_status())
    d, = verify.verify(snapshot_of(o.binding("b1", "fp8"), agree, o.md_pod("md-0", "md", o.vllm_argv("fp8")),
                                   tmp_path=tmp_path)).deployments
    assert d.domain == ""


def test_a_kv_cache_status_naming_another_binding_is_not_the_current_one(tmp_path):
    md = o.md_status(o.deployment("md"), o.rollout_condition("UpToDate"), domain=o.domain_condition("Registered"),
                     kv=o.kv_status(binding="b-old", dtype="fp8_e5m2"))
    snap = snapshot_of(o.binding("b1", "fp8"), md, o.md_pod("md-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    d, = verify.verify(snap).deployments
    assert "status.kvCache names Binding b-old" in d.domain and "not the Binding read now" in d.domain


def test_a_binding_left_out_of_the_input_is_not_said_missing(tmp_path):
    """Saved files without the Binding: the line says it is not in the input and quotes the
    operator's own verdict (here Registered at generation 5) instead of calling it missing."""
    from kubectl_kvcache.render.verify import deployment_line

    md = o.md_status(o.deployment("md"), o.rollout_condition("UpToDate"),
                     domain=o.domain_condition("Registered", generation=5), kv=o.kv_status())
    d, = verify.verify(snapshot_of(md, o.md_pod("md-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)).deployments
    text = deployment_line(d)
    assert "KVCachePoolBinding b1 is not in the input" in text and "does not exist" not in text
    assert "DomainRegistered=True (Registered, generation 5" in text
