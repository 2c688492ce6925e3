"""The upgrade guide's "If new Pods fail argument parsing", planned: objects in, a plan out.

Pure: no cluster, no files, no printing. `plan(inputs, request)` turns the full objects read for
one Binding (load/recovery.py) into an ordered list of typed steps (SetSetting, Create, Patch,
Delete, Wait, their targets Refs), each written by to_dict() as the stable `RecoveryPlan`
contract (docs/recover.md):

  {"action": "setting", "value": false}
  {"action": "create", "object": {...}}
  {"action": "patch", "target": {kind, namespace, name}, "patch": {...}}      (JSON merge patch)
  {"action": "delete", "target": {kind, namespace, name, uid}}
  {"action": "wait", "target": {kind, namespace, name}, "for": "available|bound|unused|deleted|value=..."}

A refusal is a PluginError (one line, exit 2) saying why. The executor is cli/flows/recover.py.
"""

from __future__ import annotations

import copy
import re

from kubectl_kvcache import engine as model
from kubectl_kvcache.kube import names
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.judge.checks.engines import dtype_outcome, plain
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.record import Record

SIDE_BY_SIDE, REPLACE = "side-by-side", "replace"
STRATEGIES = (SIDE_BY_SIDE, REPLACE)
DEFAULT_STRATEGY = SIDE_BY_SIDE

MD_KIND, BINDING_KIND, SETTING_KIND = api.MD_KIND, api.BINDING_KIND, api.SETTING_KIND
BINDING_ANNOTATION = api.BINDING_ANNOTATION
# Metadata the API server (or kubectl) writes: never copied into a recreated object.
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
NAME_MAX = 63        # a ModelDeployment's name is its Pods' app.kubernetes.io/instance label value
# Workload kinds whose Pod template can be re-pointed by a patch (a Job's template is immutable).
PATCHABLE = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob")

# `for` of wait steps
AVAILABLE, BOUND, UNUSED, DELETED = "available", "bound", "unused", "deleted"


def value_for(value: bool) -> str:
    return f"value={'true' if value else 'false'}"


class Inputs(Record):
    """What the planner reads: what load.recovery read, with checks' judgement of it (inputs_for)."""

    __slots__ = ("namespace", "binding_name", "binding", "binding_gone", "bindings", "deployments", "workloads",
                 "pods", "report", "setting", "backups", "notes")
    __hash__ = None     # mutable: not hashable

    def __init__(self, namespace: str, binding_name: str, binding: dict | None, binding_gone: bool,
                 bindings: list[dict], deployments: list[dict], workloads: list[dict], pods: list[records.Pod],
                 report: object, setting: records.Setting | None = None, backups: list[dict] | None = None,
                 notes: list[str] | None = None):
        self.namespace = namespace
        self.binding_name = binding_name
        self.binding = binding              # the old Binding (from a backup when `binding_gone`)
        self.binding_gone = binding_gone    # already deleted by an earlier run (known from its backup)
        self.bindings = bindings            # Bindings whose domain claims are known (other namespaces too)
        self.deployments = deployments      # every ModelDeployment of the namespace
        self.workloads = workloads          # workload objects of the namespace whose template opts in
        self.pods = pods                    # Pods of the namespace that opt in
        self.report = report                # checks.Report on the snapshot (suggestion, rejecting engines)
        self.setting = setting
        self.backups = [] if backups is None else backups   # objects an earlier run backed up (resume)
        self.notes = [] if notes is None else notes


def inputs_for(found, report) -> Inputs:
    """The planner's inputs from a load.recovery.Recovery and checks' report on its snapshot."""
    snapshot = found.snapshot
    return Inputs(namespace=found.namespace, binding_name=found.binding_name, binding=found.binding,
                  binding_gone=found.binding_gone, bindings=found.bindings, deployments=found.deployments,
                  workloads=found.workloads,
                  pods=[p for p in snapshot.pods if p.namespace == found.namespace and p.opted_in],
                  report=report, setting=snapshot.setting, backups=found.backups, notes=found.notes)


