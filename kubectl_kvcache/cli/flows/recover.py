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
from kubectl_kvcache.judge import checks, recover
from kubectl_kvcache.judge import setting as st
from kubectl_kvcache.load import files as saved_files, recovery
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.cli.flows.setting import setting_path
from kubectl_kvcache.errors import Conflict, NotFound, PluginError
from kubectl_kvcache.cli import connection_flags
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER
from kubectl_kvcache.render import recover as view

POLL_SECONDS = 1.0
RETRIES = 5


def run(options: RecoverOptions, io, sleep=time.sleep, clock=time.monotonic) -> int:
    backups = read_backups(options.backup_dir)
    found, client = recovery.load_recovery(options.connection, options.scope, options.binding, io.stdin,
                                           render.tracer(io.stderr), backups)
    inputs = recover.inputs_for(found, checks.check(found.snapshot))
    plan = recover.plan(inputs, recover.Request(options.dtype, options.name, options.domain, options.strategy))
    data = plan.to_dict()
    for text in plan.notes:
        render.note(io.stderr, text)
    structured = options.output.structured
    if structured:
        render.structured(data, options.output.format, io.stdout)
    else:
        view.plan(data, io.stdout)
    if not options.apply and options.dry_run == "none":
        view.planned_only(io.stderr)
        return exitcodes.OK
    out = io.stderr if structured else io.stdout
    executor = Executor(client, plan, inputs, options, io, out, sleep, clock)
    if options.dry_run == "client":
        view.requests(executor.requests(), out)
        return exitcodes.OK
    if options.dry_run == "server":
        executor.probe_all()
        view.server_dry_run(executor.server_dry_run(), out)
        return exitcodes.OK
    isatty = getattr(io.stdin, "isatty", None)
    if not options.yes and not (isatty and isatty()):
        raise PluginError("refusing to apply the recovery without confirmation: standard input is not a terminal; "
                          "pass --yes to confirm (or --dry-run to preview)")
    return executor.apply(None if options.yes else lambda: confirm(io, data))


def confirm(io, data):
    """Asked once, after the server dry run passed and before the first change: True to go on."""
    render.prompt(io.stderr, f"The API server accepted every write in a dry run. Apply these {len(data['steps'])} "
                             f"steps? [y/N] ")
    return io.stdin.readline().strip().lower() in ("y", "yes")


# -- backups ----------------------------------------------------------------------------------

def read_backups(path):
    """The objects an earlier run backed up in `path` (nothing when it does not exist yet)."""
    if not path or not os.path.isdir(path):
        return []
    if not any(n.endswith(".json") for n in os.listdir(path)):
        return []
    return [o for o, _, _ in saved_files.read_objects([path]) if o.get("kind") != "RecoveryPlan"]


def default_backup_dir(namespace, binding, now=None):
    now = now or datetime.now(timezone.utc)
    return f"kvcache-recover-{namespace}-{binding}-{now.strftime('%Y%m%dT%H%M%SZ')}"


def _file_part(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text))


def write_json(path, data):
    """A file written whole and synced before anything relies on it (never overwritten)."""
    with open(path, "x", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())


# -- the executor -----------------------------------------------------------------------------

