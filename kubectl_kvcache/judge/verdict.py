"""One verdict per run: which rows and findings fail it, which could not be decided, what was
asked for and not read, and so the exit code. Pure: a judged report in, a Verdict out.

The exit code and every format (the table's verdict line, json, yaml, describe, csv, markdown,
junit, sarif; the --watch/--wait endings) read this record and never decide again, as
kube-no-trouble's printers and exit code read one `[]judge.Result`. The rules themselves live
beside their judges and are only called from here: a verify row fails by judge/verify.fails
(its status and --fail-on, a policy's severity, an OK row the engine contradicts, that died at
start-up or still rolls); a check finding by its severity (an error; a warning too with
--strict); a `bindings` row by its codes' registry rows (judge/checks/findings.BINDING_FAILURES)
or when the Binding named does not exist; a `roles` row when it is an error role.

What was asked for and not read is part of the verdict too (`Reason`s): a Pod named to `verify`
that does not exist, a namespace asked for that does not exist, a scope (a namespace, every
namespace, the input, narrowed by -l) that holds nothing of the kinds the command reads ("nothing
was verified there"), a --wait that ended before the rollout completed. Each fails every
command, verify, check, bindings and roles alike (issue 48): a gate that read nothing does not
pass, whatever the format, and kubectl's own "No resources found" (exit 0) is a listing's
answer, not a gate's.
"""

from __future__ import annotations

from kubectl_kvcache import exitcodes
from kubectl_kvcache.record import Record

FAILED, PASSED, SKIPPED = "failed", "passed", "skipped"
NOT_FOUND = "not-found"         # a named Pod or namespace asked for does not exist: nothing was read there
NOTHING = "nothing-found"       # the scope asked for holds nothing of the kinds the command reads
UNREAD = (NOT_FOUND, NOTHING)   # the reasons that say a scope was not read
CREATE_REFUSED = "create-refused"   # a controller says it cannot create the Pods of an object in scope
WAIT = "wait-"                  # + the rollout outcome a --wait ended on (judge/rollout.py): timeout, ...
RECOVERY = "recovery-unfinished"    # a recovery's record in scope is not finished (judge/checks/recovery.py)
SETTING_IN_FLIGHT = "setting-in-flight"     # verify's reason; check says it as a finding of the same code
REASON_MEANINGS = {
    NOT_FOUND: "a named Pod or namespace asked for was not found: nothing was verified there",
    NOTHING: "nothing of the kinds the command reads was found in the scope asked for: nothing was verified there",
    WAIT + "timeout": "--wait ended before the rollout completed (--timeout)",
    WAIT + "settled": "--wait ended: rolling will not change the replicas left",
    WAIT + "rejected": "--wait ended: a replica is confirmed rejected or fails at start-up",
    WAIT + "unbound": "--wait ended: a deployment's Binding does not exist",
    WAIT + "held": "--wait ended: the operator holds the rollout",
    RECOVERY: "a recovery (recover --apply) stopped part-way: its record is not finished",
    WAIT + "refused": "--wait ended: a create is refused (a deployment's replicas, or an opt-in Pod's controller's Pods)",
    CREATE_REFUSED: "a controller says it cannot create the Pods of an object in scope (FailedCreate, RenderFailed)",
    SETTING_IN_FLIGHT: "the Setting's spec.value asks for a value its status.value does not report: not settled",
}


class Decision(Record):
    """One row's place in the verdict. `where`: the report's list it is in (items, suppressed,
    findings, bindings, roles) and `index` its position there; `outcome`: FAILED, PASSED or
    SKIPPED (not decided and not failing: never a pass); `code`: why, in one word (the row's
    status or finding code, or why an OK row fails: judge/verify.OK_FAILURES); `why`: the reason
    in words when the row's own fields do not say it (an OK row that fails, a status tolerated
    by --fail-on, a policy's ignore); `counted`: False for a finding whose failure is already
    counted on the row it is about (bindings: a rejected dtype's finding and its Binding)."""

    __slots__ = ("where", "index", "outcome", "code", "why", "counted")

    def __init__(self, where: str, index: int, outcome: str, code: str, why: str = "", counted: bool = True):
        self.where = where
        self.index = index
        self.outcome = outcome
        self.code = code
        self.why = why
        self.counted = counted

    def to_dict(self):
        return {"outcome": self.outcome} | ({"why": self.why} if self.why else {})


