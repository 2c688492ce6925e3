"""Seed a Kubernetes API server with a GPUStack-Operator-shaped workload for the bench.

Per namespace (`--pods-per-namespace`, default 100 engine Pods):
  - 2 KVCachePoolBindings (vLLM `fp8`, SGLang `fp8_e4m3`), status with usedBy;
  - ModelDeployments in cycles of 7 shapes, 20 Pods a cycle: vLLM server x4 (OK), SGLang
    server x3 (OK), SGLang prefill/decode x2+x2 with a routing proxy container and a router
    Pod (OK; the router is no engine replica), vLLM not rolled yet x2 (MISSING), vLLM with its
    own flag in extraArgs x2 (MISMATCH), SGLang on the fp8 Binding x2 (REJECTED, last exit 2),
    vLLM take-over role running `bash -c "exec vllm serve ..."` x2 (OK, through the shell
    parser);
  - Pods shaped like examples/cluster.json (~4-6 KB each as the API server returns them,
    managedFields included), status written through pods/status;
  - `--injected-ratio` (default 0.1) more Pods opted into injection
    (kvcache.gpustack.ai/inject=true), owned by a ReplicaSet.

Every request goes over keep-alive HTTPS connections from a thread pool. Namespaces carry the
label kvcache-bench=true, so `--delete` (or `kubectl delete ns -l kvcache-bench=true`) removes
everything again.

    bench/seed.py --kubeconfig KUBECONFIG --pods 1000            # namespaces bench-0000..0009
    bench/seed.py --kubeconfig KUBECONFIG --pods 10000 --from 1000   # top up to 10,000
    bench/seed.py --kubeconfig KUBECONFIG --delete
"""

import argparse
import base64
import hashlib
import http.client
import json
import os
import ssl
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

BENCH_LABEL = "kvcache-bench"
GROUP = "worker.gpustack.ai"
VERSION = "v1alpha1"
MD_LABELS = ("app.kubernetes.io/name", "model-deployment")
POD_SELECTOR = "=".join(MD_LABELS)
NAMESPACE_FORMAT = "bench-{:04d}"
FIELD_MANAGER = "kvcache-bench"
POOL, BACKEND = "h100-pool", "mooncake"
CLIENT_ENDPOINT = "mooncake-master.gpustack-system.svc:50051"


# -- a small keep-alive HTTPS client ---------------------------------------------------------

class Api:
    """Raw JSON requests over one keep-alive HTTPS connection per thread."""

    def __init__(self, server, context, headers=None):
        parts = urlsplit(server)
        self.server = server
        self.host, self.port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self.https = parts.scheme == "https"
        self.context = context
        self.headers = dict(headers or {})
        self._local = threading.local()

    @classmethod
    def from_kubeconfig(cls, path, context_name=None):
        """The current (or named) context of a kubeconfig: client certificates, a bearer token or
        token file; CA data or file; insecure-skip-tls-verify. No exec/auth-provider plugins."""
        with open(os.path.expanduser(path)) as f:
            text = f.read()
        try:
            cfg = json.loads(text)       # the harness writes JSON kubeconfigs
        except ValueError:
            import yaml

            cfg = yaml.safe_load(text)
        context_name = context_name or cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in cfg.get("users") or () if u["name"] == ctx.get("user")), {}) or {}
        base = os.path.dirname(os.path.abspath(os.path.expanduser(path)))

        def material(key):
            if user.get(key + "-data"):
                return base64.b64decode(user[key + "-data"])
            if user.get(key):
                with open(os.path.join(base, user[key]), "rb") as fh:
                    return fh.read()
            return None

        if cluster.get("insecure-skip-tls-verify"):
            sslctx = ssl._create_unverified_context()
        elif cluster.get("certificate-authority-data"):
            sslctx = ssl.create_default_context(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif cluster.get("certificate-authority"):
            sslctx = ssl.create_default_context(cafile=os.path.join(base, cluster["certificate-authority"]))
        else:
            sslctx = ssl.create_default_context()
        cert, key = material("client-certificate"), material("client-key")
        if cert and key:
            with tempfile.TemporaryDirectory() as tmp:
                cpath, kpath = os.path.join(tmp, "c.pem"), os.path.join(tmp, "k.pem")
                for p, data in ((cpath, cert), (kpath, key)):
                    with open(os.open(p, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as fh:
                        fh.write(data)
                sslctx.load_cert_chain(cpath, kpath)
        headers = {}
        token = user.get("token")
        if not token and user.get("tokenFile"):
            with open(user["tokenFile"]) as fh:
                token = fh.read().strip()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return cls(cluster["server"], sslctx, headers)

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=120)
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            self._local.conn = conn
        return conn

    def raw(self, method, path, body=None, content_type="application/json", query=None, accept="application/json"):
        """(status, body bytes); reconnects once when a kept-alive connection was closed."""
        if query:
            path += "?" + urlencode(query)
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = dict(self.headers, Accept=accept)
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise

    def call(self, method, path, body=None, content_type="application/json", ok=(200, 201), query=None):
        status, raw = self.raw(method, path, body, content_type, query)
        if status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {raw[:500].decode('utf-8', 'replace')}")
        return json.loads(raw) if raw else {}


# -- object shapes (after examples/cluster.json) ---------------------------------------------

_HF_ENV = [{"name": "HF_HOME", "value": "/models/.hf"},
           {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"key": "token", "name": "hf-token",
                                                                 "optional": True}}}]
