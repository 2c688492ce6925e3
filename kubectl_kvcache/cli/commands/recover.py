"""`recover BINDING`: help, flags and options; the plan is judge/recover.py, printing and the
executor flows/recover.py."""

from __future__ import annotations

from kubectl_kvcache.kube import names
from kubectl_kvcache.cli import connection_flags, contexts, flags
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER, parse_duration
from kubectl_kvcache.cli.options import RecoverOptions

NAME = "recover"
DEFAULT_RECOVER_TIMEOUT = "10m"
HELP = dict(
    help="plan (or --apply) the guide's recovery of a rejected Binding",
    description="The upgrade guide's 'If new Pods fail argument parsing', planned from the cluster (or -f "
                "files) and, with --apply, executed step by step: the Setting off, a new Binding on the same "
                "pool with a spelling every engine accepts and a new domain, each ModelDeployment recreated "
                "on it, opted-in workload templates re-pointed, the old Binding deleted, the Setting back on. "
                "Without --apply it prints the plan and changes nothing. Its state lives in the cluster (ConfigMap "
                "kvcache-recover-BINDING in the namespace): rerunning the same command from anywhere continues it.",
    examples=("recover sgl-fp8 -n llm-prod", "recover sgl-fp8 -n llm-prod --dtype fp8_e4m3 -o yaml",
              "recover sgl-fp8 -n llm-prod --strategy replace", "recover sgl-fp8 -n llm-prod --apply",
              "recover sgl-fp8 -n llm-prod --apply --backup-dir ./backups"))


def add(sub, commands):
    rc = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    rc.add_argument("binding", metavar="BINDING", help="the KVCachePoolBinding to recover from")
    rc.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    rc.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                    help="plan from saved objects instead of a cluster (not with --apply); repeatable")
    rc.add_argument("--dtype", help="the new Binding's dtype (default: check's suggestion, a spelling of the same "
                                    "format every receiving engine accepts)")
    rc.add_argument("--name", help="the new Binding's name (default: derived from the old name and the dtype)")
    rc.add_argument("--domain", help="the new Binding's spec.domain.name (default: derived; must be unclaimed "
                                     "on the pool)")
    rc.add_argument("--strategy", choices=("side-by-side", "replace"),
                    help="side-by-side (default): create each deployment under a new name, wait until it is "
                         "available, then delete the old one (needs spare capacity); replace: back up, "
                         "delete, wait until gone, create under the same name (downtime per deployment)")
    flags.output_flag(rc, NAME, "table: the numbered steps with manifests a person reads",
                      text=True)
    rc.add_argument("--apply", action="store_true", help="execute the plan (asks first on a terminal)")
    rc.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    rc.add_argument("--dry-run", nargs="?", const="client", default="none", choices=("none", "client", "server"),
                    help="client: print the plan and the requests, send nothing; server: the API server "
                         "validates every create, patch and delete (dryRun=All), nothing persisted")
    rc.add_argument("--backup-dir", help="where objects are backed up before they are deleted or patched "
                                         "(default: a new directory named after the Binding and the time); the "
                                         "recovery's record in the cluster (ConfigMap kvcache-recover-BINDING) "
                                         "holds them too, so a rerun from anywhere needs no --backup-dir")
    rc.add_argument("--timeout", default=DEFAULT_RECOVER_TIMEOUT,
                    help="how long each wait step waits (e.g. 10m; 0 waits forever)")
    rc.add_argument("--field-manager", default=DEFAULT_FIELD_MANAGER, help="the field manager of the writes")
    connection_flags.add(rc)
    contexts.add(rc, writes=True)


def options(ns) -> RecoverOptions:
    contexts.refuse_on_write(ns, "recover")
    if ns.filename and (ns.apply or ns.dry_run != "none"):
        raise PluginError("--apply and --dry-run need a cluster: -f only plans")
    if ns.namespace is not None:
        names.valid_namespace(ns.namespace)
    for what, name in (("Binding", ns.binding), ("new Binding", ns.name)):
        if name is not None:
            names.valid_name(name, what)
    return RecoverOptions(
        ns.binding, connection_flags.connection(ns), Scope(namespace=ns.namespace, files=tuple(ns.filename)),
        flags.output(ns), dtype=ns.dtype, name=ns.name, domain=ns.domain, strategy=ns.strategy,
        apply=ns.apply, yes=ns.yes, dry_run=ns.dry_run, backup_dir=ns.backup_dir,
        timeout=parse_duration(ns.timeout, "--timeout"), field_manager=ns.field_manager)


def run(options: RecoverOptions, io) -> int:
    from kubectl_kvcache.cli.flows import recover as flow

    return flow.run(options, io)
