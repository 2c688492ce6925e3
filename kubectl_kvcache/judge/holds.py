"""Rollouts the operator holds, and whether a deployment's rollout is done, as the operator says it.

The operator reports its rollout on one condition, ReplicasUpToDate
(pkg/worker/controllers/worker/model_deployment_rollout.go, observeModelDeploymentRollout):
True/UpToDate; False/RolloutInProgress (outdated replicas turn over one per role per pass);
False/ReplacementInProgress (the declared count is short); False/RolloutHeldByCache (outdated
replicas were LEFT IN PLACE because no KV cache connection resolved this pass); Unknown/
RolloutNotObserved (the pass accounted for no replica). A hold does not pass by itself with the
next reconcile: the connection has to resolve first, which is the Binding being usable
(model_deployment_binding.go, modelDeploymentBindingUsable: not being deleted, phase Ready,
QuotaGranted True) and its pool publishing a client endpoint with a backend behind it
(resolveModelDeploymentConnection). While held, replicas the operator creates are rendered without a
connector, so they carry no --kv-cache-dtype either.

Pure: records in, a Hold or a verdict out. The words for the user are built here because they are
the verdict (render prints them).
"""

from __future__ import annotations

from kubectl_kvcache.operator import binding_status
from kubectl_kvcache.record import Record

UP_TO_DATE, IN_PROGRESS, REPLACING = "UpToDate", "RolloutInProgress", "ReplacementInProgress"
HELD_BY_CACHE, HELD_BY_WEIGHTS, NOT_OBSERVED = "RolloutHeldByCache", "RolloutHeldByWeights", "RolloutNotObserved"
HOLDS = (HELD_BY_CACHE, HELD_BY_WEIGHTS)
REASONS = (UP_TO_DATE, IN_PROGRESS, REPLACING, HELD_BY_CACHE, HELD_BY_WEIGHTS, NOT_OBSERVED)


class Hold(Record):
    """A held rollout: the deployment, the Binding it names, the operator's reason and message, why
    the connection does not resolve (as far as the Binding says) and what ends the hold."""

    __slots__ = ("namespace", "deployment", "binding", "reason", "message", "cause", "unblock")

    def __init__(self, namespace: str, deployment: str, binding: str | None, reason: str, message: str,
                 cause: str, unblock: str):
        self.namespace = namespace
        self.deployment = deployment
        self.binding = binding
        self.reason = reason
        self.message = message
        self.cause = cause
        self.unblock = unblock

    @property
    def text(self) -> str:
        """One line: what holds it, why, and what unblocks it."""
        by = ("its model weights" if self.reason == HELD_BY_WEIGHTS else
              f"KVCachePoolBinding {self.binding}" if self.binding else "its KV cache connection")
        return (f"rollout held by {by} (ReplicasUpToDate=False, {self.reason}): {self.cause}; "
                f"{self.unblock}")

    def to_dict(self):
        return {"binding": self.binding, "reason": self.reason, "message": self.message, "cause": self.cause,
                "unblock": self.unblock}


def current(md) -> bool:
    """Whether md's ReplicasUpToDate was written for its current spec: the condition's
    observedGeneration equals metadata.generation; a condition without one is the pass's own
    (the status is rebuilt on every reconcile: model_deployment.go, ModelDeploymentStatus)."""
    c = md.rollout
    if c is None:
        return False
    return c.observed_generation is None or md.generation is None or c.observed_generation == md.generation


def up_to_date(md) -> bool | None:
    """True/False from ReplicasUpToDate for the current generation; None where the operator does
    not write the condition (an older release): then the argv alone decides."""
    c = md.rollout
    if c is None:
        return None
    return c.status == "True" and current(md)


def rolling(md) -> bool:
    """The operator says it is still turning replicas over (not held): their verdicts may change."""
    c = md.rollout
    return c is not None and c.status == "False" and c.reason in (IN_PROGRESS, REPLACING)