class Executor:
    def __init__(self, client, plan, inputs, options: RecoverOptions, io, out, sleep, clock):
        self.client, self.plan, self.options, self.io, self.out = client, plan, options, io, out
        self.sleep, self.clock = sleep, clock
        self.steps = plan.steps
        self.namespace = plan.target["namespace"]
        self.new_binding = plan.target["name"]
        self.backup_dir = options.backup_dir or default_backup_dir(self.namespace, plan.binding["name"])
        self.originals = {(o.get("kind"), _ns(o), _name(o)): o for o in inputs.deployments + inputs.workloads
                          + ([inputs.binding] if inputs.binding and not inputs.binding_gone else [])}
        self.done = {}          # step number -> outcome, for steps found finished by the probe
        self._tty = bool(getattr(io.stderr, "isatty", None) and io.stderr.isatty())
        self._progress = False      # a progress line is open on the terminal

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
            record = records.setting_record(obj, "cluster")
            asked = st.parse_bool(record.spec_value) if record.spec_value is not None else st.effective_value(record)
            return f"already done (spec.value {record.spec_value!r})" if asked == step.value else None
        if action == "create":
            obj = step.object
            kind, ns, name = obj["kind"], _ns(obj), _name(obj)
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
        for n, step in enumerate(self.steps, 1):
            if step.action != "wait":
                outcome = self.probe(step)
                if outcome:
                    self.done[n] = outcome

    # the client dry run: the requests, in order -----------------------------------------------

    def requests(self):
        fm = f"fieldManager={self.options.field_manager}"
        for n, step in enumerate(self.steps, 1):
            action = step.action
            if action == "setting":
                word = "true" if step.value else "false"
                yield (f"{n}. PATCH {self.path(recover.SETTING_KIND, None)}?{fm} merge patch "
                       f"{{\"metadata\":{{\"resourceVersion\":<as read>}},\"spec\":{{\"value\":\"{word}\"}}}}")
            elif action == "create":
                obj = step.object
                yield f"{n}. POST {self.path(obj['kind'], _ns(obj))}?{fm} ({obj['kind']} {_name(obj)})"
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
            self.client.patch_merge(self.path(recover.SETTING_KIND, None), st.patch_body(rv, step.value),
                                    field_manager=fm, dry_run=True, what=_what("patch", recover.setting_ref()))
            return "accepted"
        if action == "create":
            obj = copy.deepcopy(step.object)
            kind, ns, name = obj["kind"], _ns(obj), _name(obj)
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
        os.makedirs(self.backup_dir, mode=0o700, exist_ok=True)
        view.backup_dir(self.backup_dir, self.out)
        plan_file = os.path.join(self.backup_dir, "plan.json")
        if not os.path.exists(plan_file):
            write_json(plan_file, self.plan.to_dict())
        total = len(self.steps)
        finished = []
        n = 0
        try:
            for n, step in enumerate(self.steps, 1):
                outcome = self.probe(step) if step.action != "wait" else None    # fresh: earlier steps moved it
                if not outcome:
                    outcome = self.execute(n, step)
                view.step_result(n, total, step, outcome, self.out)
                finished.append(n)
        except (PluginError, KeyboardInterrupt):
            self._end_progress()
            view.stopped(finished, n, [m for m in range(n, total + 1)], total, self.resume_command(),
                         self.io.stderr)
            if self.options.connection.token:
                render.note(self.io.stderr, f"the command reads the token from ${connection_flags.TOKEN_VARIABLE}")
            if self.options.connection.password:
                render.note(self.io.stderr, f"the command reads the password from ${connection_flags.PASSWORD_VARIABLE}")
            raise
        view.finished(total, self.backup_dir, self.out)
        return exitcodes.OK

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

    def _setting(self, value):
        path = self.path(recover.SETTING_KIND, None)
        obj = self.get(recover.SETTING_KIND, api.SETTING_NAMESPACE, api.SETTING_NAME)
        self.backup(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        try:
            self.client.patch_merge(path, st.patch_body(rv, value), field_manager=self.options.field_manager,
                                    what=_what("patch", recover.setting_ref()))
        except Conflict as exc:
            raise Conflict(f"conflict: the Setting changed since it was read (resourceVersion {rv}); nothing was "
                           f"overwritten") from exc
        return f"done (spec.value {st.WORD[value]!r})"

    def _create(self, obj):
        kind, ns, name = obj["kind"], _ns(obj), _name(obj)
        try:
            created = self.client.create(self.path(kind, ns), obj, field_manager=self.options.field_manager,
                                         what=f"create {_resource(kind)} {name} in namespace {ns}")
        except Conflict:
            if self.probe(recover.Create(obj)):
                return "already done (created meanwhile with the planned spec)"
            raise
        return f"created (uid {(created.get('metadata') or {}).get('uid')})"

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
                self.client.patch_merge(self.path(t.kind, t.namespace, t.name),
                                        _guarded(step.patch, current), field_manager=self.options.field_manager,
                                        what=_what("patch", t))
                return "patched"
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
            try:
                self.client.delete(self.path(t.kind, t.namespace, t.name), uid=meta.get("uid"),
                                   resource_version=meta.get("resourceVersion"), what=_what("delete", t))
                return f"deleted (backup {path})"
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
        current = self.get(recover.MD_KIND, _ns(new), _name(new))
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
                return f"done ({state}" + (f", after {elapsed:.0f}s)" if elapsed >= 1 else ")")
            if limit is not None and elapsed >= limit:
                self._end_progress()
                raise PluginError(f"timed out after {limit:g}s waiting until {label} ({state})")
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
                record = records.default_setting() if obj is None else records.setting_record(obj, "cluster")
                return st.effective_value(record) == want, f"status.value {record.status_value!r}"
            return setting
        if cond == recover.AVAILABLE:
            return lambda obj: (obj is not None and _available(obj),
                                "not created" if obj is None else _availability(obj))
        if cond == recover.BOUND:
            return lambda obj: (obj is not None and (obj.get("status") or {}).get("phase") == "Bound",
                                f"phase {((obj or {}).get('status') or {}).get('phase') or 'unset'}")
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
        path = os.path.join(self.backup_dir, name)
        if not os.path.exists(path):
            write_json(path, obj)
        return path

    def resume_command(self) -> str:
        goal, o = self.plan.target, self.options
        argv = ["kubectl", "kvcache", "recover", self.plan.binding["name"], "-n", self.namespace,
                "--dtype", goal["dtype"], "--name", goal["name"], "--domain", goal["domain"],
                "--strategy", goal["strategy"],
                "--backup-dir", self.backup_dir]
        if o.timeout is not None:
            argv += ["--timeout", f"{o.timeout:g}s"]
        else:
            argv += ["--timeout", "0"]
        if o.field_manager != DEFAULT_FIELD_MANAGER:
            argv += ["--field-manager", o.field_manager]
        argv += list(connection_flags.connection_args(o.connection)) + ["--apply"]
        return connection_flags.shell_command(argv)


def _available(obj) -> bool:
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    for c in status.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Available" and c.get("status") == "True":
            observed = c.get("observedGeneration", status.get("observedGeneration"))
            return generation is None or observed is None or observed >= generation
    return False


def _availability(obj) -> str:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Available":
            return f"Available={c.get('status')}" + (f": {c.get('message')}" if c.get("message") else "")
    return "no Available condition yet"


def _guarded(patch, current) -> dict:
    """The merge patch with the resourceVersion read as a precondition (409 if it moved)."""
    body = copy.deepcopy(patch)
    rv = ((current or {}).get("metadata") or {}).get("resourceVersion")
    if rv:
        body.setdefault("metadata", {})["resourceVersion"] = rv
    return body


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace")


def _name(obj):
    return (obj.get("metadata") or {}).get("name")


def _resource(kind):
    return api.resource(kind).name


def _what(verb, target):
    return f"{verb} {_resource(target.kind)} {target.name} in namespace {target.namespace}"


