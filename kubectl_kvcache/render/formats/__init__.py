"""One printer module per -o format, behind this registry: a new format is one module here and
one entry in FORMATS. A rows printer (structured False) has show(view, report, output, out, err)
-> rows listed; a data printer (structured True) has write(data, out) and prints a view's
to_dict(); a document printer (DOCUMENTS: structured too) has show() only and prints the whole
report (render/report.py) with what was checked. Commands print their human-only lines (notes,
summaries) unless the format is structured. Light on purpose: the command line reads FORMATS for -o's choices.

`describe` is an -o format rather than a flag: the plugin's commands are the verbs, and the
block form is one more way to print the same rows, chosen where kubectl users choose a format;
it combines with -n/-A/-l and names as every -o does, and no flag has to refuse `-o json`."""

FORMATS = {"table": False, "wide": False, "describe": False, "json": True, "yaml": True,    # name -> structured
           "markdown": True, "junit": True}
DOCUMENTS = ("markdown", "junit")      # a whole report (render/report.py), not a view's rows or data


def printer(name):
    """The printer module of format `name`."""
    import importlib

    return importlib.import_module(f"{__name__}.{name}")
