"""The only module that talks to the Kubernetes API: config as kubectl reads it, raw-JSON
requests, paged lists, discovery, merge patches. Errors become one-line PluginErrors that say
what was refused or unreachable.
"""

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import quote

from kubectl_kvcache.errors import Conflict, ExpiredContinue, Forbidden, NotFound, PluginError
from kubectl_kvcache.options import Connection

SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
MAX_LIST_RESTARTS = 3


def _status_message(body: bytes) -> Tuple[str, str]:
    try:
        status = json.loads(body)
        return status.get("message") or "", status.get("reason") or ""
    except (ValueError, AttributeError):
        return (body or b"").decode("utf-8", "replace").strip()[:300], ""


class Client:
    """A thin raw-JSON client over the kubernetes package's configuration and connection pool."""

    def __init__(self, conn: Connection, trace: Optional[Callable[[str], None]] = None):
        """`trace`: called with one line per request when KVCACHE_TRACE is set (render prints it)."""
        from kubernetes import client as k8s_client
        from kubernetes.config import ConfigException

        self.requests = 0
        self._lock = threading.Lock()
        cfg = k8s_client.Configuration()
        self.namespace = "default"
        try:
            self._load(cfg, conn)
        except ConfigException as exc:
            raise PluginError(f"kubeconfig: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}") \
                from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PluginError(f"kubeconfig: {exc}") from exc
        if conn.server:
            cfg.host = conn.server
        if conn.token:
            cfg.api_key = {"BearerToken": conn.token}
            cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if conn.certificate_authority:
            cfg.ssl_ca_cert = conn.certificate_authority
        if conn.insecure_skip_tls_verify:
            cfg.verify_ssl = False
        cfg.retries = False
        self.host = cfg.host
        self.timeout = conn.timeout
        self.impersonate_user = conn.as_user
        self.impersonate_groups = list(conn.as_groups)
        self.api = k8s_client.ApiClient(cfg)
        self.trace = trace if os.environ.get("KVCACHE_TRACE") not in (None, "", "0") else None
        self._discovery: Dict[str, dict] = {}

    # -- configuration, as kubectl reads it ------------------------------------------------

    def _load(self, cfg, conn: Connection):
        from kubernetes.config import incluster_config, kube_config

        path = conn.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        paths = [os.path.expanduser(p) for p in path.split(os.pathsep) if p]
        existing = [p for p in paths if os.path.exists(p)]
        if conn.kubeconfig and not existing:
            raise PluginError(f"kubeconfig {conn.kubeconfig} does not exist")
        if not existing:
            if os.environ.get("KUBERNETES_SERVICE_HOST") and not conn.server:
                incluster_config.InClusterConfigLoader(
                    token_filename=incluster_config.SERVICE_TOKEN_FILENAME,
                    cert_filename=incluster_config.SERVICE_CERT_FILENAME).load_and_set(cfg)
                if os.path.exists(SA_NAMESPACE_FILE):
                    with open(SA_NAMESPACE_FILE) as f:
                        self.namespace = f.read().strip() or "default"
                return
            if conn.server:
                return
            raise PluginError("no kubeconfig found: set KUBECONFIG or pass --kubeconfig "
                              "(or run inside a cluster)")
        merger = kube_config.KubeConfigMerger(os.pathsep.join(existing))
        merged = merger.config
        context_name = conn.context or merged.value.get("current-context")
        context = next((c for c in _entries(merged, "contexts") if c.get("name") == context_name), None)
        if context is None:
            if context_name:
                raise PluginError(f"context {context_name!r} not found in the kubeconfig")
            raise PluginError("the kubeconfig has no current-context; pass --context")
        ctx = context.get("context")
        if not isinstance(ctx, dict):
            ctx = context["context"] = {}
        for flag in ("cluster", "user"):
            value = getattr(conn, flag)
            if value:
                if value not in {e.get("name") for e in _entries(merged, flag + "s")}:
                    raise PluginError(f"{flag} {value!r} not found in the kubeconfig")
                ctx[flag] = value
        self.namespace = ctx.get("namespace") or "default"
        loader = kube_config.KubeConfigLoader(config_dict=merged, active_context=context_name,
                                              config_base_path=None)
        loader.load_and_set(cfg)

    # -- requests ------------------------------------------------------------------------

    def request(self, method, path, query=None, body=None, content_type=None, what=None, raw=False):
        """Raw JSON request; returns the decoded body (`raw`: its bytes, still undecoded) or raises
        a one-line PluginError."""
        import urllib3

        headers = {"Accept": "application/json", "User-Agent": "kubectl-kvcache"}
        if content_type:
            headers["Content-Type"] = content_type
        method, url, headers, body, _ = self.api.param_serialize(
            method, path, query_params=list((query or {}).items()), header_params=headers, body=body,
            auth_settings=["BearerToken"])
        if self.impersonate_user:
            headers = urllib3.HTTPHeaderDict(headers)
            headers["Impersonate-User"] = self.impersonate_user
            for group in self.impersonate_groups:
                headers.add("Impersonate-Group", group)
        with self._lock:
            self.requests += 1
        what = what or f"{method} {path}"
        try:
            resp = self.api.call_api(method, url, header_params=headers, body=body,
                                     _request_timeout=self.timeout)
            data = resp.read()
        except urllib3.exceptions.MaxRetryError as exc:
            raise PluginError(f"cannot reach the API server at {self.host}: {_reason(exc.reason)}") from exc
        except (urllib3.exceptions.NewConnectionError, urllib3.exceptions.NameResolutionError) as exc:
            raise PluginError(f"cannot reach the API server at {self.host}: {_reason(exc)}") from exc
        except urllib3.exceptions.SSLError as exc:
            raise PluginError(f"TLS with the API server at {self.host} failed: {_reason(exc)}") from exc
        except (urllib3.exceptions.TimeoutError, TimeoutError) as exc:
            raise PluginError(f"the API server at {self.host} did not answer within the request timeout "
                              f"({what})") from exc
        except urllib3.exceptions.HTTPError as exc:
            raise PluginError(f"cannot reach the API server at {self.host}: {_reason(exc)}") from exc
        except OSError as exc:
            raise PluginError(f"cannot reach the API server at {self.host}: {exc}") from exc
        if self.trace:
            from urllib.parse import urlencode

            shown = path + ("?" + urlencode(query) if query else "")
            with self._lock:
                self.trace(f"{method} {shown} -> {resp.status} ({len(data or b'')} bytes)")
        if resp.status >= 400:
            raise self._error(resp.status, data, what)
        return data if raw else _decode(data, what)

    def _error(self, status, data, what):
        message, reason = _status_message(data)
        if status == 401:
            return PluginError(f"the API server refused the credentials (401 Unauthorized) for {what}: "
                               f"they are missing, invalid or expired")
        if status == 403:
            return Forbidden(f"forbidden: cannot {what}: {message}")
        if status == 404:
            return NotFound(f"not found: {what}" + (f": {message}" if message else ""))
        if status == 409:
            return Conflict(f"conflict: {what}: {message}")
        if status == 410:
            return ExpiredContinue(f"gone: {what}: {message}")
        return PluginError(f"the API server answered {status} {reason or ''} for {what}: {message}".strip())

    def get(self, path, what=None):
        return self.request("GET", path, what=what)

    def patch_merge(self, path, body, field_manager=None, dry_run=False, what=None):
        """A JSON merge patch (RFC 7386) of one object; `dry_run` asks the server to validate and
        admit it without persisting anything (dryRun=All). Returns the object as patched."""
        query = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, query=query, body=body,
                            content_type="application/merge-patch+json", what=what)

    def create(self, collection, body, field_manager=None, dry_run=False, what=None):
        """POST one object to its collection (`dry_run`: dryRun=All, nothing persisted). Returns
        the object as created; 409 AlreadyExists raises Conflict."""
        query = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if dry_run:
            query["dryRun"] = "All"
        return self.request("POST", collection, query=query, body=body, content_type="application/json",
                            what=what)

    def delete(self, path, uid=None, resource_version=None, propagation="Background", dry_run=False,
               what=None):
        """DELETE one object with DeleteOptions: preconditions (uid, resourceVersion: 409 when
        the object is not the one read), the propagation policy, dryRun=All. Returns the answer
        (the object, marked for deletion when finalizers hold it, or a Status)."""
        options = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation:
            options["propagationPolicy"] = propagation
        if dry_run:
            options["dryRun"] = ["All"]
        return self.request("DELETE", path, body=options, content_type="application/json", what=what)

    def get_or_none(self, path, what=None):
        """The object, or None when it does not exist (404)."""
        try:
            return self.get(path, what=what)
        except NotFound:
            return None

    def list(self, path, convert: Callable[[dict], object], selector=None, chunk=500, what=None) -> List:
        """Every item of a list, converted page by page (memory follows the records, not the
        pages); restarts from the first page when the continue token expires.

        While one page is decoded and converted, the next is already being requested: its
        continue token is read from the head of the raw page (the API server writes a list's
        `metadata` before its `items`) and confirmed against the decoded page; when they differ,
        or the head cannot tell, the next page is requested afterwards as before."""
        what = what or f"list {path}"

        def fetch(token):
            query = {}
            if selector:
                query["labelSelector"] = selector
            if chunk:
                query["limit"] = str(chunk)
            if token:
                query["continue"] = token
            return self.request("GET", path, query=query, what=what, raw=True)

        with ThreadPoolExecutor(max_workers=1) as ahead:
            for _attempt in range(MAX_LIST_RESTARTS + 1):
                records, token, pending = [], None, None
                try:
                    while True:
                        data = pending.result() if pending is not None else fetch(token)
                        raw = isinstance(data, (bytes, bytearray))
                        early = _continue_token(data) if chunk and raw else None
                        pending = ahead.submit(fetch, early) if early else None
                        page = _decode(data, what) if raw else data
                        del data
                        items = page.get("items")
                        if not isinstance(items, list):
                            raise PluginError(f"the API server answered {what} without a list of items")
                        for item in items:
                            record = convert(item)
                            if record is not None:
                                records.append(record)
                        token = (page.get("metadata") or {}).get("continue") if chunk else None
                        del page, items
                        if token != early and pending is not None:
                            _settle(pending)
                            pending = None
                        if not token:
                            return records
                except ExpiredContinue:
                    if pending is not None:
                        _settle(pending)
                    if token:
                        continue
                    raise
                except PluginError:
                    if pending is not None:
                        _settle(pending)
                    raise
        raise PluginError(f"{what}: the continue token kept expiring; try a larger --chunk-size")

    def list_versioned(self, path, convert: Callable[[dict], object], selector=None, chunk=500,
                       what=None) -> Tuple[List, str]:
        """Every item of a list, converted, and the list's resourceVersion: where a watch of the
        same collection starts so that it misses nothing and repeats nothing. Paged like `list`;
        restarts from the first page when the continue token expires."""
        what = what or f"list {path}"
        for _attempt in range(MAX_LIST_RESTARTS + 1):
            records, token, version = [], None, None
            try:
                while True:
                    query = {}
                    if selector:
                        query["labelSelector"] = selector
                    if chunk:
                        query["limit"] = str(chunk)
                    if token:
                        query["continue"] = token
                    page = self.request("GET", path, query=query, what=what)
                    items = page.get("items")
                    if not isinstance(items, list):
                        raise PluginError(f"the API server answered {what} without a list of items")
                    for item in items:
                        record = convert(item)
                        if record is not None:
                            records.append(record)
                    meta = page.get("metadata") or {}
                    version = version or meta.get("resourceVersion")
                    token = meta.get("continue") if chunk else None
                    if not token:
                        if not version:
                            raise PluginError(f"the API server answered {what} without a resourceVersion")
                        return records, version
            except ExpiredContinue:
                if token:
                    continue
                raise
        raise PluginError(f"{what}: the continue token kept expiring; try a larger --chunk-size")

    def watch(self, path, resource_version, selector=None, timeout_seconds=300, what=None):
        """The events of a watch from `resource_version`, as (type, object) with type ADDED,
        MODIFIED, DELETED or BOOKMARK (bookmarks are asked for), read from the streamed JSON lines
        until the server ends the watch after `timeout_seconds`. Errors map as `request` maps them;
        410 Gone (the resourceVersion is too old), as the answer or as an ERROR event, is
        ExpiredContinue: the caller lists again."""
        import urllib3

        what = what or f"watch {path}"
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "timeoutSeconds": str(int(timeout_seconds))}
        if selector:
            query["labelSelector"] = selector
        headers = {"Accept": "application/json", "User-Agent": "kubectl-kvcache"}
        method, url, headers, _, _ = self.api.param_serialize(
            "GET", path, query_params=list(query.items()), header_params=headers, auth_settings=["BearerToken"])
        if self.impersonate_user:
            headers = urllib3.HTTPHeaderDict(headers)
            headers["Impersonate-User"] = self.impersonate_user
            for group in self.impersonate_groups:
                headers.add("Impersonate-Group", group)
        with self._lock:
            self.requests += 1
        # The server ends the watch after timeout_seconds; a read that waits longer than that
        # (plus slack) means the connection is gone.
        timeout = (self.timeout, timeout_seconds + 30)
        try:
            resp = self.api.call_api(method, url, header_params=headers, _request_timeout=timeout)
        except Exception as exc:   # noqa: BLE001 - mapped to one-line errors below
            raise _transport_error(exc, self.host, what) from exc
        if self.trace:
            from urllib.parse import urlencode

            with self._lock:
                self.trace(f"WATCH {path}?{urlencode(query)} -> {resp.status}")
        if resp.status >= 400:
            raise self._error(resp.status, resp.read(), what)
        stream = resp.response
        finished = False
        try:
            buffer = b""
            for chunk in stream.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield _watch_event(line, what)
            finished = True
            if buffer.strip():
                yield _watch_event(buffer, what)
        except PluginError:
            raise
        except Exception as exc:   # noqa: BLE001 - a broken stream is one line, like any transport error
            raise _transport_error(exc, self.host, what) from exc
        finally:
            if finished:
                stream.release_conn()       # read to the end: the connection can serve another request
            else:
                stream.close()              # left mid-stream: the connection is not reused

    # -- discovery -----------------------------------------------------------------------

    def served(self, group) -> dict:
        """{'preferred': version, 'versions': {version: {plural, ...}}} or NotFound."""
        if group in self._discovery:
            return self._discovery[group]
        try:
            info = self.get(f"/apis/{group}", what=f"discover the API group {group}")
        except NotFound as exc:
            raise NotFound(f"the API server does not serve the API group {group} "
                           f"(is the GPUStack Operator installed at a release that has it?)") from exc
        versions = {}
        for v in info.get("versions") or ():
            version = v.get("version")
            resources = self.get(f"/apis/{group}/{version}", what=f"discover {group}/{version}")
            versions[version] = {r.get("name") for r in resources.get("resources") or ()}
        result = {"preferred": (info.get("preferredVersion") or {}).get("version"), "versions": versions}
        self._discovery[group] = result
        return result

    def resource_version_for(self, group, plural) -> str:
        served = self.served(group)
        order = [served["preferred"]] + sorted(v for v in served["versions"] if v != served["preferred"])
        for version in order:
            if plural in served["versions"].get(version, ()):
                return version
        raise NotFound(f"the API server does not serve {plural}.{group} (is its CRD installed?)")


