"""The one family of builders for the Kubernetes objects the tests feed the plugin, shaped as
`kubectl get -o json` prints them. Shared by every tier: unit tests turn them into records
(snapshot.*_record), CLI tests write them to files, cluster tests apply them."""

import uuid
from kubectl_kvcache.operator.api import GROUP, VERSION

OPERATOR_API_VERSION = f"{GROUP}/{VERSION}"


def _uid(kind, ns, name):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{ns}/{name}"))


def binding(name, dtype, ns="team", pool="pool-a", domain=None, api_version=OPERATOR_API_VERSION, used_by=(),
            ceiling="100Gi", status=None):
    """status: binding_status(...) (default: Ready, as the operator reports a served Binding).
    The spec the CRD requires (api/worker/v1alpha1/kv_cache_pool_binding.go at 07a3054: poolRef,
    domain name/blockSize/dtype, quotaCeiling); dtype None leaves it out, as a file may."""
    spec = {"poolRef": {"name": pool}, "domain": {"name": domain or "default", "blockSize": 16},
            "quotaCeiling": ceiling}
    if dtype is not None:
        spec["domain"]["dtype"] = dtype
    status = dict(binding_status(domain or "default") if status is None else status)
    if used_by:
        status["usedBy"] = [{"kind": "ModelDeployment", "namespace": ns, "name": n} for n in used_by]
    return {"apiVersion": api_version, "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns, "uid": _uid("b", ns, name)},
            "spec": spec, "status": status}


