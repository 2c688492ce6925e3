"""The live judge (judge/live.py) against the judge it stands in for: after any sequence of
batches of Pod, ModelDeployment, Binding and Setting events, its report is verify.verify's for
the same objects, and each batch returns exactly the rows whose shown cells changed."""

from hypothesis import HealthCheck, given, settings, strategies as st

import objects as o
from kubectl_kvcache.judge import live, rollout, verify
from kubectl_kvcache.load.manifests import snapshot_of
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.operator import decode, records

NS = "team"
BINDINGS = {"b1": "fp8", "b2": "bf16", "b3": None}      # vLLM accepts fp8, rejects bf16; b3 has no dtype


def pod_obj(name, md, dtype, phase, role="server", crashed=False):
    """crashed: the engine container last exited with the parser's code 2 (confirmed REJECTED when
    the argv is rejected; a Pod of an older render, when the Setting or the Binding moved since)."""
    pod = o.md_pod(name, md, o.vllm_argv(dtype), role=role, exit_code=2 if crashed else None)
    pod["status"]["phase"] = phase
    return pod


def md_obj(name, binding, replicas, extra=()):
    return o.deployment(name, binding_name=binding,
                        roles=[o.role("server", replicas=replicas, extra_args=list(extra) or None)])


pods = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.sampled_from([None, "fp8", "bf16"]),
                 st.sampled_from(["Running", "Pending"]), st.booleans())
events = st.one_of(
    st.tuples(st.just("pod"), pods),
    st.tuples(st.just("delpod"), st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 3))),
    st.tuples(st.just("md"), st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["b1", "b2", "b3", "nob"]),
                                       st.integers(0, 3), st.booleans())),
    st.tuples(st.just("delmd"), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("binding"), st.tuples(st.sampled_from(list(BINDINGS)), st.sampled_from(["fp8", "bf16", None]))),
    st.tuples(st.just("delbinding"), st.sampled_from(list(BINDINGS))),
    st.tuples(st.just("setting"), st.sampled_from(["true", "false", None, ("false", "true"), ("true", "false")])),
    st.tuples(st.just("injected"), st.tuples(st.integers(0, 1), st.sampled_from(["b1", "b2"]))),
)


def snapshot(objects):
    snap = snapshot_of([(obj, "test", None) for obj in objects.values()], Scope(namespace=NS))
    snap.namespace = NS
    return snap


def judge_event(objects, event):
    """Apply one event to the objects; return the live judge's event for it."""
    kind, arg = event
    if kind == "pod":
        md, n, dtype, phase, crashed = arg
        name = f"{md}-server-{n}"
        obj = objects[("Pod", name)] = pod_obj(name, md, dtype, phase, crashed=crashed)
        return (live.POD, (NS, name), decode.pod_record(obj))
    if kind == "delpod":
        name = f"{arg[0]}-server-{arg[1]}"
        objects.pop(("Pod", name), None)
        return (live.POD, (NS, name), None)
    if kind == "md":
        name, binding, replicas, own_flag = arg
        obj = objects[("MD", name)] = md_obj(name, binding, replicas, ["--kv-cache-dtype", "auto"] if own_flag else ())
        return (live.DEPLOYMENT, (NS, name), decode.deployment_record(obj))
    if kind == "delmd":
        objects.pop(("MD", arg), None)
        return (live.DEPLOYMENT, (NS, arg), None)
    if kind == "binding":
        name, dtype = arg
        obj = objects[("B", name)] = o.binding(name, dtype)
        return (live.BINDING, (NS, name), decode.binding_record(obj))
    if kind == "delbinding":
        objects.pop(("B", arg), None)
        return (live.BINDING, (NS, arg), None)
    if kind == "setting":
        if arg is None:
            objects.pop(("S", ""), None)
            return (live.SETTING, None, records.default_setting())
        status, spec = arg if isinstance(arg, tuple) else (arg, None)     # (status, spec): in flight (issue 48)
        obj = objects[("S", "")] = o.setting(status, spec_value=spec)
        return (live.SETTING, None, decode.setting_record(obj, "file"))   # as snapshot_of reads it
    n, binding = arg
    name = f"injected-{n}"
    obj = objects[("Pod", name)] = o.injected_pod(name, binding, containers=[o.container("main", args=["--x"])])
    return (live.POD, (NS, name), decode.pod_record(obj))


def start_objects():
    objects = {("B", n): o.binding(n, d) for n, d in BINDINGS.items()}
    objects[("MD", "a")] = md_obj("a", "b1", 2)
    objects[("MD", "b")] = md_obj("b", "b2", 1)
    objects[("Pod", "a-server-0")] = pod_obj("a-server-0", "a", "fp8", "Running")
    objects[("Pod", "c-server-0")] = pod_obj("c-server-0", "c", "fp8", "Running")    # its deployment is missing
    objects[("S", "")] = o.setting("true")
    return objects


def same(live_report, report):
    assert live_report.to_dict() == report.to_dict()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(events, min_size=1, max_size=4), max_size=6))