_VLLM_ENV = _HF_ENV + [{"name": "VLLM_USAGE_SOURCE", "value": "gpustack-operator"},
                       {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}]
_LMCACHE = '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'
_HICACHE = ('{"backend_name":"gpustack","module_path":"gpustack_kvcache.sglang",'
            '"class_name":"GPUStackHiCacheStorage"}')
_VLLM_IMAGE = "gpustack/runner:cuda12.9-vllm0.29.0"
_SGL_IMAGE = "gpustack/runner:cuda12.9-sglang0.5.18"
_VOLUMES = [{"name": "models", "persistentVolumeClaim": {"claimName": "model-cache"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
_TOLERATIONS = [
    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
     "tolerationSeconds": 300},
]


def _vllm_argv(model, name, dtype=True, extra=()):
    argv = ["vllm", "serve", model, "--kv-transfer-config", _LMCACHE, "--block-size", "16",
            "--enable-prefix-caching"]
    if dtype:
        argv += ["--kv-cache-dtype", "fp8"]
    argv += ["--served-model-name", name, "--max-model-len", "32768", "--gpu-memory-utilization", "0.90",
             *extra, "--host", "0.0.0.0", "--port", "8000"]
    return argv


def _sgl_argv(model, dtype, extra=()):
    return ["python3", "-m", "sglang.launch_server", "--model-path", model, "--page-size", "64",
            "--enable-hierarchical-cache", "--hicache-storage-backend", "dynamic",
            "--hicache-storage-backend-extra-config", _HICACHE, "--kv-cache-dtype", dtype, *extra,
            "--trust-remote-code", "--mem-fraction-static", "0.85", "--host", "0.0.0.0", "--port", "30000"]


def _role(name, kind, replicas, extra=(), command=None):
    role = {"name": name, "kind": kind, "replicas": replicas, "size": 1, "instanceType": "nvidia-h100"}
    if extra:
        role["extraArgs"] = list(extra)
    if command:
        role["command"] = list(command)
    return role


def _cycle(c):
    """The ModelDeployments of one cycle: name, spec fields, and each role's Pod argv."""
    chat, sgl, pd, legacy, own, bad, take = (f"{p}-{c}" for p in
                                             ("chat", "sgl", "pd", "legacy", "own", "sglbad", "takeover"))
    take_cmd = ["bash", "-c", "exec vllm serve /models/bge --kv-cache-dtype fp8 --port 8000"]
    return [
        dict(name=chat, engine=("vllm", "0.29.0"), binding="vllm-fp8", model="Qwen/Qwen3-8B",
             roles=[_role("server", "server", 4, ["--max-num-seqs", "256"])],
             pods={"server": (_vllm_argv("Qwen/Qwen3-8B", chat, extra=["--max-num-seqs", "256"]), _VLLM_IMAGE)}),
        dict(name=sgl, engine=("sglang", "0.5.18"), binding="sgl-fp8", model="deepseek-ai/DeepSeek-V2-Lite-Chat",
             roles=[_role("server", "server", 3, ["--tp-size", "2"])],
             pods={"server": (_sgl_argv("deepseek-ai/DeepSeek-V2-Lite-Chat", "fp8_e4m3", ["--tp-size", "2"]),
                              _SGL_IMAGE)}),
        dict(name=pd, engine=("sglang", "0.5.18"), binding="sgl-fp8", model="Qwen/Qwen3-32B",
             roles=[_role("prefill", "prefill", 2), _role("decode", "decode", 2)],
             pods={"prefill": (_sgl_argv("Qwen/Qwen3-32B", "fp8_e4m3", ["--disaggregation-mode", "prefill"]),
                               _SGL_IMAGE),
                   "decode": (_sgl_argv("Qwen/Qwen3-32B", "fp8_e4m3", ["--disaggregation-mode", "decode"]),
                              _SGL_IMAGE)},
             proxy=True, router=1),
        dict(name=legacy, engine=("vllm", "0.29.0"), binding="vllm-fp8", model="mistralai/Mistral-7B-Instruct-v0.3",
             roles=[_role("server", "server", 2)],
             pods={"server": (_vllm_argv("mistralai/Mistral-7B-Instruct-v0.3", legacy, dtype=False), _VLLM_IMAGE)}),
        dict(name=own, engine=("vllm", "0.29.0"), binding="vllm-fp8", model="meta-llama/Llama-3.1-8B-Instruct",
             roles=[_role("server", "server", 2, ["--kv-cache-dtype", "auto"])],
             pods={"server": (_vllm_argv("meta-llama/Llama-3.1-8B-Instruct", own,
                                         extra=["--kv-cache-dtype", "auto"]), _VLLM_IMAGE)}),
        dict(name=bad, engine=("sglang", "0.5.18"), binding="vllm-fp8", model="Qwen/Qwen3-14B",
             roles=[_role("server", "server", 2)],
             pods={"server": (_sgl_argv("Qwen/Qwen3-14B", "fp8"), _SGL_IMAGE)}, exit_code=2),
        dict(name=take, engine=("vllm", "0.29.0"), binding="vllm-fp8", model="BAAI/bge-m3",
             roles=[_role("embed", "server", 2, command=take_cmd)],
             pods={"embed": (take_cmd, _VLLM_IMAGE)}),
    ]


def domain_of(ns, binding):
    """A Binding's reuse domain: one per namespace and Binding (one domain.name claimed by two
    Bindings on one pool is managed for neither: kv_cache_pool.go, DomainClaimedByMultipleBindings)."""
    return f"{'chat' if binding == 'vllm-fp8' else 'sgl'}-{ns}"


def binding_objects(ns):
    out = []
    for name, pool, dtype in (("vllm-fp8", POOL, "fp8"), ("sgl-fp8", POOL, "fp8_e4m3")):
        domain = domain_of(ns, name)
        out.append({
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns, "labels": {"worker.gpustack.ai/pool": pool}},
            "spec": {"poolRef": {"name": pool}, "domain": {"name": domain, "blockSize": 16, "dtype": dtype},
                     "quotaCeiling": "1Ti"},
        })
    return out


def binding_status(binding, users):
    """A Ready Binding as the operator's pool pass writes it (api/worker/v1alpha1/kv_cache_pool_binding.go:
    phase Provisioning|Ready|Degraded|Error|Deleting, one condition per axis; kv_cache_pool.go
    summarizeKVCachePoolBinding: every axis True is Ready): usable by a deployment
    (operator/binding_status.py)."""
    d = binding["spec"]["domain"]
    axes = (("DomainExclusive", "DomainClaimed", f"domain '{d['name']}' claimed on pool {POOL}"),
            ("QuotaObserved", "QuotaObserved", "the master reports the domain's usage"),
            ("QuotaGranted", "QuotaGranted", "the ceiling is granted"))
    return {"phase": "Ready",
            "conditions": [{"type": t, "status": "True", "reason": r, "message": m,
                            "lastTransitionTime": "2025-11-03T08:20:11Z", "observedGeneration": 1}
                           for t, r, m in axes],
            "usedBy": [{"kind": "ModelDeployment", "namespace": binding["metadata"]["namespace"], "name": u}
                       for u in users]}


def deployment_object(ns, md):
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
        "metadata": {"name": md["name"], "namespace": ns, "labels": {"gpustack.ai/model": md["model"].split("/")[-1].lower()}},
        "spec": {"engine": {"name": md["engine"][0], "version": md["engine"][1]},
                 "kvCache": {"poolRef": {"name": md["binding"]}},
                 "model": {"name": md["model"]},
                 "roles": md["roles"]},
    }


