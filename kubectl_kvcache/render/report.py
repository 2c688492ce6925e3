"""What a report says, for the document formats (-o markdown for a change ticket, -o junit for a CI's
test reporter): what was checked, the verdict, and one case per thing judged (a replica for
verify, an object for check, a Binding for bindings, a role for roles) with its reason and fix.
The printers (render/formats/markdown.py, junit.py) only lay this out, so both always agree.

A case fails exactly when it makes the command's exit code 1 (verify's --fail-on, check's
--strict); what was not decided (UNKNOWN, `unchecked`) and does not fail is `skipped`, never a
pass; findings that fail nothing stay on the case as notes. Text here is raw: each printer
escapes it for its format."""

from __future__ import annotations

from kubectl_kvcache import __version__
from kubectl_kvcache.record import Record

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class Subject(Record):
    """What a run looked at and how it was asked for: the command line (secrets replaced by
    references), the context named by --context (None: the kubeconfig's current one), the input
    (cluster or files), the namespace (None: all), and what makes a case fail."""

    __slots__ = ("command", "context", "files", "source", "namespace", "failing")

    def __init__(self, command: str = "", context: str | None = None, files: tuple[str, ...] = (),
                 source: str = "cluster", namespace: str | None = None, failing: tuple[str, ...] = ()):
        self.command = command
        self.context = context
        self.files = files
        self.source = source
        self.namespace = namespace
        self.failing = failing      # verify: statuses; check: severities; bindings, roles: their rule


class Case(Record):
    """One thing judged. `suite`: what it is grouped under (a namespace); `context`: the kubeconfig
    context it came from, on a multi-context run (items carrying a `context` field)."""

    __slots__ = ("suite", "name", "kind", "outcome", "status", "summary", "reason", "fix", "notes", "context")

    def __init__(self, suite: str, name: str, kind: str, outcome: str, status: str, summary: str = "",
                 reason: str = "", fix: str = "", notes: tuple[tuple[str, str, str], ...] = (),
                 context: str | None = None):
        self.suite = suite
        self.name = name
        self.kind = kind            # the object's kind as the operator names it (Pod, KVCachePoolBinding, ...)
        self.outcome = outcome      # PASSED, FAILED, SKIPPED
        self.status = status        # the command's own word: OK, MISMATCH, error, REJECTED by ...
        self.summary = summary      # one line: what is wrong (the failure's message)
        self.reason = reason
        self.fix = fix
        self.notes = notes          # (severity, code, message + fix) of findings that fail nothing
        self.context = context


class Document(Record):
    """A whole report: its title, the facts of what was checked, the verdict, the cases, and for
    verify the per-deployment progress; `headers`/`rows`: every row as the table has it (None:
    the cases hold them all)."""

    __slots__ = ("command", "title", "facts", "verdict", "counts", "cases", "progress", "headers", "rows",
                 "subject", "version")

    def __init__(self, command, title, facts, verdict, counts, cases, progress, headers, rows, subject):
        self.command = command      # verify, check, bindings, roles
        self.title = title
        self.facts = facts          # ((label, words, data), ...): the plugin's words, then data from the input
        self.verdict = verdict      # PASSED or FAILED
        self.counts = counts        # ((word, n), ...) for the verdict line
        self.cases = cases
        self.progress = progress    # verify: (headers, rows); else None
        self.headers = headers
        self.rows = rows
        self.subject = subject
        self.version = __version__


def document(view, report, subject: Subject | None) -> Document:
    from kubectl_kvcache.render import checks, verify

    subject = subject or Subject()
    builder = {id(verify.VIEW): _verify, id(checks.CHECK): _check, id(checks.BINDINGS): _bindings,
               id(checks.ROLES): _roles}.get(id(view))
    if builder is None:
        raise ValueError("this view has no document form")
    command, title, facts, counts, cases, progress = builder(report, subject)
    verdict = FAILED if any(c.outcome == FAILED for c in cases) else PASSED
    # every row with the wide columns: a report is read once, in full, not at a terminal
    headers = [h.upper() for h in view.headers(True)]
    # check's rows are its findings, every one already a failure or a note of its case
    rows = None if command == "check" else view.cells(report, True)
    facts = _input_facts(subject) + facts
    return Document(command, title, tuple(facts), verdict, tuple(counts), tuple(cases), progress, headers, rows,
                    subject)


# -- what was checked ------------------------------------------------------------------------

def fact_text(fact) -> str:
    """A fact as one plain line (its words, then its data)."""
    _, words, data = fact
    return " ".join(p for p in (words, ", ".join(data)) if p)


def _input_facts(subject):
    if subject.source == "file":
        source = ("saved objects:", tuple(subject.files))
    elif subject.context:
        source = ("the cluster of kubeconfig context", (subject.context,))
    else:
        source = ("the cluster of the kubeconfig's current context", ())
    namespaces = ("namespace", (subject.namespace,)) if subject.namespace else ("every namespace", ())
    return [("Input",) + source, ("Namespaces",) + namespaces]