class Reason(Record):
    """A reason of the run's own, about no row: something asked for and not read (a namespace, a
    named Pod), a --wait that ended before the rollout completed. `fails`: it makes the run exit 1."""

    __slots__ = ("code", "kind", "name", "namespace", "message", "fix", "fails")

    def __init__(self, code: str, kind: str, name: str, namespace: str | None, message: str, fix: str = "",
                 fails: bool = True):
        self.code = code
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.message = message
        self.fix = fix
        self.fails = fails

    def to_dict(self):
        return {"code": self.code, "kind": self.kind, "name": self.name, "namespace": self.namespace,
                "message": self.message, "fix": self.fix, "fails": self.fails}


class Verdict(Record):
    """The run's verdict: the command it is about, what makes a row fail (`failing`: verify's
    statuses, check's severities, bindings' and roles' rule in words), the decisions of the rows
    that do not simply pass (a row not listed passes), and the run's own reasons."""

    __slots__ = ("command", "failing", "decisions", "reasons", "_by")
    _uncompared = ("_by",)

    def __init__(self, command: str, failing: tuple[str, ...], decisions: tuple[Decision, ...] = (),
                 reasons: tuple[Reason, ...] = (), _by=None):
        self.command = command
        self.failing = failing
        self.decisions = decisions
        self.reasons = reasons
        self._by = {(d.where, d.index): d for d in decisions}

    def of(self, where: str, index: int) -> Decision:
        """The decision of row `index` of the report's list `where` (a row not listed passes)."""
        return self._by.get((where, index)) or Decision(where, index, PASSED, "")

    def outcome(self, where: str, index: int) -> str:
        return self.of(where, index).outcome

    @property
    def failures(self) -> tuple[Decision, ...]:
        """The rows that fail the run, each counted once."""
        return tuple(d for d in self.decisions if d.outcome == FAILED and d.counted)

    @property
    def failed(self) -> bool:
        return bool(self.failures) or any(r.fails for r in self.reasons)

    @property
    def code(self) -> int:
        """The run's exit code: 1 when anything fails it, else 0."""
        return exitcodes.FINDINGS if self.failed else exitcodes.OK

    @property
    def result(self) -> str:
        return "FAILED" if self.failed else "PASSED"

    def counts(self) -> dict[str, int]:
        """{code: rows failing for it}, then every failing reason's code: for the verdict line."""
        found: dict[str, int] = {}
        for d in self.failures:
            found[d.code] = found.get(d.code, 0) + 1
        for r in self.reasons:
            if r.fails:
                found[r.code] = found.get(r.code, 0) + 1
        return found

    def text(self) -> str:
        """`FAILED (exit code 1): 3 rows fail (2 MISMATCH, 1 OBSERVED-DIFFERS); namespace nowhere
        was not found: nothing was verified there`, or `PASSED`."""
        if not self.failed:
            return self.result + ("" if not self.reasons else "; " + "; ".join(r.message for r in self.reasons))
        rows = self.failures
        counts: dict[str, int] = {}
        for d in rows:
            counts[d.code] = counts.get(d.code, 0) + 1
        parts = []
        if rows:
            parts.append(f"{len(rows)} {_noun(self.command, len(rows))} "
                         f"{'fails' if len(rows) == 1 else 'fail'} ("
                         + ", ".join(f"{n} {c}" for c, n in counts.items()) + ")")
        parts += [r.message for r in self.reasons]
        return f"{self.result} (exit code {self.code}): " + "; ".join(parts)

    def to_dict(self):
        return {"command": self.command, "result": self.result, "exitCode": self.code,
                "failing": len(self.failures), "notDecided": sum(1 for d in self.decisions if d.outcome == SKIPPED),
                "failsOn": list(self.failing), "reasons": [r.to_dict() for r in self.reasons]}


def _noun(command, n):
    word = {"verify": "replica", "check": "finding", "bindings": "Binding", "roles": "role"}.get(command, "row")
    return word if n == 1 else word + "s"


# -- what was asked for and not read -----------------------------------------------------------

