"""Everything the upgrade (the Setting on) will break, found before it happens.

Pure: a snapshot in, a report out (findings, the Binding table, the role table). No cluster,
no files, no printing. Engine questions go to the engine model (`engines`, `kvparse`,
`predict`), Pod questions to `verify`; nothing here matches option names with a regex.

The checks, in the upgrade guide's order:
  1. every Binding's dtype against every engine (and engine version) it will be handed to;
  2. roles that pass --kv-cache-dtype themselves in extraArgs (refused at their next edit);
  3. take-over roles (`command` set) attached to a pool: the operator renders nothing for them;
  4. injection opt-ins (Pods and workload Pod templates) the webhook will refuse;
  5. the Setting itself.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from kubectl_kvcache import engine as model, setting as setting_mod, snapshot as snap, verify
from kubectl_kvcache.engine import (DTYPE_OPTION, IMAGE_TAG, MINIMUM, POD_IMAGE, SAME_FORMAT, SPEC_IMAGE,
                                    SPEC_VERSION, Token, Version, predict)

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)

# Every finding code, its usual severity and what it means (README "Finding codes" mirrors it).
CODES = {
    "binding-dtype-rejected": (ERROR, "a Binding's dtype is a spelling an engine that will receive it rejects"),
    "binding-missing": (ERROR, "a deployment, Pod or template names a Binding that does not exist"),
    "binding-auto": (WARNING, "a stored Binding declares auto: it keeps working, a new one may not"),
    "binding-unused": (INFO, "a Binding nobody in the input names"),
    "role-own-flag": (WARNING, "a role passes --kv-cache-dtype itself in extraArgs (error when its value "
                               "differs from the Binding's or the engine rejects it)"),
    "takeover-role": (INFO, "a take-over role (command set) on a pool: what it runs with (warning when it is "
                            "not the Binding's dtype, error when the engine rejects it)"),
    "injection-refused": (ERROR, "an injection opt-in (Pod or workload template) the webhook refuses"),
    "unchecked": (WARNING, "something the check needs is not in the input or not decidable"),
    "setting": (INFO, "the Setting's current value"),
}

_SHORT_SOURCE = {SPEC_VERSION: "", SPEC_IMAGE: "image", POD_IMAGE: "pods", IMAGE_TAG: "image",
                 MINIMUM: "minimum"}

OPERATOR_SOURCE = "operator"   # Token source of the operator's own --kv-cache-dtype pair
EXTRA_ARGS = "extraArgs"
_PROBE = Token("auto", "probe", 0)


# -- records -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    namespace: Optional[str]
    kind: str
    name: str
    message: str
    fix: str = ""

    def to_dict(self):
        return {"severity": self.severity, "code": self.code, "namespace": self.namespace, "kind": self.kind,
                "name": self.name, "message": self.message, "fix": self.fix}


def finding(code, obj, message, fix="", severity=None):
    """A Finding for `obj` = (namespace, kind, name); the severity defaults to the code's."""
    namespace, kind, name = obj
    return Finding(severity or CODES[code][0], code, namespace, kind, name, message, fix)


@dataclass(frozen=True)
class EngineAt:
    """An engine release, and where the plugin read its version."""

    engine: str
    version: Version
    source: str
    ascend: bool = False

    @property
    def profile(self):
        return model.profile(self.engine, self.version)

    @property
    def label(self):
        """`vllm 0.29.0`, `sglang 0.5.19 (image)`: short, for tables."""
        short = _SHORT_SOURCE.get(self.source, "")
        return f"{self.engine} {self.version}" + (f" ({short})" if short else "")

    @property
    def long_label(self):
        """`SGLang 0.5.19 (from spec.engine.image)`, `vLLM 0.29.0 (version unknown: the operator minimum)`."""
        name = f"{model.DISPLAY_NAMES[self.engine]} {self.version}"
        if self.source == MINIMUM:
            return f"{name} (version unknown: the operator minimum)"
        return f"{name} (from {self.source})"

    @property
    def name(self):
        return f"{model.DISPLAY_NAMES[self.engine]} {self.version}"

    def to_dict(self):
        return {"engine": self.engine, "version": str(self.version), "versionSource": self.source}


