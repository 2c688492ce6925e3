"""`bindings`: check's judgement, shown per Binding (cli/commands/check.py, flows/check.py)."""

from kubectl_kvcache.cli import flags
from kubectl_kvcache.cli.commands import check

NAME = "bindings"
HELP = dict(
    help="every KVCachePoolBinding with its dtype, the engines that use it and a verdict",
    description="Every KVCachePoolBinding in scope: its dtype, the engine releases the dtype is handed to "
                "(ENGINES, name:version), how many objects use it, and a verdict (OK, REJECTED, AUTO, UNUSED, "
                "DOMAIN-CLAIMED, MISSING, UNKNOWN; several are comma-joined). -o wide adds the pool, domain, "
                "suggested dtype and every user; -o describe has the full verdict (which engine rejects it, "
                "which Binding claims the domain). The upgrade guide's \"Check every "
                "Binding first\", judged.\n\n" + flags.SCOPE_NOTE
                + "-l/--selector keeps the Bindings with those labels (a MISSING row has no object, so no "
                  "labels); their users are still read in full.",
    examples=("bindings -A", "bindings -n llm-prod -o wide", "bindings -A -l team=research",
              "bindings -A -o json"))


def add(sub, commands):
    check.add_view(NAME, HELP, sub, commands, "Bindings (by their own labels; every user is still judged)")


options, prefetch, run = check.options, check.prefetch, check.run
