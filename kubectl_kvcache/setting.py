"""The operator's Setting model-deployment-kv-cache-dtype-owned: what its value means.

Pure: the value as the operator reads it (Go's strconv.ParseBool), its default, the one-line
meaning shown to users, what flipping it touches (blast radius), the merge patch that flips it,
and the command that flips it back.
"""

import shlex
from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

from kubectl_kvcache.snapshot import SETTING_NAME, SETTING_NAMESPACE, Setting

DEFAULT = True
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")

MEANING = {
    True: "on: the operator hands each Binding's dtype to the engine as --kv-cache-dtype and refuses roles "
          "and Pods that pass the flag themselves",
    False: "off: the operator renders no --kv-cache-dtype and refuses nothing",
}


def parse_bool(text) -> Optional[bool]:
    """Go's strconv.ParseBool: exactly these spellings, anything else is None (refused)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def effective_value(setting: Optional[Setting]) -> Optional[bool]:
    """The value the operator acts on: status.value, or the default when unset; None if unreadable."""
    if setting is None or setting.status_value is None:
        return DEFAULT
    return parse_bool(setting.status_value)


# -- what a flip of the Setting touches -------------------------------------------------------

ACTIONS = {"on": True, "off": False}
WORD = {True: "true", False: "false"}


def action_for(value: bool) -> str:
    return "on" if value else "off"


@dataclass(frozen=True)
class BlastRadius:
    """What rolls when the Setting flips. A count is None when it could not be read (`why`)."""
    deployments: Optional[int]
    replicas: Optional[int]
    namespaces: Optional[int]
    injected_pods: Optional[int]
    injected_namespaces: Optional[int]
    deployments_why: str = ""
    pods_why: str = ""


def blast_radius(deployments: Optional[Iterable], injected_pods: Optional[Iterable],
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


def _plural(n, one, many=None):
    return f"{n} {one if n == 1 else (many or one + 's')}"


def blast_radius_lines(radius: BlastRadius, want: bool) -> Tuple[str, ...]:
    head = f"Turning the Setting {action_for(want)} ({'renders' if want else 'stops rendering'} " \
           f"--kv-cache-dtype) affects, cluster-wide:"
    if radius.deployments is None:
        md = f"  pool-attached ModelDeployments: unknown ({radius.deployments_why})"
    elif radius.deployments == 0:
        md = "  0 pool-attached ModelDeployments: nothing rolls"
    else:
        md = (f"  {_plural(radius.deployments, 'pool-attached ModelDeployment')} "
              f"({_plural(radius.replicas, 'replica')}) in {_plural(radius.namespaces, 'namespace')}: "
              f"{'each rolls' if radius.deployments != 1 else 'it rolls'} at its next reconcile")
    if radius.injected_pods is None:
        pods = f"  Pods opted into injection: unknown ({radius.pods_why})"
    elif radius.injected_pods == 0:
        pods = "  0 Pods opted into injection (label kvcache.gpustack.ai/inject=true)"
    else:
        pods = (f"  {_plural(radius.injected_pods, 'Pod')} opted into injection (label "
                f"kvcache.gpustack.ai/inject=true) in {_plural(radius.injected_namespaces, 'namespace')}: "
                f"affected when next created")
    return head, md, pods


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


# -- the command that undoes it -------------------------------------------------------------

TOKEN_VARIABLE = "KVCACHE_TOKEN"
_VALUE_FLAGS = (("kubeconfig", "--kubeconfig"), ("context", "--context"), ("cluster", "--cluster"),
                ("user", "--user"), ("server", "--server"),
                ("certificate_authority", "--certificate-authority"), ("as_user", "--as"))


def connection_args(opts) -> Tuple[str, ...]:
    """The connection flags the user gave, as argv (the token itself is never echoed: it is
    referenced as $KVCACHE_TOKEN)."""
    args = []
    for attr, flag in _VALUE_FLAGS:
        value = getattr(opts, attr, None)
        if value:
            args += [flag, value]
    for group in getattr(opts, "as_group", None) or ():
        args += ["--as-group", group]
    if getattr(opts, "token", None):
        args += ["--token", "$" + TOKEN_VARIABLE]
    if getattr(opts, "insecure_skip_tls_verify", False):
        args.append("--insecure-skip-tls-verify")
    if str(getattr(opts, "request_timeout", "0") or "0") != "0":
        args += ["--request-timeout", str(opts.request_timeout)]
    if getattr(opts, "chunk_size", 500) not in (None, 500):
        args += ["--chunk-size", str(opts.chunk_size)]
    return tuple(args)


def reverse_command(previous: bool, opts) -> str:
    """`kubectl kvcache setting on|off --yes ...`: the shell command that restores `previous`."""
    argv = ["kubectl", "kvcache", "setting", action_for(previous), "--yes"]
    manager = getattr(opts, "field_manager", None)
    if manager and manager != "kubectl-kvcache":
        argv += ["--field-manager", manager]
    argv += connection_args(opts)
    return " ".join(f'"{a}"' if a == "$" + TOKEN_VARIABLE else shlex.quote(a) for a in argv)


# -- status ---------------------------------------------------------------------------------

def status_view(setting: Setting) -> dict:
    """The stable `SettingStatus` shape of `setting status -o json|yaml`."""
    value = effective_value(setting)
    raw = setting.status_value
    return {
        "kind": "SettingStatus",
        "name": SETTING_NAME,
        "namespace": SETTING_NAMESPACE,
        "value": value,
        "raw": raw,
        "source": "cluster" if raw is not None else "default",
        "editable": setting.editable,
        "description": setting.description,
        "meaning": MEANING[value] if value is not None else
        f"unreadable: {raw!r} is not a value the operator accepts (1 t T TRUE true True 0 f F FALSE false False)",
    }


def _shown(value: Optional[bool], raw: Optional[str]) -> str:
    if value is None:
        return f"unreadable ({raw!r})"
    text = f"{action_for(value)} ({WORD[value]})"
    return text if raw in (None, WORD[value]) else f"{text}, written {raw!r}"


def status_lines(setting: Setting) -> Tuple[str, ...]:
    view = status_view(setting)
    if setting.source == "default":
        source = "default: the Setting object does not exist (the operator's default applies)"
    elif view["raw"] is None:
        source = "default: status.value is unset (the operator's default applies)"
    else:
        source = f"cluster: status.value {view['raw']!r}"
    editable = {True: "yes", False: "no", None: "unknown (status.editable is unset)"}[view["editable"]]
    lines = [f"Setting {SETTING_NAMESPACE}/{SETTING_NAME}",
             f"  value:       {_shown(view['value'], view['raw'])}",
             f"  source:      {source}",
             f"  editable:    {editable}",
             f"  description: {view['description'] or '(none)'}",
             f"  meaning:     {view['meaning']}"]
    pending = pending_value(setting)
    if pending is not None:
        lines.append(f"  pending:     spec.value {setting.spec_value!r} asks for {action_for(pending)}; the "
                     f"operator has not reported it in status.value yet (it caches values for about 30 s)")
    return tuple(lines)


def pending_value(setting: Setting) -> Optional[bool]:
    """The value spec.value asks for when status.value does not report it yet, else None."""
    if setting.spec_value is None:
        return None
    asked = parse_bool(setting.spec_value)
    return asked if asked is not None and asked != effective_value(setting) else None