class Request(Record):
    __slots__ = ("dtype", "name", "domain", "strategy")

    def __init__(self, dtype: str | None = None, name: str | None = None, domain: str | None = None,
                 strategy: str = DEFAULT_STRATEGY):
        self.dtype = dtype
        self.name = name
        self.domain = domain
        self.strategy = strategy


class Plan(Record):
    __slots__ = ("binding", "target", "steps", "warnings", "manual", "notes")
    __hash__ = None     # mutable: not hashable

    def __init__(self, binding: dict, target: dict, steps: list, warnings: list[str] | None = None,
                 manual: list[dict] | None = None, notes: list[str] | None = None):
        self.binding = binding
        self.target = target
        self.steps = steps
        self.warnings = [] if warnings is None else warnings
        self.manual = [] if manual is None else manual
        self.notes = [] if notes is None else notes

    def to_dict(self):
        shared = {}
        return {"kind": "RecoveryPlan", "binding": self.binding, "target": self.target,
                "steps": [s.to_dict(shared) for s in self.steps],
                "warnings": self.warnings, "manual": self.manual}


class Ref(Record):
    """The object a step acts on or waits for (uid: a delete's precondition)."""

    __slots__ = ("kind", "namespace", "name", "uid")

    def __init__(self, kind: str, namespace: str | None, name: str, uid: str | None = None):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.uid = uid

    def key(self):
        return self.kind, self.namespace, self.name

    def to_dict(self):
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name,
                **({"uid": self.uid} if self.uid else {})}


def ref(kind, namespace, name, uid=None) -> Ref:
    return Ref(kind, namespace, name, uid)


def setting_ref() -> Ref:
    return Ref(SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)


def _target(target: Ref, shared: dict | None) -> dict:
    """A step's target as a document; the steps of one plan that share a Ref share its dict (so
    -o yaml writes it once, with an alias, as it always has)."""
    if shared is None:
        return target.to_dict()
    if id(target) not in shared:
        shared[id(target)] = (target, target.to_dict())
    return shared[id(target)][1]


class SetSetting(Record):
    """Merge-patch the Setting's spec.value (guarded by its resourceVersion)."""

    action = "setting"
    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = value

    def to_dict(self, shared=None):
        return {"action": self.action, "value": self.value}


class Create(Record):
    action = "create"
    __slots__ = ("object",)
    __hash__ = None     # holds a manifest (a dict)

    def __init__(self, object: dict):
        self.object = object

    def to_dict(self, shared=None):
        return {"action": self.action, "object": self.object}


class Patch(Record):
    """A JSON merge patch of `target` (backed up first)."""

    action = "patch"
    __slots__ = ("target", "patch")
    __hash__ = None

    def __init__(self, target: Ref, patch: dict):
        self.target = target
        self.patch = patch

    def to_dict(self, shared=None):
        return {"action": self.action, "target": _target(self.target, shared), "patch": self.patch}


class Delete(Record):
    action = "delete"
    __slots__ = ("target",)

    def __init__(self, target: Ref):
        self.target = target

    def to_dict(self, shared=None):
        return {"action": self.action, "target": _target(self.target, shared)}


class Wait(Record):
    """Poll `target` until `condition` (AVAILABLE, BOUND, UNUSED, DELETED, value=true|false)."""

    action = "wait"
    __slots__ = ("target", "condition")

    def __init__(self, target: Ref, condition: str):
        self.target = target
        self.condition = condition

    def to_dict(self, shared=None):
        return {"action": self.action, "target": _target(self.target, shared), "for": self.condition}


# -- small helpers ---------------------------------------------------------------------------

def _meta(obj) -> dict:
    return obj.get("metadata") or {}


def _spec(obj) -> dict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def pool_of(binding) -> str | None:
    return (_spec(binding).get("poolRef") or {}).get("name")


def domain_of(binding) -> dict:
    domain = _spec(binding).get("domain")
    return domain if isinstance(domain, dict) else {}


def domain_name(binding) -> str:
    return domain_of(binding).get("name") or "default"


def binding_named(md) -> str | None:
    kv = _spec(md).get("kvCache")
    return ((kv.get("poolRef") or {}).get("name")) if isinstance(kv, dict) else None


