"""`verify`: its help, flags and options; what it does is flows/verify.py."""

from __future__ import annotations

from kubectl_kvcache.cli import connection_flags, flags
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.kube.connection import Connection, parse_duration
from kubectl_kvcache.render.output import Output
from kubectl_kvcache.record import Record

NAME = "verify"
DEFAULT_ROLLOUT_TIMEOUT = "10m"     # --wait, as kubectl rollout status --timeout would be set
SELECTS = "Pods (ANDed with the plugin's own selectors)"
HELP = dict(
    help="the effective dtype of every pool-attached engine container, against its Binding",
    description="For each pool-attached engine container: the --kv-cache-dtype the engine will run with "
                "(parsed as that engine version parses its argv), against its Binding. Naming PODs also "
                "prints their argv with every occurrence marked.\n\nStatus: OK, MISMATCH, MISSING (not "
                "rolled yet), REJECTED (the engine exits on its arguments), UNKNOWN (cannot be decided, with "
                "why). -o wide adds the reason and the fix; after a summary that is not all OK, the command "
                "to run next is printed on stderr.\n\n" + flags.SCOPE_NOTE
                + "-l/--selector selects Pods by label (ANDed with the plugin's own selectors).",
    examples=("verify -A", "verify -n llm-prod -o wide", "verify -n llm-prod llama-long-server-0",
              "verify -A -l app.kubernetes.io/instance=llama-long", "verify -A --assume-setting on",
              "verify -f saved.json -o json"))


class VerifyOptions(Record):
    __slots__ = ("connection", "scope", "output", "fail_on", "watch", "wait", "timeout")

    def __init__(self, connection: Connection, scope: Scope, output: Output, fail_on: tuple[str, ...] = (),
                 watch: bool = False, wait: bool = False, timeout: float | None = None):
        self.connection = connection
        self.scope = scope
        self.output = output
        self.fail_on = fail_on      # statuses that make exit 1; () = every status but OK
        self.watch = watch          # -w: print a row whenever a replica's verdict changes
        self.wait = wait            # block until every replica runs its expected value
        self.timeout = timeout      # seconds --wait/--watch run; None: no limit


def add(sub, commands):
    v = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    v.add_argument("pods", nargs="*", metavar="POD", help="only these Pods (in the namespace)")
    flags.scope_flags(v, selects=SELECTS)
    flags.assume_setting_flag(v)
    flags.output_flags(v)
    v.add_argument("--fail-on", metavar="STATUS,...",
                   help="statuses that make the exit code 1 (default: every status but OK), e.g. "
                        "REJECTED,MISMATCH,UNKNOWN to tolerate replicas that are still rolling")
    v.add_argument("-w", "--watch", action="store_true",
                   help="after the list, watch Pods and ModelDeployments and print a row whenever a "
                        "replica's verdict or state changes")
    v.add_argument("--wait", action="store_true",
                   help="block until every replica of every pool-attached ModelDeployment in scope runs its "
                        "expected value (exit 0); exit 1 as soon as one is confirmed REJECTED, or at --timeout")
    v.add_argument("--timeout", help=f"how long --wait waits (default {DEFAULT_ROLLOUT_TIMEOUT}) or --watch "
                                     f"watches (default: until interrupted), e.g. 30s, 10m; 0: no limit")
    connection_flags.add(v)


def options(ns) -> VerifyOptions:
    fail_on = ()        # every status but OK
    if ns.fail_on is not None:
        from kubectl_kvcache.judge.verify import STATUSES     # only then: verify loads while the lists are read

        words = [w.strip().upper() for w in ns.fail_on.split(",") if w.strip()]
        unknown = [w for w in words if w not in STATUSES]
        if unknown or not words:
            raise PluginError(f"--fail-on: {unknown[0] if unknown else ns.fail_on!r} is not a status (use a "
                              f"comma-separated list of {', '.join(STATUSES)})")
        fail_on = tuple(dict.fromkeys(words))
    if (ns.watch or ns.wait) and ns.filename:
        raise PluginError("--watch/--wait follow a live cluster: they cannot be used with -f/--filename")
    if (ns.watch or ns.wait) and ns.pods:
        raise PluginError("--watch/--wait follow every replica in scope: they cannot be used with POD names")
    if ns.wait and ns.selector:
        raise PluginError("--wait accounts for every replica of each deployment: it cannot be used with "
                          "-l/--selector")
    if ns.watch and ns.output in ("json", "yaml"):
        raise PluginError("--watch prints table rows: use -o table or -o wide (--wait -o json prints the "
                          "final report)")
    if ns.timeout is not None and not (ns.watch or ns.wait):
        raise PluginError("--timeout needs --wait or --watch")
    timeout = parse_duration(ns.timeout if ns.timeout is not None else
                             (DEFAULT_ROLLOUT_TIMEOUT if ns.wait else "0"), "--timeout")
    return VerifyOptions(connection_flags.connection(ns), flags.scope(ns, pods=ns.pods), flags.output(ns),
                         fail_on=fail_on, watch=ns.watch, wait=ns.wait, timeout=timeout)


def prefetch(options: VerifyOptions) -> Scope | None:
    """The snapshot the command starts with (load.reader.read), which the command line loads while
    the command's modules import; None: --watch/--wait list with resourceVersions instead."""
    return None if (options.watch or options.wait) else options.scope


def run(options: VerifyOptions, io) -> int:
    from kubectl_kvcache.cli.flows import verify as flow

    return flow.run(options, io)
