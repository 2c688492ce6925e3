"""What -o openmetrics and -o prometheus say: the metric families of a report, as data (name, type,
unit, help, label names, samples). The two printers (render/formats/openmetrics.py, prometheus.py)
only write them out, so both expositions always hold the same numbers.

Everything is counted from render/report.py's Document -- its cases (a replica for verify, an
object for check), its findings one by one, its verdict and exit code -- so a replica or a
finding is `failed` here exactly where the exit code fails; nothing is judged again.

The names and label sets are a contract (docs/metrics.md; tests/render/test_metrics.py lists
them, so a rename fails a test): every family's labels are always all present (an empty value
where a row has none, which Prometheus reads as the label's absence)."""

from __future__ import annotations

from kubectl_kvcache import __version__
from kubectl_kvcache.record import Record
from kubectl_kvcache.render.report import ERROR, FAILED

PREFIX = "kubectl_kvcache_"
GAUGE, INFO = "gauge", "info"


class Family(Record):
    """One metric family: `name` without the type's suffix (an info family's samples are
    NAME_info), `unit` the OpenMetrics unit its name ends with (None: a count), `labels` the
    label names every sample has, in order; `commands` the commands whose report has it."""

    __slots__ = ("name", "type", "unit", "help", "labels", "commands")

    def __init__(self, name: str, type: str, help: str, labels: tuple[str, ...], unit: str | None = None,
                 commands: tuple[str, ...] = ("verify", "check")):
        self.name = PREFIX + name
        self.type = type
        self.unit = unit
        self.help = help
        self.labels = labels
        self.commands = commands


BUILD = Family("build", INFO, "The kubectl-kvcache release that wrote these metrics.", ("version",))
RUN_FAILED = Family("run_failed", GAUGE, "1 when the run fails (its exit code is not 0), else 0.", ("command",))
EXIT_CODE = Family("run_exit_code", GAUGE, "The exit code of the run: 0 all good, 1 findings, 2 not judged.",
                   ("command",))
TIMESTAMP = Family("run_timestamp_seconds", GAUGE, "When the run read its input, in seconds since the epoch.",
                   ("command",), unit="seconds")
CONTEXT_READ = Family("context_read", GAUGE, "1 for each kubeconfig context of a --contexts run that was read, "
                      "0 for one that could not be.", ("command", "context"))
JUDGED = Family("objects_judged", GAUGE, "Things judged (a replica for verify, an object for check), by kind "
                "and outcome (passed, failed, skipped).", ("command", "context", "kind", "outcome"))
FINDINGS = Family("findings", GAUGE, "Findings by code and severity (verify: a replica's status), per "
                  "namespace; failed is true for those that fail the run.",
                  ("command", "context", "namespace", "code", "severity", "failed"))
SUPPRESSED = Family("suppressed_findings", GAUGE, "Findings a policy rule ignored (never failing the run), by "
                    "code, per namespace.", ("command", "context", "namespace", "code"))
REPLICAS = Family("replicas", GAUGE, "Engine replicas by status and outcome, per namespace, ModelDeployment, "
                  "role and KVCachePoolBinding.",
                  ("context", "namespace", "deployment", "role", "binding", "status", "outcome"), commands=("verify",))
CAPACITY = Family("replica_capacity_tokens", GAUGE, "The tokens a replica's KV cache holds, as its engine said "
                  "(verify --observe; only replicas whose capacity was read).",
                  ("context", "namespace", "deployment", "role", "binding", "replica"), unit="tokens",
                  commands=("verify",))

FAMILIES = (BUILD, RUN_FAILED, EXIT_CODE, TIMESTAMP, CONTEXT_READ, JUDGED, FINDINGS, SUPPRESSED, REPLICAS, CAPACITY)


def families_of(command: str) -> tuple[Family, ...]:
    return tuple(f for f in FAMILIES if command in f.commands)


def _epoch(time: str | None) -> float | None:
    """An RFC 3339 UTC time (report.now()) in seconds since the epoch."""
    import calendar
    import time as clock

    if not time:
        return None
    try:
        return float(calendar.timegm(clock.strptime(time, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _count(samples: dict, family: Family, values: tuple) -> None:
    samples.setdefault(family.name, {})
    key = tuple(str(v) for v in values)
    samples[family.name][key] = samples[family.name].get(key, 0) + 1


def _where(path, kind) -> str:
    return next((name for k, name in path if k == kind), "")


def samples(doc) -> list[tuple[Family, list[tuple[tuple[str, ...], float]]]]:
    """Each family of `doc`'s command with its samples (label values in the family's order, value),
    in a stable order (sorted by label values)."""
    command = doc.command
    exit_code = doc.exit_code if doc.exit_code is not None else doc.subject.exit_code
    context = doc.subject.context or ""
    out: dict = {f.name: {} for f in FAMILIES}
    out[BUILD.name][(__version__,)] = 1
    out[RUN_FAILED.name][(command,)] = 1 if doc.verdict == FAILED else 0
    if exit_code is not None:
        out[EXIT_CODE.name][(command,)] = exit_code
    when = _epoch(doc.subject.time)
    if when is not None:
        out[TIMESTAMP.name][(command,)] = when
    contexts: dict = {}
    for case in doc.cases:
        where = case.context or context
        if case.outcome == ERROR:       # a context of a --contexts run not read
            contexts[case.context] = 0
            continue
        if case.context is not None:
            contexts.setdefault(case.context, 1)
        _count(out, JUDGED, (command, where, case.kind, case.outcome))
        if case.place:          # a verify replica (render/report._verify): where it is
            place = dict(case.place)
            labels = (where, place["namespace"], place["deployment"], place["role"], place["binding"])
            _count(out, REPLICAS, labels + (case.status, case.outcome))
            if case.tokens is not None:
                out[CAPACITY.name][labels + (case.name,)] = case.tokens
    for ctx, read in contexts.items():
        out[CONTEXT_READ.name][(command, ctx)] = read
    for f in doc.findings:
        where = _where(f.path, "context") or context
        namespace = _where(f.path, "namespace")
        if f.suppression is not None:
            _count(out, SUPPRESSED, (command, where, namespace, f.code))
        else:
            _count(out, FINDINGS, (command, where, namespace, f.code, f.severity, "true" if f.failed else "false"))
    return [(family, sorted(out[family.name].items())) for family in families_of(command)]


def failed_samples(command: str, subject) -> list[tuple[Family, list[tuple[tuple[str, ...], float]]]]:
    """A run that could not judge anything (exit code 2): it failed, and nothing was counted."""
    from kubectl_kvcache.exitcodes import ERROR as NOT_JUDGED

    got: dict[str, list[tuple[tuple[str, ...], float]]] = {
        BUILD.name: [((__version__,), 1)], RUN_FAILED.name: [((command,), 1)],
        EXIT_CODE.name: [((command,), NOT_JUDGED)]}
    from kubectl_kvcache.render.report import now

    when = _epoch(subject.time if subject is not None and subject.time else now())
    if when is not None:
        got[TIMESTAMP.name] = [((command,), when)]
    return [(family, got.get(family.name, [])) for family in families_of(command)]