def template_of(workload) -> dict | None:
    spec = _spec(workload)
    if workload.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = spec.get("template")
    return template if isinstance(template, dict) else None


def template_patch(kind, annotations) -> dict:
    inner = {"template": {"metadata": {"annotations": annotations}}}
    return {"spec": {"jobTemplate": {"spec": inner}}} if kind == "CronJob" else {"spec": inner}


def controller_of(obj) -> dict | None:
    return next((r for r in _meta(obj).get("ownerReferences") or () if isinstance(r, dict) and r.get("controller")),
                None)


def contains(actual, wanted) -> bool:
    """Whether `actual` holds everything `wanted` says (dicts key by key; other values equal):
    an object the API server defaulted still matches what was sent."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(contains(actual.get(k), v) for k, v in wanted.items())
    return actual == wanted


def slug(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")


def derive(base: str, old_dtype: str | None, dtype: str, limit=NAME_MAX) -> str:
    """`sgl-fp8` + fp8 -> fp8_e4m3: `sgl-fp8-e4m3`; `deepseek` -> `deepseek-fp8-e4m3`. The old
    dtype's suffix is dropped first, so names do not pile dtypes up."""
    new, old = slug(dtype), slug(old_dtype or "")
    stem = base[:-len(old) - 1] if old and base.endswith("-" + old) and len(base) > len(old) + 1 else base
    stem = stem[:max(1, limit - len(new) - 1)].rstrip("-.")
    return f"{stem}-{new}"


def _numbered(name: str, n: int, limit=NAME_MAX) -> str:
    suffix = f"-{n}"
    return name[:limit - len(suffix)].rstrip("-.") + suffix


def check_dtype_form(dtype: str):
    if not dtype or len(dtype) > 32 or dtype != dtype.lower() or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", dtype):
        raise PluginError(f"--dtype {dtype!r}: a Binding's dtype is lower case, at most 32 characters "
                          f"(letters, digits, '_', '-', '.')")
    if dtype == "auto":
        raise PluginError("--dtype auto: with the Setting on, a new Binding may not declare auto; name the "
                          "spelling the engines should run (e.g. fp8_e4m3 or bfloat16)")


# -- cleaning objects for re-creation --------------------------------------------------------

def clean_metadata(obj, name) -> dict:
    """name, namespace, labels and annotations (minus server-set ones): no uid, resourceVersion,
    creationTimestamp, generation, managedFields, finalizers, ownerReferences."""
    meta = _meta(obj)
    out = {"name": name, "namespace": meta.get("namespace")}
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in SERVER_ANNOTATIONS}
    if annotations:
        out["annotations"] = annotations
    return out


def new_binding(old, name, domain, dtype) -> dict:
    spec = copy.deepcopy(_spec(old))
    spec["domain"] = dict(domain_of(old), name=domain, dtype=dtype)
    return {"apiVersion": old.get("apiVersion"), "kind": BINDING_KIND,
            "metadata": clean_metadata(old, name), "spec": spec}


def new_deployment(old, name, binding) -> dict:
    spec = copy.deepcopy(_spec(old))
    kv = spec.get("kvCache") if isinstance(spec.get("kvCache"), dict) else {}
    spec["kvCache"] = dict(kv, poolRef=dict(kv.get("poolRef") or {}, name=binding))
    return {"apiVersion": old.get("apiVersion"), "kind": MD_KIND,
            "metadata": clean_metadata(old, name), "spec": spec}


# -- the plan ------------------------------------------------------------------------------

def plan(inputs: Inputs, request: Request) -> Plan:
    """The recovery in order: the new Binding (validated), the Setting's part, the steps, what is
    left to do by hand. A refusal is a PluginError."""
    target = _resolve_target(inputs, request)
    warnings = [f"{use.kind} {use.name}: {use.problem}, so dtype {target.dtype!r} is not checked against it"
                for use in (target.entry.uses if target.entry else ()) if use.problem]
    movers = _deployments_to_move(inputs, target.old_name)
    setting = _setting_decision(inputs, target, movers, warnings)
    manual, notes = [], list(inputs.notes)
    steps = _steps(inputs, request, target, movers, setting, warnings, manual)
    manual += _pods_by_hand(inputs, target)
    if not (setting.turn_off or setting.turned_off_before) and setting.on is False:
        notes.append("the Setting is off and stays off: turn it on with 'kubectl kvcache setting on' once "
                     "'kubectl kvcache check -A' finds no errors (it rolls every pool-attached deployment)")
    return Plan(_binding_view(inputs, target), _target_view(request, target, setting), steps, warnings, manual,
                notes)


