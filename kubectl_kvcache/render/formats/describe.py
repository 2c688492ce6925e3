"""-o describe: each row as a `kubectl describe` block, every field in full, blocks apart by a
blank line. A view gives a row's fields as (label, value) pairs; a value that is a list of rows
is a section: its label alone, then its rows indented and aligned (an argv listing).

Like kubectl's describers (k8s.io/kubectl pkg/describe: tabbedString's tabwriter with padding 2
and PrefixWriter's two-space levels), the values line up after the longest label; nothing is
cut or wrapped: a long message is one line, which the terminal folds."""

from kubectl_kvcache.render.core import cell, escape, line

PADDING = 2
INDENT = "  "


def block(fields, out):
    """One row's fields; None and "" are `<none>`, as kubectl describe prints an empty field."""
    labels = [f"{label}:" for label, value in fields if not isinstance(value, list)]
    width = max((len(x) for x in labels), default=0) + PADDING
    lines = []
    for label, value in fields:
        if isinstance(value, list):
            lines.append(f"{label}:" if value else f"{f'{label}:':<{width}}{'<none>'}")
            lines += section(value)
        else:
            lines.append(f"{f'{label}:':<{width}}{cell(value)}")
    for text in lines:
        line(out, text.rstrip())     # escaped already: escaping again changes nothing


SECTION_CELL = 60     # a longer cell (a JSON argument) pushes only its own row's next cell


def section(rows):
    """Rows of cells under a label: indented, each column as wide as its longest cell + 2 (at
    most SECTION_CELL + 2)."""
    rows = [[escape(c) for c in row] for row in rows]
    widths = [min(max(len(r[i]) for r in rows if i < len(r)), SECTION_CELL) + PADDING
              for i in range(max(map(len, rows), default=0))]
    return [INDENT + "".join((c.ljust(widths[i]) if len(c) < widths[i] else c + ' ' * PADDING) if i < len(r) - 1 else c for i, c in enumerate(r)) for r in rows]


def show(view, report, output, out, err=None) -> int:
    rows = list(view.rows(report))
    for n, row in enumerate(rows):
        if n:
            line(out)
        block(view.describe(row), out)
    return len(rows)
