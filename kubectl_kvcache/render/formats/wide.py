"""-o wide: the table with the view's wide columns, every cell in full (as kubectl's)."""

from kubectl_kvcache.render.formats import table


def show(view, report, output, out, err=None) -> int:
    return table.show(view, report, output, out, err, wide=True)
