"""Compact, typed records of just the fields the plugin reads (built from raw JSON by decode.py),
and what they mean: which Pods a ModelDeployment controls or the injection webhook serves, the
container it appends to, the Setting when it cannot be read, a Snapshot of one read."""

from __future__ import annotations

from kubectl_kvcache.operator.api import ANNOTATION_PREFIX, GROUP, INJECT_LABEL
from kubectl_kvcache.record import Record


class Pod(Record):
    __slots__ = ("namespace", "name", "labels", "annotations", "owner", "containers", "exit_codes", "phase",
                 "created", "deleting", "states", "node")

    def __init__(self, namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str],
                 owner: tuple[str, str, str] | None, containers: tuple[dict, ...], exit_codes: dict[str, int],
                 phase: str = "", created: str = "", deleting: str = "", states: dict[str, dict] | None = None,
                 node: str = ""):
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
        self.node = node                    # spec.nodeName: where the scheduler put it ("" : not scheduled)

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
    __slots__ = ("name", "kind", "replicas", "command", "extra_args", "env", "image")

    def __init__(self, name: str, kind: str, replicas: int | None, command: tuple[str, ...],
                 extra_args: tuple[str, ...], env: tuple[dict, ...], image: str | None = None):
        self.image = image      # spec.roles[].image: when set, what the operator runs (a stated image always wins)
        self.name = name
        self.kind = kind
        self.replicas = replicas
        self.command = command
        self.extra_args = extra_args
        self.env = env


class RoleStatus(Record):
    """What the operator reports for a role in status.roles[], exactly the fields its Go type has
    (api/worker/v1alpha1/model_deployment.go, ModelDeploymentRoleStatus): instances desired and
    ready, quotaReserved, unmanaged, kind, assignedFlavors. It has no replicas/updated counts: how
    far a rollout is, is the ReplicasUpToDate condition (Deployment.rollout)."""

    __slots__ = ("name", "desired", "ready", "quota_reserved", "unmanaged", "kind", "assigned_flavors")

    def __init__(self, name: str, desired: int | None, ready: int | None, quota_reserved: int | None = None,
                 unmanaged: bool | None = None, kind: str | None = None, assigned_flavors: tuple[str, ...] = ()):
        self.name = name
        self.desired = desired
        self.ready = ready
        self.quota_reserved = quota_reserved
        self.unmanaged = unmanaged
        self.kind = kind
        self.assigned_flavors = assigned_flavors


class Condition(Record):
    """One status condition as the operator writes it (type, status, reason, message); the
    generation it was written for when the object says (observedGeneration), else None; when its
    status last changed (lastTransitionTime, "" when not written)."""

    __slots__ = ("type", "status", "reason", "message", "observed_generation", "since")

    def __init__(self, type: str, status: str, reason: str = "", message: str = "",
                 observed_generation: int | None = None, since: str = ""):
        self.type = type
        self.status = status
        self.reason = reason
        self.message = message
        self.observed_generation = observed_generation
        self.since = since


class KVCacheStatus(Record):
    """status.kvCache of a ModelDeployment (ModelDeploymentKVCacheStatus: binding, pool, domain
    name/blockSize/dtype), as the operator projects it from the Binding's spec. Written on every
    pass that can read the Binding (usable or not) and KEPT when the Binding is gone
    (model_deployment_binding.go, resolveModelDeploymentDomain/observeModelDeploymentDomain): the
    last Binding the operator read, not necessarily the current one; DomainRegistered says which."""

    __slots__ = ("binding", "pool", "domain", "block_size", "dtype")

    def __init__(self, binding: str | None, pool: str | None, domain: str | None, block_size: int | None,
                 dtype: str | None):
        self.binding = binding
        self.pool = pool
        self.domain = domain
        self.block_size = block_size
        self.dtype = dtype


