"""The in-process fake API behind the real kube.Client: discovery, paging, merge patches and error
mapping are the plugin's own code; only the HTTP round trip is replaced (FakeClient.request). For
command flows whose cluster state is easier to script than to create; faults on the wire are the
loopback fake server's job (tests/fakeserver.py)."""

import io
import json
import types

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.load import reader
from kubectl_kvcache.operator.api import GROUP, VERSION

NS, NAME = "gpustack-system", "model-deployment-kv-cache-dtype-owned"


def _setting_obj(value="true", editable=True, spec=None, rv="100", description="Hand the dtype to the engine"):
    obj = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
           "metadata": {"name": NAME, "namespace": NS, "resourceVersion": rv},
           "spec": {"value": value if spec is None else spec},
           "status": {"description": description, "sensitive": False}}
    if value is not None:
        obj["status"]["value"] = value
    if editable is not None:
        obj["status"]["editable"] = editable
    return obj


def _md(ns, name, kv=True, replicas=(1,)):
    spec = {"engine": {"name": "vLLM"},
            "roles": [{"name": f"r{i}", "kind": "server", **({} if r is None else {"replicas": r})}
                      for i, r in enumerate(replicas)]}
    if kv:
        spec["kvCache"] = {"poolRef": {"name": "b1"}}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _pod(ns, name, inject=True):
    labels = {"kvcache.gpustack.ai/inject": "true"} if inject else {"app": "x"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "main", "image": "vllm", "command": ["vllm", "serve", "m"]}]}}


