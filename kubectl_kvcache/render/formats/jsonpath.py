"""-o jsonpath=TEMPLATE and -o jsonpath-file=FILE: kubectl's JSONPath template (render/jsonpath.py)
over what `kubectl get` would print it over (render/kubectl_list.py: the rows as a v1 List).

As kubectl (cli-runtime pkg/printers/jsonpath.go JSONPathPrinter, kubectl's JSONPathPrintFlags):
missing keys print nothing unless --allow-missing-template-keys=false; a template that does not
parse, or fails on the data, is one `error:` line with kubectl's words (exit 2 where kubectl
exits 1; kubectl also dumps the whole object after it, which the plugin leaves out: one line).
Output is kubectl's bytes; on a terminal the control characters of the data other than newline
and tab are made visible (render.core.escape), piped it is left exactly as kubectl writes it."""

from __future__ import annotations

import os
import re

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.render import jsonpath


def template_of(fmt: str, argument: str | None) -> str:
    """The template text -o gave (jsonpath-file: read from the file), or PluginError with
    kubectl's words."""
    text = argument or ""
    if not text:        # kubectl checks the flag's value, before it reads a file (an empty file prints nothing)
        raise PluginError("template format specified but no template given")
    if fmt == "jsonpath-file":
        if os.path.isdir(text):         # os.ReadFile opens a directory, then fails to read it
            raise PluginError(f"error reading --template {argument}, read {argument}: is a directory")
        try:
            with open(text, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
        except OSError as exc:
            raise PluginError(f"error reading --template {argument}, open {argument}: {_go_errno(exc)}") from None
    return text


def prepare(fmt: str, argument: str | None) -> str:
    """Checked at the command line, before any request: the template parses."""
    text = template_of(fmt, argument)
    try:
        jsonpath.parse(text)
    except jsonpath.JSONPathError as exc:
        raise PluginError(f"error parsing jsonpath {text}, {exc}") from None
    return text


def write(data, output, out) -> None:
    template = output.template
    try:
        text = jsonpath.JSONPath(template, allow_missing_keys=output.allow_missing_keys).execute(data)
    except jsonpath.JSONPathError as exc:
        raise PluginError(f"error executing jsonpath {go_quote(template)}: Error executing template: {exc}.") \
            from None
    out.write(for_terminal(text, out))


def for_terminal(text: str, out) -> str:
    """`text` as kubectl writes it; on a terminal, every control character but newline and tab
    made visible (cluster data never drives the terminal)."""
    isatty = getattr(out, "isatty", None)
    if isatty is None or not isatty():
        return text
    from kubectl_kvcache.render.core import escape

    return re.sub(r"[^\n\t]+", lambda m: escape(m.group()), text)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """Go's %q of a string (strconv.Quote): printable runes kept, the rest escaped."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _go_errno(exc: OSError) -> str:
    """The text Go's syscall.Errno gives for the usual open errors."""
    import errno

    return {errno.ENOENT: "no such file or directory", errno.EACCES: "permission denied",
            errno.EISDIR: "is a directory"}.get(exc.errno or 0, (exc.strerror or str(exc)).lower())
