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


def _unwrap(argv: list[str]) -> tuple[list[str], str]:
    """(the argv behind the wrappers the webhook looks through, the refusal if one splits its argument)."""
    tokens = [Token(t, "command", k) for k, t in enumerate(argv)]
    while tokens and os.path.basename(tokens[0].text) in data.WEBHOOK_LOOKS_THROUGH:
        program = os.path.basename(tokens[0].text)
        stripped = strip_wrapper(tokens, data.WRAPPERS.get(program, {}))
        if isinstance(stripped, Undecidable):
            option = next((t.text for t in tokens[1:] if t.text.startswith(("-S", "--split-string"))), "-S")
            return [t.text for t in tokens], f"`{program} {option.split('=', 1)[0]}` (the argument is split at run time)"
        tokens = stripped
    return [t.text for t in tokens], ""


def _shell_invocation(argv):
    from kubectl_kvcache.engine import shell  # lazy, as in launch: only shell-wrapped argv pay for the parser

    return shell.shell_invocation(argv)


def program_refusal(argv: list[str], inject_label: str) -> tuple[str, str]:
    """(why, fix) when the webhook refuses the program an argv runs, else ('', ''); the fix
    names `inject_label`, the opt-in label to drop."""
    rest, refusal = _unwrap(argv)
    via = f" (behind {' '.join(argv[:len(argv) - len(rest)])})" if len(rest) < len(argv) and rest else ""
    if refusal:
        return f"it runs {refusal}", "give the engine's argv as separate command/args entries instead of env -S"
    if not rest:
        return "", ""
    program = os.path.basename(rest[0])
    if program in data.SHELLS and _shell_invocation(rest) is not None:
        return (f"it runs a shell command (`{program} -c`){via}: the webhook cannot append to a script",
                "run the engine directly (e.g. command: [vllm, serve, ...]) instead of a shell -c, or drop the "
                f"{inject_label} label")
    if program.endswith(".sh"):
        return (f"it runs the script {rest[0]}{via}: the webhook cannot see the engine's argv",
                "run the engine directly instead of a .sh script, or drop the inject label")
    return "", ""
