"""What the operator's injection webhook refuses about the program a container runs.

It appends its arguments to the container's argv, so it refuses argv it cannot append to: a
shell `-c` script, `env -S`, a `.sh` program, also behind the wrappers it looks through
(operator.md). Pure; wrappers are stripped as `launch` strips them, shells recognised as
`shell` recognises them.
"""

from __future__ import annotations

import os

from kubectl_kvcache.engine import data
from kubectl_kvcache.engine.argv import Token, Undecidable
from kubectl_kvcache.engine.launch import strip_wrapper


def _word(token: Token) -> str:
    """A token's text: the webhook's tokens are the argv's literal words, never unknown (None)."""
    return token.text or ""


def _unwrap(argv: list[str]) -> tuple[list[str], str]:
    """(the argv behind the wrappers the webhook looks through, the refusal if one splits its argument)."""
    tokens = [Token(t, "command", k) for k, t in enumerate(argv)]
    while tokens and os.path.basename(_word(tokens[0])) in data.WEBHOOK_LOOKS_THROUGH:
        program = os.path.basename(_word(tokens[0]))
        stripped = strip_wrapper(tokens, data.WRAPPERS.get(program, {}))
        if isinstance(stripped, Undecidable):
            option = next((_word(t) for t in tokens[1:] if _word(t).startswith(("-S", "--split-string"))), "-S")
            return [_word(t) for t in tokens], f"`{program} {option.split('=', 1)[0]}` (the argument is split at run time)"
        tokens = stripped
    return [_word(t) for t in tokens], ""


def _shell_invocation(argv):
    from kubectl_kvcache.engine import shell  # lazy, as in launch: only shell-wrapped argv pay for the parser

    return shell.shell_invocation(argv)


def program_refusal(argv: list[str], inject_label: str, forwarded: bool = False) -> tuple[str, str]:
    """(why, fix) when the webhook refuses the program an argv runs, else ('', ''); the fix
    names `inject_label`, the opt-in label to drop. `forwarded`: the Pod declares that its launch
    forwards appended arguments (annotation launch-args-forwarded "true"), which admits `env -S`
    and a `.sh` program, never a shell's `-c` (pod_kv_cache_inject.go: checkShellWrapper,
    scriptByPath)."""
    rest, refusal = _unwrap(argv)
    via = f" (behind {' '.join(argv[:len(argv) - len(rest)])})" if len(rest) < len(argv) and rest else ""
    if refusal and forwarded:
        return "", ""
    if refusal:
        return f"it runs {refusal}", "give the engine's argv as separate command/args entries instead of env -S"
    if not rest:
        return "", ""
    program = os.path.basename(rest[0])
    if program in data.SHELLS and _shell_invocation(rest) is not None:
        return (f"it runs a shell command (`{program} -c`){via}: the webhook cannot append to a script",
                "run the engine directly (e.g. command: [vllm, serve, ...]) instead of a shell -c, or drop the "
                f"{inject_label} label")
    if program.endswith(".sh") and not forwarded:
        return (f"it runs the script {rest[0]}{via}: the webhook cannot see the engine's argv",
                "run the engine directly instead of a .sh script, or drop the inject label")
    return "", ""


def _launched_engine(rest):
    """The engine a launch resolves to as the webhook reads it (pod_kv_cache_inject.go:
    launchEngine): `vllm`, or `python3 -m sglang.launch_server`; None for anything else."""
    program = os.path.basename(rest[0])
    if program == "vllm":
        return "vllm"
    if program == "python3" and rest[1:3] == ["-m", "sglang.launch_server"]:
        return "sglang"
    return None


def launch_refusal(command: list[str], args: list[str], engine: str | None, forwarded: str | None,
                   forwarded_key: str) -> tuple[str, str]:
    """(why, fix) when the injection webhook refuses the launch (pod_kv_cache_inject.go:
    checkLaunchArgs, read at 6678d71), else ('', ''): args without a command (the image's
    ENTRYPOINT is not visible), a launcher with no program after it, a program it cannot identify
    as an engine launch, or one starting another engine than `engine` (the annotation's, `vllm`,
    `vllm-ascend` or `sglang`). `forwarded`: the value of the annotation `forwarded_key` (None:
    not set); "true" admits an args-only container and an unidentified program. What
    program_refusal refuses (a shell's -c, env -S, a .sh program) is left to it."""
    if forwarded is not None and forwarded != "true":
        return (f"annotation {forwarded_key} is {forwarded!r}: it must be \"true\" when declared",
                f"set {forwarded_key} to \"true\" or remove it")
    declared = forwarded == "true"
    if not command and not args:
        return "", ""
    if not command:
        if declared:
            return "", ""
        return ("it has args but no command, so the webhook cannot see the image's ENTRYPOINT",
                f"set command to the engine executable (its arguments stay in args), or set {forwarded_key} "
                f"to \"true\" if the image's ENTRYPOINT forwards appended arguments to the engine")
    rest, refusal = _unwrap(list(command) + list(args))
    if refusal:
        return "", ""
    if not rest:
        return (f"it runs the launcher {os.path.basename(command[0])} with no program after it: what the "
                f"webhook appends would be run as the program", "put the engine and its arguments after the launcher")
    program = os.path.basename(rest[0])
    if program in data.SHELLS or program.endswith(".sh"):
        return "", ""
    resolved = _launched_engine(rest)
    if resolved is not None:
        if engine and not (resolved == engine or (resolved == "vllm" and engine == "vllm-ascend")):
            return (f"it starts {resolved} but the annotations select {engine}: the injected configuration must "
                    f"match the engine that starts", "correct the engine (or manufacturer) annotation, or launch "
                                                      "that engine directly")
        return "", ""
    if declared:
        return "", ""
    return (f"it runs {program}, which the webhook cannot identify as an engine launch (it knows `vllm` and "
            f"`python3 -m sglang.launch_server`)",
            f"launch the engine directly (command: [vllm, serve, ...] or [python3, -m, sglang.launch_server, ...]), "
            f"or set {forwarded_key} to \"true\" if {program} forwards appended arguments to the engine")
