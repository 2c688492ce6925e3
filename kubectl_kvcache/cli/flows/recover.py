"""`kubectl kvcache recover BINDING`: plan the guide's recovery (recover.py), print it, and with
--apply execute it step by step.

The executor: it probes each step against the cluster first (a finished step is reported and
skipped, so a second run resumes), runs a server-side dry run of every create, patch and delete
before the first change, backs up every object before it deletes or patches it, waits where the
plan waits, never deletes an old ModelDeployment before its replacement exists (available, under
side-by-side) or its backup is on disk, and stops at the first failure saying what was done,
what is left and the command that continues.
"""

from __future__ import annotations

import copy
import json
import os
import time
from datetime import datetime, timezone

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.judge import anchor as anchors, capacity, checks, holds, recover
from kubectl_kvcache.judge import setting as st
from kubectl_kvcache.load import recovery
from kubectl_kvcache.operator import api, binding_status, decode, records
from kubectl_kvcache.cli.flows.recovery_record import Journal, Taken, held
from kubectl_kvcache.cli.flows import asking, capacity as capacity_flow, setting as setting_flow
from kubectl_kvcache.cli.flows.setting import setting_path
from kubectl_kvcache.errors import Conflict, NotFound, PluginError
from kubectl_kvcache.cli import connection_flags
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER
from kubectl_kvcache.render import recover as view, setting as setting_view

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import RecoverOptions

POLL_SECONDS = 1.0
RETRIES = 5


class GateRefused(PluginError):
    """The last step refused by the gate `setting on` asks (judge/gate.py): check found errors that
    turning the Setting on causes. A finding about the cluster's state, exit 1 as `setting on`
    refused by the same gate (README "Exit codes"), never bad input (2)."""


def run(options: RecoverOptions, io, sleep=time.sleep, clock=time.monotonic) -> int:
    backups = recovery.read_backup_dir(options.backup_dir)
    found, client = recovery.load_recovery(options.connection, options.scope, options.binding, io.stdin,
                                           render.tracer(io.stderr), backups,
                                           writes=options.apply or options.dry_run != "none")
    record = found.record
    anchor = trusted(found, options.backup_dir)
    if record is not None and not record.stale and record.finished and found.binding_gone:
        view.already_finished(record, io.stdout)
        return exitcodes.OK
    if record is not None and not record.stale and held(record):
        if options.apply and options.dry_run == "none":
            raise PluginError(f"{record.ref}: another run of this recovery holds it ({record.held_by()}); nothing "
                              f"was changed: let it finish; if it is gone, run this command again after "
                              f"{record.expires} to take over")
        render.note(io.stderr, f"another run of this recovery is active ({record.ref}: {record.held_by()})")
    request = recover.resumed(recover.Request(options.dtype, options.name, options.domain, options.strategy),
                              anchor)
    if request.strategy == recover.SIDE_BY_SIDE:        # it renames: what points at the old names
        found.referrers = recovery.load_referrers(found, client, options.connection.chunk_size)
    if client is not None:      # the GPUs its engines run on: a dtype is proposed only where it starts
        read_gpus(found.snapshot, client, io.stderr)
    inputs = recover.judged(found, checks.check(found.snapshot), anchor)
    inputs.record_ref = f"ConfigMap {found.namespace}/{recovery.record_name(found.binding_name)}"
    inputs.record_used = record.size if record is not None and not record.stale else 0
    plan = recover.plan(inputs, request)
    changed = capacity_flow.recover_changes(found, client, plan.target["dtype"], io.stderr)
    plan.warnings += capacity.warnings(changed, capacity_flow.hint(client))
    data = plan.to_dict()
    data["capacity"] = capacity.view(changed, capacity_flow.hint(client))
    data["backups"] = backups_view(options.backup_dir, found, anchor, inputs.record_ref)
    for text in plan.notes:
        render.note(io.stderr, text)
    structured = options.output.structured
    view.show_plan(data, options.output, io.stdout)
    if not options.apply and options.dry_run == "none":
        view.planned_only(io.stderr)
        return exitcodes.OK
    out = io.stderr if structured else io.stdout
    executor = Executor(client, plan, inputs, options.replace(strategy=request.strategy), io, out, sleep, clock,
                        record=record)
    if options.dry_run == "client":
        view.requests(executor.requests(), out)
        return exitcodes.OK
    if options.dry_run == "server":
        executor.probe_all()
        view.server_dry_run(executor.server_dry_run(), out, (executor.kept().ref, executor.record_dry_run))
        return exitcodes.OK
    unasked = None if options.yes else asking.cannot_ask(io)
    if unasked:
        raise PluginError(f"refusing to apply the recovery without confirmation: {unasked}; "
                          "pass --yes to confirm (or --dry-run to preview)")
    return executor.apply(None if options.yes else lambda: confirm(io, data))



