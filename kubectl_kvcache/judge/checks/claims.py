"""binding-domain-claimed: stored Bindings that claim one reuse domain on one master, as the
operator's pool reconciler decides (gpustack/gpustack-operator,
pkg/worker/controllers/worker/kv_cache_pool.go: observeKVCachePoolMaster).

A domain name is one ledger entry on a master (a KVCacheBackend), so uniqueness is per master:
wider than a pool (one backend serves several pools), narrower than the cluster (two backends keep
two ledgers). The reconciler gathers, per backend, every Binding of every pool it serves; a domain
two of them claim is managed for NEITHER (no winner: each reports DomainExclusive False, reason
DomainClaimedByMultipleBindings, naming the other; phase Error). Not claimants: a Binding being
deleted that nothing holds any more (kvCachePoolBindingIsReleasing), and the Bindings of a pool no
backend serves (one naming none or several: BackendNotSingular; one that does not exist).
Admission refuses the second claim (operator/masters.py), so a stored pair raced past it.

Which master serves a pool comes from the pools read (Snapshot.pools): two Bindings on one pool
share its master whatever it is; on two pools, a pool not in the input (or none readable) leaves
it undecided, said as such, never guessed.
"""

from __future__ import annotations

from kubectl_kvcache.operator import masters, records
from kubectl_kvcache.record import Record

SERVED, UNSERVED, UNKNOWN = "served", "unserved", "unknown"


class Claim(Record):
    """One Binding's domain: the Bindings contesting it (each with the backend serving both, or
    None when only "the one serving their shared pool" is known) and those whose pools' master
    could not be decided (each with what would decide it)."""

    __slots__ = ("rivals", "undecided")
    __hash__ = None     # mutable: filled in as pairs are judged

    def __init__(self, rivals: list | None = None, undecided: list | None = None):
        self.rivals: list[tuple[records.Binding, str | None]] = [] if rivals is None else rivals
        self.undecided: list[tuple[records.Binding, str]] = [] if undecided is None else undecided


def master(snapshot: records.Snapshot, pool: str) -> tuple[str, str]:
    """(SERVED, its backend) | (UNSERVED, why) | (UNKNOWN, what would decide it) for a pool name."""
    if snapshot.pools is None:
        return UNKNOWN, "the KVCachePools could not be read"
    found = snapshot.pools.get(pool)
    if found is None:
        if snapshot.source == "file":
            return UNKNOWN, f"KVCachePool {pool} {snapshot.absent(None)}"
        return UNSERVED, f"KVCachePool {pool} does not exist"
    backend = masters.serving(found.backends)
    if backend is None:
        return UNSERVED, f"KVCachePool {pool} names {len(found.backends)} backends (the operator serves one)"
    return SERVED, backend


def claims(snapshot: records.Snapshot) -> dict[tuple[str, str], Claim]:
    """Every Binding read that shares its domain.name with another, by (namespace, name): what
    decides whether the two contest it. Only what was read is compared (with -n, the Bindings of
    other namespaces are not)."""
    by_domain: dict[str, list[records.Binding]] = {}
    for b in snapshot.bindings.values():
        if b.pool and not b.releasing:
            by_domain.setdefault(b.domain, []).append(b)
    found: dict[tuple[str, str], Claim] = {}
    for group in by_domain.values():
        for b in group:
            for other in group:
                if other is not b:
                    _judge_pair(snapshot, b, other, found)
    return found


def _judge_pair(snapshot, b, other, found):
    mine = master(snapshot, b.pool)
    if other.pool == b.pool:
        if mine[0] != UNSERVED:     # one pool: one master, whichever it is
            _claim(found, b).rivals.append((other, mine[1] if mine[0] == SERVED else None))
        return
    theirs = master(snapshot, other.pool)
    if UNSERVED in (mine[0], theirs[0]):
        return
    if mine[0] == theirs[0] == SERVED:
        if mine[1] == theirs[1]:
            _claim(found, b).rivals.append((other, mine[1]))
        return
    unknown = list(dict.fromkeys(why for state, why in (mine, theirs) if state == UNKNOWN))
    _claim(found, b).undecided.append((other, "; ".join(unknown)))


def _claim(found, b) -> Claim:
    return found.setdefault((b.namespace, b.name), Claim())