class _Target(Record):
    """The Binding recovered from and the new one, once every rule about them held."""

    __slots__ = ("namespace", "old_name", "old", "pool", "old_domain", "old_dtype", "entry", "rejected", "dtype",
                 "source", "name", "domain", "binding")
    __hash__ = None

    def __init__(self, namespace, old_name, old, pool, old_domain, old_dtype, entry, rejected, dtype, source, name,
                 domain, binding):
        self.namespace, self.old_name, self.old, self.pool = namespace, old_name, old, pool
        self.old_domain, self.old_dtype, self.entry, self.rejected = old_domain, old_dtype, entry, rejected
        self.dtype, self.source, self.name, self.domain, self.binding = dtype, source, name, domain, binding


def _resolve_target(inputs: Inputs, request: Request) -> _Target:
    if request.strategy not in STRATEGIES:
        raise PluginError(f"--strategy {request.strategy!r}: use one of {', '.join(STRATEGIES)}")
    ns, old_name = inputs.namespace, inputs.binding_name
    old = inputs.binding
    if old is None:
        raise PluginError(f"KVCachePoolBinding {old_name!r} not found in namespace {ns}")
    pool, old_domain = pool_of(old), domain_name(old)
    old_dtype = domain_of(old).get("dtype")
    if not pool:
        raise PluginError(f"KVCachePoolBinding {ns}/{old_name}: spec.poolRef.name is not set")
    entry = _entry(inputs.report, ns, old_name)
    rejected = [(u, e, why) for u, e, why in (entry.rejected_by if entry else ())]

    dtype, source = _target_dtype(inputs, request, entry, old_dtype)
    by_name = {(_meta(b).get("namespace"), _meta(b).get("name")): b for b in inputs.bindings}
    target_name = request.name or derive(old_name, old_dtype, dtype)
    _check_name(target_name, "--name", subdomain=True)
    if target_name == old_name:
        raise PluginError(f"--name {target_name!r} is the Binding being replaced; the new Binding needs a new name")
    existing = by_name.get((ns, target_name))
    domain = _target_domain(inputs, request, pool, old, old_dtype, dtype, target_name, existing)
    target_binding = new_binding(old, target_name, domain, dtype)
    if existing is not None and not contains(existing, {"spec": target_binding["spec"]}):
        raise PluginError(f"KVCachePoolBinding {ns}/{target_name} already exists with another spec (pool "
                          f"{pool_of(existing)}, domain {domain_name(existing)}, dtype "
                          f"{domain_of(existing).get('dtype')!r}); pass --name to choose another name")
    _check_receivers(inputs, ns, target_name, dtype, entry)
    return _Target(ns, old_name, old, pool, old_domain, old_dtype, entry, rejected, dtype, source, target_name,
                   domain, target_binding)


class _SettingPart(Record):
    """on: the Setting's value now; turn_off: off for the recovery (and on again at the end);
    turned_off_before: an earlier run turned it off (so this one turns it on at the end)."""

    __slots__ = ("on", "turn_off", "turned_off_before")

    def __init__(self, on, turn_off, turned_off_before):
        self.on, self.turn_off, self.turned_off_before = on, turn_off, turned_off_before


