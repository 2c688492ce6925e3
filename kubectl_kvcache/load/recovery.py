"""What `recover` plans from: the full objects around one Binding (its records drop fields the
plan copies), with the snapshot they were read with, and the recovery's record in the cluster
(a ConfigMap: what an earlier run of the same recovery decided, whether it turned the Setting off,
and its backups). Reads only: judging them is the recover command's (judge/checks, judge/recover);
the record is written by its executor (cli/flows/recovery_record.py)."""

from __future__ import annotations

import hashlib
import json

from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.load.cluster import load_cluster
from kubectl_kvcache.load.files import read_objects
from kubectl_kvcache.load.manifests import snapshot_of
from kubectl_kvcache.load import reader
from kubectl_kvcache.load.scope import Scope, resolve_namespace
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.record import Record

# -- recovery: the FULL objects around one Binding -----------------------------------------

def _template_opted_in(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    labels = (((spec.get("template") or {}).get("metadata")) or {}).get("labels") or {}
    return labels.get(api.INJECT_LABEL) == "true"


class Recovery(Record):
    """The full objects around one Binding (records drop fields a re-created object copies), and
    the snapshot read with them (what checks judge)."""

    __slots__ = ("namespace", "binding_name", "binding", "binding_gone", "bindings", "deployments", "workloads",
                 "snapshot", "backups", "notes", "record")
    __hash__ = None     # mutable: not hashable

    def __init__(self, namespace: str, binding_name: str, binding: dict | None, bindings: list[dict],
                 deployments: list[dict], workloads: list[dict], snapshot: records.Snapshot,
                 notes: list[str] | None = None):
        self.namespace = namespace
        self.binding_name = binding_name
        self.binding = binding              # the old Binding (from a backup when `binding_gone`)
        self.binding_gone = False           # already deleted by an earlier run (known from its backup)
        self.bindings = bindings            # Bindings whose domain claims are known (other namespaces too)
        self.deployments = deployments      # every ModelDeployment of the namespace
        self.workloads = workloads          # workload objects of the namespace whose template opts in
        self.snapshot = snapshot
        self.backups = []                   # objects an earlier run backed up (resume)
        self.notes = [] if notes is None else notes
        self.record = None                  # RecoveryRecord of an earlier run of this recovery (cluster only)


def load_recovery(connection: Connection, scope: Scope, binding_name, stdin=None, trace=None, backups=()):
    """What `recover` plans from, from files (-f) or the cluster: the snapshot and the full objects
    (the Binding, every Binding's domain claim, the namespace's ModelDeployments, opted-in
    workloads). `backups`: objects an earlier run backed up; one deleted since (the old Binding)
    is planned from its backup. Returns the Recovery and the client (None for files)."""
    if scope.files:
        found, client = _from_files(scope, binding_name, stdin), None
    else:
        client = reader.open_client(connection, trace)
        found = _from_cluster(client, connection, scope, binding_name)
        found.record = read_record(client, found.namespace, binding_name, found.binding)
    found.backups = list(backups) + (list(found.record.backups) if found.record else [])
    if found.binding is None:
        _from_backup(found)
    found.notes += found.snapshot.notes
    return found, client


def _from_files(scope, binding_name, stdin) -> Recovery:
    objects = list(read_objects(scope.files, stdin))
    namespace = resolve_namespace(scope) or _namespace_of(objects, binding_name)
    snapshot = snapshot_of(objects, scope.replace(namespace=namespace, workloads=True))
    snapshot.namespace = namespace
    full = [o for o, _, _ in objects]

    def of(res):
        return [o for o in full if o.get("kind") == res.kind and api.group_of(o) == res.group]
    bindings = of(api.BINDING)
    workloads = [dict(o) for res in api.WORKLOADS for o in of(res) if _namespace_or_default(o) == namespace and _template_opted_in(o)]
    return Recovery(namespace, binding_name, _named(bindings, namespace, binding_name), bindings,
                    [o for o in of(api.MODEL_DEPLOYMENT) if _namespace_or_default(o) == namespace], workloads, snapshot)


def _from_cluster(client, connection, scope, binding_name) -> Recovery:
    namespace = resolve_namespace(scope.replace(all_namespaces=False), client)
    chunk = connection.chunk_size
    snapshot = load_cluster(client, scope.replace(namespace=namespace, workloads=True), chunk=chunk)
    snapshot.namespace = namespace
    as_binding = _typed(api.BINDING, api.version_for(client, api.BINDING))
    notes = []
    try:
        bindings = client.list(api.collection_path(client, api.BINDING), as_binding,
                               chunk=chunk, what=f"list {api.BINDING.name} in all namespaces")
    except Forbidden:
        bindings = client.list(api.collection_path(client, api.BINDING, namespace), as_binding,
                               chunk=chunk, what=f"list {api.BINDING.name} in namespace {namespace}")
        notes.append("Bindings of other namespaces could not be listed (RBAC): a domain claimed there is not "
                     "seen; the API server refuses the new Binding if its domain is taken")
    deployments = client.list(api.collection_path(client, api.MODEL_DEPLOYMENT, namespace),
                              _typed(api.MODEL_DEPLOYMENT, api.version_for(client, api.MODEL_DEPLOYMENT)),
                              chunk=chunk, what=f"list {api.MODEL_DEPLOYMENT.name} in namespace {namespace}")
    workloads = []
    for res in api.WORKLOADS:
        workloads += client.list(api.collection_path(client, res, namespace),
                                 lambda o, r=res: (dict(o, kind=r.kind, apiVersion=r.api_version())
                                                   if _template_opted_in(o) else None),
                                 chunk=chunk, what=f"list {res.name} in namespace {namespace}")
    return Recovery(namespace, binding_name, _named(bindings, namespace, binding_name), bindings, deployments,
                    workloads, snapshot, notes)


def _named(bindings, namespace, name):
    return next((b for b in bindings if _namespace_or_default(b) == namespace and b["metadata"].get("name") == name), None)


def _from_backup(found: Recovery):
    """The old Binding deleted by an earlier run: planned from its backup, and judged as if present."""
    saved = [o for o in found.backups if o.get("kind") == api.BINDING_KIND and _namespace_or_default(o) == found.namespace
             and (o.get("metadata") or {}).get("name") == found.binding_name]
    if saved:
        found.binding, found.binding_gone = saved[-1], True
        found.snapshot.bindings[(found.namespace, found.binding_name)] = records.binding_record(saved[-1])


def _namespace_of(objects, binding_name):
    """Files without -n: the namespace of the one Binding of that name in them ('default' when
    none is); several is an error."""
    found = sorted({_namespace_or_default(o) for o, _, _ in objects if o.get("kind") == api.BINDING_KIND
                    and (o.get("metadata") or {}).get("name") == binding_name})
    if len(found) > 1:
        raise PluginError(f"KVCachePoolBinding {binding_name!r} is in several namespaces of the input "
                          f"({', '.join(found)}): pass -n")
    return found[0] if found else "default"


def _typed(res, version):
    """List items as objects: with their kind and apiVersion (a list's items may omit them)."""
    def convert(obj):
        obj.setdefault("kind", res.kind)
        obj.setdefault("apiVersion", res.api_version(version))
        return obj
    return convert


def _namespace_or_default(obj):
    return (obj.get("metadata") or {}).get("namespace") or "default"


# -- the recovery's record: a ConfigMap in the Binding's namespace ---------------------------

RECORD_PREFIX = "kvcache-recover-"
RECORD_KEY = "recovery.json"        # the state: target, whether this recovery turned the Setting off
BACKUP_PREFIX = "backup."           # one key per backed-up object (its JSON, managedFields dropped)
RECORD_LABEL = ("app.kubernetes.io/managed-by", "kubectl-kvcache")
RECORD_ANNOTATION = api.ANNOTATION_PREFIX + "recovery-of"
CONFIG_MAP = api.Resource("ConfigMap", "", "configmaps", "v1")
NAME_MAX = 253


def record_name(binding_name: str) -> str:
    """`kvcache-recover-<binding>`; a name too long for a ConfigMap is cut and ends in a hash."""
    name = RECORD_PREFIX + binding_name
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(binding_name.encode()).hexdigest()[:10]
    return f"{name[:NAME_MAX - 11].rstrip('-.')}-{digest}"


def record_path(client, namespace, binding_name) -> str:
    return api.object_path(client, CONFIG_MAP, namespace, record_name(binding_name))


class RecoveryRecord(Record):
    """What an earlier run of this recovery wrote: the old Binding's uid, the target it moves to
    (name, domain, dtype, strategy), whether it turned the Setting off and has not turned it on
    again, whether it finished, and the objects it backed up."""

    __slots__ = ("name", "namespace", "binding", "uid", "target", "setting_turned_off", "finished", "backups",
                 "resource_version")
    __hash__ = None

    def __init__(self, name, namespace, binding, uid, target, setting_turned_off, finished, backups,
                 resource_version=None):
        self.name, self.namespace, self.binding, self.uid = name, namespace, binding, uid
        self.target = target                            # {name, domain, dtype, strategy}
        self.setting_turned_off = setting_turned_off
        self.finished = finished
        self.backups = backups
        self.resource_version = resource_version

    def state(self) -> dict:
        return {"binding": {"namespace": self.namespace, "name": self.binding, "uid": self.uid},
                "target": self.target, "settingTurnedOff": self.setting_turned_off, "finished": self.finished}


def parse_record(obj: dict) -> RecoveryRecord:
    """A record ConfigMap as read; a value that is not what the executor writes is an error
    naming the ConfigMap and the key."""
    meta = obj.get("metadata") or {}
    where = f"ConfigMap {meta.get('namespace')}/{meta.get('name')}"
    data = obj.get("data") or {}
    try:
        state = json.loads(data.get(RECORD_KEY) or "")
        binding, target = state["binding"], state["target"]
        if not (isinstance(binding, dict) and isinstance(target, dict)):
            raise ValueError("binding and target must be objects")
        backups = [json.loads(v) for k, v in sorted(data.items()) if k.startswith(BACKUP_PREFIX)]
    except (ValueError, KeyError, TypeError) as exc:
        raise PluginError(f"{where}: data.{RECORD_KEY} or a {BACKUP_PREFIX}* key is not the recovery record "
                          f"kubectl kvcache recover writes ({exc}); delete the ConfigMap to plan anew") from exc
    return RecoveryRecord(meta.get("name"), meta.get("namespace"), binding.get("name"), binding.get("uid"),
                          {k: target.get(k) for k in ("name", "domain", "dtype", "strategy")},
                          state.get("settingTurnedOff") is True, state.get("finished") is True,
                          [b for b in backups if isinstance(b, dict)], meta.get("resourceVersion"))


def read_record(client, namespace, binding_name, binding) -> RecoveryRecord | None:
    """The record of this recovery, or None: none exists, or it is a finished recovery of an
    earlier Binding of the same name (another uid). An unfinished one of another uid is an error."""
    path = record_path(client, namespace, binding_name)
    what = f"get configmaps {record_name(binding_name)} in namespace {namespace}"
    try:
        obj = client.get(path, what=what)
    except NotFound:
        return None
    except Forbidden as exc:
        raise Forbidden(f"{exc} (recover keeps the state of a recovery in that ConfigMap, so that a rerun from "
                        f"anywhere continues it: it needs get, create and patch on configmaps in namespace "
                        f"{namespace})") from exc
    record = parse_record(obj)
    uid = ((binding or {}).get("metadata") or {}).get("uid")
    if binding is not None and record.uid and uid and uid != record.uid:
        if record.finished:
            return None
        raise PluginError(f"ConfigMap {namespace}/{record.name} records an unfinished recovery of an earlier "
                          f"KVCachePoolBinding {binding_name} (uid {record.uid}, now {uid}): review it, then "
                          f"delete the ConfigMap to plan anew")
    return record