class Deployment(Record):
    __slots__ = ("namespace", "name", "engine", "engine_version", "binding", "kv_cache", "roles", "status_dtype",
                 "labels", "status_roles", "rollout", "generation", "uid", "spec_written", "deleting",
                 "domain_registered", "kv_status")
    _uncompared = ("labels",)

    def __init__(self, namespace: str, name: str, engine: str | None, engine_version: str | None,
                 binding: str | None, kv_cache: bool, roles: tuple[Role, ...], status_dtype: str | None = None,
                 labels: dict[str, str] | None = None,
                 status_roles: tuple[RoleStatus, ...] = (), rollout: Condition | None = None,
                 generation: int | None = None, uid: str | None = None, spec_written: str | None = None,
                 deleting: str = "",
                 domain_registered: Condition | None = None, kv_status: KVCacheStatus | None = None):
        self.namespace = namespace
        self.name = name
        self.engine = engine                # as written (vLLM, vllm, ...)
        self.engine_version = engine_version
        self.binding = binding              # spec.kvCache.poolRef.name
        self.kv_cache = kv_cache            # spec.kvCache is set
        self.roles = roles
        self.status_dtype = status_dtype
        self.labels = {} if labels is None else labels     # for -l on roles/check
        self.status_roles = status_roles
        self.rollout = rollout              # status.conditions ReplicasUpToDate (None: not written)
        self.generation = generation        # metadata.generation
        self.uid = uid                      # metadata.uid: its events are selected by it (load/events.py)
        self.spec_written = spec_written    # the last write of anything but its status, as the API server
                                            # recorded it (metadata.managedFields[].time; None: not recorded)
        self.deleting = deleting            # metadata.deletionTimestamp: being deleted
        self.domain_registered = domain_registered  # status.conditions DomainRegistered: the operator's own
                                                    # verdict on the Binding (None: not written)
        self.kv_status = kv_status          # status.kvCache (None: not written): the last Binding it read

    def role_status(self, name):
        return next((r for r in self.status_roles if r.name == name), None)

    def role(self, name):
        return next((r for r in self.roles if r.name == name), None)


class Binding(Record):
    __slots__ = ("namespace", "name", "pool", "domain", "dtype", "used_by", "phase", "labels", "created", "deleting",
                 "readiness")
    _uncompared = ("labels",)

    def __init__(self, namespace: str, name: str, pool: str | None, domain: str, dtype: str | None,
                 used_by: tuple[tuple[str, str, str], ...] = (), phase: str = "",
                 labels: dict[str, str] | None = None, created: str = "", deleting: str = "", readiness=None):
        self.namespace = namespace
        self.name = name
        self.pool = pool
        self.domain = domain
        self.dtype = dtype
        self.used_by = used_by
        self.phase = phase
        self.labels = {} if labels is None else labels     # for -l on bindings/check
        self.created = created              # metadata.creationTimestamp
        self.deleting = deleting            # metadata.deletionTimestamp: being deleted
        self.readiness = readiness          # binding_status.Readiness: usable by a deployment (None: not read)

    @property
    def releasing(self) -> bool:
        """Being deleted and held by nothing: the pool reconciler no longer counts its domain claim
        (kv_cache_pool.go: kvCachePoolBindingIsReleasing)."""
        return bool(self.deleting) and not self.used_by


class Pool(Record):
    """A KVCachePool (cluster-scoped): the masters (KVCacheBackends) it names in spec.backends, and
    what the injection webhook reads of its status (api/worker/v1alpha1/kv_cache_pool.go:
    status.clientEndpoint, the QuotaLedgerAvailable condition; pod_kv_cache_resolve.go)."""

    __slots__ = ("name", "backends", "client_endpoint", "ledger")

    def __init__(self, name: str, backends: tuple[str, ...], client_endpoint: str = "",
                 ledger: tuple[str, str, str] | None = None):
        self.name = name
        self.backends = backends
        self.client_endpoint = client_endpoint    # status.clientEndpoint ('' until published)
        self.ledger = ledger                      # QuotaLedgerAvailable (status, reason, message); None: absent


class Setting(Record):
    __slots__ = ("status_value", "spec_value", "editable", "description", "sensitive", "resource_version",
                 "source", "annotations")

    def __init__(self, status_value: str | None, spec_value: str | None, editable: bool | None, description: str,
                 sensitive: bool | None, resource_version: str, source: str, annotations: dict | None = None):
        self.status_value = status_value    # what the operator reports; None when unset
        self.spec_value = spec_value
        self.editable = editable
        self.description = description
        self.sensitive = sensitive
        self.resource_version = resource_version
        self.source = source                # cluster | file | default
        self.annotations = {} if annotations is None else annotations   # recover's mark (api.TURNED_OFF_BY)


