"""A live cluster to a snapshot: the lists each command reads, concurrently, page by page, into
the same records saved files give (manifests.py)."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable

from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.load import recovery_state
from kubectl_kvcache.load.manifests import WORKLOADS_SKIPPED
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.operator import api, decode, records
from kubectl_kvcache.record import Record

# -- cluster -------------------------------------------------------------------------------

def _and(*selectors):
    return ",".join(s for s in selectors if s) or None


def load_cluster(client, scope: Scope, chunk, versions=None) -> records.Snapshot:
    """Lists run concurrently; each kind is fetched once (pods by two server-side selectors).
    `versions`: a dict that receives the resourceVersion of each list a watch follows
    (keys as in `watch_targets`)."""
    lists = _Lists(client, scope, chunk, versions)
    jobs = {"operator": lists.operator_objects}      # first: its errors (a CRD not served) win
    jobs.update(lists.pod_jobs())
    if scope.workloads:
        jobs.update(lists.workload_jobs())
    if scope.namespace:
        jobs["namespace"] = lambda: missing_namespaces(client, (scope.namespace,))
    records_read: dict = {}
    if scope.recoveries:
        # after the smallest list, in its thread: on a connection already open (a job of its own
        # opened one more, its TLS handshake the most of its cost)
        key = "injected_pods" if "injected_pods" in jobs else "pods"
        first = jobs[key]

        def then_records(first=first):
            found = first()
            records_read["recoveries"] = recovery_state.list_states(client, scope.namespace, chunk)
            return found
        jobs[key] = then_records
    with _gc_paused():
        results = _run_all(jobs)
    snapshot = _assemble(results, scope)
    if scope.recoveries:
        snapshot.recoveries, unread = records_read["recoveries"]
        if unread:
            snapshot.notes.append(unread)
    snapshot.missing_namespaces = tuple(results.get("namespace", ()))
    return snapshot


NAMESPACE = api.Resource("Namespace", "", "namespaces", "v1")
POOLS_UNREAD = ("the KVCachePools could not be listed: which master (KVCacheBackend) holds a domain is not known, "
                "so two Bindings on one domain.name in different pools are not judged")


def missing_namespaces(client, namespaces) -> list[str]:
    """The namespaces the API server says do not exist (404 on GET /api/v1/namespaces/NAME), so that
    a typo is said instead of reading as "nothing found". One RBAC does not let be read, or that
    cannot be asked about, is not reported: whether it exists is not known."""
    missing = []
    for ns in namespaces:
        try:
            client.get(api.object_path(client, NAMESPACE, None, ns), what=f"get namespace {ns}")
        except NotFound:
            missing.append(ns)
        except PluginError:
            continue
    return missing


class _Lists:
    """The requests of one load_cluster: what each list asks for, in which namespace."""

    def __init__(self, client, scope: Scope, chunk, versions):
        self.client, self.scope, self.chunk, self.versions = client, scope, chunk, versions
        self.ns = scope.namespace
        self.where = f"in namespace {self.ns}" if self.ns else "in all namespaces"

    def listed(self, key):
        """client.list, or, when a watch will follow, the list that also gives its resourceVersion."""
        if self.versions is None:
            return self.client.list

        def list_versioned(*args, **kw):
            found, self.versions[key] = self.client.list_versioned(*args, **kw)
            return found
        return list_versioned

    def operator_objects(self):
        """The operator's objects at the versions the server serves: discovery first, then their
        lists concurrently (the Pods and workloads, core APIs, are asked for meanwhile)."""
        client, ns, where, chunk = self.client, self.ns, self.where, self.chunk
        client.discover(api.GROUP, *([api.SETTING_GROUP] if self.scope.assume_setting is None else []))
        md_path = api.collection_path(client, api.MODEL_DEPLOYMENT, ns)
        binding_path = api.collection_path(client, api.BINDING, ns)
        setting_version = None
        if self.scope.assume_setting is None:
            try:
                setting_version = api.version_for(client, api.SETTING)
            except NotFound:    # before the upgrade: the operator does not serve the Setting yet
                setting_version = None
        lists = {
            "deployments": lambda: self.listed("deployments")(
                md_path, decode.deployment_record, chunk=chunk, what=f"list {api.MODEL_DEPLOYMENT.name} {where}"),
            "bindings": lambda: self.listed("bindings")(binding_path, decode.binding_record, chunk=chunk,
                                                        what=f"list {api.BINDING.name} {where}"),
        }
        if self.scope.pools:
            lists["pools"] = self.pools
        if setting_version is not None:
            lists["setting"] = (lambda: _get_setting(client, setting_version)) if self.versions is None else \
                (lambda: _listed_setting(self.listed("setting"), client, setting_version))
        found = _run_all(lists)
        found["setting_version"] = setting_version
        return found

    def pools(self):
        """Every KVCachePool (cluster-scoped), paged; None with a note when RBAC refuses the list
        or the server does not serve the kind: what depends on them is then not judged."""
        try:
            return self.client.list(api.collection_path(self.client, api.POOL), decode.pool_record, chunk=self.chunk,
                                    what=f"list {api.POOL.name}")
        except (Forbidden, NotFound) as exc:
            return POOLS_UNREAD + f" ({exc})"

    def pod_jobs(self):
        """The named Pods (verify POD...), else the Pods of ModelDeployments and those opted into
        injection, as two server-side selected lists."""
        client, ns, where, scope = self.client, self.ns, self.where, self.scope
        if scope.names:
            def named():
                found = [(name, client.get_or_none(api.object_path(client, api.POD, ns or "default", name),
                                                   what=f"get pod {name} in namespace {ns or 'default'}"))
                         for name in scope.names]
                return [decode.pod_record(obj) if obj is not None else name for name, obj in found]
            return {"pods": named}
        intern = decode.Interner()     # replicas share their containers and labels

        def pod_record(obj):
            return decode.pod_record(obj, intern)

        path = api.collection_path(client, api.POD, ns)
        md_selector = _and("=".join(api.MD_NAME_LABEL), scope.selector)
        inject_selector = _and(f"{api.INJECT_LABEL}=true", scope.selector)
        return {"md_pods": lambda: self.listed("md_pods")(path, pod_record, selector=md_selector, chunk=self.chunk,
                                                          what=f"list pods {where}"),
                "injected_pods": lambda: self.listed("injected_pods")(path, pod_record, selector=inject_selector,
                                                                      chunk=self.chunk, what=f"list pods {where}")}

    def workload_jobs(self):
        """Every workload kind's templates that opt into injection."""
        def job(res):
            return lambda: _skippable(lambda: self.client.list(
                api.collection_path(self.client, res, self.ns),
                lambda o: _opted_in(decode.workload_record(dict(o, kind=res.kind))),
                chunk=self.chunk, what=f"list {res.name} {self.where}"), self.scope.workloads_flag)
        return {res.kind: job(res) for res in api.WORKLOADS}


