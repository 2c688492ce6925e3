"""The -o json printer (render/formats/json.py) writes exactly what json.dumps(indent=2) writes,
plus a newline, in pieces; the format registry: one record and one printer module per -o
format, and every command's -o choices, their help, the formats several contexts may share and
those --watch streams are the records'. (The plugin's own JSON writer went: json writes the
same bytes.)"""

import io
import json
import os
from collections import OrderedDict

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_kvcache.render import formats
from kubectl_kvcache.render.formats import DATA, DOCUMENT, FORMATS, LIST, ROWS, Format, json as json_printer, printer
from runcli import kvcache as run

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
           | st.text())
KEYS = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
DOCUMENTS = st.recursive(SCALARS, lambda inner: (
    st.lists(inner, max_size=5) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(KEYS, inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=3).map(OrderedDict)),
    max_leaves=40)


def written(data):
    out = io.StringIO()
    json_printer.write(data, out)
    return out.getvalue()


@settings(max_examples=1500, deadline=None)
@given(DOCUMENTS)
def test_writes_what_json_dumps_writes(data):
    assert written(data) == json.dumps(data, indent=2) + "\n"


def test_a_long_list_is_written_in_pieces_and_whole():
    data = {"kind": "List", "items": [{"pod": f"p{i}", "argv": ["--kv-cache-dtype", "fp8"] * 3, "ready": True,
                                       "restarts": i, "note": "\x1b[31m\u202e"} for i in range(20000)]}
    writes = []

    class Out:
        def write(self, text):
            writes.append(text)

    json_printer.write(data, Out())
    assert len(writes) > 2          # flushed as it goes, not one document-sized string
    assert "".join(writes) == json.dumps(data, indent=2) + "\n"


@pytest.mark.parametrize("bad, message", [({"a": object()}, "not JSON serializable"),
                                          ({(1, 2): 1}, "keys must be")])
def test_what_json_refuses_is_refused(bad, message):
    with pytest.raises(TypeError, match=message):
        written(bad)


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                       "cluster.json")
ENTRY_POINTS = {ROWS: ("show",), DATA: ("write",), LIST: ("prepare", "write"), DOCUMENT: ("emit", "failed_run")}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_is_one_record_and_one_printer_module(name):
    record = FORMATS[name]
    module = printer(name)
    assert record.name == name and record.kind in ENTRY_POINTS and record.commands
    for entry in ENTRY_POINTS[record.kind]:
        assert callable(getattr(module, entry, None)), (name, entry)
    if record.kind == DOCUMENT and "recover" in record.commands:
        assert callable(getattr(module, "plan", None))      # recover prints its plan, not a report
    assert not callable(getattr(module, "show", None)) or record.kind == ROWS      # no -1 sentinel: one face each
    assert record.structured == (record.kind != ROWS)


def _choices(command, sub=None):
    from kubectl_kvcache.cli import build_parser

    parser = build_parser(command)._commands[(command, sub)]
    return next(a for a in parser._actions if a.dest == "output")


@pytest.mark.parametrize("command, sub", [("verify", None), ("check", None), ("bindings", None), ("roles", None),
                                          ("recover", None), ("engines", None), ("setting", "status")])
def test_every_commands_output_flag_is_the_records(command, sub):
    action = _choices(command, sub)
    assert tuple(action.choices) == formats.offered(command) and action.choices
    for name in action.choices:
        assert name in action.help
        if FORMATS[name].help:
            assert FORMATS[name].help in action.help


def test_sarif_is_offered_where_the_issue_asks():
    assert "sarif" in formats.offered("check") and "sarif" in formats.offered("verify")
    assert "sarif" not in formats.offered("bindings") and "sarif" not in formats.offered("recover")


def test_a_new_format_is_its_record_and_its_printer(monkeypatch):
    """A format added to the registry is offered, helped, completed and allowed over several
    contexts by every command its record names, and printed through its printer, with nothing
    else touched."""
    import sys
    import types

    printed = []
    module = types.ModuleType("kubectl_kvcache.render.formats.lines")
    module.write = lambda data, out: (printed.append(data), out.write("lines\n"))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(FORMATS, "lines", Format("lines", DATA, ("check",), fleet=True, help="one per line"))
    action = _choices("check")
    assert "lines" in action.choices and "lines: one per line" in action.help
    assert "lines" not in _choices("verify").choices
    assert "lines" in formats.for_fleet("check") and "lines" not in formats.streaming("check")
    code, out, err = run("check", "-A", "-f", EXAMPLE, "-o", "lines")
    assert (code, out) == (1, "lines\n") and printed[0]["kind"] == "CheckReport", err
    _, completed, _ = run("__complete", "check", "-o", "")
    assert "lines" in completed.split() and "sarif" in completed.split()


def test_the_fleet_and_watch_rules_are_the_records():
    for name in formats.offered("verify"):
        given = f"{name}=NAME:.metadata.name" if FORMATS[name].argument else name   # kubectl's take an argument
        if name.endswith("-file"):
            given = f"{name}=" + os.path.join(os.path.dirname(EXAMPLE), "kubectl",
                                              "rows.jsonpath" if name.startswith("jsonpath") else "columns.txt")
        elif name == "jsonpath":
            given = "jsonpath={.items[*].metadata.name}"
        code, _, err = run("verify", "--all-contexts", "-o", given, "--kubeconfig", "/nonexistent")
        if not FORMATS[name].fleet:
            assert code == 2 and f"-o {name} reports one context" in err, err
        else:
            assert f"-o {name} reports one context" not in err
        code, _, err = run("verify", "--watch", "-o", given, "--kubeconfig", "/nonexistent")
        assert ("--watch prints rows as they come" in err) == (not FORMATS[name].streams), (name, err)


def test_yaml_writes_no_anchors():
    """A value met twice (recover's plan: a wait step names the object the step before names) is
    written out each time, as kubectl's YAML and -o json have it: never `&id001` / `*id001`."""
    import io

    import yaml

    from kubectl_kvcache.render.formats import yaml as printer

    target = {"kind": "KVCachePoolBinding", "namespace": "llm-prod", "name": "sgl-fp8"}
    data = {"steps": [{"action": "delete", "target": target}, {"action": "wait", "target": target}]}
    out = io.StringIO()
    printer.write(data, out)
    assert "&" not in out.getvalue() and "*" not in out.getvalue(), out.getvalue()
    assert yaml.safe_load(out.getvalue()) == data
