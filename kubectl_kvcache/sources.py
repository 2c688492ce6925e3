"""Where a snapshot comes from: saved files (`-f`) or a live cluster. The two give the same
records, so everything after this module cannot tell them apart."""

import contextlib
import gc
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Optional

from kubectl_kvcache import snapshot as snap
from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.options import Connection, Scope

_FILE_SUFFIXES = (".json", ".yaml", ".yml")
# Kinds a saved cluster commonly holds that no command reads: not worth a note.
_KNOWN_UNUSED = {"KVCachePool", "KVCacheBackend", "Namespace", "Service", "ConfigMap", "Event"}


# -- files ---------------------------------------------------------------------------------

def _expand_paths(paths):
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.endswith(_FILE_SUFFIXES))
            if not names:
                raise PluginError(f"{path}: no .json, .yaml or .yml files in this directory")
            for name in names:
                yield os.path.join(path, name)
        elif os.path.exists(path):
            yield path
        else:
            raise PluginError(f"{path}: no such file or directory")


def _documents(text, where):
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except ValueError as exc:
            raise PluginError(f"{where}: not valid JSON: {exc}")
    import yaml

    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        first = str(exc).replace("\n", " ")
        raise PluginError(f"{where}: not valid YAML: {first}")


def _flatten(doc, where):
    if isinstance(doc, list):
        for item in doc:
            yield from _flatten(item, where)
        return
    if not isinstance(doc, dict):
        raise PluginError(f"{where}: expected Kubernetes objects, found a {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(doc.get("items"), list) and (kind is None or str(kind).endswith("List")):
        for item in doc["items"]:
            yield from _flatten(item, where)
        return
    if not kind:
        raise PluginError(f"{where}: an object without a kind")
    yield doc


def read_objects(paths, stdin=None):
    """Every object in the given files, directories or '-' (stdin), with where it came from."""
    for path in _expand_paths(paths):
        if path == "-":
            if stdin is None:
                raise PluginError("-f -: no standard input")
            text, where = stdin.read(), "<stdin>"
        else:
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise PluginError(f"{path}: cannot read: {exc}")
            where = path
        for doc in _documents(text, where):
            for obj in _flatten(doc, where):
                yield obj, where


def _group(obj):
    return str(obj.get("apiVersion", "")).split("/", 1)[0] if "/" in str(obj.get("apiVersion", "")) else ""


def load_files(paths, scope: Scope, stdin=None) -> snap.Snapshot:
    return snapshot_of(read_objects(paths, stdin), scope)


def snapshot_of(objects, scope: Scope) -> snap.Snapshot:
    """The snapshot of saved objects, `(object, where)` pairs as read_objects yields them."""
    result = snap.Snapshot(source="file")
    ignored = {}
    intern = snap.Interner()
    for obj, where in objects:
        kind = obj.get("kind")
        group = _group(obj)
        try:
            if kind == "Pod" and group == "":
                record = snap.pod_record(obj, intern)
                if (snap.in_namespace(record.namespace, scope.namespace)
                        and (not scope.names or record.name in scope.names)
                        and selector_matches(record.labels, scope.selector)):
                    result.pods.append(record)
            elif kind == "ModelDeployment" and group == snap.GROUP:
                record = snap.deployment_record(obj)
                result.deployments[(record.namespace, record.name)] = record
            elif kind == "KVCachePoolBinding" and group == snap.GROUP:
                record = snap.binding_record(obj)
                result.bindings[(record.namespace, record.name)] = record
            elif kind == "Setting" and group == snap.SETTING_GROUP:
                if snap.is_setting(obj):
                    result.setting = snap.setting_record(obj, "file")
            elif scope.workloads and kind in snap.WORKLOAD_KINDS and group in ("apps", "batch"):
                record = snap.workload_record(obj)
                if snap.in_namespace(record.namespace, scope.namespace):
                    result.workloads.append(record)
            elif kind not in _KNOWN_UNUSED and kind not in snap.WORKLOAD_KINDS:
                ignored[kind] = ignored.get(kind, 0) + 1
        except PluginError as exc:
            raise PluginError(f"{where}: {exc}")
    if ignored:
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(ignored.items(), key=lambda kv: str(kv[0])))
        result.notes.append(f"ignored objects of other kinds: {kinds}")
    if scope.assume_setting is not None:
        result.setting = snap.assumed_setting(scope.assume_setting)
    elif result.setting is None:
        result.setting = snap.default_setting()
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    missing = [n for n in scope.names if n not in {p.name for p in result.pods}]
    if missing:
        raise PluginError(f"pod {missing[0]!r} not found in the input")
    return result


