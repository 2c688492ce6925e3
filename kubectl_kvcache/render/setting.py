"""The Setting as people read it: `setting status` lines and its structured `SettingStatus`,
the blast radius of a flip, and the messages of on/off."""

from __future__ import annotations

import json

from kubectl_kvcache.judge.setting import (IN_FLIGHT_FIX, UNREADABLE_MEANS, BlastRadius, WORD, action_for,
                                           effective_value, in_flight, in_flight_message)
from kubectl_kvcache.render.core import Column, View, escape, line
from kubectl_kvcache.operator.api import SETTING_NAME, SETTING_NAMESPACE
from kubectl_kvcache.operator.records import Setting

MEANING = {
    True: "on: the operator hands each Binding's dtype to the engine as --kv-cache-dtype and refuses roles "
          "and Pods that pass the flag themselves",
    False: "off: the operator renders no --kv-cache-dtype and refuses nothing",
}


def _plural(n, one, many=None):
    return f"{n} {one if n == 1 else (many or one + 's')}"


def blast_radius_lines(radius: BlastRadius, want: bool) -> tuple[str, ...]:
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


def status_view(setting: Setting) -> dict:
    """The stable `SettingStatus` shape of `setting status -o json|yaml`."""
    value = effective_value(setting)
    raw = setting.status_value
    flight = in_flight(setting)
    return {
        "name": SETTING_NAME,
        "namespace": SETTING_NAMESPACE,
        "value": value,
        "raw": raw,
        "source": "cluster" if raw is not None else "default",
        "editable": setting.editable,
        "description": setting.description,
        "meaning": MEANING[value] if value is not None else
        f"unreadable: {raw!r} is not a value strconv.ParseBool reads (1 t T TRUE true True 0 f F FALSE false "
        f"False); {UNREADABLE_MEANS}",
    } | ({"specValue": setting.spec_value, "inFlight": flight.to_dict() | {"message": in_flight_message(flight),
                                                                          "fix": IN_FLIGHT_FIX}}
         if flight is not None else {})


def _shown(value: bool | None, raw: str | None) -> str:
    if value is None:
        return f"unreadable ({raw!r})"
    text = f"{action_for(value)} ({WORD[value]})"
    return text if raw in (None, WORD[value]) else f"{text}, written {raw!r}"


# `setting status` as a view: one row (one per context with --contexts); its structured form is
# status_view's, stamped `SettingStatus`.
VIEW = View(
    columns=(Column("value", lambda s: _shown(s["value"], s["raw"]) + (
                 f"; in flight: spec.value asks {s['inFlight']['asks']!r}" if "inFlight" in s else "")),
             Column("source", lambda s: s["source"]),
             Column("editable", lambda s: {True: "yes", False: "no"}.get(s["editable"], "unknown"))),
    wide=(Column("description", lambda s: s["description"]), Column("meaning", lambda s: s["meaning"])),
    rows=lambda status: [status], to_dict=lambda status: status, empty="Settings", kind="SettingStatus",
    items=None)


def status_lines(setting: Setting) -> tuple[str, ...]:
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
    if "inFlight" in view:
        lines.append(f"  in flight:   {view['inFlight']['message']}")
        lines.append(f"  until then:  {view['inFlight']['fix']}")
    return tuple(lines)


# -- on / off ---------------------------------------------------------------------------------

WEBHOOK_NOTE = ("the operator's webhooks pick the change up within about 30 s (they cache the value), and "
                "each pool-attached ModelDeployment rolls at its next reconcile")


def _seconds(timeout):
    return f"{timeout:g}s"


def status(record: Setting, out):
    for text in status_lines(record):
        line(out, text)


def already(record: Setting, want: bool, out):
    line(out, f"The Setting is already {action_for(want)} (status.value {record.status_value or 'unset: default'}"
          f"); nothing to change.")


def blast(radius: BlastRadius, want: bool, out):
    for text in blast_radius_lines(radius, want):
        line(out, text)


def capacity(lines, out):
    """What the change does to the replicas' KV caches (judge/capacity.off_lines); None: not read."""
    if not lines:
        return
    line(out, "Their KV caches after the roll (vLLM refuses to start where the max length no longer fits):")
    for text in lines:
        line(out, f"  {escape(text)}")


def client_dry_run(path, body, field_manager, out):
    line(out, "Dry run (client): nothing was sent. The patch would be:")
    line(out, f"  PATCH {path}?fieldManager={field_manager}")
    line(out, "  Content-Type: application/merge-patch+json")
    line(out, f"  {json.dumps(body)}")


