"""-o table (the default): a view's columns as kubectl prints them: every cell in full, never cut
or fitted to the terminal; the free-text column last (render.core.table)."""

from kubectl_kvcache.render.core import table


def show(view, report, output, out, err=None) -> int:
    rows = view.cells(report, output)
    table(view.headers(output), rows, out, not output.headers, text=view.text_columns(output))
    return len(rows)
