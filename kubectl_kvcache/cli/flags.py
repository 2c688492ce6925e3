"""What several commands share on the command line: the help layout, the scope flags (-n, -A,
-l, -f), -o and --no-headers, --assume-setting, --skip-workloads, and their conversion to
load.scope.Scope and options.Output (validated before any request)."""

from __future__ import annotations

import argparse
import textwrap

from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.kube import names
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.record import Record
from kubectl_kvcache.render import formats as format_records
from kubectl_kvcache.render.output import Output

PROG = "kubectl kvcache"

SCOPE_NOTE = """\
Scope: -n NAMESPACE (default: the context's namespace), -A every namespace (it wins over -n, as in
kubectl), -f PATH saved objects instead of a cluster (all namespaces unless -n).
"""


def wrap(text, width=None):
    """Each paragraph as one line (HelpFormatter fills it to the terminal when help is printed)."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter (its width: the terminal's, from $COLUMNS or the terminal, through
    shutil.get_terminal_size) for descriptions and epilogs too: a paragraph of prose is filled to
    that width at spaces; a paragraph with an indented line (an examples block) keeps its lines
    as written."""

    def _fill_text(self, text, width, indent):
        paragraphs = []
        for para in text.strip("\n").split("\n\n"):
            lines = para.split("\n")
            if any(x[:1].isspace() for x in lines):
                paragraphs.append("\n".join(indent + x for x in lines))
            else:
                paragraphs.append(textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                                                subsequent_indent=indent, break_long_words=False,
                                                break_on_hyphens=False))
        return "\n\n".join(paragraphs) + "\n"

    def _split_lines(self, text, width):
        """A flag's help, filled at spaces only: a name such as model-deployment-kv-cache-dtype-owned
        is never split at its hyphens."""
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)


def examples(lines):
    return "Examples:\n" + "\n".join(f"  {PROG} {e}" for e in lines) + "\n"


def command(sub, name, help, description, examples_, **extra):
    """A command's parser with its help, description and examples."""
    return sub.add_parser(name, help=help, description=wrap(description), epilog=examples(examples_),
                          formatter_class=HelpFormatter, **extra)


def scope_flags(p, files=True, selects="objects"):
    engine_data_flag(p)
    p.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (wins over -n)")
    p.add_argument("-l", "--selector", help=f"label selector: only {selects} with these labels "
                                            f"(k=v, k!=v, k, !k, k in (a,b), k notin (a,b))")
    if files:
        p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                       help="read saved objects (JSON or YAML; a file, a directory or '-') "
                            "instead of a cluster; repeatable")


def engine_data_flag(p):
    p.add_argument("--engine-data", action="append", default=[], metavar="FILE",
                   help="engine data of a release the plugin does not have (the file scripts/engine-data writes "
                        "for one release); repeatable; also read: $KVCACHE_ENGINE_DATA and "
                        "~/.local/share/kubectl-kvcache/engines/*.json")


def load_engine_data(ns) -> list[str]:
    """Merge the added engine releases (files, $KVCACHE_ENGINE_DATA, the user data directory) into
    the engine model before anything is judged; a bad file is a PluginError naming it. Returns
    one note per added release, naming its file and the releases it judges: an added release
    changes verdicts, and a judging command says so (docs/engines.md)."""
    import sys

    from kubectl_kvcache.errors import PluginError
    from kubectl_kvcache.load import added_releases

    documents = added_releases.read(getattr(ns, "engine_data", None) or ())
    if not documents and "kubectl_kvcache.engine" not in sys.modules:
        return []   # nothing added, and no earlier run in this process added any: the engine loads when used
    from kubectl_kvcache import engine

    try:
        engine.add_releases(documents)
    except engine.EngineDataError as exc:
        raise PluginError(str(exc)) from exc
    notes = []
    for name in engine.ENGINES:
        known = engine.known_releases(name)
        for i, (release, source) in enumerate(known):
            if source:
                after = next((r for r, _ in known[i + 1:]), None)
                span = f"before {after}" if after else "every later one"
                notes.append(f"{engine.DISPLAY_NAMES[name]} {release} (and the releases after it, {span}) is judged "
                             f"with the engine data added from {source}")
    return notes


