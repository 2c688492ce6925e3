"""What a report says, for the document formats (-o markdown for a change ticket, -o junit for a CI's
test reporter, -o sarif for code scanning): what was checked, the verdict, one case per thing
judged (a replica for verify, an object for check, a Binding for bindings, a role for roles)
with its reason and fix, and the findings one by one (each with its code, where it is and a key
that outlives Pod names) with the registry rows of their codes. The printers
(render/formats/markdown.py, junit.py, sarif.py) only lay this out, so they always agree.

Nothing here decides what fails: every outcome is read from the report's verdict
(judge/verdict.py), the record the exit code reads too, so a case fails exactly when it makes
the exit code 1; what was not decided (UNKNOWN, `unchecked`) and does not fail is `skipped`,
never a pass; findings that fail nothing stay on the case as notes; what was asked for and not
read (a namespace, a named Pod) is a case of its own. Text here is raw: each printer escapes it
for its format."""

from __future__ import annotations

from kubectl_kvcache import __version__
from kubectl_kvcache.record import Record

PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"     # ERROR: a context not read


class Subject(Record):
    """What a run looked at and how it was asked for: the command line (secrets replaced by
    references), the context named by --context (None: the kubeconfig's current one), the input
    (cluster or files), the namespace (None: all), and what makes a case fail."""

    __slots__ = ("command", "context", "files", "source", "namespace", "failing", "server", "time", "exit_code",
                 "origins")

    def __init__(self, command: str = "", context: str | None = None, files: tuple[str, ...] = (),
                 source: str = "cluster", namespace: str | None = None, failing: tuple[str, ...] = (),
                 server: str | None = None, time: str | None = None, exit_code: int | None = None,
                 origins: tuple = ()):
        self.command = command
        self.context = context
        self.files = files
        self.source = source
        self.namespace = namespace
        self.failing = failing      # verify: statuses; check: severities; bindings, roles: their rule
        self.server = server        # the API server read (its URL without userinfo); None: files
        self.time = time            # when it was read: RFC 3339, UTC (now())
        self.exit_code = exit_code  # what the run exits with (None: not known when the report is printed)
        # where each object read from files starts: ((kind, namespace, name), records.Origin) pairs
        # (load/manifests keeps them on the snapshot; a tuple, so the subject stays hashable)
        self.origins = origins


