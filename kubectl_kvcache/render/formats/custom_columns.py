"""-o custom-columns=HEADER:PATH,... and -o custom-columns-file=FILE: kubectl's custom columns
(kubectl/pkg/cmd/get/customcolumn.go) over the rows as `kubectl get` lists them
(render/kubectl_list.py): a spec `HEADER:PATH` per column, PATH relaxed (`.a.b`, `a.b`, `{a.b}`),
missing keys allowed, a cell `<none>` when the path finds nothing, several values joined by `,`,
each as Go prints it (fmt.Sprint) with kubectl's terminal escape (ESC as `^[`, CR as `\\r`);
the columns aligned by kubectl's tabwriter (render.core's widths). The file form: a line of
headers and a line of paths, split on whitespace; it always prints its headers (kubectl's
NewCustomColumnsPrinterFromTemplate ignores --no-headers)."""

from __future__ import annotations

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.render import jsonpath
from kubectl_kvcache.render.kubectl_list import relaxed

_USAGE = "Expected format is one line of space separated headers, one line of space separated column specs."


def columns_of(fmt: str, argument: str | None) -> tuple[list[tuple[str, str]], bool]:
    """[(header, {.path})] and whether --no-headers may apply, or PluginError with kubectl's words."""
    try:
        if fmt == "custom-columns-file":
            return _from_file(argument or ""), False
        return _from_spec(argument or ""), True
    except jsonpath.JSONPathError as exc:
        raise PluginError(str(exc)) from None


def _from_spec(spec: str):
    """customcolumn.go NewCustomColumnsPrinterFromSpec."""
    if not spec:
        raise PluginError("custom-columns format specified but no custom columns given")
    columns = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep:
            raise PluginError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        columns.append((header, relaxed(path)))
    return columns


def _from_file(path: str):
    """customcolumn.go NewCustomColumnsPrinterFromTemplate (bufio.Scanner lines, ScanWords)."""
    import os

    text = ""
    if not os.path.isdir(path):         # os.Open opens a directory; the Scanner then reads no line
        try:
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
        except OSError as exc:
            from kubectl_kvcache.render.formats.jsonpath import _go_errno

            raise PluginError(f"error reading template {path}, open {path}: {_go_errno(exc)}") from None
    lines = text.split("\n") if text else []      # bufio.ScanLines: no token in an empty input
    if text.endswith("\n"):
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not lines:
        raise PluginError("invalid template, missing header line. " + _USAGE)
    if len(lines) < 2:
        raise PluginError("invalid template, missing spec line. " + _USAGE)
    headers, specs = lines[0].split(), lines[1].split()
    if len(headers) != len(specs):
        raise PluginError(f"number of headers ({len(headers)}) and field specifications ({len(specs)}) don't match")
    return [(h, relaxed(s)) for h, s in zip(headers, specs, strict=True)]


def prepare(fmt: str, argument: str | None):
    """Checked at the command line, before any request: the spec (or file) and each path's form.
    A path that does not parse fails when printing, after the header line, as kubectl's does
    (CustomColumnsPrinter.PrintObj parses the columns after writing the headers)."""
    columns, _ = columns_of(fmt, argument)
    return columns


def _escape_terminal(text: str) -> str:
    """cli-runtime printers.EscapeTerminal: ESC as ^[, CR as \\r."""
    return text.replace("\x1b", "^[").replace("\r", "\\r")


def write(data, output, out) -> None:
    from kubectl_kvcache.render.core import column_widths, table_line
    from kubectl_kvcache.render.formats.jsonpath import for_terminal

    columns, headers_apply = columns_of(output.format, output.template)
    lines = []
    if not (headers_apply and not output.headers):
        lines.append([header for header, _ in columns])
    failed = None
    parsers = []
    for _, path in columns:
        try:
            parsers.append(jsonpath.JSONPath(path, allow_missing_keys=True))
        except jsonpath.JSONPathError as exc:
            failed = str(exc)
            break
    items = (data.get("items") or []) if failed is None else []
    for item in items:
        cells = []
        for parser in parsers:
            try:
                found = parser.find(item)
            except jsonpath.JSONPathError as exc:
                failed = str(exc)       # kubectl's tabwriter still flushes the lines before it
                break
            values = [] if found and found[0] else ["<none>"]
            values += [_escape_terminal(jsonpath.go_text(v)) for result in found for v in result]
            cells.append(",".join(values))
        if failed is not None:
            break
        lines.append(cells)
    widths = column_widths(lines)
    out.write(for_terminal("".join(table_line(line, widths) + "\n" for line in lines), out))
    if failed is not None:
        raise PluginError(failed)