def _seen(names):
    return tuple(sorted({n for n in names if n}))


def _context(obj):
    """The context a row came from (multi-context runs put it on each item), else None."""
    return getattr(obj, "context", None)


def _suite(context, namespace):
    where = namespace or "cluster-scoped"
    return f"{context}/{where}" if context else where


def _setting_text(on, source):
    where = {"cluster": "read from the cluster", "flag": "assumed with --assume-setting, not read",
             "assumed": "not in the input: the operator's default", "default": "the Setting does not exist: "
             "the operator's default", "file": "read from the input"}.get(source, source)
    word = "on" if on else ("off" if on is not None else "unreadable")
    return f"{word} ({where})"


# -- verify ----------------------------------------------------------------------------------

def _verify(report, subject):
    from kubectl_kvcache.judge import verify as judge
    from kubectl_kvcache.render import verify as view

    failing = set(subject.failing or (s for s in judge.STATUSES if s != judge.OK))
    releases = sorted({view.version_label(i.engine, i.engine_version, i.version_source)
                       for i in report.items if i.engine and i.engine_version})
    facts = [("Setting", _setting_text(report.setting_value, report.setting_source), ()),
             ("Engine releases", "" if releases else "none", tuple(releases)),
             ("Judged", f"{len(report.items)} engine {'replica' if len(report.items) == 1 else 'replicas'}"
                        + (" in" if report.items else ""), _seen(i.namespace for i in report.items)),
             ("Fails on", ", ".join(s for s in judge.STATUSES if s in failing), ())]
    cases = []
    for item in report.items:
        where = f"ModelDeployment {item.deployment}" + (f", role {item.role}" if item.role else "") \
            if item.deployment else "injected Pod"
        if item.pod is None:
            name = f"replica {item.slot + 1 if item.slot is not None else '?'} of {where} (no Pod)"
        else:
            name = f"Pod {item.pod}" + (f" container {item.container}" if item.container else "") + f" ({where})"
        if item.status == judge.OK:
            outcome = PASSED
        elif item.status in failing:
            outcome = FAILED
        else:
            outcome = SKIPPED if item.status == judge.UNKNOWN else PASSED
        summary = f"{item.status}: Binding {item.binding or '<none>'} expects {_value(item.expected)}, " \
                  + _runs(item, judge)
        if outcome == PASSED and item.status != judge.OK:
            summary += " (tolerated by --fail-on)"
        cases.append(Case(_suite(_context(item), item.namespace), name, "Pod", outcome, item.status, summary,
                          item.reason, item.fix, context=_context(item)))
    counts = report.summary()
    progress = None
    if report.accounted:
        rows = [[f"{d.namespace}/{d.name}", d.binding, d.expected, f"{d.counts[judge.DONE]}/{d.desired}",
                 d.counts[judge.TO_ROLL], d.counts[judge.CRASHING], d.counts[judge.STUCK],
                 "yes" if d.complete else "no"] for d in report.deployments]
        progress = (["DEPLOYMENT", "BINDING", "EXPECTED", "DONE", "TO ROLL", "CRASH-LOOPING", "STUCK", "COMPLETE"],
                    rows)
    bad = sum(1 for c in cases if c.outcome == FAILED)
    title = f"verify: {bad} of {len(cases)} {'replica' if len(cases) == 1 else 'replicas'} not OK" if bad else \
        f"verify: {len(cases)} {'replica' if len(cases) == 1 else 'replicas'}, none failing"
    return "verify", title, facts, [(s, counts[s]) for s in judge.STATUSES if counts[s]], cases, progress


def _value(v):
    return f"'{v}'" if v is not None else "nothing"


def _runs(item, judge):
    if item.effective is not None:
        return f"the engine runs with '{item.effective}'"
    return {judge.REJECTED: "the engine exits on its arguments", judge.NO_POD: "no Pod runs it yet"}.get(
        item.status, "what the engine runs with is not known")


# -- check, bindings, roles ------------------------------------------------------------------

def _check_facts(report):
    from kubectl_kvcache.render import checks as view

    s = report.setting
    releases = sorted({view.engine_label(e) for b in report.bindings for e in b.engines()}
                      | {view.engine_label(r.engine) for r in report.roles if r.engine})
    checked = report.checked
    return [("Setting", _setting_text(s.get("on"), s.get("source")), ()),
            ("Engine releases", "" if releases else "none", tuple(releases)),
            ("Judged", f"{checked.get('bindings', 0)} KVCachePoolBindings, {checked.get('deployments', 0)} "
                       f"pool-attached ModelDeployments, {checked.get('optIns', 0)} injection opt-ins", ())]


def _finding_text(f):
    return f.message + (f" Fix: {f.fix}" if f.fix else "")