@dataclass(frozen=True)
class Use:
    """One object naming a Binding: a ModelDeployment, an injected Pod or a workload template."""

    kind: str
    namespace: str
    name: str
    engines: Tuple[EngineAt, ...]
    renders: bool = True      # False: only take-over roles, so the dtype reaches no engine
    problem: str = ""         # why its engine cannot be judged

    @property
    def ref(self):
        return self.name if self.kind == "ModelDeployment" else f"{self.kind}/{self.name}"

    def to_dict(self):
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name,
                "engines": [e.to_dict() for e in self.engines], "receivesDtype": self.renders,
                **({"problem": self.problem} if self.problem else {})}


@dataclass
class BindingEntry:
    namespace: str
    name: str
    binding: Optional[snap.Binding]
    uses: List[Use]
    verdict: str = "OK"
    rejected_by: List[Tuple[Use, EngineAt, str]] = field(default_factory=list)
    suggestion: Optional[str] = None

    def engines(self):
        seen = []
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


@dataclass(frozen=True)
class FlagToken:
    """A token naming --kv-cache-dtype as one engine release reads it."""

    source: str
    index: int
    text: str
    value: Optional[str]      # None: no value follows
    ambiguous: str = ""       # the options an ambiguous abbreviation could mean

    @property
    def where(self):
        return f"{self.source}[{self.index}]"

    @property
    def shown(self):
        if self.value is None or "=" in self.text:
            return self.text
        return f"{self.text} {self.value}"


@dataclass
class RoleEntry:
    namespace: str
    deployment: str
    role: str
    role_index: int
    type: str                 # own-flag | take-over
    engine: Optional[EngineAt]
    binding: Optional[str]
    dtype: Optional[str]
    flags: List[dict]         # {path, text, value, where}
    today: str
    after: str
    verdict: str
    severity: str
    reason: str

    def to_dict(self):
        return {
            "namespace": self.namespace, "deployment": self.deployment, "role": self.role,
            "roleIndex": self.role_index, "type": self.type,
            "engine": self.engine.engine if self.engine else None,
            "engineVersion": str(self.engine.version) if self.engine else None,
            "versionSource": self.engine.source if self.engine else None,
            "binding": self.binding, "dtype": self.dtype, "flags": self.flags,
            "today": self.today, "afterUpgrade": self.after,
            "verdict": self.verdict, "severity": self.severity, "reason": self.reason,
        }


@dataclass
class Report:
    setting: dict
    findings: List[Finding]
    bindings: List[BindingEntry]
    roles: List[RoleEntry]
    checked: Dict[str, int]

    def summary(self):
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def to_dict(self):
        return {"kind": "CheckReport", "setting": self.setting,
                "findings": [f.to_dict() for f in self.findings], "summary": self.summary()}


# -- engine versions -----------------------------------------------------------------------

def deployment_engines(md: snap.Deployment, pod_images: Sequence[str]) -> Tuple[EngineAt, ...]:
    """The engine releases a deployment runs: spec.engine.version, else spec.engine.image's tag,
    else the tags of its Pods' images (oldest Pod first), else the operator's minimum."""
    engine = model.normalise_engine(md.engine)
    if engine is None:
        return ()
    found = model.resolve_versions(engine, md.engine_version,
                                   ((SPEC_IMAGE, (md.image,)), (POD_IMAGE, tuple(pod_images))))
    return tuple(EngineAt(engine, version, source) for version, source in found)


def injected_engine(annotations, container) -> Optional[EngineAt]:
    """The engine an injection opt-in declares, at its image's version, else the minimum."""
    engine = model.normalise_engine(annotations.get(snap.ANNOTATION_PREFIX + "engine"))
    if engine is None:
        return None
    image = (container or {}).get("image") or ""
    ascend = (annotations.get(snap.ANNOTATION_PREFIX + "manufacturer") or "").lower() == "ascend" \
        or model.is_ascend_image(image)
    version, source = model.resolve_versions(engine, None, ((IMAGE_TAG, (image,)),))[0]
    return EngineAt(engine, version, source, ascend)


# -- reading --kv-cache-dtype with the engine model ----------------------------------------

def operator_tokens(dtype) -> List[Token]:
    """The two entries the operator (and the webhook) hand the engine."""
    return [Token(DTYPE_OPTION, OPERATOR_SOURCE, 0), Token(dtype, OPERATOR_SOURCE, 1)]


def dtype_outcome(dtype, at: EngineAt) -> model.Parse:
    """What `--kv-cache-dtype <dtype>` does to that engine release."""
    return model.parse(operator_tokens(dtype), at.profile, platform_may_extend=at.ascend)