def selector_matches(labels, selector) -> bool:
    """Kubernetes label selector semantics for saved files: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
    `k in (a,b)`, `k notin (a,b)`, comma-separated and ANDed."""
    if not selector:
        return True
    for requirement in _split_requirements(selector):
        m = re.fullmatch(r"\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*", requirement)
        if m:
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            ok = labels.get(key) in values if op == "in" else labels.get(key) not in values
        elif "!=" in requirement:
            key, value = (x.strip() for x in requirement.split("!=", 1))
            ok = labels.get(key) != value
        elif "=" in requirement:
            key, value = (x.strip() for x in requirement.replace("==", "=").split("=", 1))
            ok = labels.get(key) == value
        elif requirement.strip().startswith("!"):
            ok = requirement.strip()[1:] not in labels
        elif requirement.strip():
            ok = requirement.strip() in labels
        else:
            raise PluginError(f"invalid label selector {selector!r}")
        if not ok:
            return False
    return True


def _split_requirements(selector):
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


# -- cluster -------------------------------------------------------------------------------

def _and(*selectors):
    return ",".join(s for s in selectors if s) or None


def load_cluster(client, scope: Scope, chunk, versions=None) -> snap.Snapshot:
    """Lists run concurrently; each kind is fetched once (pods by two server-side selectors).
    `versions`: a dict that receives the resourceVersion of each list a watch follows
    (keys as in `watch_targets`)."""
    from kubectl_kvcache.kube import collection_path

    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"
    md_version = client.resource_version_for(snap.GROUP, "modeldeployments")
    binding_version = client.resource_version_for(snap.GROUP, "kvcachepoolbindings")
    setting_version = None
    if scope.assume_setting is None:
        try:
            setting_version = client.resource_version_for(snap.SETTING_GROUP, "settings")
        except NotFound:    # before the upgrade: the operator does not serve the Setting yet
            setting_version = None

    def listed(key):
        """client.list, or, when a watch will follow, the list that also gives its resourceVersion."""
        if versions is None:
            return client.list

        def list_versioned(*args, **kw):
            records, versions[key] = client.list_versioned(*args, **kw)
            return records
        return list_versioned

    jobs = {
        "deployments": lambda: listed("deployments")(collection_path(snap.GROUP, md_version, "modeldeployments", ns),
                                           snap.deployment_record, chunk=chunk,
                                           what=f"list modeldeployments.{snap.GROUP} {where}"),
        "bindings": lambda: client.list(collection_path(snap.GROUP, binding_version, "kvcachepoolbindings", ns),
                                        snap.binding_record, chunk=chunk,
                                        what=f"list kvcachepoolbindings.{snap.GROUP} {where}"),
    }
    if setting_version is not None:
        jobs["setting"] = lambda: _get_setting(client, setting_version)
    if scope.names:
        jobs["pods"] = lambda: [snap.pod_record(client.get(
            f"{collection_path('', 'v1', 'pods', ns or 'default')}/{name}",
            what=f"get pod {name} in namespace {ns or 'default'}")) for name in scope.names]
    else:
        intern = snap.Interner()     # replicas share their containers and labels

        def pod_record(obj):
            return snap.pod_record(obj, intern)

        md_selector = _and("=".join(snap.MD_NAME_LABEL), scope.selector)
        inject_selector = _and(f"{snap.INJECT_LABEL}=true", scope.selector)
        jobs["md_pods"] = lambda: listed("md_pods")(collection_path("", "v1", "pods", ns), pod_record,
                                                    selector=md_selector, chunk=chunk, what=f"list pods {where}")
        jobs["injected_pods"] = lambda: listed("injected_pods")(collection_path("", "v1", "pods", ns), pod_record,
                                                                selector=inject_selector, chunk=chunk,
                                                                what=f"list pods {where}")
    if scope.workloads:
        for kind, group, plural in (("Deployment", "apps", "deployments"), ("StatefulSet", "apps", "statefulsets"),
                                    ("DaemonSet", "apps", "daemonsets"), ("ReplicaSet", "apps", "replicasets"),
                                    ("Job", "batch", "jobs"), ("CronJob", "batch", "cronjobs")):
            jobs[kind] = (lambda g=group, p=plural, k=kind: _skippable(lambda: client.list(
                collection_path(g, "v1", p, ns), lambda o, k=k: _opted_in(snap.workload_record(dict(o, kind=k))),
                chunk=chunk,
                what=f"list {p}.{g} {where}")))
    with _gc_paused():
        results = _run_all(jobs)
    result = snap.Snapshot(source="cluster")
    for d in results["deployments"]:
        result.deployments[(d.namespace, d.name)] = d
    for b in results["bindings"]:
        result.bindings[(b.namespace, b.name)] = b
    if scope.assume_setting is not None:
        result.setting = snap.assumed_setting(scope.assume_setting)
    elif setting_version is None:
        result.setting = snap.not_served_setting()
        result.notes.append(f"the cluster does not serve the Setting's API group {snap.SETTING_GROUP} yet: the "
                            f"operator is not upgraded, so it renders no --kv-cache-dtype yet (verify expects "
                            f"nothing); the upgrade brings the Setting at its default, on (check, bindings and "
                            f"roles judge that)")
    else:
        result.setting = results["setting"]
        if result.setting.source == "default":
            result.notes.append(f"the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} does not exist: "
                                f"judging with its default, on, as the operator reads it")
    seen = set()
    for key in ("pods", "md_pods", "injected_pods"):
        for pod in results.get(key, ()):
            if (pod.namespace, pod.name) not in seen:
                seen.add((pod.namespace, pod.name))
                result.pods.append(pod)
    if scope.workloads:
        for kind in snap.WORKLOAD_KINDS:
            result.workloads.extend(results[kind])
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    return result