def _condition(kind, true, reason, message):
    return {"type": kind, "status": "True" if true else "False", "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


def binding_status(domain="default", contested_by=(), granted=True):
    """A Binding's status as the operator's pool reconciler writes it (gpustack-operator
    pkg/worker/controllers/worker/kv_cache_pool.go: observeKVCachePoolBinding,
    summarizeKVCachePoolBinding): Ready with DomainExclusive, QuotaObserved and QuotaGranted True;
    contested_by (other claimants' "ns/name"): Error, DomainExclusive False
    (DomainClaimedByMultipleBindings) and no other axis; granted False: Error, QuotaGranted False
    (ZeroGranted, as after a master restart)."""
    q = f'"{domain}"'       # Go's %q
    if contested_by:
        message = (f"reuse domain {q} is also claimed by {', '.join(sorted(contested_by))}, so it is managed "
                   f"for neither: one ledger entry cannot carry two namespaces' quotas. Admission refuses a second "
                   f"claim, so this is two creates that raced it — delete one of them")
        return {"phase": "Error", "phaseMessage": message,
                "conditions": [_condition("DomainExclusive", False, "DomainClaimedByMultipleBindings", message)]}
    observed = f"the master's figures for reuse domain {q} were read"
    grant = (_condition("QuotaGranted", True, "Granted", f"the master grants reuse domain {q} 107374182400 bytes")
             if granted else
             _condition("QuotaGranted", False, "ZeroGranted", f"the master grants reuse domain {q} zero bytes, "
                        f"so no write can succeed"))
    return {"phase": "Ready" if granted else "Error", "phaseMessage": observed if granted else grant["message"],
            "conditions": [_condition("DomainExclusive", True, "Exclusive",
                                      f"reuse domain {q} is claimed by this binding alone"),
                           _condition("QuotaObserved", True, "Observed", observed), grant]}


def pool(name="pool-a", backends=("mooncake",), total="1Ti", ledger=None, endpoint="mc-leader.gpustack-system.svc:50051"):
    """A KVCachePool as the operator's Go types shape it (api/worker/v1alpha1/kv_cache_pool.go):
    spec.backends, spec.quota.total, status.clientEndpoint and (ledger: its reason, or "Available")
    a QuotaLedgerAvailable condition."""
    status = {"phase": "Ready"}
    if endpoint:
        status["clientEndpoint"] = endpoint
    if ledger is not None:
        status["conditions"] = [{"type": "QuotaLedgerAvailable", "status": "True" if ledger == "Available" else "False",
                                 "reason": ledger, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    return {"apiVersion": OPERATOR_API_VERSION, "kind": "KVCachePool", "metadata": {"name": name, "uid": _uid("p", "", name)},
            "spec": {"backends": list(backends), "quota": {"total": total}}, "status": status}


def backend(name="mooncake", multi_tenancy=None):
    """A KVCacheBackend the CRD accepts (spec.connection required: api/worker/v1alpha1/
    kv_cache_backend.go): multi_tenancy None, an external one (its Client endpoint); else a managed
    one whose leader sets it, with one DRAM member (managed requires leader and members)."""
    if multi_tenancy is None:
        spec = {"connection": {"external": {"endpoints": [{"name": "Client", "address": f"{name}.example:50051"}]}}}
    else:
        spec = {"connection": {"managed": {"leader": {"multiTenancy": multi_tenancy},
                                           "members": [{"nodeSelector": {}, "medium": "DRAM",
                                                        "capacityPerMember": "64Gi"}]}}}
    return {"apiVersion": OPERATOR_API_VERSION, "kind": "KVCacheBackend", "metadata": {"name": name}, "spec": spec}


def role(name="server", extra_args=None, command=None, env=None, replicas=1, image=None, kind="server",
         instance_type="nvidia-h100"):
    """A ModelDeploymentRole the CRD accepts (api/worker/v1alpha1/model_deployment.go at 049325a:
    kind server|prefill|decode, replicas 1-1024, instanceType required)."""
    r = {"name": name, "kind": kind, "replicas": replicas, "instanceType": instance_type}
    if image is not None:
        r["image"] = image      # api/worker/v1alpha1 ModelDeploymentRole.Image
    if extra_args is not None:
        r["extraArgs"] = list(extra_args)
    if command is not None:
        r["command"] = list(command)
    if env is not None:
        r["env"] = env
    return r


def deployment(name, engine="vllm", version="0.29.0", binding_name="b1", ns="team", roles=None,
               api_version=OPERATOR_API_VERSION, image=None, kv_cache=True, model=None):
    """A ModelDeployment the CRD accepts: engine vllm|sglang, model.name required (the model
    served: `model`, else the deployment's name, which the stand-in operator serves without one)."""
    if roles is not None:   # a role written out by a test gets the required instanceType too
        roles = [{**r, "instanceType": r.get("instanceType", "nvidia-h100")} if isinstance(r, dict) else r
                 for r in roles]
    spec = {"model": {"name": model or name}, "engine": {"name": engine},
            "roles": roles if roles is not None else [role()]}
    if version is not None:
        spec["engine"]["version"] = version
    if image:   # the image every role states (there is no spec.engine.image)
        for r in spec["roles"]:
            r.setdefault("image", image)
    if binding_name is not None and kv_cache:
        spec["kvCache"] = {"poolRef": {"name": binding_name}}
    return {"apiVersion": api_version, "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": ns, "uid": _uid("md", ns, name)},
            "spec": spec}


def vllm_argv(dtype=None, extra=()):
    argv = ["vllm", "serve", "Qwen/Qwen3-8B"]
    if dtype is not None:
        argv += ["--kv-cache-dtype", dtype]
    return argv + list(extra) + ["--host", "0.0.0.0", "--port", "8000"]


def sglang_argv(dtype=None, extra=()):
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"]
    if dtype is not None:
        argv += ["--kv-cache-dtype", dtype]
    return argv + list(extra) + ["--host", "0.0.0.0", "--port", "30000"]


def container(name="main", command=None, args=None, image="gpustack/runner:cuda12.9-vllm0.29.0", env=None):
    c = {"name": name, "image": image}
    if command is not None:
        c["command"] = command
    if args is not None:
        c["args"] = args
    if env is not None:
        c["env"] = env
    return c


def md_pod(name, md_name, command, ns="team", role="server", containers=None, exit_code=None,
           image="gpustack/runner:cuda12.9-vllm0.29.0", created=None):
    containers = containers or [container("main", command=command, image=image)]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns,
                        **({"creationTimestamp": created} if created else {}),
                        "labels": {"app.kubernetes.io/name": "model-deployment",
                                   "app.kubernetes.io/instance": md_name,
                                   "app.kubernetes.io/component": role,
                                   "modeldeployment.gpustack.ai/role-kind": "server"},
                        "ownerReferences": [{"apiVersion": OPERATOR_API_VERSION, "kind": "ModelDeployment",
                                             "name": md_name, "uid": _uid("md", ns, md_name),
                                             "controller": True, "blockOwnerDeletion": True}]},
           "spec": {"containers": containers},
           "status": {"phase": "Running"}}
    if exit_code is not None:
        pod["status"]["containerStatuses"] = [{
            "name": "main", "ready": False, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": exit_code, "reason": "Error"}}}]
    return pod


def opt_in_meta(binding_name, engine, extra_ann=None, inject=True, target=None):
    """Labels and annotations of a Pod (or Pod template) opted into injection."""
    ann = {}
    if binding_name:
        ann["kvcache.gpustack.ai/binding"] = binding_name
    if engine:
        ann["kvcache.gpustack.ai/engine"] = engine
    if target:
        ann["kvcache.gpustack.ai/container"] = target
    ann.update(extra_ann or {})
    labels = {"app": "x"}
    if inject:
        labels["kvcache.gpustack.ai/inject"] = "true"
    return {"labels": labels, "annotations": ann}


def injected_pod(name, binding_name, engine="vLLM", containers=None, ns="team", target=None, extra_ann=None,
                 owner=None):
    meta = opt_in_meta(binding_name, engine, extra_ann, target=target)
    meta.update(name=name, namespace=ns)
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": containers}, "status": {"phase": "Running"}}


def workload(name, containers, kind="Deployment", binding_name="b", engine="vLLM", annotations=None, ns="team",
             inject=True):
    template = {"metadata": opt_in_meta(binding_name, engine, annotations, inject),
                "spec": {"containers": containers}}
    spec = {"template": template}
    if kind == "CronJob":
        spec = {"jobTemplate": {"spec": {"template": template}}}
    return {"apiVersion": "batch/v1" if kind in ("Job", "CronJob") else "apps/v1",
            "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def setting(value, spec_value=None, editable=True):
    obj = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
           "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system",
                        "resourceVersion": "1"},
           "spec": {"value": spec_value if spec_value is not None else value},
           "status": {"description": "Whether the operator owns --kv-cache-dtype", "editable": editable,
                      "sensitive": False}}
    if value is not None:
        obj["status"]["value"] = value
    return obj


def hostile(evil):
    """A small cluster with `evil` (markup, control characters) in every field a report prints:
    a Binding's dtype, a role's extraArgs, Pod names, argv, an injected Pod's Binding."""
    return [
        binding("b1", "fp8"),
        binding("b2", evil, domain="evil"),
        deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 1,
                                 "extraArgs": [f"--kv-cache-dtype={evil}"]}]),
        md_pod("pod-" + evil, "md", vllm_argv("fp8", extra=[f"--kv-cache-dtype={evil}"])),
        deployment("md2", binding_name="b2"),
        md_pod("md2-0", "md2", vllm_argv(evil)),
        injected_pod("inj-" + evil, "missing-" + evil,
                     containers=[container("vllm", args=["vllm", "serve", "m", "--note", evil])]),
        setting("true"),
    ]