def plain(reason, operator=""):
    """A kvparse reason with the operator's pseudo-position spelled out as `operator` (or dropped)."""
    return reason.replace(f" ({OPERATOR_SOURCE}[0])", f" ({operator})" if operator else "").replace(
        f"{OPERATOR_SOURCE}[0]", operator or "the operator's --kv-cache-dtype")


def _could_abbreviate_dtype(text, profile):
    name = text.split("=", 1)[0]
    if profile.underscores:
        name = name.replace("_", "-")
    return len(name) > 2 and DTYPE_OPTION.startswith(name)


def flag_tokens(tokens: Sequence[Token], profile) -> List[FlagToken]:
    """Every token the release's parser reads as --kv-cache-dtype: exact, `=value`, vLLM's
    underscores, unique abbreviations, `--kv-cache-dtype.key`; and abbreviations that are
    ambiguous at that release but could mean it. Each token is put to `kvparse` followed by a
    probe value: it names the flag exactly when the parse records an occurrence for it."""
    found = []
    for j, tok in enumerate(tokens):
        if tok.text is None or not tok.text.startswith("--"):
            continue
        probe = model.parse([tok, _PROBE], profile)
        if probe.occurrences:
            actual = model.parse([tok] + list(tokens[j + 1:j + 2]), profile)
            value = actual.occurrences[0].value if actual.occurrences else None
            found.append(FlagToken(tok.source, tok.index, tok.text, value))
        elif probe.error == model.AMBIGUOUS and _could_abbreviate_dtype(tok.text, profile):
            found.append(FlagToken(tok.source, tok.index, tok.text, None, ambiguous=probe.reason))
    return found


def accepted_since(engine, value) -> Optional[str]:
    """The first release of `engine` that accepts `value` (and still does), from the engine data."""
    since = None
    for release, added, removed in model.ACCEPTED_VALUES[engine]:
        if value in added:
            since = since or release
        if value in removed:
            since = None
    return since


def suggest_dtype(dtype, profiles) -> Optional[str]:
    """A spelling of the same cache format that every given release accepts, if there is one."""
    for candidate in (dtype,) + SAME_FORMAT.get(dtype, ()):
        if all(candidate in p.accepted for p in profiles):
            return candidate
    return None


# -- the Setting ---------------------------------------------------------------------------

def setting_state(setting: Optional[snap.Setting], input_source="cluster") -> dict:
    setting = setting or snap.default_setting()
    return {"namespace": snap.SETTING_NAMESPACE, "name": snap.SETTING_NAME, "value": setting.status_value,
            "specValue": setting.spec_value, "on": setting_mod.effective_value(setting),
            "source": setting.source if input_source == "cluster" or setting.source != "default" else "assumed"}


def setting_finding(state: dict, errors: int, failing: bool = False) -> Finding:
    obj = (snap.SETTING_NAMESPACE, "Setting", snap.SETTING_NAME)
    value, on, source = state["value"], state["on"], state["source"]
    if on is None:
        return finding("setting", obj, f"status.value is {value!r}, which the operator cannot read as a "
                                       f"boolean", "patch spec.value to \"true\" or \"false\"", severity=ERROR)
    if source == "flag":
        shown = f"assumed {'on' if on else 'off'} (--assume-setting), not read"
    elif source == "assumed":
        shown = "not in the input: assuming the operator's default \"true\""
    elif value is None:
        shown = "status.value is unset: the operator's default \"true\" applies"
    else:
        shown = f"status.value is {value!r}"
    if on:
        message = (f"{shown}: already on. The operator hands each Binding's dtype to the engine and the "
                   f"webhooks refuse own flags: the findings are the cluster's state now")
        fix = ("if new Pods fail argument parsing, the guide's recovery turns it off first: kubectl kvcache setting "
               "off" if failing else "")
    else:
        message = (f"{shown}: off. Turning it on rolls every pool-attached ModelDeployment; the findings are "
                   f"what that will cause")
        fix = "fix the errors first, then: kubectl kvcache setting on" if errors else "kubectl kvcache setting on"
    return finding("setting", obj, message, fix)


# -- scope and inputs ----------------------------------------------------------------------