def read_gpus(snapshot, client, err) -> None:
    """snapshot.gpus from the Nodes its vLLM engine Pods run on (load/nodes.py: bounded, a 403 said
    once; the judgement then stands as without them)."""
    from kubectl_kvcache.judge import gpu
    from kubectl_kvcache.load import nodes
    from kubectl_kvcache.render import verify as verify_view

    wanted = gpu.engine_nodes(snapshot)
    if wanted:
        found = nodes.read(client, wanted)
        snapshot.gpus = gpu.gpus_by_node(found.labels)
        verify_view.node_notes(found, err)


def confirm(io, data):
    """Asked once, after the server dry run passed and before the first change: True to go on."""
    render.prompt(io.stderr, f"The API server accepted every write in a dry run. Apply these {len(data['steps'])} "
                             f"steps? [y/N] ")
    return io.stdin.readline().strip().lower() in ("y", "yes")


# -- backups ----------------------------------------------------------------------------------

def trusted(found, backup_dir=None):
    """What of an earlier run's state this run trusts (judge/anchor.py): the anchor, the Binding
    an earlier run created (found by the old Binding's uid; when the old Binding is gone, the
    newest naming it), and the backups the plan may restore, each verified against the anchor's
    digests (one that is not is a refusal naming it). The old Binding, once deleted, is planned
    from its verified backup."""
    ns, name = found.namespace, found.binding_name
    uid = ((found.binding or {}).get("metadata") or {}).get("uid")
    found_anchor = anchors.find_anchor(found.bindings, ns, name, uid if found.binding is not None else None)
    if not backup_dir:      # the recovery's own folder (default_backup_dir), where an earlier run wrote
        own = default_backup_dir(ns, name, uid or (found_anchor.old_uid if found_anchor is not None else None))
        if uid or found_anchor is not None:
            found.backups = found.backups + recovery.read_backup_dir(own)

    def restorable(b):
        return anchors.restorable(b, ns, name, recover.MD_KIND, recover.BINDING_KIND, recover.binding_named)
    found.backups = anchors.verified(found.backups, found_anchor, restorable, f"KVCachePoolBinding {ns}/{name}")
    recovery.from_backup(found, found.backups)
    return found_anchor


def recovery_uid(found, anchor):
    """What identifies one recovery from any machine and any run: the old Binding's uid (read from
    it, from its verified backup once it is gone, or from the anchor: judge/anchor.py)."""
    uid = ((found.binding or {}).get("metadata") or {}).get("uid")
    return uid or (anchor.old_uid if anchor is not None else None)


def default_backup_dir(namespace, binding, uid=None, now=None):
    """One folder per recovery: named by the old Binding's uid, so a resumed run writes into the
    folder the first run made; only without a uid (a Binding from files that has none) by the time."""
    if uid:
        return f"kvcache-recover-{_file_part(namespace)}-{_file_part(binding)}-{_file_part(uid)}"
    now = now or datetime.now(timezone.utc)
    return f"kvcache-recover-{_file_part(namespace)}-{_file_part(binding)}-{now.strftime('%Y%m%dT%H%M%SZ')}"


def backups_view(flag, found, anchor, record_ref) -> dict:
    """Where the backups go (the plan's `backups`): the folder (--backup-dir, else the recovery's
    own), and the recovery's record."""
    uid = recovery_uid(found, anchor)
    return {"directory": flag or default_backup_dir(found.namespace, found.binding_name, uid),
            "directorySource": "--backup-dir" if flag else ("the old Binding's uid" if uid else "the time"),
            "record": record_ref}


def _file_part(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text))


def write_json(path, data):
    """A file written whole and synced before anything relies on it (never overwritten)."""
    with open(path, "x", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())


def _same_file(path, data) -> bool:
    """Whether the file at `path` holds `data` (as canonical JSON: indentation aside)."""
    try:
        with open(path, encoding="utf-8") as f:
            return anchors.canonical(json.load(f)) == anchors.canonical(data)
    except (OSError, ValueError, AttributeError):
        return False


def keep_json(path, data) -> tuple[str, str | None]:
    """`data` in `path` unless the same is there already; a different file of that name (an earlier
    run's, or anyone's: the folder is untrusted) is kept, and `data` goes to the first free
    NAME.N.json. Returns the path holding `data` and, when it is not `path`, why."""
    stem, ext = os.path.splitext(path)
    candidate, n = path, 1
    while os.path.exists(candidate):
        if _same_file(candidate, data):
            return candidate, (None if candidate == path else f"{path} holds other content: kept; this one is in "
                                                              f"{candidate}")
        n += 1
        candidate = f"{stem}.{n}{ext}"
    write_json(candidate, data)
    return candidate, (None if candidate == path else f"{path} holds other content: kept; this one is written "
                                                      f"to {candidate}")


