"""Records (records.py) built from raw JSON, the same whether it came from a live cluster or from
saved `kubectl get -o json` output: only the fields the plugin reads, each checked (fields.py).

Built page by page, so memory follows the number of records, not the size of the objects. A
missing or mistyped field is an InvalidObject (a PluginError) naming the object and the field path,
never a KeyError or AttributeError."""

from __future__ import annotations

import functools
import os

from kubectl_kvcache.errors import InvalidObject, PluginError
from kubectl_kvcache.operator import paths
from kubectl_kvcache.operator.api import SETTING_GROUP, SETTING_NAME
from kubectl_kvcache.operator.fields import (
    INT32, as_bool, as_env, as_env_from, as_int, as_list, as_obj, as_objects, as_str, as_str_list,
    as_str_map, bad, describe, kv_annotations, metadata, type_name, with_spec)
from kubectl_kvcache.operator import binding_status
from kubectl_kvcache.operator.records import (
    Binding, Condition, Deployment, KVCacheStatus, Pod, Pool, Role, RoleStatus, Setting, Workload)

_CONTAINER_FIELDS = ("name", "image", "command", "args", "env", "envFrom")
_STR_OR_NONE = (str, type(None))


def _slim_container(c, what, path="spec.containers[?]"):
    if c.__class__ is not dict:
        raise bad(what, path, "an object", c)
    name = c.get("name")
    if name.__class__ is not str or not name:
        raise InvalidObject(what, f"{path}.name", "missing: a container without a name" if name in (None, "")
                            else f"must be a string, not {type_name(name)}")
    slim = {k: c[k] for k in _CONTAINER_FIELDS if c.get(k) is not None}
    return slim


def _check_container(slim, what, path):
    """The fields of a slimmed container the engine model reads."""
    as_str(slim.get("image"), what, f"{path}.image")
    as_str_list(slim.get("command"), what, f"{path}.command")
    as_str_list(slim.get("args"), what, f"{path}.args")
    as_env(slim.get("env"), what, f"{path}.env")
    as_env_from(slim.get("envFrom"), what, f"{path}.envFrom")


class Interner:
    """The values records of one load share. Replicas of a role carry equal containers, labels
    and annotations: each distinct value is kept once and every record points at it, so memory
    follows the distinct specs, not the number of Pods. Records never mutate these values.

    Keyed by the hash of the value's repr (type-exact) and confirmed with ==; on the (64-bit)
    hash colliding for unequal values the new value is simply not shared. `checked(check)` is
    the set of ids of shared values that passed `check`: a value equal to one already checked
    is not checked again."""

    def __init__(self):
        self._seen = {}
        self._checked = {}

    def __call__(self, value):
        key = hash(repr(value))
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = value
            return value
        return seen if seen == value else value

    def checked(self, check):
        return self._checked.setdefault(check, set())


class _Unshared:
    """The interner of a record built alone: nothing is shared, everything is checked."""

    __slots__ = ()

    def __call__(self, value):
        return value

    def checked(self, check):
        return set()


_own = _Unshared()


def _check_labels(value, what, path):
    as_str_map(value, what, path)


def _check_container_at(value, what, path):
    _check_container(value, what, path)


def _pod_containers(value, what, path, share):
    """The slimmed containers of a Pod (template) spec, each through the interner and checked
    unless an equal container already was in this load."""
    if value.__class__ is not list:
        raise InvalidObject(what, path, "missing" if value is None else f"must be a list, not {type_name(value)}")
    done = share.checked(_check_container_at)
    out = []
    for i, c in enumerate(value):
        slim = share(_slim_container(c, what, f"{path}[{i}]"))
        if id(slim) not in done:
            _check_container(slim, what, f"{path}[{i}]")
            done.add(id(slim))
        out.append(slim)
    return tuple(out)