def not_found(kind: str, name: str, namespace: str | None, where: str, fails: bool = True) -> Reason:
    """A named Pod (or deployment) or a namespace asked for that does not exist: nothing was
    verified there."""
    what = "namespace" if kind == "Namespace" else kind
    message = f"{what} {name} was not found {where}: nothing was verified there"
    fix = "check the name (kubectl get namespaces)" if kind == "Namespace" else \
        f"check the name (kubectl get {kind.lower()}s -n {namespace or 'default'})"
    return Reason(NOT_FOUND, kind, name, namespace, message, fix, fails)


def nothing_found(what: str, namespace: str | None, source: str, selector: str | None = None) -> Reason:
    """A scope that holds nothing of `what` (the kinds the command reads): the namespace asked for
    (None: every namespace) of the cluster or of the input (`source` "file"), narrowed by -l."""
    where = f"in namespace {namespace}" if namespace else "in any namespace"
    if source == "file":
        where = "in the input" + (f" (namespace {namespace})" if namespace else "")
    if selector:
        where += f" matching -l {selector}"
    if namespace:
        fix = ("check -n against the input's metadata.namespace (an object without one is read in -n); "
               "every namespace: -A") if source == "file" else \
            "check the namespace and the context (kubectl get namespaces); every namespace: -A"
    else:
        fix = "check the input" if source == "file" else "check the context (kubectl config current-context)"
    if selector:
        fix = "check the selector (-l); " + fix
    return Reason(NOTHING, "Namespace" if namespace else "Scope", namespace or "all-namespaces", namespace,
                  f"no {what} found {where}: nothing was verified there", fix)


def unread(snapshot, fails_namespaces: bool = True, fails_pods: bool = True, nothing: str | None = None,
           selector: str | None = None) -> tuple[Reason, ...]:
    """The Reasons of a snapshot's namespaces and named Pods asked for that do not exist and,
    when the command's report holds nothing (`nothing`: the words for what it reads), of a scope
    that held nothing of it (a namespace that does not exist says so already)."""
    where = "in the input" if snapshot.source == "file" else "in the cluster"
    pod_where = "in the input" if snapshot.source == "file" else f"in namespace {snapshot.namespace or 'default'}"
    missing = tuple(getattr(snapshot, "missing_namespaces", ()))
    found = tuple(not_found("Namespace", ns, None, where, fails_namespaces) for ns in missing) + tuple(
        not_found("Pod", name, snapshot.namespace, pod_where, fails_pods)
        for name in getattr(snapshot, "missing_pods", ()))
    if nothing and not missing:
        reason = nothing_found(nothing, snapshot.namespace, snapshot.source, selector)
        plain = not_opted_in(snapshot)
        if plain:
            reason = reason.replace(fix=f"{reason.fix}; {plain}")
        found += (reason,)
    return found


def not_opted_in(snapshot) -> str:
    """What a scope that held nothing to judge did hold: the workload templates read that are not
    opted into injection, named (a chart's plain engine Deployments), '' when there are none."""
    from kubectl_kvcache.operator import api

    plain = [w for w in getattr(snapshot, "workloads", ()) if w.labels.get(api.INJECT_LABEL) != "true"]
    if not plain:
        return ""
    names = ", ".join(f"{w.kind} {w.name}" for w in plain[:5]) + (f" and {len(plain) - 5} more" if len(plain) > 5 else "")
    where = "the input" if snapshot.source == "file" else "the scope"
    return (f"{where} holds {len(plain)} workload template{'s' if len(plain) != 1 else ''} ({names}), none "
            f"labelled {api.INJECT_LABEL}=\"true\" (the injection webhook's opt-in, with the binding and engine "
            f"annotations): a workload outside the operator is not judged")


def recoveries(snapshot) -> tuple[Reason, ...]:
    """verify's Reasons of the recoveries in scope stopped part-way (judge/checks/recovery.py: which
    and its words): each fails the run until its record says finished."""
    from kubectl_kvcache.judge.checks import recovery

    found = []
    for state in recovery.unfinished(snapshot):
        message, fix = recovery.words(state)
        kind, name = ("ConfigMap", state.name) if state.problem is not None else ("KVCachePoolBinding", state.binding)
        found.append(Reason(RECOVERY, kind, name or "", state.namespace, message, fix, True))
    return tuple(found)