@dataclass(frozen=True)
class OptIn:
    """A Pod, or a workload's Pod template, labelled kvcache.gpustack.ai/inject=true."""

    kind: str
    namespace: str
    name: str
    annotations: Dict[str, str]
    containers: Tuple[dict, ...]
    existing_pod: bool = False
    owner: Optional[Tuple[str, str]] = None     # (kind, name) of a Pod's controller

    @property
    def obj(self):
        return (self.namespace, self.kind, self.name)

    def annotation(self, key):
        return self.annotations.get(snap.ANNOTATION_PREFIX + key)


def _in_scope(namespace, snapshot):
    return snapshot.namespace is None or namespace == snapshot.namespace


def _md_owned(pod):
    """Controlled by a ModelDeployment: the operator renders it, the injection webhook does not."""
    return bool(pod.owner) and pod.owner[1] == "ModelDeployment" and pod.owner[0].split("/")[0] == snap.GROUP


def opt_ins(snapshot) -> List[OptIn]:
    found = []
    for pod in snapshot.pods:
        if not _in_scope(pod.namespace, snapshot) or _md_owned(pod):
            continue
        if pod.labels.get(snap.INJECT_LABEL) == "true":
            owner = (pod.owner[1], pod.owner[2]) if pod.owner else None
            found.append(OptIn("Pod", pod.namespace, pod.name, pod.annotations, pod.containers, True, owner))
    for w in snapshot.workloads:
        if _in_scope(w.namespace, snapshot) and w.labels.get(snap.INJECT_LABEL) == "true":
            found.append(OptIn(w.kind, w.namespace, w.name, w.annotations, w.containers))
    return sorted(found, key=lambda o: (o.namespace, o.kind != "Pod", o.kind, o.name))


def target_container(optin: OptIn) -> Tuple[Optional[dict], str]:
    """The container the webhook injects into, or why it refuses to pick one."""
    named = optin.annotation("container")
    if named:
        match = next((c for c in optin.containers if c.get("name") == named), None)
        if match is None:
            return None, f"annotation {snap.ANNOTATION_PREFIX}container names {named!r}, which is not a container"
        return match, ""
    if len(optin.containers) == 1:
        return optin.containers[0], ""
    return None, (f"{len(optin.containers)} containers and no {snap.ANNOTATION_PREFIX}container annotation "
                  f"to say which runs the engine")


def _without_webhook_tail(container, optin):
    """An admitted Pod's args end with the webhook's own `--kv-cache-dtype <dtype>`: not the Pod's."""
    args = list(container.get("args") or ())
    if optin.existing_pod and optin.annotation("injected") and len(args) >= 2 and args[-2] == DTYPE_OPTION:
        return dict(container, args=args[:-2])
    return container


class _Engines:
    """Engine Pods of pool-attached deployments, grouped (verify decides which Pods count)."""

    def __init__(self, snapshot):
        self.by_role: Dict[Tuple[str, str, str], List[verify.Candidate]] = {}
        self._roles: Dict[Tuple[str, str], List[Tuple[str, str, str]]] = {}
        for cand in verify.candidates(snapshot):
            if cand.owner and not cand.problem:
                key = (cand.pod.namespace, cand.owner["name"], cand.role)
                if key not in self.by_role:
                    self._roles.setdefault(key[:2], []).append(key)
                self.by_role.setdefault(key, []).append(cand)

    def of(self, md, role=None):
        if role is not None:
            return self.by_role.get((md.namespace, md.name, role), [])
        return [c for key in self._roles.get((md.namespace, md.name), ()) for c in self.by_role[key]]

    def images(self, md):
        cands = sorted(self.of(md), key=lambda c: c.pod.created)
        return [(c.pod.container(snap.ENGINE_CONTAINER) or {}).get("image") for c in cands]


# -- 1. Bindings ---------------------------------------------------------------------------

def binding_uses(snapshot, deployments, optins, pods: _Engines) -> Dict[Tuple[str, str], List[Use]]:
    uses: Dict[Tuple[str, str], List[Use]] = {}
    for md in deployments:
        if not (md.kv_cache and md.binding):
            continue
        ats = deployment_engines(md, pods.images(md))
        problem = "" if ats else f"engine {md.engine!r} is not vLLM or SGLang"
        renders = not md.roles or any(not r.command for r in md.roles)
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


