"""Compact, typed records of just the fields the plugin reads, the same whether they came from a
live cluster or from saved `kubectl get -o json` output.

Built page by page from raw JSON, so memory follows the number of records, not the size of the
objects. A missing or mistyped field is an InvalidObject (a PluginError) naming the object and the
field path, never a KeyError or AttributeError.
"""

from __future__ import annotations

import functools
import os

from kubectl_kvcache.errors import InvalidObject, PluginError
from kubectl_kvcache.operator.api import ANNOTATION_PREFIX, GROUP, INJECT_LABEL, SETTING_GROUP, SETTING_NAME
from kubectl_kvcache.record import Record


_CONTAINER_FIELDS = ("name", "image", "command", "args", "env", "envFrom")


# -- validation -------------------------------------------------------------------------------
#
# Every field a record reads is checked against the type the API server's schema enforces (the
# core v1 Pod, the operator's CRDs): a saved file can hold anything, and a value of the wrong
# type must be an error naming the object and the field, never a crash or a silent verdict.
# The checks are `value.__class__ is T` tests on the fields read, nothing else is walked.

_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)


def type_name(value):
    """How an error names a value's JSON type (`a string`, `null`, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _bad(what, path, expected, value):
    return InvalidObject(what, path, f"must be {expected}, not {type_name(value)}")


def _str(value, what, path):
    """A string field: the string, or None when absent (null)."""
    if value.__class__ is str or value is None:
        return value
    raise _bad(what, path, "a string", value)


def _bool(value, what, path):
    if value is None or value.__class__ is bool:
        return value
    raise _bad(what, path, "a boolean", value)


def _int(value, what, path, bounds=_INT64):
    if value is None:
        return None
    if value.__class__ is not int:
        raise _bad(what, path, "an integer", value)
    if not bounds[0] <= value <= bounds[1]:
        raise InvalidObject(what, path, f"integer out of range ({value if len(str(value)) < 30 else 'too long'})")
    return value


def _obj(value, what, path):
    """An object field: the dict, or an empty one when absent (null)."""
    if value.__class__ is dict:
        return value
    if value is None:
        return _EMPTY
    raise _bad(what, path, "an object", value)


def _list(value, what, path):
    if value.__class__ is list:
        return value
    if value is None:
        return ()
    raise _bad(what, path, "a list", value)


def _objects(value, what, path):
    """The objects of a list field, each with its path (`spec.roles[2]`); any other element is an
    error naming it."""
    for i, item in enumerate(_list(value, what, path)):
        at = f"{path}[{i}]"
        if item.__class__ is not dict:
            raise _bad(what, at, "an object", item)
        yield at, item


def _str_list(value, what, path):
    """A list of strings (command, args, extraArgs) as a tuple."""
    if value is None:
        return ()
    if value.__class__ is not list:
        raise _bad(what, path, "a list of strings", value)
    for i, element in enumerate(value):
        if element.__class__ is not str:
            raise _bad(what, f"{path}[{i}]", "a string", element)
    return value


def _str_map(value, what, path):
    """map[string]string (labels, annotations)."""
    if value is None:
        return _EMPTY
    if value.__class__ is not dict:
        raise _bad(what, path, "an object of strings", value)
    for k, v in value.items():
        if k.__class__ is not str:
            raise InvalidObject(what, path, f"key {k!r} must be a string, not {type_name(k)}")
        if v.__class__ is not str:
            raise _bad(what, f"{path}[{k!r}]" if not k.isidentifier() else f"{path}.{k}", "a string", v)
    return value


_EMPTY = {}
_STR_OR_NONE = (str, type(None))

_ENV_REFS = (("secretKeyRef", ("name", "key")), ("configMapKeyRef", ("name", "key")), ("fieldRef", ("fieldPath",)),
             ("resourceFieldRef", ("resource",)))


def _env(value, what, path):
    """A container's (or a role's) env: [{name, value, valueFrom}]."""
    entries = _list(value, what, path)
    for i, entry in enumerate(entries):
        if entry.__class__ is not dict:
            raise _bad(what, f"{path}[{i}]", "an object", entry)
        if _str(entry.get("name"), what, f"{path}[{i}].name") is None:
            raise InvalidObject(what, f"{path}[{i}].name", "missing")  # required by the schema
        _str(entry.get("value"), what, f"{path}[{i}].value")
        source = entry.get("valueFrom")
        if source is not None:
            source = _obj(source, what, f"{path}[{i}].valueFrom")
            for ref, keys in _ENV_REFS:
                sub = _obj(source.get(ref), what, f"{path}[{i}].valueFrom.{ref}")
                for key in keys:
                    _str(sub.get(key), what, f"{path}[{i}].valueFrom.{ref}.{key}")
    return entries


def _env_from(value, what, path):
    entries = _list(value, what, path)
    for i, entry in enumerate(entries):
        if entry.__class__ is not dict:
            raise _bad(what, f"{path}[{i}]", "an object", entry)
        _str(entry.get("prefix"), what, f"{path}[{i}].prefix")
        for ref in ("configMapRef", "secretRef"):
            _str(_obj(entry.get(ref), what, f"{path}[{i}].{ref}").get("name"), what, f"{path}[{i}].{ref}.name")
    return entries


def describe(obj, kind=None):
    """`Pod ns/name` for messages; tolerant of any shape (it names objects that are malformed)."""
    if obj.__class__ is not dict:
        return kind or "object"
    meta = obj.get("metadata")
    meta = meta if meta.__class__ is dict else _EMPTY
    name, ns = meta.get("name"), meta.get("namespace")
    kind = obj.get("kind") if obj.get("kind").__class__ is str and obj.get("kind") else kind or "object"
    if name.__class__ is not str or not name:
        return kind
    if ns.__class__ is str and ns:
        return f"{kind} {ns}/{name}"
    return f"{kind} {name}"


def _slim_container(c, what, path="spec.containers[?]"):
    if c.__class__ is not dict:
        raise _bad(what, path, "an object", c)
    name = c.get("name")
    if name.__class__ is not str or not name:
        raise InvalidObject(what, f"{path}.name", "missing: a container without a name" if name in (None, "")
                            else f"must be a string, not {type_name(name)}")
    slim = {k: c[k] for k in _CONTAINER_FIELDS if c.get(k) is not None}
    return slim


def _check_container(slim, what, path):
    """The fields of a slimmed container the engine model reads."""
    _str(slim.get("image"), what, f"{path}.image")
    _str_list(slim.get("command"), what, f"{path}.command")
    _str_list(slim.get("args"), what, f"{path}.args")
    _env(slim.get("env"), what, f"{path}.env")
    _env_from(slim.get("envFrom"), what, f"{path}.envFrom")


class Pod(Record):
    __slots__ = ("namespace", "name", "labels", "annotations", "owner", "containers", "exit_codes", "phase",
                 "created", "deleting", "states")

    def __init__(self, namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str],
                 owner: tuple[str, str, str] | None, containers: tuple[dict, ...], exit_codes: dict[str, int],
                 phase: str = "", created: str = "", deleting: str = "", states: dict[str, dict] | None = None):
        self.namespace = namespace
        self.name = name
        self.labels = labels
        self.annotations = annotations      # only kvcache.gpustack.ai/* ones
        self.owner = owner                  # controller (apiVersion, kind, name)
        self.containers = containers
        self.exit_codes = exit_codes        # container -> last termination exit code
        self.phase = phase
        self.created = created
        self.deleting = deleting            # metadata.deletionTimestamp: Terminating
        self.states = {} if states is None else states   # container -> {ready, restarts, waiting, running}

    def container(self, name):
        return next((c for c in self.containers if c.get("name") == name), None)

    @property
    def md_controlled(self) -> bool:
        """Controlled by a ModelDeployment: the operator renders it; the injection webhook does not."""
        return self.owner is not None and self.owner[1] == "ModelDeployment" and \
            self.owner[0].split("/")[0] == GROUP

    @property
    def opted_in(self) -> bool:
        """Labelled for the injection webhook."""
        return self.labels.get(INJECT_LABEL) == "true"


def injection_target(annotations: dict[str, str], containers) -> tuple[dict | None, str]:
    """The container the injection webhook appends to (its annotation's, else the only one),
    or None and why it cannot pick one. The one place this is decided, for verify and check."""
    named = annotations.get(ANNOTATION_PREFIX + "container")
    if named:
        match = next((c for c in containers if c.get("name") == named), None)
        if match is None:
            return None, f"annotation {ANNOTATION_PREFIX}container names {named!r}, which is not a container"
        return match, ""
    if len(containers) == 1:
        return containers[0], ""
    return None, (f"{len(containers)} containers and no {ANNOTATION_PREFIX}container annotation "
                  f"to say which runs the engine")


class Role(Record):
    __slots__ = ("name", "kind", "replicas", "command", "extra_args", "env")

    def __init__(self, name: str, kind: str, replicas: int | None, command: tuple[str, ...],
                 extra_args: tuple[str, ...], env: tuple[dict, ...]):
        self.name = name
        self.kind = kind
        self.replicas = replicas
        self.command = command
        self.extra_args = extra_args
        self.env = env


class RoleStatus(Record):
    """What the operator reports for a role in status.roles[]."""

    __slots__ = ("name", "replicas", "ready", "updated")

    def __init__(self, name: str, replicas: int | None, ready: int | None, updated: int | None):
        self.name = name
        self.replicas = replicas
        self.ready = ready
        self.updated = updated


class Deployment(Record):
    __slots__ = ("namespace", "name", "engine", "engine_version", "binding", "kv_cache", "roles", "status_dtype",
                 "image", "labels", "status_roles")
    _uncompared = ("labels",)

    def __init__(self, namespace: str, name: str, engine: str | None, engine_version: str | None,
                 binding: str | None, kv_cache: bool, roles: tuple[Role, ...], status_dtype: str | None = None,
                 image: str | None = None, labels: dict[str, str] | None = None,
                 status_roles: tuple[RoleStatus, ...] = ()):
        self.namespace = namespace
        self.name = name
        self.engine = engine                # as written (vLLM, vllm, ...)
        self.engine_version = engine_version
        self.binding = binding              # spec.kvCache.poolRef.name
        self.kv_cache = kv_cache            # spec.kvCache is set
        self.roles = roles
        self.status_dtype = status_dtype
        self.image = image
        self.labels = {} if labels is None else labels     # for -l on roles/check
        self.status_roles = status_roles

    def role_status(self, name):
        return next((r for r in self.status_roles if r.name == name), None)

    def role(self, name):
        return next((r for r in self.roles if r.name == name), None)


class Binding(Record):
    __slots__ = ("namespace", "name", "pool", "domain", "dtype", "used_by", "phase", "labels", "created")
    _uncompared = ("labels",)

    def __init__(self, namespace: str, name: str, pool: str | None, domain: str, dtype: str | None,
                 used_by: tuple[tuple[str, str, str], ...] = (), phase: str = "",
                 labels: dict[str, str] | None = None, created: str = ""):
        self.namespace = namespace
        self.name = name
        self.pool = pool
        self.domain = domain
        self.dtype = dtype
        self.used_by = used_by
        self.phase = phase
        self.labels = {} if labels is None else labels     # for -l on bindings/check
        self.created = created              # metadata.creationTimestamp: who claimed a pool's domain first


class Setting(Record):
    __slots__ = ("status_value", "spec_value", "editable", "description", "sensitive", "resource_version",
                 "source")

    def __init__(self, status_value: str | None, spec_value: str | None, editable: bool | None, description: str,
                 sensitive: bool | None, resource_version: str, source: str):
        self.status_value = status_value    # what the operator reports; None when unset
        self.spec_value = spec_value
        self.editable = editable
        self.description = description
        self.sensitive = sensitive
        self.resource_version = resource_version
        self.source = source                # cluster | file | default


class Workload(Record):
    __slots__ = ("kind", "namespace", "name", "labels", "annotations", "containers")

    def __init__(self, kind: str, namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str],
                 containers: tuple[dict, ...]):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.labels = labels
        self.annotations = annotations
        self.containers = containers


class Snapshot(Record):
    __slots__ = ("pods", "deployments", "bindings", "setting", "workloads", "source", "namespace", "notes",
                 "missing_namespaces")
    __hash__ = None     # mutable: filled in as it is read

    def __init__(self, pods: list[Pod] | None = None, deployments: dict[tuple[str, str], Deployment] | None = None,
                 bindings: dict[tuple[str, str], Binding] | None = None, setting: Setting | None = None,
                 workloads: list[Workload] | None = None, source: str = "cluster", namespace: str | None = None,
                 notes: list[str] | None = None):
        self.pods = [] if pods is None else pods
        self.deployments = {} if deployments is None else deployments
        self.bindings = {} if bindings is None else bindings
        self.setting = setting
        self.workloads = [] if workloads is None else workloads
        self.source = source
        self.namespace = namespace          # the namespace asked for; None: all
        self.notes = [] if notes is None else notes
        self.missing_namespaces = ()        # namespaces asked for that the cluster says do not exist

    def absent(self, namespace) -> str:
        """How to say an object was not there: saved files are an input, a cluster is not."""
        return "is not in the input" if self.source == "file" else f"was not found in namespace {namespace}"


def in_namespace(namespace, wanted) -> bool:
    """Whether an object in `namespace` is in scope when `wanted` was asked for (None: all)."""
    return wanted is None or namespace == wanted


def _meta(obj, what):
    """metadata with a name (a string) and, when set, a namespace (a string)."""
    meta = obj.get("metadata")
    if meta.__class__ is not dict:
        raise InvalidObject(what, "metadata", "missing" if meta is None else f"must be an object, not "
                                                                            f"{type_name(meta)}")
    name = meta.get("name")
    if name.__class__ is not str or not name:
        raise InvalidObject(what, "metadata.name", "missing" if name in (None, "") else
                            f"must be a string, not {type_name(name)}")
    _str(meta.get("namespace"), what, "metadata.namespace")
    return meta


def _with_spec(obj, kind):
    """(description, metadata, spec) of an object that must have both."""
    what = describe(obj, kind)
    meta = _meta(obj, what)
    spec = obj.get("spec")
    if spec.__class__ is not dict:
        raise InvalidObject(what, "spec", "missing" if spec is None else f"must be an object, not {type_name(spec)}")
    return what, meta, spec


def _kv_annotations(meta, what, path="metadata.annotations"):
    ann = meta.get("annotations")
    if not ann:
        return {}
    if ann.__class__ is not dict:
        raise _bad(what, path, "an object of strings", ann)
    kept = {}
    for k, v in ann.items():
        if k.__class__ is not str:
            raise InvalidObject(what, path, f"key {k!r} must be a string, not {type_name(k)}")
        if k.startswith(ANNOTATION_PREFIX):
            if v.__class__ is not str:
                raise _bad(what, f"{path}[{k!r}]", "a string", v)
            kept[k] = v
    return kept


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
    _str_map(value, what, path)


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
        for i, ref in enumerate(_list(refs, what, "metadata.ownerReferences")):
            if ref.__class__ is not dict:
                raise _bad(what, f"metadata.ownerReferences[{i}]", "an object", ref)
            if _bool(ref.get("controller"), what, f"metadata.ownerReferences[{i}].controller"):
                path = f"metadata.ownerReferences[{i}]"
                owner = (_str(ref.get("apiVersion"), what, path + ".apiVersion") or "",
                         _str(ref.get("kind"), what, path + ".kind") or "",
                         _str(ref.get("name"), what, path + ".name") or "")
    return owner


def _exit_codes(status, what):
    exit_codes = {}
    statuses = status.get("containerStatuses")
    if not statuses:
        return exit_codes
    for i, cs in enumerate(_list(statuses, what, "status.containerStatuses")):
        if cs.__class__ is not dict:
            raise _bad(what, f"status.containerStatuses[{i}]", "an object", cs)
        name = cs.get("name")
        if name.__class__ is not str:
            _str(name, what, f"status.containerStatuses[{i}].name")
        for key in ("state", "lastState"):
            state = cs.get(key)
            if not state:
                continue
            if state.__class__ is not dict:
                raise _bad(what, f"status.containerStatuses[{i}].{key}", "an object", state)
            terminated = state.get("terminated")
            if terminated is None:
                continue
            if terminated.__class__ is not dict:
                raise _bad(what, f"status.containerStatuses[{i}].{key}.terminated", "an object", terminated)
            if "exitCode" in terminated and name not in exit_codes:
                exit_codes[name] = _int(terminated["exitCode"], what,
                                        f"status.containerStatuses[{i}].{key}.terminated.exitCode", _INT32)
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
        _meta(obj, what)                     # raises, naming the field
    spec = obj.get("spec")
    if spec.__class__ is not dict:
        raise InvalidObject(what, "spec.containers", "missing")
    status = obj.get("status")
    if status.__class__ is not dict:
        status = _obj(status, what, "status")
    labels = meta.get("labels")
    labels = share(dict(labels) if labels.__class__ is dict else {} if labels is None else labels)
    done = share.checked(_check_labels)
    if id(labels) not in done:
        _str_map(labels, what, "metadata.labels")
        done.add(id(labels))
    phase = status.get("phase")
    created = meta.get("creationTimestamp")
    deleting = meta.get("deletionTimestamp")
    return Pod(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=labels,
        annotations=share(_kv_annotations(meta, what)),
        owner=_owner(meta, what),
        containers=_pod_containers(spec.get("containers"), what, "spec.containers", share),
        exit_codes=share(_exit_codes(status, what)),
        phase=(phase if phase.__class__ is str else _str(phase, what, "status.phase")) or "",
        created=(created if created.__class__ is str else
                 _str(created, what, "metadata.creationTimestamp")) or "",
        deleting=(deleting if deleting.__class__ is str else
                  _str(deleting, what, "metadata.deletionTimestamp")) or "",
        states=share(_container_states(status, what)),
    )


@_reading('ModelDeployment')
def deployment_record(obj) -> Deployment:
    what, meta, spec = _with_spec(obj, "ModelDeployment")
    roles = []
    for path, role in _objects(spec.get("roles"), what, "spec.roles"):
        name = _str(role.get("name"), what, path + ".name")
        if not name:
            raise InvalidObject(what, path + ".name", f"missing: {path} has no name")
        roles.append(Role(
            name=name,
            kind=(_str(role.get("kind"), what, path + ".kind") or "").lower(),
            replicas=_int(role.get("replicas"), what, path + ".replicas"),
            command=tuple(_str_list(role.get("command"), what, path + ".command")),
            extra_args=tuple(_str_list(role.get("extraArgs"), what, path + ".extraArgs")),
            env=tuple(_env(role.get("env"), what, path + ".env")),
        ))
    kv = spec.get("kvCache")
    binding = None
    if kv is not None:
        kv = _obj(kv, what, "spec.kvCache")
        binding = _str(_obj(kv.get("poolRef"), what, "spec.kvCache.poolRef").get("name"), what,
                       "spec.kvCache.poolRef.name")
        if not binding:      # the operator requires it: a pool is attached through a named Binding
            raise InvalidObject(what, "spec.kvCache.poolRef.name", "missing")
    engine = _obj(spec.get("engine"), what, "spec.engine")
    status = _obj(obj.get("status"), what, "status")
    domain = _obj(_obj(status.get("kvCache"), what, "status.kvCache").get("domain"), what, "status.kvCache.domain")
    return Deployment(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        engine=_str(engine.get("name"), what, "spec.engine.name"),
        engine_version=_str(engine.get("version"), what, "spec.engine.version"),
        binding=binding,
        kv_cache=kv is not None,
        roles=tuple(roles),
        status_dtype=_str(domain.get("dtype"), what, "status.kvCache.domain.dtype"),
        image=_str(engine.get("image"), what, "spec.engine.image"),
        labels=dict(_str_map(meta.get("labels"), what, "metadata.labels")),
        status_roles=_role_statuses(status, what),
    )


def _role_statuses(status, what) -> tuple[RoleStatus, ...]:
    """status.roles: what the operator reports of each role's replicas."""
    found = []
    for path, r in _objects(status.get("roles"), what, "status.roles"):
        name = _str(r.get("name"), what, path + ".name")
        if name:
            found.append(RoleStatus(name, _int(r.get("replicas"), what, path + ".replicas", _INT32),
                                    _int(r.get("readyReplicas"), what, path + ".readyReplicas", _INT32),
                                    _int(r.get("updatedReplicas"), what, path + ".updatedReplicas", _INT32)))
    return tuple(found)


def _container_states(status, what) -> dict[str, dict]:
    """Per container: ready, restarts, the waiting reason (CrashLoopBackOff, ...), running."""
    states = {}
    for path, cs in _objects(status.get("containerStatuses"), what, "status.containerStatuses"):
        name = _str(cs.get("name"), what, path + ".name")
        if not name:
            continue
        state = _obj(cs.get("state"), what, path + ".state")
        waiting = _obj(state.get("waiting"), what, path + ".state.waiting")
        states[name] = {"ready": _bool(cs.get("ready"), what, path + ".ready") is True,
                        "restarts": _int(cs.get("restartCount"), what, path + ".restartCount", _INT32) or 0,
                        "waiting": _str(waiting.get("reason"), what, path + ".state.waiting.reason") or "",
                        "running": "running" in state}
    return states


@_reading('KVCachePoolBinding')
def binding_record(obj) -> Binding:
    what, meta, spec = _with_spec(obj, "KVCachePoolBinding")
    domain = _obj(spec.get("domain"), what, "spec.domain")
    status = _obj(obj.get("status"), what, "status")
    used_by = []
    for path, u in _objects(status.get("usedBy"), what, "status.usedBy"):
        used_by.append(tuple(_str(u.get(k), what, f"{path}.{k}") or "" for k in ("kind", "namespace", "name")))
    return Binding(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        pool=_str(_obj(spec.get("poolRef"), what, "spec.poolRef").get("name"), what, "spec.poolRef.name"),
        domain=_str(domain.get("name"), what, "spec.domain.name") or "default",
        dtype=_str(domain.get("dtype"), what, "spec.domain.dtype"),
        used_by=tuple(used_by),
        phase=_str(status.get("phase"), what, "status.phase") or "",
        labels=dict(_str_map(meta.get("labels"), what, "metadata.labels")),
        created=_str(meta.get("creationTimestamp"), what, "metadata.creationTimestamp") or "",
    )


@_reading('Setting')
def setting_record(obj, source) -> Setting:
    what = describe(obj, "Setting")
    meta = _meta(obj, what)
    spec = _obj(obj.get("spec"), what, "spec")
    status = _obj(obj.get("status"), what, "status")
    return Setting(
        status_value=_str(status.get("value"), what, "status.value"),
        spec_value=_str(spec.get("value"), what, "spec.value"),
        editable=_bool(status.get("editable"), what, "status.editable"),
        description=_str(status.get("description"), what, "status.description") or "",
        sensitive=_bool(status.get("sensitive"), what, "status.sensitive"),
        resource_version=_str(meta.get("resourceVersion"), what, "metadata.resourceVersion") or "",
        source=source,
    )


def default_setting() -> Setting:
    return Setting(None, None, None, "", None, "", "default")


NOT_SERVED = "not-served"     # Setting.source: the cluster does not serve the Setting's API group yet


def not_served_setting() -> Setting:
    """The Setting of a cluster that does not serve gpustack.ai yet (before the upgrade): unset,
    so it reads as its default, on, which is what the upgrade brings."""
    return Setting(None, None, None, "", None, "", NOT_SERVED)


def assumed_setting(on: bool) -> Setting:
    """The Setting as the user told us to assume it (--assume-setting), never read."""
    return Setting("true" if on else "false", None, None, "", None, "", "flag")


@_reading(None)
def workload_record(obj) -> Workload:
    what = describe(obj)
    meta = _meta(obj, what)
    spec = _obj(obj.get("spec"), what, "spec")
    base = "spec"
    if obj.get("kind") == "CronJob":
        spec = _obj(_obj(spec.get("jobTemplate"), what, "spec.jobTemplate").get("spec"), what,
                    "spec.jobTemplate.spec")
        base = "spec.jobTemplate.spec"
    template = spec.get("template")
    if template.__class__ is not dict:
        raise InvalidObject(what, f"{base}.template", "missing the Pod template" if template is None else
                            f"must be an object, not {type_name(template)}")
    tmeta = _obj(template.get("metadata"), what, f"{base}.template.metadata")
    tspec = _obj(template.get("spec"), what, f"{base}.template.spec")
    labels = _str_map(tmeta.get("labels"), what, f"{base}.template.metadata.labels")
    return Workload(
        kind=obj.get("kind"),
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=dict(labels),
        annotations=_kv_annotations(tmeta, what, f"{base}.template.metadata.annotations"),
        containers=_pod_containers(tspec.get("containers"), what, f"{base}.template.spec.containers", _own),
    )


def is_setting(obj):
    meta = obj.get("metadata")
    return (obj.get("kind") == "Setting" and str(obj.get("apiVersion", "")).startswith(SETTING_GROUP + "/")
            and meta.__class__ is dict and meta.get("name") == SETTING_NAME)