def refused(report, snapshot) -> tuple[Reason, ...]:
    """The run's reasons of creates refused (load/events.py Refusals, judged in judge/verify.py):
    a pool-attached deployment whose replicas without a Pod the operator says it cannot create,
    and the controller of a Pod opted into injection whose new Pods the injection webhook refuses
    (its FailedCreate quoting the webhook). Each fails the run: replicas are missing and waiting
    does not bring them."""
    from kubectl_kvcache.judge.verify import injection_refusals, refused_fix

    reasons = []
    for d in report.deployments:
        if d.refused is not None:
            r = d.refused
            said = (f"the replicas of ModelDeployment {d.namespace}/{d.name} that have no Pod cannot be created as its "
                    f"spec stands" if r.spec else f"the operator cannot create the replicas of ModelDeployment "
                                                  f"{d.namespace}/{d.name} that have no Pod")
            reasons.append(Reason(CREATE_REFUSED, "ModelDeployment", d.name, d.namespace, f"{said}: {r.said}",
                                  refused_fix(d, r)))
    reasons += [injection_refused(key, r) for key, r in injection_refusals(getattr(snapshot, "pods", ()) or (),
                                                                            getattr(snapshot, "refusals", None))]
    return tuple(reasons)


def injection_refused(key, r) -> Reason:
    """The reason of an opt-in Pod's controller (`key`: namespace, kind, name) whose Pods the
    injection webhook refuses (`r`: its FailedCreate, load/events.Refusal)."""
    namespace, kind, name = key
    return Reason(CREATE_REFUSED, kind, name, namespace,
                  f"{kind} {namespace}/{name} cannot create its Pods: the injection webhook refuses them: {r.said}",
                  f"change what the webhook names in the Pod template (kubectl kvcache check -n {namespace} -o "
                  f"describe); kubectl get events -n {namespace} --field-selector involvedObject.name={name},"
                  f"reason={r.reason}")


def ended(outcome: str, text: str) -> Reason:
    """A --wait that ended on `outcome` (judge/rollout.py) before the rollout completed."""
    return Reason(WAIT + outcome, "Rollout", "rollout", None, text, "", True)


def in_flight(report) -> tuple[Reason, ...]:
    """The Setting in flight (judge/setting.py in_flight), a reason that fails verify until its
    spec.value and status.value agree: no replica is settled before the operator takes it in."""
    from kubectl_kvcache.judge import setting as setting_mod
    from kubectl_kvcache.operator import api

    flight = getattr(report, "in_flight", None)
    if flight is None:
        return ()
    return (Reason(SETTING_IN_FLIGHT, "Setting", api.SETTING_NAME, api.SETTING_NAMESPACE,
                   setting_mod.in_flight_message(flight), setting_mod.IN_FLIGHT_FIX),)


# -- the four commands -------------------------------------------------------------------------

def verify(report, fail_on=(), reasons: tuple[Reason, ...] = ()) -> Verdict:
    """verify's verdict: each replica by judge/verify.fails; one a policy ignored passes."""
    from kubectl_kvcache.judge import verify as judge

    failing = tuple(s for s in judge.STATUSES if s in (fail_on or judge.STATUSES) and s != judge.OK)
    found = []
    for index, item in enumerate(report.items):
        bad = judge.fails(item, fail_on)
        reason = judge.ok_failure(item, fail_on) if item.status == judge.OK else None
        if bad:
            code = item.status if item.status != judge.OK else (reason or "policy")
            why = _ok_why(item, reason) if reason else (
                f"made {item.policy.now} by the policy: {item.policy.where}" if item.policy is not None else "")
            found.append(Decision("items", index, FAILED, code, why))
        elif item.status == judge.UNKNOWN:
            found.append(Decision("items", index, SKIPPED, item.status, item.reason))
        elif item.status != judge.OK:
            why = (f"made {item.policy.now} by the policy: {item.policy.where}" if item.policy is not None
                   else "tolerated by --fail-on")
            found.append(Decision("items", index, PASSED, item.status, why))
    for index, item in enumerate(getattr(report, "suppressed", ()) or ()):
        where = item.policy.where if item.policy is not None else "the policy"
        found.append(Decision("suppressed", index, PASSED, item.status, f"ignored by the policy: {where}"))
    return Verdict("verify", failing, tuple(found), tuple(reasons) + in_flight(report))


