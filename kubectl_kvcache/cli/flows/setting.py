"""`kubectl kvcache setting status|on|off`: read the operator's Setting, or flip it.

The flow lives here; what it judges (values, blast radius, the patch, the reverse command) is
in setting.py and how it is shown in render/setting.py. Results go to stdout, prompts and
diagnostics to stderr.
"""

from __future__ import annotations

import time

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.judge import setting as st
from kubectl_kvcache.load import cluster as cluster_lists, reader
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.errors import Conflict, Forbidden, NotFound, PluginError
from kubectl_kvcache.cli import connection_flags
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER, Connection
from kubectl_kvcache.render.output import Output
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.render import setting as view

RESOURCE = api.SETTING.name
WHERE = f"in namespace {api.SETTING_NAMESPACE}"
POLL_SECONDS = 1.0


def run(options: SettingOptions, io) -> int:
    client = reader.open_client(options.connection, render.tracer(io.stderr))
    if options.action == "status":
        return run_status(client, options, io)
    return run_toggle(client, options, io, st.ACTIONS[options.action])


# -- reading ----------------------------------------------------------------------------------

def setting_path(client) -> str:
    """The Setting's path, its API version resolved through discovery (never hard-coded)."""
    try:
        version = api.version_for(client, api.SETTING)
    except NotFound as exc:
        raise NotFound(f"the Setting API ({RESOURCE}) is not served by this cluster: {exc}") from exc
    return api.setting_path(version)


def read_setting(client, path):
    """The Setting object as JSON, or None when it does not exist."""
    try:
        return client.get(path, what=f"get {RESOURCE} {api.SETTING_NAME} {WHERE}")
    except NotFound:
        return None


def run_status(client, options: SettingOptions, io) -> int:
    obj = read_setting(client, setting_path(client))
    record = records.default_setting() if obj is None else records.setting_record(obj, "cluster")
    if options.output.structured:
        render.structured(view.status_view(record), options.output.format, io.stdout)
    else:
        view.status(record, io.stdout)
    if st.effective_value(record) is None:
        render.note(io.stderr, f"status.value {record.status_value!r} is not a value the operator accepts")
        return exitcodes.FINDINGS
    return exitcodes.OK


# -- flipping ---------------------------------------------------------------------------------

def run_toggle(client, options: SettingOptions, io, want, sleep=time.sleep, clock=time.monotonic) -> int:
    path = setting_path(client)
    obj = read_setting(client, path)
    if obj is None:
        raise NotFound(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} does not exist; Settings cannot "
                       f"be created, the GPUStack Operator provides it: is the operator installed?")
    record = records.setting_record(obj, "cluster")
    decision = st.decide(record, want)
    if decision == st.NOT_EDITABLE:
        raise PluginError(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} is not editable "
                          f"(status.editable is false); nothing was changed")
    if decision == st.ALREADY:
        view.already(record, want, io.stdout)
        return exitcodes.OK
    if want and not gate(client, options, io):
        return exitcodes.FINDINGS
    view.blast(count_blast_radius(client, options.connection.chunk_size), want, io.stdout)
    if not record.resource_version:
        raise PluginError(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} came without a "
                          f"metadata.resourceVersion: the change cannot be guarded against a concurrent one")
    body = st.patch_body(record.resource_version, want)
    if options.wait and options.dry_run != "none":
        render.note(io.stderr, "--wait has no effect with --dry-run")
    if options.dry_run == "client":
        view.client_dry_run(path, body, options.field_manager, io.stdout)
        return exitcodes.OK
    if options.dry_run == "server":
        return _server_dry_run(client, path, body, options, io, want)
    if not options.yes and not confirm(io, want):
        view.cancelled(io.stderr)       # the user's choice, not a failure: exit 1, "not done"
        return exitcodes.FINDINGS
    patched = _patch(client, path, body, options.field_manager, dry_run=False)
    return _report(client, path, patched, record, options, io, want, sleep, clock)


def gate(client, options: SettingOptions, io) -> bool:
    """Before turning the Setting on: check's judgement (the same lists, the same RBAC behaviour)
    over every namespace, with the Setting as it is now (not on: "already on" never gets here),
    so its findings are what turning it on will cause and their fixes do not start with "turn it
    off". False (refuse) when it finds errors, unless --force. A check that cannot run is an
    error too, unless --force."""
    from kubectl_kvcache.judge import checks
    from kubectl_kvcache.render import checks as check_views

    scope = Scope(all_namespaces=True, workloads=not options.skip_workloads,
                  workloads_skipped=options.skip_workloads, assume_setting=False)
    try:
        snapshot = cluster_lists.load_cluster(client, scope, chunk=options.connection.chunk_size)
    except PluginError as exc:
        if not options.force:
            raise type(exc)(f"{exc}; the Setting was not changed: turning it on first runs check's judgement, "
                            f"which could not run (pass --force to turn it on without it)") from exc
        render.note(io.stderr, f"--force: check's judgement could not run ({exc}); going ahead without it")
        return True
    render.notes(snapshot, io.stderr)
    report = checks.check(snapshot, skipped_workloads=options.skip_workloads)
    errors = [f for f in report.findings if f.severity == checks.ERROR]
    if not errors:
        view.gate_passed(report.summary(), io.stdout)
        return True
    view.gate_failed(len(errors), options.force, io.stdout)
    render.show(check_views.CHECK, _Findings(errors), Output(format="wide"), io.stdout)
    if options.force:
        render.note(io.stderr, f"--force: turning the Setting on despite {len(errors)} error finding"
                               f"{'s' if len(errors) != 1 else ''}")
        return True
    render.error(io.stderr, f"refusing to turn the Setting on: check found {len(errors)} error"
                            f"{'s' if len(errors) != 1 else ''} that the rollout turns into crash-looping or "
                            f"refused replicas (listed above, each with its fix); fix them, or pass --force; "
                            f"nothing was changed")
    return False