def assume_setting_flag(p):
    p.add_argument("--assume-setting", choices=("on", "off"),
                   help="judge as if the Setting were on/off, without reading it (e.g. when RBAC does not "
                        "let you read settings.gpustack.ai in gpustack-system, or to preview the upgrade)")


def output_flag(p, command, note="", text=False):
    """-o of `command`: its choices and their help from the format records (render/formats).
    `note`: what the command's own table is; `text`: `-o text`, the old name of `table`, is
    still accepted (the commands that had it)."""
    choices = format_records.Choices(format_records.offered(command))
    p.add_argument("-o", "--output", default="table", choices=choices, metavar="FORMAT", action=OutputAction,
                   help=format_records.help_text(command, note), **({"type": human_format} if text else {}))


class OutputAction(argparse.Action):
    """-o NAME or -o NAME=ARGUMENT (kubectl's jsonpath=TEMPLATE, custom-columns=SPEC, and their
    -file forms): the format's name in `output`, its argument in `output_argument`."""

    def __call__(self, parser, namespace, values, option_string=None):
        name, argument = format_records.split(values)
        setattr(namespace, self.dest, name)
        namespace.output_argument = argument


def output_flags(p, command):
    """-o, and kubectl's --no-headers, --sort-by, --allow-missing-template-keys, and --color."""
    output_flag(p, command)
    p.add_argument("--no-headers", action="store_true", help="tables without the header row")
    p.add_argument("--sort-by", metavar="JSONPATH",
                   help="sort the rows by this JSONPath over each row of -o json's items, as kubectl get's "
                        "--sort-by (e.g. '{.metadata.name}', '.status'); not with markdown, junit or sarif")
    p.add_argument("--allow-missing-template-keys", type=_go_bool, default=True, nargs="?", const=True,
                   metavar="BOOL", help="-o jsonpath: a missing field prints nothing (true, kubectl's default) "
                                        "or is an error (false)")
    p.add_argument("--show-labels", action="store_true",
                   help="a LABELS column with the labels of each row's object (table and wide, as kubectl's)")
    color_flag(p)


def _go_bool(text):
    """A pflag bool's value (strconv.ParseBool): 1 t T TRUE true True, 0 f F FALSE false False."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid argument {text!r}: strconv.ParseBool: parsing {text!r}: invalid syntax")


def color_flag(p):
    p.add_argument("--color", default="auto", choices=("auto", "always", "never"),
                   help="colour statuses: auto (on a terminal, unless NO_COLOR is set), always, never; "
                        "never in -o " + ", ".join(n for n, f in format_records.FORMATS.items() if f.structured))


class PolicyTerms(Record):
    """What a command's --policy rules name, in its help's words: `name` the vocabulary
    (judge.policy.terms: check's finding codes, verify's statuses), `what` a code, `results` what
    the codes are of. Each command declares its own (cli/commands)."""

    __slots__ = ("name", "what", "results")

    def __init__(self, name: str, what: str, results: str):
        self.name = name
        self.what = what
        self.results = results


def policy_flags(p, terms: PolicyTerms):
    """--policy, --ignore, --severity (docs/policy.md): what a code's severity is, or that it is
    ignored, in the codes of `terms`."""
    p.set_defaults(policy_terms=terms.name)
    what, results = terms.what, terms.results
    p.add_argument("--policy", metavar="FILE",
                   help=f"a policy file (YAML or JSON, docs/policy.md): rules that set a {what}'s severity or "
                        "ignore it, for everything or for namespaces, kinds, names and labels")
    p.add_argument("--ignore", action="append", default=[], metavar="CODE",
                   help=f"ignore the {results} of this {what} (still counted: -o json lists them under suppressed); "
                        "repeatable; wins over --policy")
    p.add_argument("--severity", action="append", default=[], metavar="CODE=LEVEL",
                   help=f"give the {results} of this {what} the severity LEVEL (error, warning, info); "
                        "repeatable; wins over --policy")


def policy_given(ns) -> bool:
    """Whether --policy, --ignore or --severity was given."""
    return getattr(ns, "policy", None) is not None or bool(getattr(ns, "ignore", None)) \
        or bool(getattr(ns, "severity", None))


def policy(ns):
    """The judge.policy.Policy of --policy FILE (read and checked here, before any request), then
    --ignore and --severity, in the codes the command's policy_flags named; None when none was given."""
    if not policy_given(ns):
        return None
    from kubectl_kvcache.judge import policy as judge_policy

    path = getattr(ns, "policy", None)
    ignore, severity = getattr(ns, "ignore", None) or (), getattr(ns, "severity", None) or ()
    command = ns.policy_terms
    base = judge_policy.Policy((), command=command)
    if path is not None:
        from kubectl_kvcache.load import policy as load_policy

        base = judge_policy.from_file(load_policy.read(path), command)
    return base.replace(rules=base.rules + judge_policy.from_flags(ignore, severity, command))


