"""The printer every command shares: a View is columns plus a row source and a structured form,
printed as a table (upper-case headers, like kubectl), a wide table, JSON or YAML. Diagnostics
(notes, summaries, errors) are printed here too, to stderr. Nothing outside render/ prints.
"""

from __future__ import annotations

import shlex

import re
from collections.abc import Callable, Iterable

from kubectl_kvcache.record import Record
from kubectl_kvcache.errors import without_secrets

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any      # a row or report: each view's own type

NONE = "<none>"


# -- terminal safety --------------------------------------------------------------------------
#
# Cluster data (Pod names, args, annotations, a Binding's dtype, the Setting's description, an
# API server's error message) reaches a terminal only through `escape`: like kubectl's
# printers.EscapeTerminal (ESC -> "^[", CR -> "\r"), and further every other control character
# (C0, DEL, C1), the Unicode bidi/line controls and lone surrogates, so that nothing can colour,
# retitle, beep, rewrite or forge a row, or fail to encode. Human output only: -o json|yaml carry
# the data exactly (JSON escapes control characters itself; YAML quotes and escapes them).

def _escapes():
    table = {0x1B: "^[", 0x0D: "\\r", 0x0A: "\\n", 0x09: "\\t", 0x7F: "^?"}
    for code in range(0x20):
        table.setdefault(code, "^" + chr(code + 0x40))
    for code in range(0x80, 0xA0):
        table[code] = f"\\x{code:02x}"
    for code in (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
                 *range(0xD800, 0xE000)):      # and lone surrogates (JSON's "\ud800"): not encodable
        table[code] = f"\\u{code:04x}"
    return table


_ESCAPES = _escapes()


def _char_class(codes):
    """A regex character class of these code points, runs written as ranges (2,000 single
    characters take milliseconds to compile at every start)."""
    codes = sorted(codes)
    parts, start = [], 0
    for i, code in enumerate(codes):
        if i + 1 == len(codes) or codes[i + 1] != code + 1:
            first = codes[start]
            parts.append(re.escape(chr(first)) + (f"-{re.escape(chr(code))}" if code > first else ""))
            start = i + 1
    return "[" + "".join(parts) + "]"


_UNSAFE = re.compile(_char_class(_ESCAPES))


def escape(text) -> str:
    """`text` (any value, as str) safe to print on a terminal: every control character escaped."""
    text = text if text.__class__ is str else str(text)
    return text.translate(_ESCAPES) if _UNSAFE.search(text) else text


class Column(Record):
    """A header and how to get its cell from a row (pluto's columns): one definition serves every
    format. `wide_value`, when set, is the cell in -o wide (e.g. every name instead of a count).
    `text`: free text that may hold spaces, printed after every other column (at most one in the
    default table, so that awk and cut read the columns before it as on kubectl's output; any
    other cell shows a space of cluster data as `\\x20`). `namespace`: the NAMESPACE column,
    shown only when the rows span namespaces (-A, or files without -n), as kubectl shows it.
    `status`: its words are statuses, coloured on a terminal with colour (render/terminal.py)."""

    __slots__ = ("header", "value", "wide_value", "text", "namespace", "status")

    def __init__(self, header: str, value: Callable[[Any], object],
                 wide_value: Callable[[Any], object] | None = None, text: bool = False, namespace: bool = False,
                 status: bool = False):
        self.header = header
        self.value = value
        self.wide_value = wide_value
        self.text = text
        self.namespace = namespace
        self.status = status

    def cell(self, row, wide):
        return (self.wide_value or self.value)(row) if wide else self.value(row)

    @property
    def label(self) -> str:
        """The header as -o describe labels the same field (`after upgrade` -> `After upgrade`), so
        a renamed column renames its describe field too."""
        return self.header[:1].upper() + self.header[1:]


def _layout(output):
    """(wide, namespaces) from an Output, or from a bare `wide` flag (namespaces then shown)."""
    if isinstance(output, bool) or output is None:
        return bool(output), True
    return output.wide, getattr(output, "namespaces", True)


