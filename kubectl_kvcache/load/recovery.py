"""What `recover` plans from: the full objects around one Binding (its records drop fields the
plan copies), with the snapshot they were read with, and the recovery's record in the cluster
(a ConfigMap: what an earlier run of the same recovery decided, whether it turned the Setting off,
and its backups). Reads only: judging them is the recover command's (judge/checks, judge/recover);
the record is written by its executor (cli/flows/recovery_record.py)."""

from __future__ import annotations

import os

from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.load.cluster import load_cluster
from kubectl_kvcache.load.files import read_objects
from kubectl_kvcache.load.manifests import snapshot_of
from kubectl_kvcache.load import reader
from kubectl_kvcache.load.scope import Scope, resolve_namespace
from kubectl_kvcache.operator import api, decode, paths
from kubectl_kvcache.operator.recovery_inputs import Recovery
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.load.recovery_state import (BACKUP_PREFIX, CONFIG_MAP, DOING_MAX, NAME_MAX,  # noqa: F401 (the record's format, read here by recover's modules)
                                                  RECORD_ANNOTATION, RECORD_KEY, RECORD_LABEL, RECORD_PREFIX, Backup, RecoveryRecord,
                                                  format_time, parse_record, parse_time, record_name)
from kubectl_kvcache.record import Record

# -- recovery: the FULL objects around one Binding -----------------------------------------