def as_list(*objs):
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(objs)}


# ReplicasUpToDate as the operator writes it (gpustack-operator
# pkg/worker/controllers/worker/model_deployment_rollout.go, observeModelDeploymentRollout): the
# messages are the Go format strings, filled with the counts.
def rollout_condition(reason, held=0, outdated=0, generation=None):
    """ReplicasUpToDate with the message observeModelDeploymentRollout formats for `reason`
    (gpustack/gpustack-operator pkg/worker/controllers/worker/model_deployment_rollout.go, read at
    196051b8bc13c4c16c3d4725783aca69a913648f)."""
    if reason == "RolloutHeldByCache":
        status, message = "False", (
            f"{held} of {outdated} replicas differ from what this pass rendered and were left in place: the KV "
            "cache connection could not be resolved, and recreating them on that alone would rebuild every "
            "replica whenever the store blinks. Until it resolves, an edit that changes a running replica's "
            "rendered Pod waits with them -- withheld rather than dropped, and it rolls out once the connection "
            "returns")
    elif reason == "RolloutInProgress":
        status, message = "False", (f"{outdated} replicas differ from what this pass rendered and turn over one per "
                                    "role per pass: this pass deleted at most one replica per role, and the pass "
                                    "that finds it gone creates the replacement")
    elif reason == "RolloutNotObserved":
        status, message = "Unknown", ("this pass accounted for no replica: it compared no hash and created none, "
                                      "so whether the replicas match the current render was not established "
                                      "either way")
    else:
        status, message = "True", "every replica matches what this pass rendered"
    c = {"type": "ReplicasUpToDate", "status": status, "reason": reason, "message": message,
         "lastTransitionTime": "2026-01-01T00:00:00Z"}
    if generation is not None:
        c["observedGeneration"] = generation
    return c


