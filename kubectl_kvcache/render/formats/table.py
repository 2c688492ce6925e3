"""-o table (the default): a view's columns as kubectl prints them; fitted to a terminal (long
cells shortened, with a note), never when piped."""

import sys

from kubectl_kvcache.render.core import note, table


def show(view, report, output, out, err=None, wide=False) -> int:
    rows = view.cells(report, wide)
    if table(view.headers(wide), rows, out, not output.headers, fit=() if wide else view.shortenable(False)):
        note(sys.stderr if err is None else err, "long cells are shortened to fit the terminal: -o wide or -o json "
                                                 "shows them in full")
    return len(rows)