def _assemble(results, scope: Scope) -> records.Snapshot:
    """One snapshot of the lists' results, the Pods of both lists once each."""
    operator = results["operator"]
    result = records.Snapshot(source="cluster")
    for d in operator["deployments"]:
        result.deployments[(d.namespace, d.name)] = d
    for b in operator["bindings"]:
        result.bindings[(b.namespace, b.name)] = b
    _set_setting(result, operator, scope)
    pools = operator.get("pools")
    if isinstance(pools, str):
        result.notes.append(pools)
    elif pools is not None:
        result.pools = {p.name: p for p in pools}
    seen = set()
    result.missing_pods = tuple(p for p in results.get("pods", ()) if isinstance(p, str))
    for key in ("pods", "md_pods", "injected_pods"):
        for pod in results.get(key, ()):
            if isinstance(pod, str):
                continue                    # a named Pod the API server does not have (404)
            if (pod.namespace, pod.name) not in seen:
                seen.add((pod.namespace, pod.name))
                result.pods.append(pod)
    if scope.workloads:
        for kind in api.WORKLOAD_KINDS:
            result.workloads.extend(results[kind])
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    return result


def _set_setting(result, operator, scope: Scope):
    """The Setting as assumed, as not served yet, as read, or at its default; a note for the last two."""
    if scope.assume_setting is not None:
        result.setting = records.assumed_setting(scope.assume_setting)
    elif operator["setting_version"] is None:
        result.setting = records.not_served_setting()
        result.notes.append(f"the cluster does not serve the Setting's API group {api.SETTING_GROUP} yet: the "
                            f"operator is not upgraded, so it renders no --kv-cache-dtype yet (verify expects "
                            f"nothing); the upgrade brings the Setting at its default, on (check, bindings and "
                            f"roles judge that)")
    else:
        result.setting = operator["setting"]
        if result.setting.source == "default":
            result.notes.append(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} does not exist: "
                                f"judging with its default, on, as the operator reads it")


def _skippable(list_workloads, flag):
    """A workload list RBAC refuses names the command's flag that does without it, if it has one."""
    try:
        return list_workloads()
    except Forbidden as exc:
        if flag:
            raise Forbidden(f"{exc} (pass {flag} to go on without the workload templates' injection "
                            f"opt-ins)") from exc
        raise Forbidden(f"{exc} (the workload templates that opt into injection are read to point them at the "
                        f"new Binding: it needs list on them in the namespace)") from exc


