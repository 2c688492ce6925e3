"""What a KVCachePoolBinding's status says about whether a deployment can use it, as the operator
decides it (gpustack/gpustack-operator, read at commit 00cbe62):

- api/worker/v1alpha1/kv_cache_pool_binding.go: status.phase is one of Provisioning, Ready,
  Degraded, Error, Deleting (no "Bound" in any version read), status.phaseMessage its reason,
  status.conditions one per axis;
- pkg/worker/controllers/worker/kv_cache_pool.go (summarizeKVCachePoolBinding): a deletion is
  Deleting; an axis (DomainExclusive, QuotaObserved, QuotaGranted) False is Error with that
  condition's message; one not yet written is Provisioning; else Ready. The Binding has no
  reconciler of its own: its pool's pass writes it, and a pool whose backend is missing or
  publishes no address stops before that, so such a Binding carries no phase at all;
- pkg/worker/controllers/worker/model_deployment_binding.go (modelDeploymentBindingUsable): a
  deployment uses a Binding that is not being deleted, is Ready and has QuotaGranted True.

Most of those Errors pass by themselves (a restarted master grants zero for ~30 s; a failed
scrape). One does not: DomainExclusive False, reason DomainClaimedByMultipleBindings, is two
Bindings that raced admission for one domain on one master, managed for neither until one of
them is deleted. That, and the Binding itself being deleted, are NEVER: waiting cannot end them.
"""

from __future__ import annotations

from kubectl_kvcache.record import Record

PROVISIONING, READY, DEGRADED, ERROR, DELETING = "Provisioning", "Ready", "Degraded", "Error", "Deleting"
PHASES = (PROVISIONING, READY, DEGRADED, ERROR, DELETING)

DOMAIN_EXCLUSIVE, QUOTA_OBSERVED, QUOTA_GRANTED = "DomainExclusive", "QuotaObserved", "QuotaGranted"
DOMAIN_CLAIMED = "DomainClaimedByMultipleBindings"      # DomainExclusive's reason when contested

USABLE, WAITING, NEVER = "usable", "waiting", "never"


class Readiness(Record):
    """USABLE, WAITING (the operator may still get there) or NEVER (it cannot without someone
    acting), with one line saying what the status reads."""

    __slots__ = ("state", "text")

    def __init__(self, state: str, text: str):
        self.state = state
        self.text = text


def condition(status: dict, kind: str) -> dict | None:
    for c in status.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _said(c: dict, fallback: str = "") -> str:
    """`Type=Status (Reason): message`, as `kubectl describe` lists a condition."""
    text = f"condition {c.get('type')}={c.get('status') or 'unset'} ({c.get('reason') or 'no reason'})"
    message = c.get("message") or fallback
    return f"{text}: {message}" if message else text


def readiness(obj: dict | None) -> Readiness:
    """How usable the Binding `obj` is (None: not there)."""
    if obj is None:
        return Readiness(WAITING, "not created")
    meta = obj.get("metadata") or {}
    found = obj.get("status")
    status: dict = found if isinstance(found, dict) else {}
    phase, message = status.get("phase") or "", status.get("phaseMessage") or ""
    if meta.get("deletionTimestamp"):
        return Readiness(NEVER, "it is being deleted" + (f" (phase {phase}: {message})" if phase and message else ""))
    exclusive = condition(status, DOMAIN_EXCLUSIVE)
    if exclusive is not None and exclusive.get("status") == "False":
        return Readiness(NEVER, f"phase {phase or 'unset'}, " + _said(exclusive, message))
    if not phase:
        return Readiness(WAITING, "no phase yet (the operator writes it on its pool's pass; a pool whose backend "
                                  "is missing or publishes no address never gets there)")
    if phase != READY:
        return Readiness(WAITING, f"phase {phase}" + (f": {message}" if message else ""))
    granted = condition(status, QUOTA_GRANTED)
    if granted is None:     # before QuotaGranted, "a Binding reached Ready on observation alone" (kv_cache_pool.go)
        return Readiness(USABLE, f"phase Ready; no {QUOTA_GRANTED} condition (an operator release before it)")
    if granted.get("status") != "True":
        return Readiness(WAITING, "phase Ready, " + _said(granted))
    return Readiness(USABLE, f"phase Ready, {QUOTA_GRANTED}=True")
