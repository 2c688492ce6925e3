"""-o csv: the rows for a spreadsheet or a program (RFC 4180, the stdlib's csv writer): every
column of the view, the wide ones included (a file is read once, in full, as the reports are),
headers as the table's, `--no-headers` honoured, an empty cell for what the table shows as
`<none>`. Cluster text is escaped as in the table (render.core.escape: no control character
reaches a terminal that cats the file), and a cell a spreadsheet would run as a formula
(`=`, `+`, `-`, `@` first) is prefixed with `'` (OWASP's CSV injection advice)."""

from __future__ import annotations

import csv
import re

from kubectl_kvcache.render.core import escape

_FORMULA = re.compile(r"[=+@]|-(?![\d.]*$)")


def _cell(value) -> str:
    if value is None or value == "":
        return ""
    text = escape(value)
    return "'" + text if _FORMULA.match(text) else text


def show(view, report, output, out, err=None) -> None:
    writer = csv.writer(out, lineterminator="\r\n")
    if output.headers:
        writer.writerow([h.upper() for h in view.headers(True)])
    writer.writerows([_cell(v) for v in row] for row in view.cells(report, True))