def _watch_event(line: bytes, what):
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise PluginError(f"the API server answered {what} with a line that is not JSON") from exc
    kind, obj = event.get("type"), event.get("object")
    if kind == "ERROR":
        obj = obj if isinstance(obj, dict) else {}
        message = obj.get("message") or ""
        if obj.get("code") == 410:
            raise ExpiredContinue(f"gone: {what}: {message}")
        raise PluginError(f"the API server ended {what} with an error ({obj.get('code')} "
                          f"{obj.get('reason') or ''}): {message}".replace("  ", " "))
    if not isinstance(obj, dict):
        raise PluginError(f"the API server answered {what} with an event without an object")
    return kind, obj


def _transport_error(exc, host, what) -> PluginError:
    """A transport failure of a streamed request as one line (the same wording as `request`)."""
    import urllib3

    if isinstance(exc, PluginError):
        return exc
    if isinstance(exc, urllib3.exceptions.SSLError):
        return PluginError(f"TLS with the API server at {host} failed: {_reason(exc)}")
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        return PluginError(f"the API server at {host} did not answer within the request timeout ({what})")
    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        return PluginError(f"cannot reach the API server at {host}: {_reason(exc.reason)}")
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        return PluginError(f"cannot reach the API server at {host} ({what}): {_reason(exc)}")
    raise exc


