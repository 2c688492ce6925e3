"""7. Recoveries stopped part-way: a recovery's record (`recover --apply`'s ConfigMap
kvcache-recover-BINDING, load/recovery_state.py) in scope that is not finished. Its Binding's users
are being moved (or wait to be), the Setting may be held off by it: nothing is done until it is, so
verify, check and bindings name it, with the step it began last and the one command that continues
it, until its record says finished. A ConfigMap that carries the record's label and name but is not
a record recover writes is named too: whether a recovery stopped there is not known.

The record is a hint anyone with ConfigMap rights in the namespace can write (docs/recover.md "Who
can write what"): what is said here is its word, and the command named is recover's, which trusts
only the cluster and the recovery's anchors."""

from __future__ import annotations

from kubectl_kvcache.operator import records
from kubectl_kvcache.judge.checks.findings import Finding, finding

CODE = "recovery-unfinished"


def resume_command(state: records.RecoveryState) -> str:
    """The command that continues the recovery (recover takes its target from the recovery's own
    Binding, never from the record): asks once on a terminal, `--yes` skips the question."""
    return f"kubectl kvcache recover {state.binding} -n {state.namespace} --apply"


def words(state: records.RecoveryState) -> tuple[str, str]:
    """(message, fix) of one record that is not finished."""
    where = f"ConfigMap {state.namespace}/{state.name}"
    if state.problem is not None:
        return (f"{where} carries the label and name of a recovery's record but is not one kubectl kvcache recover "
                f"writes ({state.problem}): whether a recovery stopped part-way there is not known",
                f"review it (kubectl get configmap {state.name} -n {state.namespace} -o yaml); delete it if no "
                f"recovery wrote it")
    what = f"the recovery of KVCachePoolBinding {state.namespace}/{state.binding}"
    progress = state.progress
    at = (f"step {progress['step']} of {progress['steps']} ({progress['doing']})" if progress is not None else
          "a step its record does not name (written by a release before records named their steps)")
    off = "; its record says it turned the Setting off" if state.setting_turned_off else ""
    if state.held is not None:
        return (f"{what} is unfinished: its last step begun is {at}, and a run holds its record ({where}: "
                f"{state.held}): it may still be running{off}",
                f"let it finish; if that run is gone: {resume_command(state)} (at once on the host it ran on, "
                f"elsewhere once its lease has expired)")
    return (f"{what} is unfinished: it stopped at {at} (its record: {where}){off}",
            f"continue it: {resume_command(state)}")


def unfinished(snapshot: records.Snapshot) -> list[records.RecoveryState]:
    """The records in the snapshot's scope that are not finished (or not readable), in order."""
    return sorted((r for r in snapshot.recoveries or () if r.problem is not None or not r.finished),
                  key=lambda r: (r.namespace or "", r.name or ""))


def check_recoveries(snapshot: records.Snapshot) -> list[Finding]:
    """One error finding per unfinished recovery: about its Binding (so `bindings` fails that row
    too), or about the ConfigMap when it is not a record."""
    found = []
    for state in unfinished(snapshot):
        message, fix = words(state)
        obj = ((state.namespace, "ConfigMap", state.name or "") if state.problem is not None
               else (state.namespace, "KVCachePoolBinding", state.binding or ""))
        found.append(finding(CODE, obj, message, fix))
    return found