WORKLOADS_SKIPPED = ("--skip-workloads: the Pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, "
                     "Jobs and CronJobs were not read, so their injection opt-ins are not checked")


def _skippable(list_workloads):
    """A workload list RBAC refuses names the flag that does without it."""
    try:
        return list_workloads()
    except Forbidden as exc:
        raise Forbidden(f"{exc} (pass --skip-workloads to go on without the workload templates' injection "
                        f"opt-ins)") from exc


@dataclass(frozen=True)
class WatchTarget:
    """A collection `verify --watch/--wait` follows: what load_cluster listed under `key`."""

    key: str
    path: str
    selector: Optional[str]
    convert: Callable[[dict], object]
    what: str


def watch_targets(client, scope: Scope):
    """The lists of load_cluster that a rollout changes: ModelDeployments and the two Pod lists,
    with the same paths and selectors (a watch starts from the list's resourceVersion)."""
    from kubectl_kvcache.kube import collection_path

    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"
    md_version = client.resource_version_for(snap.GROUP, "modeldeployments")
    intern = snap.Interner()

    def pod_record(obj):
        return snap.pod_record(obj, intern)

    pods = collection_path("", "v1", "pods", ns)
    return (WatchTarget("deployments", collection_path(snap.GROUP, md_version, "modeldeployments", ns), None,
                        snap.deployment_record, f"watch modeldeployments.{snap.GROUP} {where}"),
            WatchTarget("md_pods", pods, _and("=".join(snap.MD_NAME_LABEL), scope.selector), pod_record,
                        f"watch pods {where}"),
            WatchTarget("injected_pods", pods, _and(f"{snap.INJECT_LABEL}=true", scope.selector), pod_record,
                        f"watch pods {where}"))


def _opted_in(workload):
    """Only templates opted into injection are kept (the only ones any command reads): the
    label cannot be selected server-side on a template, and old ReplicaSets are many."""
    return workload if workload.labels.get(snap.INJECT_LABEL) == "true" else None


