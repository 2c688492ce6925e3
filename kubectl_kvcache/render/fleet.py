"""Several contexts in one report: any command's view with a CONTEXT column first, JSON/YAML whose
items and per-context summaries carry `context`, and the per-context stderr lines. The one place
the multi-context output is shaped: a command's own view is reused as it is."""

from __future__ import annotations

from kubectl_kvcache.record import Record
from kubectl_kvcache.render.core import Column, View, line


class Result(Record):
    """One context's outcome: its report (None when it failed), the error that ended it, its
    exit code, its notes, and the namespace it was read in (None: all)."""

    __slots__ = ("context", "report", "error", "code", "notes", "namespace")

    def __init__(self, context: str, report=None, error: str | None = None, code: int = 0,
                 notes: tuple[str, ...] = (), namespace: str | None = None):
        self.context = context
        self.report = report
        self.error = error
        self.code = code
        self.notes = notes
        self.namespace = namespace


class Fleet(Record):
    """The results, in the order the contexts were asked for, and the run's exit code (the worst of
    the contexts' verdicts, a context not read 2: cli/flows/fleet.run; None: not known)."""

    __slots__ = ("results", "code")

    def __init__(self, results: tuple[Result, ...], code: int | None = None):
        self.results = results
        self.code = code

    @property
    def read(self):
        return [r for r in self.results if r.error is None]


def _in_context(column: Column) -> Column:
    wide = column.wide_value
    return Column(column.header, lambda row: column.value(row[1]),
                  (lambda row: wide(row[1])) if wide else None, column.text, column.namespace, column.status)


def view(inner: View) -> View:
    """`inner` over every context read: CONTEXT first, then the command's own columns."""
    def rows(fleet):
        return [(r.context, row) for r in fleet.read for row in inner.rows(r.report)]

    return View(columns=(Column("context", lambda row: row[0]),) + tuple(_in_context(c) for c in inner.columns),
                wide=tuple(_in_context(c) for c in inner.wide), rows=rows,
                to_dict=lambda fleet: to_dict(inner, fleet), empty=inner.empty)


def document(inner: View, fleet: Fleet, output, failing, out, exit_code=None):
    """A document format (-o markdown|junit|sarif) over every context: one document
    (render.report.fleet_document)."""
    from kubectl_kvcache.render import formats
    from kubectl_kvcache.render.report import Subject, fleet_document, now

    subject = Subject(output.command, failing=tuple(failing), time=now(), exit_code=exit_code)
    code = exit_code if exit_code is not None else fleet.code
    formats.printer(output.format).emit(fleet_document(inner, fleet, subject, code), out)


def to_dict(inner: View, fleet: Fleet) -> dict:
    """`Fleet<Kind>` (Kind: the view's): `contexts` (each context's own fields: setting, summary,
    deployments, or its error), the view's items (check: findings) of every context each with its
    `context`, and the summary added up over the contexts read."""
    key = inner.items
    items: list[dict] = []
    contexts: list[dict] = []
    total = None
    for r in fleet.results:
        if r.error is not None:
            contexts.append({"context": r.context, "error": r.error})
            continue
        data = inner.to_dict(r.report)
        if key is None:         # the report is the item (a Setting's status)
            items.append({"context": r.context, **data})
            contexts.append({"context": r.context, "error": None})
            continue
        items += [{"context": r.context, **item} for item in data[key]]
        contexts.append({"context": r.context, "error": None,
                         **{k: v for k, v in data.items() if k not in ("kind", key)}})
        summary = data.get("summary")
        if isinstance(summary, dict):
            total = dict(summary) if total is None else {k: total.get(k, 0) + v for k, v in summary.items()}
    out: dict = {"kind": "Fleet" + (inner.kind or ""), "contexts": contexts, (key or "items"): items}
    if total is not None:
        out["summary"] = total
    if fleet.code is not None and inner.document is not None:      # each context's verdict: in `contexts`
        out["verdict"] = {"result": "PASSED" if fleet.code == 0 else "FAILED", "exitCode": fleet.code}
    return out


# -- stderr ------------------------------------------------------------------------------------

def note(err, context, text):
    line(err, f"note: context {context}: {text}")


def context_line(err, context, text):
    line(err, f"context {context}: {text}")


def failed(err, context, message):
    line(err, f"error: context {context}: {message}", wrap=False)


def nothing_found(err, context, what, namespace):
    where = f"in {namespace} namespace" if namespace else "in any namespace"
    context_line(err, context, f"No {what} found {where}.")
