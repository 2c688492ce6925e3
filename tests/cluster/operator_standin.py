"""A STAND-IN for the GPUStack Operator, for the test cluster and scripts/demo-cluster only.

It is not the operator and not part of the plugin: a small controller that does, against the real
API server the harness starts (no kubelet, no controller-manager), what the operator's code and
tests say it does about the KV cache dtype, so the upgrade guide's change window can be walked end
to end. It uses the plugin's own models of the operator (kubectl_kvcache/operator/renderer.py and
webhooks.py, each citing the Go code it follows) and of the engines (kubectl_kvcache.engine), so
what it renders is what `check` predicts.

Each pass (`reconcile()`), for the objects in its namespaces:
- the Setting: status.value mirrors a valid spec.value (Go's strconv.ParseBool); missing or
  unreadable reads on, as the operator reads it (no 30 s cache here: a change applies at once);
- what is there at its first pass counts as stored before it started: admitted as it is, as the
  upgrade finds it (a webhook judges writes, never what is stored);
- KVCachePoolBindings: a finalizer while a ModelDeployment names one, released once none does;
  status.usedBy, and the status the operator's pool reconciler writes (kv_cache_pool.go): phase
  Ready with DomainExclusive, QuotaObserved and QuotaGranted True; phase Error, DomainExclusive
  False (DomainClaimedByMultipleBindings) on every Binding claiming one domain on one master;
  nothing on the Bindings of a pool that serves none (no single backend, no clientEndpoint); a
  Binding the webhook would refuse (dtype missing or not lowercase, `auto` created while the
  Setting is on, a changed domain; and, when its KVCachePool exists, every rule that reads the
  pool, its backends and the other Bindings: operator/webhooks.py binding_create_refusals) is
  marked `Admitted=False` with the webhook's message and serves no deployment. A Binding naming a
  pool that does not exist is admitted and reported Ready (most test scenes have no pools: the
  stand-in's one leniency; the operator would write no status). The store is the pool's: a pool that reports no
  status.clientEndpoint has none to render (a missing pool: a store, as before pools were modelled);
- ModelDeployments: each role's Pods rendered as the renderer builds them (base command, the
  rendered arguments -- the Binding's dtype only beside a store and with the Setting on -- then
  extraArgs; a take-over role's command alone), ONE replica per role replaced or created per
  pass, and only while the role's current replicas are ready (a crash-looping replica stalls the
  role, as a rollout stalls); a spec the webhook would refuse (a role passing the flag itself,
  the Setting on) is marked `Admitted=False` and not rolled to; status (phase, roles[] with
  desired/ready/quotaReserved/unmanaged/kind, kvCache{binding,pool,domain} -- written whenever the
  Binding is read, kept when it is gone --, the ReplicasUpToDate and DomainRegistered conditions)
  as the operator's Go types write it. When the connection does not resolve (no usable
  Binding, or its pool publishes no client endpoint) the render has no connector: outdated
  replicas are left in place (ReplicasUpToDate=False, RolloutHeldByCache) and missing ones are
  created without a connector or dtype (model_deployment_rollout.go, model_deployment_binding.go);
- Pods: status written as a kubelet would: an engine container the plugin's engine model says
  REJECTS its argv last exited with code 2 and waits in CrashLoopBackOff; the rest run ready.
  With a kubelet stand-in (kubelet=, or --kubelet), Pods go on its Node with a Pod IP, and what
  the engine writes is served there (serve_engine): the parser's stderr as the previous log of a
  rejected argv, exit 1 and the backend selector's error for a vLLM dtype no attention backend of
  the release lists, the start-up line, the capacity lines for the Node's GPU (and vLLM's /metrics
  with num_gpu_blocks) of a running one, vLLM's "max seq len" ValueError (exit 1) for a replica
  whose max length does not fit in that cache. Pods go on the Node the ModelDeployment's
  annotation `standin.kvcache.test/node` names (one of gpus.NODES), else on kvcache-node;
  A Pod whose ModelDeployment is gone is deleted (the garbage collector's part).

Not played: the injection webhook (a controller cannot mutate a Pod at creation), quotas, routers.

    python tests/cluster/operator_standin.py --state-dir DIR [--interval 1.0]
runs it against the cluster whose harness state is in DIR until SIGTERM/SIGINT.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _path in (ROOT, os.path.join(ROOT, "tests"), os.path.dirname(os.path.abspath(__file__))):      # the plugin, and tests/objects.py's status builder
    if _path not in sys.path:
        sys.path.insert(0, _path)

from kubectl_kvcache.engine import predict  # noqa: E402
from kubectl_kvcache.operator import renderer, webhooks  # noqa: E402
import operator_model  # noqa: E402  (tests/operator_model.py)
from kubectl_kvcache.operator.api import GROUP, VERSION  # noqa: E402
from kubectl_kvcache.operator import masters  # noqa: E402
import objects  # noqa: E402

API = f"/apis/{GROUP}/{VERSION}"
SETTING = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings/model-deployment-kv-cache-dtype-owned"
FINALIZER = "worker.gpustack.ai/binding-in-use"
MERGE = "application/merge-patch+json"
PREFIX = "standin.kvcache.test/"
HASH = PREFIX + "spec-hash"
NODE = PREFIX + "node"                    # on a ModelDeployment: the kubelet stand-in's Node its Pods go on
ADMITTED = PREFIX + "admitted"            # the generation (ModelDeployment) / fields (Binding) admitted
TRUE = {"1", "t", "T", "TRUE", "true", "True"}
FALSE = {"0", "f", "F", "FALSE", "false", "False"}
NOW = "2026-01-01T00:00:00Z"


def parse_bool(value):
    """Go's strconv.ParseBool, None for anything else."""
    return True if value in TRUE else False if value in FALSE else None


