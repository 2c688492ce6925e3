"""No flag abbreviations anywhere (pflag has none): every long flag of every command and
subcommand, cut short by one character and more, is an unknown flag, found by walking the real
command tree (cli.build_parser), not a list kept by hand."""

import argparse
import io

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.cli.app import build_parser


def _parsers():
    """(command path, parser) for every parser of the tree, the top one included."""
    found = []

    def walk(p, path):
        found.append((path, p))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, path + (name,))
    walk(build_parser(), ())
    return found


def _positionals(p):
    """Words that fill the parser's required positionals (a choice when there are choices)."""
    words = []
    for action in p._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in (None, "+", 1):
            words.append(action.choices[0] if action.choices else "x")
    return words


def _cuts(flag, flags):
    """The flag less its last character, and its shortest unambiguous prefix (the one an
    abbreviating parser would take): neither a flag of its own (`--as` is one)."""
    unique = next((flag[:n] for n in range(3, len(flag))
                   if sum(f.startswith(flag[:n]) for f in flags) == 1), None)
    return sorted({c for c in (flag[:-1], unique) if c and len(c) > 2 and c not in flags})


def _cases():
    cases = []
    for path, p in _parsers():
        flags = set(p._option_string_actions)
        for flag in sorted(f for f in flags if f.startswith("--")):
            cases += [(path, prefix, flag) for prefix in _cuts(flag, flags)]
    return cases


CASES = _cases()


def test_the_walk_reaches_every_command_and_their_flags():
    paths = {path for path, _ in _parsers()}
    assert {("verify",), ("check",), ("bindings",), ("roles",), ("recover",), ("setting", "status"),
            ("setting", "on"), ("setting", "off"), ("completion",), ("version",)} <= paths
    assert (("check",), "--stric", "--strict") in CASES and len(CASES) > 200


@pytest.mark.parametrize("path, prefix, flag", CASES, ids=[f"{' '.join(c[0])} {c[1]}" for c in CASES])
def test_a_cut_flag_is_an_unknown_flag(path, prefix, flag):
    parser = dict(_parsers())[path]
    argv = [*path, *_positionals(parser), prefix]
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, stdin=io.StringIO(""), stdout=out, stderr=err) == 2
    assert err.getvalue().startswith(f"error: unknown flag: {prefix}\n"), (flag, err.getvalue())
