"""What the checks read from a snapshot: injection opt-ins (Pods and workload templates) and the
engine Pods of pool-attached deployments, grouped by role."""

from __future__ import annotations

from kubectl_kvcache.judge import verify
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.record import Record


class OptIn(Record):
    """A Pod, or a workload's Pod template, labelled kvcache.gpustack.ai/inject=true."""

    __slots__ = ("kind", "namespace", "name", "annotations", "containers", "existing_pod", "owner")

    def __init__(self, kind: str, namespace: str, name: str, annotations: dict[str, str],
                 containers: tuple[dict, ...], existing_pod: bool = False, owner: tuple[str, str] | None = None):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.annotations = annotations
        self.containers = containers
        self.existing_pod = existing_pod
        self.owner = owner          # (kind, name) of a Pod's controller

    @property
    def obj(self):
        return (self.namespace, self.kind, self.name)

    def annotation(self, key):
        return self.annotations.get(api.ANNOTATION_PREFIX + key)


def opt_ins(snapshot) -> list[OptIn]:
    found = []
    for pod in snapshot.pods:
        if not records.in_namespace(pod.namespace, snapshot.namespace) or pod.md_controlled:
            continue
        if pod.opted_in:
            owner = (pod.owner[1], pod.owner[2]) if pod.owner else None
            found.append(OptIn("Pod", pod.namespace, pod.name, pod.annotations, pod.containers, True, owner))
    for w in snapshot.workloads:
        if records.in_namespace(w.namespace, snapshot.namespace) and w.labels.get(api.INJECT_LABEL) == "true":
            found.append(OptIn(w.kind, w.namespace, w.name, w.annotations, w.containers))
    return sorted(found, key=lambda o: (o.namespace, o.kind != "Pod", o.kind, o.name))


def target_container(optin: OptIn) -> tuple[dict | None, str]:
    """The container the webhook injects into, or why it refuses to pick one."""
    return records.injection_target(optin.annotations, optin.containers)


def unique(items):
    """The items in order, each once."""
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


class EnginePods:
    """Engine Pods of pool-attached deployments, grouped (verify decides which Pods count)."""

    def __init__(self, snapshot):
        self.by_role: dict[tuple[str, str, str | None], list[verify.Candidate]] = {}
        self._roles: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {}
        self.gpus: dict = getattr(snapshot, "gpus", None) or {}
        for cand in verify.candidates(snapshot):
            if cand.owner and not cand.problem:
                key = (cand.pod.namespace, cand.owner["name"], cand.role)
                if key not in self.by_role:
                    self._roles.setdefault(key[:2], []).append(key)
                self.by_role.setdefault(key, []).append(cand)

    def gpus_of(self, md, role=None) -> tuple:
        """The GPUs (engine Gpu) of the Nodes the role's Pods run on, as read (snapshot.gpus)."""
        found = []
        for c in self.of(md, role):
            g = self.gpus.get(c.pod.node) if c.pod.node else None
            if g is not None and g not in found:
                found.append(g)
        return tuple(found)

    def of(self, md, role=None):
        if role is not None:
            return self.by_role.get((md.namespace, md.name, role), [])
        return [c for key in self._roles.get((md.namespace, md.name), ()) for c in self.by_role[key]]

    def images(self, md):
        cands = sorted(self.of(md), key=lambda c: c.pod.created)
        return [(c.pod.container(api.ENGINE_CONTAINER) or {}).get("image") for c in cands]