class Workload(Record):
    __slots__ = ("kind", "namespace", "name", "labels", "annotations", "containers", "own_labels")

    def __init__(self, kind: str, namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str],
                 containers: tuple[dict, ...], own_labels: dict[str, str] | None = None):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.labels = labels            # its Pod template's (what its Pods will carry)
        self.annotations = annotations
        self.containers = containers
        self.own_labels = {} if own_labels is None else own_labels     # its metadata.labels (a policy's selector)


class RecoveryState(Record):
    """A recovery's record (ConfigMap kvcache-recover-<binding>, load/recovery_state.py) as verify,
    check and bindings read it: whose recovery (`binding`, in `namespace`), whether it `finished`,
    the step a run began last (`progress`: {step, steps, doing}, None when the record does not
    say), whether that run turned the Setting off (its word only), the run holding it now (`held`:
    who and until when, None when no lease runs), and `problem`: why it is not a record recover
    writes (then nothing else in it is read)."""

    __slots__ = ("namespace", "name", "binding", "finished", "progress", "setting_turned_off", "held", "problem")
    __hash__ = None     # progress is a dict

    def __init__(self, namespace: str | None, name: str | None, binding: str | None, finished: bool,
                 progress: dict | None, setting_turned_off: bool | None, held: str | None, problem: str | None):
        self.namespace = namespace
        self.name = name
        self.binding = binding
        self.finished = finished
        self.progress = progress
        self.setting_turned_off = setting_turned_off
        self.held = held
        self.problem = problem


class Snapshot(Record):
    __slots__ = ("pods", "deployments", "bindings", "setting", "workloads", "source", "namespace", "notes",
                 "missing_namespaces", "missing_pods", "server", "pools", "recoveries", "refusals", "gpus",
                 "origins", "unread_opt_ins")
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
        self.missing_namespaces: tuple[str, ...] = ()   # namespaces asked for that the cluster says do not exist
        self.missing_pods: tuple[str, ...] = ()         # Pods named (verify POD...) that do not exist: NotFound, exit 1
        self.server = None                  # the API server it was read from (None: files)
        # KVCachePools by name; None: not read (the command does not need them, or RBAC refused them).
        # From files they are the input's: a pool not in it is not known to be absent (absent()).
        self.pools: dict[str, Pool] | None = None
        # recovery records in scope (Scope.recoveries); None: not read (not asked for, or RBAC refused them)
        self.recoveries: list[RecoveryState] | None = None
        # A controller's latest word that it could not create an object's Pods (load/events.py
        # Refusal), by (namespace, kind, name): read only for what is short of Pods, on a cluster.
        self.refusals: dict = {}
        # The GPU of each Node read (engine Gpu by Node name; judge/gpu.py): only where a command
        # reads the Nodes its Pods run on (recover: a dtype is proposed only where it starts).
        self.gpus: dict = {}
        # Where each object read from files starts: (kind, namespace, name) -> Origin (load/manifests);
        # empty for a cluster. Kept beside the records, not in them: a record is the object's meaning.
        self.origins: dict = {}
        # Objects of kinds the plugin does not read (a LeaderWorkerSet, ...) whose Pod templates opt
        # into injection, as (namespace, kind, name): from files only (a cluster's are its Pods).
        self.unread_opt_ins: list = []

    def absent(self, namespace) -> str:
        """How to say an object was not there: saved files are an input, a cluster is not."""
        return "is not in the input" if self.source == "file" else f"was not found in namespace {namespace}"


class Origin(Record):
    """Where a saved object starts: its file as given to -f ('<stdin>' for standard input) and
    the 1-based line of its first key (None: not known, e.g. an object inside a plain YAML list)."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int | None = None):
        self.file = file
        self.line = line


def in_namespace(namespace, wanted) -> bool:
    """Whether an object in `namespace` is in scope when `wanted` was asked for (None: all)."""
    return wanted is None or namespace == wanted


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
