"""`roles`: check's judgement, shown per role (cli/commands/check.py, flows/check.py)."""

from kubectl_kvcache.cli import flags
from kubectl_kvcache.cli.commands import check

NAME = "roles"
HELP = dict(
    help="roles that pass --kv-cache-dtype themselves, and take-over roles, on pools",
    description="Roles of pool-attached ModelDeployments that pass --kv-cache-dtype themselves in extraArgs "
                "(the webhook refuses their next edit), and take-over roles (command set: the operator renders "
                "nothing for them): the flag and where it is, what the role runs today and after the upgrade, "
                "and a verdict. -o wide adds the type, engine, Binding and the flag; -o describe has the reason. The upgrade guide's \"Find roles that pass the flag themselves\", judged.\n\n"
                + flags.SCOPE_NOTE + "-l/--selector keeps the roles of ModelDeployments with those labels.",
    examples=("roles -A", "roles -n llm-prod -o wide", "roles -A -l team=research"))


def add(sub, commands):
    check.add_view(NAME, HELP, sub, commands, "roles of ModelDeployments (selected by their labels or their Pods', "
                                              "as verify selects Pods)", skip_workloads=False)


def options(ns) -> check.CheckOptions:
    return check.options(ns, reads_workloads=False)     # a role's flags are in its own spec


prefetch, run = check.prefetch, check.run
