"""What `recover` plans from: the full objects around one Binding (its records drop fields the
plan copies), with the snapshot they were read with. Reads only: judging them is the recover
command's (judge/checks, judge/recover)."""

from __future__ import annotations

from kubectl_kvcache.errors import Forbidden, PluginError
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
                 "snapshot", "backups", "notes")
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
    found.backups = list(backups)
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
    workloads = [dict(o) for res in api.WORKLOADS for o in of(res) if _ns(o) == namespace and _template_opted_in(o)]
    return Recovery(namespace, binding_name, _named(bindings, namespace, binding_name), bindings,
                    [o for o in of(api.MODEL_DEPLOYMENT) if _ns(o) == namespace], workloads, snapshot)


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
    return next((b for b in bindings if _ns(b) == namespace and b["metadata"].get("name") == name), None)


def _from_backup(found: Recovery):
    """The old Binding deleted by an earlier run: planned from its backup, and judged as if present."""
    saved = [o for o in found.backups if o.get("kind") == api.BINDING_KIND and _ns(o) == found.namespace
             and (o.get("metadata") or {}).get("name") == found.binding_name]
    if saved:
        found.binding, found.binding_gone = saved[-1], True
        found.snapshot.bindings[(found.namespace, found.binding_name)] = records.binding_record(saved[-1])


def _namespace_of(objects, binding_name):
    """Files without -n: the namespace of the one Binding of that name in them ('default' when
    none is); several is an error."""
    found = sorted({_ns(o) for o, _, _ in objects if o.get("kind") == api.BINDING_KIND
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


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace") or "default"
