"""The upgrade guide's "If new Pods fail argument parsing", planned: objects in, a plan out.

Pure: no cluster, no files, no printing. `plan(inputs, request)` turns the full objects read for
one Binding (load/recovery.py) into an ordered list of typed steps (SetSetting, Create, Patch,
Delete, Wait, their targets Refs), each written by to_dict() as the stable `RecoveryPlan`
contract (docs/recover.md):

  {"action": "setting", "value": false}
  {"action": "create", "object": {...}}
  {"action": "patch", "target": {kind, namespace, name}, "patch": {...}}      (JSON merge patch)
  {"action": "delete", "target": {kind, namespace, name, uid}}
  {"action": "wait", "target": {kind, namespace, name}, "for": "available|ready|unused|deleted|value=..."}

A refusal is a PluginError (one line, exit 2) saying why. The executor is cli/flows/recover.py.
"""

from __future__ import annotations

import copy
import re

from kubectl_kvcache import engine as model
from kubectl_kvcache.judge import anchor as anchors, referrers as refs
from kubectl_kvcache.kube import names
from kubectl_kvcache.operator import api, paths, webhooks
from kubectl_kvcache.operator.recovery_inputs import Recovery
from kubectl_kvcache.judge.checks.engines import dtype_outcome, plain
from kubectl_kvcache.judge.nearest_dtype import nearest_spelling
from kubectl_kvcache.errors import AlreadyDone, PluginError
from kubectl_kvcache.record import Record

SIDE_BY_SIDE, REPLACE = "side-by-side", "replace"
STRATEGIES = (SIDE_BY_SIDE, REPLACE)
DEFAULT_STRATEGY = SIDE_BY_SIDE

MD_KIND, BINDING_KIND, SETTING_KIND = api.MD_KIND, api.BINDING_KIND, api.SETTING_KIND
BINDING_ANNOTATION = api.BINDING_ANNOTATION
# Metadata the API server (or kubectl) writes: never copied into a recreated object.
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
# Annotation prefixes (and their subdomains) that Kubernetes reserves for its components
# (kubernetes.io, k8s.io: "Well-Known Labels, Annotations and Taints") and the operator writes
# (gpustack.ai: its admission records name the old object's uid and dtype): a controller's
# record of the old object, never carried to a new one. The plan names each one left out.
CONTROLLER_DOMAINS = ("kubernetes.io", "k8s.io", api.DOMAIN)
NAME_MAX = 63        # a ModelDeployment's name is its Pods' app.kubernetes.io/instance label value
# Workload kinds whose Pod template can be re-pointed by a patch (a Job's template is immutable).
PATCHABLE = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob")

# `for` of wait steps
AVAILABLE, READY, UNUSED, DELETED = "available", "ready", "unused", "deleted"


def value_for(value: bool) -> str:
    return f"value={'true' if value else 'false'}"


def judged(found: Recovery, report, anchor=None) -> Recovery:
    """The recovery read by load.recovery, with checks' report on its snapshot and the verified
    anchor: what the planner reads."""
    found.report, found.anchor = report, anchor
    return found


FIELDS = (("dtype", "--dtype"), ("name", "--name"), ("domain", "--domain"), ("strategy", "--strategy"))
FLAG, ANCHOR = "flag", "anchor"     # where a target value comes from (others: suggestion, derived, default)


class Request(Record):
    __slots__ = ("dtype", "name", "domain", "strategy", "sources")

    def __init__(self, dtype: str | None = None, name: str | None = None, domain: str | None = None,
                 strategy: str | None = None, sources: dict | None = None):
        self.dtype = dtype
        self.name = name
        self.domain = domain
        self.strategy = strategy
        self.sources = {f: FLAG for f, _ in FIELDS if getattr(self, f) is not None} if sources is None else sources