def test_every_batch_leaves_the_report_verify_gives(batches):
    objects = start_objects()
    judge = live.LiveJudge(snapshot(objects))
    full = verify.verify(snapshot(objects))
    same(judge.report(), full)
    assert [i.key for i in judge.first] == [i.key for i in full.items]
    seen = {i.key: rollout.Changes.signature(i) for i in full.items}
    for batch in batches:
        changed = judge.apply([judge_event(objects, e) for e in batch])
        full = verify.verify(snapshot(objects))
        same(judge.report(), full)
        now = {i.key: rollout.Changes.signature(i) for i in full.items}
        keys = [i.key for i in changed]
        assert len(set(keys)) == len(keys) and set(keys) == {k for k in now if seen.get(k) != now[k]}, batch
        # a Pod row that was shown and is no longer there: the watch prints it once more (issue 39)
        assert {i.key for i in judge.take_gone()} == {k for k in seen if len(k) == 2 and k not in now}, batch
        seen = now
        p, q = judge.progress(), rollout.progress(full, snapshot(objects).deployments)
        assert (p.counts, p.done, p.total, p.outcome) == (q.counts, q.done, q.total, q.outcome)
        assert [i.key for i in p.left] == [i.key for i in q.left]
        assert [i.key for i in p.rejected] == [i.key for i in q.rejected]


def test_a_binding_created_later_is_judged_at_once():
    """The row that said `Binding b9 not found` with its `create KVCachePoolBinding` fix is judged
    against the Binding as soon as it exists: before, a watch judged it against the first list."""
    objects = start_objects()
    objects[("MD", "a")] = md_obj("a", "b9", 1)
    judge = live.LiveJudge(snapshot(objects))
    row, = [i for i in judge.report().items if i.pod == "a-server-0"]
    assert row.status == verify.UNKNOWN and "create KVCachePoolBinding b9" in row.fix
    changed = judge.apply([judge_event(objects, ("binding", ("b9", "fp8")))])
    assert [(i.pod, i.status) for i in changed] == [("a-server-0", verify.OK)]


def test_the_setting_turned_off_judges_every_row_as_off():
    objects = start_objects()
    judge = live.LiveJudge(snapshot(objects))
    changed = judge.apply([judge_event(objects, ("setting", "false"))])
    assert changed and all(i.expected is None for i in judge.report().items)
    assert all(verify.OFF_REASON in i.reason for i in judge.report().items if i.status == verify.OK)


def test_only_the_named_deployments_are_followed():
    objects = start_objects()
    judge = live.LiveJudge(snapshot(objects), live.Selection(names=frozenset({"a"})))
    report = judge.report()
    assert {i.deployment for i in report.items} == {"a"} and [d.name for d in report.deployments] == ["a"]
    assert judge.apply([judge_event(objects, ("pod", ("b", 0, "bf16", "Running", False)))]) == []


def test_a_selector_picks_deployments_by_their_pods_labels_and_keeps_them():
    objects = start_objects()
    wanted = {"app.kubernetes.io/instance": "a"}
    judge = live.LiveJudge(snapshot(objects), live.Selection(matches=lambda labels: wanted.items() <= labels.items()))
    assert [d.name for d in judge.report().deployments] == ["a"]
    judge.apply([judge_event(objects, ("delpod", ("a", 0)))])
    assert [d.name for d in judge.report().deployments] == ["a"]     # still followed, its replicas NO-POD
    assert {i.status for i in judge.report().items} == {verify.NO_POD}


def test_a_batch_judges_only_the_pods_it_touches(monkeypatch):
    """Proportional: a Pod event judges that Pod once; a Binding event the Pods of the
    deployments naming it; a Setting left as it was judges nothing (timings: bench/rejudge.py)."""
    objects = {("B", "b1"): o.binding("b1", "fp8"), ("B", "b2"): o.binding("b2", "fp8"), ("S", ""): o.setting("true")}
    for d in range(20):
        objects[("MD", f"m{d}")] = md_obj(f"m{d}", "b1" if d < 5 else "b2", 10)
        for n in range(10):
            objects[("Pod", f"m{d}-server-{n}")] = pod_obj(f"m{d}-server-{n}", f"m{d}", "fp8", "Running")
    judge = live.LiveJudge(snapshot(objects))
    judged = []
    real = verify.judge_candidate
    monkeypatch.setattr(verify, "judge_candidate", lambda cand, *a, **kw: judged.append(cand.pod.name) or
                        real(cand, *a, **kw))
    changed = judge.apply([judge_event(objects, ("pod", ("m7", 3, "fp8", "Pending", False)))])
    assert judged == ["m7-server-3"] and [i.pod for i in changed] == ["m7-server-3"]
    judged.clear()
    judge.apply([judge_event(objects, ("binding", ("b1", "fp8")))])
    assert sorted(judged) == sorted(f"m{d}-server-{n}" for d in range(5) for n in range(10))
    judged.clear()
    assert judge.apply([judge_event(objects, ("setting", "true"))]) == [] and judged == []
    same(judge.report(), verify.verify(snapshot(objects)))


def test_a_setting_in_flight_rejudges_every_row_and_back():
    """Only spec.value moves (status.value still true): every row is judged again, with both values."""
    objects = start_objects()
    judge = live.LiveJudge(snapshot(objects))
    changed = judge.apply([judge_event(objects, ("setting", ("true", "false")))])
    assert changed and judge.report().in_flight is not None
    row, = [i for i in judge.report().items if i.pod == "a-server-0"]
    assert row.status == verify.UNKNOWN and row.cause.code == "setting"
    same(judge.report(), verify.verify(snapshot(objects)))
    judge.apply([judge_event(objects, ("setting", "false"))])
    assert judge.report().in_flight is None
    same(judge.report(), verify.verify(snapshot(objects)))