def _owner(meta, what):
    owner = None
    refs = meta.get("ownerReferences")
    if refs:
        for i, ref in enumerate(as_list(refs, what, "metadata.ownerReferences")):
            if ref.__class__ is not dict:
                raise bad(what, f"metadata.ownerReferences[{i}]", "an object", ref)
            if as_bool(ref.get("controller"), what, f"metadata.ownerReferences[{i}].controller"):
                path = f"metadata.ownerReferences[{i}]"
                owner = (as_str(ref.get("apiVersion"), what, path + ".apiVersion") or "",
                         as_str(ref.get("kind"), what, path + ".kind") or "",
                         as_str(ref.get("name"), what, path + ".name") or "")
    return owner


def _exit_codes(status, what):
    exit_codes: dict = {}
    statuses = status.get("containerStatuses")
    if not statuses:
        return exit_codes
    for i, cs in enumerate(as_list(statuses, what, "status.containerStatuses")):
        if cs.__class__ is not dict:
            raise bad(what, f"status.containerStatuses[{i}]", "an object", cs)
        name = cs.get("name")
        if name.__class__ is not str:
            as_str(name, what, f"status.containerStatuses[{i}].name")
        for key in ("state", "lastState"):
            state = cs.get(key)
            if not state:
                continue
            if state.__class__ is not dict:
                raise bad(what, f"status.containerStatuses[{i}].{key}", "an object", state)
            terminated = state.get("terminated")
            if terminated is None:
                continue
            if terminated.__class__ is not dict:
                raise bad(what, f"status.containerStatuses[{i}].{key}.terminated", "an object", terminated)
            if "exitCode" in terminated and name not in exit_codes:
                exit_codes[name] = as_int(terminated["exitCode"], what,
                                        f"status.containerStatuses[{i}].{key}.terminated.exitCode", INT32)
    return exit_codes


def _failed(obj, kind, exc):
    """The PluginError for an exception while building a record: always naming the object."""
    what = describe(obj, kind)
    if isinstance(exc, InvalidObject):
        return exc.named(what)
    if isinstance(exc, PluginError):
        return exc
    if isinstance(exc, RecursionError):
        return PluginError(f"{what}: nested too deeply")
    return PluginError(f"{what}: internal error while reading it: {exc.__class__.__name__}: {exc} (set "
                       f"KVCACHE_DEBUG=1 for the traceback; please report it)")


def _reading(kind):
    """Builders name the object they were reading in every error, on the cluster path too;
    KVCACHE_DEBUG=1 lets an unexpected exception through with its traceback."""
    def wrap(build):
        @functools.wraps(build)
        def record(obj, *args):
            try:
                return build(obj, *args)
            except Exception as exc:
                if os.environ.get("KVCACHE_DEBUG") and not isinstance(exc, PluginError):
                    raise
                raise _failed(obj, kind, exc) from None
        return record
    return wrap


def pod_record(obj, intern=None) -> Pod:
    """`intern`: an Interner shared by the records of one load (None: nothing is shared)."""
    try:
        return _pod_record(obj, intern or _own)
    except Exception as exc:      # named here, so that the valid path never formats a name
        if os.environ.get("KVCACHE_DEBUG") and not isinstance(exc, PluginError):
            raise
        raise _failed(obj, "Pod", exc) from None


def _pod_record(obj, share, what=None) -> Pod:
    meta = obj.get("metadata")
    if meta.__class__ is not dict or meta.get("name").__class__ is not str or not meta["name"] or \
            meta.get("namespace").__class__ not in _STR_OR_NONE:
        metadata(obj, what)                     # raises, naming the field
    spec = obj.get("spec")
    if spec.__class__ is not dict:
        raise InvalidObject(what, "spec.containers", "missing")
    status = obj.get("status")
    if status.__class__ is not dict:
        status = as_obj(status, what, "status")
    labels = meta.get("labels")
    labels = share(dict(labels) if labels.__class__ is dict else {} if labels is None else labels)
    done = share.checked(_check_labels)
    if id(labels) not in done:
        as_str_map(labels, what, "metadata.labels")
        done.add(id(labels))
    phase = status.get("phase")
    created = meta.get("creationTimestamp")
    deleting = meta.get("deletionTimestamp")
    node = spec.get("nodeName")
    return Pod(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=labels,
        annotations=share(kv_annotations(meta, what)),
        owner=_owner(meta, what),
        containers=_pod_containers(spec.get("containers"), what, "spec.containers", share),
        exit_codes=share(_exit_codes(status, what)),
        phase=(phase if phase.__class__ is str else as_str(phase, what, "status.phase")) or "",
        created=(created if created.__class__ is str else
                 as_str(created, what, "metadata.creationTimestamp")) or "",
        deleting=(deleting if deleting.__class__ is str else
                  as_str(deleting, what, "metadata.deletionTimestamp")) or "",
        states=share(_container_states(status, what)),
        node=(node if node.__class__ is str else as_str(node, what, "spec.nodeName")) or "",
    )