def engine_of(md):
    name = ((md.get("spec") or {}).get("engine") or {}).get("name") or ""
    return {"vllm": "vllm", "sglang": "sglang"}.get(name.lower())


class StandInOperator:
    """The stand-in controller (see the module docstring). `namespaces` None: all of them."""

    def __init__(self, cluster, namespaces=None, interval=0.2, kubelet=None):
        self.cluster = cluster
        self.kubelet = kubelet              # a kubelet_standin.KubeletStandIn: Pods go on its Node
        self.namespaces = None if namespaces is None else set(namespaces)
        self.interval = interval
        self.errors = []
        self.passes = 0
        self._deleting = {}                 # (namespace, name) -> fields of the Bindings being deleted
        self._stop = threading.Event()
        self._thread = None

    # -- running ---------------------------------------------------------------------------------

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="operator-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.reconcile()
            except Exception as exc:  # noqa: BLE001 - kept for the test to report
                self.errors.append(repr(exc))
            self._stop.wait(self.interval)

    def settle(self, timeout=60, quiet=2):
        """Reconcile until `quiet` passes in a row change nothing (or `timeout`); True when settled."""
        deadline, calm = time.monotonic() + timeout, 0
        while time.monotonic() < deadline:
            calm = calm + 1 if self.reconcile() == 0 else 0
            if calm >= quiet:
                return True
            time.sleep(self.interval)
        return False

    # -- API ---------------------------------------------------------------------------------------

    def req(self, method, path, body=None, content_type=None):
        return self.cluster.request(method, path, body, content_type=content_type)

    def ok(self, method, path, body=None, content_type=None):
        status, out = self.req(method, path, body, content_type)
        if status >= 300 and status not in (404, 409):    # gone, or changed under us: the next pass sees it
            raise RuntimeError(f"{method} {path}: HTTP {status}: {out}")
        return status, out

    def _in_scope(self, obj):
        return self.namespaces is None or obj["metadata"].get("namespace") in self.namespaces

    def _list_all(self, path):
        """Cluster-scoped objects (pools, backends): every one; none when the kind is not served."""
        status, out = self.req("GET", path)
        return (out.get("items") or []) if status == 200 else []

    def _list(self, path):
        status, out = self.req("GET", path)
        return [o for o in (out.get("items") or []) if self._in_scope(o)] if status == 200 else []

    # -- one pass -----------------------------------------------------------------------------------

    def reconcile(self) -> int:
        """One pass over everything in scope; returns how many changes it made."""
        self.passes += 1
        # Objects already there at the first pass were stored before the stand-in started: admitted
        # as they are (a webhook judges writes, never what is stored), as the operator upgrade finds them.
        self._stored = self.passes == 1
        changes = 0
        on, n = self._setting()
        changes += n
        mds = self._list(f"{API}/modeldeployments")
        bindings, n = self._bindings(mds, on)
        changes += n
        pods = self._list("/api/v1/pods")
        by_owner = {}
        for pod in pods:
            owner = next((r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")), None)
            if owner and owner.get("kind") == "ModelDeployment":
                by_owner.setdefault((pod["metadata"]["namespace"], owner["name"]), []).append(pod)
        names = {(m["metadata"]["namespace"], m["metadata"]["name"]) for m in mds}
        for pod in pods:                    # the kubelet's part: a Pod told to stop has stopped
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and not meta.get("finalizers") and meta.get("deletionGracePeriodSeconds"):
                self._delete(pod)
                changes += 1
        for key, owned in by_owner.items():
            if key not in names:            # the garbage collector: the owner is gone
                for pod in owned:
                    if not pod["metadata"].get("deletionTimestamp"):
                        self._delete(pod)
                        changes += 1
        for md in mds:
            if md["metadata"].get("deletionTimestamp"):
                continue
            ns = md["metadata"]["namespace"]
            changes += self._deployment(md, bindings.get(ns, {}), on, by_owner.get((ns, md["metadata"]["name"]), []))
        return changes

    def _setting(self):
        status, setting = self.req("GET", SETTING)
        if status != 200:
            return True, 0                  # unset or unreadable: the operator reads its default, on
        spec_value = (setting.get("spec") or {}).get("value")
        current = (setting.get("status") or {}).get("value")
        changes = 0
        if spec_value is not None and parse_bool(spec_value) is not None and spec_value != current:
            self.ok("PATCH", SETTING + "/status", {"status": {"value": spec_value}}, MERGE)
            current, changes = spec_value, 1
        value = parse_bool(current) if current is not None else True
        return (True if value is None else value), changes

    def _bindings(self, mds, on):
        """Keep each Binding's finalizer and status; {namespace: {name: fields}} of the admitted ones."""
        usable, changes = {}, 0
        self._deleting = {}
        pools = {p["metadata"]["name"]: p for p in self._list_all(f"{API}/kvcachepools")}
        backends = {p["metadata"]["name"]: p for p in self._list_all(f"{API}/kvcachebackends")}
        listed = self._list(f"{API}/kvcachepoolbindings")
        admitted = [b for b in listed if self._stored or _admitted(b["metadata"]) is not None]
        for b in listed:
            meta, ns, name = b["metadata"], b["metadata"]["namespace"], b["metadata"]["name"]
            path = f"{API}/namespaces/{ns}/kvcachepoolbindings/{name}"
            users = sorted(m["metadata"]["name"] for m in mds if m["metadata"]["namespace"] == ns
                           and ((m["spec"].get("kvCache") or {}).get("poolRef") or {}).get("name") == name)
            finalizers = meta.get("finalizers") or []
            if meta.get("deletionTimestamp"):
                # read by DomainRegistered/status.kvCache only (BindingDeleting); the render treats it as gone
                self._deleting[(ns, name)] = dict(webhooks.binding_fields(b), binding=name)
                if not users and FINALIZER in finalizers:
                    self.ok("PATCH", path, {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER],
                                                         "resourceVersion": meta["resourceVersion"]}}, MERGE)
                    changes += 1
                continue
            fields = webhooks.binding_fields(b)
            old = _admitted(meta)
            errors = [] if (self._stored and old is None) else webhooks.binding_refusals(fields, on, old)
            if not errors and old is None and not self._stored and fields["pool"] in pools:
                errors, _ = webhooks.binding_create_refusals(b, on, webhooks.Cluster(admitted, pools, backends))
            st = b.get("status") or {}
            if errors:
                message = "; ".join(str(e) for e in errors)
                if not _condition_is(st, "Admitted", "False", message):
                    self.ok("PATCH", path + "/status", {"status": {"conditions": [_condition(
                        "Admitted", "False", "WebhookWouldRefuse",
                        f'admission webhook "validate.worker.gpustack.ai.v1alpha1.kvcachepoolbinding" would '
                        f'deny it: {message}')]}}, MERGE)
                    changes += 1
                if old is None:
                    continue                # never admitted: it serves nothing
                fields = old                # the stored, admitted domain stays in force
            if (not errors and old is None) or FINALIZER not in finalizers:
                patch = {"resourceVersion": meta["resourceVersion"]}
                if not errors and old is None:
                    patch["annotations"] = {ADMITTED: json.dumps({"uid": meta["uid"], "fields": fields})}
                if FINALIZER not in finalizers:
                    patch["finalizers"] = finalizers + [FINALIZER]
                self.ok("PATCH", path, {"metadata": patch}, MERGE)
                changes += 1
            used_by = [{"kind": "ModelDeployment", "namespace": ns, "name": u} for u in users]
            pool = pools.get(fields["pool"])
            want = _operator_status(b, fields, pools, admitted)
            if want is None:            # the operator's pass never reaches it: only usedBy is written
                want = {"usedBy": used_by}
            else:
                want = dict(want, usedBy=used_by)
                if errors:              # a refused update: the stand-in's mark stays beside the operator's
                    want["conditions"] = want["conditions"] + [c for c in st.get("conditions") or ()
                                                               if c.get("type") == "Admitted"]
            if any(st.get(k) != v for k, v in want.items()) or (not errors and _condition_is(st, "Admitted", "False")):
                self.ok("PATCH", path + "/status", {"status": want}, MERGE)
                changes += 1
            # what the deployment's pass reads: the status just written, or the one stored when the
            # pool's pass writes none (an unserved pool: a store gone leaves the Binding's last word)
            seen = want if "phase" in want else st
            fields = dict(fields, store=pool is None or bool((pool.get("status") or {}).get("clientEndpoint")),
                          # modelDeploymentBindingUsable (model_deployment_binding.go): phase Ready and
                          # QuotaGranted True (a Binding being deleted was skipped above)
                          usable=seen.get("phase") == "Ready" and _condition_is(seen, "QuotaGranted", "True"),
                          binding=name, phase=seen.get("phase") or "", phaseMessage=seen.get("phaseMessage") or "",
                          quotaMessage=next((c.get("message") or "" for c in seen.get("conditions") or ()
                                             if c.get("type") == "QuotaGranted"), ""))
            usable.setdefault(ns, {})[name] = fields
        return usable, changes

    # -- a ModelDeployment ----------------------------------------------------------------------

    def _deployment(self, md, bindings, on, pods):
        meta, spec = md["metadata"], md.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        path = f"{API}/namespaces/{ns}/modeldeployments/{name}"
        engine = engine_of(md)
        if engine is None:
            return 0
        roles = spec.get("roles") or []
        kv_cache = bool(spec.get("kvCache"))
        generation = meta.get("generation") or 1
        admitted = _admitted(meta) or 0
        changes = 0
        if generation > admitted:
            # a webhook judges writes, never what is stored; a deployment being deleted is not judged
            # by the dtype rule, and is by the owned-argument rule (operator_model.md_refusals)
            errors = [] if self._stored else operator_model.md_refusals(
                engine, [(r.get("command"), r.get("extraArgs")) for r in roles], kv_cache, on,
                deleting=bool(meta.get("deletionTimestamp")))
            if errors:
                message = "; ".join(str(e) for e in errors)
                st = md.get("status") or {}
                if not _condition_is(st, "Admitted", "False", message):
                    self.ok("PATCH", path + "/status", {"status": {"conditions": [_condition(
                        "Admitted", "False", "WebhookWouldRefuse",
                        f'admission webhook "validate.worker.gpustack.ai.v1alpha1.modeldeployment" would deny '
                        f'generation {generation}: {message}')]}}, MERGE)
                    return 1
                return 0
            self.ok("PATCH", path, {"metadata": {"annotations": {
                ADMITTED: json.dumps({"uid": meta["uid"], "generation": generation})}}}, MERGE)
            changes += 1
        binding = bindings.get(((spec.get("kvCache") or {}).get("poolRef") or {}).get("name")) if kv_cache else None
        dtype = binding["dtype"] if (binding and on) else None
        store = bool(binding and binding.get("store"))
        version = (spec.get("engine") or {}).get("version") or renderer.MINIMUMS[engine]
        p2p = bool(spec.get("kvTransfer"))
        role_status, all_ready = [], True
        accounted = outdated = held = 0
        missing = kv_cache and binding is None     # a Binding not there (or never admitted): nothing rendered
        for role in roles:
            rname = role.get("name") or "server"
            kind = (role.get("kind") or "server").lower()
            want = 1 if role.get("replicas") is None else max(0, int(role["replicas"]))
            # resolveModelDeploymentConnection (model_deployment_binding.go): no usable Binding, or a
            # pool with no client endpoint, and the connection does not resolve this pass: the
            # render carries no connector (and no dtype), outdated replicas are LEFT IN PLACE
            # (model_deployment_rollout.go: RolloutHeldByCache), missing ones are created as rendered.
            unresolved = kv_cache and not role.get("command") and not (
                binding and binding.get("usable") and (store or (engine == "vllm" and p2p and kind in ("prefill",
                                                                                                      "decode"))))
            container = self._container(md, engine, version, role, dtype, store, p2p, connector=not unresolved)
            mine = [p for p in pods if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == rname]
            live = [p for p in mine if not p["metadata"].get("deletionTimestamp")]
            digest = hashlib.sha256(json.dumps(container, sort_keys=True).encode()).hexdigest()[:10]
            current = [p for p in live if (p["metadata"].get("annotations") or {}).get(HASH) == digest]
            old = sorted((p for p in live if p not in current), key=_ready)   # a failing one goes first
            ready = [p for p in current if _ready(p)]
            accounted += len(live)
            outdated += len(old)
            if missing:
                all_ready = False
                role_status.append({"name": rname, "desired": want, "ready": 0, "quotaReserved": 0,
                                    "unmanaged": bool(role.get("command")), "kind": kind})
                continue
            if unresolved:
                held += len(old)
                if len(live) < want:
                    self._create(md, rname, kind, container, digest, engine, version)
                    accounted += 1
                    changes += 1
            elif len(current) < want and len(ready) == len(current):
                if old:
                    self._delete(old[0])
                self._create(md, rname, kind, container, digest, engine, version)
                accounted += 1
                changes += 1
            elif len(live) > want and len(ready) == len(current):
                self._delete((old or current)[0])
                changes += 1
            n_ready = sum(1 for p in live if _ready(p))
            # ModelDeploymentRoleStatus (api/worker/v1alpha1/model_deployment.go): these fields only
            role_status.append({"name": rname, "desired": want, "ready": min(n_ready, want),
                                "quotaReserved": min(len(live), want), "unmanaged": bool(role.get("command")),
                                "kind": kind})
            all_ready = all_ready and n_ready >= want
        bname = ((spec.get("kvCache") or {}).get("poolRef") or {}).get("name")
        read = binding if binding is not None else self._deleting.get((ns, bname)) if kv_cache else None
        status = {"phase": "Ready" if all_ready else "Starting", "roles": role_status,
                  "conditions": [_rollout_condition(accounted, outdated, held, generation),
                                 _domain_condition(kv_cache, ns, bname, read, generation)]}
        if read is not None:
            # resolveModelDeploymentDomain/observeModelDeploymentDomain (model_deployment_binding.go):
            # projected from the Binding's spec on every pass that reads it, usable or not; a pass
            # that finds it gone writes nothing here, so the last projection is KEPT (the merge patch
            # leaves the field as it is)
            status["kvCache"] = {"binding": read["binding"], "pool": read.get("pool") or "",
                                 "domain": {"name": read.get("name"), "blockSize": read.get("blockSize") or 0,
                                            "dtype": read.get("dtype")}}
        if not _subset(status, md.get("status") or {}):
            self.ok("PATCH", path + "/status", {"status": status}, MERGE)
            changes += 1
        return changes

    def _container(self, md, engine, version, role, dtype, store, p2p, connector=True):
        """The engine container the renderer builds for one role (`connector` False: the connection
        did not resolve, and the render carries no connector and no dtype)."""
        spec = md.get("spec") or {}
        model = (spec.get("model") or {}).get("name") or md["metadata"]["name"]
        # A STATED IMAGE ALWAYS WINS, else the runner image synthesized from the engine and its version
        # (model_deployment_render.go renderModelDeploymentPodTemplate; model_deployment_image.go
        # SynthesizeModelDeploymentImage, on an NVIDIA InstanceType observed at CUDA 12.9)
        image = role.get("image") or f"gpustack/runner:cuda12.9-{engine}{version}"
        env = list(role.get("env") or [])
        if role.get("command"):            # take-over: the role's command alone, nothing added
            return {"name": "main", "image": image, "command": list(role["command"]), "env": env}
        kind = (role.get("kind") or "server").lower()
        rendered = []
        if spec.get("kvCache") and connector:
            rendered = operator_model.rendered_args(engine, dtype, store=store, kind=kind,
                                              p2p=p2p and kind in ("prefill", "decode"))
            env = operator_model.rendered_env(engine, store) + env
        base = ["vllm", "serve", model] if engine == "vllm" else \
            ["python3", "-m", "sglang.launch_server", "--model-path", model]
        port = "8000" if engine == "vllm" else "30000"
        command = operator_model.deployment_command(base, rendered, role.get("extraArgs") or []) + \
            ["--host", "0.0.0.0", "--port", port]
        return {"name": "main", "image": image, "command": command, "env": env}

    def _create(self, md, role, kind, container, digest, engine, version):
        meta = md["metadata"]
        ns = meta["namespace"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": f"{meta['name']}-{role}-", "namespace": ns,
                            "labels": {"app.kubernetes.io/name": "model-deployment",
                                       "app.kubernetes.io/instance": meta["name"],
                                       "app.kubernetes.io/component": role,
                                       "modeldeployment.gpustack.ai/role-kind": kind.lower()},
                            "annotations": {HASH: digest},
                            "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
                                                 "name": meta["name"], "uid": meta["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": {"containers": [container]}}
        node = None
        if self.kubelet is not None:
            # the scheduler's part: the Node the deployment's stand-in annotation names (one of the
            # kubelet stand-in's GPU Nodes), else the kubelet's first Node
            asked = (meta.get("annotations") or {}).get(NODE)
            node = asked if asked in self.kubelet.nodes else self.kubelet.node
            pod["spec"]["nodeName"] = node
        _, created = self.ok("POST", f"/api/v1/namespaces/{ns}/pods", pod)
        name = created["metadata"]["name"]
        status = kubelet_status(container, engine, version)
        if self.kubelet is not None:
            try:
                status = serve_engine(self.kubelet, ns, name, container, engine, version, status,
                                      device=self.kubelet.nodes.get(node))
            except Exception as e:  # noqa: BLE001 - a release without cached code: no log, said here
                self.errors.append(f"kubelet stand-in, pod {ns}/{name}: {e}")
        self.ok("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status}, MERGE)

    def _delete(self, pod):
        # gracePeriodSeconds 0: there is no kubelet to confirm a graceful stop of a Pod bound to a node
        self.ok("DELETE", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/{pod['metadata']['name']}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def kubelet_status(container, engine, version):
    """The status a kubelet would report: CrashLoopBackOff after exit code 2 when the engine model
    says the engine rejects its argv, else running and ready."""
    verdict = predict(container, engine, version)
    verdict = verdict.parsed or verdict     # the parser's exit 2; a start-up failure is serve_engine's
    cs = {"name": "main", "image": container["image"], "imageID": "", "restartCount": 0, "ready": True,
          "started": True, "state": {"running": {"startedAt": NOW}}}
    if verdict.outcome == "rejected":
        cs.update(ready=False, started=False, restartCount=3,
                  state={"waiting": {"reason": "CrashLoopBackOff",
                                     "message": "back-off restarting failed container main"}},
                  lastState={"terminated": {"exitCode": 2, "reason": "Error", "startedAt": NOW, "finishedAt": NOW}})
    return {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if cs["ready"] else "False"}],
            "containerStatuses": [cs]}


def _engine_argv(container, engine):
    """The engine's own arguments in the container's command (after `vllm serve` /
    `python3 -m sglang.launch_server`)."""
    cmd = list(container.get("command") or []) + list(container.get("args") or [])
    if engine == "vllm":
        return cmd[2:] if cmd[:2] == ["vllm", "serve"] else cmd
    return cmd[3:] if cmd[1:3] == ["-m", "sglang.launch_server"] else cmd


def _dtype(argv):
    value = None
    for i, a in enumerate(argv):
        if a == "--kv-cache-dtype" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--kv-cache-dtype="):
            value = a.split("=", 1)[1]
    return value


def serve_engine(kubelet, ns, name, container, engine, version, status, device=None):
    """Give the Pod an IP on the kubelet stand-in's Node and what its engine writes there (from
    engine_lines.py, the release's own code or format): a rejected argv exits 2 with the parser's
    stderr as the previous instance's log; a vLLM dtype no attention backend of the release lists
    exits 1 with get_attn_backend_cls's error; a running engine logs its start-up line and, on a
    GPU Node (`device`, gpus.Device), its capacity lines (the KV cache sized for that GPU and the
    argv), and for vLLM serves vllm:cache_config_info on the Pod IP at its --port. A vLLM replica
    whose max length does not fit in that cache exits 1 with the release's own ValueError."""
    import engine_lines
    cs = status["containerStatuses"][0]
    argv = _engine_argv(container, engine)
    dtype = _dtype(argv)
    ip = kubelet.next_ip()
    status = dict(status, podIP=ip, podIPs=[{"ip": ip}], hostIP="127.0.0.1")
    if cs.get("lastState"):                         # rejected by the parser (kubelet_status)
        cs["lastState"]["terminated"]["containerID"] = f"containerd://{name}-0"
        if engine == "sglang":
            text, _code = engine_lines.sglang_rejection(version, argv)
        else:
            text, _code = engine_lines.vllm_rejection(version, dtype or "")
        kubelet.set_log(ns, name, cs["name"], "", previous=text)
        return status
    if engine == "vllm" and engine_lines.vllm_startup_fails(version, dtype):
        cs.update(ready=False, started=False, restartCount=3,
                  state={"waiting": {"reason": "CrashLoopBackOff",
                                     "message": f"back-off restarting failed container {cs['name']}"}},
                  lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": NOW,
                                            "finishedAt": NOW, "containerID": f"containerd://{name}-0"}})
        status["conditions"] = [{"type": "Ready", "status": "False"}]
        kubelet.set_log(ns, name, cs["name"], "", previous=engine_lines.vllm_backend_failure(version, dtype))
        return status
    cap = engine_lines.capacity(engine, version, device, argv, dtype) if device is not None else None
    if engine == "vllm" and cap is not None and cap["tokens"] < cap["max_len"]:
        cs.update(ready=False, started=False, restartCount=3,
                  state={"waiting": {"reason": "CrashLoopBackOff",
                                     "message": f"back-off restarting failed container {cs['name']}"}},
                  lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": NOW,
                                            "finishedAt": NOW, "containerID": f"containerd://{name}-0"}})
        status["conditions"] = [{"type": "Ready", "status": "False"}]
        kubelet.set_log(ns, name, cs["name"], "", previous=engine_lines.startup_log(engine, version, argv, dtype)
                        + engine_lines.vllm_startup_too_small(version, cap))
        return status
    text = engine_lines.startup_log(engine, version, argv, dtype)
    if cap is not None:
        text += (engine_lines.vllm_capacity_lines(version, cap) if engine == "vllm"
                 else engine_lines.sglang_capacity_lines(version, cap, dtype))
    kubelet.set_log(ns, name, cs["name"], text)
    if engine == "vllm":
        port = argv[argv.index("--port") + 1] if "--port" in argv[:-1] else "8000"
        kubelet.set_metrics(ip, int(port), engine_lines.vllm_metrics(version, dtype or "auto", cap=cap))
    return status


