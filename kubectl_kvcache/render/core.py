"""The printer every command shares: a View is columns plus a row source and a structured form,
printed as a table (upper-case headers, like kubectl), a wide table, JSON or YAML. Diagnostics
(notes, summaries, errors) are printed here too, to stderr. Nothing outside render/ prints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from kubectl_kvcache.record import Record

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
    format. `wide_value`, when set, is the cell in -o wide (e.g. every name instead of a count)."""

    __slots__ = ("header", "value", "wide_value", "shorten")

    def __init__(self, header: str, value: Callable[[object], object],
                 wide_value: Callable[[object], object] | None = None, shorten: bool = False):
        self.header = header
        self.value = value
        self.wide_value = wide_value
        self.shorten = shorten      # long free text: shortened to fit a terminal (names never are)

    def cell(self, row, wide):
        return (self.wide_value or self.value)(row) if wide else self.value(row)


class View(Record):
    """What a command lists: its columns (and the extra ones of -o wide), the rows of a report,
    the report's structured form for -o json|yaml, and what to call the rows when there are none."""

    __slots__ = ("columns", "wide", "rows", "to_dict", "empty")

    def __init__(self, columns: tuple[Column, ...], wide: tuple[Column, ...], rows: Callable[[object], Iterable],
                 to_dict: Callable[[object], dict], empty: str):
        self.columns = columns
        self.wide = wide
        self.rows = rows
        self.to_dict = to_dict
        self.empty = empty

    def cells(self, report, wide):
        columns = self.columns + (self.wide if wide else ())
        return [[c.cell(row, wide) for c in columns] for row in self.rows(report)]

    def headers(self, wide):
        return [c.header for c in self.columns + (self.wide if wide else ())]

    def shortenable(self, wide):
        return {i for i, c in enumerate(self.columns + (self.wide if wide else ())) if c.shorten}


def cell(value):
    if value is None or value == "":
        return NONE
    return escape(value)


def table(headers, rows, out, no_headers=False, fit=()) -> bool:
    """Print a table; `fit`: the indexes of the columns that may be shortened so that the table
    fits a terminal (piped output is never touched). Returns whether a cell was shortened."""
    from tabulate import tabulate

    rows = [[cell(v) for v in row] for row in rows]
    if not rows:
        return False
    rows, shortened = fit_rows(headers, rows, out, no_headers, fit)
    if no_headers:
        text = tabulate(rows, tablefmt="plain", disable_numparse=True)
    else:
        text = tabulate(rows, headers=[h.upper() for h in headers], tablefmt="plain", disable_numparse=True)
    out.write(text + "\n")
    return shortened


def fit_rows(headers, rows, out, no_headers, fit):
    """(rows, shortened): fitted to the terminal `out` is, when it is one and `fit` names columns."""
    width = terminal_width(out) if fit else None
    if not width:
        return rows, False
    fitted = fit_to_width(headers, rows, width, no_headers, fit)
    return fitted, fitted != rows


ELLIPSIS = "\u2026"
SEPARATOR = 2          # spaces between tabulate's plain columns
_MIN_COLUMN = 12       # a column is not shortened below this (or its header)


def terminal_width(out) -> int | None:
    """The width of the terminal `out` writes to; None when it is not a terminal (a pipe, a
    file): then nothing is fitted. $COLUMNS wins, as for other tools."""
    isatty = getattr(out, "isatty", None)
    if not (isatty and isatty()):
        return None
    try:
        columns = int(os.environ.get("COLUMNS", ""))
        if columns > 0:
            return columns
    except ValueError:
        pass
    try:
        return os.get_terminal_size(out.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        return None


def fit_to_width(headers, rows, width, no_headers=False, shortenable=None):
    """Rows whose longest cells are cut (ending in an ellipsis) so that the table is at most
    `width` characters wide: of the `shortenable` columns (default: all), the widest gives way
    first, none below a readable minimum, so a table too wide even then stays wider than the
    terminal rather than unreadable."""
    allowed = set(range(len(headers))) if shortenable is None else set(shortenable)
    pad = 0 if no_headers else SEPARATOR
    heads = [0 if no_headers else len(h) for h in headers]
    widths = [max([len(r[i]) for r in rows] + [heads[i] + pad]) for i in range(len(headers))]
    floors = [max(_MIN_COLUMN, heads[i] + pad) for i in range(len(headers))]
    excess = sum(widths) + SEPARATOR * (len(widths) - 1) - width
    while excess > 0:
        shrinkable = [i for i in allowed if widths[i] > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        others = [widths[i] for i in shrinkable if i != widest]
        target = max(floors[widest], widths[widest] - excess, max(others) if others else 0)
        if target >= widths[widest]:
            target = widths[widest] - 1
        excess -= widths[widest] - target
        widths[widest] = target
    return [[c if len(c) <= widths[i] else c[:widths[i] - 1] + ELLIPSIS for i, c in enumerate(r)] for r in rows]


def structured(data, fmt, out):
    """`data` in a structured format (render/formats: json, yaml)."""
    from kubectl_kvcache.render import formats

    formats.printer(fmt).write(data, out)


def show(view: View, report, output, out, err=None) -> int:
    """Print `report` through `view` in the asked format (render/formats); returns how many rows
    were listed (structured output: -1, it is never empty)."""
    from kubectl_kvcache.render import formats

    return formats.printer(output.format).show(view, report, output, out, err)


# -- diagnostics (stderr) -------------------------------------------------------------------

def line(out, text="", flush=False):
    """One line of a result or message, to the stream the command chose: the only way a human
    line is written (tables excepted, whose cells are escaped one by one). The text is escaped:
    a line never holds a control character, so a second line always comes from a second call."""
    out.write(escape(text) + "\n")
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
    line(err, f"error: {message}")


def notes(snapshot, err):
    """The snapshot's notes, after one warning line per namespace asked for that does not exist."""
    for ns in getattr(snapshot, "missing_namespaces", ()):
        line(err, f"warning: namespace {ns!r} does not exist: nothing in it was read")
    for text in snapshot.notes:
        note(err, text)


def note(err, text):
    line(err, f"note: {text}")


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