@_reading('ModelDeployment')
def deployment_record(obj) -> Deployment:
    what, meta, spec = with_spec(obj, "ModelDeployment")
    roles = []
    for path, role in as_objects(spec.get("roles"), what, "spec.roles"):
        name = as_str(role.get("name"), what, path + ".name")
        if not name:
            raise InvalidObject(what, path + ".name", f"missing: {path} has no name")
        roles.append(Role(
            name=name,
            kind=(as_str(role.get("kind"), what, path + ".kind") or "").lower(),
            replicas=as_int(role.get("replicas"), what, path + ".replicas"),
            command=tuple(as_str_list(role.get("command"), what, path + ".command")),
            extra_args=tuple(as_str_list(role.get("extraArgs"), what, path + ".extraArgs")),
            env=tuple(as_env(role.get("env"), what, path + ".env")),
            # api/worker/v1alpha1/model_deployment.go ModelDeploymentRole.Image (maxLength 512)
            image=as_str(role.get("image"), what, path + ".image") or None,
        ))
    kv = spec.get("kvCache")
    binding = None
    if kv is not None:
        kv = as_obj(kv, what, "spec.kvCache")
        binding = as_str(as_obj(kv.get("poolRef"), what, "spec.kvCache.poolRef").get("name"), what,
                       "spec.kvCache.poolRef.name")
        if not binding:      # the operator requires it: a pool is attached through a named Binding
            raise InvalidObject(what, "spec.kvCache.poolRef.name", "missing")
    engine = as_obj(spec.get("engine"), what, "spec.engine")
    status = as_obj(obj.get("status"), what, "status")
    kv_status = as_obj(status.get("kvCache"), what, "status.kvCache")
    domain = as_obj(kv_status.get("domain"), what, "status.kvCache.domain")
    return Deployment(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        engine=as_str(engine.get("name"), what, "spec.engine.name"),
        engine_version=as_str(engine.get("version"), what, "spec.engine.version"),
        binding=binding,
        kv_cache=kv is not None,
        roles=tuple(roles),
        status_dtype=as_str(domain.get("dtype"), what, "status.kvCache.domain.dtype"),
        labels=dict(as_str_map(meta.get("labels"), what, "metadata.labels")),
        status_roles=_role_statuses(status, what),
        rollout=_condition(status, what, REPLICAS_UP_TO_DATE),
        generation=as_int(meta.get("generation"), what, "metadata.generation"),
        uid=meta.get("uid") if isinstance(meta.get("uid"), str) else None,
        spec_written=_spec_written(meta),
        deleting=as_str(meta.get("deletionTimestamp"), what, "metadata.deletionTimestamp") or "",
        domain_registered=_condition(status, what, DOMAIN_REGISTERED),
        kv_status=_kv_status(kv_status, domain, what) if kv_status else None,
    )


def _kv_status(kv, domain, what) -> KVCacheStatus:
    """status.kvCache (ModelDeploymentKVCacheStatus): what the operator last read of the Binding."""
    return KVCacheStatus(as_str(kv.get("binding"), what, "status.kvCache.binding") or None,
                         as_str(kv.get("pool"), what, "status.kvCache.pool") or None,
                         as_str(domain.get("name"), what, "status.kvCache.domain.name") or None,
                         as_int(domain.get("blockSize"), what, "status.kvCache.domain.blockSize"),
                         as_str(domain.get("dtype"), what, "status.kvCache.domain.dtype") or None)