def resumed(request: Request, anchor) -> Request:
    """The request of a rerun: what the flags leave out comes from the recovery's anchor (the new
    Binding an earlier run created: its name, domain and dtype, and the strategy annotated on it),
    never from the record a ConfigMap writer could have planted; a flag that differs from it is an
    error, so that one recovery never moves to two targets."""
    sources = {f: FLAG for f, _ in FIELDS if getattr(request, f) is not None}
    if anchor is None:
        return request.replace(strategy=request.strategy or DEFAULT_STRATEGY, sources=sources)
    chosen = {}
    for field, flag in FIELDS:
        given, anchored = getattr(request, field), getattr(anchor, field)
        if given is not None and anchored is not None and given != anchored:
            raise PluginError(f"{flag} {given!r}: this recovery's Binding, {anchor.ref} (an earlier run created it), "
                              f"has {flag} {anchored!r}; rerun without {flag} to continue it, or delete that Binding "
                              f"once you have reviewed what the earlier run did")
        if given is None and anchored is not None:
            sources[field] = ANCHOR
        chosen[field] = given if given is not None else anchored
    return request.replace(strategy=chosen.pop("strategy") or DEFAULT_STRATEGY, sources=sources, **chosen)


class Plan(Record):
    __slots__ = ("binding", "target", "steps", "warnings", "manual", "notes", "referrers")
    __hash__ = None     # mutable: not hashable

    def __init__(self, binding: dict, target: dict, steps: list, warnings: list[str] | None = None,
                 manual: list[dict] | None = None, notes: list[str] | None = None, referrers: dict | None = None):
        self.binding = binding
        self.target = target
        self.steps = steps
        self.warnings = [] if warnings is None else warnings
        self.manual = [] if manual is None else manual
        self.notes = [] if notes is None else notes
        self.referrers = referrers      # side-by-side renames: what points at the old names (referrers_view)

    def to_dict(self):
        shared: dict = {}
        return {"kind": "RecoveryPlan", "binding": self.binding, "target": self.target,
                "steps": [s.to_dict(shared) for s in self.steps],
                "warnings": self.warnings, "manual": self.manual,
                **({"referrers": self.referrers} if self.referrers is not None else {})}


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
    """Create `object`; source: where it comes from when not the cluster ("backup sha256:<hex>": a
    backup verified against the recovery's Binding)."""

    action = "create"
    __slots__ = ("object", "source", "exists")
    __hash__ = None     # holds a manifest (a dict)

    def __init__(self, object: dict, source: str | None = None, exists: bool = False):
        self.object = object
        self.source = source
        self.exists = exists    # read when planning: it is there with this spec (made by hand, or an earlier run)

    def to_dict(self, shared=None):
        return {"action": self.action, "object": self.object, **({"from": self.source} if self.source else {}),
                **({"exists": True} if self.exists else {})}


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
    """Poll `target` until `condition` (AVAILABLE, READY, UNUSED, DELETED, value=true|false)."""

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
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in SERVER_ANNOTATIONS and not anchors.is_own(k) and not _about_the_old_one(meta, k, v)}
    if annotations:
        out["annotations"] = annotations
    return out


def _about_the_old_one(meta, key, value) -> bool:
    """A record a controller keeps of the old object: under a prefix Kubernetes or the operator
    owns, or naming the old object's uid (a controller's admission record: any controller, e.g. the
    demo's stand-in), which is false of a new object."""
    uid = meta.get("uid")
    return controller_annotation(key) or bool(uid) and isinstance(value, str) and uid in value


def controller_annotation(key) -> bool:
    """An annotation under a prefix Kubernetes or the operator owns (CONTROLLER_DOMAINS), not the user's."""
    prefix, slash, _ = key.rpartition("/")
    return bool(slash) and any(prefix == d or prefix.endswith("." + d) for d in CONTROLLER_DOMAINS)


def _left_out(obj) -> list[str]:
    """The annotations of `obj` a recreated object does not carry because a controller wrote them."""
    meta = _meta(obj)
    return sorted(k for k, v in (meta.get("annotations") or {}).items()
                  if k not in SERVER_ANNOTATIONS and not anchors.is_own(k) and _about_the_old_one(meta, k, v))


def new_binding(old, name, domain, dtype) -> dict:
    spec = copy.deepcopy(_spec(old))
    spec["domain"] = dict(domain_of(old), name=domain, dtype=dtype)
    return {"apiVersion": old.get("apiVersion"), "kind": BINDING_KIND,
            "metadata": clean_metadata(old, name), "spec": spec}


