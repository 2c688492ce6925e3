"""What several commands share on the command line: the help layout, the scope flags (-n, -A,
-l, -f), -o and --no-headers, --assume-setting, --skip-workloads, and their conversion to
load.scope.Scope and options.Output (validated before any request)."""

from __future__ import annotations

import argparse
import textwrap

from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.kube import names
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.render.formats import FORMATS
from kubectl_kvcache.render.output import Output

PROG = "kubectl kvcache"

SCOPE_NOTE = """\
Scope: -n NAMESPACE (default: the context's namespace), -A every namespace (it wins over -n, as in
kubectl), -f PATH saved objects instead of a cluster (all namespaces unless -n).
"""


def wrap(text, width=100):
    """Each paragraph filled to `width` (the descriptions are raw text: the examples keep their lines)."""
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width) for p in text.split("\n\n"))


def examples(lines):
    return "Examples:\n" + "\n".join(f"  {PROG} {e}" for e in lines) + "\n"


def command(sub, name, help, description, examples_, **extra):
    """A command's parser with its help, description and examples."""
    return sub.add_parser(name, help=help, description=wrap(description), epilog=examples(examples_),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **extra)


def scope_flags(p, files=True, selects="objects"):
    p.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (wins over -n)")
    p.add_argument("-l", "--selector", help=f"label selector: only {selects} with these labels "
                                            f"(k=v, k!=v, k, !k, k in (a,b), k notin (a,b))")
    if files:
        p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                       help="read saved objects (JSON or YAML; a file, a directory or '-') "
                            "instead of a cluster; repeatable")


def assume_setting_flag(p):
    p.add_argument("--assume-setting", choices=("on", "off"),
                   help="judge as if the Setting were on/off, without reading it (e.g. when RBAC does not "
                        "let you read settings.gpustack.ai in gpustack-system, or to preview the upgrade)")


def output_flags(p, formats=tuple(FORMATS)):
    p.add_argument("-o", "--output", default="table", choices=formats, help="output format")
    if "table" in formats:
        p.add_argument("--no-headers", action="store_true", help="tables without the header row")


def human_format(text):
    """`table`, kubectl's name for the lines a person reads; `text`, its name before, still accepted."""
    return "table" if text == "text" else text


def skip_workloads_flag(p):
    p.add_argument("--skip-workloads", action="store_true",
                   help="do not list Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs (for "
                        "users RBAC does not let list them): their Pod templates' injection opt-ins are not checked")


def scope(ns, pods=(), workloads=False, selected=True) -> Scope:
    """-A wins over -n, as in kubectl. `selected`: whether -l narrows what is read (verify's Pods).
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
                 workloads_skipped=skipped, assume_setting={"on": True, "off": False}.get(ns.assume_setting))


def output(ns) -> Output:
    return Output(format=ns.output, headers=not getattr(ns, "no_headers", False))
