"""The -o json printer (render/formats/json.py) writes exactly what json.dumps(indent=2) writes,
plus a newline, in pieces; the format registry: one printer module per -o format, and -o's
choices are the registry's. (The plugin's own JSON writer went: json writes the same bytes.)"""

import io
import json
from collections import OrderedDict

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_kvcache.render.formats import FORMATS, json as json_printer, printer

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


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_is_one_printer_module(name):
    module = printer(name)
    assert callable(module.show)
    assert callable(getattr(module, "write", None)) == FORMATS[name]     # data printers write a document


def test_the_output_flag_offers_the_registrys_formats():
    from kubectl_kvcache.cli import build_parser

    for command in ("verify", "check", "bindings", "roles"):
        action = next(a for a in build_parser(command)._commands[(command, None)]._actions if a.dest == "output")
        assert tuple(action.choices) == tuple(FORMATS)
