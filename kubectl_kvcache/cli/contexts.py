"""Many clusters in one run: --contexts CTX[,CTX...], --all-contexts and --parallel N on the read
commands (verify, check, bindings, roles, setting status), their validation, and the refusal on
the writes. Each context is read as `--context CTX` would read it, with every other connection
and scope flag applied to it as kubectl applies them (flows/fleet.py runs them)."""

from __future__ import annotations

import argparse

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.record import Record

DEFAULT_PARALLEL = 8        # contexts read at once: I/O-bound, each with its own connections
FLAGS = "--contexts/--all-contexts"


def add(p, writes=False):
    """The multi-context flags. `writes`: a command that changes a cluster takes them only to
    refuse them with one line (hidden from its help)."""
    if writes:
        for flag in ("--contexts", "--parallel"):
            p.add_argument(flag, help=argparse.SUPPRESS)
        p.add_argument("--all-contexts", action="store_true", help=argparse.SUPPRESS)
        return
    g = p.add_argument_group("many clusters")
    g.add_argument("--contexts", metavar="CTX[,CTX...]",
                   help="read these kubeconfig contexts, each as --context would (one table, a CONTEXT column)")
    g.add_argument("--all-contexts", action="store_true", help="read every context of the kubeconfig(s)")
    g.add_argument("--parallel", type=int, metavar="N",
                   help=f"contexts read at once with --contexts/--all-contexts (default {DEFAULT_PARALLEL})")


class FleetOptions(Record):
    """One read command over several contexts: `inner` holds the command's own options, as they
    apply to each context (its connection has no --context: each context's name is filled in);
    `flow` names the module of cli/flows whose read-flow face runs each context."""

    __slots__ = ("command", "flow", "inner", "contexts", "parallel")

    def __init__(self, command: str, flow: str, inner, contexts: tuple[str, ...] | None,
                 parallel: int = DEFAULT_PARALLEL):
        self.command = command          # verify | check | bindings | roles | setting: for messages
        self.flow = flow                # verify | check | setting
        self.inner = inner
        self.contexts = contexts        # as given, in order; None: every context of the kubeconfig
        self.parallel = parallel


def given(ns) -> bool:
    return bool(getattr(ns, "contexts", None) is not None or getattr(ns, "all_contexts", False))


def refuse_on_write(ns, what):
    """`setting on|off` and `recover` change one cluster at a time."""
    if given(ns) or getattr(ns, "parallel", None) is not None:
        raise PluginError(f"{what} changes one cluster at a time: {FLAGS} cannot be used (run it once per "
                          f"context, with --context)")


def wrap(ns, command, flow, inner, refusals=()):
    """`inner` as it is, or a FleetOptions when a multi-context flag was given, validated before
    anything is read. `flow`: the cli/flows module that reads one context (its face:
    cli/flows/__init__.py). `refusals`: (condition, message) pairs the command adds."""
    if not given(ns):
        if getattr(ns, "parallel", None) is not None:
            raise PluginError(f"--parallel needs {FLAGS}")
        return inner
    if ns.contexts is not None and ns.all_contexts:
        raise PluginError("--contexts and --all-contexts cannot be used together")
    if ns.context:
        raise PluginError(f"--context picks one context: it cannot be used with {FLAGS}")
    if getattr(ns, "filename", None):
        raise PluginError(f"-f/--filename reads saved objects, not clusters: it cannot be used with {FLAGS}")
    from kubectl_kvcache.render import formats

    allowed = formats.for_fleet(command)      # the format records say which may hold several contexts
    if getattr(ns, "output", "table") not in allowed:
        raise PluginError(f"-o {ns.output} reports one context: it cannot be used with {FLAGS} (use -o "
                          f"{', '.join(allowed)})")
    for bad, message in refusals:
        if bad:
            raise PluginError(f"{message}: it cannot be used with {FLAGS}")
    parallel = DEFAULT_PARALLEL if ns.parallel is None else ns.parallel
    if parallel < 1:
        raise PluginError(f"--parallel must be 1 or more, not {parallel}")
    names = None
    if ns.contexts is not None:
        names = tuple(dict.fromkeys(n.strip() for n in ns.contexts.split(",") if n.strip()))
        if not names:
            raise PluginError(f"--contexts needs at least one context name, not {ns.contexts!r}")
    return FleetOptions(command, flow, inner, names, parallel)


def run(options: FleetOptions, io) -> int:
    from kubectl_kvcache.cli.flows import fleet

    return fleet.run(options, io)
