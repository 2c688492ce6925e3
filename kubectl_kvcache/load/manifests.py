"""Saved objects to a snapshot: the records of the objects in scope, the same a cluster gives."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.errors import InvalidObject, PluginError
from kubectl_kvcache.load import recovery_state
from kubectl_kvcache.load.files import MAX_DEPTH_MESSAGE, read_objects
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.operator import api, decode, fields, records

# Kinds a saved cluster commonly holds that the snapshot does not read: not worth a note (recover
# reads Services, autoscalers, budgets, ingresses and routes itself: load/recovery.load_referrers).
_KNOWN_UNUSED = {"KVCacheBackend", "Namespace", "Service", "ConfigMap", "Event",
                 "HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress", "HTTPRoute"}
WORKLOADS_SKIPPED = ("--skip-workloads: the Pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, "
                     "Jobs and CronJobs were not read, so their injection opt-ins are not checked")


def _object_name(obj, location):
    name = fields.describe(obj)
    return name if " " in name or not location else f"{name} at {location}"


# The namespaced kinds the snapshot reads (KVCachePool is cluster-scoped; the Setting's namespace is
# never read: decode.is_setting knows it by its name).
_NAMESPACED = {("Pod", "")} | {(api.MD_KIND, api.MODEL_DEPLOYMENT.group), (api.BINDING_KIND, api.BINDING.group)} | {
    (r.kind, r.group) for r in api.WORKLOADS}


def in_namespace(obj, namespace):
    """`obj` with `namespace` when it is of a namespaced kind the snapshot reads and carries none
    (no metadata.namespace, or an empty one), as kubectl's builder puts an object read with -f in
    the -n namespace (cli-runtime resource/visitor.go SetNamespace/RequireNamespace: `len(
    info.Namespace) == 0` takes it, cluster-scoped kinds are left alone); a copy, the input kept.
    Anything else (another namespace, a malformed metadata) is left for the reader to judge."""
    if namespace is None:
        return obj
    meta = obj.get("metadata")
    if meta.__class__ is not dict or meta.get("namespace") not in (None, "") or \
            (obj.get("kind"), api.group_of(obj)) not in _NAMESPACED:
        return obj
    return {**obj, "metadata": {**meta, "namespace": namespace}}


def _add_object(obj, scope, result, ignored, intern, read_at=None, origin=None):
    """Add the record of `obj` to `result`; with `origin` (where it starts in its file), keep that
    in `result.origins` by kind, namespace and name, beside the record (the first one wins, as
    the first record of a name is the one judged)."""
    obj = in_namespace(obj, scope.namespace)
    named = _add_record(obj, scope, result, ignored, intern, read_at)
    if origin is not None and named is not None:
        result.origins.setdefault((obj.get("kind"),) + named, origin)


def _add_record(obj, scope, result, ignored, intern, read_at) -> tuple | None:
    """The (namespace, name) of the record added (None: not one the snapshot keeps by name)."""
    named: tuple | None = None
    kind = obj.get("kind")
    group = api.group_of(obj)
    if kind == "Pod" and group == "":
        record = decode.pod_record(obj, intern)
        if (records.in_namespace(record.namespace, scope.namespace)
                and (not scope.names or record.name in scope.names)
                and label_selector.matches(record.labels, scope.selector)):
            result.pods.append(record)
        named = (record.namespace, record.name)
    elif kind == api.MD_KIND and group == api.MODEL_DEPLOYMENT.group:
        record = decode.deployment_record(obj)
        result.deployments[(record.namespace, record.name)] = record
        named = (record.namespace, record.name)
    elif kind == api.BINDING_KIND and group == api.BINDING.group:
        record = decode.binding_record(obj)
        result.bindings[(record.namespace, record.name)] = record
        named = (record.namespace, record.name)
    elif kind == api.POOL_KIND and group == api.POOL.group:
        record = decode.pool_record(obj)
        if result.pools is None:
            result.pools = {}
        result.pools[record.name] = record
        named = (None, record.name)
    elif kind == api.SETTING_KIND and group == api.SETTING.group:
        meta = obj.get("metadata")
        if meta.__class__ is not dict or meta.get("name").__class__ is not str or not meta.get("name"):
            # A Setting whose metadata (or name) is missing or malformed is bad input, not "some other
            # Setting": setting_record raises, naming the object and the field.
            decode.setting_record(obj, "file")
        if decode.is_setting(obj):
            result.setting = decode.setting_record(obj, "file")
            named = (meta.get("namespace") or None, meta["name"])
    elif scope.recoveries and kind == "ConfigMap" and group == "" and recovery_state.is_record(obj):
        state = recovery_state.state_of(obj, read_at, scope.namespace or "default")
        if records.in_namespace(state.namespace, scope.namespace):
            result.recoveries.append(state)
    elif scope.workloads and kind in api.WORKLOAD_KINDS and group in api.WORKLOAD_GROUPS:
        record = decode.workload_record(obj)
        if records.in_namespace(record.namespace, scope.namespace):
            result.workloads.append(record)
        named = (record.namespace, record.name)
    elif kind not in _KNOWN_UNUSED and kind not in api.WORKLOAD_KINDS:
        ignored[kind] = ignored.get(kind, 0) + 1
        template = _opted_in(obj.get("spec"), 4)
        if template is not None:
            meta = obj.get("metadata") if obj.get("metadata").__class__ is dict else {}
            namespace = meta.get("namespace") or scope.namespace or "default"
            binding = (template.get("annotations") or {}).get(api.ANNOTATION_PREFIX + "binding")
            if records.in_namespace(namespace, scope.namespace):
                result.unread_opt_ins.append((namespace, str(kind), str(meta.get("name") or ""),
                                              binding if binding.__class__ is str else ""))
    return named


def _opted_in(node, depth) -> dict | None:
    """The metadata of the first Pod template under `node` (an object with `metadata` and a `spec`
    with `containers`, `depth` levels down at most: a LeaderWorkerSet's spec.leaderWorkerTemplate.
    workerTemplate) that carries the injection opt-in label; None when none does."""
    if node.__class__ is not dict or depth < 0:
        return None
    meta, spec = node.get("metadata"), node.get("spec")
    if meta.__class__ is dict and spec.__class__ is dict and spec.get("containers").__class__ is list:
        labels = meta.get("labels")
        if labels.__class__ is dict and labels.get(api.INJECT_LABEL) == "true":
            return meta
    for value in node.values():
        found = _opted_in(value, depth - 1)
        if found is not None:
            return found
    return None


def load_files(paths, scope: Scope, stdin=None) -> records.Snapshot:
    return snapshot_of(read_objects(paths, stdin, lines=True), scope)


def snapshot_of(objects, scope: Scope) -> records.Snapshot:
    """The snapshot of saved objects, `(object, where, location[, line])` as read_objects yields
    them; with the line, where each object starts is kept in `origins` (records.Origin)."""
    result = records.Snapshot(source="file")
    result.pools = {}       # the input's: one not in it is not known (Snapshot.absent)
    ignored: dict = {}
    intern = decode.Interner()
    if scope.recoveries:
        result.recoveries = []
    read_at = datetime.now(timezone.utc)     # a record's lease is judged against the time it is read
    for obj, where, location, *line in objects:
        if location and line and line[0]:       # `document 5 (line 40)`: a rendered chart is long
            location = f"{location} (line {line[0]})"
        try:
            _add_object(obj, scope, result, ignored, intern, read_at,
                        records.Origin(where, line[0]) if line else None)
        except InvalidObject as exc:
            raise exc.located(where, location) from None
        except PluginError as exc:
            raise PluginError(f"{where}: {exc}") from None
        except RecursionError:
            raise PluginError(f"{where}: {_object_name(obj, location)}: {MAX_DEPTH_MESSAGE}") from None
        except Exception as exc:     # a bug: still name what was being read
            if os.environ.get("KVCACHE_DEBUG"):
                raise
            raise PluginError(f"{where}: {_object_name(obj, location)}: internal error while reading it: "
                              f"{exc.__class__.__name__}: {exc} (set KVCACHE_DEBUG=1 for the traceback; "
                              f"please report it)") from None
    if ignored:
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(ignored.items(), key=lambda kv: str(kv[0])))
        result.notes.append(f"ignored objects of other kinds: {kinds}")
    if scope.assume_setting is not None:
        result.setting = records.assumed_setting(scope.assume_setting)
    elif result.setting is None:
        result.setting = records.default_setting()
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    listed = {p.name for p in result.pods}
    result.missing_pods = tuple(n for n in scope.names if n not in listed)
    return result