class FakeAPI:
    """Just enough of an API server: discovery, the Setting (GET, merge PATCH with the
    resourceVersion precondition, dryRun), paged lists of ModelDeployments and Pods."""

    def __init__(self, setting=None, deployments=(), pods=(), setting_version="v1", served=("gpustack.ai",
                 "worker.gpustack.ai"), forbidden=(), operator=None, bindings=(), pools=None, logs=None,
                 metrics=None, nodes=None):
        self.setting = setting
        self.nodes = dict(nodes or {})       # name -> labels (GET /api/v1/nodes/NAME; absent: 404)
        self.bindings = list(bindings)       # listed by the gate of `on` (check's judgement)
        self.deployments = list(deployments)
        self.pools = None if pools is None else list(pools)     # None: kvcachepools not served
        self.pods = list(pods)
        self.logs = dict(logs or {})         # (namespace, pod) -> its log text (pods/log; forbidden: ("GET", "pods/log"))
        self.metrics = dict(metrics or {})   # (namespace, pod) -> its /metrics page (pods/proxy; absent: 404)
        self.configmaps = []                 # recovery records (`setting` notes a running one)
        self.setting_version = setting_version
        self.served = set(served)
        self.forbidden = set(forbidden)      # e.g. {("PATCH", "settings"), ("GET", "settings")}
        self.operator = operator             # None | "at-once" | int: status follows spec after n GETs
        self.calls = []
        self.before_patch = None             # a concurrent writer between read and patch
        self._gets_since_patch = 0

    # routing ---------------------------------------------------------------------------
    def handle(self, method, path, query, body, content_type):
        self.calls.append(types.SimpleNamespace(method=method, path=path, query=dict(query or {}),
                                                body=body, content_type=content_type))
        parts = path.strip("/").split("/")
        if path == "/apis":     # as a server before aggregated discovery: groups, one request each
            return {"kind": "APIGroupList", "groups": [{"name": g} for g in sorted(self.served)]}
        if parts[0] == "apis" and len(parts) == 2:
            return self._group(parts[1])
        if parts[0] == "apis" and len(parts) == 3:
            return self._group_version(parts[1], parts[2])
        if "settings" in parts:
            self._check_forbidden(method, "settings")
            assert parts[:3] == ["apis", "gpustack.ai", self.setting_version], path
            assert parts[3:] == ["namespaces", NS, "settings", NAME], path
            return self._setting_get() if method == "GET" else self._setting_patch(query, body, content_type)
        if parts[-1] == "kvcachepools" and self.pools is not None:
            self._check_forbidden(method, "kvcachepools")
            assert method == "GET" and len(parts) == 4, path      # cluster-scoped
            return self._page(self.pools, query)
        if parts[-1] == "kvcachepoolbindings":
            self._check_forbidden(method, "kvcachepoolbindings")
            assert method == "GET" and len(parts) == 4, path
            return self._page(self.bindings, query)
        if parts[0] == "apis" and parts[1] in ("apps", "batch") and len(parts) == 4:
            self._check_forbidden(method, parts[3])      # workload templates: none here
            return self._page([], query)
        if parts[-1] == "modeldeployments":
            self._check_forbidden(method, "modeldeployments")
            assert method == "GET" and len(parts) == 4, path  # cluster-wide
            return self._page(self.deployments, query)
        if path == "/api/v1/configmaps":     # `setting on|off` looks for running recoveries (their records)
            self._check_forbidden(method, "configmaps")
            assert method == "GET" and query["labelSelector"] == "app.kubernetes.io/managed-by=kubectl-kvcache"
            return self._page(self.configmaps, query)
        if len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods" and parts[6] == "log":
            self._check_forbidden(method, "pods/log")
            if (parts[3], parts[5]) not in self.logs:
                raise HTTPError(404, {"message": f'pods "{parts[5]}" not found', "reason": "NotFound"})
            return self.logs[(parts[3], parts[5])]
        if len(parts) == 8 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods" and parts[6] == "proxy":
            self._check_forbidden(method, "pods/proxy")
            key = (parts[3], parts[5].rsplit(":", 1)[0])
            if key not in self.metrics:
                raise HTTPError(404, {"message": "404 page not found", "reason": "NotFound"})
            return self.metrics[key]
        if path == "/api/v1/nodes":
            self._check_forbidden(method, "nodes")
            assert method == "GET", path
            return self._page([{"metadata": {"name": n, "labels": dict(labels)}} for n, labels in self.nodes.items()],
                              query)
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
            self._check_forbidden(method, "nodes")
            assert method == "GET", path
            if parts[3] not in self.nodes:
                raise HTTPError(404, {"message": f'nodes "{parts[3]}" not found', "reason": "NotFound"})
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"name": parts[3], "labels": dict(self.nodes[parts[3]])}}
        if path == "/api/v1/pods":
            self._check_forbidden(method, "pods")
            assert method == "GET"
            key, _, value = query["labelSelector"].partition("=")
            return self._page([p for p in self.pods if p["metadata"]["labels"].get(key) == value], query)
        raise AssertionError(f"unexpected request {method} {path}")

    def _check_forbidden(self, method, plural):
        if (method, plural) in self.forbidden:
            verb = {"GET": "get", "PATCH": "patch"}[method]
            raise HTTPError(403, {"message": f'{plural} is forbidden: User "u" cannot {verb} resource '
                                             f'"{plural}"', "reason": "Forbidden"})

    def _group(self, group):
        if group not in self.served:
            raise HTTPError(404, {"message": "the server could not find the requested resource"})
        version = self.setting_version if group == "gpustack.ai" else VERSION
        return {"versions": [{"version": version}], "preferredVersion": {"version": version}}

    def _group_version(self, group, version):
        names = ["settings", "settings/status"] if group == "gpustack.ai" else ["modeldeployments",
                                                                               "kvcachepoolbindings"]
        if group != "gpustack.ai" and self.pools is not None:
            names.append("kvcachepools")
        return {"resources": [{"name": n} for n in names]}

    def _page(self, items, query):
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or len(items) or 1)
        page = items[start:start + limit]
        more = start + limit < len(items)
        return {"items": json.loads(json.dumps(page)), "metadata": {"continue": str(start + limit) if more else ""}}

    def _setting_get(self):
        if self.setting is None:
            raise HTTPError(404, {"message": f'settings.gpustack.ai "{NAME}" not found', "reason": "NotFound"})
        self._gets_since_patch += 1
        if isinstance(self.operator, int) and self._gets_since_patch >= self.operator:
            self.play_operator()
        return json.loads(json.dumps(self.setting))

    def _setting_patch(self, query, body, content_type):
        assert content_type == "application/merge-patch+json"
        assert set(body) == {"metadata", "spec"} and set(body["metadata"]) <= {"resourceVersion", "annotations"}, body
        assert "resourceVersion" in body["metadata"], body
        assert set(body["spec"]) == {"value"} and body["spec"]["value"] in ("true", "false"), body
        if self.before_patch:
            self.before_patch(self)
        if self.setting is None:
            raise HTTPError(404, {"message": "not found"})
        current = self.setting["metadata"]["resourceVersion"]
        if body["metadata"]["resourceVersion"] != current:
            raise HTTPError(409, {"message": 'Operation cannot be fulfilled on settings.gpustack.ai '
                                             f'"{NAME}": the object has been modified', "reason": "Conflict"})
        result = json.loads(json.dumps(self.setting))
        result["spec"]["value"] = body["spec"]["value"]
        for k, v in (body["metadata"].get("annotations") or {}).items():       # only recover's mark is removed
            annotations = result["metadata"].setdefault("annotations", {})
            annotations.pop(k, None) if v is None else annotations.__setitem__(k, v)
        if query.get("dryRun") == "All":
            return result
        result["metadata"]["resourceVersion"] = str(int(current) + 1)
        self.setting = result
        self._gets_since_patch = 0
        if self.operator == "at-once":
            self.play_operator()
        return json.loads(json.dumps(self.setting))

    def play_operator(self):
        self.setting["status"]["value"] = self.setting["spec"]["value"]
        self.setting["metadata"]["resourceVersion"] = str(int(self.setting["metadata"]["resourceVersion"]) + 1)

    def bump(self):
        """Someone else writes the object: its resourceVersion moves."""
        self.setting["metadata"]["resourceVersion"] = str(int(self.setting["metadata"]["resourceVersion"]) + 1)

    @property
    def patches(self):
        return [c for c in self.calls if c.method == "PATCH"]


