"""1. Every Binding's dtype against every engine release it will be handed to."""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.operator import api, records, renderer
from kubectl_kvcache.judge.checks.engines import (EngineAt, accepted_since, deployment_engines, dtype_outcome,
                                                  injected_engine, plain, suggest_dtype)
from kubectl_kvcache.judge import fixes
from kubectl_kvcache.judge.checks.findings import Finding, finding
from kubectl_kvcache.judge.checks.inputs import EnginePods, target_container, unique
from kubectl_kvcache.engine import SAME_FORMAT
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.nearest_dtype import nearest_spelling


BOUND = "Bound"     # status.phase of a Binding the operator bound (its domain is claimed)


class Use(Record):
    """One object naming a Binding: a ModelDeployment, an injected Pod or a workload template."""

    __slots__ = ("kind", "namespace", "name", "engines", "renders", "problem")

    def __init__(self, kind: str, namespace: str, name: str, engines: tuple[EngineAt, ...], renders: bool = True,
                 problem: str = ""):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.engines = engines
        self.renders = renders      # False: only take-over roles, so the dtype reaches no engine
        self.problem = problem      # why its engine cannot be judged

    @property
    def ref(self):
        return self.name if self.kind == "ModelDeployment" else f"{self.kind}/{self.name}"

    def to_dict(self):
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name,
                "engines": [e.to_dict() for e in self.engines], "receivesDtype": self.renders,
                **({"problem": self.problem} if self.problem else {})}


class BindingEntry(Record):
    __slots__ = ("namespace", "name", "binding", "uses", "verdict", "rejected_by", "suggestion")
    __hash__ = None     # mutable: not hashable

    def __init__(self, namespace: str, name: str, binding: records.Binding | None, uses: list[Use],
                 verdict: str = "OK", rejected_by: list[tuple[Use, EngineAt, str]] | None = None,
                 suggestion: str | None = None):
        self.namespace = namespace
        self.name = name
        self.binding = binding
        self.uses = uses
        self.verdict = verdict
        self.rejected_by = [] if rejected_by is None else rejected_by
        self.suggestion = suggestion

    def engines(self):
        seen: list = []
        for use in self.uses:
            for e in use.engines if use.renders else ():
                if (e.engine, e.version) not in [(s.engine, s.version) for s in seen]:
                    seen.append(e)
        return seen

    def to_dict(self):
        b = self.binding
        return {
            "namespace": self.namespace, "name": self.name, "exists": b is not None,
            "pool": b.pool if b else None, "domain": b.domain if b else None, "dtype": b.dtype if b else None,
            "engines": [e.to_dict() for e in self.engines()],
            "usedBy": [u.to_dict() for u in self.uses],
            "verdict": self.verdict,
            "rejectedBy": [{"kind": u.kind, "name": u.name, **e.to_dict(), "reason": why}
                           for u, e, why in self.rejected_by],
            "suggestedDtype": self.suggestion,
        }


def binding_uses(snapshot, deployments, optins, pods: EnginePods) -> dict[tuple[str, str], list[Use]]:
    uses: dict[tuple[str, str], list[Use]] = {}
    for md in deployments:
        if not (md.kv_cache and md.binding):
            continue
        ats = deployment_engines(md, pods.images(md))
        problem = "" if ats else f"engine {md.engine!r} is not vLLM or SGLang"
        renders = not md.roles or any(not r.command for r in md.roles)
        if renders and _without_store(md, pods):
            renders = False     # the operator renders the dtype only beside a store (inject/vllm.go)
        uses.setdefault((md.namespace, md.binding), []).append(
            Use("ModelDeployment", md.namespace, md.name, ats, renders, problem))
    for o in optins:
        name = o.annotation("binding")
        if not name:
            continue
        container, _ = target_container(o)
        at = injected_engine(o.annotations, container)
        problem = "" if at else f"engine {o.annotation('engine')!r} is not vLLM or SGLang"
        uses.setdefault((o.namespace, name), []).append(
            Use(o.kind, o.namespace, o.name, (at,) if at else (), True, problem))
    return uses


def _without_store(md, pods: EnginePods) -> bool:
    """Every Pod of every role the operator renders shows a render without a store (see
    operator/renderer.py: store_view), so the Binding's dtype reaches none of them."""
    engine = model.normalise_engine(md.engine)
    cands = [c for r in md.roles if not r.command for c in pods.of(md, r.name)]
    return bool(cands) and all(
        renderer.store_view(c.pod.container(api.ENGINE_CONTAINER) or {}, engine).rendered is False for c in cands)


