"""`check` (and the views bindings and roles share with it): help, flags and options; what it
does is flows/check.py."""

from __future__ import annotations

from kubectl_kvcache.cli import connection_flags, contexts, flags
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.cli.options import CheckOptions

NAME = "check"
SELECTS = "findings about objects (a ModelDeployment also when its Pods have them, as verify selects Pods)"
HELP = dict(
    help="everything the upgrade guide asks you to check before turning the Setting on",
    description="Everything the upgrade guide asks you to check before the Setting is on: Binding spellings "
                "against their engines, Bindings reusing a claimed domain, roles that pass the flag "
                "themselves, take-over roles, injection opt-ins the webhook will refuse, and the Setting. "
                "The table is SEVERITY, CODE, OBJECT and the full MESSAGE last (NAMESPACE first with -A); "
                "-o wide adds FIX, the fix for each finding; -o describe prints each finding as a block. On a "
                "terminal narrower than the table, MESSAGE and FIX are printed on wrapped lines under their row; "
                "piped, each finding is one line.\n\n" + flags.SCOPE_NOTE
                + "-l/--selector keeps the findings about objects (Bindings, ModelDeployments, Pods, workloads) "
                  "with those labels, a ModelDeployment also when its Pods have them (the objects verify's -l "
                  "selects); everything in scope is still read and judged, and the Setting's finding is always "
                  "shown.",
    examples=("check -A", "check -n llm-prod -o describe", "check -A --strict", "check -n llm-prod --observe",
              "check -A -l team=research", "check -A -f saved.json -o json",
              "check -A --policy examples/policy.yaml", "check -A --ignore binding-unused --severity binding-auto=error",
              "check --contexts prod-eu,prod-us -A", "check -A -o openreports --apply-reports --yes"))


POLICY = flags.PolicyTerms("check", "finding code", "findings")


def add_view(name, help, sub, commands, selects, strict=False, skip_workloads=True):
    """The parser of check or of one of its views."""
    p = commands[(name, None)] = flags.command(sub, name, help["help"], help["description"], help["examples"])
    flags.scope_flags(p, selects=selects)
    flags.assume_setting_flag(p)
    flags.output_flags(p, name)
    if strict:
        p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
        flags.policy_flags(p, POLICY)
    if skip_workloads:
        flags.skip_workloads_flag(p)
    connection_flags.add(p)
    contexts.add(p)


def add(sub, commands):
    add_view(NAME, HELP, sub, commands, SELECTS, strict=True)
    flags.report_flags(commands[(NAME, None)])
    commands[(NAME, None)].add_argument(
        "--observe", action="store_true",
        help="also read the KV-cache capacity of the running replicas a fix moves to another dtype (a role's "
             "own --kv-cache-dtype removed: the Binding's dtype then runs), through pods/log, bounded, as "
             "verify --observe reads it; the fix says whether their max length still fits (vLLM refuses to "
             "start where it does not)")


def options(ns, reads_workloads=True) -> CheckOptions:
    """`reads_workloads`: the workload templates (their injection opt-ins) and the KVCachePools
    (which master holds a domain) are read: check and bindings judge them, roles does not."""
    # -l picks what is reported, not what is read: a Binding's users must all be judged
    inner = CheckOptions(ns.command, connection_flags.connection(ns),
                         flags.scope(ns, workloads=reads_workloads, selected=False, pools=reads_workloads),
                         flags.output(ns), strict=getattr(ns, "strict", False), selector=ns.selector,
                         policy=flags.policy(ns), observe=getattr(ns, "observe", False),
                         publish=flags.publish(ns, ns.command) if ns.command == NAME else None)
    return contexts.wrap(ns, ns.command, "check", inner)


def prefetch(options: CheckOptions) -> Scope | None:
    """The snapshot the command starts with (load.reader.read), loaded while the command imports;
    several contexts are each read in their own thread."""
    if isinstance(options, contexts.FleetOptions):
        return None
    return options.scope


def run(options: CheckOptions, io) -> int:
    if isinstance(options, contexts.FleetOptions):
        return contexts.run(options, io)
    from kubectl_kvcache.cli.flows import check as flow

    return flow.run(options, io)
