"""`verify`: its help, flags and options; what it does is flows/verify.py."""

from __future__ import annotations

from kubectl_kvcache.cli import connection_flags, contexts, flags
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.kube.connection import parse_duration
from kubectl_kvcache.render import formats
from kubectl_kvcache.cli.options import VerifyOptions

NAME = "verify"
DEFAULT_ROLLOUT_TIMEOUT = "10m"     # --wait, as kubectl rollout status --timeout would be set
SELECTS = "Pods (ANDed with the plugin's own selectors)"
POLICY = flags.PolicyTerms("verify", "status", "replicas")

def status_help() -> str:
    """STATUS's words as the judge gives them (judge/statuses.py: the one home), each with its
    meaning, and --watch's DELETED: never a list written here."""
    from kubectl_kvcache.judge import statuses

    said = "; ".join(f"{s} ({statuses.MEANINGS[s]})" for s in statuses.STATUSES)
    return f"Status: {said}; and {statuses.DELETED} ({statuses.DELETED_MEANING})."


HELP = dict(
    help="the effective dtype of every pool-attached engine container, against its Binding",
    description="For each pool-attached engine container: the --kv-cache-dtype the engine will run with "
                "(parsed as that engine version parses its argv), against its Binding. Naming PODs also "
                "prints their argv with every occurrence marked.\n\n" + status_help() +
                " -o wide adds the role, engine, version, container, owner, Pod state, node, what the engine "
                "said (--observe: its dtype, its KV cache's CAPACITY in tokens and its MAX-LEN) and a crash's "
                "cause in the engine's own words; --observe also adds OBSERVED "
                "to the default columns; -o describe prints "
                "each one as a block with the reason, the fix and the argv; after a summary that is not all OK, "
                "the command "
                "to run next is printed on stderr.\n\n" + flags.SCOPE_NOTE
                + "-l/--selector selects Pods by label (ANDed with the plugin's own selectors).\n\n"
                  "--policy, --ignore and --severity (docs/policy.md) take verify's statuses as codes: a replica "
                  "whose status --fail-on makes fail is an error, one it tolerates a warning, and a rule may give it "
                  "another severity (error fails) or ignore it; they judge a report, not a rollout, so they are "
                  "not taken with --watch or --wait.",
    examples=("verify -A", "verify -n llm-prod -o wide", "verify -n llm-prod --observe -o wide", "verify -n llm-prod llama-long-server-0",
              "verify -n llm-prod llama-long-server-0 -o describe",
              "verify -A -l app.kubernetes.io/instance=llama-long", "verify -A --assume-setting on",
              "verify -f saved.json -o json", "verify -A --ignore MISSING --severity MISMATCH=warning",
              "verify -A --policy examples/verify-policy.yaml", "verify --all-contexts -A",
              "verify -A -o policyreport --apply-reports --dry-run"))


def md_types() -> set[str]:
    """TYPE of TYPE/NAME as kubectl spells a ModelDeployment: the CRD's short name (md, in
    tests/cluster/crds), its kind and its plural, the last two also with the group."""
    from kubectl_kvcache.operator import api

    md = api.MODEL_DEPLOYMENT
    return {"md"} | {t for base in (md.kind.lower(), md.plural) for t in (base, f"{base}.{md.group}")}


def deployment_names(words) -> tuple[str, ...]:
    """The NAMEs of `md/NAME` words (kubectl's TYPE/NAME); a plain name or another type is refused."""
    from kubectl_kvcache.kube import names

    found, types = [], md_types()
    for word in words:
        kind, slash, name = word.partition("/")
        if not slash:
            raise PluginError(f"--watch/--wait follow deployments, not Pods: name one as md/{word} "
                              f"(or leave names out to follow every deployment in scope)")
        if kind.lower() not in types:
            raise PluginError(f"{word}: --watch/--wait follow ModelDeployments: use md/NAME, not {kind}/")
        if not name or "/" in name:
            raise PluginError(f"{word}: name one ModelDeployment as md/NAME")
        names.valid_name(name, "ModelDeployment")
        found.append(name)
    return tuple(dict.fromkeys(found))