def judge_binding(entry: BindingEntry, on: bool, claimed_by: records.Binding | None = None,
                  source: str = "file") -> list[Finding]:
    b = entry.binding
    obj = (entry.namespace, "KVCachePoolBinding", entry.name)
    if b is None:
        entry.verdict = "MISSING"
        return [finding("binding-missing", (u.namespace, u.kind, u.name),
                        f"names KVCachePoolBinding {entry.name}, which is not in namespace {u.namespace}"
                        + (": new Pods cannot be injected" if u.kind != "ModelDeployment" else ""),
                        fixes.missing_binding_fix(u.namespace, entry.name, u.kind == "ModelDeployment"))
                for u in entry.uses]
    if not b.dtype:
        entry.verdict = "UNKNOWN"
        return [finding("unchecked", obj, "the Binding has no spec.domain.dtype", "")]
    results, verdicts = [], []
    unknown = []
    for use in entry.uses:
        for at in use.engines if use.renders else ():
            outcome = dtype_outcome(b.dtype, at)
            if outcome.outcome == model.REJECTED:
                entry.rejected_by.append((use, at, plain(outcome.reason)))
            elif outcome.outcome == model.UNKNOWN:
                unknown.append((use, at, plain(outcome.reason)))
    if entry.rejected_by:
        rejecting = unique(f"{e.engine} {e.version}" for _, e, _ in entry.rejected_by)
        verdicts.append("REJECTED by " + ", ".join(rejecting))
        results.append(_rejected_finding(entry, obj, on))
    for use, at, why in unknown:
        results.append(finding("unchecked", obj, f"{use.kind} {use.name} on {at.long_label}: {why}"))
    if b.dtype == "auto":
        verdicts.append("WARNING auto")
        results.append(finding(
            "binding-auto", obj,
            "dtype 'auto' was stored before the upgrade: it keeps working and stays updatable, but with the "
            "Setting on a new Binding may not declare auto (its engines decide the format)",
            "nothing to do now; when it is recreated, declare the spelling the engines should run "
            "(e.g. " + _auto_example(entry) + ")"))
    stale = [u for u in b.used_by if u[0] == "ModelDeployment" and not any(
        x.kind == "ModelDeployment" and x.name == u[2] for x in entry.uses)]
    if stale:
        results.append(finding("unchecked", obj, "status.usedBy names " + ", ".join(
            f"ModelDeployment {u[2]}" for u in stale) + (", not in the input" if source == "file" else
                                                          f", which were not found in namespace {entry.namespace} "
                                                          f"(deleted since?)") + ": their engines are not checked"))
    if claimed_by is not None:
        holder = claimed_by
        verdicts.append(f"DOMAIN CLAIMED by {holder.namespace}/{holder.name}")
        results.append(finding(
            "binding-domain-claimed", obj,
            f"domain.name {b.domain!r} on pool {b.pool} is still claimed by KVCachePoolBinding "
            f"{holder.namespace}/{holder.name} ("
            + ("reported Bound" if holder.phase == BOUND else "created earlier")
            + "; a domain stays claimed until its Binding is gone): the operator will not bind this one"
            + (f", so its users ({', '.join(u.ref for u in entry.uses)}) get no KV cache pool" if entry.uses else ""),
            f"recreate it with a domain.name no Binding on pool {b.pool} uses (domain is immutable), and point "
            f"its users at the new one; or delete {holder.namespace}/{holder.name} first if it is the one being "
            f"replaced (its deletion completes once no deployment holds it)"))
    if not entry.uses and not b.used_by and claimed_by is None:
        verdicts.append("UNUSED")
        results.append(finding("binding-unused", obj,
                               f"named by no ModelDeployment, injected Pod or workload template "
                               f"(dtype {b.dtype!r}, pool {b.pool}, domain {b.domain})",
                               "nothing to do; delete it if it is no longer needed"))
    if (unknown or any(u.problem for u in entry.uses)) and not entry.rejected_by:
        verdicts.append("UNKNOWN")
    entry.verdict = ", ".join(verdicts) or "OK"
    return results


def _auto_example(entry):
    profiles = [e.profile for e in entry.engines()]
    if not profiles:
        return "fp8_e4m3 or bfloat16"
    common = set.intersection(*(set(p.accepted) for p in profiles)) - {"auto"}
    picks = [v for v in ("fp8_e4m3", "bfloat16") if v in common] or sorted(common)[:2]
    return " or ".join(picks) if picks else "a value every engine accepts"