def new_deployment(old, name, binding) -> dict:
    spec = copy.deepcopy(_spec(old))
    kv = spec.get("kvCache")
    kv = kv if isinstance(kv, dict) else {}
    spec["kvCache"] = dict(kv, poolRef=dict(kv.get("poolRef") or {}, name=binding))
    return {"apiVersion": old.get("apiVersion"), "kind": MD_KIND,
            "metadata": clean_metadata(old, name), "spec": spec}


# -- the plan ------------------------------------------------------------------------------

def plan(inputs: Recovery, request: Request) -> Plan:
    """The recovery in order: the new Binding (validated), the Setting's part, the steps, what is
    left to do by hand. A refusal is a PluginError."""
    request = request.replace(strategy=request.strategy or DEFAULT_STRATEGY)
    target = _resolve_target(inputs, request)
    warnings = [f"{use.kind} {use.name}: {use.problem}, so dtype {target.dtype!r} is not checked against it"
                for use in (target.entry.uses if target.entry else ()) if use.problem]
    movers = _deployments_to_move(inputs, target.old_name)
    setting = _setting_decision(inputs, target, movers, warnings)
    manual: list[dict] = []
    pointed: list = []
    notes = list(inputs.notes) + target.unchecked
    steps = _steps(inputs, request, target, movers, setting, warnings, manual, pointed)
    manual += _pods_by_hand(inputs, target)
    anchors.check_fits(_backed_up(inputs, steps), inputs.record_used, inputs.record_ref)
    if setting.turned_off_before:
        notes.append(f"an earlier run of this recovery turned the Setting off (the Setting's annotation "
                     f"{api.TURNED_OFF_BY} says so): the last steps turn it on again")
    notes += _untrusted(inputs, request, target, setting)
    for obj in [target.old] + [m for m, _ in movers]:
        left = _left_out(obj)
        if left:
            notes.append(f"{obj.get('kind')} {target.namespace}/{_meta(obj).get('name')}: annotations "
                         f"{', '.join(left)} are not carried to the new object (written by Kubernetes or the "
                         f"operator, or naming the old object's uid: a record of the old one); add back any "
                         f"that are yours")
    turning_on = inputs.setting is not None and (inputs.setting.spec_value or "").lower() == "true"
    if not (setting.turn_off or setting.turned_off_before) and setting.on is False and not turning_on:
        notes.append("the Setting is off and stays off: turn it on with 'kubectl kvcache setting on' once "
                     "'kubectl kvcache check -A' finds no errors (it rolls every pool-attached deployment)")
    return Plan(_binding_view(inputs, target), _target_view(inputs, request, target, setting), steps, warnings, manual,
                notes, _referrers_view(inputs, pointed) if pointed else None)


def _referrers_view(inputs: Recovery, pointed) -> dict:
    """`referrers` of the plan: the deployments renamed, what was checked, what points at them."""
    r = inputs.referrers
    return {"renamed": [{"from": x.old, "to": x.new} for x, _ in pointed],
            "checked": None if r is None else refs.KINDS, "source": None if r is None else r.source,
            "objects": [f for _, found in pointed for f in found],
            "unchecked": refs.unchecked(r), "notServed": list(r.not_served) if r is not None else []}


def _backed_up(inputs: Recovery, steps) -> list[dict]:
    """The objects the executor backs up into the record before it deletes or patches them (the
    Setting's backup is small: STATE_ALLOWANCE covers it)."""
    objects = {(o.get("kind"), _meta(o).get("namespace"), _meta(o).get("name")): o
               for o in inputs.deployments + inputs.workloads + ([inputs.binding] if inputs.binding else [])}
    out = []
    for step in steps:
        if step.action in ("delete", "patch"):
            obj = objects.get(step.target.key())
            if obj is not None:
                out.append(obj)
    return out


