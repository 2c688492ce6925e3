"""Where a snapshot comes from: saved files (`-f`) or a live cluster. The two give the same
records, so everything after this module cannot tell them apart."""

import contextlib
import gc
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Optional

from kubectl_kvcache import snapshot as snap
from kubectl_kvcache.errors import NotFound, PluginError
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
    result = snap.Snapshot(source="file")
    ignored = {}
    intern = snap.Interner()
    for obj, where in read_objects(paths, stdin):
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


def load_cluster(client, scope: Scope, chunk) -> snap.Snapshot:
    """Lists run concurrently; each kind is fetched once (pods by two server-side selectors)."""
    from kubectl_kvcache.kube import collection_path, object_path

    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"
    client.discover(snap.GROUP, *([snap.SETTING_GROUP] if scope.assume_setting is None else []))
    md_version = client.resource_version_for(snap.GROUP, "modeldeployments")
    binding_version = client.resource_version_for(snap.GROUP, "kvcachepoolbindings")
    setting_version = (client.resource_version_for(snap.SETTING_GROUP, "settings")
                       if scope.assume_setting is None else None)

    jobs = {
        "deployments": lambda: client.list(collection_path(snap.GROUP, md_version, "modeldeployments", ns),
                                           snap.deployment_record, chunk=chunk,
                                           what=f"list modeldeployments.{snap.GROUP} {where}"),
        "bindings": lambda: client.list(collection_path(snap.GROUP, binding_version, "kvcachepoolbindings", ns),
                                        snap.binding_record, chunk=chunk,
                                        what=f"list kvcachepoolbindings.{snap.GROUP} {where}"),
    }
    if scope.assume_setting is None:
        jobs["setting"] = lambda: _get_setting(client, setting_version)
    if scope.names:
        jobs["pods"] = lambda: [snap.pod_record(client.get(
            object_path("", "v1", "pods", ns or "default", name),
            what=f"get pod {name} in namespace {ns or 'default'}")) for name in scope.names]
    else:
        intern = snap.Interner()     # replicas share their containers and labels

        def pod_record(obj):
            return snap.pod_record(obj, intern)

        md_selector = _and("=".join(snap.MD_NAME_LABEL), scope.selector)
        inject_selector = _and(f"{snap.INJECT_LABEL}=true", scope.selector)
        jobs["md_pods"] = lambda: client.list(collection_path("", "v1", "pods", ns), pod_record,
                                              selector=md_selector, chunk=chunk, what=f"list pods {where}")
        jobs["injected_pods"] = lambda: client.list(collection_path("", "v1", "pods", ns), pod_record,
                                                    selector=inject_selector, chunk=chunk,
                                                    what=f"list pods {where}")
    if scope.workloads:
        for kind, group, plural in (("Deployment", "apps", "deployments"), ("StatefulSet", "apps", "statefulsets"),
                                    ("DaemonSet", "apps", "daemonsets"), ("ReplicaSet", "apps", "replicasets"),
                                    ("Job", "batch", "jobs"), ("CronJob", "batch", "cronjobs")):
            jobs[kind] = (lambda g=group, p=plural, k=kind: client.list(
                collection_path(g, "v1", p, ns), lambda o, k=k: _opted_in(snap.workload_record(dict(o, kind=k))),
                chunk=chunk,
                what=f"list {p}.{g} {where}"))
    with _gc_paused():
        results = _run_all(jobs)
    result = snap.Snapshot(source="cluster")
    for d in results["deployments"]:
        result.deployments[(d.namespace, d.name)] = d
    for b in results["bindings"]:
        result.bindings[(b.namespace, b.name)] = b
    result.setting = results.get("setting") or snap.assumed_setting(scope.assume_setting)
    seen = set()
    for key in ("pods", "md_pods", "injected_pods"):
        for pod in results.get(key, ()):
            if (pod.namespace, pod.name) not in seen:
                seen.add((pod.namespace, pod.name))
                result.pods.append(pod)
    if scope.workloads:
        for kind in snap.WORKLOAD_KINDS:
            result.workloads.extend(results[kind])
    return result


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
    """The API client for these connection flags (the one warm() started, if any); `trace` prints
    KVCACHE_TRACE lines."""
    from kubectl_kvcache.kube import Client, claim

    return claim(connection) or Client(connection, trace=trace)


def warm(connection: Connection, trace=None):
    """Start connecting to the cluster in the background (see kube.warm): the command's modules
    are imported meanwhile. Only the command line's own run calls this."""
    from kubectl_kvcache.kube import warm as start

    start(connection, (snap.GROUP, snap.SETTING_GROUP), trace)


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
