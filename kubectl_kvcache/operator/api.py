"""The GPUStack Operator's API as the plugin reads and writes it, in one place: its groups, the
versions it is known at, each kind's resource, its labels and annotations, and the Setting's
namespace, name and path. A new API version or resource is an edit here only.

The version a request uses is always the one the API server serves (discovery: kube.Client's
resource_version_for); VERSIONS only say which ones this plugin has been written against (the
tests build their objects at VERSION).
"""

from __future__ import annotations

from kubectl_kvcache.record import Record

GROUP = "worker.gpustack.ai"            # ModelDeployment, KVCachePoolBinding
SETTING_GROUP = "gpustack.ai"           # Setting
SETTING_VERSION = "v1"                  # the Setting's (an aggregated API: reference/operator.md)
DOMAIN = SETTING_GROUP                  # the operator's labels and annotations sit under it and its subdomains
VERSIONS = ("v1alpha1",)                # the versions the operator serves these kinds at, newest first
VERSION = VERSIONS[0]

SETTING_NAMESPACE = "gpustack-system"
SETTING_NAME = "model-deployment-kv-cache-dtype-owned"

INJECT_LABEL = "kvcache.gpustack.ai/inject"
ANNOTATION_PREFIX = "kvcache.gpustack.ai/"
BINDING_ANNOTATION = ANNOTATION_PREFIX + "binding"
# What `recover` writes on objects only its own privileges can write (judge/anchor.py): on the new
# Binding, the old Binding it recovers (name, uid), the strategy and one key per backup's digest;
# on the Setting, which recovery turned it off.
RECOVERED_FROM = ANNOTATION_PREFIX + "recovered-from"
RECOVERED_FROM_UID = ANNOTATION_PREFIX + "recovered-from-uid"
RECOVERY_STRATEGY = ANNOTATION_PREFIX + "recovery-strategy"
BACKUP_DIGEST_PREFIX = "backup." + ANNOTATION_PREFIX
TURNED_OFF_BY = ANNOTATION_PREFIX + "turned-off-by-recovery"
MD_NAME_LABEL = ("app.kubernetes.io/name", "model-deployment")
COMPONENT_LABEL = "app.kubernetes.io/component"
ROLE_KIND_LABEL = "modeldeployment.gpustack.ai/role-kind"     # the role's kind, lowercase
ENGINE_CONTAINER = "main"


class Resource(Record):
    """One kind's REST resource. version None: the operator's, resolved through discovery."""

    __slots__ = ("kind", "group", "plural", "version")

    def __init__(self, kind: str, group: str, plural: str, version: str | None = None):
        self.kind = kind
        self.group = group
        self.plural = plural
        self.version = version

    @property
    def name(self) -> str:
        """As kubectl names it in messages: `modeldeployments.worker.gpustack.ai`, `pods`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def operators(self) -> bool:
        return self.version is None

    def api_version(self, version: str | None = None) -> str:
        """An object's apiVersion at `version` (the discovered one for the operator's kinds)."""
        version = version or self.version
        return f"{self.group}/{version}" if self.group else version or ""    # the core group's always have one


MODEL_DEPLOYMENT = Resource("ModelDeployment", GROUP, "modeldeployments")
BINDING = Resource("KVCachePoolBinding", GROUP, "kvcachepoolbindings")
SETTING = Resource("Setting", SETTING_GROUP, "settings")
POOL = Resource("KVCachePool", GROUP, "kvcachepools")              # cluster-scoped
BACKEND = Resource("KVCacheBackend", GROUP, "kvcachebackends")     # cluster-scoped
POD = Resource("Pod", "", "pods", "v1")
WORKLOADS = (Resource("Deployment", "apps", "deployments", "v1"),
             Resource("StatefulSet", "apps", "statefulsets", "v1"),
             Resource("DaemonSet", "apps", "daemonsets", "v1"),
             Resource("ReplicaSet", "apps", "replicasets", "v1"),
             Resource("Job", "batch", "jobs", "v1"),
             Resource("CronJob", "batch", "cronjobs", "v1"))
WORKLOAD_KINDS = tuple(r.kind for r in WORKLOADS)
WORKLOAD_GROUPS = tuple(dict.fromkeys(r.group for r in WORKLOADS))
OPERATOR_GROUPS = (GROUP, SETTING_GROUP)

RESOURCES = {r.kind: r for r in (MODEL_DEPLOYMENT, BINDING, SETTING, POD, POOL, BACKEND) + WORKLOADS}

MD_KIND, BINDING_KIND, SETTING_KIND = MODEL_DEPLOYMENT.kind, BINDING.kind, SETTING.kind
POOL_KIND, BACKEND_KIND = POOL.kind, BACKEND.kind
# The pool's condition saying whether its master holds a tenant ledger, and the one reason that is
# a configuration fact (pkg/worker/controllers/worker: KVCachePoolConditionQuotaLedgerAvailable,
# KVCachePoolReasonMultiTenancyDisabled); LedgerUnreachable is an outage, not a verdict.
LEDGER_CONDITION = "QuotaLedgerAvailable"
NO_LEDGER_REASON = "MultiTenancyDisabled"


def resource(kind: str) -> Resource:
    return RESOURCES[kind]


def group_of(obj: dict) -> str:
    """An object's API group from its apiVersion ('' for the core group)."""
    api_version = obj.get("apiVersion") or ""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def version_for(client, res: Resource) -> str:
    """The version a request for `res` uses: the served one for the operator's kinds."""
    return res.version or client.resource_version_for(res.group, res.plural)


def collection_path(client, res: Resource, namespace: str | None = None) -> str:
    from kubectl_kvcache.kube.client import collection_path as path

    return path(res.group, version_for(client, res), res.plural, namespace)


def object_path(client, res: Resource, namespace: str | None, name: str) -> str:
    from kubectl_kvcache.kube.client import object_path as path

    return path(res.group, version_for(client, res), res.plural, namespace, name)


def setting_path(version: str) -> str:
    """The Setting's path at a served version, every segment quoted (kube.object_path)."""
    from kubectl_kvcache.kube.client import object_path as path

    return path(SETTING_GROUP, version, SETTING.plural, SETTING_NAMESPACE, SETTING_NAME)


def setting_ref() -> str:
    """The Setting as messages name it."""
    return f"{SETTING_NAMESPACE}/{SETTING_NAME}"