def _untrusted(inputs: Recovery, request: Request, target, setting) -> list[str]:
    """What the record says that the plan does not follow (it is a hint a ConfigMap writer could
    have planted; docs/recover.md), said so the difference is seen."""
    record = inputs.hints
    notes: list[str] = []
    if record is None or record.finished:
        return notes
    turning_on = inputs.setting is not None and (inputs.setting.spec_value or "").lower() == "true"
    if record.setting_turned_off and setting.on is False and not setting.turned_off_before and not turning_on:
        notes.append(f"{record.ref}'s data.recovery.json says an earlier run turned the Setting off, but the Setting "
                     f"does not carry this recovery's annotation ({api.TURNED_OFF_BY}): not trusted; the Setting "
                     f"stays off")
    planned = {"name": target.name, "domain": target.domain, "dtype": target.dtype, "strategy": request.strategy}
    differs = [f"{k} {record.target.get(k)!r}" for k in ("name", "domain", "dtype", "strategy")
               if record.target.get(k) is not None and record.target.get(k) != planned[k]]
    if differs:
        notes.append(f"{record.ref}'s data.recovery.json names another target ({', '.join(differs)}): not trusted "
                     f"(the target comes from the flags, the recovery's Binding or check); the plan uses "
                     f"{planned['name']}, domain {planned['domain']}, dtype {planned['dtype']!r}, strategy "
                     f"{planned['strategy']}")
    return notes


class _Target(Record):
    """The Binding recovered from and the new one, once every rule about them held."""

    __slots__ = ("namespace", "old_name", "old", "pool", "old_domain", "old_dtype", "entry", "rejected", "dtype",
                 "source", "name", "domain", "binding", "unchecked")
    __hash__ = None

    def __init__(self, namespace, old_name, old, pool, old_domain, old_dtype, entry, rejected, dtype, source, name,
                 domain, binding, unchecked=()):
        self.namespace, self.old_name, self.old, self.pool = namespace, old_name, old, pool
        self.old_domain, self.old_dtype, self.entry, self.rejected = old_domain, old_dtype, entry, rejected
        self.dtype, self.source, self.name, self.domain, self.binding = dtype, source, name, domain, binding
        self.unchecked = list(unchecked)    # what the operator's Binding rules could not decide here


def _resolve_target(inputs: Recovery, request: Request) -> _Target:
    if request.strategy not in STRATEGIES:
        raise PluginError(f"--strategy {request.strategy!r}: use one of {', '.join(STRATEGIES)}")
    ns, old_name = inputs.namespace, inputs.binding_name
    old = inputs.binding
    if old is None:
        elsewhere = sorted({_meta(b).get("namespace") or "default" for b in inputs.bindings
                            if _meta(b).get("name") == old_name} - {ns})
        where = (f"; it exists in namespace {', '.join(elsewhere)}: kubectl kvcache recover {old_name} -n "
                 f"{elsewhere[0]}" if elsewhere else
                 "; no other namespace has one of that name either (kubectl kvcache bindings -A lists them)"
                 if inputs.bindings_everywhere else
                 " (other namespaces' Bindings could not be listed; kubectl kvcache bindings -A lists them)")
        raise PluginError(f"KVCachePoolBinding {old_name!r} not found in namespace {ns}" + where)
    pool, old_domain = pool_of(old), domain_name(old)
    old_dtype = domain_of(old).get("dtype")
    if not pool:
        raise PluginError(f"KVCachePoolBinding {ns}/{old_name}: spec.poolRef.name is not set")
    entry = _entry(inputs.report, ns, old_name)
    rejected = [(u, e, why) for u, e, why in (entry.rejected_by if entry else ())]

    by_name = {(_meta(b).get("namespace"), _meta(b).get("name")): b for b in inputs.bindings}
    by_hand = None if request.name is not None or inputs.anchor is not None else \
        _binding_moved_to(inputs, old_name, pool, by_name)
    if by_hand is not None and request.dtype is None and domain_of(by_hand).get("dtype"):
        # the users were moved by hand to a Binding of their own: its dtype is the target's
        dtype, source = domain_of(by_hand)["dtype"], "adopted"
        check_dtype_form(dtype)
    else:
        dtype, source = _target_dtype(inputs, request, entry, old_dtype)
    target_name = request.name or (_meta(by_hand).get("name") if by_hand is not None else None) \
        or derive(old_name, old_dtype, dtype)
    _check_name(target_name, "--name", subdomain=True)
    if target_name == old_name:
        raise PluginError(f"--name {target_name!r} is the Binding being replaced; the new Binding needs a new name")
    existing = by_name.get((ns, target_name))
    domain = _target_domain(inputs, request, pool, old, old_dtype, dtype, target_name, existing)
    target_binding = new_binding(old, target_name, domain, dtype)
    target_binding["metadata"].setdefault("annotations", {}).update(
        anchors.anchor_annotations(old_name, _meta(old).get("uid"), request.strategy))
    if existing is not None and not contains(existing, {"spec": target_binding["spec"]}):
        raise PluginError(f"KVCachePoolBinding {ns}/{target_name} already exists with another spec (pool "
                          f"{pool_of(existing)}, domain {domain_name(existing)}, dtype "
                          f"{domain_of(existing).get('dtype')!r}); pass --name to choose another name")
    _check_receivers(inputs, ns, target_name, dtype, entry)
    unchecked = [] if existing is not None else _check_admission(inputs, target_binding)
    return _Target(ns, old_name, old, pool, old_domain, old_dtype, entry, rejected, dtype, source, target_name,
                   domain, target_binding, unchecked)