def judge_binding(entry: BindingEntry, on: bool) -> List[Finding]:
    b = entry.binding
    obj = (entry.namespace, "KVCachePoolBinding", entry.name)
    if b is None:
        entry.verdict = "MISSING"
        return [finding("binding-missing", (u.namespace, u.kind, u.name),
                        f"names KVCachePoolBinding {entry.name}, which is not in namespace {u.namespace}"
                        + (": new Pods cannot be injected" if u.kind != "ModelDeployment" else ""),
                        f"create Binding {entry.name}, or point "
                        + ("spec.kvCache.poolRef.name (a new deployment)" if u.kind == "ModelDeployment"
                           else f"annotation {snap.ANNOTATION_PREFIX}binding")
                        + " at an existing Binding")
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
        rejecting = _unique(f"{e.engine} {e.version}" for _, e, _ in entry.rejected_by)
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
            f"ModelDeployment {u[2]}" for u in stale) + ", not in the input: their engines are not checked"))
    if not entry.uses and not b.used_by:
        verdicts.append("UNUSED")
        results.append(finding("binding-unused", obj,
                               f"named by no ModelDeployment, injected Pod or workload template "
                               f"(dtype {b.dtype!r}, pool {b.pool}, domain {b.domain})",
                               "nothing to do; delete it if it is no longer needed"))
    if (unknown or any(u.problem for u in entry.uses)) and not entry.rejected_by:
        verdicts.append("UNKNOWN")
    entry.verdict = ", ".join(verdicts) or "OK"
    return results


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _auto_example(entry):
    profiles = [e.profile for e in entry.engines()]
    if not profiles:
        return "fp8_e4m3 or bfloat16"
    common = set.intersection(*(set(p.accepted) for p in profiles)) - {"auto"}
    picks = [v for v in ("fp8_e4m3", "bfloat16") if v in common] or sorted(common)[:2]
    return " or ".join(picks) if picks else "a value every engine accepts"


def _rejected_finding(entry: BindingEntry, obj, on) -> Finding:
    b = entry.binding
    users = _unique(u for u, _, _ in entry.rejected_by)
    parts = [f"{use.kind} {use.name} on " + ", ".join(e.long_label for u, e, _ in entry.rejected_by if u is use)
             for use in users]
    effects = []
    if any(u.kind == "ModelDeployment" for u in users):
        effects.append("every replica the rollout replaces fails argument parsing and crash-loops")
    if any(u.kind != "ModelDeployment" for u in users):
        effects.append("every Pod injected from now on fails argument parsing")
    first_reason = entry.rejected_by[0][2]
    message = f"dtype {b.dtype!r} is rejected by {'; '.join(parts)}: {'; '.join(effects)} ({first_reason})"
    entry.suggestion = suggest_dtype(b.dtype, [e.profile for e in entry.engines()])
    return finding("binding-dtype-rejected", obj, message, _recovery_fix(entry, on))


def _recovery_fix(entry, on):
    b = entry.binding
    if entry.suggestion:
        spelling = f"dtype {entry.suggestion!r}"
    else:
        spelling = _no_common_spelling(b.dtype, entry)
    deployments = [u.name for u in entry.uses if u.kind == "ModelDeployment"]
    others = [u.ref for u in entry.uses if u.kind != "ModelDeployment"]
    steps = ["Setting off first (it is on: new Pods fail now)" if on else None,
             f"create a Binding on pool {b.pool} with a new domain.name (not {b.domain!r}) and {spelling}",
             f"recreate {', '.join(deployments)} with spec.kvCache.poolRef.name naming it and delete the old "
             f"one{'s' if len(deployments) > 1 else ''}" if deployments else None,
             f"point {snap.ANNOTATION_PREFIX}binding of {', '.join(others)} at it" if others else None,
             "Setting back on" if on else None]
    return "; ".join(s for s in steps if s)


def _no_common_spelling(dtype, entry):
    rejecting = _unique((e.engine, e.version) for _, e, _ in entry.rejected_by)
    hints = []
    for engine, version in rejecting:
        since = accepted_since(engine, dtype)
        alt = next((a for a in SAME_FORMAT.get(dtype, ()) if accepted_since(engine, a)), None)
        if since:
            hints.append(f"{model.DISPLAY_NAMES[engine]} accepts {dtype!r} from {since}")
        elif alt:
            hints.append(f"{model.DISPLAY_NAMES[engine]} spells it {alt!r} from {accepted_since(engine, alt)}")
        else:
            hints.append(f"{model.DISPLAY_NAMES[engine]} has no spelling of {dtype!r}")
    common = sorted(set.intersection(*(set(e.profile.accepted) for e in entry.engines())) - {"auto"})
    choice = f"one of {', '.join(common)}" if common else "a value each engine accepts (or split the users)"
    return f"a dtype every engine accepts ({'; '.join(hints)}; or upgrade the engine): {choice}"