def _spec_written(meta) -> str | None:
    """The latest metadata.managedFields[].time of a write that was not to a subresource (status):
    when the object's spec (or metadata) last changed, as the API server recorded it. RFC 3339 in
    UTC with a `Z` (metav1.Time), so the latest is the greatest string; None when not recorded."""
    fields = meta.get("managedFields")
    times = [f["time"] for f in fields if isinstance(f, dict) and not f.get("subresource")
             and isinstance(f.get("time"), str)] if isinstance(fields, list) else []
    return max(times) if times else None


REPLICAS_UP_TO_DATE = "ReplicasUpToDate"    # pkg/worker/controllers/worker/model_deployment_rollout.go
DOMAIN_REGISTERED = "DomainRegistered"      # pkg/worker/controllers/worker/model_deployment_binding.go


def _condition(status, what, kind) -> Condition | None:
    """status.conditions[type=kind] (gpustack.Condition: type, status, reason, message), None
    when the operator has not written it (a release before it, or no pass yet)."""
    for path, c in as_objects(status.get("conditions"), what, "status.conditions"):
        if as_str(c.get("type"), what, path + ".type") == kind:
            return Condition(kind, as_str(c.get("status"), what, path + ".status") or "",
                             as_str(c.get("reason"), what, path + ".reason") or "",
                             as_str(c.get("message"), what, path + ".message") or "",
                             as_int(c.get("observedGeneration"), what, path + ".observedGeneration"),
                             c.get("lastTransitionTime") if isinstance(c.get("lastTransitionTime"), str) else "")
    return None


def _role_statuses(status, what) -> tuple[RoleStatus, ...]:
    """status.roles: what the operator reports of each role, the fields of its Go type only
    (api/worker/v1alpha1/model_deployment.go, ModelDeploymentRoleStatus)."""
    found = []
    for path, r in as_objects(status.get("roles"), what, "status.roles"):
        name = as_str(r.get("name"), what, path + ".name")
        if name:
            found.append(RoleStatus(name, as_int(r.get("desired"), what, path + ".desired", INT32),
                                    as_int(r.get("ready"), what, path + ".ready", INT32),
                                    as_int(r.get("quotaReserved"), what, path + ".quotaReserved", INT32),
                                    as_bool(r.get("unmanaged"), what, path + ".unmanaged"),
                                    as_str(r.get("kind"), what, path + ".kind"),
                                    tuple(as_str_list(r.get("assignedFlavors"), what, path + ".assignedFlavors"))))
    return tuple(found)


def _container_states(status, what) -> dict[str, dict]:
    """Per container: ready, restarts, the waiting reason (CrashLoopBackOff, ...), running."""
    states = {}
    for path, cs in as_objects(status.get("containerStatuses"), what, "status.containerStatuses"):
        name = as_str(cs.get("name"), what, path + ".name")
        if not name:
            continue
        state = as_obj(cs.get("state"), what, path + ".state")
        waiting = as_obj(state.get("waiting"), what, path + ".state.waiting")
        states[name] = {"ready": as_bool(cs.get("ready"), what, path + ".ready") is True,
                        "restarts": as_int(cs.get("restartCount"), what, path + ".restartCount", INT32) or 0,
                        "waiting": as_str(waiting.get("reason"), what, path + ".state.waiting.reason") or "",
                        "running": "running" in state}
    return states


@_reading('KVCachePoolBinding')
def binding_record(obj) -> Binding:
    what, meta, spec = with_spec(obj, "KVCachePoolBinding")
    domain = as_obj(spec.get("domain"), what, "spec.domain")
    status = as_obj(obj.get("status"), what, "status")
    used_by: list[tuple[str, str, str]] = []
    for path, u in as_objects(status.get("usedBy"), what, "status.usedBy"):
        kind, namespace, name = (as_str(u.get(k), what, f"{path}.{k}") or "" for k in ("kind", "namespace", "name"))
        used_by.append((kind, namespace, name))
    for path, c in as_objects(status.get("conditions"), what, "status.conditions"):    # read by readiness()
        for key in ("type", "status", "reason", "message"):
            as_str(c.get(key), what, f"{path}.{key}")
    as_str(status.get("phaseMessage"), what, "status.phaseMessage")
    return Binding(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        pool=as_str(as_obj(spec.get("poolRef"), what, "spec.poolRef").get("name"), what, "spec.poolRef.name"),
        domain=as_str(domain.get("name"), what, "spec.domain.name") or "default",
        dtype=as_str(domain.get("dtype"), what, "spec.domain.dtype"),
        used_by=tuple(used_by),
        phase=as_str(status.get("phase"), what, "status.phase") or "",
        labels=dict(as_str_map(meta.get("labels"), what, "metadata.labels")),
        created=as_str(meta.get("creationTimestamp"), what, "metadata.creationTimestamp") or "",
        deleting=as_str(meta.get("deletionTimestamp"), what, "metadata.deletionTimestamp") or "",
        readiness=binding_status.readiness(obj),
    )


