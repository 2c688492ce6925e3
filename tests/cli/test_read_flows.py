"""Every read command runs over several contexts through one face of its flow (cli/flows/__init__.py);
flows/fleet.py reads that face and never a command's name (issue 40)."""

from __future__ import annotations

import ast
import inspect

import pytest

from kubectl_kvcache.cli import app, contexts
from kubectl_kvcache.cli.flows import fleet

FACE = ("PRELOAD", "view_of", "failing", "read_context", "context_lines")
READS = (["verify"], ["check"], ["bindings"], ["roles"], ["setting", "status"])


def _fleet_options(argv):
    ns = app.build_parser().parse_args([*argv, "--contexts", "a,b"])
    options = app.options_for(ns)
    assert isinstance(options, contexts.FleetOptions), argv
    return options


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_each_read_command_names_a_flow_with_the_whole_face(argv):
    options = _fleet_options(argv)
    flow = fleet.flow_of(options)
    missing = [name for name in FACE if not hasattr(flow, name)]
    assert not missing, f"{flow.__name__} lacks {missing}"
    view = flow.view_of(options.inner)
    assert view.kind and view.kind[0].isupper(), "the view names its JSON kind"
    assert all(isinstance(s, str) for s in flow.failing(options.inner))
    assert all(isinstance(m, str) for m in flow.PRELOAD)


def test_the_commands_that_take_contexts_are_the_read_commands():
    """A command added later that takes --contexts is in READS (and so has its face checked)."""
    parser = app.build_parser()
    taking = []
    for name in app.COMMANDS:
        sub = parser._commands.get((name, None))
        if sub is not None and any("--contexts" in a.option_strings and a.help != "==SUPPRESS=="
                                   for a in sub._actions):
            taking.append(name)
    setting = parser._commands.get(("setting", "status"))
    if setting is not None and any("--contexts" in a.option_strings for a in setting._actions):
        taking.append("setting")
    assert sorted(taking) == sorted(argv[0] for argv in READS)


def test_fleet_switches_on_no_command_name():
    """No string in flows/fleet.py is a command's name: what differs per command is its flow's."""
    names = set(app.COMMANDS)
    tree = ast.parse(inspect.getsource(fleet))
    said = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names})
    assert said == []


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_one_contexts_json_kind_is_the_fleets_kind_without_its_prefix(argv):
    """The kind of one context's -o json and of several contexts' is one word in one place (the view)."""
    from kubectl_kvcache.render import fleet as fleet_view

    options = _fleet_options(argv)
    view = fleet.flow_of(options).view_of(options.inner)
    assert fleet_view.to_dict(view, fleet_view.Fleet(()))["kind"] == "Fleet" + view.kind


def test_no_code_compares_a_command_name():
    """What differs per command is in its record (cli/commands/<name>.py, its flow's face, its
    view, its policy terms), never in an `if command == "verify"` elsewhere (issue 40)."""
    import glob
    import os

    import kubectl_kvcache

    root = os.path.dirname(kubectl_kvcache.__file__)
    names = set(app.COMMANDS)
    found = []
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Compare):
                continue
            parts = [node.left, *node.comparators]
            said = [p.value for p in parts if isinstance(p, ast.Constant) and p.value in names]
            said += [e.value for p in parts if isinstance(p, (ast.Tuple, ast.List, ast.Set)) for e in p.elts
                     if isinstance(e, ast.Constant) and e.value in names]
            subject = " ".join(ast.unparse(p) for p in parts if not isinstance(p, ast.Constant))
            if said and ("command" in subject or "view" in subject):
                found.append(f"{os.path.relpath(path, root)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
