"""Compact, typed records of just the fields the plugin reads, the same whether they came from a
live cluster or from saved `kubectl get -o json` output.

Built page by page from raw JSON, so memory follows the number of records, not the size of the
objects. A missing required field is a PluginError naming the object, never a KeyError.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from kubectl_kvcache.errors import PluginError

GROUP = "worker.gpustack.ai"
SETTING_GROUP = "gpustack.ai"
SETTING_NAMESPACE = "gpustack-system"
SETTING_NAME = "model-deployment-kv-cache-dtype-owned"

INJECT_LABEL = "kvcache.gpustack.ai/inject"
ANNOTATION_PREFIX = "kvcache.gpustack.ai/"
MD_NAME_LABEL = ("app.kubernetes.io/name", "model-deployment")
COMPONENT_LABEL = "app.kubernetes.io/component"
ENGINE_CONTAINER = "main"

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")

_CONTAINER_FIELDS = ("name", "image", "command", "args", "env", "envFrom")


def _need(obj, path, what):
    cur = obj
    for key in path.split("."):
        if not isinstance(cur, dict) or cur.get(key) in (None, ""):
            raise PluginError(f"{what}: missing {path}")
        cur = cur[key]
    return cur


def _describe(obj):
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") or "?"
    ns = meta.get("namespace")
    return f"{obj.get('kind', 'object')} {ns + '/' if ns else ''}{name}"


def _slim_container(c, what):
    if not isinstance(c, dict) or not c.get("name"):
        raise PluginError(f"{what}: a container without a name")
    return {k: c[k] for k in _CONTAINER_FIELDS if c.get(k) is not None}


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: Dict[str, str]
    annotations: Dict[str, str]          # only kvcache.gpustack.ai/* ones
    owner: Optional[Tuple[str, str, str]]  # controller (apiVersion, kind, name)
    containers: Tuple[dict, ...]
    exit_codes: Dict[str, int]           # container -> last termination exit code
    phase: str = ""
    created: str = ""
    deleting: str = ""                   # metadata.deletionTimestamp: Terminating
    states: Dict[str, dict] = field(default_factory=dict)   # container -> {ready, restarts, waiting, running}

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


def injection_target(annotations: Dict[str, str], containers) -> Tuple[Optional[dict], str]:
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


@dataclass(frozen=True)
class Role:
    name: str
    kind: str
    replicas: Optional[int]
    command: Tuple[str, ...]
    extra_args: Tuple[str, ...]
    env: Tuple[dict, ...]


@dataclass(frozen=True)
class RoleStatus:
    """What the operator reports for a role in status.roles[]."""

    name: str
    replicas: Optional[int]
    ready: Optional[int]
    updated: Optional[int]


@dataclass(frozen=True)
class Deployment:
    namespace: str
    name: str
    engine: Optional[str]        # as written (vLLM, vllm, ...)
    engine_version: Optional[str]
    binding: Optional[str]       # spec.kvCache.poolRef.name
    kv_cache: bool               # spec.kvCache is set
    roles: Tuple[Role, ...]
    status_dtype: Optional[str] = None
    image: Optional[str] = None
    labels: Dict[str, str] = field(default_factory=dict, hash=False, compare=False)   # for -l on roles/check
    status_roles: Tuple[RoleStatus, ...] = ()

    def role_status(self, name):
        return next((r for r in self.status_roles if r.name == name), None)

    def role(self, name):
        return next((r for r in self.roles if r.name == name), None)


@dataclass(frozen=True)
class Binding:
    namespace: str
    name: str
    pool: Optional[str]
    domain: str
    dtype: Optional[str]
    used_by: Tuple[Tuple[str, str, str], ...] = ()
    phase: str = ""
    labels: Dict[str, str] = field(default_factory=dict, hash=False, compare=False)   # for -l on bindings/check
    created: str = ""             # metadata.creationTimestamp: who claimed a pool's domain first


@dataclass(frozen=True)
class Setting:
    status_value: Optional[str]   # what the operator reports; None when unset
    spec_value: Optional[str]
    editable: Optional[bool]
    description: str
    sensitive: Optional[bool]
    resource_version: str
    source: str                   # cluster | file | default


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str
    labels: Dict[str, str]
    annotations: Dict[str, str]
    containers: Tuple[dict, ...]


@dataclass
class Snapshot:
    pods: List[Pod] = field(default_factory=list)
    deployments: Dict[Tuple[str, str], Deployment] = field(default_factory=dict)
    bindings: Dict[Tuple[str, str], Binding] = field(default_factory=dict)
    setting: Optional[Setting] = None
    workloads: List[Workload] = field(default_factory=list)
    source: str = "cluster"
    namespace: Optional[str] = None       # the namespace asked for; None: all
    notes: List[str] = field(default_factory=list)

    def absent(self, namespace) -> str:
        """How to say an object was not there: saved files are an input, a cluster is not."""
        return "is not in the input" if self.source == "file" else f"was not found in namespace {namespace}"


def in_namespace(namespace, wanted) -> bool:
    """Whether an object in `namespace` is in scope when `wanted` was asked for (None: all)."""
    return wanted is None or namespace == wanted


def _meta(obj, what):
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise PluginError(f"{what}: missing metadata.name")
    return meta


def _with_spec(obj):
    """(description, metadata, spec) of an object that must have both."""
    what = _describe(obj)
    meta = _meta(obj, what)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise PluginError(f"{what}: missing spec")
    return what, meta, spec


def _kv_annotations(meta):
    ann = meta.get("annotations") or {}
    return {k: v for k, v in ann.items() if k.startswith(ANNOTATION_PREFIX)}


class Interner:
    """The values records of one load share. Replicas of a role carry equal containers, labels
    and annotations: each distinct value is kept once and every record points at it, so memory
    follows the distinct specs, not the number of Pods. Records never mutate these values.

    Keyed by the hash of the value's repr (type-exact) and confirmed with ==; on the (64-bit)
    hash colliding for unequal values the new value is simply not shared."""

    def __init__(self):
        self._seen = {}

    def __call__(self, value):
        key = hash(repr(value))
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = value
            return value
        return seen if seen == value else value


def _own(value):
    return value


def pod_record(obj, intern=None) -> Pod:
    """`intern`: an Interner shared by the records of one load (None: nothing is shared)."""
    share = intern or _own
    what = _describe(obj)
    meta = _meta(obj, what)
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        raise PluginError(f"{what}: missing spec.containers")
    owner = None
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            owner = (ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", ""))
    exit_codes = {}
    for status in (obj.get("status") or {}).get("containerStatuses") or ():
        for key in ("state", "lastState"):
            terminated = (status.get(key) or {}).get("terminated")
            if terminated and "exitCode" in terminated and status.get("name") not in exit_codes:
                exit_codes[status.get("name")] = terminated["exitCode"]
    states = {}
    for status in (obj.get("status") or {}).get("containerStatuses") or ():
        if isinstance(status, dict) and status.get("name"):
            state = status.get("state") if isinstance(status.get("state"), dict) else {}
            waiting = state.get("waiting") if isinstance(state.get("waiting"), dict) else {}
            states[status["name"]] = {"ready": status.get("ready") is True,
                                      "restarts": _count(status.get("restartCount")) or 0,
                                      "waiting": str(waiting.get("reason") or ""),
                                      "running": "running" in state}
    return Pod(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=share(dict(meta.get("labels") or {})),
        annotations=share(_kv_annotations(meta)),
        owner=owner,
        containers=tuple(share(_slim_container(c, what)) for c in spec["containers"]),
        exit_codes=share(exit_codes),
        phase=(obj.get("status") or {}).get("phase", ""),
        created=meta.get("creationTimestamp", ""),
        deleting=meta.get("deletionTimestamp") or "",
        states=share(states),
    )


def _strings(value, what, path):
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PluginError(f"{what}: {path} is not a list")
    return tuple(str(v) for v in value)


def deployment_record(obj) -> Deployment:
    what, meta, spec = _with_spec(obj)
    roles = []
    for i, role in enumerate(spec.get("roles") or ()):
        if not isinstance(role, dict) or not role.get("name"):
            raise PluginError(f"{what}: spec.roles[{i}] has no name")
        roles.append(Role(
            name=role["name"],
            kind=str(role.get("kind") or "").lower(),
            replicas=role.get("replicas"),
            command=_strings(role.get("command"), what, f"spec.roles[{i}].command"),
            extra_args=_strings(role.get("extraArgs"), what, f"spec.roles[{i}].extraArgs"),
            env=tuple(role.get("env") or ()),
        ))
    kv = spec.get("kvCache")
    engine = spec.get("engine") or {}
    status = obj.get("status") or {}
    return Deployment(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        engine=engine.get("name"),
        engine_version=str(engine["version"]) if engine.get("version") is not None else None,
        binding=((kv or {}).get("poolRef") or {}).get("name") if isinstance(kv, dict) else None,
        kv_cache=kv is not None,
        roles=tuple(roles),
        status_dtype=((status.get("kvCache") or {}).get("domain") or {}).get("dtype"),
        image=engine.get("image"),
        labels=dict(meta.get("labels") or {}),
        status_roles=tuple(RoleStatus(r["name"], _count(r.get("replicas")), _count(r.get("readyReplicas")),
                                      _count(r.get("updatedReplicas")))
                           for r in status.get("roles") or () if isinstance(r, dict) and r.get("name")),
    )


def _count(value) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def binding_record(obj) -> Binding:
    what, meta, spec = _with_spec(obj)
    domain = spec.get("domain") or {}
    status = obj.get("status") or {}
    used_by = tuple((u.get("kind", ""), u.get("namespace", ""), u.get("name", ""))
                    for u in status.get("usedBy") or () if isinstance(u, dict))
    return Binding(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        pool=(spec.get("poolRef") or {}).get("name"),
        domain=domain.get("name") or "default",
        dtype=domain.get("dtype"),
        used_by=used_by,
        phase=status.get("phase", ""),
        labels=dict(meta.get("labels") or {}),
        created=str(meta.get("creationTimestamp") or ""),
    )


def setting_record(obj, source) -> Setting:
    what = _describe(obj)
    meta = _meta(obj, what)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return Setting(
        status_value=None if status.get("value") is None else str(status.get("value")),
        spec_value=None if spec.get("value") is None else str(spec.get("value")),
        editable=status.get("editable"),
        description=status.get("description") or "",
        sensitive=status.get("sensitive"),
        resource_version=meta.get("resourceVersion", ""),
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


def workload_record(obj) -> Workload:
    what = _describe(obj)
    meta = _meta(obj, what)
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = spec.get("template")
    if not isinstance(template, dict):
        raise PluginError(f"{what}: missing the Pod template")
    tmeta = template.get("metadata") or {}
    containers = (template.get("spec") or {}).get("containers")
    if not isinstance(containers, list):
        raise PluginError(f"{what}: missing the Pod template's containers")
    return Workload(
        kind=obj.get("kind"),
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        labels=dict(tmeta.get("labels") or {}),
        annotations=_kv_annotations(tmeta),
        containers=tuple(_slim_container(c, what) for c in containers),
    )


def is_setting(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("kind") == "Setting" and str(obj.get("apiVersion", "")).startswith(SETTING_GROUP + "/")
            and meta.get("name") == SETTING_NAME)
