"""The Nodes the engine Pods run on, read for their labels (the GPU: engine/gpu.from_labels).

Bounded: only the Nodes named by rows whose verdict the GPU decides (judge/gpu.targets). Up to
GETS distinct Nodes, one GET each (`/api/v1/nodes/NAME` as PartialObjectMetadata: the labels
without the Node's status, which the labels do not need); more, one paged list of every Node's
metadata (`/api/v1/nodes?limit=PAGE` as PartialObjectMetadataList), which costs one round trip
per PAGE Nodes where the GETs cost one per Node (measured in docs/gpu.md). Replicas share Nodes,
so the count is the Nodes, not the Pods. Nodes are cluster-scoped: a user allowed only a
namespace gets 403, said once, and every prediction stands. Reads; never judges.
"""

from __future__ import annotations

from kubectl_kvcache import masking
from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.record import Record

GETS = 10               # up to this many distinct Nodes, one GET each; beyond, one paged list
PAGE = 500              # Nodes a page of the list (metadata only: about 1 KiB each)
MAX_PAGES = 10          # pages read at most (5,000 Nodes); the Nodes not reached are said
NODE_BYTES = 256 << 10      # one Node's metadata (labels and annotations are bounded by the API server)
_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
PAGE_BYTES = 4 << 20


class Read(Record):
    """What the Node reads found: labels per Node name; what could not be read."""

    __slots__ = ("labels", "denied", "missing", "failed", "skipped", "bound")

    def __init__(self):
        self.labels: dict[str, dict] = {}
        self.denied = False             # 403 on get nodes
        self.missing: list[str] = []    # 404: the Node is gone
        self.failed = ""                # another error, masked, said once
        self.skipped: list[str] = []    # beyond the list's pages
        self.bound = PAGE * MAX_PAGES


def _labels(obj) -> dict:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def read(client, names) -> Read:
    """The labels of each Node in `names` (sorted, de-duplicated): one GET each up to GETS Nodes,
    else one paged list of every Node's metadata (PAGE a page, at most MAX_PAGES pages)."""
    found = Read()
    wanted = sorted({n for n in names if isinstance(n, str) and n})
    if len(wanted) > GETS:
        return _listed(client, wanted, found)
    for name in wanted:
        try:
            obj = client.request("GET", f"/api/v1/nodes/{name}", accept=_METADATA, limit=NODE_BYTES,
                                 what=f"get node {name}")
        except Forbidden:
            found.denied = True
            break
        except NotFound:
            found.missing.append(name)
            continue
        except PluginError as exc:
            found.failed = found.failed or masking.mask(str(exc))
            continue
        found.labels[name] = _labels(obj)
    return found


def _listed(client, wanted, found) -> Read:
    """One paged `GET /api/v1/nodes` as PartialObjectMetadataList, keeping the wanted Nodes."""
    left = set(wanted)
    token = ""
    for _ in range(MAX_PAGES):
        query = {"limit": str(PAGE)} | ({"continue": token} if token else {})
        try:
            page = client.request("GET", "/api/v1/nodes", query=query, accept=_METADATA_LIST, limit=PAGE_BYTES,
                                  what="list nodes")
        except Forbidden:
            found.denied = True
            return found
        except PluginError as exc:
            found.failed = masking.mask(str(exc))
            return found
        for obj in (page.get("items") or []) if isinstance(page, dict) else []:
            name = ((obj.get("metadata") or {}).get("name")) if isinstance(obj, dict) else None
            if isinstance(name, str) and name in left:
                found.labels[name] = _labels(obj)
                left.discard(name)
        meta = page.get("metadata") if isinstance(page, dict) else None
        more = meta.get("continue") if isinstance(meta, dict) else None
        token = more if isinstance(more, str) else ""
        if not token or not left:
            break
    if token and left:
        found.skipped = sorted(left)
    else:
        found.missing = sorted(left)
    return found