def _served_by(pool) -> str | None:
    """The master whose pass writes a pool's Bindings: its one backend, once the pool reports the
    address that backend published (kv_cache_pool.go: a pool naming none or several backends, or
    whose backend publishes no address, stops before its Bindings)."""
    if not (pool.get("status") or {}).get("clientEndpoint"):
        return None
    return masters.serving(webhooks.pool_backends(pool))


def _operator_status(b, fields, pools, admitted):
    """The status the operator's pool reconciler writes on Binding `b` (kv_cache_pool.go:
    observeKVCachePoolBinding, summarizeKVCachePoolBinding; objects.binding_status): Ready; Error
    with DomainExclusive False (DomainClaimedByMultipleBindings, naming the others) when another
    admitted Binding claims its domain on the same master, none of them released (deleting, used by
    none). None: the operator writes nothing (its pool is unserved). A pool that does not exist:
    Ready (the stand-in's one leniency; the operator would write nothing)."""
    pool = pools.get(fields["pool"])
    if pool is None:
        return objects.binding_status(fields["name"])
    master = _served_by(pool)
    if master is None:
        return None
    me = (b["metadata"]["namespace"], b["metadata"]["name"])
    others = []
    for other in admitted:
        meta = other["metadata"]
        if (meta["namespace"], meta["name"]) == me or (meta.get("deletionTimestamp") and not (
                other.get("status") or {}).get("usedBy")):
            continue
        theirs = webhooks.binding_fields(other)
        if theirs["name"] == fields["name"] and theirs["pool"] in pools and _served_by(pools[theirs["pool"]]) == master:
            others.append(f"{meta['namespace']}/{meta['name']}")
    return objects.binding_status(fields["name"], contested_by=others)