def _get_setting(client, version):
    path = (f"/apis/{snap.SETTING_GROUP}/{version}/namespaces/{snap.SETTING_NAMESPACE}/settings/"
            f"{snap.SETTING_NAME}")
    try:
        obj = client.get(path, what=f"get settings.{snap.SETTING_GROUP} {snap.SETTING_NAME} "
                                    f"in namespace {snap.SETTING_NAMESPACE}")
    except NotFound:
        return snap.default_setting()
    return snap.setting_record(obj, "cluster")


@contextlib.contextmanager
def _gc_paused():
    """No cyclic garbage collection while pages are decoded into records: json.loads of a page
    allocates ~10^5 containers, each batch of 700 triggers a collection that walks the young
    pages and the growing records again. Pages and records hold no reference cycles, so
    reference counting frees every page as before; collection resumes afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run_all(jobs):
    """Run independent API calls concurrently; the first error (in job order) wins."""
    with ThreadPoolExecutor(max_workers=min(8, len(jobs))) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        results, errors = {}, []
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except PluginError as exc:
                errors.append(exc)
    if errors:
        raise errors[0]
    return results


def open_client(connection: Connection, trace=None):
    """The API client for these connection flags; `trace` prints KVCACHE_TRACE lines."""
    from kubectl_kvcache.kube import Client

    return Client(connection, trace=trace)


def resolve_namespace(scope: Scope, client=None) -> Optional[str]:
    """The one namespace to look at, or None for all: -A, else -n, else the context's (files: all)."""
    if scope.all_namespaces:
        return None
    if scope.namespace:
        return scope.namespace
    return client.namespace if client is not None else None


def load(connection: Connection, scope: Scope, stdin=None, trace=None) -> snap.Snapshot:
    """The snapshot the command asked for: files when -f is given (no cluster is contacted)."""
    if scope.files:
        namespace = resolve_namespace(scope)
        result = load_files(scope.files, replace(scope, namespace=namespace), stdin=stdin)
        result.namespace = namespace
        return result
    client = open_client(connection, trace)
    namespace = resolve_namespace(scope, client)
    if scope.names and namespace is None:
        raise PluginError("naming pods needs one namespace: drop -A or pass -n")
    result = load_cluster(client, replace(scope, namespace=namespace), chunk=connection.chunk_size)
    result.namespace = namespace
    return result


# -- recovery: the FULL objects around one Binding -----------------------------------------

_WORKLOAD_APIS = (("Deployment", "apps", "deployments"), ("StatefulSet", "apps", "statefulsets"),
                  ("DaemonSet", "apps", "daemonsets"), ("ReplicaSet", "apps", "replicasets"),
                  ("Job", "batch", "jobs"), ("CronJob", "batch", "cronjobs"))