class View(Record):
    """What a command lists: its columns (and the extra ones of -o wide), the rows of a report,
    the report's structured form for -o json|yaml, what to call the rows when there are none, and
    the fields of one row's block for -o describe (render/formats/describe.py).

    `kind` is the one home of the structured form's `kind` (stamped first by to_dict); `items`
    names its list of rows (None: the report is the one row), which the several-contexts form
    (render/fleet.py) gathers across contexts."""

    __slots__ = ("columns", "wide", "rows", "to_dict", "empty", "describe", "document", "kind", "items")

    def __init__(self, columns: tuple[Column, ...], wide: tuple[Column, ...], rows: Callable[[Any], Iterable],
                 to_dict: Callable[[Any], dict], empty: str, describe: Callable[[Any], list] | None = None,
                 document: str | None = None, kind: str | None = None, items: str | None = "items"):
        self.columns = columns
        self.wide = wide
        self.rows = rows
        self.to_dict = to_dict if kind is None else (lambda report: {"kind": kind, **to_dict(report)})
        self.empty = empty
        self.describe = describe
        self.document = document    # the command whose report (render/report.py) this view's is; None: none
        self.kind = kind
        self.items = items

    def layout(self, output) -> tuple[Column, ...]:
        """The columns printed for `output` (an Output, or a bare `wide` flag): the default ones
        (NAMESPACE only when the rows span namespaces), then the wide ones, free text last."""
        wide, namespaces = _layout(output)
        chosen = [c for c in self.columns + (self.wide if wide else ()) if namespaces or not c.namespace]
        return tuple([c for c in chosen if not c.text] + [c for c in chosen if c.text])

    def cells(self, report, output):
        columns = self.layout(output)
        wide = _layout(output)[0]
        return [[c.cell(row, wide) for c in columns] for row in self.rows(report)]

    def headers(self, output):
        return [c.header for c in self.layout(output)]

    def text_columns(self, output):
        return {i for i, c in enumerate(self.layout(output)) if c.text}

    def status_columns(self, output):
        return {i for i, c in enumerate(self.layout(output)) if c.status}


def cell(value):
    if value is None or value == "":
        return NONE
    return escape(value)


def token(value):
    """A cell of a column that is not free text: escaped, and a space shown as `\\x20`, so
    that the columns split on whitespace as kubectl's do (cluster data such as an annotation may
    hold a space; names and dtypes cannot)."""
    text = cell(value)
    return text.replace(" ", "\\x20") if " " in text else text


# kubectl's table printer: a tabwriter with minwidth 6, padding 3, padded with spaces, the last
# cell of a line not padded, no cell ever cut (k8s.io/cli-runtime pkg/printers/tabwriter.go
# GetNewTabWriter, liggitt/tabwriter with RememberWidths; pkg/printers/tableprinter.go printTable); --no-headers: the widths come from
# the rows alone (the header row is not written).
MIN_WIDTH = 6
PADDING = 3


def column_widths(rows, widths=None):
    """Each column's width as kubectl's tabwriter sets it (the last column is never padded);
    `widths`: widths remembered from earlier rows (tabwriter.RememberWidths), which only grow."""
    found = list(widths or ())
    for row in rows:
        for i, value in enumerate(row[:-1]):
            need = max(MIN_WIDTH, len(value) + PADDING)
            if i >= len(found):
                found.append(need)
            elif need > found[i]:
                found[i] = need
    return found


def table_line(row, widths):
    return "".join(v.ljust(w) for v, w in zip(row[:-1], widths, strict=False)) + (row[-1] if row else "")


def table(headers, rows, out, no_headers=False, text=(), term=None, status=()) -> bool:
    """Print a table as kubectl does, each cell in full. `text`: the indexes of the free-text
    columns (their spaces stay; any other cell's are shown as \\x20). `term`
    (render.terminal.Terminal): on a terminal a table wider than it prints its free text on
    wrapped, indented lines under each row (terminal_table); `status`: the indexes of the
    columns whose words are coloured when the terminal has colour. Returns False (nothing is
    ever shortened; kept for callers that asked)."""
    rows = [[cell(v) if i in text else token(v) for i, v in enumerate(row)] for row in rows]
    if not rows:
        return False
    heads = [h.upper() for h in headers]
    if term is not None and term.width:
        widths = column_widths(([] if no_headers else [heads]) + rows)
        if max(len(table_line(r, widths)) for r in rows + ([] if no_headers else [heads])) > term.width:
            out.write("".join(x + "\n" for x in terminal_table(heads, rows, no_headers, set(text), term, status)))
            return False
    if not no_headers:
        rows.insert(0, heads)
    widths = column_widths(rows)
    out.write("".join(_painted_line(r, widths, term, status, n == 0 and not no_headers) + "\n"
                      for n, r in enumerate(rows)))
    return False


def _painted_line(row, widths, term, status, header=False):
    if term is None or not term.color or header or not status:
        return table_line(row, widths)
    from kubectl_kvcache.render.terminal import paint

    cells = [paint(v, term, v.ljust(w)) if i in status else v.ljust(w) for i, (v, w) in enumerate(zip(row[:-1], widths, strict=False))]
    last = len(row) - 1
    return "".join(cells) + (paint(row[-1], term) if last in status else row[-1])


UNDER_INDENT = "    "