# -- the executor -----------------------------------------------------------------------------

class Executor:
    def __init__(self, client, plan, inputs, options: RecoverOptions, io, out, sleep, clock, record=None):
        self.client, self.plan, self.options, self.io, self.out = client, plan, options, io, out
        self.sleep, self.clock = sleep, clock
        self.steps = plan.steps
        self.strategy: str = options.strategy or recover.DEFAULT_STRATEGY   # run() gives the resumed request's
        self.namespace = plan.target["namespace"]
        self.new_binding = plan.target["name"]
        self.originals = {(o.get("kind"), _object_namespace(o), _name(o)): o for o in inputs.deployments + inputs.workloads
                          + ([inputs.binding] if inputs.binding and not inputs.binding_gone else [])}
        self.old_uid = ((inputs.binding or {}).get("metadata") or {}).get("uid") or (
            inputs.anchor.old_uid if inputs.anchor is not None else None)
        self.backup_dir = options.backup_dir or default_backup_dir(self.namespace, plan.binding["name"],
                                                                   self.old_uid)
        self.journal = None if client is None else Journal(
            client, self.namespace, plan.binding["name"], record if record is not None else inputs.hints,
            _state(plan, self.old_uid), options.field_manager)
        self.done: dict = {}          # step number -> outcome, for steps found finished by the probe
        self.record_dry_run: str | None = None
        self._tty = bool(getattr(io.stderr, "isatty", None) and io.stderr.isatty())
        self._progress = False      # a progress line is open on the terminal

    def kept(self) -> Journal:
        """The recovery's record (the journal): a run with a client keeps one, and only such a run
        writes, dry-runs or lists its requests."""
        if self.journal is None:
            raise RuntimeError("a recovery without a client keeps no record")
        return self.journal

    # paths -------------------------------------------------------------------------------------

    def path(self, kind, namespace, name=None):
        if kind == api.SETTING_KIND:
            return setting_path(self.client)
        res = api.resource(kind)
        return (api.object_path(self.client, res, namespace, name) if name
                else api.collection_path(self.client, res, namespace))

    def get(self, kind, namespace, name):
        return self.client.get_or_none(self.path(kind, namespace, name),
                                       what=f"get {_resource(kind)} {name} in namespace {namespace}")

    # probing: which steps are finished ---------------------------------------------------------

    def probe(self, step):
        """'already done: ...' when the cluster shows the step finished, else None; Conflict when
        the object the step would create exists with something else."""
        action = step.action
        if action == "setting":
            obj = self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)
            if obj is None:
                raise NotFound(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} does not exist")
            record = decode.setting_record(obj, "cluster")
            asked = st.parse_bool(record.spec_value) if record.spec_value is not None else st.effective_value(record)
            return f"already done (spec.value {record.spec_value!r})" if asked == step.value else None
        if action == "create":
            obj = step.object
            kind, ns, name = obj["kind"], _object_namespace(obj), _name(obj)
            existing = self.get(kind, ns, name)
            if existing is None:
                return None
            if recover.contains(existing, {"spec": obj["spec"]}):
                return "already done (it exists with the planned spec)"
            if kind == recover.MD_KIND and recover.binding_named(existing) == self.plan.binding["name"] \
                    and self.options.strategy == recover.REPLACE:
                return None     # replace: the old one still holds the name; it is deleted first
            raise Conflict(f"conflict: {kind} {ns}/{name} exists and is not the planned object (its spec differs); "
                           f"nothing was overwritten")
        if action == "patch":
            t = step.target
            existing = self.get(t.kind, t.namespace, t.name)
            if existing is None:
                raise NotFound(f"{t.kind} {t.namespace}/{t.name} no longer exists")
            return "already done (the annotation names the new Binding)" if recover.contains(existing, step.patch) \
                else None
        if action == "delete":
            t = step.target
            existing = self.get(t.kind, t.namespace, t.name)
            if existing is None:
                return "already done (it is gone)"
            if t.uid and (existing.get("metadata") or {}).get("uid") != t.uid:
                return "already done (the name is held by a new object)"
            if (existing.get("metadata") or {}).get("deletionTimestamp"):
                return "already done (its deletion waits for its finalizers)"
            return None
        return None

    def probe_all(self):
        """Which steps are finished, with the plan's own earlier steps simulated: a Setting step
        after another one is judged against the value the earlier one leaves (step 1 turns it off,
        so the last one, turning it on, is not done although spec.value reads "true" now)."""
        planned = None      # (step number, value) of the last Setting step before this one
        for n, step in enumerate(self.steps, 1):
            if step.action == "wait":
                continue
            if step.action == "setting" and planned is not None:
                outcome = (f"already done (step {planned[0]} leaves spec.value {st.WORD[planned[1]]!r})"
                           if planned[1] == step.value else None)
            else:
                outcome = self.probe(step)
            if step.action == "setting":
                planned = (n, step.value)
            if outcome:
                self.done[n] = outcome

    # the client dry run: the requests, in order -----------------------------------------------

    def requests(self):
        fm = f"fieldManager={self.options.field_manager}"
        j = self.kept()
        yield (f"0. {'PATCH ' + j.path if j.record else 'POST ' + j.collection}?{fm} ({j.ref}: the recovery's record; "
               f"patched again, each time with the resourceVersion last written as a precondition, before the Setting "
               f"is turned off, with each backup, while waiting (its holder's lease) and at the end)")
        yield (f"   PATCH {self.path(recover.BINDING_KIND, self.namespace, self.new_binding)}?{fm} merge patch of its "
               f"annotations (once it exists: the sha256 of each backup, before the object is deleted or patched)")
        for n, step in enumerate(self.steps, 1):
            action = step.action
            if action == "setting":
                word = "true" if step.value else "false"
                mark = "null" if step.value else "<this recovery>"
                yield (f"{n}. PATCH {self.path(recover.SETTING_KIND, None)}?{fm} merge patch "
                       f"{{\"metadata\":{{\"resourceVersion\":<as read>,\"annotations\":{{\"{api.TURNED_OFF_BY}\":"
                       f"{mark}}}}},\"spec\":{{\"value\":\"{word}\"}}}}")
            elif action == "create":
                obj = step.object
                yield f"{n}. POST {self.path(obj['kind'], _object_namespace(obj))}?{fm} ({obj['kind']} {_name(obj)})"
            elif action == "patch":
                t = step.target
                yield (f"{n}. PATCH {self.path(t.kind, t.namespace, t.name)}?{fm} merge patch "
                       f"{json.dumps(step.patch)} + metadata.resourceVersion as read (after a backup)")
            elif action == "delete":
                t = step.target
                yield (f"{n}. DELETE {self.path(t.kind, t.namespace, t.name)} preconditions uid "
                       f"{t.uid} + resourceVersion as read, propagationPolicy Background (after a backup)")
            else:
                t = step.target
                yield (f"{n}. GET {self.path(t.kind, t.namespace, t.name)} until it {step.condition} "
                       f"(every {POLL_SECONDS:g}s, up to --timeout)")

    # the server dry run ------------------------------------------------------------------------

    def server_dry_run(self):
        """Every write the plan makes that is not done yet, validated by the API server (the
        recovery's record first: recover cannot continue without it)."""
        try:
            self.record_dry_run = self.kept().dry_run()
        except PluginError as exc:
            raise type(exc)(f"the server dry run refused the recovery's record ({self.kept().ref}): {exc}; "
                            f"nothing was changed") from exc
        results = []
        for n, step in enumerate(self.steps, 1):
            if step.action == "wait":
                continue
            if n in self.done:
                results.append((n, step, self.done[n]))
                continue
            try:
                results.append((n, step, self._dry_run(step)))
            except PluginError as exc:
                raise type(exc)(f"the server dry run refused step {n} ({view.describe(step)}): {exc}; nothing "
                                f"was changed") from exc
        return results

    def _dry_run(self, step):
        action, fm = step.action, self.options.field_manager
        if action == "setting":
            obj = self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            self.client.patch_merge(self.path(recover.SETTING_KIND, None), self._setting_body(rv, step.value),
                                    field_manager=fm, dry_run=True, what=_what("patch", recover.setting_ref()))
            return "accepted"
        if action == "create":
            obj = copy.deepcopy(step.object)
            kind, ns, name = obj["kind"], _object_namespace(obj), _name(obj)
            note = "accepted"
            if self.get(kind, ns, name) is not None:      # replace: the old one still holds the name
                meta = obj["metadata"]
                meta.pop("name")
                meta["generateName"] = name[:50] + "-"
                note = "accepted (validated under a generated name: the old one still holds the name)"
            self.client.create(self.path(kind, ns), obj, field_manager=fm, dry_run=True,
                               what=f"create {_resource(kind)} {name} in namespace {ns}")
            return note
        if action == "patch":
            t = step.target
            current = self.get(t.kind, t.namespace, t.name)
            body = _guarded(step.patch, current)
            self.client.patch_merge(self.path(t.kind, t.namespace, t.name), body, field_manager=fm,
                                    dry_run=True, what=_what("patch", t))
            return "accepted"
        t = step.target
        self.client.delete(self.path(t.kind, t.namespace, t.name), uid=t.uid, dry_run=True,
                           what=_what("delete", t))
        return "accepted"

    # apply -------------------------------------------------------------------------------------

    def apply(self, ask=None) -> int:
        """Probe, server dry run, `ask` (the question; None: --yes), then every step in order."""
        self.probe_all()
        self.server_dry_run()
        if ask is not None and not ask():
            view.cancelled(self.io.stderr)      # the user's choice, not a failure: exit 1, "not done"
            return exitcodes.FINDINGS
        self.kept().open()     # first: a run that finds another one went ahead writes nothing, here either
        try:
            os.makedirs(self.backup_dir, mode=0o700, exist_ok=True)
            _, moved = keep_json(os.path.join(self.backup_dir, "plan.json"), self.plan.to_dict())
        except OSError:
            self._release()
            raise
        if moved:
            render.note(self.io.stderr, f"the plan: {moved}")
        view.backup_dir(self.backup_dir, self.out)
        view.record(self.kept().ref, self.out)
        total = len(self.steps)
        finished = []
        n = 0
        try:
            for n, step in enumerate(self.steps, 1):
                outcome = self.probe(step) if step.action != "wait" else None    # fresh: earlier steps moved it
                if not outcome:
                    # the step begun, in the record first: verify and check name it while the
                    # recovery is unfinished (judge/checks/recovery.py), however this run ends
                    self.kept().update(progress={"step": n, "steps": total,
                                                 "doing": view.describe(step)[:recovery.DOING_MAX]})
                    outcome = self.execute(n, step)
                view.step_result(n, total, step, outcome, self.out)
                finished.append(n)
        except (PluginError, KeyboardInterrupt) as exc:
            self._end_progress()
            if not isinstance(exc, Taken):
                self._release()
            turned = [m for m in finished if self.steps[m - 1].action == "setting"]
            left_off = next((m for m in turned if not self.steps[m - 1].value), None)
            if any(self.steps[m - 1].value for m in turned):
                left_off = None         # turned back on before the stop
            view.stopped(finished, n, [m for m in range(n, total + 1)], total, self.resume_command(),
                         self.io.stderr, setting_off_at=left_off, backups=(self.backup_dir, self.kept().ref))
            if self.options.connection.token:
                render.note(self.io.stderr, f"the command reads the token from ${connection_flags.TOKEN_VARIABLE}")
            if self.options.connection.password:
                render.note(self.io.stderr, f"the command reads the password from ${connection_flags.PASSWORD_VARIABLE}")
            if isinstance(exc, GateRefused):     # `setting on`'s refusal, the same words and exit code
                render.error(self.io.stderr, str(exc))
                return exitcodes.FINDINGS
            raise
        self.kept().update(settingTurnedOff=False, finished=True)
        view.finished(total, self.backup_dir, self.kept().ref, self.namespace, self.kept().name, self.out)
        self._setting_left_off()
        return exitcodes.OK

    def _setting_left_off(self):
        """Finished with the Setting off (it was off before: the plan leaves it so): said last, with
        the next command decided by the gate `setting on` asks (judge/gate.py, read now): `setting
        on` only when the gate lets it through, else check's findings; never a command the state
        refuses."""
        obj = self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)
        record = records.default_setting() if obj is None else decode.setting_record(obj, "cluster")
        if st.effective_value(record) is not False:
            return
        try:
            verdict, snapshot = setting_flow.read_gate(self.client, self.options.connection.chunk_size,
                                                       namespace=self.namespace)
        except PluginError as exc:
            view.setting_left_off(None, str(exc), self.command, self.out)
            return
        render.notes(snapshot, self.io.stderr)
        view.setting_left_off(verdict, "", self.command, self.out)

    def command(self, *argv) -> str:
        """A kubectl kvcache command line on this run's cluster (its connection flags)."""
        return connection_flags.shell_command(["kubectl", "kvcache", *argv,
                                               *connection_flags.connection_args(self.options.connection)])

    def _release(self):
        """A stopped run lets go of the record, so its resume command runs at once. After Ctrl-C no
        request goes out any more: the record keeps naming this run, a rerun on this machine sees
        its process gone, one elsewhere waits for the lease."""
        expires = self.kept().state.get("expires")
        try:
            self.kept().release()
        except (PluginError, KeyboardInterrupt):
            render.note(self.io.stderr, f"the recovery's record ({self.kept().ref}) still names this run as its "
                                        f"holder: on this machine the command below runs at once, from another one "
                                        f"after {expires}")

    def execute(self, n, step) -> str:
        action = step.action
        if action == "setting":
            return self._setting(step.value)
        if action == "create":
            return self._create(step.object)
        if action == "patch":
            return self._patch(step)
        if action == "delete":
            return self._delete(n, step)
        return self._wait(n, step)

    def _gate(self):
        """Before the last step turns the Setting on: the gate `setting on` asks (the same judgement,
        the same words); refused, the run stops here and a rerun continues from this step."""
        verdict, snapshot = setting_flow.read_gate(self.client, self.options.connection.chunk_size,
                                                   namespace=self.namespace)
        self._end_progress()
        render.notes(snapshot, self.io.stderr)
        setting_view.gate(verdict, False, self.out)
        if not verdict.passes:
            raise GateRefused(setting_view.refusal(verdict, "fix them, then rerun this command to continue (or turn "
                                                            "it on anyway: kubectl kvcache setting on --force)"))

    def _setting(self, value):
        if value:
            self._gate()
        path = self.path(recover.SETTING_KIND, None)
        obj = self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)
        self.backup(obj)
        if not value:       # written before the patch: a run stopped right after it still knows
            self.kept().update(settingTurnedOff=True)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        try:
            _, lost = self.client.settle(
                lambda: self.client.patch_merge(path, self._setting_body(rv, value),
                                                field_manager=self.options.field_manager,
                                                what=_what("patch", recover.setting_ref())),
                lambda: self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME),
                lambda now: now is not None and st.parse_bool((now.get("spec") or {}).get("value")) == value)
        except Conflict as exc:
            raise Conflict(f"conflict: the Setting changed since it was read (resourceVersion {rv}); nothing was "
                           f"overwritten") from exc
        return f"done (spec.value {st.WORD[value]!r}{_lost(lost)})"

    def _setting_body(self, rv, value):
        return setting_body(rv, value, anchors.setting_mark(self.namespace, self.plan.binding["name"], self.old_uid))

    def _create(self, obj):
        kind, ns, name = obj["kind"], _object_namespace(obj), _name(obj)
        try:
            created, lost = self.client.settle(
                lambda: self.client.create(self.path(kind, ns), obj, field_manager=self.options.field_manager,
                                           what=f"create {_resource(kind)} {name} in namespace {ns}"),
                lambda: self.get(kind, ns, name), lambda now: now is not None and self.probe(recover.Create(obj)))
        except Conflict:
            if self.probe(recover.Create(obj)):
                return "already done (created meanwhile with the planned spec)"
            raise
        return f"created (uid {(created.get('metadata') or {}).get('uid')}{_lost(lost)})"

    def _patch(self, step):
        t = step.target
        for _ in range(RETRIES):
            current = self.get(t.kind, t.namespace, t.name)
            if current is None:
                raise NotFound(f"{t.kind} {t.namespace}/{t.name} no longer exists")
            if recover.contains(current, step.patch):
                return "already done"
            self.backup(current)
            try:
                _, lost = self.client.settle(
                    lambda: self.client.patch_merge(self.path(t.kind, t.namespace, t.name),
                                                    _guarded(step.patch, current),  # noqa: B023 (settle calls it now)
                                                    field_manager=self.options.field_manager, what=_what("patch", t)),
                    lambda: self.get(t.kind, t.namespace, t.name),
                    lambda now: now is not None and recover.contains(now, step.patch))
                return "patched" + _lost(lost)
            except Conflict:
                continue        # it changed between the read and the patch: read it again, back it up again
        raise Conflict(f"conflict: {t.kind} {t.namespace}/{t.name} kept changing; it was not patched")

    def _delete(self, n, step):
        t = step.target
        if t.kind == recover.MD_KIND and self.options.strategy == recover.SIDE_BY_SIDE:
            self._replacement_ready(n, t)
        original = self.originals.get((t.kind, t.namespace, t.name))
        for _ in range(RETRIES):
            current = self.get(t.kind, t.namespace, t.name)
            if current is None:
                return "already gone"
            meta = current.get("metadata") or {}
            if t.uid and meta.get("uid") != t.uid:
                return "already gone (the name is held by a new object)"
            if original is not None and current.get("spec") != original.get("spec"):
                raise Conflict(f"conflict: {t.kind} {t.namespace}/{t.name} changed since the plan was made "
                               f"(its spec differs); it was not deleted: review it and run again")
            path = self.backup(current)
            uid = meta.get("uid")
            try:
                _, lost = self.client.settle(
                    lambda: self.client.delete(self.path(t.kind, t.namespace, t.name), uid=uid,  # noqa: B023 (settle calls it now)
                                               resource_version=meta.get("resourceVersion"), what=_what("delete", t)),  # noqa: B023 (settle calls it now)
                    lambda: self.get(t.kind, t.namespace, t.name),
                    lambda now: now is None or (now.get("metadata") or {}).get("uid") != uid  # noqa: B023 (settle calls it now)
                    or bool((now.get("metadata") or {}).get("deletionTimestamp")))
                return f"deleted (backup {path}{_lost(lost)})"
            except Conflict:
                continue        # its resourceVersion moved (e.g. a status update): read and back up again
            except NotFound:
                return "already gone"
        raise Conflict(f"conflict: {t.kind} {t.namespace}/{t.name} kept changing; it was not deleted")

    def _replacement_ready(self, n, target):
        """Side-by-side: the old deployment goes only once its replacement exists and is available."""
        create = next((s for s in reversed(self.steps[:n - 1]) if s.action == "create"
                       and s.object["kind"] == recover.MD_KIND), None)
        if create is None:
            return
        new = create.object
        current = self.get(recover.MD_KIND, _object_namespace(new), _name(new))
        if current is None or not _available(current) or recover.binding_named(current) != self.new_binding:
            raise PluginError(f"refusing to delete ModelDeployment {target.namespace}/{target.name}: its "
                              f"replacement {_name(new)} is not available")

    def _wait(self, n, step):
        t, cond = step.target, step.condition
        label = (f"the Setting reports status.value {cond[6:]}" if cond.startswith("value=")
                 else f"{t.kind} {t.namespace}/{t.name} is {cond}")
        check = self._condition(n, step)
        start = self.clock()
        limit = self.options.timeout
        first = True
        while True:
            obj = self.get(t.kind, t.namespace, t.name)
            ok, state = check(obj)
            elapsed = self.clock() - start
            if ok:
                self._end_progress()
                if cond == recover.value_for(True) and self.kept().state.get("settingTurnedOff"):
                    self.kept().update(settingTurnedOff=False)
                return f"done ({state}" + (f", after {elapsed:.0f}s)" if elapsed >= 1 else ")")
            if limit is not None and elapsed >= limit:
                self._end_progress()
                raise PluginError(f"timed out after {limit:g}s waiting until {label} ({state})")
            self.kept().renew()
            view.waiting(label, elapsed, limit, self.io.stderr, self._tty, first)
            self._progress = self._tty
            first = False
            self.sleep(POLL_SECONDS if limit is None else max(0.0, min(POLL_SECONDS, limit - elapsed)))

    def _end_progress(self):
        if self._progress:
            view.waited(self.io.stderr, self._tty)
            self._progress = False

    def _condition(self, n, step):
        cond = step.condition
        if cond.startswith("value="):
            want = cond == recover.value_for(True)

            def setting(obj):
                record = records.default_setting() if obj is None else decode.setting_record(obj, "cluster")
                return st.effective_value(record) == want, f"status.value {record.status_value!r}"
            return setting
        if cond == recover.AVAILABLE:
            return lambda obj: (obj is not None and _available(obj),
                                "not created" if obj is None else _availability(obj))
        if cond == recover.READY:
            def ready(obj):     # as the operator's deployments read it; NEVER ends the wait (and the run)
                found = binding_status.readiness(obj)
                if found.state == binding_status.NEVER:
                    raise PluginError(f"{step.target.kind} {step.target.namespace}/{step.target.name} "
                                      f"will not become ready: {found.text}")
                return found.state == binding_status.USABLE, found.text
            return ready
        if cond == recover.UNUSED:
            def unused(obj):
                users = [u.get("name") for u in ((obj or {}).get("status") or {}).get("usedBy") or ()
                         if isinstance(u, dict) and u.get("kind") == recover.MD_KIND]
                return not users, ("status.usedBy: " + ", ".join(map(str, users))) if users else "used by none"
            return unused
        uid = next((s.target.uid for s in reversed(self.steps[:n - 1]) if s.action == "delete"
                    and s.target.key() == step.target.key()), None)

        def deleted(obj):
            if obj is None:
                return True, "gone"
            meta = obj.get("metadata") or {}
            if uid and meta.get("uid") != uid:
                return True, "gone (the name is held by a new object)"
            return False, "finalizers: " + (", ".join(meta.get("finalizers") or ()) or "none")
        return deleted

    # backups and resuming ----------------------------------------------------------------------

    def backup(self, obj) -> str:
        meta = obj.get("metadata") or {}
        name = ".".join(_file_part(p) for p in (obj.get("kind"), meta.get("namespace") or "cluster", meta.get("name"),
                                                 "rv" + str(meta.get("resourceVersion") or "0"))) + ".json"
        path, moved = keep_json(os.path.join(self.backup_dir, name), obj)
        if moved:
            render.note(self.io.stderr, f"backup of {anchors.describe(obj)}: {moved}")
        self._anchor(obj)
        if self.journal is not None:
            self.journal.backup(obj)
        return path

    def _anchor(self, obj):
        """The backup's digest on the new Binding (once it exists), before the object is deleted or
        patched: what a resume restores from must match it (judge/anchor.py). Adding a key is a
        merge patch no concurrent write can clobber."""
        if self.client is None:
            return
        ns, name = self.namespace, self.new_binding
        if self.get(recover.BINDING_KIND, ns, name) is None:
            return      # before step "Create" (the Setting's backup): never restored, so never needed
        annotations = {**anchors.anchor_annotations(self.plan.binding["name"], self.old_uid, self.strategy),
                       **anchors.digest_annotation(obj)}
        def holds(now):     # its answer lost: the re-read Binding carries every annotation sent
            have = ((now or {}).get("metadata") or {}).get("annotations") or {}
            return all(have.get(k) == v for k, v in annotations.items())

        self.client.settle(
            lambda: self.client.patch_merge(self.path(recover.BINDING_KIND, ns, name),
                                            {"metadata": {"annotations": annotations}},
                                            field_manager=self.options.field_manager,
                                            what=_what("patch", recover.ref(recover.BINDING_KIND, ns, name))),
            lambda: self.get(recover.BINDING_KIND, ns, name), holds)

    def resume_command(self) -> str:
        goal, o = self.plan.target, self.options
        argv = ["kubectl", "kvcache", "recover", self.plan.binding["name"], "-n", self.namespace,
                "--dtype", goal["dtype"], "--name", goal["name"], "--domain", goal["domain"],
                "--strategy", goal["strategy"],
                "--backup-dir", os.path.abspath(self.backup_dir)]
        if o.timeout is not None:
            argv += ["--timeout", f"{o.timeout:g}s"]
        else:
            argv += ["--timeout", "0"]
        if o.field_manager != DEFAULT_FIELD_MANAGER:
            argv += ["--field-manager", o.field_manager]
        argv += list(connection_flags.connection_args(o.connection)) + ["--apply"]
        return connection_flags.shell_command(argv)