def _admitted(meta):
    """What was admitted of THIS object (its uid: a copy made by recover carries the annotation of
    the object it was copied from, which says nothing about the copy): the generation or fields."""
    try:
        record = json.loads((meta.get("annotations") or {}).get(ADMITTED) or "null")
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("uid") != meta.get("uid"):
        return None
    return record.get("generation", record.get("fields"))


def _subset(want, have):
    """Whether a merge patch of `want` would leave `have` as it is."""
    if isinstance(want, dict) and isinstance(have, dict):
        return all(_subset(v, have.get(k)) for k, v in want.items())
    return want == have


def _ready(pod):
    return any(c.get("ready") for c in (pod.get("status") or {}).get("containerStatuses") or ())


def _rollout_condition(accounted, outdated, held, generation):
    """ReplicasUpToDate as observeModelDeploymentRollout writes it
    (pkg/worker/controllers/worker/model_deployment_rollout.go): the reasons and the messages are
    objects.rollout_condition's, which fills the Go format strings."""
    if accounted == 0:
        reason = "RolloutNotObserved"
    elif held:
        reason = "RolloutHeldByCache"
    elif outdated:
        reason = "RolloutInProgress"
    else:
        reason = "UpToDate"
    return dict(objects.rollout_condition(reason, held=held, outdated=outdated, generation=generation),
                lastTransitionTime=NOW)


