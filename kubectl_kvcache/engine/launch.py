"""Find the engine in an argv: unwrap `exec`, `env K=V`, `tini --`, shells, then recognise
`vllm serve`, `python -m sglang.launch_server` and the like.

The result is the engine the argv really starts and the tokens its parser will read, or the
reason it cannot be known (a shell that depends on the runtime, an unknown program).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from kubectl_kvcache.engine import data
from kubectl_kvcache.engine.argv import Token, Undecidable
from kubectl_kvcache.record import Record

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_NESTING = 4


class Launch(Record):
    __slots__ = ("engine", "args", "via", "entry")

    def __init__(self, engine: str, args: tuple[Token, ...], via: str, entry: str | None = None):
        self.engine = engine
        self.args = args    # what the engine's parser reads
        self.via = via      # how it was reached, e.g. "sh -c > vllm serve"
        self.entry = entry  # the entry point (data.ENTRY_*): which parser reads the args


def _base(token):
    return os.path.basename(token.text) if token.text else ""


def strip_wrapper(tokens, spec):
    """Drop the wrapper program, its options and operands; Undecidable if it cannot be followed."""
    rest = list(tokens[1:])
    value_options = set(spec.get("value_options", ()))
    unless = set(spec.get("unless", ()))
    operands = spec.get("operands", 0)
    while rest:
        tok = rest[0]
        if tok.text is None:
            return Undecidable(f"{tok.where()} ({tok.reason}) is an argument of {_base(tokens[0])}")
        text = tok.text
        if text == "--":
            rest.pop(0)
            break
        if spec and text.startswith("-") and len(text) > 1:
            name = text.split("=", 1)[0]
            if any(name == r or (len(r) == 2 and name.startswith(r)) for r in spec.get("refuse", ())):
                return Undecidable(f"{_base(tokens[0])} {name} splits its argument at run time")
            if name in unless:
                operands = 0
            rest.pop(0)
            if text in value_options and rest:
                rest.pop(0)
            continue
        if spec.get("assignments") and _ASSIGNMENT.match(text):
            rest.pop(0)
            continue
        break
    for _ in range(operands):
        if rest:
            rest.pop(0)
    return rest


def _python_module(tokens):
    """(module, index of the token after it) for `python [opts] -m MODULE`, else (None, reason)."""
    i = 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.text is None:
            return None, f"{tok.where()} ({tok.reason}) is an argument of {_base(tokens[0])}"
        text = tok.text
        if text == "-m":
            if i + 1 < len(tokens) and tokens[i + 1].text is not None:
                return tokens[i + 1].text, i + 2
            return None, "python -m has no module"
        if text.startswith("-m"):
            return text[2:], i + 1
        if text == "-c" or (text.startswith("-c") and len(text) > 2):
            return None, f"{_base(tokens[0])} -c runs inline code"
        if text in data.PYTHON_VALUE_OPTIONS:
            i += 2
            continue
        if text.startswith("-") and text != "-":
            i += 1
            continue
        return None, f"{_base(tokens[0])} runs the script {text}, not a known engine module"
    return None, f"{_base(tokens[0])} runs no module"


def find_launch(tokens: Sequence[Token], env=None, _depth=0, _via=()):
    """Launch or Undecidable for a token list (the container argv, or one shell command)."""
    tokens = list(tokens)
    via = list(_via)
    while tokens:
        head = tokens[0]
        if head.text is None:
            return Undecidable(f"the program itself ({head.where()}) is unknown: {head.reason}")
        base = _base(head)
        if base in data.WRAPPERS:
            stripped = strip_wrapper(tokens, data.WRAPPERS[base])
            if isinstance(stripped, Undecidable):
                return stripped
            via.append(base)
            tokens = stripped
            continue
        break
    if not tokens:
        return Undecidable("the argv runs no program")
    head = tokens[0]
    base = _base(head)
    from kubectl_kvcache.engine import shell  # lazy: only shell-wrapped containers pay for it

    if base in shell.SHELLS:
        return _launch_in_shell(tokens, env, _depth, via)
    if len(tokens) > 1 and tokens[1].text is not None and (base, tokens[1].text) in data.ENTRY_PROGRAMS:
        engine, entry = data.ENTRY_PROGRAMS[(base, tokens[1].text)]
        return Launch(engine, tuple(tokens[2:]), " > ".join(via + [f"{base} {tokens[1].text}"]), entry)
    if _PYTHON.match(base):
        module, after = _python_module(tokens)
        if module is None:
            return Undecidable(after)
        entry = data.ENTRY_MODULES.get(module)
        if entry is None:
            return Undecidable(f"{base} -m {module} is not a vLLM or SGLang server")
        engine, subcommand, entry_point = entry
        if subcommand:
            if after >= len(tokens) or tokens[after].text != subcommand:
                return Undecidable(f"{base} -m {module} without `{subcommand}`")
            after += 1
        return Launch(engine, tuple(tokens[after:]), " > ".join(via + [f"{base} -m {module}"]), entry_point)
    return Undecidable(f"the argv runs `{head.text}`, not a vLLM or SGLang server this plugin recognises")


def _launch_in_shell(tokens, env, depth, via):
    from kubectl_kvcache.engine import shell

    if any(t.text is None for t in tokens[:2]):
        return Undecidable("the shell invocation depends on unknown values")
    texts = [t.text for t in tokens]
    invocation = shell.shell_invocation([t if t is not None else "" for t in texts])
    if invocation is None:
        return Undecidable(f"`{' '.join(texts[:2])}` runs a script file, which is not in the Pod spec")
    script_token = tokens[invocation.script_index]
    if script_token.text is None:
        return Undecidable(f"the shell script ({script_token.where()}) is unknown: {script_token.reason}")
    if depth >= _MAX_NESTING:
        return Undecidable("shells nested too deeply to follow")
    positional = [t.text for t in tokens[invocation.script_index + 1:]]
    # A login shell reads profile files first, which may set any variable: none is known then.
    login = any(o in ("--login", "-l") or (o.startswith("-") and not o.startswith("--") and "l" in o)
                for o in getattr(invocation, "options", ()))
    shell_env = {} if login or env is None else env.for_shell()
    result = shell.parse_script(invocation.script, shell_env, positional)
    if result.unknown:
        return Undecidable(f"shell script: {result.unknown}")
    where = script_token
    launches, undecided = [], []
    for command in result.commands:
        if not command.words:
            continue
        words = tuple(Token(w.text, where.source, where.index, reason=w.reason) for w in command.words)
        if words[0].text is not None and os.path.basename(words[0].text) in _SHELL_BUILTINS_SOURCING:
            return Undecidable(f"the shell script runs `{words[0].text}`, which reads another file")
        found = find_launch(words, env, depth + 1, via + [f"{_base(tokens[0])} -c"])
        if isinstance(found, Launch):
            launches.append(found)
        elif words[0].text is None:
            undecided.append(found)
    if len(launches) > 1:
        return Undecidable(f"the shell script starts an engine {len(launches)} times")
    if undecided:
        return undecided[0]
    if not launches:
        return Undecidable("the shell script runs no vLLM or SGLang server this plugin recognises")
    return launches[0]


_SHELL_BUILTINS_SOURCING = {".", "source", "eval"}
