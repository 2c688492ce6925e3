"""The Nodes the engine Pods run on, read for their labels (the GPU: engine/gpu.from_labels).

Bounded: only the Nodes named by rows whose verdict the GPU decides (judge/gpu.targets), one GET
each (`/api/v1/nodes/NAME` as PartialObjectMetadata: the labels without the Node's status, whose
image list makes a whole Node tens of KiB), at most MAX_NODES a run (the rest are said in a note;
their predictions stand). A GET costs one round trip per distinct Node; replicas share Nodes, so
the count is the Nodes, not the Pods. Nodes are cluster-scoped: a user allowed only a namespace
gets 403, said once, and every prediction stands. Reads; never judges.
"""

from __future__ import annotations

from kubectl_kvcache import masking
from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.record import Record

MAX_NODES = 50
NODE_BYTES = 256 << 10      # one Node's metadata (labels and annotations are bounded by the API server)
_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


class Read(Record):
    """What the Node reads found: labels per Node name; what could not be read."""

    __slots__ = ("labels", "denied", "missing", "failed", "skipped", "bound")

    def __init__(self):
        self.labels: dict[str, dict] = {}
        self.denied = False             # 403 on get nodes
        self.missing: list[str] = []    # 404: the Node is gone
        self.failed = ""                # another error, masked, said once
        self.skipped: list[str] = []    # beyond MAX_NODES
        self.bound = MAX_NODES


def _labels(obj) -> dict:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def read(client, names) -> Read:
    """The labels of each Node in `names` (sorted, de-duplicated), one GET each."""
    found = Read()
    wanted = sorted({n for n in names if isinstance(n, str) and n})
    found.skipped = wanted[MAX_NODES:]
    for name in wanted[:MAX_NODES]:
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
