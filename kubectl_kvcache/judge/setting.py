"""The operator's Setting model-deployment-kv-cache-dtype-owned: what its value means.

Pure: the value as the operator reads it (Go's strconv.ParseBool), its default, what flipping
it touches (blast radius), and the merge patch that flips it (the command that flips it back: cli/flows/setting.py).
How it is shown is render/setting.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_kvcache.record import Record
from kubectl_kvcache.operator.records import Setting

DEFAULT = True
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")

def parse_bool(text) -> bool | None:
    """Go's strconv.ParseBool: exactly these spellings, anything else is None (refused)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def effective_value(setting: Setting | None) -> bool | None:
    """The value the operator acts on: status.value, or the default when unset; None if unreadable."""
    if setting is None or setting.status_value is None:
        return DEFAULT
    return parse_bool(setting.status_value)


def owned(setting: Setting | None) -> bool:
    """Whether the operator renders the dtype and refuses own flags: ModelDeploymentOwnsKVCacheDtype
    (operator.md, "The Setting's value") returns `err != nil || owned`, so a status.value that
    strconv.ParseBool cannot read counts as ON, never as off and never as an error."""
    value = effective_value(setting)
    return True if value is None else value


UNREADABLE_MEANS = ("the operator counts a value strconv.ParseBool cannot read as on "
                    "(ModelDeploymentOwnsKVCacheDtype: err != nil || owned)")


# -- what a flip of the Setting touches -------------------------------------------------------

ACTIONS = {"on": True, "off": False}
WORD = {True: "true", False: "false"}


def action_for(value: bool) -> str:
    return "on" if value else "off"


class BlastRadius(Record):
    """What rolls when the Setting flips. A count is None when it could not be read (`why`)."""

    __slots__ = ("deployments", "replicas", "namespaces", "injected_pods", "injected_namespaces", "deployments_why",
                 "pods_why")

    def __init__(self, deployments: int | None, replicas: int | None, namespaces: int | None,
                 injected_pods: int | None, injected_namespaces: int | None, deployments_why: str = "",
                 pods_why: str = ""):
        self.deployments = deployments
        self.replicas = replicas
        self.namespaces = namespaces
        self.injected_pods = injected_pods
        self.injected_namespaces = injected_namespaces
        self.deployments_why = deployments_why
        self.pods_why = pods_why


def blast_radius(deployments: Iterable | None, injected_pods: Iterable | None,
                 deployments_why="", pods_why="") -> BlastRadius:
    """Pool-attached deployments (spec.kvCache set) roll with every replica of every role (a role
    without `replicas` counts as 1, the API default); injection Pods are affected when next
    created. Either input may be None: not readable, with the reason."""
    if deployments is None:
        n_md = replicas = namespaces = None
    else:
        attached = [d for d in deployments if d.kv_cache]
        n_md = len(attached)
        replicas = sum(1 if r.replicas is None else int(r.replicas) for d in attached for r in d.roles)
        namespaces = len({d.namespace for d in attached})
    if injected_pods is None:
        n_pods = pod_namespaces = None
    else:
        pods = list(injected_pods)
        n_pods, pod_namespaces = len(pods), len({p.namespace for p in pods})
    return BlastRadius(n_md, replicas, namespaces, n_pods, pod_namespaces, deployments_why, pods_why)


# -- the change itself ----------------------------------------------------------------------

def patch_body(resource_version: str, value: bool) -> dict:
    """The whole merge patch: spec.value, guarded by the resourceVersion read (409 if it moved)."""
    return {"metadata": {"resourceVersion": resource_version}, "spec": {"value": WORD[value]}}


# Outcomes of deciding what `on`/`off` does with the Setting as read.
PATCH, ALREADY, NOT_EDITABLE = "patch", "already", "not-editable"


def decide(setting: Setting, want: bool) -> str:
    """`already` only when status.value reports the wanted value and no other value is pending in
    spec.value; `not-editable` when status.editable is false; else `patch`."""
    if setting.editable is False:
        return NOT_EDITABLE
    pending = None if setting.spec_value is None else parse_bool(setting.spec_value)
    if effective_value(setting) == want and pending in (None, want):
        return ALREADY
    return PATCH


def pending_value(setting: Setting) -> bool | None:
    """The value spec.value asks for when status.value does not report it yet, else None."""
    if setting.spec_value is None:
        return None
    asked = parse_bool(setting.spec_value)
    return asked if asked is not None and asked != effective_value(setting) else None