def _domain_condition(kv_cache, ns, name, read, generation):
    """DomainRegistered as observeModelDeploymentDomain writes it (gpustack/gpustack-operator
    pkg/worker/controllers/worker/model_deployment_binding.go at
    495764e848e4ebc48308b0e7d2521e1239a70dd1): NotApplicable without spec.kvCache, BindingNotFound
    for none read (here also one never admitted: the webhook would have refused it), then
    modelDeploymentBindingUsable's order: BindingDeleting, BindingNotReady (phase not Ready, then
    QuotaGranted not True), Registered. The messages are objects.domain_condition's."""
    if not kv_cache:
        reason, kw = "NotApplicable", {}
    elif read is None:
        reason, kw = "BindingNotFound", {}
    elif read.get("usable") is None:        # being deleted (the render reads it as gone)
        reason, kw = "BindingDeleting", {}
    elif read.get("phase") != "Ready":
        reason, kw = "BindingNotReady", {"phase": read.get("phase") or "", "phase_message": read.get("phaseMessage")}
    elif not read.get("usable"):
        reason, kw = "BindingNotReady", {"phase": "Ready", "phase_message": read.get("quotaMessage")}
    else:
        reason, kw = "Registered", {"domain": read.get("name"), "pool": read.get("pool") or ""}
    return dict(objects.domain_condition(reason, binding=name or "", ns=ns, generation=generation, **kw),
                lastTransitionTime=NOW)


