"""-o wide: the table with the view's wide columns too (kubectl's priority-1 columns): short ones;
long prose (reasons, fixes) is -o describe's."""

from kubectl_kvcache.render.formats import table


def show(view, report, output, out, err=None) -> None:
    table.show(view, report, output, out, err)