def deployment_status(md, dtype, ns=None):
    """The status the operator writes, in the shape of its Go types (api/worker/v1alpha1/
    model_deployment.go, ModelDeploymentStatus / ModelDeploymentRoleStatus) that the CRD
    (tests/cluster/crds/worker.gpustack.ai_modeldeployments.yaml) requires: per role name, desired,
    ready, quotaReserved, unmanaged (a take-over role: it sets command) and kind (lowercase). There
    are no replicas/readyReplicas/updatedReplicas. No ReplicasUpToDate condition is written (as by
    an operator release before it): the argv alone says which replicas have rolled, and the
    not-rolled-yet cycle stays MISSING."""
    return {"phase": "Ready",
            "kvCache": {"binding": md["binding"], "pool": POOL,
                        "domain": {"blockSize": 16, "dtype": dtype, "name": domain_of(ns, md["binding"])}},
            "roles": [{"name": r["name"], "desired": r["replicas"],
                       "ready": 0 if md.get("exit_code") is not None else r["replicas"],
                       "quotaReserved": r["replicas"], "unmanaged": bool(r.get("command")),
                       "kind": r["kind"].lower()}
                      for r in md["roles"]]}


def _hex(seed, n):
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def _container(name, image, command=None, args=None, env=None, port=8000):
    c = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
         "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
         "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/health", "port": "http", "scheme": "HTTP"},
                            "initialDelaySeconds": 30, "periodSeconds": 10, "successThreshold": 1,
                            "timeoutSeconds": 5},
         "resources": {"limits": {"cpu": "16", "memory": "192Gi", "nvidia.com/gpu": "2"},
                       "requests": {"cpu": "16", "memory": "192Gi", "nvidia.com/gpu": "2"}},
         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "FallbackToLogsOnError",
         "volumeMounts": [{"mountPath": "/models", "name": "models"}, {"mountPath": "/dev/shm", "name": "dshm"}]}
    if command:
        c["command"] = list(command)
    if args:
        c["args"] = list(args)
    if env:
        c["env"] = env
    return c


