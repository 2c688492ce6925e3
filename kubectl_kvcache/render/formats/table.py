"""-o table (the default): a view's columns as kubectl prints them: every cell in full, never cut;
the free-text column last (render.core.table). On a terminal narrower than the table, the free
text goes on wrapped lines under its row, and statuses are coloured (render/terminal.py)."""

from kubectl_kvcache.render.core import table


def show(view, report, output, out, err=None) -> None:
    from kubectl_kvcache.render import terminal

    rows = view.cells(report, output)
    table(view.headers(output), rows, out, not output.headers, text=view.text_columns(output),
          term=terminal.of(out, output.color), status=view.status_columns(output))