def add(sub, commands):
    v = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    v.add_argument("pods", nargs="*", metavar="POD", help="only these Pods (in the namespace); with --watch/--wait, "
                                                         "md/NAME: only these ModelDeployments")
    flags.scope_flags(v, selects=SELECTS)
    flags.assume_setting_flag(v)
    flags.output_flags(v, NAME)
    from kubectl_kvcache.judge.statuses import STATUSES

    v.add_argument("--fail-on", metavar="STATUS,...",
                   help=f"statuses that make the exit code 1, of {', '.join(STATUSES)} (default: every status "
                        f"but OK), e.g. "
                        "REJECTED,MISMATCH,UNKNOWN to tolerate replicas that are still rolling")
    v.add_argument("-w", "--watch", action="store_true",
                   help="after the list, watch Pods, ModelDeployments, Bindings and the Setting and print a "
                        "row whenever a replica's verdict or state changes, with the time it was seen (TIME; "
                        "-o json|yaml: one watch event each, with `time`)")
    v.add_argument("--wait", action="store_true",
                   help="block until every replica of every pool-attached ModelDeployment in scope (md/NAME or "
                        "-l: those selected) runs its expected value (exit 0); exit 1 as soon as one is confirmed "
                        "REJECTED, when rolling will not change any replica left, or at --timeout")
    v.add_argument("--observe", action="store_true",
                   help="also read what each running engine reports it runs with: its start-up log through "
                        "pods/log (bounded) and, for vLLM, /metrics through pods/proxy; shown as OBSERVED "
                        "beside EFFECTIVE (<conflict>: its reports disagree; <not-read>: seen, not read), a "
                        "disagreement fails. A crashed replica's last log is read without it")
    v.add_argument("--timeout", help=f"how long --wait waits (default {DEFAULT_ROLLOUT_TIMEOUT}) or --watch "
                                     f"watches (default: until interrupted), e.g. 30s, 10m; 0: no limit")
    flags.policy_flags(v, POLICY)
    flags.report_flags(v)
    connection_flags.add(v)
    contexts.add(v)


def options(ns) -> VerifyOptions:
    fail_on = ()        # every status but OK
    if ns.fail_on is not None:
        from kubectl_kvcache.judge.statuses import STATUSES

        words = [w.strip().upper() for w in ns.fail_on.split(",") if w.strip()]
        unknown = [w for w in words if w not in STATUSES]
        if unknown or not words:
            raise PluginError(f"--fail-on: {unknown[0] if unknown else ns.fail_on!r} is not a status (use a "
                              f"comma-separated list of {', '.join(STATUSES)})")
        fail_on = tuple(dict.fromkeys(words))
    if (ns.watch or ns.wait) and flags.policy_given(ns):
        # a policy judges a report; --wait's "done" is the rollout's, never a policy's (docs/policy.md)
        raise PluginError(f"--policy/--ignore/--severity judge a report, not a rollout: they cannot be used with "
                          f"--{'wait' if ns.wait else 'watch'} (wait, then run verify with the policy)")
    if (ns.watch or ns.wait) and ns.filename:
        raise PluginError("--watch/--wait follow a live cluster: they cannot be used with -f/--filename")
    deployments = deployment_names(ns.pods) if (ns.watch or ns.wait) else ()
    if deployments and ns.selector:
        raise PluginError("md/NAME and -l/--selector cannot be used together: name the deployments, or select "
                          "them")
    if deployments and ns.all_namespaces:
        raise PluginError("md/NAME names a deployment in one namespace: use -n, not -A")
    typed = [p for p in ns.pods if p.partition("/")[0].lower() in md_types() and "/" in p]
    if typed and not (ns.watch or ns.wait):
        raise PluginError(f"{typed[0]}: md/NAME needs --watch or --wait (without, verify takes Pod names)")
    if ns.watch and ns.output not in formats.streaming(NAME):
        raise PluginError(f"--watch prints rows as they come: use -o {' or -o '.join(formats.streaming(NAME))} "
                          f"(--wait -o {ns.output} prints the final report)")
    if ns.timeout is not None and not (ns.watch or ns.wait):
        raise PluginError("--timeout needs --wait or --watch")
    timeout = parse_duration(ns.timeout if ns.timeout is not None else
                             (DEFAULT_ROLLOUT_TIMEOUT if ns.wait else "0"), "--timeout")
    pods = () if (ns.watch or ns.wait) else ns.pods
    inner = VerifyOptions(connection_flags.connection(ns), flags.scope(ns, pods=pods), flags.output(ns),
                          fail_on=fail_on, watch=ns.watch, wait=ns.wait, timeout=timeout, deployments=deployments,
                          policy=flags.policy(ns), observe=ns.observe, publish=flags.publish(ns, NAME))
    return contexts.wrap(ns, NAME, "verify", inner, (
        (ns.pods, "naming Pods picks them in one cluster"),
        (ns.watch or ns.wait, "--watch/--wait follow one cluster's rollout")))


def prefetch(options: VerifyOptions) -> Scope | None:
    """The snapshot the command starts with (load.reader.read), which the command line loads while
    the command's modules import; None: --watch/--wait list with resourceVersions instead, and
    several contexts are each read in their own thread."""
    if isinstance(options, contexts.FleetOptions):
        return None
    return None if (options.watch or options.wait) else options.scope


def run(options: VerifyOptions, io) -> int:
    if isinstance(options, contexts.FleetOptions):
        return contexts.run(options, io)
    from kubectl_kvcache.cli.flows import verify as flow

    return flow.run(options, io)
