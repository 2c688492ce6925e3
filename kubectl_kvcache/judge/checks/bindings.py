"""1. Every Binding's dtype against every engine release it will be handed to."""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.operator import api, records, renderer
from kubectl_kvcache.judge.checks.engines import (EngineAt, accepted_since, deployment_engines, dtype_outcome,
                                                  injected_engine, plain, suggest_dtype)
from kubectl_kvcache.judge import fixes
from kubectl_kvcache.judge.checks.claims import Claim, claims
from kubectl_kvcache.judge.checks.findings import Finding, finding
from kubectl_kvcache.judge.checks.inputs import EnginePods, target_container, unique
from kubectl_kvcache.engine import SAME_FORMAT
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.nearest_dtype import nearest_spelling


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


# A Binding's verdict is a tuple of these words, each with its detail (who rejects it, who else
# claims the domain): the table shows the words (`REJECTED,AUTO`, as kubectl's node STATUS), the
# JSON and describe the sentence (`REJECTED by sglang 0.5.18, WARNING auto`: Verdict.text).
REJECTED, AUTO, DOMAIN_CLAIMED, UNUSED, UNKNOWN, MISSING = \
    "REJECTED", "AUTO", "DOMAIN-CLAIMED", "UNUSED", "UNKNOWN", "MISSING"
_SENTENCE = {REJECTED: "REJECTED by {}", AUTO: "WARNING auto", DOMAIN_CLAIMED: "DOMAIN CLAIMED by {}",
             UNUSED: "UNUSED", UNKNOWN: "UNKNOWN", MISSING: "MISSING"}


class Verdict(Record):
    """One word of a Binding's verdict and its detail."""

    __slots__ = ("word", "detail")

    def __init__(self, word: str, detail: str = ""):
        self.word = word
        self.detail = detail

    @property
    def text(self) -> str:
        return _SENTENCE[self.word].format(self.detail)


class BindingEntry(Record):
    __slots__ = ("namespace", "name", "binding", "uses", "verdicts", "rejected_by", "suggestion")
    __hash__ = None     # mutable: not hashable

    def __init__(self, namespace: str, name: str, binding: records.Binding | None, uses: list[Use],
                 verdicts: tuple[Verdict, ...] = (), rejected_by: list[tuple[Use, EngineAt, str]] | None = None,
                 suggestion: str | None = None):
        self.namespace = namespace
        self.name = name
        self.binding = binding
        self.uses = uses
        self.verdicts = verdicts          # () is OK
        self.rejected_by = [] if rejected_by is None else rejected_by
        self.suggestion = suggestion

    def says(self, word: str) -> bool:
        return any(v.word == word for v in self.verdicts)

    @property
    def words(self) -> str:
        """`REJECTED,AUTO`: the table's cell."""
        return ",".join(v.word for v in self.verdicts) or "OK"

    @property
    def verdict(self) -> str:
        """`REJECTED by sglang 0.5.18, WARNING auto`: the JSON's and describe's sentence."""
        return ", ".join(v.text for v in self.verdicts) or "OK"

    def engines(self):
        seen: list = []
        for use in self.uses:
            for e in use.engines if use.renders else ():
                if (e.engine, e.version, e.span) not in [(s.engine, s.version, s.span) for s in seen]:
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
        ats = deployment_engines(md, pods)
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


def judge_binding(entry: BindingEntry, on: bool, claim: Claim | None = None,
                  source: str = "file", named_unread: bool = False) -> list[Finding]:
    """The findings of one Binding; `named_unread`: an object of a kind the plugin does not read
    (a LeaderWorkerSet's opted-in templates) names it, so it is not called unused."""
    b = entry.binding
    obj = (entry.namespace, "KVCachePoolBinding", entry.name)
    if b is None:
        entry.verdicts = (Verdict(MISSING),)
        return [finding("binding-missing", (u.namespace, u.kind, u.name),
                        f"names KVCachePoolBinding {entry.name}, which is not in namespace {u.namespace}"
                        + (": new Pods cannot be injected" if u.kind != "ModelDeployment" else ""),
                        fixes.missing_binding_fix(u.namespace, entry.name, u.kind == "ModelDeployment"))
                for u in entry.uses]
    if not b.dtype:
        entry.verdicts = (Verdict(UNKNOWN),)
        return [finding("unchecked", obj, "the Binding has no spec.domain.dtype", "")]
    results: list[Finding] = []
    verdicts: list[Verdict] = []
    unknown = []
    for use in entry.uses:
        for at in use.engines if use.renders else ():
            outcome = dtype_outcome(b.dtype, at)
            if outcome.outcome == model.REJECTED:
                entry.rejected_by.append((use, at, plain(outcome.reason)))
            elif outcome.outcome == model.UNKNOWN:
                unknown.append((use, at, plain(outcome.reason)))
    if entry.rejected_by:
        rejecting = unique(f"{e.engine} {'(release unknown)' if e.span else e.version}" for _, e, _ in entry.rejected_by)
        verdicts.append(Verdict(REJECTED, ", ".join(rejecting)))
        results.append(_rejected_finding(entry, obj, on))
    for use, at, why in unknown:
        results.append(finding("unchecked", obj, f"{use.kind} {use.name} on {at.long_label}: {why}"))
    if b.dtype == "auto":
        verdicts.append(Verdict(AUTO))
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
    if claim is not None and claim.rivals:
        verdicts.append(Verdict(DOMAIN_CLAIMED, ", ".join(f"{o.namespace}/{o.name}" for o, _ in claim.rivals)))
        results.append(_claimed_finding(entry, obj, claim.rivals))
    undecided: dict[str, list] = {}
    for other, why in claim.undecided if claim is not None else ():
        undecided.setdefault(why, []).append(other)
    for why, others in undecided.items():
        results.append(finding(
            "unchecked", obj,
            f"domain.name {b.domain!r} is also claimed by KVCachePoolBinding "
            + " and ".join(f"{o.namespace}/{o.name} (pool {o.pool})" for o in others)
            + f": whether the master (KVCacheBackend) serving pool {b.pool} serves theirs too, which would leave "
              f"the domain managed for neither, is not checked ({why})",
            "give check the pools' spec.backends: " + (
                "add the KVCachePools to the input (kubectl get kvcachepools -o json)" if source == "file"
                else "run it as a user who may list kvcachepools")))
    if not entry.uses and not b.used_by and not (claim is not None and claim.rivals) and not named_unread:
        verdicts.append(Verdict(UNUSED))
        results.append(finding("binding-unused", obj,
                               f"named by no ModelDeployment, injected Pod or workload template "
                               f"(dtype {b.dtype!r}, pool {b.pool}, domain {b.domain})",
                               "nothing to do; delete it if it is no longer needed"))
    if (unknown or any(u.problem for u in entry.uses) or (claim is not None and claim.undecided and not claim.rivals)) \
            and not entry.rejected_by:
        verdicts.append(Verdict(UNKNOWN))
    entry.verdicts = tuple(verdicts)
    return results