# the Nodes the seeded Pods are bound to (spec.nodeName), each Pod to one by a hash of its name;
# bench/observe.py spreads them over many GPU Nodes, the other benches keep the one
NODES = ("gpu-h100-03",)


def node_of(pod_name):
    return NODES[0] if len(NODES) == 1 else NODES[int(_hex(pod_name, 8), 16) % len(NODES)]


def _pod_spec(pod_name, containers, subdomain=None):
    spec = {"containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
            "hostname": pod_name, "nodeName": node_of(pod_name), "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "serviceAccountName": "default", "terminationGracePeriodSeconds": 60,
            "tolerations": _TOLERATIONS, "volumes": _VOLUMES}
    if subdomain:
        spec["subdomain"] = subdomain
    return spec


def pod_status(pod, exit_code=None):
    names = [c["name"] for c in pod["spec"]["containers"]]
    uid = _hex(pod["metadata"]["namespace"] + pod["metadata"]["name"], 64)
    statuses = []
    for n, c in zip(names, pod["spec"]["containers"]):
        st = {"containerID": f"containerd://{_hex(uid + n, 64)}", "image": "docker.io/" + c["image"],
              "imageID": f"docker.io/{c['image'].split(':')[0]}@sha256:{_hex(c['image'], 64)}",
              "lastState": {}, "name": n, "ready": True, "restartCount": 0, "started": True,
              "state": {"running": {"startedAt": "2026-03-10T09:02:14Z"}}}
        if exit_code is not None and n == "main":
            st.update(ready=False, started=False, restartCount=7,
                      state={"waiting": {"reason": "CrashLoopBackOff",
                                         "message": f"back-off 5m0s restarting failed container={n}"}},
                      lastState={"terminated": {"exitCode": exit_code, "reason": "Error",
                                                "startedAt": "2026-03-10T09:33:17Z",
                                                "finishedAt": "2026-03-10T09:33:24Z",
                                                "message": "launch_server.py: error: argument --kv-cache-dtype: "
                                                           "invalid choice: 'fp8'"}})
        statuses.append(st)
    cond = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-03-10T09:02:10Z"}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {"phase": "Running", "conditions": cond, "containerStatuses": statuses, "hostIP": "10.20.0.13",
            "hostIPs": [{"ip": "10.20.0.13"}], "podIP": "10.244.3.44", "podIPs": [{"ip": "10.244.3.44"}],
            "qosClass": "Guaranteed", "startTime": "2026-03-10T09:02:10Z"}