class _Findings:
    """The shape the check view lists: just the findings."""

    def __init__(self, findings):
        self.findings = findings


def count_blast_radius(client, chunk) -> st.BlastRadius:
    """Pool-attached ModelDeployments and injection Pods in every namespace (paged lists). A list
    that is forbidden or not served leaves its count unknown, with why, instead of failing."""
    deployments, md_why = None, ""
    try:
        deployments = client.list(api.collection_path(client, api.MODEL_DEPLOYMENT), _attached_only,
                                  chunk=chunk, what=f"list {api.MODEL_DEPLOYMENT.name} in all namespaces")
    except (Forbidden, NotFound) as exc:
        md_why = str(exc)
    pods, pods_why = None, ""
    try:
        pods = client.list(api.collection_path(client, api.POD), records.pod_record,
                           selector=f"{api.INJECT_LABEL}=true",
                           chunk=chunk, what="list pods in all namespaces")
    except (Forbidden, NotFound) as exc:
        pods_why = str(exc)
    return st.blast_radius(deployments, pods, md_why, pods_why)


def _attached_only(obj):
    record = records.deployment_record(obj)
    return record if record.kv_cache else None


def confirm(io, want) -> bool:
    """Ask on the terminal (prompt on stderr); without one, refuse: --yes is the only way. True
    when the answer is y/yes; anything else (also an empty line or end of input) declines."""
    isatty = getattr(io.stdin, "isatty", None)
    if not (isatty and isatty()):
        raise PluginError(f"refusing to turn the Setting {st.action_for(want)} without confirmation: standard "
                          f"input is not a terminal; pass --yes to confirm (or --dry-run to preview)")
    render.prompt(io.stderr, f"Turn the Setting {st.action_for(want)}? [y/N] ")
    answer = io.stdin.readline()
    if not answer:
        render.line(io.stderr)      # end of input (Ctrl-D): end the prompt's line
    return answer.strip().lower() in ("y", "yes")


def _patch(client, path, body, field_manager, dry_run):
    what = f"patch {RESOURCE} {api.SETTING_NAME} {WHERE}"
    try:
        return client.patch_merge(path, body, field_manager=field_manager, dry_run=dry_run, what=what)
    except Conflict as exc:
        raise Conflict(f"conflict: the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} changed since it was "
                       f"read (resourceVersion {body['metadata']['resourceVersion']}); nothing was overwritten: "
                       f"re-run to see the new state") from exc
    except Forbidden as exc:
        raise Forbidden(f"{exc} (needs RBAC verb patch on {RESOURCE} {WHERE})") from exc


def _server_dry_run(client, path, body, options, io, want):
    result = _patch(client, path, body, options.field_manager, dry_run=True)
    spec_value = (result.get("spec") or {}).get("value")
    view.server_dry_run(spec_value, io.stdout)
    if st.parse_bool(spec_value) != want:
        raise PluginError(f"the API server's dry run answered spec.value {spec_value!r}, not "
                          f"{st.WORD[want]!r}")
    return exitcodes.OK


def _report(client, path, patched, before, options, io, want, sleep, clock):
    meta = patched.get("metadata") or {}
    view.patched(want, before, meta.get("resourceVersion", "?"), io.stdout)
    now = records.setting_record(patched, "cluster")
    if options.wait and st.effective_value(now) != want:
        view.waiting(want, options.timeout, io.stderr)
        now = wait_for(client, path, want, options.timeout, sleep, clock)
    view.reported(now, want, io.stdout)
    view.undo(reverse_command(not want, options.connection, options.field_manager), io.stdout)
    if options.connection.token:
        render.note(io.stderr, f"the undo command reads the token from ${connection_flags.TOKEN_VARIABLE}")
    if options.connection.password:
        render.note(io.stderr, f"the undo command reads the password from ${connection_flags.PASSWORD_VARIABLE}")
    return exitcodes.OK


def wait_for(client, path, want, timeout, sleep=time.sleep, clock=time.monotonic):
    """Poll status.value until it reports `want`; a PluginError when `timeout` (seconds, None:
    forever) passes first."""
    deadline = None if timeout is None else clock() + timeout
    while True:
        obj = read_setting(client, path)
        if obj is None:
            raise NotFound(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} disappeared while waiting")
        record = records.setting_record(obj, "cluster")
        if st.effective_value(record) == want:
            return record
        if deadline is not None and clock() >= deadline:
            raise PluginError(f"timed out after {_seconds(timeout)} waiting for status.value to report "
                              f"{st.WORD[want]!r} (it reports {record.status_value or 'unset'}); spec.value is "
                              f"set, so the operator may still act on it: check it with "
                              f"'kubectl kvcache setting status'")
        sleep(POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - clock())))


def _seconds(timeout):
    return f"{timeout:g}s"


# -- the command that undoes it ---------------------------------------------------------------

def reverse_command(previous: bool, conn: Connection, field_manager=DEFAULT_FIELD_MANAGER) -> str:
    """`kubectl kvcache setting on|off --yes ...`: the shell command that restores `previous`."""
    argv = ["kubectl", "kvcache", "setting", "on" if previous else "off", "--yes"]
    if field_manager and field_manager != DEFAULT_FIELD_MANAGER:
        argv += ["--field-manager", field_manager]
    argv += connection_flags.connection_args(conn)
    return connection_flags.shell_command(argv)