def _binding_moved_to(inputs, old_name, pool, by_name):
    """The Binding on the same pool that a deployment of the old one was already recreated on by
    hand (its spec the same, kvCache.poolRef aside): the guide's manual steps begun. One only."""
    found, near = {}, []
    movers = [m for m in inputs.deployments if binding_named(m) == old_name]
    for other in inputs.deployments:
        name = binding_named(other)
        b = by_name.get((inputs.namespace, name))
        if name in (None, old_name) or b is None or pool_of(b) != pool:
            continue
        if any(contains(other, {"spec": new_deployment(m, "x", name)["spec"]}) for m in movers):
            found[name] = b
        else:
            near += [(_meta(other).get("name"), _meta(m).get("name"), name) for m in movers if _same_model(other, m)]
    if not found and near:
        other, mover, name = near[0]
        raise PluginError(f"ModelDeployment {inputs.namespace}/{other} already serves the model of {mover}"
                          f" on KVCachePoolBinding {name} (pool {pool}), with another spec: recover would create a "
                          f"second deployment of it on a new Binding; delete the one you do not keep, or pass "
                          f"--name {name} to recover onto that Binding")
    return next(iter(found.values())) if len(found) == 1 else None


def _same_model(a, b) -> bool:
    model_a, model_b = (_spec(a).get("model") or {}).get("name"), (_spec(b).get("model") or {}).get("name")
    # `vLLM` stored before the CRD's enum and `vllm` are one engine (model.normalise_engine)
    engine_a, engine_b = (model.normalise_engine(n) or n for n in ((_spec(x).get("engine") or {}).get("name")
                                                                   for x in (a, b)))
    return bool(model_a) and model_a == model_b and engine_a == engine_b



def _webhook_view(inputs) -> webhooks.Cluster:
    return webhooks.Cluster(inputs.bindings, inputs.pools, inputs.backends, inputs.pools_complete)


def _check_admission(inputs, binding) -> list[str]:
    """The operator's Binding webhook judges the new Binding as it would its create
    (operator/webhooks.py: binding_create_refusals), before any step: a refusal here is a plan
    refused with nothing changed, never a recovery stopped after the Setting was turned off.
    Returns what it could not decide here (the API server's dry run decides it before the first
    change)."""
    errors, unchecked = webhooks.binding_create_refusals(binding, True, _webhook_view(inputs))
    if errors:
        meta = _meta(binding)
        raise PluginError(f"KVCachePoolBinding {meta.get('namespace')}/{meta.get('name')}, the Binding this recovery "
                          f"would create, is refused by the operator's admission webhook: "
                          + "; ".join(str(e) for e in errors) + "; nothing was changed")
    return unchecked


class _SettingPart(Record):
    """on: the Setting's value now; turn_off: off for the recovery (and on again at the end);
    turned_off_before: an earlier run turned it off (so this one turns it on at the end)."""

    __slots__ = ("on", "turn_off", "turned_off_before")

    def __init__(self, on, turn_off, turned_off_before):
        self.on, self.turn_off, self.turned_off_before = on, turn_off, turned_off_before