def deployment_pods(ns, md, uid):
    """(pod, status) for every replica of every role of a cycle deployment (+ its router)."""
    out = []
    owner = [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "name": md["name"],
              "uid": uid, "controller": True, "blockOwnerDeletion": True}]
    hash_ = _hex(md["name"], 10)
    for role in md["roles"]:
        argv, image = md["pods"][role["name"]]
        for i in range(role["replicas"]):
            pod_name = f"{md['name']}-{role['name']}-{i}"
            env = _VLLM_ENV if image == _VLLM_IMAGE else _HF_ENV
            containers = [_container("main", image, command=argv, env=env,
                                     port=8000 if image == _VLLM_IMAGE else 30000)]
            if md.get("proxy") and role["name"] == "decode":
                containers.insert(0, _container("proxy", "gpustack/router:v0.3.0", command=[
                    "/usr/local/bin/gpustack-router", "proxy", "--listen", "0.0.0.0:8000", "--upstream",
                    "http://127.0.0.1:30000", "--bootstrap-upstream", f"{md['name']}-prefill-0.{md['name']}:8998"]))
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": pod_name, "namespace": ns,
                "labels": {"app.kubernetes.io/component": role["name"], "app.kubernetes.io/instance": md["name"],
                           "app.kubernetes.io/managed-by": "gpustack-operator", MD_LABELS[0]: MD_LABELS[1],
                           "modeldeployment.gpustack.ai/role-kind": role["kind"]},
                "annotations": {"modeldeployment.gpustack.ai/spec-hash": hash_},
                "ownerReferences": owner},
                "spec": _pod_spec(pod_name, containers, subdomain=md["name"])}
            out.append((pod, pod_status(pod, md.get("exit_code"))))
    for i in range(md.get("router", 0)):
        pod_name = f"{md['name']}-router-{i}"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": pod_name, "namespace": ns,
            "labels": {"app.kubernetes.io/component": "router", "app.kubernetes.io/instance": md["name"],
                       "app.kubernetes.io/managed-by": "gpustack-operator", MD_LABELS[0]: MD_LABELS[1]},
            "annotations": {"modeldeployment.gpustack.ai/spec-hash": hash_},
            "ownerReferences": owner},
            "spec": _pod_spec(pod_name, [_container("router", "gpustack/router:v0.3.0", command=[
                "/usr/local/bin/gpustack-router", "serve", "--prefill", f"{md['name']}-prefill-0.{md['name']}:8000",
                "--decode", f"{md['name']}-decode-0.{md['name']}:8000"])])}
        out.append((pod, pod_status(pod)))
    return out


def injected_pod(ns, i):
    """A Pod opted into injection, as the webhook left it (args end with the dtype)."""
    rs = f"notebook-{i // 5}-{_hex(ns + str(i // 5), 9)}"
    name = f"{rs}-{_hex(ns + str(i), 5)}"
    if i % 2 == 0:
        engine, binding, image = "vLLM", "vllm-fp8", "vllm/vllm-openai:v0.29.0"
        container = _container("vllm", image, command=["vllm", "serve"],
                               args=["meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.85",
                                     "--kv-cache-dtype", "fp8"], env=_HF_ENV)
    else:
        engine, binding, image = "SGLang", "sgl-fp8", "lmsysorg/sglang:v0.5.18-cu129"
        container = _container("sglang", image, command=["python3", "-m", "sglang.launch_server"],
                               args=["--model-path", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3"],
                               env=_HF_ENV, port=30000)
    injected = json.dumps({"binding": binding, "engine": engine, "domain": domain_of(ns, binding),
                           "container": container["name"]},
                          separators=(",", ":"))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": ns,
        "labels": {"app.kubernetes.io/name": f"notebook-{i // 5}", "kvcache.gpustack.ai/inject": "true",
                   "pod-template-hash": rs.rsplit("-", 1)[1]},
        "annotations": {"kvcache.gpustack.ai/binding": binding, "kvcache.gpustack.ai/engine": engine,
                        "kvcache.gpustack.ai/injected": injected,
                        "kvcache.gpustack.ai/client-config": json.dumps(
                            {"endpoint": CLIENT_ENDPOINT, "pool": POOL,
                             "domain": domain_of(ns, binding), "blockSize": 16}, separators=(",", ":"))},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "controller": True,
                             "blockOwnerDeletion": True, "uid": "81ca661b-8786-58ee-a150-" + _hex(rs, 12)}]},
        "spec": _pod_spec(name, [container])}
    return pod, pod_status(pod)