def human_format(text):
    """`table`, kubectl's name for the lines a person reads; `text`, its name before, still accepted."""
    return "table" if text == "text" else text


def skip_workloads_flag(p):
    p.add_argument("--skip-workloads", action="store_true",
                   help="do not list Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs (for "
                        "users RBAC does not let list them): their Pod templates' injection opt-ins are not checked")


def scope(ns, pods=(), workloads=False, selected=True, pools=False) -> Scope:
    """-A wins over -n, as in kubectl. `selected`: whether -l narrows what is read (verify's Pods).
    `pools`: the KVCachePools are listed too (check, bindings: which master holds a domain); the
    recovery records always (an unfinished recovery is named: judge/checks/recovery.py).
    Names and the namespace are validated as Kubernetes validates them, before any request."""
    namespace = None if ns.all_namespaces else ns.namespace
    if namespace is not None:
        names.valid_namespace(namespace)
    for name in pods:
        names.valid_name(name, "Pod")
    if ns.selector:
        label_selector.validate(ns.selector)      # a malformed selector fails before any request
    skipped = workloads and getattr(ns, "skip_workloads", False)
    return Scope(namespace=namespace, all_namespaces=ns.all_namespaces,
                 selector=ns.selector if selected else None,
                 names=tuple(pods), files=tuple(ns.filename), workloads=workloads and not skipped,
                 workloads_skipped=skipped, assume_setting={"on": True, "off": False}.get(ns.assume_setting),
                 workloads_flag="--skip-workloads" if hasattr(ns, "skip_workloads") else None, pools=pools,
                 recoveries=True)   # verify, check, bindings, roles: a recovery stopped part-way is named


def output(ns) -> Output:
    """NAMESPACE is a column when the rows span namespaces: -A, or files without -n (kubectl
    prints it for -A only; its files are one namespace unless they say otherwise)."""
    spans = bool(getattr(ns, "all_namespaces", False)) or (
        bool(getattr(ns, "filename", None)) and getattr(ns, "namespace", None) is None)
    fmt = format_records.get(ns.output)
    command = command_line(getattr(ns, "argv", None) or ()) if fmt.kind == format_records.DOCUMENT else ""
    template = None
    if fmt.kind == format_records.LIST:     # checked here, before any request (kubectl's words on error)
        template = fmt.printer().prepare(fmt.name, getattr(ns, "output_argument", None))
        if isinstance(template, list):
            template = getattr(ns, "output_argument", None)      # custom-columns: the spec (or file) as given
    if getattr(ns, "show_labels", False) and (getattr(ns, "contexts", None) is not None
                                              or getattr(ns, "all_contexts", False)):
        from kubectl_kvcache.errors import PluginError

        raise PluginError("--show-labels shows the labels of one context's objects: not with --contexts or "
                          "--all-contexts")
    sort_by = getattr(ns, "sort_by", None)
    if sort_by is not None:
        sortable(fmt, sort_by)
    return Output(format=ns.output, headers=not getattr(ns, "no_headers", False), namespaces=spans,
                  command=command, color=getattr(ns, "color", None) or "auto", template=template,
                  sort_by=sort_by, allow_missing_keys=getattr(ns, "allow_missing_template_keys", True),
                  show_labels=getattr(ns, "show_labels", False))


def sortable(fmt, sort_by):
    """--sort-by: a JSONPath kubectl accepts, with a format that prints the rows as data (json,
    yaml) or through kubectl's printers; a PluginError otherwise, before any request."""
    from kubectl_kvcache.errors import PluginError
    from kubectl_kvcache.render import jsonpath, kubectl_list

    if fmt.kind == format_records.DOCUMENT:
        raise PluginError(f"--sort-by sorts rows (tables, csv, json, yaml and kubectl's -o formats), not a -o {fmt.name} "
                          "report (its cases keep the plugin's order: the failing first)")
    try:
        jsonpath.parse(kubectl_list.relaxed(sort_by))
    except jsonpath.JSONPathError as exc:
        raise PluginError(str(exc)) from None