@_reading('KVCachePool')
def pool_record(obj) -> Pool:
    """spec.backends: the masters it names (the operator admits one; a stored pool may name any number)."""
    what, meta, spec = with_spec(obj, "KVCachePool")
    status = as_obj(obj.get("status"), what, "status")
    ledger = None
    for path, c in as_objects(status.get("conditions"), what, "status.conditions"):
        if as_str(c.get("type"), what, path + ".type") == "QuotaLedgerAvailable":
            ledger = (as_str(c.get("status"), what, path + ".status") or "",
                      as_str(c.get("reason"), what, path + ".reason") or "",
                      as_str(c.get("message"), what, path + ".message") or "")
    return Pool(name=meta["name"], backends=tuple(as_str_list(spec.get("backends"), what, "spec.backends")),
                client_endpoint=as_str(status.get("clientEndpoint"), what, "status.clientEndpoint") or "",
                ledger=ledger)


@_reading('Setting')
def setting_record(obj, source) -> Setting:
    what = describe(obj, "Setting")
    meta = metadata(obj, what)
    spec = as_obj(obj.get("spec"), what, "spec")
    status = as_obj(obj.get("status"), what, "status")
    return Setting(
        status_value=as_str(status.get("value"), what, "status.value"),
        spec_value=as_str(spec.get("value"), what, "spec.value"),
        editable=as_bool(status.get("editable"), what, "status.editable"),
        description=as_str(status.get("description"), what, "status.description") or "",
        sensitive=as_bool(status.get("sensitive"), what, "status.sensitive"),
        resource_version=as_str(meta.get("resourceVersion"), what, "metadata.resourceVersion") or "",
        source=source,
        annotations={k: v for k, v in (meta.get("annotations") or {}).items() if isinstance(v, str)}
        if isinstance(meta.get("annotations"), dict) else {},
    )


@_reading(None)
def workload_record(obj) -> Workload:
    what = describe(obj)
    meta = metadata(obj, what)
    *outer, last = paths.pod_template_path(obj.get("kind"))
    node = obj
    for i in range(len(outer)):      # spec, or spec.jobTemplate.spec: each an object
        node = as_obj(node.get(outer[i]), what, ".".join(outer[:i + 1]))
    at = ".".join((*outer, last))
    template = node.get(last)
    if template.__class__ is not dict:
        raise InvalidObject(what, at, "missing the Pod template" if template is None else
                            f"must be an object, not {type_name(template)}")
    tmeta = as_obj(template.get("metadata"), what, f"{at}.metadata")
    tspec = as_obj(template.get("spec"), what, f"{at}.spec")
    labels = as_str_map(tmeta.get("labels"), what, f"{at}.metadata.labels")
    return Workload(
        kind=obj.get("kind"),
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=dict(labels),
        annotations=kv_annotations(tmeta, what, f"{at}.metadata.annotations"),
        containers=_pod_containers(tspec.get("containers"), what, f"{at}.spec.containers", _own),
        own_labels=dict(as_str_map(meta.get("labels"), what, "metadata.labels")),
    )


def is_setting(obj):
    meta = obj.get("metadata")
    return (obj.get("kind") == "Setting" and str(obj.get("apiVersion", "")).startswith(SETTING_GROUP + "/")
            and meta.__class__ is dict and meta.get("name") == SETTING_NAME)