def _ok_why(item, reason) -> str:
    from kubectl_kvcache.judge import verify as judge

    if reason == judge.CONTRADICTED:
        seen = item.observed
        said = getattr(seen, "dtype", None) or getattr(seen, "resolved", None)
        source = "its /metrics" if getattr(seen, "source", None) == "metrics" else "its log"
        return f"the engine reports {said!r} ({source}), the prediction is {item.effective!r}"
    if reason == judge.STARTUP_FAILED:
        line = getattr(item.exit_cause, "line", "")
        return "its engine died at start-up after its arguments were parsed" + (f": {line}" if line else "")
    return "OK as rendered, but its deployment still rolls it (not running and ready, or an older render)"


def ok_fix(item, reason) -> str:
    """The next step for an OK row that fails (its own `fix` is empty: OK needs none)."""
    from kubectl_kvcache.judge import verify as judge

    where = f"-n {item.namespace} {item.pod}" if item.pod else f"-n {item.namespace}"
    if reason == judge.CONTRADICTED:
        return (f"compare the engine's own line with the argv (kubectl kvcache verify {where} --observe -o "
                f"describe): the plugin's model is wrong or the engine rewrote the value after its parse")
    if reason == judge.STARTUP_FAILED:
        container = f" -c {item.container}" if item.container else ""
        return f"read why it died: kubectl logs {where}{container} --previous"
    return f"let the rollout finish: kubectl kvcache verify -n {item.namespace} --wait"


def check_fails_on(strict: bool = False) -> tuple[str, ...]:
    """The severities that fail `check`: errors; warnings too with --strict."""
    from kubectl_kvcache.judge import checks

    return (checks.ERROR, checks.WARNING) if strict else (checks.ERROR,)


def check(report, strict: bool = False, reasons: tuple[Reason, ...] = ()) -> Verdict:
    """check's verdict: an error finding fails (a warning too with --strict); an `unchecked`
    finding that does not fail is not decided. A scope not read fails (--strict or not)."""
    failing = check_fails_on(strict)
    found = []
    for index, f in enumerate(report.findings):
        if f.severity in failing:
            found.append(Decision("findings", index, FAILED, f.code))
        elif f.code == "unchecked":
            found.append(Decision("findings", index, SKIPPED, f.code, f.message))
    for index, f in enumerate(getattr(report, "suppressed", ()) or ()):
        where = f.policy.where if f.policy is not None else "the policy"
        found.append(Decision("suppressed", index, PASSED, f.code, f"ignored by the policy: {where}"))
    return Verdict("check", failing, tuple(found), tuple(reasons))


BINDINGS_FAIL_ON = ("a rejected dtype, a missing Binding, a claimed domain",)
ROLES_FAIL_ON = ("an error role (the engine rejects it, or it differs from its Binding)",)


def bindings(report, reasons: tuple[Reason, ...] = ()) -> Verdict:
    """bindings' verdict: a finding whose code's registry row says so fails
    (checks.BINDING_FAILURES: a rejected dtype, a missing Binding, a claimed domain), and with it
    the Binding it is about (a missing Binding: through the users naming it); a Binding whose
    verdict is UNKNOWN is not decided. A failing finding about no Binding listed (-l kept the
    user, not the Binding) stays a failure of its own. A scope not read fails it."""
    from kubectl_kvcache.judge import checks

    failing: dict[tuple, list] = {}
    for index, f in enumerate(report.findings):
        if f.code in checks.BINDING_FAILURES:
            failing.setdefault((f.namespace, f.kind, f.name, f.code == "binding-missing"), []).append((index, f))
    found: list[Decision] = []
    shown: set[tuple] = set()
    for index, entry in enumerate(report.bindings):
        keys = [(entry.namespace, "KVCachePoolBinding", entry.name, False)]
        if entry.binding is None:
            keys = [(u.namespace, u.kind, u.name, True) for u in entry.uses]
        hits = [hit for k in keys for hit in failing.get(k, ())]
        shown.update(k for k in keys if k in failing)
        if hits:
            found.append(Decision("bindings", index, FAILED, hits[0][1].code, "" if entry.binding is not None else
                                  "no such KVCachePoolBinding exists, but it is named"))
        elif entry.binding is None:
            found.append(Decision("bindings", index, PASSED, "binding-missing",
                                  "no such KVCachePoolBinding exists, but its finding was ignored by the policy"))
        elif entry.says("UNKNOWN"):
            found.append(Decision("bindings", index, SKIPPED, "UNKNOWN"))
    for key, hits in failing.items():       # each failing finding; counted when no Binding shows it
        found += [Decision("findings", index, FAILED, f.code, counted=key not in shown) for index, f in hits]
    return Verdict("bindings", BINDINGS_FAIL_ON, tuple(found), tuple(reasons))