def _template_opted_in(obj):
    labels = ((paths.pod_template(obj) or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(api.INJECT_LABEL) == "true"


def load_recovery(connection: Connection, scope: Scope, binding_name, stdin=None, trace=None, backups=(),
                  writes=True):
    """What `recover` plans from, from files (-f) or the cluster: the snapshot and the full objects
    (the Binding, every Binding's domain claim, the namespace's ModelDeployments, opted-in
    workloads), the recovery's record, and every backup as read (`backups`: from --backup-dir),
    each with where it was read. Nothing read back is trusted here: which backups may be restored
    is the recover command's judgement (judge/anchor.py); then from_backup(). Returns the Recovery
    and the client (None for files). `writes` False (a plan that will not be applied): a record
    that RBAC does not let this user read is passed over with a note, so a reviewer with read
    rights sees the plan (made from the cluster alone, as the record is only a hint)."""
    if scope.files:
        found, client = _from_files(scope, binding_name, stdin), None
    else:
        client = reader.open_client(connection, trace)
        found = _from_cluster(client, connection, scope, binding_name)
        try:
            found.record = read_record(client, found.namespace, binding_name, found.binding)
        except Forbidden:
            if writes:
                raise
            found.notes.append(f"cannot read the recovery's record (ConfigMap {found.namespace}/"
                               f"{record_name(binding_name)}: forbidden): the plan is made from the cluster alone; "
                               f"--apply needs get, create and patch on configmaps in namespace {found.namespace}")
    found.backups = [b if isinstance(b, Backup) else Backup(b, "a backup") for b in backups] + (
        list(found.record.backups) if found.record and not found.record.stale else [])
    found.notes += found.snapshot.notes
    return found, client


def read_backup_dir(path) -> list[Backup]:
    """The objects an earlier run backed up in `path` (--backup-dir; nothing when it does not exist
    yet), each with its file."""
    if not path or not os.path.isdir(path):
        return []
    if not any(n.endswith(".json") for n in os.listdir(path)):
        return []
    return [Backup(o, f"file {where}") for o, where, _ in read_objects([path]) if o.get("kind") != "RecoveryPlan"]


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
    found = Recovery(namespace, binding_name, _named(bindings, namespace, binding_name), bindings,
                     [o for o in of(api.MODEL_DEPLOYMENT) if _namespace_or_default(o) == namespace], workloads, snapshot)
    found.objects = full
    found.pools = {(o.get("metadata") or {}).get("name"): o for o in of(api.POOL)}
    found.backends = {(o.get("metadata") or {}).get("name"): o for o in of(api.BACKEND)}
    return found


def _from_cluster(client, connection, scope, binding_name) -> Recovery:
    namespace = resolve_namespace(scope.replace(all_namespaces=False), client) or "default"
    chunk = connection.chunk_size
    snapshot = load_cluster(client, scope.replace(namespace=namespace, workloads=True), chunk=chunk)
    snapshot.namespace = namespace
    as_binding = _typed(api.BINDING, api.version_for(client, api.BINDING))
    notes, everywhere = [], True
    try:
        bindings = client.list(api.collection_path(client, api.BINDING), as_binding,
                               chunk=chunk, what=f"list {api.BINDING.name} in all namespaces")
    except Forbidden:
        everywhere = False
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
    found = Recovery(namespace, binding_name, _named(bindings, namespace, binding_name), bindings, deployments,
                     workloads, snapshot, notes)
    found.bindings_everywhere = everywhere
    found.pools, found.backends = (_cluster_scoped(client, res, chunk, notes) for res in (api.POOL, api.BACKEND))
    found.pools_complete = True
    return found


def _cluster_scoped(client, res, chunk, notes) -> dict | None:
    """Every object of a cluster-scoped kind by name (what the Binding webhook reads), or None
    with a note when RBAC or the API server does not let them be listed."""
    try:
        items = client.list(api.collection_path(client, res), _typed(res, api.version_for(client, res)),
                            chunk=chunk, what=f"list {res.name}")
    except (Forbidden, NotFound) as exc:
        notes.append(f"{res.name} could not be listed ({exc}): the operator's rules that read them are left to "
                     f"the API server's dry run")
        return None
    return {(o.get("metadata") or {}).get("name"): o for o in items}


def _named(bindings, namespace, name):
    return next((b for b in bindings if _namespace_or_default(b) == namespace and b["metadata"].get("name") == name), None)


def from_backup(found: Recovery, backups: list[dict]):
    """The old Binding deleted by an earlier run: planned from its backup (one the recover command
    verified), and judged as if present."""
    if found.binding is not None:
        return
    saved = [o for o in backups if o.get("kind") == api.BINDING_KIND and _namespace_or_default(o) == found.namespace
             and (o.get("metadata") or {}).get("name") == found.binding_name]
    if saved:
        found.binding, found.binding_gone = saved[-1], True
        found.snapshot.bindings[(found.namespace, found.binding_name)] = decode.binding_record(saved[-1])


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


# -- what points at a deployment by name (side-by-side renames it) ----------------------------

SERVICE = api.Resource("Service", "", "services", "v1")
HPA = api.Resource("HorizontalPodAutoscaler", "autoscaling", "horizontalpodautoscalers", "v2")
PDB = api.Resource("PodDisruptionBudget", "policy", "poddisruptionbudgets", "v1")
INGRESS = api.Resource("Ingress", "networking.k8s.io", "ingresses", "v1")
HTTP_ROUTE = api.Resource("HTTPRoute", "gateway.networking.k8s.io", "httproutes", "v1")
REFERRERS = (SERVICE, HPA, PDB, INGRESS, HTTP_ROUTE)
OPTIONAL = ("HTTPRoute",)       # served only where the Gateway API's CRDs are installed
WORDS = {"Service": "Services", "HorizontalPodAutoscaler": "HorizontalPodAutoscalers",
         "PodDisruptionBudget": "PodDisruptionBudgets", "Ingress": "Ingresses", "HTTPRoute": "HTTPRoutes"}
REFERRER_LIMIT = 2000           # objects kept per kind: what a plan names stays readable and bounded


class Referrers(Record):
    """The namespace's objects that may address a deployment by name or by its Pods' labels,
    slimmed to what decides it (metadata's name and namespace, spec.selector, scaleTargetRef,
    backends), with what could not be read: `unchecked` (a list RBAC refused, a kind beyond the
    limit) and `not_served` (an API the cluster does not serve: nothing of it can point)."""

    __slots__ = ("objects", "unchecked", "not_served", "source")
    __hash__ = None

    def __init__(self, objects: dict, unchecked: list[str], not_served: list[str], source: str):
        self.objects = objects          # kind -> [slim object]
        self.unchecked = unchecked
        self.not_served = not_served
        self.source = source            # "cluster" | "files"


def _slim(obj, res):
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    keep = {"Service": ("selector",), "HorizontalPodAutoscaler": ("scaleTargetRef",),
            "PodDisruptionBudget": ("selector",), "Ingress": ("defaultBackend", "rules"),
            "HTTPRoute": ("rules",)}[res.kind]
    return {"kind": res.kind, "apiVersion": obj.get("apiVersion") or res.api_version(),
            "metadata": {"namespace": meta.get("namespace"), "name": meta.get("name")},
            "spec": {k: spec[k] for k in keep if k in spec}}


def load_referrers(found: Recovery, client, chunk=None) -> Referrers:
    """The Services, HorizontalPodAutoscalers, PodDisruptionBudgets, Ingresses and HTTPRoutes of
    the recovery's namespace (from the files, or listed: paged, at most REFERRER_LIMIT per kind). A
    list the user may not make is noted, never a failure (the plan is still right, it only names
    less); an API group the cluster does not serve (404 on discovery) is "not served"."""
    ns = found.namespace
    objects: dict[str, list] = {}
    if client is None:
        read: list[dict] = found.objects or []
        objects = {res.kind: [_slim(o, res) for o in read if o.get("kind") == res.kind
                              and api.group_of(o) == res.group and _namespace_or_default(o) == ns]
                   for res in REFERRERS}
        return Referrers(objects, [], [], "files")
    unchecked: list[str] = []
    not_served: list[str] = []
    for res in REFERRERS:
        what = f"list {res.name} in namespace {ns}"
        if res.kind in OPTIONAL:
            try:
                served = client.served(res.group)
            except NotFound:
                served = {"versions": {}}
            except Forbidden:
                unchecked.append(f"could not check {WORDS[res.kind]}: forbidden (discover the API group {res.group})")
                continue
            if res.plural not in served["versions"].get(res.version, ()):
                not_served.append(f"{WORDS[res.kind]} ({res.api_version()}): not served by the cluster")
                continue
        kept: list[dict] = []
        over = [0]

        def convert(o, r=res, kept=kept, over=over):
            if len(kept) >= REFERRER_LIMIT:
                over[0] += 1
                return None
            kept.append(_slim(o, r))
            return None
        try:
            client.list(api.collection_path(client, res, ns), convert, chunk=chunk or 500, what=what)
        except Forbidden:
            unchecked.append(f"could not check {WORDS[res.kind]}: forbidden ({what})")
            continue
        except NotFound:
            not_served.append(f"{WORDS[res.kind]} ({res.api_version()}): not served by the cluster")
            continue
        if over[0]:
            unchecked.append(f"could not check {over[0]} of the {REFERRER_LIMIT + over[0]} {WORDS[res.kind]} of namespace "
                             f"{ns}: only the first {REFERRER_LIMIT} are read")
        objects[res.kind] = kept
    return Referrers(objects, unchecked, not_served, "cluster")


# -- the recovery's record: a ConfigMap in the Binding's namespace (its format: recovery_state.py)


def record_path(client, namespace, binding_name) -> str:
    return api.object_path(client, CONFIG_MAP, namespace, record_name(binding_name))


def read_record(client, namespace, binding_name, binding) -> RecoveryRecord | None:
    """The record of this recovery, or None when none exists. A finished recovery of an earlier
    Binding of the same name (another uid) is returned stale; an unfinished one of another uid, or
    one naming another Binding, is an error."""
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
    return check_record(parse_record(obj), namespace, binding_name, binding)


def check_record(record: RecoveryRecord, namespace, binding_name, binding) -> RecoveryRecord:
    if record.binding != binding_name or (record.namespace is not None and record.namespace != namespace):
        raise PluginError(f"{record.ref}: data.{RECORD_KEY} names KVCachePoolBinding {namespace}/{record.binding}, "
                          f"not {namespace}/{binding_name}: not this recovery's record; nothing was changed: review "
                          f"it, then delete the ConfigMap to plan anew")
    uid = ((binding or {}).get("metadata") or {}).get("uid")
    if binding is not None and record.uid and uid and uid != record.uid:
        if record.finished:
            record.stale = True
            return record
        raise PluginError(f"{record.ref} records an unfinished recovery of an earlier KVCachePoolBinding "
                          f"{binding_name} (uid {record.uid}, now {uid}): nothing was changed: review it, then "
                          f"delete the ConfigMap to plan anew")
    return record


def active_records(client, chunk) -> list[RecoveryRecord]:
    """Recovery records held by a run whose lease has not expired, in every namespace (what
    `setting on|off` tells about); one not readable as a record, or a list RBAC refuses, is left out
    (this only feeds a note)."""
    def convert(obj):
        try:
            record = parse_record(obj)
        except PluginError:
            return None
        return record if record.active() else None
    try:
        return client.list(api.collection_path(client, CONFIG_MAP), convert,
                           selector=f"{RECORD_LABEL[0]}={RECORD_LABEL[1]}", chunk=chunk,
                           what="list configmaps in all namespaces")
    except (Forbidden, NotFound):
        return []
