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
connector, so they carry no --kv-cache-dtype either. A hold by the cache promises no rollout: it is
what a store blink looks like (every attached replica differs from a render without a connector),
and when the connection returns the replicas that match stay; only what is known to differ rolls
(hold, waiting). DomainRegistered (model_deployment_binding.go) is the operator's own verdict on the
Binding and status.kvCache the last Binding it read (domain_said).

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
    the connection does not resolve (as far as the Binding says), what is known to wait behind the
    hold ("" nothing: a store blink) and what ends the hold."""

    __slots__ = ("namespace", "deployment", "binding", "reason", "message", "cause", "unblock", "waiting")

    def __init__(self, namespace: str, deployment: str, binding: str | None, reason: str, message: str,
                 cause: str, unblock: str, waiting: str = ""):
        self.namespace = namespace
        self.deployment = deployment
        self.binding = binding
        self.reason = reason
        self.message = message
        self.cause = cause
        self.unblock = unblock
        self.waiting = waiting

    @property
    def text(self) -> str:
        """One line: what holds it, why, and what unblocks it."""
        by = ("its model weights" if self.reason == HELD_BY_WEIGHTS else
              f"KVCachePoolBinding {self.binding}" if self.binding else "its KV cache connection")
        return (f"rollout held by {by} (ReplicasUpToDate=False, {self.reason}): {self.cause}; "
                f"{self.unblock}")

    def to_dict(self):
        return {"binding": self.binding, "reason": self.reason, "message": self.message, "cause": self.cause,
                "unblock": self.unblock, "waiting": self.waiting or None}


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


def hold(md, binding, pool=None, changed: str = "", absent: str = "does not exist", read: bool = True,
         who: str = "the held replicas") -> Hold | None:
    """The hold on md's rollout, or None. `binding`: the Binding record md names (None: missing
    when `read`, else not read; `absent` says which, e.g. "is not in the input"); `pool`: its
    KVCachePool record when read;
    `changed`: what the replicas read show will roll (waiting()), "" when none is known to; `who`:
    what rolls then, as the words name it ("it": one replica's fix)."""
    c = md.rollout
    if c is None or c.status != "False" or c.reason not in HOLDS:
        return None
    if c.reason == HELD_BY_WEIGHTS:
        return Hold(md.namespace, md.name, md.binding, c.reason, c.message,
                    "the model weights the replacements need are blocked (its WeightsReady condition says what "
                    "blocks them)",
                    f"the held replicas roll once the weights are ready: kubectl describe modeldeployment {md.name} "
                    f"-n {md.namespace}")
    waiting = "; ".join(w for w in (changed, _edited_since(md)) if w)
    cause, when, look = _cache_cause(md, binding, pool, absent, read)
    if when is None:            # the Binding is being deleted: it will not resolve again
        return Hold(md.namespace, md.name, md.binding, c.reason, c.message, cause, look, waiting)
    if waiting:
        return Hold(md.namespace, md.name, md.binding, c.reason, c.message, f"{cause}; {waiting}",
                    _rolls(who, when, look), waiting)
    return Hold(md.namespace, md.name, md.binding, c.reason, c.message, cause + "; " + NOTHING_WAITING,
                f"once {when}, {RETURNS}: {look}")


# model_deployment_rollout.go, observeModelDeploymentRollout, the `held > 0` branch: without the
# connection the desired render carries no connector, so every attached replica's hash differs
# "whether or not anyone edited the deployment" -- the condition "DOES NOT SAY A CHANGE IS
# WAITING, because it cannot know". When the connection returns the render has the connector
# again: a replica nobody edited matches it and stays; an edit that changes a running replica's
# rendered Pod was withheld, not dropped, and rolls out then (so does a replica created without a
# connector during the outage: it differs from the render with one).
NOTHING_WAITING = ("nothing is known to be waiting: without the connection the operator renders no connector, "
                   "so every replica differs from its render whether or not the deployment was edited")
RETURNS = ("the replicas that match the render again stay as they are (no rollout); only a replica whose "
           "rendered Pod changed meanwhile rolls")


def _rolls(who: str, when: str, look: str) -> str:
    verb = "rolls" if who == "it" else "roll"
    if when == CONNECTION_RESOLVES:     # the Binding not read: what to do comes first
        return f"{look}; {who} {verb} once {when}"
    return f"{who} {verb} once {when}: {look}"


def _edited_since(md) -> str:
    """The spec edited after the operator wrote its hold (metadata.generation ahead of the
    condition's observedGeneration): an edit it has not answered yet, which waits with the held
    replicas if it changes a running replica's rendered Pod (the Go message's own words)."""
    c = md.rollout
    if c is None or c.observed_generation is None or md.generation is None or md.generation <= c.observed_generation:
        return ""
    return (f"the spec was edited after the operator wrote this (generation {md.generation}, the condition is "
            f"for {c.observed_generation}): an edit that changes a running replica's rendered Pod waits with them")


def waiting(items, this: bool = False) -> str:
    """What the replicas read show will roll once the connection returns, "" when none is known
    to: Pods not rendered from the spec as it is now (verify.stale_reason, read off the argv), and
    Pods created without a connector while it did not resolve (no --kv-cache-dtype where one is
    expected). `items`: the deployment's verify rows (`this`: one replica's, worded for it)."""
    pods = [i for i in items if i.pod is not None and not i.terminating]
    bare = sum(1 for i in pods if i.status == "MISSING" and i.expected is not None)
    edited = sum(1 for i in pods if i.stale and not (i.status == "MISSING" and i.expected is not None))
    if this:
        return ("this replica runs an earlier spec (its argv says so)" if edited else
                "this replica has no --kv-cache-dtype (created without a connector, or before the Setting went on)"
                if bare else "")
    parts = []
    if edited:
        parts.append(f"{edited} of its replicas {'runs' if edited == 1 else 'run'} an earlier spec (the argv "
                     f"says so)")
    if bare:
        parts.append(f"{bare} {'has' if bare == 1 else 'have'} no --kv-cache-dtype (created without a connector, "
                     f"or before the Setting went on)")
    return " and ".join(parts)


def unresolved(md, binding, pool=None) -> tuple[str, str] | None:
    """(cause, unblock) when md's KV cache connection cannot resolve as far as the objects read
    say (the Binding missing or not usable, its pool publishing no client endpoint), else None.
    The unblock is for a replica created while it did not resolve: it has no connector, so it
    differs from the render once the connection returns, and rolls then."""
    if binding is None or (binding.readiness is not None and binding.readiness.state != binding_status.USABLE) \
            or (pool is not None and pool.client_endpoint == ""):
        cause, when, look = _cache_cause(md, binding, pool)
        return cause, (look if when is None else _rolls("the replicas created without it", when, look))
    return None


CONNECTION_RESOLVES = "the connection resolves"


def _cache_cause(md, binding, pool, absent: str = "does not exist",
                 read: bool = True) -> tuple[str, str | None, str]:
    """(why the connection does not resolve, when it will (None: never again), where to look)."""
    where = f"-n {md.namespace}"
    if binding is None:
        said = domain_said(md, None, read)
        return (f"the Binding {md.binding} {absent}" + (f"; {said}" if said else ""), CONNECTION_RESOLVES,
                "create it (or point spec.kvCache.poolRef.name at one that exists)")
    ready = binding.readiness
    if ready is not None and ready.state != binding_status.USABLE:
        if binding.deleting:
            return (f"the Binding is not usable: {ready.text}", None,
                    "it is being deleted, so it will not resolve again: move the deployment to another Binding "
                    "(kubectl kvcache recover)")
        return (f"the Binding is not usable: {ready.text}", "it is Ready with QuotaGranted=True",
                f"kubectl describe kvcachepoolbinding {binding.name} {where}")
    pool_name = binding.pool or "?"
    if pool is not None and pool.client_endpoint == "":
        cause = f"its KVCachePool {pool_name} publishes no client endpoint (status.clientEndpoint)"
    elif pool is not None:
        cause = (f"the Binding is usable and KVCachePool {pool_name} publishes {pool.client_endpoint}, so the "
                 f"operator did not resolve its backend this pass")
    else:
        cause = (f"the Binding is usable, so its KVCachePool {pool_name} resolves no client endpoint or backend "
                 f"(the pool was not read)")
    said = domain_said(md, binding, True)
    if said:
        cause += f"; {said}"
    return cause, "the pool serves it", f"kubectl describe kvcachepool {pool_name}"


# DomainRegistered (model_deployment_binding.go, ModelDeploymentConditionDomainRegistered): the
# operator's verdict on the Binding, written by observeModelDeploymentDomain on every pass that
# looked (a teardown pass leaves it, and status.kvCache, as they were).
REGISTERED, NOT_APPLICABLE = "Registered", "NotApplicable"
BINDING_NOT_FOUND, BINDING_NOT_READY, BINDING_DELETING = "BindingNotFound", "BindingNotReady", "BindingDeleting"
DOMAIN_REASONS = (REGISTERED, NOT_APPLICABLE, BINDING_NOT_FOUND, BINDING_NOT_READY, BINDING_DELETING)


def binding_reason(binding) -> str | None:
    """The DomainRegistered reason modelDeploymentBindingUsable gives the Binding as read: being
    deleted first, then not Ready or QuotaGranted not True, else Registered; None when its
    readiness was not read; BindingNotFound for none."""
    if binding is None:
        return BINDING_NOT_FOUND
    if binding.deleting:
        return BINDING_DELETING
    if binding.readiness is None:
        return None
    return REGISTERED if binding.readiness.state == binding_status.USABLE else BINDING_NOT_READY


def domain_said(md, binding, read: bool = False) -> str:
    """What the operator's own DomainRegistered adds to the Binding read, "" when nothing: with
    the Binding not read (`binding` None, `read` False: not in the input, another namespace,
    forbidden), the operator's verdict and status.kvCache as the last it read; with both read
    (`read` True: None is the Binding found missing) and disagreeing, which says what. The
    condition is the operator's reading at its last pass (its observedGeneration and time); the
    Binding is what was read now. status.kvCache is rewritten on every pass that reads the Binding
    and kept when it is gone (resolveModelDeploymentDomain, observeModelDeploymentDomain)."""
    c = md.domain_registered
    if c is None or c.reason == NOT_APPLICABLE:
        return ""
    at = ", ".join(x for x in (f"generation {c.observed_generation}" if c.observed_generation is not None else "",
                               f"since {c.since}" if c.since else "") if x)
    verdict = f"DomainRegistered={c.status} ({c.reason}{', ' + at if at else ''})"
    kv = md.kv_status
    if binding is None and not read:
        text = f"the operator's last pass says {verdict}: {c.message}"
        if kv is not None and kv.binding:
            last = ("the last it read before the Binding went away" if c.reason == BINDING_NOT_FOUND else
                    "as that pass read it")
            text += f"; status.kvCache names Binding {kv.binding}{_kv_text(kv)} ({last})"
        return text
    now = binding_reason(binding)
    parts = []
    if now is not None and c.reason in DOMAIN_REASONS and c.reason != now:
        parts.append(f"the Binding as read now says {now}, the operator's own {verdict} says otherwise: the "
                     f"condition is its reading at its last pass, and it acts on that until its next")
    if binding is not None and kv is not None and kv.binding and (kv.binding != binding.name or (
            kv.dtype and binding.dtype and kv.dtype != binding.dtype)):
        parts.append(f"status.kvCache names Binding {kv.binding}{_kv_text(kv)}: the last the operator read, not "
                     f"the Binding read now")
    elif binding is None and kv is not None and kv.binding:
        parts.append(f"status.kvCache still names Binding {kv.binding}{_kv_text(kv)}: the last the operator read "
                     f"before it went away, kept, not current")
    return "; ".join(parts)


def _kv_text(kv) -> str:
    got = [f"domain {kv.domain}" if kv.domain else "", f"dtype {kv.dtype}" if kv.dtype else "",
           f"pool {kv.pool}" if kv.pool else ""]
    got = [g for g in got if g]
    return f" ({', '.join(got)})" if got else ""


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