def _template_opted_in(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    labels = (((spec.get("template") or {}).get("metadata")) or {}).get("labels") or {}
    return labels.get(snap.INJECT_LABEL) == "true"


def load_recovery(connection: Connection, scope: Scope, binding_name, stdin=None, trace=None, backups=()):
    """What `recover` plans from: the normal snapshot (for checks) and the full objects its
    records drop (the Binding, every Binding's domain claim, the namespace's ModelDeployments,
    opted-in workloads), from files (-f) or the cluster. `backups`: objects an earlier run backed
    up; one deleted since (the old Binding) is planned from its backup. Returns recover.Inputs
    and the client (None for files)."""
    from kubectl_kvcache import checks, recover

    backups = list(backups)
    if scope.files:
        objects = list(read_objects(scope.files, stdin))
        namespace = resolve_namespace(scope) or _namespace_of(objects, binding_name)
        snapshot = snapshot_of(objects, replace(scope, namespace=namespace, workloads=True))
        snapshot.namespace = namespace
        full = [o for o, _ in objects]
        client = None

        def of(kind, group=snap.GROUP):
            return [o for o in full if o.get("kind") == kind and _group(o) == group]
        bindings = of("KVCachePoolBinding")
        deployments = [o for o in of("ModelDeployment") if _ns(o) == namespace]
        workloads = [dict(o) for kind, group, _ in _WORKLOAD_APIS for o in of(kind, group)
                     if _ns(o) == namespace and _template_opted_in(o)]
        binding = next((b for b in bindings if _ns(b) == namespace and b["metadata"].get("name") == binding_name),
                       None)
        notes = []
    else:
        from kubectl_kvcache.errors import Forbidden
        from kubectl_kvcache.kube import collection_path

        client = open_client(connection, trace)
        namespace = resolve_namespace(replace(scope, all_namespaces=False), client)
        snapshot = load_cluster(client, replace(scope, namespace=namespace, workloads=True),
                                chunk=connection.chunk_size)
        snapshot.namespace = namespace
        chunk = connection.chunk_size
        b_version = client.resource_version_for(snap.GROUP, "kvcachepoolbindings")
        as_binding = _typed("KVCachePoolBinding", f"{snap.GROUP}/{b_version}")
        md_version = client.resource_version_for(snap.GROUP, "modeldeployments")
        notes = []
        try:
            bindings = client.list(collection_path(snap.GROUP, b_version, "kvcachepoolbindings"), as_binding,
                                   chunk=chunk, what=f"list kvcachepoolbindings.{snap.GROUP} in all namespaces")
        except Forbidden:
            bindings = client.list(collection_path(snap.GROUP, b_version, "kvcachepoolbindings", namespace),
                                   as_binding,
                                   chunk=chunk, what=f"list kvcachepoolbindings.{snap.GROUP} in namespace "
                                                     f"{namespace}")
            notes.append("Bindings of other namespaces could not be listed (RBAC): a domain claimed there is not "
                         "seen; the API server refuses the new Binding if its domain is taken")
        deployments = client.list(collection_path(snap.GROUP, md_version, "modeldeployments", namespace),
                                  _typed("ModelDeployment", f"{snap.GROUP}/{md_version}"),
                                  chunk=chunk, what=f"list modeldeployments.{snap.GROUP} in namespace {namespace}")
        workloads = []
        for kind, group, plural in _WORKLOAD_APIS:
            workloads += client.list(collection_path(group, "v1", plural, namespace),
                                     lambda o, k=kind, g=group: (dict(o, kind=k, apiVersion=f"{g}/v1")
                                                                 if _template_opted_in(o) else None),
                                     chunk=chunk, what=f"list {plural}.{group} in namespace {namespace}")
        binding = next((b for b in bindings if _ns(b) == namespace and b["metadata"].get("name") == binding_name),
                       None)
    gone = False
    if binding is None:
        saved = [o for o in backups if o.get("kind") == "KVCachePoolBinding" and _ns(o) == namespace
                 and (o.get("metadata") or {}).get("name") == binding_name]
        if saved:
            binding, gone = saved[-1], True
            snapshot.bindings[(namespace, binding_name)] = snap.binding_record(binding)
    report = checks.check(snapshot)
    inputs = recover.Inputs(namespace=namespace, binding_name=binding_name, binding=binding, binding_gone=gone,
                            bindings=bindings, deployments=deployments, workloads=workloads,
                            pods=[p for p in snapshot.pods if p.namespace == namespace and p.opted_in],
                            report=report, setting=snapshot.setting, backups=backups,
                            notes=notes + list(snapshot.notes))
    return inputs, client


def _namespace_of(objects, binding_name):
    """Files without -n: the namespace of the one Binding of that name in them ('default' when
    none is); several is an error."""
    found = sorted({_ns(o) for o, _ in objects if o.get("kind") == "KVCachePoolBinding"
                    and (o.get("metadata") or {}).get("name") == binding_name})
    if len(found) > 1:
        raise PluginError(f"KVCachePoolBinding {binding_name!r} is in several namespaces of the input "
                          f"({', '.join(found)}): pass -n")
    return found[0] if found else "default"


def _typed(kind, api_version):
    """List items as objects: with their kind and apiVersion (a list's items may omit them)."""
    def convert(obj):
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", api_version)
        return obj
    return convert


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace") or "default"