def _auto_example(entry):
    ats = list(entry.engines())
    if not ats:
        return "fp8_e4m3 or bfloat16"
    common = set.intersection(*(at.starting for at in ats)) - {"auto"}
    picks = [v for v in ("fp8_e4m3", "bfloat16") if v in common] or sorted(common)[:2]
    return " or ".join(picks) if picks else "a value every engine accepts"


def _rejected_finding(entry: BindingEntry, obj, on) -> Finding:
    dtype = entry.binding.dtype if entry.binding is not None else None     # rejected_by: a Binding that exists
    users = unique(u for u, _, _ in entry.rejected_by)
    parts = [f"{use.kind} {use.name} on " + ", ".join(e.long_label for u, e, _ in entry.rejected_by if u is use)
             for use in users]
    effects = []
    # the parser's refusal, or the attention backends' after it (engine/attention.py)
    fails = "fails argument parsing" if any(dtype_outcome(dtype, e).error != model.START_UP_CHECK
                                            for _, e, _ in entry.rejected_by) else "exits at start-up"
    if any(u.kind == "ModelDeployment" for u in users):
        effects.append(f"every replica the rollout replaces {fails} and crash-loops")
    if any(u.kind != "ModelDeployment" for u in users):
        effects.append(f"every Pod injected from now on {fails}")
    first_reason = entry.rejected_by[0][2]
    message = f"dtype {dtype!r} is rejected by {'; '.join(parts)}: {'; '.join(effects)} ({first_reason})"
    entry.suggestion = suggest_dtype(dtype, list(entry.engines()))
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
    common = sorted(set.intersection(*(e.starting for e in entry.engines())) - {"auto"})
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


def _claimed_finding(entry: BindingEntry, obj, rivals) -> Finding:
    """The operator's reconcile-time refusal (kv_cache_pool.go): no winner, each names the others."""
    b = entry.binding
    assert b is not None    # a claim is judged of a Binding that exists
    backends = " and ".join(dict.fromkeys(m for _, m in rivals if m))
    names = " and ".join(f"{o.namespace}/{o.name}" + (f" (pool {o.pool})" if o.pool != b.pool else "")
                         for o, _ in rivals)
    if all(o.pool == b.pool for o, _ in rivals):
        shared = (f"they share pool {b.pool}, served by backend {backends}" if backends else
                  f"they share pool {b.pool}, so whichever backend serves it serves them all")
    else:
        shared = f"backend {backends} serves " + ("both Bindings' pools" if len(rivals) == 1 else "all their pools")
    where = f"on backend {backends}" if backends else f"on pool {b.pool}'s backend"
    users = f", so its users ({', '.join(u.ref for u in entry.uses)}) get no KV cache pool" if entry.uses else ""
    return finding(
        "binding-domain-claimed", obj,
        f"domain.name {b.domain!r} is also claimed by KVCachePoolBinding {names}, and {shared}: a master keeps one "
        f"ledger entry per domain, so the operator manages it for neither Binding (DomainExclusive False, "
        f"DomainClaimedByMultipleBindings) and grants it no quota{users}",
        f"delete one of them (admission refuses a second claim, so they raced it); to keep this one, recreate it with "
        f"a domain.name no Binding {where} uses (domain is immutable) and point its users at the new one")


def check_bindings(snapshot, deployments, optins, pods, on) -> tuple[list[BindingEntry], list[Finding]]:
    uses = binding_uses(snapshot, deployments, optins, pods)
    keys = [k for k in snapshot.bindings if records.in_namespace(k[0], snapshot.namespace)]
    keys += [k for k in uses if k not in snapshot.bindings]
    contested = claims(snapshot)
    unread = {(namespace, binding) for namespace, _, _, binding in getattr(snapshot, "unread_opt_ins", ())}
    entries, found = [], []
    for key in sorted(set(keys)):
        entry = BindingEntry(key[0], key[1], snapshot.bindings.get(key), uses.get(key, []))
        found += judge_binding(entry, on, contested.get(key), snapshot.source, key in unread)
        entries.append(entry)
    return entries, found