class HTTPError(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status, self.body = status, body


class FakeClient(kube.Client):
    """The real Client (get, list paging, discovery, patch_merge, error mapping) over FakeAPI."""

    def __init__(self, api):  # no kubeconfig: the transport is replaced below
        self.fake = api
        self.requests = 0
        self.namespace = "default"
        self.host = "https://fake"
        self._discovery = {}
        self._undiscovered = {}
        self._token = None

    def request(self, method, path, query=None, body=None, content_type=None, what=None, raw=False,
                accept=None, timeout=None, limit=None, sink=None):
        """Answers decoded whatever `raw` asks: Client.list takes bytes or a decoded page; a text
        body (a log) is handed to `sink` as the transport hands it (whole lines, then end)."""
        self.requests += 1
        try:
            answer = self.fake.handle(method, path, query, body, content_type)
        except HTTPError as exc:
            raise self._error(exc.status, json.dumps(exc.body).encode(), what or f"{method} {path}")
        if sink is not None:
            data = answer.encode()[:limit] if limit is not None else answer.encode()
            sink.restart()
            end = data.rfind(b"\n") + 1
            if end:
                sink.lines(data[:end])
            if data[end:]:
                sink.cut_line(data[end:])
            sink.end(False)
            return None
        return answer


class TTY(io.StringIO):
    def isatty(self):
        return True


def run_cli(api, argv, stdin=None, monkeypatch=None):
    # a terminal session: the question is read from stdin and written to stderr, both on the terminal
    out, err = io.StringIO(), (TTY() if isinstance(stdin, TTY) else io.StringIO())
    monkeypatch.setattr(reader, "open_client", lambda *a, **k: FakeClient(api))
    code = cli.main(argv, stdin=stdin if stdin is not None else io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run(monkeypatch):
    return lambda api, argv, stdin=None: run_cli(api, argv, stdin, monkeypatch)


def _one_error_line(err, after=0):
    """The error is one line, the last one; `after` progress lines may come before it."""
    lines = err.strip().splitlines()
    assert len(lines) == after + 1 and lines[-1].startswith("error: "), err
    return lines[-1]


def _cluster_api(**kw):
    deployments = [_md("a", "m1", replicas=(2, 1)), _md("a", "m2", replicas=(None,)), _md("b", "m3"),
                   _md("c", "plain", kv=False, replicas=(5,))]
    pods = [_pod("a", "i1"), _pod("d", "i2"), _pod("d", "other", inject=False)]
    kw.setdefault("bindings", [_binding("a", "b1"), _binding("b", "b1")])
    return FakeAPI(kw.pop("setting", _setting_obj("true")), deployments, pods, **kw)


def _binding(ns, name, dtype="fp8"):
    """On a domain of its own: one pool's Bindings sharing one are contested (judge/checks/claims.py)."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"poolRef": {"name": "pool"}, "domain": {"name": f"{ns}-{name}", "blockSize": 16, "dtype": dtype}}}