def _setting_decision(inputs: Recovery, target: _Target, movers, warnings) -> _SettingPart:
    """Off while replicas would crash-loop or roles passing the flag themselves are re-created."""
    state = inputs.report.setting
    on = state.get("on")
    if on is None:
        raise PluginError(f"the Setting's status.value {state.get('value')!r} is not a boolean the operator reads; "
                          f"fix it first ('kubectl kvcache setting on|off')")
    own_flags = [r for r in inputs.report.roles if r.type == "own-flag" and r.namespace == target.namespace
                 and r.deployment in {_meta(m).get("name") for m, _ in movers}]
    turn_off = on is True and (bool(target.rejected) or bool(own_flags))
    turned_off_before = on is False and anchors.turned_off_by(inputs.setting, target.namespace, target.old_name,
                                                             _meta(target.old).get("uid"))
    if turn_off and inputs.setting is not None and inputs.setting.editable is False:
        raise PluginError("the Setting is not editable (status.editable is false): it cannot be turned off "
                          "for the recovery")
    for r in own_flags:
        paths = ", ".join(f["path"] for f in r.flags)
        warnings.append(f"ModelDeployment {r.deployment} role {r.role} passes its own --kv-cache-dtype ({paths}): "
                        f"with the Setting on, its next edit (and its re-creation) is refused; remove the flag "
                        f"from extraArgs once the Binding's dtype is the one it should run")
    return _SettingPart(on, turn_off, turned_off_before)


def _steps(inputs: Recovery, request: Request, target: _Target, movers, setting: _SettingPart, warnings,
           manual, pointed) -> list:
    """Setting off; the new Binding, ready; each deployment moved; templates re-pointed; the old
    Binding unused and deleted; Setting back on."""
    ns, steps = target.namespace, []
    if setting.turn_off:
        steps += [SetSetting(False), Wait(setting_ref(), value_for(False))]
    there = any(_meta(b).get("namespace") == ns and _meta(b).get("name") == target.name for b in inputs.bindings)
    steps += [Create(target.binding, None if not inputs.binding_gone else f"backup sha256:{anchors.digest(target.old)}",
                     exists=there), Wait(ref(BINDING_KIND, ns, target.name), READY)]
    taken = {_meta(m).get("name") for m in inputs.deployments}
    for md, present in movers:
        steps += _move(md, present, request.strategy, target.name, target.old_dtype, target.dtype, inputs, taken,
                       warnings, pointed)
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


def _pods_by_hand(inputs: Recovery, target: _Target) -> list[dict]:
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


def _binding_view(inputs: Recovery, target: _Target) -> dict:
    old = target.old
    return {"namespace": target.namespace, "name": target.old_name, "pool": target.pool, "domain": target.old_domain,
            "dtype": target.old_dtype, "blockSize": domain_of(old).get("blockSize"), "exists": not inputs.binding_gone,
            "rejectedBy": [{"kind": u.kind, "name": u.name, **e.to_dict(), "reason": why}
                           for u, e, why in target.rejected]}


def _target_view(inputs: Recovery, request: Request, target: _Target, setting: _SettingPart) -> dict:
    return {"namespace": target.namespace, "name": target.name, "pool": target.pool, "domain": target.domain,
            "dtype": target.dtype, "dtypeSource": target.source, "strategy": request.strategy,
            "sources": {"dtype": target.source,
                        "name": request.sources.get("name", "derived"),
                        "domain": request.sources.get("domain", "derived"),
                        "strategy": request.sources.get("strategy", "default")},
            **({"recoveryBinding": inputs.anchor.ref} if inputs.anchor is not None else {}),
            "setting": {"on": setting.on, "turnOff": setting.turn_off,
                        "turnOnAtEnd": setting.turn_off or setting.turned_off_before}}


def _entry(report, ns, name):
    return next((b for b in report.bindings if b.namespace == ns and b.name == name), None)