class WatchTarget(Record):
    """A collection `verify --watch/--wait` follows: what load_cluster listed under `key`."""

    __slots__ = ("key", "path", "selector", "convert", "what", "fields")

    def __init__(self, key: str, path: str, selector: str | None, convert: Callable[[dict], object], what: str,
                 fields: str | None = None):
        self.key = key
        self.path = path
        self.selector = selector
        self.convert = convert
        self.what = what
        self.fields = fields        # a field selector (the Setting: its name)


def watch_targets(client, scope: Scope):
    """The lists of load_cluster that a rollout or a recovery changes: ModelDeployments, Bindings,
    the two Pod lists and the Setting (unless assumed or not served), with the same paths and
    selectors (a watch starts from the list's resourceVersion)."""
    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"
    intern = decode.Interner()

    def pod_record(obj):
        return decode.pod_record(obj, intern)

    pods = api.collection_path(client, api.POD, ns)
    targets = [WatchTarget("deployments", api.collection_path(client, api.MODEL_DEPLOYMENT, ns), None,
                           decode.deployment_record, f"watch {api.MODEL_DEPLOYMENT.name} {where}"),
               WatchTarget("bindings", api.collection_path(client, api.BINDING, ns), None,
                           decode.binding_record, f"watch {api.BINDING.name} {where}"),
               WatchTarget("md_pods", pods, _and("=".join(api.MD_NAME_LABEL), scope.selector), pod_record,
                           f"watch pods {where}"),
               WatchTarget("injected_pods", pods, _and(f"{api.INJECT_LABEL}=true", scope.selector), pod_record,
                           f"watch pods {where}")]
    if scope.assume_setting is None:
        try:
            path = api.collection_path(client, api.SETTING, api.SETTING_NAMESPACE)
        except NotFound:        # not served yet (before the upgrade): nothing to follow
            path = None
        if path is not None:
            targets.append(WatchTarget("setting", path, None, _setting_record,
                                       f"watch {api.SETTING.name} {api.setting_ref()}", SETTING_FIELDS))
    return tuple(targets)


# one object is watched as kubectl watches it: by this field selector (kubernetes/cli-runtime
# pkg/resource/helper.go:WatchSingle, FieldSelector metadata.name=NAME); the list is selected alike
SETTING_FIELDS = f"metadata.name={api.SETTING_NAME}"


def _setting_record(obj):
    return decode.setting_record(obj, "cluster")


def _listed_setting(list_versioned, client, version):
    """The Setting as a watch will follow it: listed by name (the list's resourceVersion is where
    the watch starts), its default when the list is empty. A user who may get it but not list
    it gets it as a plain read does (no resourceVersion: it is not watched)."""
    try:
        found = list_versioned(api.collection_path(client, api.SETTING, api.SETTING_NAMESPACE), _setting_record,
                               fields=SETTING_FIELDS, chunk=None,
                               what=f"list {api.SETTING.name} {api.setting_ref()}")
    except Forbidden:
        return _get_setting(client, version)
    return found[0] if found else records.default_setting()


def _opted_in(workload):
    """Only templates opted into injection are kept (the only ones any command reads): the
    label cannot be selected server-side on a template, and old ReplicaSets are many."""
    return workload if workload.labels.get(api.INJECT_LABEL) == "true" else None


def _get_setting(client, version):
    try:
        obj = client.get(api.setting_path(version), what=f"get {api.SETTING.name} {api.SETTING_NAME} "
                                                         f"in namespace {api.SETTING_NAMESPACE}")
    except NotFound:
        return records.default_setting()
    return decode.setting_record(obj, "cluster")


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
    """Run independent API calls concurrently; the first error (in job order) wins.

    A thread per job, all started at once and all finished before anything is raised (a Ctrl-C
    while waiting too: it aborts the requests, so the jobs end at once). Any other exception of a
    job (KeyboardInterrupt from those aborted requests, a bug) is raised here, in the caller's
    thread, ahead of the PluginErrors."""
    outcomes = {}

    def run(name, job):
        try:
            outcomes[name] = (True, job())
        except BaseException as exc:        # raised in the caller's thread below
            outcomes[name] = (False, exc)

    started = []
    try:
        for name, job in jobs.items():
            thread = threading.Thread(target=run, args=(name, job), name=f"kvcache-{name}")
            thread.start()
            started.append(thread)
    finally:
        try:
            for thread in started:
                thread.join()
        except BaseException:
            for thread in started:
                thread.join()
            raise
    results, errors = {}, []
    for name in jobs:
        ok, value = outcomes[name]
        if ok:
            results[name] = value
        elif isinstance(value, PluginError):
            errors.append(value)
        else:
            raise value
    if errors:
        raise errors[0]
    return results
