"""Hints name only flags the command accepts: every hint and fix string in the package (read
from the source, f-strings included) that tells the user to pass a flag, or spells out a
`kubectl kvcache COMMAND ... --flag` command line, is checked against that command's parser
(the cli registry, cli/app.py). The commands' own help and examples are checked the same way."""

import ast
import os
import re

import pytest

from kubectl_kvcache.cli import app

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "kubectl_kvcache")
ENGINE_FLAGS = {"--kv-cache-dtype", "--kv_cache_dtype"}     # the engines' option, which hints name as such
LOADERS = ("verify", "check", "bindings", "roles", ("setting", "on"), "recover")
# Modules a hint in which is for every command that runs them (the rest: named after the command).
SHARED = {"load/cluster.py": LOADERS, "load/reader.py": LOADERS, "load/manifests.py": LOADERS,
          "load/files.py": LOADERS, "load/scope.py": LOADERS, "load/recovery.py": ("recover",),
          "cli/flows/recovery_record.py": ("recover",), "judge/gate.py": (("setting", "on"), "recover"),
          "judge/checks": ("check", "bindings", "roles", ("setting", "on"), "recover"),
          "judge/rollout.py": ("verify",), "render/checks.py": ("check", "bindings", "roles"),
          "cli/flows/reports.py": ("verify", "check")}
# Where flags are defined, not hinted at: their help is checked on the built parsers below.
DEFINITIONS = ("cli/flags.py", "cli/connection_flags.py", "cli/completion.py", "cli/flows/completion.py", "engine/",
               "cli/app.py")

PASS = re.compile(r"\bpass ([^;]*)")
COMMAND = re.compile(r"kubectl kvcache ([a-z]+)(?: (status|on|off)\b)?([^;()'\"`]*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*)")


def parsers():
    parser = app.build_parser()
    return {key: {o for a in p._actions for o in a.option_strings} for key, p in parser._commands.items()}


ACCEPTED = parsers()


def accepted(command):
    key = command if isinstance(command, tuple) else (command, None)
    return ACCEPTED[key]


# Functions whose hints are for one subcommand only (the gate runs before `setting on` only).
FUNCTIONS = {"cli/flows/setting.py:gate": (("setting", "on"),), "cli/flows/setting.py:read_gate": (("setting", "on"),)}


def functions(tree):
    """Line ranges of the module's top-level functions: (first, last, name)."""
    return [(n.lineno, n.end_lineno, n.name) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def strings(tree):
    """Every string literal, an f-string with its fields as `{}`, minus docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inner.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and id(node) not in inner):
            yield node.lineno, node.value


def mentions(text, module_commands):
    """(command, flag) for every flag a hint in `text` names."""
    for m in COMMAND.finditer(text):
        command = (m.group(1), m.group(2)) if m.group(2) else m.group(1)
        for flag in FLAG.findall(m.group(3)):
            yield command, flag
    for m in PASS.finditer(text):
        if "kubectl kvcache" in m.group(1):
            continue            # the command it spells out is checked above
        for flag in FLAG.findall(m.group(1)):
            for command in module_commands:
                yield command, flag


def commands_of(rel):
    for prefix, commands in SHARED.items():
        if rel == prefix or rel.startswith(prefix + "/"):
            return commands
    name = os.path.splitext(os.path.basename(rel))[0]
    if name == "setting":
        return (("setting", "on"), ("setting", "off"))
    return (name,) if (name, None) in ACCEPTED else LOADERS


def hints():
    found = []
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
            if rel.startswith(DEFINITIONS):
                continue
            with open(path, encoding="utf-8") as src:
                tree = ast.parse(src.read())
            spans = functions(tree)
            for lineno, text in strings(tree):
                function = next((name for first, last, name in spans if first <= lineno <= last), "")
                commands = FUNCTIONS.get(f"{rel}:{function}") or commands_of(rel)
                for command, flag in mentions(text, commands):
                    if flag not in ENGINE_FLAGS:
                        found.append((f"{rel}:{lineno}", command, flag, text))
    return found


HINTS = hints()


def test_the_walk_finds_the_hints():
    """It reads what it should: the hints of recover, setting on and check are among them."""
    named = {(c if isinstance(c, str) else " ".join(c), flag) for _, c, flag, _ in HINTS}
    assert {("recover", "--yes"), ("recover", "--name"), ("recover", "--dtype"), ("setting on", "--force"),
            ("setting on", "--yes")} <= named, sorted(named)


@pytest.mark.parametrize("where,command,flag,text", HINTS, ids=[f"{w}-{f}" for w, _, f, _ in HINTS])
def test_every_hint_names_a_flag_its_command_accepts(where, command, flag, text):
    assert flag in accepted(command), f"{where}: {command} has no {flag}: {text!r}"


def test_every_example_and_help_names_flags_its_command_accepts():
    parser = app.build_parser()
    for key, p in parser._commands.items():
        own = ACCEPTED[key]
        for line in (p.epilog or "").splitlines():
            m = COMMAND.search(line)
            if m:
                command = (m.group(1), m.group(2))
                for flag in FLAG.findall(m.group(3)):
                    assert flag in ACCEPTED[command if command in ACCEPTED else (m.group(1), None)], (key, line)
        for action in p._actions:
            for flag in FLAG.findall(action.help or ""):
                assert flag in own or flag in ENGINE_FLAGS, (key, action.option_strings, action.help)