def _setting_decision(inputs: Inputs, target: _Target, movers, warnings) -> _SettingPart:
    """Off while replicas would crash-loop or roles passing the flag themselves are re-created."""
    state = inputs.report.setting
    on = state.get("on")
    if on is None:
        raise PluginError(f"the Setting's status.value {state.get('value')!r} is not a boolean the operator reads; "
                          f"fix it first ('kubectl kvcache setting on|off')")
    own_flags = [r for r in inputs.report.roles if r.type == "own-flag" and r.namespace == target.namespace
                 and r.deployment in {_meta(m).get("name") for m, _ in movers}]
    turn_off = on is True and (bool(target.rejected) or bool(own_flags))
    turned_off_before = on is False and any(_setting_was_on(b) for b in inputs.backups)
    if turn_off and inputs.setting is not None and inputs.setting.editable is False:
        raise PluginError("the Setting is not editable (status.editable is false): it cannot be turned off "
                          "for the recovery")
    for r in own_flags:
        paths = ", ".join(f["path"] for f in r.flags)
        warnings.append(f"ModelDeployment {r.deployment} role {r.role} passes its own --kv-cache-dtype ({paths}): "
                        f"with the Setting on, its next edit (and its re-creation) is refused; remove the flag "
                        f"from extraArgs once the Binding's dtype is the one it should run")
    return _SettingPart(on, turn_off, turned_off_before)


def _steps(inputs: Inputs, request: Request, target: _Target, movers, setting: _SettingPart, warnings,
           manual) -> list:
    """Setting off; the new Binding, bound; each deployment moved; templates re-pointed; the old
    Binding unused and deleted; Setting back on."""
    ns, steps = target.namespace, []
    if setting.turn_off:
        steps += [SetSetting(False), Wait(setting_ref(), value_for(False))]
    steps += [Create(target.binding), Wait(ref(BINDING_KIND, ns, target.name), BOUND)]
    taken = {_meta(m).get("name") for m in inputs.deployments}
    for md, present in movers:
        steps += _move(md, present, request.strategy, target.name, target.old_dtype, target.dtype, inputs, taken,
                       warnings)
    for w in sorted(inputs.workloads, key=lambda o: (o.get("kind", ""), _meta(o).get("name", ""))):
        step = _repoint(w, target.old_name, target.name, manual)
        if step:
            steps.append(step)
    old_ref = ref(BINDING_KIND, ns, target.old_name)
    if not inputs.binding_gone:
        uid = _meta(target.old).get("uid")
        steps += [Wait(old_ref, UNUSED), Delete(old_ref.replace(uid=uid or None)), Wait(old_ref, DELETED)]
    if setting.turn_off or setting.turned_off_before:
        steps += [SetSetting(True), Wait(setting_ref(), value_for(True))]
    return steps


def _pods_by_hand(inputs: Inputs, target: _Target) -> list[dict]:
    """Opted-in Pods no plan step re-points: a bare Pod, or one owned by something not a workload."""
    manual = []
    for pod in inputs.pods:
        if pod.annotations.get(BINDING_ANNOTATION) != target.old_name or pod.md_controlled:
            continue
        if pod.owner is None:
            manual.append({"kind": "Pod", "namespace": pod.namespace, "name": pod.name,
                           "do": f"recreate it with annotation {BINDING_ANNOTATION}={target.name} (a bare Pod: "
                                 f"nothing recreates it)"})
        elif pod.owner[1] not in api.WORKLOAD_KINDS:
            manual.append({"kind": "Pod", "namespace": pod.namespace, "name": pod.name,
                           "do": f"point its owner {pod.owner[1]} {pod.owner[2]} at {target.name} "
                                 f"(annotation {BINDING_ANNOTATION} of its Pod template)"})
    return manual


def _binding_view(inputs: Inputs, target: _Target) -> dict:
    old = target.old
    return {"namespace": target.namespace, "name": target.old_name, "pool": target.pool, "domain": target.old_domain,
            "dtype": target.old_dtype, "blockSize": domain_of(old).get("blockSize"), "exists": not inputs.binding_gone,
            "rejectedBy": [{"kind": u.kind, "name": u.name, **e.to_dict(), "reason": why}
                           for u, e, why in target.rejected]}


def _target_view(request: Request, target: _Target, setting: _SettingPart) -> dict:
    return {"namespace": target.namespace, "name": target.name, "pool": target.pool, "domain": target.domain,
            "dtype": target.dtype, "dtypeSource": target.source, "strategy": request.strategy,
            "setting": {"on": setting.on, "turnOff": setting.turn_off,
                        "turnOnAtEnd": setting.turn_off or setting.turned_off_before}}


def _entry(report, ns, name):
    return next((b for b in report.bindings if b.namespace == ns and b.name == name), None)