def domain_condition(reason, binding="b1", ns="team", domain="default", pool="pool-a", phase="Error",
                     phase_message="", generation=None):
    """DomainRegistered as observeModelDeploymentDomain writes it, with the messages
    resolveModelDeploymentDomain and modelDeploymentBindingUsable format (gpustack/gpustack-operator
    pkg/worker/controllers/worker/model_deployment_binding.go, read at
    495764e848e4ebc48308b0e7d2521e1239a70dd1). BindingNotReady with phase Ready is the
    QuotaGranted-not-True message (`phase_message`: that condition's message then)."""
    q = f'"{binding}"'
    message = {
        "Registered": f'reuse domain "{domain}" is registered through kv cache pool binding {q} on pool "{pool}"',
        "NotApplicable": "the deployment declares no KV cache pool, so there is no Binding to resolve",
        "BindingNotFound": (f'kv cache pool binding {q} does not exist in namespace "{ns}"; an admin creates it, '
                            "and creating one is what grants this namespace access to the pool"),
        "BindingDeleting": (f"kv cache pool binding {q} is being deleted; the replicas keep serving and this "
                            "deployment still holds it, so the deletion waits until the deployment goes away"),
        "BindingNotReady": (f"kv cache pool binding {q} reports itself ready but has no quota to write into: "
                            f"{phase_message}" if phase == "Ready" else
                            f"kv cache pool binding {q} is {phase or 'not observed yet'}: {phase_message}"),
    }[reason]
    c = {"type": "DomainRegistered", "status": "True" if reason in ("Registered", "NotApplicable") else "False",
         "reason": reason, "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    if generation is not None:
        c["observedGeneration"] = generation
    return c


def kv_status(binding="b1", pool="pool-a", domain="default", dtype="fp8", block_size=16):
    """status.kvCache (ModelDeploymentKVCacheStatus), echoed from the Binding's spec as
    resolveModelDeploymentDomain projects it."""
    return {"binding": binding, "pool": pool, "domain": {"name": domain, "blockSize": block_size, "dtype": dtype}}


def md_status(md, rollout=None, ready=None, generation=None, domain=None, kv=None):
    """Give ModelDeployment `md` the status the operator writes (api/worker/v1alpha1/model_deployment.go,
    ModelDeploymentStatus/ModelDeploymentRoleStatus): per role desired, ready, quotaReserved,
    unmanaged, kind; the ReplicasUpToDate condition `rollout` (rollout_condition), DomainRegistered
    `domain` (domain_condition) and status.kvCache `kv` (kv_status) when given."""
    roles = []
    for r in md["spec"]["roles"]:
        desired = 1 if r.get("replicas") is None else r["replicas"]
        roles.append({"name": r["name"], "desired": desired, "ready": desired if ready is None else ready,
                      "quotaReserved": desired, "unmanaged": bool(r.get("command")),
                      "kind": (r.get("kind") or "server").lower()})
    conditions = [c for c in (rollout, domain) if c]
    md["status"] = {"phase": "Ready", "roles": roles, **({"conditions": conditions} if conditions else {}),
                    **({"kvCache": kv} if kv else {})}
    if generation is not None:
        md["metadata"]["generation"] = generation
    return md
