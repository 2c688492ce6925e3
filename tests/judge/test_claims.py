"""judge/checks/claims.py through checks.check: which stored Bindings contest one domain on one
master, as the operator's pool reconciler decides (kv_cache_pool.go: observeKVCachePoolMaster):
per backend, no winner, releasing Bindings and unserved pools claim nothing, and a pool the input
does not hold is said, never guessed."""

import objects as o
import pytest

from kubectl_kvcache.judge import checks
from kubectl_kvcache.judge.checks import claims
from kubectl_kvcache.operator import decode, records

NS = "team"


def binding(name, pool, domain="shared", ns=NS, phase="Ready", created="", deleting="", used_by=()):
    obj = o.binding(name, "fp8_e4m3", ns=ns, pool=pool, domain=domain, used_by=used_by)
    obj["status"]["phase"] = phase
    if created:
        obj["metadata"]["creationTimestamp"] = created
    if deleting:
        obj["metadata"]["deletionTimestamp"] = deleting
    return decode.binding_record(obj)


def pool(name, *backends):
    return decode.pool_record(o.pool(name, backends=backends))


def snapshot(bindings, pools=(), source="file", pools_read=True, namespace=None):
    s = records.Snapshot(source=source, namespace=namespace)
    s.setting = records.default_setting()
    s.bindings = {(b.namespace, b.name): b for b in bindings}
    s.pools = {p.name: p for p in pools} if pools_read else None
    return s


def report(*args, **kw):
    return checks.check(snapshot(*args, **kw))


def found(r, code, name):
    return [f for f in r.findings if f.code == code and f.name == name]


def claimed(r):
    return sorted(f.name for f in r.findings if f.code == "binding-domain-claimed")


def verdict(r, name):
    return next(e.verdict for e in r.bindings if e.name == name)


def test_one_pool_is_one_master_and_neither_binding_holds_the_domain():
    r = report([binding("a", "p1"), binding("b", "p1")], [pool("p1", "mooncake")])
    assert claimed(r) == ["a", "b"]
    f = found(r, "binding-domain-claimed", "b")[0]
    assert f.severity == "error" and "claimed by KVCachePoolBinding team/a" in f.message
    assert "served by backend mooncake" in f.message and "manages it for neither" in f.message
    assert "no Binding on backend mooncake uses" in f.fix
    assert verdict(r, "a") == "DOMAIN CLAIMED by team/b" and verdict(r, "b") == "DOMAIN CLAIMED by team/a"


def test_two_pools_on_one_backend_contest_the_domain_and_the_message_names_the_backend():
    r = report([binding("a", "p1"), binding("b", "p2", ns="other")],
               [pool("p1", "mooncake"), pool("p2", "mooncake")])
    assert claimed(r) == ["a", "b"]
    f = found(r, "binding-domain-claimed", "a")[0]
    assert "other/b (pool p2)" in f.message and "backend mooncake serves both Bindings' pools" in f.message


def test_two_pools_on_two_backends_keep_two_ledgers():
    r = report([binding("a", "p1"), binding("b", "p2")], [pool("p1", "mc-1"), pool("p2", "mc-2")])
    assert claimed(r) == [] and not [f for f in r.findings if f.code == "unchecked"]
    assert "DOMAIN" not in verdict(r, "a")


def test_another_domain_name_on_the_same_master_is_no_claim():
    r = report([binding("a", "p1", domain="x"), binding("b", "p1", domain="y")], [pool("p1", "mooncake")])
    assert claimed(r) == []


@pytest.mark.parametrize("backends", [(), ("mc-1", "mc-2")])
def test_a_pool_naming_no_backend_or_several_is_served_by_none_so_it_claims_nothing(backends):
    # resolveKVCachePoolBackend: BackendNotSingular; observeKVCachePoolMaster skips its Bindings
    r = report([binding("a", "p1"), binding("b", "p2"), binding("c", "p1")],
               [pool("p1", *backends), pool("p2", "mc-1")])
    assert claimed(r) == []
    assert claims.master(snapshot([], [pool("p1", *backends)]), "p1")[0] == claims.UNSERVED