_SECRET_FLAGS = {"--token": "$KVCACHE_TOKEN", "--password": "$KVCACHE_PASSWORD"}
_URL_FLAGS = ("--server", "-s", "--proxy-url")


def _no_userinfo(url):
    """A URL with any user:password@ replaced (a proxy or server URL may carry a password)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "REDACTED@" + authority.rpartition("@")[2]
    return (scheme + sep if sep else "") + authority + slash + path


def command_line(argv) -> str:
    """`kubectl kvcache ARGS` as a shell line, as typed but with no secret: the values of --token
    and --password become $KVCACHE_TOKEN and $KVCACHE_PASSWORD (as connection_flags prints
    them), a URL's userinfo REDACTED. Flags as pflag reads them: `--flag VALUE`, `--flag=VALUE`,
    `-sVALUE`; nothing after `--` is a flag."""
    from kubectl_kvcache.cli.connection_flags import shell_command

    words, i, args = [], 0, list(argv)
    while i < len(args):
        word = args[i]
        if word == "--":
            words += args[i:]
            break
        name, eq, value = word.partition("=")
        if name in _SECRET_FLAGS and name.startswith("--"):
            words += [name, _SECRET_FLAGS[name]]
            i += 1 if eq else 2
            continue
        if name in _URL_FLAGS and eq and name.startswith("--"):
            words.append(f"{name}={_no_userinfo(value)}")
        elif word in _URL_FLAGS and i + 1 < len(args):
            words += [word, _no_userinfo(args[i + 1])]
            i += 2
            continue
        elif word.startswith("-s") and not word.startswith("--") and len(word) > 2:
            words.append("-s" + _no_userinfo(word[2:].removeprefix("=")))
        else:
            words.append(word)
        i += 1
    return shell_command(PROG.split() + words)


REPORT_FORMATS = ("policyreport", "openreports")


def report_flags(p):
    """--apply-reports and its write flags (check and verify): the reports kept in the cluster."""
    p.add_argument("--apply-reports", action="store_true",
                   help="server-side apply the reports -o policyreport or -o openreports prints (field manager "
                        "kubectl-kvcache) and delete this command's reports the run did not write in the scope it "
                        "read: the cluster keeps the last results (docs/policyreports.md)")
    p.add_argument("-y", "--yes", action="store_true", help="--apply-reports: do not ask for confirmation")
    p.add_argument("--dry-run", nargs="?", const="client", default="none", choices=("none", "client", "server"),
                   help="--apply-reports: client: print what would be applied and deleted; server: let the API "
                        "server validate each write without persisting it")


def publish(ns, command):
    """The Publish options of --apply-reports, or None; its rules checked before any request."""
    from kubectl_kvcache.cli.options import Publish
    from kubectl_kvcache.errors import PluginError

    if not getattr(ns, "apply_reports", False):
        if getattr(ns, "yes", False) or getattr(ns, "dry_run", "none") != "none":
            raise PluginError(f"--yes and --dry-run go with --apply-reports (a {command} alone writes nothing)")
        return None
    if ns.output not in REPORT_FORMATS:
        raise PluginError("--apply-reports applies the reports of -o policyreport or -o openreports: give one of them")
    refused = ((getattr(ns, "filename", None), "-f/--filename (saved objects are not the cluster the reports go to)"),
               (getattr(ns, "selector", None), "-l/--selector (a namespace's report would hold only a part of it)"),
               (getattr(ns, "pods", None), "Pod names (a namespace's report would hold only a part of it)"),
               (getattr(ns, "watch", False) or getattr(ns, "wait", False), "--watch/--wait (apply after the wait)"),
               (getattr(ns, "contexts", None) is not None or getattr(ns, "all_contexts", False),
                "--contexts/--all-contexts (one cluster at a time)"))
    for given, why in refused:
        if given:
            raise PluginError(f"--apply-reports cannot be used with {why}")
    return Publish(yes=ns.yes, dry_run=ns.dry_run)