def _condition(type_, status, reason, message, generation=None):
    c = {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}
    if generation is not None:
        c["observedGeneration"] = generation
    return c


def _condition_is(status, type_, value, message=None):
    return any(c.get("type") == type_ and c.get("status") == value and (message is None or message in c.get("message", ""))
               for c in status.get("conditions") or ())


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description="Run the operator stand-in against a harness cluster.")
    ap.add_argument("--state-dir", required=True, help="the harness state directory (scripts/demo-cluster's)")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    ap.add_argument("--kubelet", action="store_true",
                    help="also serve Node kvcache-node's kubelet (kubelet_standin.py): Pods go there, "
                         "with logs and /metrics from engine_lines.py")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness

    cluster = harness.Cluster.attach(args.state_dir)
    kubelet = None
    if args.kubelet:
        import engine_lines
        import kubelet_standin
        engine_lines.download = False   # the demo serves no log for a release not cached (said in its log)
        kubelet = kubelet_standin.KubeletStandIn(cluster).start()
    standin = StandInOperator(cluster, interval=args.interval, kubelet=kubelet)
    if kubelet is not None:
        print(f"kubelet stand-in: Nodes {', '.join(kubelet.nodes)} at 127.0.0.1:{kubelet.port} (not a kubelet)",
              file=sys.stderr, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"operator stand-in: reconciling every {args.interval}s (not the GPUStack Operator)", file=sys.stderr,
          flush=True)
    while not stop.is_set():
        try:
            changes = standin.reconcile()
            if changes:
                print(f"operator stand-in: pass {standin.passes}: {changes} changes", file=sys.stderr, flush=True)
            while standin.errors:
                print(f"operator stand-in: {standin.errors.pop(0)}", file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001 - a controller keeps going; the log says why
            print(f"operator stand-in: pass {standin.passes} failed: {exc!r}", file=sys.stderr, flush=True)
        stop.wait(args.interval)
    if kubelet is not None:
        kubelet.stop()                  # removes the egress socket (it may sit in the temp folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