def workload_objects(ns, injected, others=3, revisions=3):
    """The workloads behind the injected Pods (a Deployment and its ReplicaSet per 5 Pods, their
    templates opted in) and `others` ordinary web Deployments with `revisions` ReplicaSets each
    (old revisions scaled to 0, as Deployments keep them): what `check` reads for opt-ins."""
    out = []

    def pair(name, template, replicas, revs, hashes=None):
        labels = {"app.kubernetes.io/name": name}
        out.append({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})
        for r in range(revs):
            h = hashes[r] if hashes else _hex(f"{ns}/{name}/{r}", 9)
            tpl = json.loads(json.dumps(template))
            tpl["metadata"]["labels"]["pod-template-hash"] = h
            out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": f"{name}-{h}", "namespace": ns,
                                     "labels": dict(labels, **{"pod-template-hash": h}),
                                     "annotations": {"deployment.kubernetes.io/revision": str(r + 1)}},
                        "spec": {"replicas": replicas if r == revs - 1 else 0,
                                 "selector": {"matchLabels": dict(labels, **{"pod-template-hash": h})},
                                 "template": tpl}})

    for k in range((injected + 4) // 5):
        pod, _ = injected_pod(ns, k * 5)
        c = dict(pod["spec"]["containers"][0])
        if c.get("args", [])[-2:-1] == ["--kv-cache-dtype"]:
            c["args"] = c["args"][:-2]          # the template as written: the webhook adds the flag
        ann = {key: v for key, v in pod["metadata"]["annotations"].items()
               if key in ("kvcache.gpustack.ai/binding", "kvcache.gpustack.ai/engine")}
        template = {"metadata": {"labels": {"app.kubernetes.io/name": f"notebook-{k}",
                                            "kvcache.gpustack.ai/inject": "true"}, "annotations": ann},
                    "spec": {"containers": [c], "tolerations": _TOLERATIONS, "volumes": _VOLUMES}}
        pair(f"notebook-{k}", template, 5, 1, [_hex(ns + str(k), 9)])   # the injected Pods' owner
    for j in range(others):
        template = {"metadata": {"labels": {"app.kubernetes.io/name": f"web-{j}"}},
                    "spec": {"containers": [_container("web", "nginx:1.27", args=["nginx", "-g", "daemon off;"],
                                                       port=8080)], "volumes": _VOLUMES}}
        pair(f"web-{j}", template, 2, revisions)
    return out


def namespace_plan(index, pods, injected_ratio):
    """(namespace, bindings, [deployment dicts with their pod count]) with exactly `pods` engine-labelled Pods."""
    ns = NAMESPACE_FORMAT.format(index)
    deployments, count, c = [], 0, 0
    while count < pods:
        for md in _cycle(c):
            if count >= pods:
                break
            n = sum(r["replicas"] for r in md["roles"]) + md.get("router", 0)
            md["limit"] = min(n, pods - count)
            count += md["limit"]
            deployments.append(md)
        c += 1
    return ns, binding_objects(ns), deployments, int(round(pods * injected_ratio))


# -- seeding -----------------------------------------------------------------------------------

def _pods_path(ns):
    return f"/api/v1/namespaces/{ns}/pods"


def _crd_path(ns, plural):
    return f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{plural}"


def _create(api, path, obj, status=None, status_type="application/merge-patch+json"):
    """POST (409 -> already there, kept), then the status subresource."""
    q = {"fieldManager": FIELD_MANAGER}
    st, raw = api.raw("POST", path, obj, query=q)
    if st == 409:
        created = api.call("GET", f"{path}/{obj['metadata']['name']}")
    elif st in (200, 201):
        created = json.loads(raw)
    else:
        raise RuntimeError(f"POST {path}: HTTP {st}: {raw[:500].decode('utf-8', 'replace')}")
    if status is not None:
        api.call("PATCH", f"{path}/{obj['metadata']['name']}/status", {"status": status}, status_type, query=q)
    return created


def seed(api, pods, start=0, pods_per_namespace=100, injected_ratio=0.1, workers=12, log=None,
         with_workloads=True):
    """Namespaces so that the cluster holds `pods` engine-labelled Pods in bench namespaces,
    assuming the first `start` are already there (namespaces are filled in order)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    t0 = time.monotonic()
    plans = []
    n, index = 0, 0
    while n < pods:
        size = min(pods_per_namespace, pods - n)
        if n >= start:
            plans.append(namespace_plan(index, size, injected_ratio))
        elif n + size > start:
            raise ValueError(f"--from {start} is not at a namespace boundary of {pods_per_namespace}")
        n += size
        index += 1
    counts = {"pods": 0, "requests": 0}
    lock = threading.Lock()
    ensure_pool(api)

    def bump(k, v=1):
        with lock:
            counts[k] += v

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for ns, _b, _d, _i in plans:
            api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": ns, "labels": {BENCH_LABEL: "true"}}}, ok=(201, 409))
        # Bindings and deployments first: the Pods' owner references carry the deployments' uids.
        jobs, workloads = [], 0
        plans_injected = {p[0]: p[3] for p in plans}.get
        for ns, bindings, deployments, _ in plans:
            users = {}
            for md in deployments:
                users.setdefault(md["binding"], []).append(md["name"])
            for b in bindings:
                jobs.append(pool.submit(_create, api, _crd_path(ns, "kvcachepoolbindings"), b,
                                        binding_status(b, users.get(b["metadata"]["name"], ()))))
            dtypes = {b["metadata"]["name"]: b["spec"]["domain"]["dtype"] for b in bindings}
            for md in deployments:
                md["future"] = pool.submit(_create, api, _crd_path(ns, "modeldeployments"),
                                           deployment_object(ns, md), deployment_status(md, dtypes[md["binding"]], ns))
            if with_workloads:
                for w in workload_objects(ns, plans_injected(ns)):
                    plural = w["kind"].lower() + "s"
                    jobs.append(pool.submit(_create, api, f"/apis/apps/v1/namespaces/{ns}/{plural}", w))
                    workloads += 1
        for j in jobs:
            j.result()
        log(f"seed: {sum(len(p[2]) for p in plans)} ModelDeployments, {sum(len(p[1]) for p in plans)} Bindings, "
            f"{workloads} Deployments/ReplicaSets in {len(plans)} namespaces ({time.monotonic() - t0:.1f}s)")

        def make(ns, pod, status):
            _create(api, _pods_path(ns), pod, status, "application/strategic-merge-patch+json")
            bump("pods")

        jobs = []
        for ns, _b, deployments, injected in plans:
            for md in deployments:
                uid = md.pop("future").result()["metadata"]["uid"]
                for pod, status in deployment_pods(ns, md, uid)[:md["limit"]]:
                    jobs.append(pool.submit(make, ns, pod, status))
            for i in range(injected):
                pod, status = injected_pod(ns, i)
                jobs.append(pool.submit(make, ns, pod, status))
        for k, j in enumerate(jobs):
            j.result()
            if k and k % 2000 == 0:
                log(f"seed: {k}/{len(jobs)} Pods ({time.monotonic() - t0:.0f}s)")
    log(f"seed: {counts['pods']} Pods created in {time.monotonic() - t0:.1f}s")
    return counts["pods"]


def existing_pods(api):
    """How many engine-labelled Pods the cluster holds already: their metadata only, counted page
    by page (the API server gives no remainingItemCount for a list with a label selector)."""
    count, cont = 0, None
    while True:
        query = {"labelSelector": POD_SELECTOR, "limit": "1000", **({"continue": cont} if cont else {})}
        status, raw = api.raw("GET", "/api/v1/pods", query=query,
                              accept="application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
        if status != 200:
            raise RuntimeError(f"GET /api/v1/pods: HTTP {status}: {raw[:500].decode('utf-8', 'replace')}")
        page = json.loads(raw)
        count += len(page.get("items") or ())
        cont = (page.get("metadata") or {}).get("continue")
        if not cont:
            return count


def ensure_setting(api, value="true", log=None):
    """The operator's Setting, on, when the cluster has none (an existing one is left alone)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    path = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings"
    name = "model-deployment-kv-cache-dtype-owned"
    status, _ = api.raw("GET", f"{path}/{name}")
    if status != 404:
        return
    try:
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": "gpustack-system"}}, ok=(201, 409))
        obj = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
               "metadata": {"name": name, "namespace": "gpustack-system"}, "spec": {"value": value}}
        _create(api, path, obj, {"value": value, "editable": True, "sensitive": False,
                                 "description": "the Binding's dtype is the engine's --kv-cache-dtype"})
    except RuntimeError as exc:
        log(f"seed: no Setting created ({exc}); the plugin then assumes the default, on")


