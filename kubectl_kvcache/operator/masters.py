"""Which master (KVCacheBackend) holds a pool's reuse domains: the one ledger a domain name is
unique in. Two rules of the operator read it, and they differ, so both live here
(gpustack/gpustack-operator):

- admission of a NEW Binding (pkg/worker/webhooks/worker/kv_cache_pool_binding.go:
  poolsSharedMasters): the backends both pools name, an intersection; a pool that does not exist
  shares nothing. Used by operator/webhooks.py for recover's new Binding.
- the pool reconciler over STORED Bindings (pkg/worker/controllers/worker/kv_cache_pool.go:
  resolveKVCachePoolBackend, observeKVCachePoolMaster): a pool is served only when it names exactly
  one backend (else BackendNotSingular), and only a served pool's Bindings claim a domain on it.
  Used by check's binding-domain-claimed (judge/checks/claims.py).
"""

from __future__ import annotations


def serving(backends) -> str | None:
    """The master a stored pool is served by: its one backend; None when it names none or several."""
    return backends[0] if len(backends) == 1 and backends[0] else None


def shared(mine, theirs) -> list[str]:
    """The backends two pools both name, in the order of `mine` (poolsSharedMasters)."""
    return [b for b in mine if b in theirs]