def _decode(data, what):
    try:
        return json.loads(data) if data else {}
    except ValueError as exc:
        raise PluginError(f"the API server answered {what} with something that is not JSON") from exc


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_HEAD = 16384


def _continue_token(data: bytes) -> Optional[str]:
    """The continue token in the head of a raw list page when its `metadata` comes before its
    `items`, as the API server writes lists; None when the head does not tell (the caller then
    waits for the decoded page, which always has the last word)."""
    head = data[:_HEAD].decode("utf-8", "ignore")
    try:
        i = _SPACE.match(head).end()
        if head[i] != "{":
            return None
        i += 1
        while True:
            key, i = _DECODER.raw_decode(head, _SPACE.match(head, i).end())
            i = _SPACE.match(head, i).end()
            if not isinstance(key, str) or head[i] != ":" or key == "items":
                return None
            value, i = _DECODER.raw_decode(head, _SPACE.match(head, i + 1).end())
            if key == "metadata":
                token = value.get("continue") if isinstance(value, dict) else None
                return token if isinstance(token, str) and token else None
            i = _SPACE.match(head, i).end()
            if head[i] != ",":
                return None
            i += 1
    except (ValueError, IndexError):
        return None


def _settle(future):
    """Wait for a request made ahead that is not wanted after all; its outcome does not matter."""
    future.exception()


