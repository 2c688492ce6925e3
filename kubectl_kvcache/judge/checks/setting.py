"""5. The Setting itself: its value as the checks read it, and the finding that says what it means."""

from __future__ import annotations

from kubectl_kvcache.judge import setting as setting_mod
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.judge.checks.findings import ERROR, Finding, finding


def setting_state(setting: records.Setting | None, input_source="cluster") -> dict:
    setting = setting or records.default_setting()
    flight = setting_mod.in_flight(setting)
    return {"namespace": api.SETTING_NAMESPACE, "name": api.SETTING_NAME, "value": setting.status_value,
            "specValue": setting.spec_value, "on": setting_mod.effective_value(setting),
            "source": setting.source if input_source == "cluster" or setting.source != "default" else "assumed"} | (
        {"inFlight": flight.to_dict()} if flight is not None else {})


def in_flight_finding(setting: records.Setting | None) -> Finding | None:
    """A Setting in flight (judge/setting.py in_flight): an error of its own until spec and status
    agree. The other findings judge the Setting as the operator acts on it now (status.value), which
    the change it has not taken in is about to move: none of them is settled."""
    flight = setting_mod.in_flight(setting)
    if flight is None:
        return None
    return finding("setting-in-flight", (api.SETTING_NAMESPACE, "Setting", api.SETTING_NAME),
                   setting_mod.in_flight_message(flight) + "; the findings judge it as the operator acts on it now, "
                   "which the change is about to move", setting_mod.IN_FLIGHT_FIX)


def setting_finding(state: dict, errors: int, failing: bool = False, scoped: bool = False) -> Finding:
    """`errors`: the errors turning it on causes (findings.caused_by_setting_on: what makes
    `setting on` refuse, judge/gate.py), so that the fix names `setting on` only where its gate accepts it; `scoped`: the check
    read one namespace, and the gate judges every one."""
    obj = (api.SETTING_NAMESPACE, "Setting", api.SETTING_NAME)
    value, on, source = state["value"], state["on"], state["source"]
    if on is None:
        return finding("setting", obj, f"status.value is {value!r}, which strconv.ParseBool cannot read: "
                                       f"{setting_mod.UNREADABLE_MEANS}, so the findings judge it on",
                       "patch spec.value to \"true\" or \"false\"", severity=ERROR)
    if source == "flag":
        shown = f"assumed {'on' if on else 'off'} (--assume-setting), not read"
    elif source == "assumed":
        shown = "not in the input: assuming the operator's default \"true\""
    elif source == records.NOT_SERVED:
        shown = (f"the cluster does not serve {api.SETTING_GROUP} yet (before the upgrade): judged as the upgrade "
                 f"will bring it, at its default \"true\"")
    elif source == "default":
        shown = "the Setting does not exist: the operator's default \"true\" applies"
    elif value is None:
        shown = "status.value is unset: the operator's default \"true\" applies"
    else:
        shown = f"status.value is {value!r}"
    if "inFlight" in state:      # the change it asks for is the finding setting-in-flight's; no "already"
        asks = state["inFlight"]["asks"]
        return finding("setting", obj, f"{shown}, what the operator acts on now; spec.value asks {asks!r}, not taken "
                                       f"in yet (finding setting-in-flight): the findings judge it "
                                       f"{'on' if on else 'off'}", "")
    if on and source == records.NOT_SERVED:
        message = f"{shown}: the findings are what the upgrade will cause"
        fix = "fix the errors before upgrading" if errors else ""
    elif on:
        message = (f"{shown}: already on. The operator hands each Binding's dtype to the engine and the "
                   f"webhooks refuse own flags: the findings are the cluster's state now")
        fix = ("if new Pods fail argument parsing, the guide's recovery turns it off first: kubectl kvcache setting "
               "off" if failing else "")
    else:
        message = (f"{shown}: off. Turning it on rolls every pool-attached ModelDeployment; the findings are "
                   f"what that will cause")
        fix = ("fix the errors first (turning it on causes them: its gate refuses until then), then: kubectl "
               "kvcache setting on" if errors else "kubectl kvcache setting on" + (
                   " (its gate first judges every namespace: kubectl kvcache check -A)" if scoped else ""))
    return finding("setting", obj, message, fix)
