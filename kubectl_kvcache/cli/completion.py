"""Shell completion, as cobra's hidden `__complete` command answers it (kubectl 1.26+ runs a
plugin's `kubectl_complete-<plugin>` with the words typed after the plugin's name, the last one
being the word to complete, possibly empty, and reads one candidate a line, `candidate<TAB>description`,
then `:<directive>`).

Pure: the command tree comes in as plain data (spec_of, at the end, reads it off the parser; the
rules never see argparse) and names from the cluster through a `lister(kind, given_flags)` callable, so the
rules are testable without a shell or a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubectl_kvcache.record import Record

# cobra's ShellCompDirective bits
DIRECTIVE_ERROR = 1
DIRECTIVE_NO_SPACE = 2
DIRECTIVE_NO_FILE = 4
DIRECTIVE_DEFAULT = 0          # the shell falls back to file names

SHELLS = ("bash", "zsh", "fish", "powershell")

# what a flag's value (by its dest) or a positional (by its metavar) is completed with
FILE_VALUES = {"kubeconfig", "filename", "policy", "certificate_authority", "client_certificate", "client_key"}
CLUSTER_VALUES = {"namespace": "namespaces", "context": "contexts", "cluster": "clusters", "user": "users",
                  "contexts": "contexts"}
LIST_VALUES = {"contexts"}      # comma-separated: the name after the last comma is completed
POSITIONAL_VALUES = {"POD": "pods", "BINDING": "bindings"}


class Flag(Record):
    __slots__ = ("names", "dest", "value", "choices", "help")

    def __init__(self, names: tuple[str, ...], dest: str, value: str = "none", choices: tuple[str, ...] = (),
                 help: str = ""):
        self.names = names
        self.dest = dest
        self.value = value          # none | required | optional (only as --flag=value)
        self.choices = choices
        self.help = help


class Node(Record):
    """One command of the tree: its subcommands (name -> help), flags and positionals."""

    __slots__ = ("subcommands", "flags", "positionals", "repeat_last")

    def __init__(self, subcommands: dict[str, str] | None = None, flags: tuple[Flag, ...] = (),
                 positionals: tuple[tuple[str, tuple[str, ...]], ...] = (), repeat_last: bool = False):
        self.subcommands = {} if subcommands is None else subcommands
        self.flags = flags
        self.positionals = positionals  # (metavar, choices)
        self.repeat_last = repeat_last  # the last positional takes many words

    def flag(self, name) -> Flag | None:
        return next((f for f in self.flags if name in f.names), None)


Spec = dict[tuple[str, ...], Node]
Lister = Callable[[str, dict[str, object]], Sequence[str]]


class Parsed(Record):
    __slots__ = ("path", "given", "positionals", "pending")
    __hash__ = None     # mutable: not hashable

    def __init__(self, path: tuple[str, ...] = (), given: dict[str, object] | None = None,
                 positionals: list[str] | None = None, pending: Flag | None = None):
        self.path = path
        self.given = {} if given is None else given
        self.positionals = [] if positionals is None else positionals
        self.pending = pending      # the last word is a flag waiting for its value


def parse_words(spec: Spec, words: Sequence[str]) -> Parsed:
    """Walk the words before the one being completed, as the parser would."""
    p = Parsed()
    only_positionals = False
    for w in words:
        node = spec.get(p.path, Node())
        if p.pending is not None:
            p.given[p.pending.dest] = w
            p.pending = None
            continue
        if not only_positionals and w == "--":
            only_positionals = True
            continue
        if not only_positionals and w.startswith("-") and len(w) > 1:
            name, eq, value = w.partition("=")
            flag = node.flag(name)
            if flag is None and not name.startswith("--") and len(name) > 2:   # -nllm-prod
                flag, eq, value = node.flag(name[:2]), "=", name[2:]
            if flag is None:
                continue
            if eq:
                p.given[flag.dest] = value
            elif flag.value == "required":
                p.pending = flag
            else:
                p.given[flag.dest] = True
            continue
        if not p.positionals and w in node.subcommands:
            p.path += (w,)
            continue
        p.positionals.append(w)
    return p


def _values(flag: Flag, partial: str, given, lister: Lister, keep=""):
    """Candidates for a flag's value; `keep` is what precedes the value in the word (`--flag=`)."""
    if flag.choices:
        return [keep + c for c in flag.choices if c.startswith(partial)], DIRECTIVE_NO_FILE
    if flag.dest in FILE_VALUES:
        return [], DIRECTIVE_DEFAULT
    kind = CLUSTER_VALUES.get(flag.dest)
    if kind is None:
        return [], DIRECTIVE_NO_FILE
    if flag.dest in LIST_VALUES and "," in partial:
        done, partial = partial.rsplit(",", 1)
        chosen = set(done.split(","))
        return [f"{keep}{done},{n}" for n in lister(kind, given) if n.startswith(partial) and n not in chosen], \
            DIRECTIVE_NO_FILE | DIRECTIVE_NO_SPACE
    return [keep + n for n in lister(kind, given) if n.startswith(partial)], DIRECTIVE_NO_FILE