def _entries(merged, key):
    """The dicts of a merged kubeconfig list (contexts, clusters, users), whatever wraps them."""
    return [getattr(e, "value", e) for e in merged.value.get(key) or ()]


def _reason(exc):
    text = str(exc)
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if m:
        return m.group(1).strip()
    m = re.search(r"(Connection refused|Name or service not known|timed out|certificate verify failed[^'\")]*)",
                  text)
    return m.group(1) if m else text.splitlines()[0][:200]


def collection_path(group, version, plural, namespace=None):
    base = "/api/v1" if group == "" else f"/apis/{group}/{version}"
    if namespace:
        return f"{base}/namespaces/{quote(namespace, safe='')}/{plural}"
    return f"{base}/{plural}"


def kubeconfig_names(conn: Connection, key: str) -> List[str]:
    """The names of the kubeconfig's `contexts`, `clusters` or `users` (merged as kubectl merges
    KUBECONFIG's paths); [] when there is no kubeconfig. For shell completion: never raises a
    config error, sends nothing."""
    from kubernetes.config import kube_config

    path = conn.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    existing = [p for p in (os.path.expanduser(p) for p in path.split(os.pathsep) if p) if os.path.exists(p)]
    if not existing:
        return []
    try:
        merged = kube_config.KubeConfigMerger(os.pathsep.join(existing)).config
        return sorted({str(e.get("name")) for e in _entries(merged, key) if isinstance(e, dict) and e.get("name")})
    except Exception:   # a broken kubeconfig completes nothing; the command itself reports it
        return []