def _target_dtype(inputs, request, entry, old_dtype) -> tuple[str, str]:
    if request.dtype is not None:
        check_dtype_form(request.dtype)
        if request.dtype == old_dtype:
            raise PluginError(f"--dtype {request.dtype!r} is the dtype of {inputs.binding_name} already: nothing to "
                              f"recover")
        return request.dtype, "flag"
    if entry is None or not entry.rejected_by:
        why = "no engine that receives it rejects it" if entry is not None else "its users could not be judged"
        raise PluginError(f"KVCachePoolBinding {inputs.namespace}/{inputs.binding_name} has dtype {old_dtype!r} and "
                          f"{why}: nothing to recover; pass --dtype to move its users to another dtype anyway")
    if not entry.suggestion:
        rejecting = ", ".join(sorted({e.name for _, e, _ in entry.rejected_by}))
        raise PluginError(f"no spelling of {old_dtype!r} is accepted by every engine that receives it ({rejecting} "
                          f"reject it); pass --dtype with a value they all accept (see 'kubectl kvcache check')")
    return entry.suggestion, "suggestion"


def _check_name(name, flag, subdomain=False):
    if not (names.is_subdomain if subdomain else names.is_label)(name, NAME_MAX):
        raise PluginError(f"{flag} {name!r}: not a valid name (lower case letters, digits and '-', at most "
                          f"{NAME_MAX} characters{', dots between parts' if subdomain else ''})")


def _claims(inputs, pool, domain, except_key) -> list[tuple[str, str]]:
    return [(_meta(b).get("namespace"), _meta(b).get("name")) for b in inputs.bindings
            if pool_of(b) == pool and domain_name(b) == domain
            and (_meta(b).get("namespace"), _meta(b).get("name")) != except_key]


def _target_domain(inputs, request, pool, old, old_dtype, dtype, target_name, existing) -> str:
    key = (inputs.namespace, target_name)
    if request.domain is not None:
        _check_name(request.domain, "--domain")
        claimed = _claims(inputs, pool, request.domain, key)
        if claimed:
            ns, name = claimed[0]
            raise PluginError(f"--domain {request.domain!r} is claimed on pool {pool} by KVCachePoolBinding "
                              f"{ns}/{name}; a new Binding needs a domain no Binding on the pool claims")
        return request.domain
    if existing is not None and pool_of(existing) == pool and domain_name(existing) != domain_name(old):
        return domain_name(existing)     # resuming: the new Binding exists with its domain
    base = derive(domain_name(old), old_dtype, dtype)
    for n in range(1, 100):
        candidate = base if n == 1 else _numbered(base, n)
        if not _claims(inputs, pool, candidate, key):
            return candidate
    raise PluginError(f"no free domain name derived from {base!r} on pool {pool}; pass --domain")


def _check_receivers(inputs, ns, target_name, dtype, entry):
    """Refuse a dtype an engine that would receive it rejects (the old Binding's users and, when
    resuming, the new Binding's)."""
    refusals = []
    entries = [entry, _entry(inputs.report, ns, target_name)]
    for e in entries:
        for use in (e.uses if e else ()):
            for at in use.engines if use.renders else ():
                outcome = dtype_outcome(dtype, at)
                if outcome.outcome == model.REJECTED:
                    refusals.append(f"{use.kind} {use.name} on {at.name} ({plain(outcome.reason)})")
    if refusals:
        raise PluginError(f"dtype {dtype!r} is rejected by " + "; ".join(dict.fromkeys(refusals)))


def _deployments_to_move(inputs, old_name) -> list[tuple[dict, bool]]:
    """ModelDeployments naming the old Binding: (object, still in the cluster). One an earlier run
    deleted (replace: before re-creating it) comes from its backup."""
    present = {_meta(m).get("name"): m for m in inputs.deployments}
    movers = [(m, True) for m in inputs.deployments if binding_named(m) == old_name]
    seen = {_meta(m).get("name") for m, _ in movers}
    for b in _latest(o for o in inputs.backups if o.get("kind") == MD_KIND
                     and _meta(o).get("namespace") == inputs.namespace and binding_named(o) == old_name):
        name = _meta(b).get("name")
        if name in seen:
            continue
        current = present.get(name)
        if current is not None and binding_named(current) == old_name:
            continue
        movers.append((b, False))
        seen.add(name)
    return sorted(movers, key=lambda mp: _meta(mp[0]).get("name", ""))


