"""One printer module per -o format, behind this registry: a new format is one module here and
one entry in FORMATS. A rows printer (structured False) has show(view, report, output, out, err)
-> rows listed; a data printer (structured True) has write(data, out) and prints a view's
to_dict(). Commands print their human-only lines (notes, summaries) unless the format is
structured. Light on purpose: the command line reads FORMATS for -o's choices."""

FORMATS = {"table": False, "wide": False, "json": True, "yaml": True}     # name -> structured


def printer(name):
    """The printer module of format `name`."""
    import importlib

    return importlib.import_module(f"{__name__}.{name}")
