"""`completion SHELL`: help, flags and options; the scripts and `__complete` are flows/completion.py."""

from __future__ import annotations

from kubectl_kvcache.cli import flags
from kubectl_kvcache.cli.options import CompletionOptions

NAME = "completion"
ENGINE_DATA = None          # judges nothing: --engine-data is not read
SHELLS = ("bash", "zsh", "fish", "powershell")
HELP = dict(
    help="print a shell completion script (bash, zsh, fish, powershell)",
    description="Print a script that completes commands, flags, namespaces, Pods, Bindings and contexts "
                "for the kubectl-kvcache executable in that shell. For `kubectl kvcache <TAB>` (kubectl "
                "1.26+), put the kubectl_complete-kvcache executable on PATH instead: kubectl's own "
                "completion then asks it (pip and krew installs provide it).",
    examples=("completion bash > ~/.local/share/bash-completion/completions/kubectl-kvcache",
              "completion zsh > \"${fpath[1]}/_kubectl-kvcache\"",
              "completion fish > ~/.config/fish/completions/kubectl-kvcache.fish",
              "completion powershell >> $PROFILE"))


def add(sub, commands):
    comp = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    comp.add_argument("shell", choices=SHELLS, help="the shell")


def options(ns) -> CompletionOptions:
    return CompletionOptions(ns.shell)


def run(options: CompletionOptions, io) -> int:
    from kubectl_kvcache.cli.flows import completion as flow

    return flow.run(options, io)