def _check(report, subject):
    from kubectl_kvcache.judge import checks

    failing = set(subject.failing or (checks.ERROR,))
    objects = {}        # (context, kind, namespace, name) -> [findings]: every object judged, in a stable order
    for entry in report.bindings:
        if entry.binding is not None:
            objects.setdefault((_context(entry), "KVCachePoolBinding", entry.namespace, entry.name), [])
        for use in entry.uses:
            objects.setdefault((_context(entry), use.kind, use.namespace, use.name), [])
    for f in report.findings:
        objects.setdefault((_context(f), f.kind, f.namespace, f.name), []).append(f)
    cases = []
    for (context, kind, namespace, name), found in objects.items():
        bad = [f for f in found if f.severity in failing]
        undecided = [f for f in found if f.code == "unchecked" and f not in bad]
        rest = tuple((f.severity, f.code, _finding_text(f)) for f in found if f not in bad)
        if bad:
            outcome, status = FAILED, bad[0].severity
            summary = "; ".join(f"{f.code}: {f.message}" for f in bad)
            fix = " ".join(f.fix for f in bad if f.fix)
            reason = "; ".join(f"{f.code}: {f.message}" for f in bad) if len(bad) > 1 else ""
        elif undecided:
            outcome, status, summary, reason, fix = SKIPPED, "unchecked", undecided[0].message, "", undecided[0].fix
        else:
            outcome = PASSED
            status = found[0].severity if found else "OK"
            summary, reason, fix = "", "", ""
        cases.append(Case(_suite(context, namespace), f"{kind} {name}", kind, outcome, status, summary, reason, fix,
                          rest, context))
    counts = report.summary()
    title = f"check: {counts[checks.ERROR]} errors, {counts[checks.WARNING]} warnings"
    return ("check", title, _check_facts(report) + [("Fails on", ", ".join(s for s in checks.SEVERITIES
                                                                             if s in failing), ())],
            [(s, counts[s]) for s in checks.SEVERITIES], cases, None)


def _bindings(report, subject):
    from kubectl_kvcache.judge import checks

    cases = []
    for entry in report.bindings:
        found = [f for f in report.findings if (f.kind, f.namespace, f.name) ==
                 ("KVCachePoolBinding", entry.namespace, entry.name)]
        failed = entry.binding is None or any(f.code in checks.BINDING_FAILURES for f in found)
        undecided = "UNKNOWN" in entry.verdict
        outcome = FAILED if failed else (SKIPPED if undecided else PASSED)
        bad = [f for f in found if f.code in checks.BINDING_FAILURES]
        reason = "; ".join(f"{f.code}: {f.message}" for f in bad) or \
            ("no such KVCachePoolBinding exists, but it is named" if entry.binding is None else "")
        fix = " ".join(f.fix for f in bad if f.fix)
        if entry.suggestion:
            fix = (fix + " " if fix else "") + f"(suggested dtype: {entry.suggestion})"
        notes = tuple((f.severity, f.code, _finding_text(f)) for f in found if f not in bad)
        cases.append(Case(_suite(_context(entry), entry.namespace), f"KVCachePoolBinding {entry.name}",
                          "KVCachePoolBinding", outcome, entry.verdict,
                          f"{entry.verdict}" if outcome != PASSED else "", reason, fix, notes, _context(entry)))
    failed = sum(1 for c in cases if c.outcome == FAILED)
    return ("bindings", f"bindings: {failed} of {len(cases)} failing", _check_facts(report)
            + [("Fails on", "a rejected dtype, a missing Binding, a claimed domain", ())],
            [("failing", failed), ("total", len(cases))], cases, None)


def _roles(report, subject):
    from kubectl_kvcache.judge import checks

    cases = []
    for entry in report.roles:
        if entry.severity == checks.ERROR:
            outcome = FAILED
        elif entry.verdict == "UNKNOWN":
            outcome = SKIPPED
        else:
            outcome = PASSED
        summary = f"{entry.verdict}: today {entry.today}, after the upgrade {entry.after}"
        fix = " ".join(f.fix for f in report.findings if f.fix and (f.kind, f.namespace, f.name) ==
                       ("ModelDeployment", entry.namespace, entry.deployment) and f"role {entry.role} " in f.message)
        cases.append(Case(_suite(_context(entry), entry.namespace),
                          f"ModelDeployment {entry.deployment} role {entry.role}", "ModelDeployment", outcome,
                          entry.verdict, summary, entry.reason, fix,
                          ((entry.severity, entry.type, entry.reason),) if outcome == PASSED else (),
                          _context(entry)))
    failed = sum(1 for c in cases if c.outcome == FAILED)
    return ("roles", f"roles: {failed} of {len(cases)} failing", _check_facts(report)
            + [("Fails on", "an error role (the engine rejects it, or it differs from its Binding)", ())],
            [("failing", failed), ("total", len(cases))], cases, None)
