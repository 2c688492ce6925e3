"""`kubectl kvcache setting status|on|off`: read the operator's Setting, or flip it.

The flow lives here; what it judges (values, blast radius, the patch, the reverse command) is
in setting.py and how it is shown in render/setting.py. Results go to stdout, prompts and
diagnostics to stderr.
"""

from __future__ import annotations

import time

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.cli.flows import NETWORK
from kubectl_kvcache.judge import setting as st
from kubectl_kvcache.load import cluster as cluster_lists, reader
from kubectl_kvcache.operator import api, decode, records
from kubectl_kvcache.errors import Conflict, Forbidden, NotFound, PluginError
from kubectl_kvcache.cli import connection_flags
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER, Connection
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.render import setting as view

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import SettingOptions

RESOURCE = api.SETTING.name
WHERE = f"in namespace {api.SETTING_NAMESPACE}"
POLL_SECONDS = 1.0


def _connection(options: SettingOptions) -> Connection:
    """An action's connection: commands/setting.py gives every action one; only the usage error
    of no action has none, and it stops there."""
    if options.connection is None or options.action is None:
        raise PluginError("setting needs an action: status, on or off")
    return options.connection


def run(options: SettingOptions, io) -> int:
    client = reader.open_client(_connection(options), render.tracer(io.stderr))
    if options.action == "status":
        return run_status(client, options, io)
    return run_toggle(client, options, io, st.ACTIONS[options.action or ""])


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
    record = records.default_setting() if obj is None else decode.setting_record(obj, "cluster")
    if options.output.structured:
        render.structured(view.VIEW.to_dict(view.status_view(record)), options.output.format, io.stdout)
    else:
        view.status(record, io.stdout)
    if st.effective_value(record) is None:
        render.note(io.stderr, f"status.value {record.status_value!r} is not a value strconv.ParseBool reads: "
                               f"{st.UNREADABLE_MEANS}")
        return exitcodes.FINDINGS
    if st.in_flight(record) is not None:      # not settled: exit 1 until spec and status agree
        return exitcodes.FINDINGS
    return exitcodes.OK


# -- flipping ---------------------------------------------------------------------------------

def run_toggle(client, options: SettingOptions, io, want, sleep=time.sleep, clock=time.monotonic) -> int:
    path = setting_path(client)
    obj = read_setting(client, path)
    if obj is None:
        raise NotFound(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} does not exist; Settings cannot "
                       f"be created, the GPUStack Operator provides it: is the operator installed?")
    record = decode.setting_record(obj, "cluster")
    decision = st.decide(record, want)
    if decision == st.NOT_EDITABLE:
        raise PluginError(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} is not editable "
                          f"(status.editable is false); nothing was changed")
    if decision == st.ALREADY:
        view.already(record, want, io.stdout)
        return exitcodes.OK
    mark = record.annotations.get(api.TURNED_OFF_BY)
    recoveries(client, _connection(options).chunk_size, mark, want, io)
    if want and not gate(client, options, io):
        return exitcodes.FINDINGS
    view.blast(count_blast_radius(client, _connection(options).chunk_size), want, io.stdout)
    if not want:        # the replicas roll without the operator's flag: what their KV cache holds then
        view.capacity(capacity_off(client, _connection(options).chunk_size, io.stderr), io.stdout)
    if not record.resource_version:
        raise PluginError(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} came without a "
                          f"metadata.resourceVersion: the change cannot be guarded against a concurrent one")
    body = st.patch_body(record.resource_version, want)
    if mark is not None:        # the user takes the Setting back: no recovery turns it on for them later
        body["metadata"]["annotations"] = {api.TURNED_OFF_BY: None}
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
    patched, lost = _patch_settled(client, path, body, options.field_manager, want)
    if lost is not None:
        render.note(io.stderr, f"the answer to the patch was lost ({lost}); the Setting was read again and "
                               f"spec.value is {st.WORD[want]!r}: the change holds")
    return _report(client, path, patched, record, options, io, want, sleep, clock)


def _patch_settled(client, path, body, field_manager, want):
    """The patch, and when its answer was lost (kube.client.Client.settle) the Setting read
    again: (the Setting as it is now, why the answer was lost or None). Raises when the change
    does not hold."""
    def holds(obj):
        return obj is not None and st.parse_bool((obj.get("spec") or {}).get("value")) == want

    return client.settle(lambda: _patch(client, path, body, field_manager, dry_run=False),
                         lambda: read_setting(client, path), holds)