def server_dry_run(spec_value, out):
    line(out, f"Dry run (server): the API server accepted the patch (spec.value {spec_value!r}); nothing was "
          f"persisted.")


def patched(want: bool, before: Setting, after: str, out):
    if after == before.resource_version:    # the API server changed nothing: spec.value already said so
        line(out, f"Setting {SETTING_NAMESPACE}/{SETTING_NAME} unchanged: spec.value was already {WORD[want]!r} "
              f"(resourceVersion {after}); the operator has not reported it in status.value yet.")
        return
    line(out, f"Setting {SETTING_NAMESPACE}/{SETTING_NAME} patched: spec.value {WORD[want]!r} "
          f"(resourceVersion {before.resource_version} -> {after}).")


def cancelled(err):
    line(err, "Cancelled: the Setting was not changed.")


def waiting(want: bool, timeout: float | None, err):
    limit = "no time limit" if timeout is None else f"up to {_seconds(timeout)}"
    line(err, f"Waiting for status.value to report {WORD[want]!r} ({limit})...")


def reported(now: Setting, want: bool, out):
    if effective_value(now) == want:
        line(out, f"status.value reports {now.status_value or 'unset'} ({action_for(want)}); {WEBHOOK_NOTE}.")
    else:
        line(out, f"status.value still reports {now.status_value or 'unset (default true)'}: the operator has not "
              f"acted on it yet; {WEBHOOK_NOTE}. Until it does the Setting is in flight: verify and check exit 1. "
              f"Pass --wait to wait for it.")


def undo(command: str, out, refusing=None, unread: str = ""):
    """The undo command; when it needs --force (judge/gate.on_flags), why: the gate's refusal now
    (`refusing`, a Gate) or a check that could not run (`unread`)."""
    line(out, f"To undo: {command}")
    if refusing is not None:
        codes: dict[str, int] = {}
        for f in refusing.caused:
            codes[f.code] = codes.get(f.code, 0) + 1
        listed = ", ".join(f"{n} {c}" for c, n in codes.items())
        line(out, f"  (--force: without it `setting on` refuses now, because turning it on causes "
                  f"{_errors(len(refusing.caused))} check -A finds ({listed}); once they are fixed "
                  f"(kubectl kvcache check -A -o wide lists each with its fix), it is accepted without --force)")
    elif unread:
        line(out, f"  (--force: `setting on` first runs check -A, which could not run here ({unread}); without "
                  f"--force it refuses)")


# -- the gate on `on` (setting on, recover's last step) -------------------------------------

def _errors(n):
    return f"{n} error{'s' if n != 1 else ''}"


class _Findings:
    """The shape the check view lists: just the findings."""

    def __init__(self, findings):
        self.findings = findings


def _listed(findings, out):
    from kubectl_kvcache.render import checks as check_views
    from kubectl_kvcache.render.core import show
    from kubectl_kvcache.render.output import Output

    # check -A -o wide's table, each finding with its fix (on a terminal: wrapped under its row)
    show(check_views.CHECK, _Findings(findings), Output(format="wide", namespaces=True), out)


def gate(verdict, force: bool, out):
    """The gate's answer: what turning the Setting on causes, each with its fix, then what it
    does not change."""
    counts = verdict.summary
    if not verdict.caused:
        extra = f" ({counts['warning']} warning{'s' if counts['warning'] != 1 else ''}: see kubectl kvcache check -A)" \
            if counts.get("warning") else ""
        line(out, f"Before turning it on, check -A: no errors{' that turning it on causes' if verdict.unchanged else ''}"
                  f"{extra}.")
    else:
        what = "turning it on anyway (--force)" if force else "the Setting is not turned on"
        line(out, f"Before turning it on, check -A found {_errors(len(verdict.caused))}: {what}. Each with its fix:")
        _listed(verdict.caused, out)
    if verdict.unchanged:
        n = len(verdict.unchanged)
        line(out, f"Turning it on does not change {_errors(n)} that exist{'s' if n == 1 else ''} with the Setting "
                  f"off too:")
        _listed(verdict.unchanged, out)


def refusal(verdict, then: str) -> str:
    """The error line of a refused gate; `then`: what the command lets the user do next."""
    return (f"refusing to turn the Setting on: check found {_errors(len(verdict.caused))} that the rollout turns "
            f"into crash-looping or refused replicas (listed above, each with its fix); {then}")
