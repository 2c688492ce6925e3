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
from kubectl_kvcache.engine.argv import HOLE, Token, Undecidable
from kubectl_kvcache.engine.cause import Cause, of_element
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
            return Undecidable(f"{tok.where()} ({tok.reason}) is an argument of {_base(tokens[0])}",
                               of_element(tok.where(), tok.reason))
        text = tok.text
        if text == "--":
            rest.pop(0)
            break
        if spec and text.startswith("-") and len(text) > 1:
            name = text.split("=", 1)[0]
            if any(name == r or (len(r) == 2 and name.startswith(r)) for r in spec.get("refuse", ())):
                return Undecidable(f"{_base(tokens[0])} {name} splits its argument at run time",
                                   Cause("program", f"{_base(tokens[0])} {name}"))
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
            return Undecidable(f"the program itself ({head.where()}) is unknown: {head.reason}",
                               of_element(head.where(), head.reason))
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
        return Undecidable("the argv runs no program", Cause("program", "(none)"))
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
            hidden = next((t for t in tokens[1:] if t.text is None), None)
            return Undecidable(after, of_element(hidden.where(), hidden.reason) if hidden is not None and
                               hidden.reason in after else Cause("program", base))
        served = data.ENTRY_MODULES.get(module)
        if served is None:
            return Undecidable(f"{base} -m {module} is not a vLLM or SGLang server", Cause("program", f"{base} -m {module}"))
        engine, subcommand, entry_point = served
        if subcommand:
            if after >= len(tokens) or tokens[after].text != subcommand:
                return Undecidable(f"{base} -m {module} without `{subcommand}`", Cause("program", f"{base} -m {module}"))
            after += 1
        return Launch(engine, tuple(tokens[after:]), " > ".join(via + [f"{base} -m {module}"]), entry_point)
    program = head.text or ""       # never None: the loop above returned for an unknown program
    return Undecidable(f"the argv runs `{program}`, not a vLLM or SGLang server this plugin recognises",
                       Cause("program", program))


def _launch_in_shell(tokens, env, depth, via):
    from kubectl_kvcache.engine import shell

    if any(t.text is None for t in tokens[:2]):
        hidden = next(t for t in tokens[:2] if t.text is None)
        return Undecidable("the shell invocation depends on unknown values", of_element(hidden.where(), hidden.reason))
    texts = [t.text for t in tokens]
    invocation = shell.shell_invocation([t if t is not None else "" for t in texts])
    if invocation is None:
        return Undecidable(f"`{' '.join(texts[:2])}` runs a script file, which is not in the Pod spec",
                           Cause("program", " ".join(texts[:2])))
    script_token = tokens[invocation.script_index]
    script, holes = invocation.script, ()
    if script_token.text is None and script_token.template is None:
        return Undecidable(f"the shell script ({script_token.where()}) is unknown: {script_token.reason}",
                           of_element(script_token.where(), script_token.reason))
    if script_token.text is None:
        script, holes = script_token.template   # $(FIELD) values the shell reads as they are
    if depth >= _MAX_NESTING:
        return Undecidable("shells nested too deeply to follow", Cause("shell", "nested shells"))
    positional = [t.text for t in tokens[invocation.script_index + 1:]]
    # A login shell reads profile files first, which may set any variable: none is known then.
    login = any(o in ("--login", "-l") or (o.startswith("-") and not o.startswith("--") and "l" in o)
                for o in getattr(invocation, "options", ()))
    shell_env = {} if login or env is None else env.for_shell()
    result = shell.parse_script(script, shell_env, positional, "" if env is None else env.open_reason)
    if result.unknown:
        unknown = _filled(result.unknown, holes)
        return Undecidable(f"shell script: {unknown}", Cause("shell", unknown))
    where = script_token
    launches, undecided = [], []
    for command in result.commands:
        if not command.words:
            continue
        if holes and (command.words[0].text is None or HOLE.search(command.words[0].text)) and \
                HOLE.search(command.words[0].raw):
            # the kubelet pastes the value before the shell parses: as a command name it could be
            # a keyword or a builtin
            return Undecidable(f"the shell script runs a Pod field's value as a command ({script_token.reason})",
                               of_element(script_token.where(), script_token.reason))
        words = tuple(_script_token(w, where, holes) for w in command.words)
        if words[0].text is not None and os.path.basename(words[0].text) in _SHELL_BUILTINS_SOURCING:
            return Undecidable(f"the shell script runs `{words[0].text}`, which reads another file",
                               Cause("shell", words[0].text))
        found = find_launch(words, env, depth + 1, via + [f"{_base(tokens[0])} -c"])
        if isinstance(found, Launch):
            launches.append(found)
        elif words[0].text is None:
            undecided.append(found)
    if len(launches) > 1:
        return Undecidable(f"the shell script starts an engine {len(launches)} times",
                           Cause("shell", f"{len(launches)} engine commands"))
    if undecided:
        return undecided[0]
    if not launches:
        return Undecidable("the shell script runs no vLLM or SGLang server this plugin recognises",
                           Cause("program", "the shell script's commands"))
    return launches[0]


_SHELL_BUILTINS_SOURCING = {".", "source", "eval"}


def _filled(text, holes):
    """Text of the script model with each hole shown as the reference it replaced."""
    return HOLE.sub(lambda m: "$(" + holes[int(m.group(1))].split(" ", 1)[0].lstrip("$") + ")", text) if holes else text


def _script_token(word, where, holes):
    """A script word as an argv token; one holding a pasted Pod field value (argv.script_template)
    is unknown, its known prefix the text before the value, plain when the value starts it."""
    text, prefix, reason, plain = word.text, word.prefix, word.reason, bool(word.plain)
    found = HOLE.search(text if text is not None else prefix) if holes else None
    if found:
        start = found.start()
        prefix = (text if text is not None else prefix)[:start]
        reason = holes[int(found.group(1))]
        plain, text = not prefix, None      # a pasted value never starts with '-'
    return Token(text, where.source, where.index, prefix, _filled(reason, holes), plain)


def engine_launch(container: dict, engine: str, known) -> tuple[Launch | None, str]:
    """The Pod's launch of `engine` at release `known` (None: not known), or (None, why) where the
    argv is not known from the spec or does not start that engine where the replay can read it."""
    from kubectl_kvcache.engine.argv import build_argv

    argv = build_argv(container, known)
    if isinstance(argv, Undecidable):
        return None, f"its argv is not known from the spec ({argv.reason})"
    launch = find_launch(argv.tokens, argv.env)
    if not isinstance(launch, Launch) or launch.engine != engine:
        return None, "its argv does not start the engine where this plugin can replay it"
    return launch, ""