def recoveries(client, chunk, mark, want, io):
    """`setting on|off` while a recovery runs or stopped part-way: said on stderr, before the
    question (the change is the user's to make; the gate still judges what turning it on causes).
    From the Setting's own mark (which recovery turned it off) and the records of active runs."""
    from kubectl_kvcache.load import recovery

    if mark is not None:
        render.note(io.stderr, f"the Setting was turned off by the recovery of {mark} (annotation {api.TURNED_OFF_BY}), "
                               f"whose last step turns it on again; turning it {st.action_for(want)} here takes it "
                               f"back from that recovery: a resumed run no longer turns it on")
    for r in recovery.active_records(client, chunk):
        render.note(io.stderr, f"a recovery is running: {r.ref} ({r.held_by()}); turning the Setting "
                               f"{st.action_for(want)} now rolls pool-attached deployments while it moves them")


def gate(client, options: SettingOptions, io) -> bool:
    """Before turning the Setting on: the one gate (read_gate, judge/gate.py), as recover's last
    step asks it too. False (refuse) when turning it on causes errors, unless --force. A check
    that cannot run is an error too, unless --force."""
    try:
        verdict, snapshot = read_gate(client, _connection(options).chunk_size, options.skip_workloads)
    except PluginError as exc:
        if not options.force:
            raise type(exc)(f"{exc}; the Setting was not changed: turning it on first runs check's judgement, "
                            f"which could not run (pass --force to turn it on without it)") from exc
        render.note(io.stderr, f"--force: check's judgement could not run ({exc}); going ahead without it")
        return True
    render.notes(snapshot, io.stderr)
    view.gate(verdict, options.force, io.stdout)
    if verdict.passes:
        return True
    n = len(verdict.caused)
    if verdict.accepts(options.force):
        render.note(io.stderr, f"--force: turning the Setting on despite {n} error finding{'s' if n != 1 else ''}")
        return True
    render.error(io.stderr, view.refusal(verdict, "fix them, or pass --force; nothing was changed"))
    return False


def read_gate(client, chunk, skip_workloads=False, namespace=None):
    """check's judgement over every namespace with the Setting as it is before turning it on
    (off: so the fixes never start with "turn it off"), and the gate's answer. `namespace`: when
    RBAC refuses the cluster-wide lists, judge that namespace only (recover's last step: the
    Setting was on before the recovery turned it off), with a note saying so."""
    from kubectl_kvcache.judge import checks, gate as gates

    scope = Scope(all_namespaces=True, workloads=not skip_workloads, workloads_skipped=skip_workloads,
                  assume_setting=False, workloads_flag=None if namespace else "--skip-workloads")
    try:
        snapshot = cluster_lists.load_cluster(client, scope, chunk=chunk)
    except Forbidden as exc:
        if namespace is None:
            raise
        snapshot = cluster_lists.load_cluster(client, Scope(namespace=namespace, workloads=True, assume_setting=False),
                                              chunk=chunk)
        snapshot.namespace = namespace
        snapshot.notes.append(f"the gate judged namespace {namespace} only: every namespace could not be listed "
                              f"({exc}); turning the Setting on rolls pool-attached deployments in all of them")
    return gates.gate(checks.check(snapshot, skipped_workloads=skip_workloads)), snapshot


def capacity_off(client, chunk, err) -> list[str] | None:
    """What turning the Setting off does to each pool-attached replica's KV cache (judge/capacity):
    the lines to show, [] when nothing changes; None when the replicas could not be listed (a note)."""
    from kubectl_kvcache.cli.flows import capacity as capacity_flow
    from kubectl_kvcache.judge import capacity

    try:
        snapshot = cluster_lists.load_cluster(client, Scope(all_namespaces=True, workloads=False, assume_setting=False),
                                              chunk=chunk)
    except (Forbidden, PluginError) as exc:
        render.note(err, f"the replicas' KV-cache capacity is not read: {exc}")
        return None
    changed = capacity_flow.setting_off_changes(snapshot, client, err)
    return capacity.off_lines(changed, capacity_flow.hint(client))


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
        pods = client.list(api.collection_path(client, api.POD), decode.pod_record,
                           selector=f"{api.INJECT_LABEL}=true",
                           chunk=chunk, what="list pods in all namespaces")
    except (Forbidden, NotFound) as exc:
        pods_why = str(exc)
    return st.blast_radius(deployments, pods, md_why, pods_why)


def _attached_only(obj):
    record = decode.deployment_record(obj)
    return record if record.kv_cache else None