def _rejected_finding(entry: BindingEntry, obj, on) -> Finding:
    dtype = entry.binding.dtype if entry.binding is not None else None     # rejected_by: a Binding that exists
    users = unique(u for u, _, _ in entry.rejected_by)
    parts = [f"{use.kind} {use.name} on " + ", ".join(e.long_label for u, e, _ in entry.rejected_by if u is use)
             for use in users]
    effects = []
    if any(u.kind == "ModelDeployment" for u in users):
        effects.append("every replica the rollout replaces fails argument parsing and crash-loops")
    if any(u.kind != "ModelDeployment" for u in users):
        effects.append("every Pod injected from now on fails argument parsing")
    first_reason = entry.rejected_by[0][2]
    message = f"dtype {dtype!r} is rejected by {'; '.join(parts)}: {'; '.join(effects)} ({first_reason})"
    entry.suggestion = suggest_dtype(dtype, [e.profile for e in entry.engines()])
    return finding("binding-dtype-rejected", obj, message, _recovery_fix(entry, on))


def _recovery_fix(entry, on):
    """Its recover command (the guide's recovery, walked by the plugin), as verify says it."""
    b = entry.binding
    users = ", ".join(u.ref for u in entry.uses)
    if entry.suggestion:
        return fixes.recover_fix(entry.namespace, entry.name, detail=(
            ("the Setting off while it runs, " if on else "")
            + f"a new Binding on pool {b.pool} with dtype {entry.suggestion!r} and a new domain.name (not "
              f"{b.domain!r}), its users ({users}) moved to it, the old one deleted"
            + (", the Setting back on" if on else "")))
    return fixes.recover_fix(entry.namespace, entry.name, dtype="DTYPE",
                             detail=f"DTYPE: {_no_common_spelling(b.dtype, entry)}")


def _no_common_spelling(dtype, entry):
    # one hint per engine, however many of its releases reject the dtype
    hints = [_spelling_hint(dtype, engine) for engine in unique(e.engine for _, e, _ in entry.rejected_by)]
    common = sorted(set.intersection(*(set(e.profile.accepted) for e in entry.engines())) - {"auto"})
    near = nearest_spelling(dtype, common)
    if near:
        choice = f"the nearest accepted spelling is {near!r}"
    else:
        choice = f"one of {', '.join(common)}" if common else "a value each engine accepts (or split the users)"
    return f"a dtype every engine accepts ({'; '.join(hints)}; or upgrade the engine): {choice}"


def _spelling_hint(dtype, engine):
    """What the engine's releases, built in and added, say about `dtype`: the release it is
    accepted from, a spelling of the same format, or that it has none."""
    name = model.DISPLAY_NAMES[engine]
    since = accepted_since(engine, dtype)
    if since:
        return f"{name} accepts {dtype!r} from {since}"
    alt = next((a for a in SAME_FORMAT.get(dtype, ()) if accepted_since(engine, a)), None)
    if alt:
        return f"{name} spells it {alt!r} from {accepted_since(engine, alt)}"
    return f"{name} has no spelling of {dtype!r}"


def check_bindings(snapshot, deployments, optins, pods, on) -> tuple[list[BindingEntry], list[Finding]]:
    uses = binding_uses(snapshot, deployments, optins, pods)
    keys = [k for k in snapshot.bindings if records.in_namespace(k[0], snapshot.namespace)]
    keys += [k for k in uses if k not in snapshot.bindings]
    claims = domain_claims(snapshot.bindings.values())
    entries, found = [], []
    for key in sorted(set(keys)):
        binding = snapshot.bindings.get(key)
        # the operator's own status wins over the guess: a Binding it reports Bound holds its domain
        holder = (claims.get((binding.pool, binding.domain))
                  if binding and binding.pool and binding.phase != BOUND else None)
        entry = BindingEntry(key[0], key[1], binding, uses.get(key, []))
        found += judge_binding(entry, on, holder if _claims_before(holder, binding) else None, snapshot.source)
        entries.append(entry)
    return entries, found


def _claims_before(holder, binding) -> bool:
    """Evidence that `holder`, not `binding`, holds their shared domain: the operator reports it
    Bound, or it was created earlier. Without either (no status, no timestamps) nothing is said."""
    if holder is None or holder is binding:
        return False
    return holder.phase == BOUND or bool(holder.created and binding.created and holder.created < binding.created)


def domain_claims(bindings) -> dict[tuple[str, str], records.Binding]:
    """Which Binding holds each (pool, domain.name): one the operator reports bound
    (status.phase Bound), else the oldest by metadata.creationTimestamp (then namespace/name).
    A domain stays claimed until
    its Binding is gone, so a newer Binding naming it is not bound. Only what was read is seen:
    with -n, Bindings of other namespaces on the same pool are not."""
    claims: dict[tuple[str, str], records.Binding] = {}
    for b in sorted(bindings, key=lambda b: (b.phase != BOUND, b.created or "\uffff", b.namespace, b.name)):
        if b.pool:
            claims.setdefault((b.pool, b.domain), b)
    return claims