def hold(md, binding, pool=None) -> Hold | None:
    """The hold on md's rollout, or None. `binding`: the Binding record md names (None: missing);
    `pool`: its KVCachePool record when read."""
    c = md.rollout
    if c is None or c.status != "False" or c.reason not in HOLDS:
        return None
    if c.reason == HELD_BY_WEIGHTS:
        return Hold(md.namespace, md.name, md.binding, c.reason, c.message,
                    "the model weights the replacements need are blocked (its WeightsReady condition says what "
                    "blocks them)",
                    f"the held replicas roll once the weights are ready: kubectl describe modeldeployment {md.name} "
                    f"-n {md.namespace}")
    return Hold(md.namespace, md.name, md.binding, c.reason, c.message, *_cache_cause(md, binding, pool))


def unresolved(md, binding, pool=None) -> tuple[str, str] | None:
    """(cause, unblock) when md's KV cache connection cannot resolve as far as the objects read
    say (the Binding missing or not usable, its pool publishing no client endpoint), else None."""
    if binding is None or (binding.readiness is not None and binding.readiness.state != binding_status.USABLE):
        return _cache_cause(md, binding, pool)
    if pool is not None and pool.client_endpoint == "":
        return _cache_cause(md, binding, pool)
    return None


def _cache_cause(md, binding, pool) -> tuple[str, str]:
    where = f"-n {md.namespace}"
    if binding is None:
        return (f"the Binding {md.binding} does not exist",
                "create it (or point spec.kvCache.poolRef.name at one that exists); the held replicas roll "
                "once the connection resolves")
    ready = binding.readiness
    if ready is not None and ready.state != binding_status.USABLE:
        unblock = ("it is being deleted, so it will not resolve again: move the deployment to another Binding "
                   "(kubectl kvcache recover)" if binding.deleting else
                   f"the held replicas roll once it is Ready with QuotaGranted=True: kubectl describe "
                   f"kvcachepoolbinding {binding.name} {where}")
        return f"the Binding is not usable: {ready.text}", unblock
    pool_name = binding.pool or "?"
    if pool is not None and pool.client_endpoint == "":
        cause = f"its KVCachePool {pool_name} publishes no client endpoint (status.clientEndpoint)"
    elif pool is not None:
        cause = (f"the Binding is usable and KVCachePool {pool_name} publishes {pool.client_endpoint}, so the "
                 f"operator did not resolve its backend this pass")
    else:
        cause = (f"the Binding is usable, so its KVCachePool {pool_name} resolves no client endpoint or backend "
                 f"(the pool was not read)")
    return cause, f"the held replicas roll once the pool serves it: kubectl describe kvcachepool {pool_name}"


def created_during_hold(item, unresolved_now: bool) -> bool:
    """A replica the operator rendered while the connection did not resolve: no connector, so no
    dtype at all (a Pod, not a NO-POD row, whose argv has no --kv-cache-dtype: verify's MISSING)."""
    return unresolved_now and item.pod is not None and item.status == "MISSING"


def serving(obj) -> tuple[bool, str]:
    """Whether a ModelDeployment object serves, as the operator writes it (model_deployment.go,
    ModelDeploymentStatus): status.phase Ready ("every role's ready count equals its desired count")
    and, where written, ReplicasUpToDate not False and not for an older generation. There is no
    Available condition and no status.observedGeneration in its status type. With the words that
    say what it reads."""
    status = obj.get("status") if isinstance(obj, dict) else None
    status = status if isinstance(status, dict) else {}
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    generation = meta.get("generation") if isinstance(meta, dict) else None
    phase = status.get("phase") if isinstance(status.get("phase"), str) else ""
    rollout = next((c for c in status.get("conditions") or () if isinstance(c, dict)
                    and c.get("type") == "ReplicasUpToDate"), None)
    said = f"phase {phase or 'not written yet'}"
    if rollout is not None:
        said += f", ReplicasUpToDate={rollout.get('status')} ({rollout.get('reason')})"
    if phase != "Ready":
        return False, said
    if rollout is not None:
        observed = rollout.get("observedGeneration")
        if rollout.get("status") == "False" or (observed is not None and generation is not None
                                                and observed != generation):
            return False, said
    return True, said
