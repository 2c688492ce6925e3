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
    found = in_flight(setting)
    return None if found is None else found.asked


# -- a Setting in flight -------------------------------------------------------------------------
#
# What the operator acts on, read from its Go code (gpustack/gpustack-operator):
# - api/v1/setting.go: SettingSpec.Value is "a write-only input field", SettingStatus.Value "the
#   current value of the setting, a read-only output field". The type has no generation and no
#   observedGeneration: spec against status is the only sign in the object that a change was not
#   taken in.
# - pkg/extensionapi/setting.go (SettingHandler): the Setting is a view of one key of the Secret
#   gpustack-system/gpustack-settings. OnUpdate writes the Secret (pkg/setting/types.go
#   Setting.Configure, refusing what AllowBool refuses) and answers with OnGet, which builds status
#   from the Secret and never returns spec. So a live GET reports status only, and status.value is
#   what the Secret holds.
# - pkg/setting/types.go: the webhooks and controllers read the value through Value /
#   ValueFromRemote, cached per process for 30 s (_Cache = cache.New(30*time.Second, ...)); no field
#   reports what a process holds. So after status.value changes, the operator may act on the old
#   value for up to 30 s: verify's argv-based rows say when replicas have rolled, never the Setting.
# A Setting whose spec.value asks for a value that status.value does not report (a saved object,
# the guide's `kubectl patch` answered by a build or stand-in that keeps spec, or one whose status
# was never written) is in flight: nothing judged with it is settled until the two agree.

IN_FLIGHT_SOURCES = ("cluster", "file")     # read from an object (not --assume-setting, not absent)


class InFlight(Record):
    """spec.value asks for `asked`; status.value (`status_value`, None: not written) reports
    `reported` as the operator reads it (None: not written; an unreadable value reads on)."""

    __slots__ = ("asked", "reported", "spec_value", "status_value")

    def __init__(self, asked: bool, reported: bool | None, spec_value: str, status_value: str | None):
        self.asked = asked
        self.reported = reported
        self.spec_value = spec_value
        self.status_value = status_value

    def to_dict(self):
        return {"specValue": self.spec_value, "statusValue": self.status_value, "asks": WORD[self.asked],
                "reports": None if self.reported is None else WORD[self.reported]}


def in_flight(setting: Setting | None) -> InFlight | None:
    """The Setting in flight (see above), or None when spec and status agree, spec.value is not
    returned (the operator's own handler), or spec.value is not a value the operator accepts (its
    admission, AllowBool, refuses it: it is never taken in, and status.value stays what it acts on)."""
    if setting is None or setting.source not in IN_FLIGHT_SOURCES or setting.spec_value is None:
        return None
    asked = parse_bool(setting.spec_value)
    if asked is None:
        return None
    if setting.status_value is None:
        return InFlight(asked, None, setting.spec_value, None)
    reported = owned(setting)
    if parse_bool(setting.status_value) == asked:
        return None
    return InFlight(asked, reported, setting.spec_value, setting.status_value)


def in_flight_message(found: InFlight) -> str:
    """The one sentence every view says of a Setting in flight."""
    status = ("status.value is not written" if found.status_value is None or found.reported is None else
              f"status.value reports {found.status_value!r} ({action_for(found.reported)})")
    return (f"the Setting is in flight: spec.value asks {found.spec_value!r} ({action_for(found.asked)}) and "
            f"{status}: the operator has not taken the change in, and acts on "
            f"{'its default, on' if found.status_value is None else 'status.value'} until it does")


IN_FLIGHT_FIX = ("wait for the operator to take it in (kubectl kvcache setting status shows both values), then run "
                 "this again; or follow it: kubectl kvcache verify -A --wait")