def check_bindings(snapshot, deployments, optins, pods, on) -> Tuple[List[BindingEntry], List[Finding]]:
    uses = binding_uses(snapshot, deployments, optins, pods)
    keys = [k for k in snapshot.bindings if _in_scope(k[0], snapshot)]
    keys += [k for k in uses if k not in snapshot.bindings]
    entries, found = [], []
    for key in sorted(set(keys)):
        entry = BindingEntry(key[0], key[1], snapshot.bindings.get(key), uses.get(key, []))
        found += judge_binding(entry, on)
        entries.append(entry)
    return entries, found


# -- 2. and 3. Roles on pools ---------------------------------------------------------------

def _role_path(i, j):
    return f"spec.roles[{i}].{EXTRA_ARGS}[{j}]"


def _shown(parse: model.Parse) -> str:
    if parse.outcome == model.REJECTED:
        return "REJECTED"
    if parse.outcome == model.UNKNOWN:
        return "UNKNOWN"
    return parse.effective if parse.effective is not None else "auto (engine default)"


def _today_from_pods(cands, snapshot, on) -> Optional[str]:
    """What the role's running Pods run with, as verify judges them: `fp8_e5m2 (2 pods)`."""
    if not cands:
        return None
    counts: Dict[str, int] = {}
    for cand in cands:
        item = verify.judge_candidate(cand, snapshot, on)
        shown = item.status if item.status in (verify.REJECTED, verify.UNKNOWN) else (item.effective or "auto")
        counts[shown] = counts.get(shown, 0) + 1
    return ", ".join(f"{v} ({n} pod{'s' if n > 1 else ''})" for v, n in counts.items())


_OPERATOR_FIRST = "the operator's --kv-cache-dtype, which comes before the role's"


def own_flag_entry(md, i, role, at: EngineAt, binding, snapshot, pods, on) -> Optional[Tuple[RoleEntry, Finding]]:
    tokens = [Token(a, EXTRA_ARGS, j) for j, a in enumerate(role.extra_args)]
    flags = flag_tokens(tokens, at.profile)
    if not flags:
        return None
    dtype = binding.dtype if binding else None
    own = model.parse(tokens, at.profile)
    after = model.parse(operator_tokens(dtype) + tokens, at.profile) if dtype else own
    own_value = next((f.value for f in reversed(flags) if not f.ambiguous), None)
    predicted_today = after if on else own
    today = _today_from_pods(pods.of(md, role.name), snapshot, on) or f"{_shown(predicted_today)} (no Pods: predicted)"
    paths = ", ".join(_role_path(i, f.index) for f in flags)
    spelled = ", ".join(f"`{f.shown}` at {_role_path(i, f.index)}" for f in flags)

    if after.outcome == model.REJECTED:
        verdict, severity = "REJECTED", ERROR
        ambiguous = next((f for f in flags if f.ambiguous), None)
        why = (f"The engine exits on it: {ambiguous.ambiguous}" if ambiguous
               else f"After the upgrade the engine exits: {plain(after.reason, _OPERATOR_FIRST)}")
    elif after.outcome == model.UNKNOWN:
        verdict, severity, why = "UNKNOWN", WARNING, plain(after.reason, _OPERATOR_FIRST)
    elif dtype is None:
        verdict, severity = "UNKNOWN", WARNING
        why = f"Binding {md.binding} is not in the input, so its dtype is unknown"
    elif after.effective == dtype:
        verdict, severity = "SAME", WARNING
        why = "It sets the Binding's own value, so only the deployment's next edit is refused"
    else:
        verdict, severity = "MISMATCH", ERROR
        why = (f"It comes after the operator's --kv-cache-dtype {dtype} and wins: the role keeps running "
               f"{after.effective}, not the Binding's {dtype!r}")
    after_text = _shown(after)
    message = (f"role {role.name} passes the flag itself on {at.long_label}: {spelled}. {why}. Today: {today}; "
               f"after the upgrade: {after_text}. The webhook refuses the deployment's next edit until it is "
               f"removed")
    keep = own_value if own_value and own_value != dtype and after.outcome != model.REJECTED else None
    fix = f"remove {paths} from the role" + (
        f" once the Binding's dtype is the one it should run (to keep {keep}, move the deployment to a Binding "
        f"with dtype {keep!r} and a new domain.name)" if keep else "")
    entry = RoleEntry(md.namespace, md.name, role.name, i, "own-flag", at, md.binding, dtype,
                      [{"path": _role_path(i, f.index), "text": f.text, "value": f.value,
                        **({"ambiguous": f.ambiguous} if f.ambiguous else {})} for f in flags],
                      today, after_text, verdict, severity, why)
    return entry, finding("role-own-flag", (md.namespace, "ModelDeployment", md.name), message, fix, severity)


