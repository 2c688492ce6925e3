"""The -o formats, one record each: what a format is lives here and nowhere else. A new format is
its printer module here and its one record in FORMATS; each command's -o choices, their help and
completion (cli/flags.py), the formats a run over several contexts may print (cli/contexts.py)
and those --watch can stream (cli/commands/verify.py) are read from the records, as kubectl's
PrintFlags derives AllowedFormats() from its printers.

What a printer module has, by its record's kind:
  ROWS      show(view, report, output, out, err): a view's rows, for a person (table, wide,
            describe) or for a program (csv: `people` False, so stdout holds nothing but the rows)
  DATA      write(data, out): a view's to_dict(), or any document the command has (json, yaml)
  LIST      kubectl's own printers over the rows as `kubectl get` hands them over (a v1 List:
            render/kubectl_list.py): prepare(format, argument) checks `-o NAME=ARGUMENT` at the
            command line, write(list, output, out) prints (jsonpath, custom-columns, name)
  DOCUMENT  emit(doc, out): the whole report (render/report.py's Document: the cases per object
            and the findings one by one, with what was checked), and failed_run(command, message,
            output, out) for a run that could not judge anything; a DOCUMENT format `recover`
            offers also has plan(data, command, out)
A command prints its human-only lines (notes, summaries) only for ROWS formats (`structured`), on
stdout only for the formats people read (`people`).

`describe` is an -o format rather than a flag: the plugin's commands are the verbs, and the
block form is one more way to print the same rows, chosen where kubectl users choose a format;
it combines with -n/-A/-l and names as every -o does, and no flag has to refuse `-o json`.
Light on purpose: the command line reads these records for -o's choices before anything loads."""

from kubectl_kvcache.record import Record

ROWS, DATA, LIST, DOCUMENT = "rows", "data", "list", "document"
JUDGING = ("verify", "check", "bindings", "roles")      # the commands that judge and report
EVERY = JUDGING + ("recover", "setting", "engines")    # setting: `setting status`, the one with -o


class Format(Record):
    """One -o format. `commands`: the commands that offer it; `fleet`: one output may hold several
    contexts (--contexts/--all-contexts); `streams`: each row can be printed as it comes, so
    --watch can print a row per change (json/yaml: a watch event each); `people`: a person reads its stdout (a command may add
    lines of its own there); `help`: what it is for, in -o's help (None: its name says it)."""

    __slots__ = ("name", "kind", "commands", "fleet", "streams", "people", "help", "argument", "module")

    def __init__(self, name: str, kind: str, commands: tuple[str, ...], fleet: bool = False, streams: bool = False,
                 people: bool = True, help: str | None = None, argument: bool = False, module: str | None = None):
        self.name = name
        self.kind = kind
        self.commands = commands
        self.fleet = fleet
        self.streams = streams
        self.people = people and kind == ROWS
        self.help = help
        self.argument = argument        # written -o NAME=ARGUMENT (kubectl's jsonpath=..., custom-columns=...)
        self.module = module or name.replace("-", "_")

    @property
    def structured(self) -> bool:
        """Data or a document, not rows: no human-only lines go to stdout with it."""
        return self.kind != ROWS

    def printer(self):
        """The printer module (imported when first asked for)."""
        import importlib

        return importlib.import_module(f"{__name__}.{self.module}")


FORMATS = {f.name: f for f in (
    Format("table", ROWS, EVERY, fleet=True, streams=True),
    Format("wide", ROWS, JUDGING, fleet=True, streams=True),
    Format("describe", ROWS, JUDGING),
    Format("csv", ROWS, JUDGING, fleet=True, people=False, help="every column, for a spreadsheet or a program"),
    Format("json", DATA, EVERY + ("admission",), fleet=True, streams=True),     # --watch: one watch event per line
    Format("yaml", DATA, EVERY + ("admission",), fleet=True, streams=True),     # --watch: one document per watch event
    Format("markdown", DOCUMENT, JUDGING + ("recover",), fleet=True, help="a report for a change ticket"),
    Format("junit", DOCUMENT, JUDGING, fleet=True, help="JUnit XML for a CI's test reporter"),
    Format("sarif", DOCUMENT, ("verify", "check"), fleet=True, help="SARIF 2.1.0 for code scanning"),
    Format("openmetrics", DOCUMENT, ("verify", "check"), fleet=True, help="OpenMetrics text for Prometheus"),
    Format("prometheus", DOCUMENT, ("verify", "check"), fleet=True,
           help="Prometheus 0.0.4 text, for a Pushgateway or a textfile collector"),
    Format("policyreport", DOCUMENT, ("verify", "check"),
           help="wgpolicyk8s.io PolicyReports for the cluster to keep (--apply-reports)"),
    Format("openreports", DOCUMENT, ("verify", "check"), help="the same as openreports.io Reports"),
    Format("name", LIST, JUDGING, help="kind/name of each row's object, as kubectl -o name"),
    Format("jsonpath", LIST, JUDGING, argument=True,
           help="jsonpath=TEMPLATE, kubectl's JSONPath template over the rows"),
    Format("jsonpath-file", LIST, JUDGING, argument=True, module="jsonpath",
           help="jsonpath-file=FILE, the template from a file"),
    Format("custom-columns", LIST, JUDGING, argument=True,
           help="custom-columns=HEADER:PATH,..., kubectl's custom columns"),
    Format("custom-columns-file", LIST, JUDGING, argument=True, module="custom_columns",
           help="custom-columns-file=FILE, the columns from a file"),
)}


class Choices(tuple):
    """-o's choices for argparse: the format names (what help, errors and completion list), and
    `in` true for `NAME=ARGUMENT` when that format takes an argument (-o jsonpath=...)."""

    __slots__ = ()

    def __contains__(self, value) -> bool:
        if not isinstance(value, str):
            return False
        name, sep, _ = value.partition("=")
        if sep:
            return tuple.__contains__(self, name) and FORMATS[name].argument
        return tuple.__contains__(self, value)


def split(value: str) -> tuple[str, str | None]:
    """`jsonpath={.a}` -> ("jsonpath", "{.a}"); `json` -> ("json", None)."""
    name, sep, argument = value.partition("=")
    return (name, argument) if sep else (value, None)


def get(name: str) -> Format:
    return FORMATS[name]


def offered(command: str) -> tuple[str, ...]:
    """The -o choices of `command`, in the registry's order."""
    return tuple(f.name for f in FORMATS.values() if command in f.commands)


def for_fleet(command: str) -> tuple[str, ...]:
    """Those of `command`'s formats one output of several contexts may hold."""
    return tuple(n for n in offered(command) if FORMATS[n].fleet)


def streaming(command: str) -> tuple[str, ...]:
    """Those of `command`'s formats --watch can print a row at a time in."""
    return tuple(n for n in offered(command) if FORMATS[n].streams)


def documents() -> tuple[str, ...]:
    return tuple(n for n, f in FORMATS.items() if f.kind == DOCUMENT)


def help_text(command: str, note: str = "") -> str:
    """-o's help for `command`: its choices, then what the less obvious ones are for."""
    names = offered(command)
    said = [f"{n}: {FORMATS[n].help}" for n in names if FORMATS[n].help]
    return "output format: " + ", ".join(names) + (f" ({'; '.join(([note] if note else []) + said)})"
                                                   if said or note else "")


def printer(name):
    """The printer module of format `name`."""
    return FORMATS[name].printer()
