"""Everything the upgrade (the Setting on) will break, found before it happens.

Pure: a snapshot in, a report out (findings, the Binding table, the role table). No cluster,
no files, no printing. Engine questions go to the engine model (`engines`, `kvparse`,
`predict`), Pod questions to `verify`; nothing here matches option names with a regex.

The checks, in the upgrade guide's order:
  1. every Binding's dtype against every engine (and engine version) it will be handed to;
  2. roles that pass --kv-cache-dtype themselves in extraArgs (refused at their next edit);
  3. take-over roles (`command` set) attached to a pool: the operator renders nothing for them;
  4. injection opt-ins (Pods and workload Pod templates) the webhook will refuse;
  5. the Setting itself;
  6. engine releases newer than the engine data (judged with the latest release it has);
  7. recoveries stopped part-way (a recovery's record that is not finished).

One module per check; `check` runs them all and is the face the commands use.
"""

from __future__ import annotations

from kubectl_kvcache.judge import setting as setting_mod
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.judge.checks.bindings import BindingEntry, Use, check_bindings
from kubectl_kvcache.judge.checks.newer_releases import check_newer_releases
from kubectl_kvcache.judge.checks.engines import EngineAt, accepted_since, flag_tokens, suggest_dtype
from kubectl_kvcache.judge.checks.findings import (BINDING_FAILURES, CODES, ROLE_CODES, ERROR, INFO, SEVERITIES, WARNING, Code,
                                                   Finding, Report, caused_by_setting_on, finding)
from kubectl_kvcache.judge.checks.injection import check_injection
from kubectl_kvcache.judge.checks.recovery import check_recoveries
from kubectl_kvcache.judge.checks.inputs import EnginePods, opt_ins
from kubectl_kvcache.judge.checks.roles import RoleEntry, check_roles
from kubectl_kvcache.judge.checks.setting import in_flight_finding, setting_finding, setting_state
from kubectl_kvcache.engine import MINIMUM

__all__ = ["BINDING_FAILURES", "ROLE_CODES", "BindingEntry", "CODES", "Code", "ERROR", "EngineAt", "Finding", "INFO", "MINIMUM",
           "Report", "RoleEntry", "SEVERITIES", "Use", "WARNING", "accepted_since", "check", "flag_tokens",
           "suggest_dtype"]


_RANK = {s: n for n, s in enumerate(SEVERITIES)}


def check(snapshot: records.Snapshot, skipped_workloads: bool = False) -> Report:
    """`skipped_workloads`: the workload kinds were not read (--skip-workloads); the report says so
    with an `unchecked` warning, so that no one reads its silence about them as a pass."""
    from kubectl_kvcache.judge.checks import engines as engine_checks

    engine_checks.forget()
    state = setting_state(snapshot.setting, snapshot.source)
    on = state["on"] if state["on"] is not None else setting_mod.DEFAULT
    if state["source"] == records.NOT_SERVED:
        on = False      # before the upgrade the operator renders nothing today; the findings judge the upgrade
    deployments = sorted((md for md in snapshot.deployments.values()
                          if records.in_namespace(md.namespace, snapshot.namespace)),
                         key=lambda d: (d.namespace, d.name))
    pods = EnginePods(snapshot)
    optins = opt_ins(snapshot)
    bindings, found = check_bindings(snapshot, deployments, optins, pods, on)
    roles, role_findings = check_roles(snapshot, deployments, pods, on)
    found += role_findings
    found += check_injection(optins, snapshot)
    found += check_newer_releases(deployments, optins, pods)
    found += check_recoveries(snapshot)
    if skipped_workloads:
        found.append(finding("unchecked", (snapshot.namespace, "Workloads", "--skip-workloads"),
                             "the Pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and "
                             "CronJobs were not read (--skip-workloads): their injection opt-ins are not checked",
                             "run check without --skip-workloads as a user who may list them"))
    for namespace, kind, name, binding in getattr(snapshot, "unread_opt_ins", ()):
        found.append(finding("unchecked", (namespace, kind, name),
                             f"its Pod templates opt into injection ({api.INJECT_LABEL}=true"
                             + (f", Binding {binding}" if binding else "") + f"), but the plugin does not "
                             f"read {kind} templates: what the webhook does with its Pods is not checked",
                             f"check its Pods once they exist (kubectl kvcache check -n {namespace} on the cluster "
                             f"judges opted-in Pods), or by hand against the injection rules (docs/check.md)"))
    flight = in_flight_finding(snapshot.setting)
    if flight is not None:
        found.append(flight)
    found.sort(key=lambda f: (_RANK[f.severity], f.namespace or "", f.kind, f.name, f.code))
    found.append(setting_finding(state, len(caused_by_setting_on(found)),     # the gate's rule (judge/gate.py)
                                 any(b.rejected_by for b in bindings), scoped=snapshot.namespace is not None))
    checked = {"bindings": sum(1 for b in bindings if b.binding), "deployments": len(deployments),
               "optIns": len(optins)}
    return Report(state, found, bindings, roles, checked)