def roles(report, reasons: tuple[Reason, ...] = ()) -> Verdict:
    """roles' verdict: an error role fails; one whose verdict is UNKNOWN is not decided. A scope
    not read fails it."""
    from kubectl_kvcache.judge import checks

    found = []
    for index, entry in enumerate(report.roles):
        if entry.severity == checks.ERROR:
            found.append(Decision("roles", index, FAILED, entry.verdict))
        elif entry.verdict == "UNKNOWN":
            found.append(Decision("roles", index, SKIPPED, entry.verdict))
    return Verdict("roles", ROLES_FAIL_ON, tuple(found), tuple(reasons))


# findings about the state of the whole scope, not about a row bindings or roles lists: those two
# views fail on them as run reasons (check fails on them as the error findings they are), so no
# view of the judgement passes while the Setting is in flight or a recovery stopped part-way
SCOPE_STATE = (SETTING_IN_FLIGHT, RECOVERY)


def _scope_state(report, counted=frozenset()) -> tuple[Reason, ...]:
    """The SCOPE_STATE findings of `report` as failing run reasons (`counted`: codes the view
    fails on as findings already)."""
    return tuple(Reason(f.code, f.kind, f.name, f.namespace, f.message, f.fix or "", True)
                 for f in report.findings if f.code in SCOPE_STATE and f.code not in counted)


def _bindings_view(report, strict, reasons):
    from kubectl_kvcache.judge import checks

    return bindings(report, tuple(reasons) + _scope_state(report, checks.BINDING_FAILURES))


# check's three views of one judgement, each with its own rule: (report, strict, reasons) -> Verdict
_CHECK_VIEWS = {"check": lambda report, strict, reasons: check(report, strict, reasons),
                "bindings": _bindings_view,
                "roles": lambda report, strict, reasons: roles(report, tuple(reasons) + _scope_state(report))}


def of_check_view(view: str, report, strict: bool = False, reasons: tuple[Reason, ...] = ()) -> Verdict:
    """The verdict of one of check's three views (check, bindings, roles) of one judgement."""
    return _CHECK_VIEWS[view](report, strict, reasons)


def worst(codes) -> int:
    """Several contexts' exit code: the worst (exitcodes.worst)."""
    return exitcodes.worst(codes)


def wait(report, outcome: str, left=(), fail_on=(), text: str = "") -> Verdict:
    """The verdict a --wait run ends with: the rollout's, whatever --fail-on says (docs/verify.md):
    done when it completed (`outcome` judge/rollout.COMPLETE); else each replica `left` (not done,
    or confirmed rejected) of a deployment followed fails and so does the ending itself (`text`:
    why it ended). Rows of no deployment followed (injected Pods) are shown, not waited for: not
    decided. (--watch alone, at --timeout, ends with verify's verdict: cli/flows/verify.decide.)"""
    from kubectl_kvcache.judge import rollout, verify as judge

    followed = {(d.namespace, d.name) for d in report.deployments}
    keys = {i.key for i in left}
    found = []
    for index, item in enumerate(report.items):
        if not (item.owner and (item.namespace, item.deployment) in followed):
            found.append(Decision("items", index, SKIPPED, item.status,
                                  "not waited for: --wait follows pool-attached deployments' replicas"))
        elif outcome != rollout.COMPLETE and item.key in keys:
            code = item.status if item.status != judge.OK else (judge.ok_failure(item) or judge.ROLLING)
            found.append(Decision("items", index, FAILED, code, f"not done when the wait ended: {item.progress}"))
    reasons = () if outcome == rollout.COMPLETE else (ended(outcome, text or REASON_MEANINGS.get(
        WAIT + outcome, f"--wait ended: {outcome}")),) + in_flight(report)
    return Verdict("verify", (), tuple(found), reasons)