def terminal_table(heads, rows, no_headers, text, term, status=()):
    """A table wider than the terminal, for a person: the row keeps the first column and the
    status columns (the verdict is read on the row, never under it), then the other short
    columns from the left, as many as fit, aligned as kubectl aligns them; under it, indented and
    wrapped at spaces to the terminal's width, the columns that did not fit (`header: value`) and
    then the free text, each labelled with its header (`today: fp8_e4m3 (1 pod)`: a value under a
    row always says which column it is; not printed when empty). Every other cell is still
    printed in full; piped, the one-line table is printed instead (awk and grep read one row per
    line)."""
    from kubectl_kvcache.render.terminal import paint, wrap

    order = [i for i in range(len(heads)) if i not in text]
    fixed = {order[0]} | set(status) if order else set()
    kept = list(order)
    while len(kept) > len(fixed & set(kept)):
        shown = [[r[i] for i in kept] for r in ([] if no_headers else [heads]) + rows]
        widths = column_widths(shown)
        if max(len(table_line(r, widths)) for r in shown) <= term.width:
            break
        kept.remove(next(i for i in reversed(kept) if i not in fixed))
    moved = [i for i in order if i not in kept]
    texts = [i for i in range(len(heads)) if i in text]
    shown = [[r[i] for i in kept] for r in ([] if no_headers else [heads]) + rows]
    widths = column_widths(shown)
    lines = [] if no_headers else [table_line(shown[0], widths)]
    keep_status = {n for n, i in enumerate(kept) if i in status}
    for row in rows:
        lines.append(_painted_line([row[i] for i in kept], widths, term, keep_status))
        if moved:      # `header: value` pieces, packed onto lines, a piece never split
            current, size = UNDER_INDENT, len(UNDER_INDENT)
            for i in moved:
                piece = f"{heads[i].lower()}: {row[i]}"
                shown_piece = f"{heads[i].lower()}: {paint(row[i], term)}" if i in status else piece
                if size > len(UNDER_INDENT) and size + 3 + len(piece) > term.width:
                    lines.append(current)
                    current, size = UNDER_INDENT, len(UNDER_INDENT)
                if size > len(UNDER_INDENT):
                    current, size = current + "   ", size + 3
                current, size = current + shown_piece, size + len(piece)
            lines.append(current)
        for i in texts:
            value = row[i]
            if value == NONE:
                continue       # an empty free text under its row is a bare `<none>` line (issue 39)
            lines += wrap(value, term.width, UNDER_INDENT + " " * (len(heads[i]) + 2),
                          first=f"{UNDER_INDENT}{heads[i].lower()}: ")
    return lines


def structured(data, fmt, out):
    """`data` in a structured format (render/formats: json, yaml)."""
    from kubectl_kvcache.render import formats

    formats.printer(fmt).write(data, out)


def show(view: View, report, output, out, err=None) -> None:
    """Print `report` through `view` in the asked format, as its record's kind says
    (render/formats): the view's rows, its to_dict() as data, or the whole report as a document
    (render/report.py)."""
    from kubectl_kvcache.render import formats

    fmt = formats.get(output.format)
    if fmt.kind == formats.ROWS:
        if getattr(output, "sort_by", None):
            view = _sorted_view(view, report, output.sort_by)
        if getattr(output, "show_labels", False) and fmt.name in ("table", "wide"):
            view = _labelled_view(view, report, output.labels, fmt.name == "wide")
        fmt.printer().show(view, report, output, out, err)
    elif fmt.kind == formats.DATA:
        data = view.to_dict(report)
        if getattr(output, "sort_by", None):
            from kubectl_kvcache.render import kubectl_list

            data = kubectl_list.sort_document(data, output.sort_by)
        fmt.printer().write(data, out)
    elif fmt.kind == formats.LIST:
        from kubectl_kvcache.render import kubectl_list

        fmt.printer().write(kubectl_list.listed(view.to_dict(report), output.sort_by), output, out)
        if err is not None:         # stdout holds kubectl's output alone: the verdict goes to stderr, as csv's
            verdict_line(err, getattr(report, "verdict", None))
    else:
        from kubectl_kvcache.render.report import document

        fmt.printer().emit(document(view, report, output.subject), out)


def _sorted_view(view: View, report, sort_by: str) -> View:
    """`view` with its rows in --sort-by's order: kubectl's sort (render/kubectl_list.py) of the
    rows as -o json names them (one item per row, in the same order: each view's to_dict lists
    the rows it prints)."""
    from kubectl_kvcache.render import kubectl_list, kubeobject

    rows = list(view.rows(report))
    items = kubectl_list.as_list(kubeobject.rows(view.to_dict(report)))["items"]
    if len(items) != len(rows):     # a view whose rows are not its items (none today): said, never guessed
        from kubectl_kvcache.errors import PluginError

        raise PluginError("--sort-by: these rows are not the items of -o json; sort -o json instead")
    order = kubectl_list.sort_items(list(range(len(rows))), sort_by, items)
    ordered = [rows[i] for i in order]
    return view.replace(rows=lambda _report: ordered)


