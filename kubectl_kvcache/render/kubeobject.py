"""Every -o json|yaml document as a Kubernetes object kubectl's printers can read: an
`apiVersion` (the plugin's own, kubectl_kvcache.API_VERSION) beside its `kind`, and each row of a
report given the identity of the object it is about -- `apiVersion`, `kind` and `metadata.name`
(and `metadata.namespace`) -- so that `-o name` prints `pod/deepseek-sgl-server-0` or
`kvcachepoolbinding.worker.gpustack.ai/sgl-fp8`, names a kubectl user can pass back to kubectl
(docs/reports.md, "kubectl's output options"):

  VerifyReport items   the replica's Pod                          (v1 Pod)
  CheckReport findings the object the finding is on (its `kind`)   (that kind's group/version)
  BindingList items    the KVCachePoolBinding
  RoleList items       the role's ModelDeployment (a row per role: several rows may name one)

The operator's kinds are given at the version this plugin is written against
(operator/api.py); a cluster serving another prints the same names."""

from __future__ import annotations

from kubectl_kvcache import API_VERSION
from kubectl_kvcache.operator import api

# document kind -> (the key of its rows, how a row names its object: (kind, name field))
ROWS = {
    "VerifyReport": ("items", lambda item: ("Pod", item.get("pod"))),
    "CheckReport": ("findings", lambda item: (item.get("kind"), item.get("name"))),
    "BindingList": ("items", lambda item: (api.BINDING_KIND, item.get("name"))),
    "RoleList": ("items", lambda item: (api.MD_KIND, item.get("deployment"))),
}


# the plugin's own documents (each command's -o json|yaml), and their several-contexts forms (Fleet...)
KINDS = frozenset(ROWS) | {"SettingStatus", "RecoveryPlan", "EngineReleases"}


def ours(kind) -> bool:
    return isinstance(kind, str) and (kind in KINDS or (kind.startswith("Fleet") and kind[len("Fleet"):] in KINDS))


def api_version_of(kind) -> str:
    """The apiVersion of a kind the plugin reports on: the core and workload kinds' own, the
    operator's at operator/api.py's versions; another kind (none today) the plugin's."""
    resource = api.RESOURCES.get(kind)
    if resource is None:
        return API_VERSION
    if resource.kind == api.SETTING_KIND:
        return resource.api_version(api.SETTING_VERSION)
    return resource.api_version(resource.version or api.VERSION)


def named(item: dict, kind, name) -> dict:
    """`item` with apiVersion, kind and metadata (name, namespace) first, its own fields after."""
    if not isinstance(item, dict) or not kind:
        return item
    metadata: dict = {"name": name} if name else {}
    if item.get("namespace"):
        metadata["namespace"] = item["namespace"]
    rest = {k: v for k, v in item.items() if k not in ("apiVersion", "kind", "metadata")}
    return {"apiVersion": api_version_of(kind), "kind": kind, "metadata": metadata, **rest}


def document(data):
    """A report's structured form as an object: `apiVersion` first, its rows named (ROWS).
    Anything else (not one of the plugin's kinds, or with an apiVersion of its own) is returned
    as it is."""
    if not isinstance(data, dict) or not ours(data.get("kind")) or "apiVersion" in data:
        return data
    out = {"apiVersion": API_VERSION, **data}
    kind = data["kind"]
    rows = ROWS.get(kind[len("Fleet"):] if isinstance(kind, str) and kind.startswith("Fleet") else kind)
    if rows is not None and isinstance(out.get(rows[0]), list):
        key, identity = rows
        out[key] = [named(item, *identity(item)) for item in out[key]]
    return out


def rows_key(data) -> str:
    """The key of a report's rows (check: `findings`; else `items`)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.startswith("Fleet"):
        kind = kind[len("Fleet"):]
    entry = ROWS.get(kind) if isinstance(kind, str) else None
    return entry[0] if entry is not None else "items"


def rows(data) -> list:
    """The rows of a report's structured form that kubectl's printers list (its items; check: its
    findings), named; [] for a document without rows."""
    data = document(data)
    if not isinstance(data, dict):
        return []
    items = data.get(rows_key(data))
    return items if isinstance(items, list) else []


def label_index(snapshot) -> dict:
    """{(kind, namespace, name): labels} of the objects a snapshot read that rows name: Pods,
    ModelDeployments, Bindings and workloads (their own metadata.labels). The Setting's labels are
    not read: not in it."""
    index: dict = {}
    for pod in getattr(snapshot, "pods", ()) or ():
        index[("Pod", pod.namespace, pod.name)] = pod.labels or {}
    for (namespace, name), md in (getattr(snapshot, "deployments", None) or {}).items():
        index[(api.MD_KIND, namespace, name)] = md.labels or {}
    for (namespace, name), binding in (getattr(snapshot, "bindings", None) or {}).items():
        index[(api.BINDING_KIND, namespace, name)] = binding.labels or {}
    for workload in getattr(snapshot, "workloads", ()) or ():
        index[(workload.kind, workload.namespace, workload.name)] = workload.own_labels or {}
    return index


def labels_text(item, index) -> str:
    """kubectl's LABELS cell (printers' labels.FormatLabels: `k=v` sorted by key, comma-joined;
    `<none>` for none) of the object a row names; `<unknown>` for one whose labels were not read."""
    if not isinstance(item, dict):
        return "<unknown>"
    metadata = item.get("metadata") or {}
    key = (item.get("kind"), metadata.get("namespace"), metadata.get("name"))
    labels = (index or {}).get(key)
    if labels is None:
        return "<unknown>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) or "<none>"