def now() -> str:
    """The time of a report, RFC 3339 in UTC to the second; $SOURCE_DATE_EPOCH (the
    reproducible-builds convention) fixes it, for reproducible reports and their tests."""
    import os
    import time

    try:
        seconds = int(os.environ["SOURCE_DATE_EPOCH"])
    except (KeyError, ValueError):
        seconds = int(time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def without_userinfo(url: str) -> str:
    """A server URL without any user:password@ (a kubeconfig's server may carry one)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = (rest if sep else url).partition("/")
    authority = authority.rpartition("@")[2]
    return (scheme + sep if sep else "") + authority + slash + path


def engine_data_fact():
    """`built-in` (and the added files): the engine data the judgement used."""
    from kubectl_kvcache import engine

    added = sorted({f for e in engine.ENGINES for _, f in engine.known_releases(e) if f})
    counts = ", ".join(f"{engine.DISPLAY_NAMES[e]} {sum(1 for _, f in engine.known_releases(e) if not f)} releases"
                       for e in engine.ENGINES)
    return ("Engine data", f"built-in ({counts})" + (" and added from" if added else ""), tuple(added))


class Case(Record):
    """One thing judged. `suite`: what it is grouped under (a namespace); `context`: the kubeconfig
    context it came from, on a multi-context run (items carrying a `context` field). A verify
    replica's case also says where it is as data, raw, for the formats that count replicas by it
    (-o openmetrics): `place` ((namespace, N), (deployment, N), (role, N), (binding, N)) and
    `tokens`, the KV-cache capacity its engine said after --observe (None: not read)."""

    __slots__ = ("suite", "name", "kind", "outcome", "status", "summary", "reason", "fix", "notes", "context",
                 "said", "place", "tokens", "refs", "ignored")

    def __init__(self, suite: str, name: str, kind: str, outcome: str, status: str, summary: str = "",
                 reason: str = "", fix: str = "", notes: tuple[tuple[str, str, str, str], ...] = (),
                 context: str | None = None, said: str = "", place: tuple[tuple[str, str], ...] = (),
                 tokens: int | None = None, refs: tuple[tuple[str, str | None, str], ...] = (),
                 ignored: str | None = None):
        self.suite = suite
        self.name = name
        self.kind = kind            # the object's kind as the operator names it (Pod, KVCachePoolBinding, ...)
        self.outcome = outcome      # PASSED, FAILED, SKIPPED
        self.status = status        # the command's own word: OK, MISMATCH, error, REJECTED by ...
        self.summary = summary      # one line: what is wrong (the failure's message)
        self.reason = reason
        self.fix = fix
        self.notes = notes          # (severity, code, message, fix) of findings that fail nothing
        self.context = context
        self.said = said            # the engine's own line (a crashed replica's error, render.verify.engine_said)
        self.place = place
        self.tokens = tokens
        self.refs = refs            # (kind, namespace, name) of the objects it is about (verify: the Pod, its deployment)
        self.ignored = ignored      # the policy rule that ignored it and its reason (None: not ignored)


class Annotation(Record):
    """One result annotated on its object, as every per-result consumer (SARIF, CI annotations)
    takes it: built from check's judge.checks.Finding or from verify's item (not a second kind of
    finding: a view of either, with its place, its identity across runs and whether it failed). `code`: check's
    finding code, verify's status; `severity`: the command's word for it (error, warning, info;
    verify: the status); `failed`: it makes the exit code 1; `path`: where it is, outermost
    first, as (kind, name) pairs (context, namespace, the object, role, replica); `key`: its
    identity across runs, built without Pod names or positions (a rollout renames every Pod);
    `file`: the -f file it was read from, when known, and `line` the line its object starts on
    there (None: not known); `suppression`: the policy rule that ignored
    it and its reason (None: not ignored; an ignored finding never fails)."""

    __slots__ = ("code", "severity", "failed", "message", "fix", "path", "key", "file", "suppression", "said",
                 "line", "undecided")

    def __init__(self, code: str, severity: str, failed: bool, message: str, fix: str,
                 path: tuple[tuple[str, str], ...], key: str, file: str | None = None,
                 suppression: str | None = None, said: str = "", line: int | None = None,
                 undecided: bool = False):
        self.code = code
        self.severity = severity
        self.failed = failed
        self.message = message
        self.fix = fix
        self.path = path
        self.key = key
        self.file = file
        self.suppression = suppression
        self.said = said            # the engine's own line, where it gave one (verify: a crashed replica)
        self.line = line
        self.undecided = undecided  # the verdict left it undecided (check's `unchecked`): fails nothing, passes nothing


class Rule(Record):
    """A finding code's registry row as reports name it: the code, its usual severity, what it means."""

    __slots__ = ("code", "severity", "title")

    def __init__(self, code: str, severity: str, title: str):
        self.code = code
        self.severity = severity
        self.title = title


class Document(Record):
    """A whole report: its title, the facts of what was checked, the verdict, the cases, and for
    verify the per-deployment progress; `headers`/`rows`: every row as the table has it (None:
    the cases hold them all); `findings` one by one and the `rules` of every code the command
    may report."""

    __slots__ = ("command", "title", "facts", "verdict", "counts", "cases", "progress", "headers", "rows",
                 "subject", "version", "findings", "rules", "exit_code")

    def __init__(self, command, title, facts, verdict, counts, cases, progress, headers, rows, subject,
                 findings=(), rules=(), exit_code=None):
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
        self.findings = findings
        self.rules = rules
        self.exit_code = exit_code  # the run's, as its verdict says (several contexts: the worst)


def verdict_of(view, report):
    """The report's verdict (judge/verdict.py) for `view`'s command: never decided here."""
    verdict = getattr(report, "verdict", None)
    if verdict is None or verdict.command != view.document:
        raise ValueError(f"the {view.document} report has no verdict of its own: judge.verdict decides it first")
    return verdict


def document(view, report, subject: Subject | None) -> Document:
    """The report of `view`'s command (the view names it: View.document)."""
    subject = subject or Subject()
    if view.document not in _BUILDERS:
        raise ValueError("this view has no document form")
    builder, list_findings, rules, lists_rows = _BUILDERS[view.document]
    verdict = verdict_of(view, report)
    command, title, facts, counts, cases, progress = builder(report, subject, verdict)
    if verdict.failed and not any(c.outcome == FAILED for c in cases):     # no row fails: the run's reasons do
        title = f"{command}: " + "; ".join(r.message for r in verdict.reasons if r.fails)
    cases += [_reason_case(r, None) for r in verdict.reasons]
    # every row with the wide columns: a report is read once, in full, not at a terminal
    headers = [h.upper() for h in view.headers(True)]
    rows = view.cells(report, True) if lists_rows else None
    facts = _input_facts(subject) + facts
    found = tuple(list_findings(report, subject, verdict)) + tuple(_reason_finding(r, command) for r in verdict.reasons)
    return Document(command, title, tuple(facts), FAILED if verdict.failed else PASSED, tuple(counts), tuple(cases),
                    progress, headers, rows, subject, found, rules() + _reason_rules(verdict.reasons),
                    verdict.code)


def _reason_case(reason, context):
    """What the run asked for and did not read (a namespace, a named Pod), or a --wait that ended
    before the rollout completed: a case of its own, failing when the verdict says it fails."""
    return Case(_suite(context, reason.namespace or (reason.name if reason.kind == "Namespace" else "")),
                f"{reason.kind} {reason.name}", reason.kind, FAILED if reason.fails else SKIPPED, reason.code,
                reason.message, "", reason.fix, context=context,
                refs=((reason.kind, None if reason.kind == "Namespace" else reason.namespace, reason.name),))


def _reason_finding(reason, command):
    path: tuple[tuple[str, str], ...] = (("namespace", reason.namespace),) if reason.namespace else ()
    path += ((reason.kind, reason.name),)
    return Annotation(reason.code, "error" if reason.fails else "warning", reason.fails, reason.message, reason.fix,
                      path, f"{command}|{reason.code}|{reason.namespace or ''}|{reason.kind}/{reason.name}")


def _reason_rules(reasons):
    from kubectl_kvcache.judge.verdict import REASON_MEANINGS

    codes = sorted({r.code for r in reasons})
    return tuple(Rule(c, "error", REASON_MEANINGS.get(c, c)) for c in codes)


def fleet_document(view, fleet, subject: Subject, exit_code: int | None = None) -> Document:
    """One document over the contexts of a --contexts/--all-contexts run: every context's cases
    (their suites `CONTEXT/NAMESPACE`, their names as one context names them), one ERROR case
    per context that could not be read, the facts that differ per context labelled with it."""
    docs, cases, errors, findings = [], [], [], []
    for r in fleet.results:
        if r.error is not None:
            errors.append(Case(r.context, f"context {r.context}", "Context", ERROR, "error", r.error,
                               context=r.context))
            continue
        doc = document(view, r.report, subject.replace(context=r.context, server=getattr(r, "server", None)))
        docs.append((r.context, doc))
        cases += [c.replace(suite=_suite(r.context, c.suite), context=r.context) for c in doc.cases]
        findings += [f.replace(path=(("context", r.context),) + f.path, key=f"{r.context}|{f.key}")
                     for f in doc.findings]
    command = view.document
    names = tuple(r.context for r in fleet.results)
    facts = [("Input", "the clusters of kubeconfig contexts", names)]
    if subject.time:
        facts.append(("Time", "", (subject.time,)))
    facts.append(engine_data_fact())
    shared = ("Input", "Namespaces", "Time", "Engine data", "Fails on")
    for context, doc in docs:
        facts += [(f"{label} ({context})", words, data) for label, words, data in doc.facts if label not in shared]
    if docs:
        facts += [f for f in docs[0][1].facts if f[0] in ("Namespaces", "Fails on")]
    counts: dict = {}
    for _, doc in docs:
        for word, n in doc.counts:
            counts[word] = counts.get(word, 0) + n
    if errors:
        counts["unreadable contexts"] = len(errors)
    bad = sum(1 for c in cases if c.outcome == FAILED)
    title = f"{command} across {len(names)} {'context' if len(names) == 1 else 'contexts'}: {bad} of {len(cases)} " \
            f"failing" + (f", {len(errors)} not read" if errors else "")
    progress = None
    progressed = [(ctx, d.progress) for ctx, d in docs if d.progress is not None]
    if progressed:
        progress = (["CONTEXT"] + list(progressed[0][1][0]), [[ctx] + list(row) for ctx, p in progressed for row in p[1]])
    headers, rows = None, None
    with_rows = [(ctx, d) for ctx, d in docs if d.rows is not None]
    if with_rows:
        headers = ["CONTEXT"] + list(with_rows[0][1].headers)
        rows = [[ctx] + list(row) for ctx, d in with_rows for row in d.rows]
    elif docs:
        headers = docs[0][1].headers
    verdict = FAILED if errors or any(d.verdict == FAILED for _, d in docs) else PASSED
    if exit_code is None:
        exit_code = fleet.code      # the run's (cli/flows/fleet.run: the worst of the contexts')
    rules = {r.code: r for _, d in docs for r in d.rules} or {r.code: r for r in _BUILDERS[command][2]()}
    return Document(command, title, tuple(facts), verdict, tuple(counts.items()), tuple(errors + cases), progress,
                    headers, rows, subject, tuple(findings), tuple(rules.values()), exit_code)


# -- what was checked ------------------------------------------------------------------------

def fact_text(fact) -> str:
    """A fact as one plain line (its words, then its data)."""
    _, words, data = fact
    return " ".join(p for p in (words, ", ".join(data)) if p)


def _input_facts(subject):
    source: tuple[str, tuple]
    if subject.source == "file":
        source = ("saved objects:", tuple(subject.files))
    elif subject.context:
        source = ("the cluster of kubeconfig context", (subject.context,))
    else:
        source = ("the cluster of the kubeconfig's current context", ())
    namespaces: tuple[str, tuple] = ("namespace", (subject.namespace,)) if subject.namespace else ("every namespace", ())
    facts = [("Input",) + source]
    if subject.server:
        facts.append(("Server", "", (without_userinfo(subject.server),)))
    facts.append(("Namespaces",) + namespaces)
    if subject.time:
        facts.append(("Time", "", (subject.time,)))
    return facts + [engine_data_fact()]


def _seen(names):
    return tuple(sorted({n for n in names if n}))


def _context(obj):
    """The context a row came from (multi-context runs put it on each item), else None."""
    return getattr(obj, "context", None)


def _suite(context, namespace):
    where = namespace or "cluster-scoped"
    return f"{context}/{where}" if context else where


def _setting_text(on, source, in_flight=None):
    where = {"cluster": "read from the cluster", "flag": "assumed with --assume-setting, not read",
             "assumed": "not in the input: the operator's default", "default": "the Setting does not exist: "
             "the operator's default", "file": "read from the input"}.get(source, source)
    word = "on" if on else ("off" if on is not None else "unreadable")
    if in_flight:       # judge/setting.InFlight.to_dict(): spec.value asks another value, not taken in
        return (f"{word} as status.value reports it ({where}); in flight: spec.value asks "
                f"{in_flight['asks']!r}, not taken in yet")
    return f"{word} ({where})"


# -- verify ----------------------------------------------------------------------------------

def _verify(report, subject, verdict):
    from kubectl_kvcache.judge import verdict as decided, verify as judge
    from kubectl_kvcache.render import labels as view
    from kubectl_kvcache.render.labels import engine_said

    failing = set(verdict.failing)
    ignored = list(getattr(report, "suppressed", ()))      # a policy's ignored replicas: cases that pass, noted
    judged = report.items + ignored
    releases = sorted({view.release_label(i.engine, i.engine_version, i.version_source)
                       for i in judged if i.engine and i.engine_version})
    policy = [("Policy", report.policy.text(), ())] if getattr(report, "policy", None) is not None else []
    fails_on = ", ".join(s for s in judge.STATUSES if s in failing) if failing else \
        "a replica not done when the wait ended (--wait: the rollout decides)"
    flight = getattr(report, "in_flight", None)
    facts = [("Setting", _setting_text(report.setting_value, report.setting_source,
                                       flight.to_dict() if flight is not None else None), ()),
             ("Engine releases", "" if releases else "none", tuple(releases)),
             ("Judged", f"{len(judged)} engine {'replica' if len(judged) == 1 else 'replicas'}"
                        + (" in" if judged else ""), _seen(i.namespace for i in judged))] + policy + [
             ("Fails on", fails_on + (" (each as the policy sets it: an error fails)" if policy else ""), ())] + \
        _capacity_facts(report.items)
    cases = []
    names = replica_names(judged)
    judged_rows = [("items", n, i) for n, i in enumerate(report.items)] + \
        [("suppressed", n, i) for n, i in enumerate(ignored)]
    for where, index, item in judged_rows:
        name = names[id(item)]
        decision = verdict.of(where, index)
        outcome = decision.outcome
        pod = f"Pod {item.pod}" + (f" container {item.container}" if item.container else "") \
            if item.pod is not None else "no Pod"
        what = f"Binding {item.binding or '<none>'} expects {_value(item.expected)}, " + _runs(item, judge) \
            + f" ({pod})"
        summary = f"{item.status}: {what}"
        notes: tuple = ()
        reason, fix, status = item.reason, item.fix, item.status
        if where == "suppressed":
            summary += f" (ignored by the policy: {item.policy.where})"
            notes = ((f"suppressed {item.policy.was}", item.status, what + (f": {item.reason}" if item.reason else ""),
                      item.fix or ""),)
        elif outcome == decided.FAILED and item.status == judge.OK:
            # OK as predicted, and failing all the same (judge/verify.ok_failure): the verdict's reason
            status, summary = decision.code, f"{decision.code}: {what}"
            reason = decision.why
            fix = item.fix or decided.ok_fix(item, decision.code)
        elif outcome != decided.FAILED and decision.why and item.status != judge.OK:
            summary += f" ({decision.why})"
        cap = item.capacity
        refs = ((("Pod", item.namespace, item.pod),) if item.pod is not None else ()) + \
            ((("ModelDeployment", item.namespace, item.deployment),) if item.deployment else
             (((item.owner["kind"], item.namespace, item.owner["name"]),) if item.owner else ()))
        cases.append(Case(_suite(_context(item), item.namespace), name, "Pod", outcome, status, summary,
                          reason, fix, notes, context=_context(item), said=engine_said(item) or "",
                          place=(("namespace", item.namespace or ""), ("deployment", item.deployment or ""),
                                 ("role", item.role or ""), ("binding", item.binding or "")),
                          tokens=cap.tokens if cap is not None and not cap.conflict else None, refs=refs,
                          ignored=_suppression(item.policy) if where == "suppressed" else None))
    counts = report.summary()
    progress = None
    if report.accounted:
        rows = [[f"{d.namespace}/{d.name}", d.binding, d.expected, f"{d.counts[judge.DONE]}/{d.desired}",
                 d.counts[judge.TO_ROLL], d.counts[judge.NOT_CREATED], d.counts[judge.CRASHING], d.counts[judge.STUCK],
                 "yes" if d.complete else "no"] for d in report.deployments]
        progress = (["DEPLOYMENT", "BINDING", "EXPECTED", "DONE", "TO ROLL", "NO POD", "CRASH-LOOPING", "STUCK",
                     "COMPLETE"],
                    rows)
    bad = sum(1 for c in cases if c.outcome == FAILED)
    title = f"verify: {bad} of {len(cases)} {'replica' if len(cases) == 1 else 'replicas'} not OK" if bad else \
        f"verify: {len(cases)} {'replica' if len(cases) == 1 else 'replicas'}, none failing"
    extra = [(c, n) for c, n in verdict.counts().items() if c not in judge.STATUSES]   # OK, failing all the same
    return "verify", title, facts, [(s, counts[s]) for s in judge.STATUSES if counts[s]] + extra, cases, progress


def _capacity_facts(items):
    """After --observe: the KV-cache capacity each deployment's and each Binding's replicas hold
    together, as their engines said it (judge/capacity_sum.py; each replica's is its row's CAPACITY)."""
    from kubectl_kvcache.judge import capacity_sum

    if not capacity_sum.observed(items):
        return []
    sums = capacity_sum.totals(items)
    data = tuple(f"{kind} {g['namespace']}/{g['name']}: {capacity_sum.text(g)}"
                 for kind, key in (("deployment", "deployments"), ("binding", "bindings")) for g in sums[key])
    return [(CAPACITY_FACT, "the tokens the replicas' KV caches hold, as their engines said", data)]


CAPACITY_FACT = "Capacity"


def _replica_number(pod, prefix):
    """N of a Pod named `PREFIX-N` (the operator's ordinal Pods), else None."""
    head, _, tail = (pod or "").rpartition("-")
    return int(tail) if tail.isdigit() and head == prefix else None


_DEPLOYMENT_POD = None


def _workload_of(pod):
    """The workload a Pod's name is generated from: `NAME-<pod-template-hash>-<5 random>` (a
    Deployment's, through its ReplicaSet) or `NAME-<5 random>` is NAME; else the Pod's name."""
    import re

    global _DEPLOYMENT_POD
    _DEPLOYMENT_POD = _DEPLOYMENT_POD or re.compile(r"^(.+?)(-[bcdfghjklmnpqrstvwxz2456789]{6,10})?"
                                                    r"-[bcdfghjklmnpqrstvwxz2456789]{5}$")
    m = _DEPLOYMENT_POD.match(pod)
    return m.group(1) if m else pod


def replica_names(items) -> dict:
    """id(item) -> `namespace/deployment/role/N`: a replica's name that outlives its Pods (a
    rollout replaces every Pod, so CI history keyed on Pod names could never follow a case). N:
    the ordinal of a Pod named `deployment-role-N`, a missing replica's slot, else the Pod's rank
    by name among its role's other Pods; an injected Pod is `namespace/injected/owner/N`; a second
    engine container of one Pod adds `/container`."""
    groups: dict = {}
    for item in items:
        if item.deployment:
            key = (item.namespace, item.deployment, item.role or "-")
        else:
            owner = item.owner["name"] if item.owner else _workload_of(item.pod or "-")
            key = (item.namespace, "injected", owner)
        groups.setdefault(key, []).append(item)
    names = {}
    for key, members in groups.items():
        prefix = f"{key[1]}-{key[2]}" if key[1] != "injected" else None
        fixed = {}
        for item in members:
            number = item.slot if item.pod is None and item.slot is not None else _replica_number(item.pod, prefix)
            if number is not None:
                fixed[id(item)] = number
        used = set(fixed.values())
        pods = sorted({i.pod for i in members if id(i) not in fixed and i.pod is not None})
        free = (n for n in range(len(members) + len(used) + 1) if n not in used)
        ranks = {pod: next(free) for pod in pods}
        containers: dict = {}
        for item in members:
            containers.setdefault(item.pod, []).append(item)
        for item in members:
            number = fixed.get(id(item), ranks.get(item.pod))
            name = "/".join(str(p) for p in key) + f"/{number if number is not None else '?'}"
            if item.pod is not None and len(containers[item.pod]) > 1 and item.container:
                name += f"/{item.container}"
            names[id(item)] = name
    return names


def _value(v):
    return f"'{v}'" if v is not None else "nothing"


def _runs(item, judge):
    if item.effective is not None:
        return f"the engine runs with '{item.effective}'"
    return {judge.REJECTED: "the engine exits on its arguments", judge.NO_POD: "no Pod runs it yet"}.get(
        item.status, "what the engine runs with is not known")


# -- check, bindings, roles ------------------------------------------------------------------

def _check_facts(report):
    from kubectl_kvcache.render import labels as view

    s = report.setting
    releases = sorted({view.engine_label(e) for b in report.bindings for e in b.engines()}
                      | {view.engine_label(r.engine) for r in report.roles if r.engine})
    checked = report.checked
    return [("Setting", _setting_text(s.get("on"), s.get("source"), s.get("inFlight")), ()),
            ("Engine releases", "" if releases else "none", tuple(releases)),
            ("Judged", f"{checked.get('bindings', 0)} KVCachePoolBindings, {checked.get('deployments', 0)} "
                       f"pool-attached ModelDeployments, {checked.get('optIns', 0)} injection opt-ins", ())]


def _note(f):
    """(severity, code, message, fix) of a finding that fails nothing: the fix apart from the message."""
    return (f.severity, f.code, f.message, f.fix or "")


def count_text(n, word) -> str:
    """`4 errors`, `1 warning`, `3 info`, `2 MISMATCH`: a count and its word, the plural where English
    has one (a status word is a name: never pluralised)."""
    return f"{n} {word}" + ("s" if n != 1 and word in ("error", "warning", "replica", "pod") else "")


def _check(report, subject, verdict):
    from kubectl_kvcache.judge import checks, verdict as decided

    failing = set(verdict.failing)
    objects: dict = {}        # (context, kind, namespace, name) -> [(finding, outcome)]: every object judged, in order
    for entry in report.bindings:
        if entry.binding is not None:
            objects.setdefault((_context(entry), "KVCachePoolBinding", entry.namespace, entry.name), [])
        for use in entry.uses:
            objects.setdefault((_context(entry), use.kind, use.namespace, use.name), [])
    for n, f in enumerate(report.findings):
        objects.setdefault((_context(f), f.kind, f.namespace, f.name), []).append((f, verdict.outcome("findings", n)))
    ignored: dict[tuple, list] = {}        # a policy's ignored findings: notes of their object, never a failure
    for f in getattr(report, "suppressed", ()):
        objects.setdefault((_context(f), f.kind, f.namespace, f.name), [])
        ignored.setdefault((_context(f), f.kind, f.namespace, f.name), []).append(
            (f"suppressed {f.severity}", f.code, f.message, f.fix or ""))
    cases = []
    for (context, kind, namespace, name), found in objects.items():
        bad = [f for f, outcome in found if outcome == decided.FAILED]
        undecided = [f for f, outcome in found if outcome == decided.SKIPPED]
        rest = tuple(_note(f) for f, outcome in found if outcome != decided.FAILED) + \
            tuple(ignored.get((context, kind, namespace, name), ()))
        if bad:
            outcome, status = FAILED, bad[0].severity
            summary = "; ".join(f"{f.code}: {f.message}" for f in bad)
            fix = " ".join(f.fix for f in bad if f.fix)
            reason = "; ".join(f"{f.code}: {f.message}" for f in bad) if len(bad) > 1 else ""
        elif undecided:
            outcome, status, summary, reason, fix = SKIPPED, "unchecked", undecided[0].message, "", undecided[0].fix
        else:
            outcome = PASSED
            status = found[0][0].severity if found else "OK"
            summary, reason, fix = "", "", ""
        cases.append(Case(_suite(context, namespace), f"{kind} {name}", kind, outcome, status, summary, reason, fix,
                          rest, context))
    counts = report.summary()
    title = f"check: {count_text(counts[checks.ERROR], checks.ERROR)}, {count_text(counts[checks.WARNING], checks.WARNING)}"
    policy = [("Policy", report.policy.text(), ())] if getattr(report, "policy", None) is not None else []
    extra = [(c, n) for c, n in verdict.counts().items() if c in decided.UNREAD]
    return ("check", title, _check_facts(report) + policy + [("Fails on", ", ".join(s for s in checks.SEVERITIES
                                                                                      if s in failing), ())],
            [(s, counts[s]) for s in checks.SEVERITIES] + extra, cases, None)


def _bindings(report, subject, verdict):
    from kubectl_kvcache.judge import verdict as decided

    cases = []
    for index, entry in enumerate(report.bindings):
        decision = verdict.of("bindings", index)
        found = [(n, f) for n, f in enumerate(report.findings)
                 if (f.kind, f.namespace, f.name) == ("KVCachePoolBinding", entry.namespace, entry.name)]
        bad = [f for n, f in found if verdict.outcome("findings", n) == decided.FAILED]
        outcome = decision.outcome
        reason = "; ".join(f"{f.code}: {f.message}" for f in bad) or decision.why
        fix = " ".join(f.fix for f in bad if f.fix)
        if entry.suggestion:
            fix = (fix + " " if fix else "") + f"(suggested dtype: {entry.suggestion})"
        notes = tuple(_note(f) for _, f in found if f not in bad)
        cases.append(Case(_suite(_context(entry), entry.namespace), f"KVCachePoolBinding {entry.name}",
                          "KVCachePoolBinding", outcome, entry.verdict,
                          f"{entry.verdict}" if outcome != PASSED else "", reason, fix, notes, _context(entry)))
    for d in verdict.failures:           # a failing finding no Binding listed shows (-l kept its user only)
        if d.where == "findings":
            f = report.findings[d.index]
            cases.append(Case(_suite(_context(f), f.namespace), f"{f.kind} {f.name}", f.kind, FAILED, f.code,
                              f"{f.code}: {f.message}", "", f.fix or "", (), _context(f)))
    failed = sum(1 for c in cases if c.outcome == FAILED)
    return ("bindings", f"bindings: {failed} of {len(cases)} failing", _check_facts(report)
            + [("Fails on", "; ".join(verdict.failing), ())],
            [("failing", failed), ("total", len(cases))], cases, None)


def _roles(report, subject, verdict):
    cases = []
    for index, entry in enumerate(report.roles):
        outcome = verdict.outcome("roles", index)
        summary = f"{entry.verdict}: today {entry.today}, after the upgrade {entry.after}"
        fix = " ".join(f.fix for f in report.findings if f.fix and (f.kind, f.namespace, f.name) ==
                       ("ModelDeployment", entry.namespace, entry.deployment) and f"role {entry.role} " in f.message)
        cases.append(Case(_suite(_context(entry), entry.namespace),
                          f"ModelDeployment {entry.deployment} role {entry.role}", "ModelDeployment", outcome,
                          entry.verdict, summary, entry.reason, fix,
                          ((entry.severity, entry.type, entry.reason, ""),) if outcome == PASSED else (),
                          _context(entry)))
    failed = sum(1 for c in cases if c.outcome == FAILED)
    return ("roles", f"roles: {failed} of {len(cases)} failing", _check_facts(report)
            + [("Fails on", "; ".join(verdict.failing), ())],
            [("failing", failed), ("total", len(cases))], cases, None)


# -- the findings one by one -----------------------------------------------------------------

def _file_of(subject):
    """The -f file every object came from, when the input is one file (not stdin, not a folder)."""
    import os

    files = subject.files
    if subject.source != "file" or len(files) != 1 or files[0] == "-" or os.path.isdir(files[0]):
        return None
    return files[0]


class _Places:
    """Where the object of a finding was read: its own file and line when load/ kept them (any
    number of -f files or a directory), else the one -f file every object came from (_file_of)."""

    __slots__ = ("origins", "file")

    def __init__(self, subject):
        self.origins = dict(getattr(subject, "origins", ()) or ())
        self.file = _file_of(subject)

    def of(self, *keys):
        """(file, line) of the first of `keys` ((kind, namespace, name)) that was read from a file
        (not standard input: no file to point at); an object no file held (the Setting assumed,
        the workload kinds not read) has none; without origins (none kept), the one file."""
        for key in keys:
            origin = self.origins.get(key)
            if origin is not None:
                return (origin.file, origin.line) if origin.file != "<stdin>" else (None, None)
        return (None, None) if self.origins else (self.file, None)


def _object_key(kind, name):
    """An object's name in a finding's key: a Pod by the workload its name is generated from
    (a rollout renames every Pod; the ordinal ones keep their name)."""
    return f"{kind}/{_workload_of(name) if kind == 'Pod' and name else name}"


def _suppression(effect) -> str | None:
    """The justification of a finding a policy rule ignored: the rule, and its reason."""
    if effect is None or effect.now is not None:
        return None
    return f"ignored by {effect.where}" + (f": {effect.reason}" if effect.reason else "")


def _verify_findings(report, subject, verdict):
    from kubectl_kvcache.judge import verdict as decided, verify as judge
    from kubectl_kvcache.render.labels import engine_said

    ignored = list(getattr(report, "suppressed", ()))
    names = replica_names(report.items + ignored)
    places = _Places(subject)
    found = []
    rows = [("items", n, i) for n, i in enumerate(report.items)] + [("suppressed", n, i) for n, i in enumerate(ignored)]
    for where, index, item in rows:
        decision = verdict.of(where, index)
        failed = decision.outcome == decided.FAILED
        if item.status == judge.OK and not failed:
            continue
        replica = names[id(item)]       # namespace/deployment/role/N[/container], namespace/injected/owner/N
        parts = replica.split("/")
        if item.deployment:
            path = [("namespace", parts[0]), ("ModelDeployment", parts[1]), ("role", parts[2]), ("replica", parts[3])]
        else:
            kind = item.owner["kind"] if item.owner else "Pod"
            path = [("namespace", parts[0]), (kind, parts[2]), ("replica", parts[3])]
        if len(parts) > 4:
            path.append(("container", parts[4]))
        pod = f"Pod {item.pod}" + (f" container {item.container}" if item.container else "") \
            if item.pod is not None else "no Pod"
        code, fix = item.status, item.fix or ""
        if item.status == judge.OK:     # OK as predicted, failing all the same: the verdict's reason is its code
            code, fix = decision.code, decided.ok_fix(item, decision.code)
        message = f"{code}: Binding {item.binding or '<none>'} expects {_value(item.expected)}, " \
                  + _runs(item, judge) + f" ({pod})" + (f": {decision.why}" if item.status == judge.OK else
                                                        f": {item.reason}" if item.reason else "")
        suppression = _suppression(item.policy)
        # the severity is the status, or what a policy rule made it (an ignored one: what it was); an
        # OK row that fails: an error
        severity = "error" if item.status == judge.OK else \
            item.status if item.policy is None else (item.policy.now or item.policy.was)
        kind = path[1][0]
        file, line = places.of(("Pod", parts[0], item.pod), (kind, parts[0], path[1][1]))
        found.append(Annotation(code, severity, failed, message, fix, tuple(path), f"verify|{code}|{replica}", file,
                                suppression, engine_said(item) or "", line))
    return found


def _check_finding(f, failed, command, places, undecided=False):
    path = ((("namespace", f.namespace),) if f.namespace else ()) + ((f.kind, f.name),)
    where = (f.namespace or "") + "|" + _object_key(f.kind, f.name)
    file, line = places.of((f.kind, f.namespace or None, f.name))
    # what an object is told, not which sentence: a message may name Pods (the key must outlive them)
    return Annotation(f.code, f.severity, failed, f.message, f.fix or "", path, f"{command}|{f.code}|{where}", file,
                      line=line, undecided=undecided)


def _check_findings(report, subject, verdict):
    from kubectl_kvcache.judge import verdict as decided

    file = _Places(subject)
    return [_check_finding(f, verdict.outcome("findings", n) == decided.FAILED, "check", file,
                           verdict.outcome("findings", n) == decided.SKIPPED)
            for n, f in enumerate(report.findings)] + [
        _check_finding(f, False, "check", file).replace(suppression=_suppression(f.policy))
        for f in getattr(report, "suppressed", ())]


def _bindings_findings(report, subject, verdict):
    from kubectl_kvcache.judge import verdict as decided

    file = _Places(subject)
    return [_check_finding(f, verdict.outcome("findings", n) == decided.FAILED, "bindings", file)
            for n, f in enumerate(report.findings) if f.kind == "KVCachePoolBinding"
            or verdict.outcome("findings", n) == decided.FAILED]


def _roles_findings(report, subject, verdict):
    from kubectl_kvcache.judge import checks

    file = _Places(subject)
    failing = {(e.namespace, e.deployment, e.role) for n, e in enumerate(report.roles)
               if verdict.outcome("roles", n) == FAILED}
    return [_check_finding(f, any((namespace, deployment) == (f.namespace, f.name) and f"role {role} " in f.message
                                  for namespace, deployment, role in failing), "roles", file)
            for f in report.findings if f.kind == "ModelDeployment" and f.code in checks.ROLE_CODES]


def _check_rules():
    from kubectl_kvcache.judge import checks

    return tuple(Rule(c.code, c.severity, c.title) for c in checks.CODES.values())


def _verify_rules():
    from kubectl_kvcache.judge import verify as judge

    return tuple(Rule(s, s, judge.MEANINGS[s]) for s in judge.STATUSES if s != judge.OK) + tuple(
        Rule(c, "error", meaning) for c, meaning in judge.OK_FAILURES.items())


# the report of each command's view (View.document): its cases, its findings, the rules of its codes
# A document's builder, its findings, its rules, and whether it lists the view's rows (check's rows
# are its findings, every one already a failure or a note of its case).
_BUILDERS = {"verify": (_verify, _verify_findings, _verify_rules, True),
             "check": (_check, _check_findings, _check_rules, False),
             "bindings": (_bindings, _bindings_findings, _check_rules, True),
             "roles": (_roles, _roles_findings, _check_rules, True)}
