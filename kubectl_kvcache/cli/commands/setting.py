"""`setting status|on|off`: help, flags and options; what it does is flows/setting.py."""

from __future__ import annotations


from kubectl_kvcache.cli import connection_flags, contexts, flags
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER, parse_duration
from kubectl_kvcache.cli.options import SettingOptions

NAME = "setting"
DEFAULT_WAIT_TIMEOUT = "60s"
HELP = dict(
    help="status|on|off of the operator's Setting model-deployment-kv-cache-dtype-owned",
    description="The Setting gpustack-system/model-deployment-kv-cache-dtype-owned decides whether the "
                "operator hands each Binding's dtype to the engine. Flipping it rolls every pool-attached "
                "ModelDeployment.",
    examples=("setting status", "setting off --dry-run", "setting off --dry-run=server",
              "setting on --yes --wait --timeout 2m"))


def add(sub, commands):
    s = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    ssub = s.add_subparsers(dest="action", metavar="ACTION", parser_class=type(s))
    st = commands[(NAME, "status")] = ssub.add_parser(
        "status", help="the Setting's current value", description=flags.wrap(
            "The Setting's value (status.value; unset reads true), whether it is editable, its description and "
            "what it means. Exit 1 when status.value is not a value the operator accepts, or while the Setting "
            "is in flight: spec.value asks for a value status.value does not report (the operator has not taken "
            "it in)."),
        epilog=flags.examples(("setting status", "setting status -o json")),
        formatter_class=flags.HelpFormatter)
    flags.output_flag(st, NAME, "table: the lines a person reads", text=True)
    connection_flags.add(st)
    contexts.add(st)
    for name, word in (("on", "true"), ("off", "false")):
        a = commands[(NAME, name)] = ssub.add_parser(
            name, help=f"set the Setting to \"{word}\" (shows what will roll first)",
            description=flags.wrap(f"Set spec.value to \"{word}\" with a JSON merge patch guarded by the object's "
                                   f"resourceVersion, after showing what will roll. On a terminal it asks first "
                                   f"(answering anything but y/yes cancels: nothing is changed, exit 1); without "
                                   f"a terminal it needs --yes."),
            epilog=flags.examples((f"setting {name} --dry-run", f"setting {name} --dry-run=server",
                                   f"setting {name}", f"setting {name} --yes --wait --timeout 2m")),
            formatter_class=flags.HelpFormatter)
        a.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
        a.add_argument("--dry-run", nargs="?", const="client", default="none",
                       choices=("none", "client", "server"),
                       help="client: print the patch and what would roll; server: let the API server "
                            "validate the patch without persisting it")
        a.add_argument("--field-manager", default=DEFAULT_FIELD_MANAGER, help="the field manager of the patch")
        a.add_argument("--wait", action="store_true", help="wait until status.value reports the new value")
        a.add_argument("--timeout", default=DEFAULT_WAIT_TIMEOUT, help="how long --wait waits (e.g. 30s, 2m)")
        if name == "on":
            a.add_argument("--force", action="store_true",
                           help="turn it on although check reports errors (the rollout will crash-loop or "
                                "refuse what they name)")
            flags.skip_workloads_flag(a)
        connection_flags.add(a)
        contexts.add(a, writes=True)


def options(ns) -> SettingOptions:
    if ns.action is None:
        return SettingOptions(None, None)
    if ns.action == "status":
        return contexts.wrap(ns, NAME, "setting",
                             SettingOptions("status", connection_flags.connection(ns), flags.output(ns)))
    contexts.refuse_on_write(ns, f"setting {ns.action}")
    return SettingOptions(ns.action, connection_flags.connection(ns), yes=ns.yes, dry_run=ns.dry_run,
                          field_manager=ns.field_manager, wait=ns.wait,
                          timeout=parse_duration(ns.timeout, "--timeout"), force=getattr(ns, "force", False),
                          skip_workloads=getattr(ns, "skip_workloads", False))


def run(options: SettingOptions, io) -> int:
    from kubectl_kvcache import exitcodes, render

    if isinstance(options, contexts.FleetOptions):
        return contexts.run(options, io)
    if options.action is None:
        render.error(io.stderr, "setting needs an action: status, on or off")
        render.line(io.stderr, f"See '{flags.PROG} setting --help' for usage.")
        return exitcodes.ERROR
    from kubectl_kvcache.cli.flows import setting as flow

    return flow.run(options, io)