def takeover_entry(md, i, role, at: EngineAt, binding, snapshot, pods, on) -> Tuple[RoleEntry, Finding]:
    dtype = binding.dtype if binding else None
    cands = pods.of(md, role.name)
    image = md.image or ((cands[0].pod.container(snap.ENGINE_CONTAINER) or {}).get("image") if cands else None)
    container = {"name": snap.ENGINE_CONTAINER, "command": list(role.command), "env": list(role.env),
                 "image": image or ""}
    pred = predict(container, at.engine, str(at.version))
    flags = [{"path": f"spec.roles[{i}].{o.source}[{o.index}]", "text": o.text, "value": o.value}
             for o in pred.occurrences]
    where = "; ".join(f"`{f['text']}{'' if '=' in f['text'] else ' ' + str(f['value'])}` in "
                      f"{f['path']}" for f in flags)
    if not where and pred.outcome == model.OK:
        where = "no --kv-cache-dtype"
    detail = ", ".join(x for x in (where, f"via {pred.via}" if pred.via else "") if x)
    if pred.outcome == model.REJECTED:
        verdict, severity, why = "REJECTED", ERROR, f"the engine exits: {pred.reason}"
        after = "REJECTED"
    elif pred.outcome == model.UNKNOWN:
        verdict, severity, why = "UNKNOWN", WARNING, f"what it runs with cannot be known: {pred.reason}"
        after = "UNKNOWN"
    else:
        after = pred.effective or "auto (engine default)"
        if dtype is None:
            verdict, severity = "UNKNOWN", WARNING
            why = f"runs {after}; Binding {md.binding} is not in the input"
        elif pred.effective is None:
            verdict, severity = "MISSING", WARNING
            why = f"its command passes no --kv-cache-dtype: the engine runs its default, not the Binding's {dtype!r}"
        elif pred.effective == dtype:
            verdict, severity, why = "OK", INFO, f"its own command sets the Binding's {dtype!r}"
        else:
            verdict, severity = "MISMATCH", WARNING
            why = f"its own command sets {pred.effective!r}, not the Binding's {dtype!r}"
    today = _today_from_pods(cands, snapshot, on) or f"{after} (no Pods: predicted)"
    message = (f"take-over role {role.name} (command set) on {at.long_label}: the operator renders nothing for "
               f"it, before or after the upgrade; {why}" + (f" ({detail})" if detail else ""))
    fix = {"OK": "", "MISMATCH": f"set `--kv-cache-dtype {dtype}` in the role's command if it should run the "
                                 f"Binding's value",
           "MISSING": f"add `--kv-cache-dtype {dtype}` to the role's command if it should run the Binding's value",
           "REJECTED": "fix the role's command: the engine cannot start",
           "UNKNOWN": "check the role's command by hand"}[verdict]
    entry = RoleEntry(md.namespace, md.name, role.name, i, "take-over", at, md.binding, dtype, flags,
                      today, after, verdict, severity, why)
    return entry, finding("takeover-role", (md.namespace, "ModelDeployment", md.name), message, fix, severity)


def check_roles(snapshot, deployments, pods, on) -> Tuple[List[RoleEntry], List[Finding]]:
    entries, found = [], []
    for md in deployments:
        if not md.kv_cache:
            continue
        ats = deployment_engines(md, pods.images(md))
        obj = (md.namespace, "ModelDeployment", md.name)
        if not ats:
            found.append(finding("unchecked", obj, f"spec.engine.name {md.engine!r} is not vLLM or SGLang: its "
                                                   f"Binding's dtype and its roles are not checked for it"))
            continue
        at = ats[-1]
        binding = snapshot.bindings.get((md.namespace, md.binding)) if md.binding else None
        for i, role in enumerate(md.roles):
            if role.command:
                result = takeover_entry(md, i, role, at, binding, snapshot, pods, on)
            else:
                result = own_flag_entry(md, i, role, at, binding, snapshot, pods, on)
            if result:
                entries.append(result[0])
                found.append(result[1])
    return entries, found