def _target_dtype(inputs, request, entry, old_dtype) -> tuple[str, str]:
    if request.dtype is not None:
        check_dtype_form(request.dtype)
        if request.dtype == old_dtype:
            # already so only when the engines receiving it accept it: the same judgement as a
            # target's (engine data), so a rejected dtype is never "nothing to recover"
            flag = f"--dtype {request.dtype!r}, the dtype of {inputs.binding_name} already,"
            if entry is None:
                raise PluginError(f"{flag} is not known to be accepted: its users could not be judged; pass "
                                  f"--dtype with another dtype to move them anyway")
            _check_receivers(inputs, inputs.namespace, None, request.dtype, entry, what=flag)
            raise AlreadyDone(f"--dtype {request.dtype!r} is the dtype of {inputs.binding_name} already and no "
                              f"engine that receives it rejects it: nothing to recover")
        return request.dtype, request.sources.get("dtype", FLAG)
    if entry is None or not entry.rejected_by:
        # healthy: already in the state a recovery brings about (exit 0); unjudged users: not known (exit 2)
        why = "no engine that receives it rejects it" if entry is not None else "its users could not be judged"
        raise (AlreadyDone if entry is not None else PluginError)(f"KVCachePoolBinding {inputs.namespace}/{inputs.binding_name} has dtype {old_dtype!r} and "
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


def _claims(inputs, pool, domain, except_key) -> list[tuple[str | None, str | None]]:
    """Bindings holding `domain` where a new Binding on `pool` may not: the same pool, or a pool
    naming a master it names (the webhook's uniqueness is per master)."""
    pools = inputs.pools or {}
    return [(_meta(b).get("namespace"), _meta(b).get("name")) for b in inputs.bindings
            if domain_name(b) == domain and (pool_of(b) == pool or webhooks.shared_masters(pool, pool_of(b), pools))
            and (_meta(b).get("namespace"), _meta(b).get("name")) != except_key]


def _target_domain(inputs, request, pool, old, old_dtype, dtype, target_name, existing) -> str:
    key = (inputs.namespace, target_name)
    if request.domain is not None:
        _check_name(request.domain, "--domain")
        claimed = _claims(inputs, pool, request.domain, key)
        if claimed:
            ns, name = claimed[0]
            holder = next(b for b in inputs.bindings if (_meta(b).get("namespace"), _meta(b).get("name")) == (ns, name))
            theirs = pool_of(holder)
            if theirs != pool:
                raise PluginError(f"--domain {request.domain!r} is claimed on pool {theirs} by KVCachePoolBinding "
                                  f"{ns}/{name}, and pools {pool} and {theirs} both name "
                                  f"{' and '.join(webhooks.shared_masters(pool, theirs, inputs.pools or {}))}: a new "
                                  f"Binding needs a domain no Binding on that master claims")
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


def _check_receivers(inputs, ns, target_name, dtype, entry, what=None):
    """Refuse a dtype an engine that would receive it rejects (the old Binding's users and, when
    resuming, the new Binding's); `what`: how the refusal names it (default: dtype 'X')."""
    refusals = []
    accepted: list[set] = []        # what each receiving release accepts: the spellings to name on refusal
    entries = [entry, _entry(inputs.report, ns, target_name)]
    for e in entries:
        for use in (e.uses if e else ()):
            for at in use.engines if use.renders else ():
                accepted.append(at.starting - {"auto"})
                outcome = dtype_outcome(dtype, at)
                # REJECTED by the parser or the attention backends; or refused by every CUDA backend
                # where the image does not say the platform (engine/attention.py): never proposed
                if outcome.outcome == model.REJECTED or (outcome.outcome == model.UNKNOWN and outcome.cause
                                                         and outcome.cause.code == "platform"):
                    refusals.append(f"{use.kind} {use.name} on {at.name} ({plain(outcome.reason)})")
    if refusals:
        common = sorted(set.intersection(*accepted)) if accepted else []
        near = nearest_spelling(dtype, common)
        hint = (f"; did you mean {near!r}?" if near else
                f"; every engine that receives it accepts and starts with: {', '.join(common)}" if common else "")
        raise PluginError(f"{what or f'dtype {dtype!r}'} is rejected by " + "; ".join(dict.fromkeys(refusals)) + hint)


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


def _move(md, present, strategy, target_name, old_dtype, dtype, inputs, taken, warnings, pointed) -> list:
    meta = _meta(md)
    ns, name = meta.get("namespace") or inputs.namespace, meta.get("name")
    owner = controller_of(md)
    if owner:
        warnings.append(f"ModelDeployment {name} is controlled by {owner.get('kind')} {owner.get('name')}: the "
                        f"re-created one is not (ownerReferences are not copied), and its controller may "
                        f"recreate or revert the old one")
    source = None if present else f"backup sha256:{anchors.digest(md)}"
    moved = _moved_by_hand(md, name, target_name, inputs)
    if moved is not None:
        # the guide's manual steps got this far: the deployment that replaces it is there already
        other = _meta(moved).get("name")
        steps = [Create(new_deployment(md, other, target_name), source, exists=True),
                 Wait(ref(MD_KIND, ns, other), AVAILABLE)]
        if present:
            steps.append(Delete(ref(MD_KIND, ns, name, meta.get("uid") or None)))
        return steps
    if strategy == REPLACE:
        new = new_deployment(md, name, target_name)
        steps = []
        if present:
            steps += [Delete(ref(MD_KIND, ns, name, meta.get("uid") or None)), Wait(ref(MD_KIND, ns, name), DELETED)]
        return steps + [Create(new, source), Wait(ref(MD_KIND, ns, name), AVAILABLE)]
    new_name = _free_name(name, old_dtype, dtype, target_name, md, inputs, taken)
    taken.add(new_name)
    warning = _renamed_warning(md, name, new_name, inputs, pointed)
    if present:
        warnings.append(warning)
    steps = [Create(new_deployment(md, new_name, target_name), source), Wait(ref(MD_KIND, ns, new_name), AVAILABLE)]
    if present:
        steps.append(Delete(ref(MD_KIND, ns, name, meta.get("uid") or None)))
    return steps


def _moved_by_hand(md, name, target_name, inputs):
    """A deployment other than `md` already on the new Binding with `md`'s spec (the guide's manual
    steps, or a run that lost its record): adopted, never doubled. One on it that serves the same
    model with another spec: refused, since a plan beside it would run the model twice and which
    one the user meant to keep is theirs to say."""
    wanted = new_deployment(md, name, target_name)["spec"]
    model = (_spec(md).get("model") or {}).get("name")
    for other in inputs.deployments:
        if _meta(other).get("name") == name or binding_named(other) != target_name:
            continue
        if contains(other, {"spec": wanted}):
            return other
        if model and _same_model(other, md):
            raise PluginError(f"ModelDeployment {inputs.namespace}/{_meta(other).get('name')} already serves "
                              f"{model} on KVCachePoolBinding {target_name}, with another spec than {name}'s: "
                              f"recover would create a second deployment of it beside that one; delete the one "
                              f"you do not keep (or make its spec match {name}'s, kvCache.poolRef aside), then "
                              f"run recover again")
    return None


def _renamed_warning(md, name, new_name, inputs, pointed) -> str:
    """What addresses a deployment side-by-side renames must follow: the objects of the namespace
    that point at it (judge/referrers.py, listed under the plan's `referrers`), and what no plan
    can see."""
    renamed = refs.renamed(md, new_name, inputs.md_pods)
    found = refs.pointing_at(inputs.referrers, [renamed])
    pointed.append((renamed, found))
    instance = f"app.kubernetes.io/instance={name}"
    if inputs.referrers is None:
        seen = (f"Services selecting its Pods by {instance}, HorizontalPodAutoscalers and routes naming it "
                f"(not checked)")
    else:
        where = "in the input" if inputs.referrers.source == "files" else f"in namespace {inputs.namespace}"
        todo = [f for f in found if f["change"]]
        seen = (f"{len(found)} object{'s' if len(found) != 1 else ''} {where} point{'s' if len(found) == 1 else ''} "
                f"at it ({len(todo)} to change; listed below)" if found else
                f"none of the {refs.KINDS} {where} points at it")
        if inputs.referrers.unchecked:
            seen += " (some could not be checked: listed below)"
    return (f"ModelDeployment {name} is re-created as {new_name} (side-by-side): what addresses it by name must "
            f"follow: {seen}; and what no plan can see: NetworkPolicies selecting {instance}, dashboards, clients and "
            f"GitOps manifests (or use --strategy replace, which keeps the name)")


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
    template = paths.pod_template(workload) or {}
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
                 paths.pod_template_patch(kind, {BINDING_ANNOTATION: target_name}))