def test_a_pool_the_input_does_not_hold_is_said_not_guessed():
    r = report([binding("a", "p1"), binding("b", "p2")], [pool("p1", "mooncake")])
    assert claimed(r) == []
    for name, other in (("a", "b"), ("b", "a")):
        (f,) = found(r, "unchecked", name)
        assert f"claimed by KVCachePoolBinding team/{other}" in f.message
        assert "KVCachePool p2 is not in the input" in f.message and "is not checked" in f.message
        assert "add the KVCachePools to the input" in f.fix
        assert verdict(r, name).split(", ")[-1] == "UNKNOWN"


def test_pools_that_could_not_be_read_leave_two_pools_undecided_but_not_one():
    r = report([binding("a", "p1"), binding("b", "p2"), binding("c", "p3", domain="d"),
                binding("e", "p3", domain="d")], source="cluster", pools_read=False)
    assert "the KVCachePools could not be read" in found(r, "unchecked", "a")[0].message
    assert "may list kvcachepools" in found(r, "unchecked", "a")[0].fix
    # one pool is one master whichever backend it names: that is not a guess
    assert claimed(r) == ["c", "e"]
    assert "whichever backend serves it" in found(r, "binding-domain-claimed", "c")[0].message


def test_a_pool_missing_from_the_cluster_is_served_by_nothing():
    r = report([binding("a", "p1"), binding("b", "gone")], [pool("p1", "mooncake")], source="cluster")
    assert claimed(r) == [] and not found(r, "unchecked", "a")


@pytest.mark.parametrize("older, ready", [("a", "a"), ("a", "b"), ("b", None)])
def test_no_binding_holds_a_contested_domain_whatever_its_phase_or_age(older, ready):
    # the reconciler picks no winner (DomainClaimedByMultipleBindings on both): neither a phase
    # Ready written before the race nor creationTimestamp decides
    stamps = {older: "2026-01-01T00:00:00Z"}
    made = [binding(n, "p1", phase="Ready" if n == ready else "Error",
                    created=stamps.get(n, "2026-02-01T00:00:00Z")) for n in ("a", "b")]
    assert claimed(report(made, [pool("p1", "mooncake")])) == ["a", "b"]


def test_a_releasing_binding_claims_nothing_but_a_deleting_one_still_held_does():
    gone = binding("old", "p1", deleting="2026-03-01T00:00:00Z")
    held = binding("old", "p1", deleting="2026-03-01T00:00:00Z", used_by=["md"])
    assert claimed(report([gone, binding("new", "p1")], [pool("p1", "mooncake")])) == []
    assert claimed(report([held, binding("new", "p1")], [pool("p1", "mooncake")])) == ["new", "old"]


def test_three_claimants_each_name_the_other_two():
    r = report([binding("a", "p1"), binding("b", "p1"), binding("c", "p2")],
               [pool("p1", "mooncake"), pool("p2", "mooncake")])
    assert verdict(r, "a") == "DOMAIN CLAIMED by team/b, team/c"
    f = found(r, "binding-domain-claimed", "a")[0]
    assert "team/b and team/c (pool p2)" in f.message and "backend mooncake serves all their pools" in f.message


def test_with_a_namespace_only_its_bindings_are_judged_against_every_binding_read():
    r = report([binding("a", "p1"), binding("b", "p1", ns="other")], [pool("p1", "mooncake")], namespace=NS)
    assert claimed(r) == ["a"]


def test_a_contested_binding_nobody_names_is_not_called_unused():
    r = report([binding("a", "p1"), binding("b", "p1")], [pool("p1", "mooncake")])
    assert not [f for f in r.findings if f.code == "binding-unused"]


def test_undecided_claimants_for_one_reason_are_one_finding():
    r = report([binding("a", "p1"), binding("b", "p2"), binding("c", "p2")], [pool("p1", "mooncake")])
    (f,) = found(r, "unchecked", "a")
    assert "team/b (pool p2) and team/c (pool p2)" in f.message and "KVCachePool p2 is not in the input" in f.message
    assert "the master (KVCacheBackend) serving pool p1 serves theirs too" in f.message
    # b and c share p2, whichever master serves it: contested; against a, undecided
    assert claimed(r) == ["b", "c"] and len(found(r, "unchecked", "b")) == 1
