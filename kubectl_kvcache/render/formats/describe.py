"""-o describe: each row as a `kubectl describe` block, every field in full, blocks apart by a
blank line. A view gives a row's fields as (label, value) pairs; a value that is a list of rows
is a section: its label alone, then its rows indented and aligned (an argv listing).

Like kubectl's describers (k8s.io/kubectl pkg/describe: tabbedString's tabwriter with padding 2
and PrefixWriter's two-space levels), the values line up after the longest label; nothing is
cut; piped, a long message is one line. On a terminal (render/terminal.py) a value longer than
the line is wrapped at spaces under itself, and an argv row's mark (`<- kv-cache-dtype #1 ...`)
that does not fit goes on its own line under its element."""

from kubectl_kvcache.render.core import cell, escape, line

PADDING = 2
INDENT = "  "


def block(fields, out, term=None):
    """One row's fields; None and "" are `<none>`, as kubectl describe prints an empty field."""
    from kubectl_kvcache.render import terminal

    term = terminal.of(out) if term is None else term
    labels = [f"{label}:" for label, value in fields if not isinstance(value, list)]
    width = max((len(x) for x in labels), default=0) + PADDING
    lines = []
    for label, value in fields:
        if isinstance(value, list):
            lines.append(f"{label}:" if value else f"{f'{label}:':<{width}}{'<none>'}")
            lines += section(value, term.width)
        elif term.width and width + len(cell(value)) > term.width:
            lines += terminal.wrap(cell(value), term.width, " " * width, first=f"{f'{label}:':<{width}}")
        else:
            lines.append(f"{f'{label}:':<{width}}{cell(value)}")
    for text in lines:
        line(out, text.rstrip(), wrap=False)     # escaped, and laid out for the terminal already


SECTION_CELL = 60     # a longer cell (a JSON argument) pushes only its own row's next cell


def section(rows, width=None):
    """Rows of cells under a label: indented, each column as wide as its longest cell + 2 (at
    most SECTION_CELL + 2). `width`: a terminal's; a row longer than it has its last cell (a
    mark, a note) on the next line, under its second cell."""
    rows = [[escape(c) for c in row] for row in rows]
    widths = [min(max(len(r[i]) for r in rows if i < len(r)), SECTION_CELL) + PADDING
              for i in range(max(map(len, rows), default=0))]
    out = []
    for r in rows:
        text = INDENT + "".join((c.ljust(widths[i]) if len(c) < widths[i] else c + ' ' * PADDING)
                                if i < len(r) - 1 else c for i, c in enumerate(r))
        if width and len(text) > width and len(r) > 2:
            head = INDENT + "".join(c.ljust(widths[i]) if len(c) < widths[i] else c + ' ' * PADDING
                                    for i, c in enumerate(r[:-2]))
            out.append((head + r[-2]).rstrip())
            out.append(" " * len(head) + r[-1])
        else:
            out.append(text)
    return out


def show(view, report, output, out, err=None) -> None:
    rows = list(view.rows(report))
    for n, row in enumerate(rows):
        if n:
            line(out)
        block(view.describe(row), out)