def _lost(lost) -> str:
    """A write whose answer was lost and whose effect the re-read found (kube.client.Client.settle)."""
    return f"; its answer was lost ({lost}), read again: it took effect" if lost else ""


def _state(plan, uid) -> dict:
    """This run's record: the old Binding (its uid), the target, whether the plan turns the Setting
    on because this recovery turned it off (a hint for people: the Setting's own mark decides)."""
    target = plan.target
    return {"binding": {"namespace": plan.binding["namespace"], "name": plan.binding["name"], "uid": uid},
            "target": {k: target[k] for k in ("name", "domain", "dtype", "strategy")},
            "settingTurnedOff": bool(target["setting"]["turnOnAtEnd"] and not target["setting"]["turnOff"]),
            "finished": False, "holder": None, "expires": None, "progress": None}


def setting_body(rv, value, mark) -> dict:
    """The Setting's merge patch: spec.value guarded by its resourceVersion, and this recovery's
    mark (api.TURNED_OFF_BY) set in the same patch that turns it off, removed by the one that turns
    it on (so "this recovery turned it off" is written where only the recovery's rights reach)."""
    body = st.patch_body(rv, value)
    body["metadata"]["annotations"] = {api.TURNED_OFF_BY: None if value else mark}
    return body


def _available(obj) -> bool:
    """The replacement serves: what the operator writes (judge/holds.py serving)."""
    return holds.serving(obj)[0]


def _availability(obj) -> str:
    return holds.serving(obj)[1]


def _guarded(patch, current) -> dict:
    """The merge patch with the resourceVersion read as a precondition (409 if it moved)."""
    body = copy.deepcopy(patch)
    rv = ((current or {}).get("metadata") or {}).get("resourceVersion")
    if rv:
        body.setdefault("metadata", {})["resourceVersion"] = rv
    return body


def _object_namespace(obj):
    return (obj.get("metadata") or {}).get("namespace")


def _name(obj):
    return (obj.get("metadata") or {}).get("name")


def _resource(kind):
    return api.resource(kind).name


def _what(verb, target):
    return f"{verb} {_resource(target.kind)} {target.name} in namespace {target.namespace}"