def ensure_pool(api):
    """The cluster-scoped KVCacheBackend and KVCachePool every bench Binding names (api/worker/v1alpha1
    kv_cache_pool.go: spec.backends, spec.quota.total; the pool's pass publishes status.clientEndpoint
    and the ledger), so that check and the webhook's resolution see an existing, ready pool. Kept
    when there (not labelled: `--delete` leaves them)."""
    base = f"/apis/{GROUP}/{VERSION}"
    _create(api, f"{base}/kvcachebackends", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCacheBackend",
                                             "metadata": {"name": BACKEND},
                                             # one somebody else runs (kv_cache_backend.go: connection required)
                                             "spec": {"connection": {"external": {"endpoints": [
                                                 {"name": "Client", "address": CLIENT_ENDPOINT}]}}}})
    _create(api, f"{base}/kvcachepools",
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePool", "metadata": {"name": POOL},
             "spec": {"backends": [BACKEND], "quota": {"total": "8Ti"}}},
            {"phase": "Ready", "clientEndpoint": CLIENT_ENDPOINT,
             "conditions": [{"type": "QuotaLedgerAvailable", "status": "True", "reason": "Available",
                             "message": "the master's quota ledger is read",
                             "lastTransitionTime": "2025-11-03T08:20:11Z"}]})