def _latest(objects) -> list[dict]:
    """One backup per object: the newest resourceVersion (numeric when it is)."""
    best: dict[tuple, dict] = {}
    for o in objects:
        key = (o.get("kind"), _meta(o).get("namespace"), _meta(o).get("name"))
        rv = str(_meta(o).get("resourceVersion") or "")
        have = best.get(key)
        if have is None or _rv_key(rv) > _rv_key(str(_meta(have).get("resourceVersion") or "")):
            best[key] = o
    return list(best.values())


def _rv_key(rv):
    return (1, int(rv), "") if rv.isdigit() else (0, 0, rv)


def _setting_was_on(obj) -> bool:
    if obj.get("kind") != SETTING_KIND or _meta(obj).get("name") != api.SETTING_NAME:
        return False
    value = (obj.get("status") or {}).get("value")
    return value is None or str(value) in ("1", "t", "T", "TRUE", "true", "True")


def _move(md, present, strategy, target_name, old_dtype, dtype, inputs, taken, warnings) -> list:
    meta = _meta(md)
    ns, name = meta.get("namespace") or inputs.namespace, meta.get("name")
    owner = controller_of(md)
    if owner:
        warnings.append(f"ModelDeployment {name} is controlled by {owner.get('kind')} {owner.get('name')}: the "
                        f"re-created one is not (ownerReferences are not copied), and its controller may "
                        f"recreate or revert the old one")
    if strategy == REPLACE:
        new = new_deployment(md, name, target_name)
        steps = []
        if present:
            steps += [Delete(ref(MD_KIND, ns, name, meta.get("uid") or None)), Wait(ref(MD_KIND, ns, name), DELETED)]
        return steps + [Create(new), Wait(ref(MD_KIND, ns, name), AVAILABLE)]
    new_name = _free_name(name, old_dtype, dtype, target_name, md, inputs, taken)
    taken.add(new_name)
    steps = [Create(new_deployment(md, new_name, target_name)), Wait(ref(MD_KIND, ns, new_name), AVAILABLE)]
    if present:
        steps.append(Delete(ref(MD_KIND, ns, name, meta.get("uid") or None)))
    return steps


def _free_name(name, old_dtype, dtype, target_name, md, inputs, taken) -> str:
    """The side-by-side name: derived from the old one; a name an earlier run already created
    (naming the new Binding with this spec) is reused, one taken by anything else is skipped."""
    existing = {_meta(m).get("name"): m for m in inputs.deployments}
    base = derive(name, old_dtype, dtype)
    wanted = new_deployment(md, base, target_name)["spec"]
    for n in range(1, 100):
        candidate = base if n == 1 else _numbered(base, n)
        other = existing.get(candidate)
        if other is not None and contains(other, {"spec": wanted}):
            return candidate
        if other is None and candidate not in taken:
            return candidate
    raise PluginError(f"no free name derived from {base!r} for the re-created ModelDeployment {name}; use "
                      f"--strategy replace")


def _repoint(workload, old_name, target_name, manual) -> Patch | None:
    kind, meta = workload.get("kind"), _meta(workload)
    template = template_of(workload) or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(BINDING_ANNOTATION) != old_name:
        return None
    owner = controller_of(workload)
    if owner and owner.get("kind") in api.WORKLOAD_KINDS:
        return None         # its owner's template is patched (a Deployment's ReplicaSet, a CronJob's Job)
    if kind not in PATCHABLE:
        manual.append({"kind": kind, "namespace": meta.get("namespace"), "name": meta.get("name"),
                       "do": f"recreate it with annotation {BINDING_ANNOTATION}={target_name} in its Pod template "
                             f"(a {kind}'s template cannot be changed)"})
        return None
    return Patch(ref(kind, meta.get("namespace"), meta.get("name")),
                 template_patch(kind, {BINDING_ANNOTATION: target_name}))