def _labelled_view(view: View, report, index, wide=False) -> View:
    """`view` with kubectl's LABELS column (--show-labels): the labels of each row's object
    (render/kubeobject.py); after the short columns, before the free text (the plugin's tables keep
    the free text last, where kubectl's have no free text)."""
    from kubectl_kvcache.render import kubeobject

    rows = list(view.rows(report))
    items = kubeobject.rows(view.to_dict(report))
    texts = {id(row): kubeobject.labels_text(item, index) for row, item in zip(rows, items, strict=False)}
    # a label from a file may hold anything: escaped, and one word, as the other short columns
    column = Column("LABELS", lambda row: token(texts.get(id(row), "<unknown>")))
    if wide:                # after the wide columns too, as kubectl's LABELS is its table's last
        return view.replace(wide=view.wide + (column,), rows=lambda _report: rows)
    return view.replace(columns=view.columns + (column,), rows=lambda _report: rows)


# -- diagnostics (stderr) -------------------------------------------------------------------

def line(out, text="", flush=False, wrap=True):
    """One line of a result or message, to the stream the command chose: the only way a human
    line is written (tables excepted, whose cells are escaped one by one). The text is escaped:
    a line never holds a control character, so a second line always comes from a second call.
    On a terminal narrower than the line (`wrap`; not for table rows), it is wrapped at spaces
    with its continuation indented; piped, it stays one line."""
    text = escape(without_secrets(text))
    if wrap and len(text) > 60:
        from kubectl_kvcache.render import terminal

        width = terminal.of(out, terminal.NEVER).width
        if width and len(text) > width:
            text = "\n".join(terminal.wrap(text, width, "  ", first=""))
    out.write(text + "\n")
    if flush:
        out.flush()


def document(out, text):
    """Text the plugin itself wrote (a completion script), printed as it is: never cluster data."""
    out.write(text if text.endswith("\n") else text + "\n")


def record(out, *fields):
    """One line of a tab-separated protocol (shell completion): each field escaped, so cluster data
    can hold neither a tab nor a line break; the tabs between fields are the protocol's."""
    out.write("\t".join(escape(f) for f in fields) + "\n")


def error(err, message):
    """One `error:` line, never wrapped (on a terminal too): scripts and people count on one line."""
    line(err, f"error: {message}", wrap=False)


def failed_document(command, message, output, out):
    """For a document format (-o markdown|junit|sarif): a run that failed before it judged
    anything still writes its document (the error in it), never an empty file."""
    from kubectl_kvcache.render import formats

    if output is not None and formats.get(output.format).kind == formats.DOCUMENT:
        formats.printer(output.format).failed_run(command, message, output, out)


def notes(snapshot, err):
    """The snapshot's notes, after one warning line per namespace asked for that does not exist."""
    for ns in getattr(snapshot, "missing_namespaces", ()):
        line(err, f"warning: namespace {ns!r} does not exist: nothing in it was read")
    for text in snapshot.notes:
        note(err, text)


def note(err, text):
    line(err, f"note: {text}")


def verdict_line(err, verdict):
    """After a failing run's summary: the verdict as judge/verdict.py decided it, the exit code's
    reason in one line (`verdict: FAILED (exit code 1): 2 replicas fail (1 MISMATCH, ...)`).
    Nothing when it passes and nothing was left unread (the summary says it all)."""
    if verdict is not None and (verdict.failed or verdict.reasons):
        line(err, f"verdict: {verdict.text()}")


def nothing_found(snapshot, what, err):
    where = f"in {snapshot.namespace} namespace" if snapshot.namespace else "in any namespace"
    if snapshot.source == "file":
        where = "in the input" + (f" (namespace {snapshot.namespace})" if snapshot.namespace else "")
    line(err, f"No {what} found {where}.")


def prompt(err, question):
    err.write(escape(question))
    err.flush()


def live_line(err, text):
    """A status line rewritten in place on a terminal (carriage return, erase the line): the
    control sequence is the plugin's own, the text escaped."""
    err.write("\r\x1b[K" + escape(text))
    err.flush()


def live_clear(err):
    """Take a live status line away before other output."""
    err.write("\r\x1b[K")
    err.flush()


def tracer(err):
    """The KVCACHE_TRACE line printer handed to the API client."""
    def trace(text):
        line(err, f"trace: {text}")
        err.flush()
    return trace


def scope_args(scope):
    """The flags that make another command look at what this one looked at."""
    parts = ["-A"] if scope.all_namespaces else (["-n", scope.namespace] if scope.namespace else [])
    for path in scope.files:
        parts += ["-f", shlex.quote(path)]
    if scope.assume_setting is not None:
        parts += ["--assume-setting", "on" if scope.assume_setting else "off"]
    return parts