def delete_all(api, wait=False, timeout=600):
    """Delete every bench namespace (label kvcache-bench=true)."""
    names = [n["metadata"]["name"] for n in api.call("GET", "/api/v1/namespaces",
                                                     query={"labelSelector": f"{BENCH_LABEL}=true"})["items"]]
    for name in names:
        api.raw("DELETE", f"/api/v1/namespaces/{name}")
    deadline = time.monotonic() + timeout
    while wait and names and time.monotonic() < deadline:
        left = api.call("GET", "/api/v1/namespaces", query={"labelSelector": f"{BENCH_LABEL}=true"})["items"]
        if not left:
            break
        time.sleep(2)
    return names


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="an admin kubeconfig")
    p.add_argument("--context")
    p.add_argument("--pods", type=int, default=1000, help="engine-labelled Pods in all (default 1000)")
    p.add_argument("--from", dest="start", type=int, default=0, help="Pods already seeded by an earlier run")
    p.add_argument("--pods-per-namespace", type=int, default=100)
    p.add_argument("--injected-ratio", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--delete", action="store_true", help="delete every kvcache-bench=true namespace and exit")
    p.add_argument("--wait", action="store_true",
                   help="with --delete: wait until they are gone (needs a namespace controller, which the "
                        "harness's API server does not run)")
    opts = p.parse_args(argv)
    if not opts.kubeconfig:
        p.error("--kubeconfig (or KUBECONFIG) is required")
    api = Api.from_kubeconfig(opts.kubeconfig, opts.context)
    if opts.delete:
        print(f"deleted {len(delete_all(api, wait=opts.wait))} namespaces", file=sys.stderr)
        return 0
    ensure_setting(api)
    seed(api, opts.pods, opts.start, opts.pods_per_namespace, opts.injected_ratio, opts.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