# -- 4. Injection opt-ins ------------------------------------------------------------------

def injection_problems(optin: OptIn) -> List[Tuple[str, str]]:
    """(why, fix) for every reason the webhook refuses this opt-in."""
    container, problem = target_container(optin)
    if container is None:
        return [(problem, f"add annotation {snap.ANNOTATION_PREFIX}container naming the engine container")]
    container = _without_webhook_tail(container, optin)
    command, args = list(container.get("command") or ()), list(container.get("args") or ())
    name = container.get("name")
    if not command and not args:
        return [(f"container {name} has no command and no args", "write the engine's command and args into "
                                                                   "the container spec")]
    problems = []
    why, fix = model.program_refusal(command + args, snap.INJECT_LABEL)
    if why:
        problems.append((f"container {name}: {why}", fix))
    at = injected_engine(optin.annotations, container)
    if at is not None:
        tokens = ([Token(t, "command", k) for k, t in enumerate(command)]
                  + [Token(t, "args", k) for k, t in enumerate(args)])
        for f in flag_tokens(tokens, at.profile):
            if f.ambiguous:
                problems.append((f"container {name}: {f.where} `{f.text}` is an ambiguous abbreviation on "
                                 f"{at.long_label}: {f.ambiguous}", f"remove {f.where}"))
            else:
                problems.append((f"container {name} passes the flag itself on {at.long_label}: "
                                 f"{f.where} `{f.shown}`",
                                 f"remove {f.where} `{f.text}`: the webhook appends the Binding's dtype"))
    return problems


def check_injection(optins: List[OptIn]) -> List[Finding]:
    found = []
    for o in optins:
        if not o.annotation("binding") or injected_engine(o.annotations, None) is None:
            missing = [k for k in ("binding", "engine") if not o.annotation(k)
                       or (k == "engine" and model.normalise_engine(o.annotation(k)) is None)]
            found.append(finding("unchecked", o.obj, f"opts into injection but annotation "
                                                     f"{', '.join(snap.ANNOTATION_PREFIX + k for k in missing)} is "
                                                     f"missing or not vLLM/SGLang: the webhook needs it",
                                 f"set {', '.join(snap.ANNOTATION_PREFIX + k for k in missing)}"))
        problems = injection_problems(o)
        if not problems:
            continue
        reasons = "; ".join(w for w, _ in problems)
        if o.existing_pod:
            owner = f" its owner {o.owner[0]} {o.owner[1]} reports FailedCreate for the replacement" if o.owner else ""
            message = (f"the webhook refuses a Pod like this one: {reasons}. This Pod already exists and keeps "
                       f"running;{owner or ' a new Pod like it is refused'}")
        else:
            message = (f"the webhook refuses the Pods of this template: {reasons}. The {o.kind}'s next Pods are not "
                       f"created (it reports FailedCreate)")
        found.append(finding("injection-refused", o.obj, message, "; ".join(_unique(f for _, f in problems))))
    return found


# -- everything ------------------------------------------------------------------------------

_RANK = {s: n for n, s in enumerate(SEVERITIES)}


def check(snapshot: snap.Snapshot) -> Report:
    state = setting_state(snapshot.setting, snapshot.source)
    on = state["on"] if state["on"] is not None else setting_mod.DEFAULT
    deployments = sorted((md for md in snapshot.deployments.values() if _in_scope(md.namespace, snapshot)),
                         key=lambda d: (d.namespace, d.name))
    pods = _Engines(snapshot)
    optins = opt_ins(snapshot)
    bindings, found = check_bindings(snapshot, deployments, optins, pods, on)
    roles, role_findings = check_roles(snapshot, deployments, pods, on)
    found += role_findings
    found += check_injection(optins)
    found.sort(key=lambda f: (_RANK[f.severity], f.namespace or "", f.kind, f.name, f.code))
    found.append(setting_finding(state, sum(1 for f in found if f.severity == ERROR),
                                 any(b.rejected_by for b in bindings)))
    checked = {"bindings": sum(1 for b in bindings if b.binding), "deployments": len(deployments),
               "optIns": len(optins)}
    return Report(state, found, bindings, roles, checked)