def complete(spec: Spec, words: Sequence[str], lister: Lister) -> tuple[list[str], int]:
    """(candidates, directive) for `words`: the words after the plugin's name, the last one the
    word being completed (empty: a new word)."""
    words = list(words) or [""]
    before, current = words[:-1], words[-1]
    p = parse_words(spec, before)
    node = spec.get(p.path, Node())
    if p.pending is not None:
        return _values(p.pending, current, p.given, lister)
    if current.startswith("-") and not (p.positionals and "--" in before):
        name, eq, value = current.partition("=")
        if eq:
            flag = node.flag(name)
            if flag is None or flag.value == "none":
                return [], DIRECTIVE_NO_FILE
            return _values(flag, value, p.given, lister, keep=name + "=")
        found = []
        for flag in node.flags:
            for n in flag.names:
                if n.startswith(current):
                    found.append(f"{n}\t{flag.help}" if flag.help else n)
        return found, DIRECTIVE_NO_FILE
    if node.subcommands and not p.positionals:
        return [f"{n}\t{h}" if h else n for n, h in node.subcommands.items() if n.startswith(current)], \
            DIRECTIVE_NO_FILE
    if not node.positionals:
        return [], DIRECTIVE_NO_FILE
    index = len(p.positionals)
    if index >= len(node.positionals):
        if not node.repeat_last:
            return [], DIRECTIVE_NO_FILE
        index = len(node.positionals) - 1
    metavar, choices = node.positionals[index]
    if choices:
        return [c for c in choices if c.startswith(current)], DIRECTIVE_NO_FILE
    kind = POSITIONAL_VALUES.get(metavar)
    if kind is None:
        return [], DIRECTIVE_NO_FILE
    taken = set(p.positionals)
    return [n for n in lister(kind, p.given) if n.startswith(current) and n not in taken], DIRECTIVE_NO_FILE


def strip_protocol(words: Sequence[str]) -> list[str]:
    """kubectl calls `kubectl_complete-kvcache WORDS...`; cobra-style wrappers call the plugin
    with `__complete WORDS...`: accept both."""
    words = list(words)
    return words[1:] if words and words[0] == "__complete" else words


def spec_of(parser) -> Spec:
    """The command tree of an argparse parser as plain data (Node per command path): what
    completion reads, so nothing that completes sees argparse."""
    import argparse

    spec = {}

    def walk(p, path):
        subcommands, flags, positionals, repeat = {}, [], [], False
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for name, child in action.choices.items():
                    subcommands[name] = helps.get(name, "")
                    walk(child, path + (name,))
            elif action.option_strings:
                if action.help == argparse.SUPPRESS:
                    continue
                value = "none" if action.nargs == 0 else ("optional" if action.nargs == "?" else "required")
                flags.append(Flag(tuple(action.option_strings), action.dest, value,
                                  tuple(action.choices or ()), (action.help or "").split(" (")[0]))
            else:
                positionals.append((action.metavar or action.dest.upper(), tuple(action.choices or ())))
                repeat = action.nargs in ("*", "+")
        spec[path] = Node(subcommands, tuple(flags), tuple(positionals), repeat)

    walk(parser, ())
    return spec