def confirm(io, want) -> bool:
    """Ask on the terminal (prompt on stderr); without one, refuse: --yes is the only way. True
    when the answer is y/yes; anything else (also an empty line or end of input) declines."""
    from kubectl_kvcache.cli.flows.asking import cannot_ask

    unasked = cannot_ask(io)
    if unasked:
        raise PluginError(f"refusing to turn the Setting {st.action_for(want)} without confirmation: {unasked}; "
                          f"pass --yes to confirm (or --dry-run to preview)")
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
        if getattr(exc, "lost", None) is not None:     # an earlier attempt may be what changed it
            error = Conflict(f"conflict: the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} changed since it "
                             f"was read (resourceVersion {body['metadata']['resourceVersion']})")
            error.lost = exc.lost
            raise error from exc
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
    now = decode.setting_record(patched, "cluster")
    if options.wait and st.effective_value(now) != want:
        view.waiting(want, options.timeout, io.stderr)
        try:
            now = wait_for(client, path, want, options.timeout, sleep, clock)
        except WaitTimedOut as exc:     # the patch went in, the wait did not see it: a finding (1), as verify --wait
            render.error(io.stderr, str(exc))
            undo(client, options, io, want)
            return exitcodes.FINDINGS
        except KeyboardInterrupt:       # the patch is applied whatever the wait saw: say so before "interrupted"
            render.note(io.stderr, f"spec.value is patched to {st.WORD[want]!r}; status.value had not reported "
                                   f"it yet: check it with 'kubectl kvcache setting status'")
            raise
    view.reported(now, want, io.stdout)
    undo(client, options, io, want)
    if options.connection.token:
        render.note(io.stderr, f"the undo command reads the token from ${connection_flags.TOKEN_VARIABLE}")
    if options.connection.password:
        render.note(io.stderr, f"the undo command reads the password from ${connection_flags.PASSWORD_VARIABLE}")
    return exitcodes.OK


class WaitTimedOut(PluginError):
    """--wait ran out of time after the patch was applied: exit 1 (not done yet), not 2."""


def wait_for(client, path, want, timeout, sleep=time.sleep, clock=time.monotonic):
    """Poll status.value until it reports `want`; a PluginError when `timeout` (seconds, None:
    forever) passes first."""
    deadline = None if timeout is None else clock() + timeout
    while True:
        obj = read_setting(client, path)
        if obj is None:
            raise NotFound(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} disappeared while waiting")
        record = decode.setting_record(obj, "cluster")
        if st.effective_value(record) == want:
            return record
        if deadline is not None and clock() >= deadline:
            raise WaitTimedOut(f"timed out after {_seconds(timeout)} waiting for status.value to report "
                              f"{st.WORD[want]!r} (it reports {record.status_value or 'unset'}); spec.value is "
                              f"set, so the operator may still act on it: check it with "
                              f"'kubectl kvcache setting status'")
        sleep(POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - clock())))


def _seconds(timeout):
    return f"{timeout:g}s"


# -- the command that undoes it ---------------------------------------------------------------

def undo(client, options: SettingOptions, io, want: bool):
    """Print the command that undoes the change, one that will be accepted as it is printed. Undoing
    `off` is `setting on`, which the gate refuses when turning it on causes errors (often the very
    errors that called for `off`): the gate is judged now, as `setting on` would judge it, and
    judge/gate.on_flags says what it needs. `setting off` is never gated."""
    verdict, unread = None, ""
    if not want:
        try:
            verdict, _ = read_gate(client, _connection(options).chunk_size, options.skip_workloads)
        except PluginError as exc:
            unread = str(exc)
    from kubectl_kvcache.judge import gate as gates

    extra = gates.on_flags(verdict) if not want else ()
    view.undo(reverse_command(not want, _connection(options), options.field_manager, extra), io.stdout,
              verdict if extra else None, unread if extra else "")


def reverse_command(previous: bool, conn: Connection, field_manager=DEFAULT_FIELD_MANAGER, extra=()) -> str:
    """`kubectl kvcache setting on|off --yes ...`: the shell command that restores `previous`;
    `extra`: the flags it needs to be accepted (judge/gate.on_flags)."""
    argv = ["kubectl", "kvcache", "setting", "on" if previous else "off", "--yes", *extra]
    if field_manager and field_manager != DEFAULT_FIELD_MANAGER:
        argv += ["--field-manager", field_manager]
    argv += connection_flags.connection_args(conn)
    return connection_flags.shell_command(argv)


# -- one context of several: `setting status` (cli/flows/__init__.py: the read flows' face) -----

PRELOAD = NETWORK


def view_of(options: SettingOptions):
    return view.VIEW


def failing(options: SettingOptions) -> tuple[str, ...]:
    """An unreadable status.value, or a Setting in flight (spec.value not taken in), fails the run (exit 1)."""
    return ("error",)


def read_context(options: SettingOptions, conn, trace):
    from kubectl_kvcache.render.fleet import Result

    client = reader.open_client(conn, trace)
    obj = read_setting(client, setting_path(client))
    record = records.default_setting() if obj is None else decode.setting_record(obj, "cluster")
    notes: tuple[str, ...] = ()
    code = exitcodes.OK
    flight = st.in_flight(record)
    if st.effective_value(record) is None:
        notes, code = (f"status.value {record.status_value!r} is not a value the operator accepts",), \
            exitcodes.FINDINGS
    elif flight is not None:
        notes, code = (st.in_flight_message(flight),), exitcodes.FINDINGS
    return Result(conn.context, view.status_view(record), code=code, notes=notes)


def context_lines(result, options: SettingOptions, err):
    """Each context's row says it all."""
