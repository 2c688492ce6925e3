"""-o csv (issue 40: a new format is its printer and its record): the view's every column, RFC 4180
rows a csv reader reads back, nothing but the rows on stdout, cluster text escaped, and no cell a
spreadsheet would run as a formula."""

import csv
import io
import json
import os
import re

import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import objects as o  # noqa: E402
from runcli import kvcache as run  # noqa: E402
from test_escape import EVIL, assert_safe, hostile_objects  # noqa: E402

from kubectl_kvcache.render import formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
JUDGING = [c for c in formats.JUDGING if "csv" in formats.offered(c)]


def _rows(out):
    assert out.endswith("\r\n") and "\n" not in out.replace("\r\n", ""), "RFC 4180 lines end CRLF, one per row"
    return list(csv.reader(io.StringIO(out, newline="")))


def test_csv_is_offered_by_every_judging_command():
    assert JUDGING == list(formats.JUDGING)


@pytest.mark.parametrize("command", JUDGING)
def test_the_columns_are_the_wide_tables_and_a_row_per_row(command):
    code, out, err = run(command, "-A", "-f", EXAMPLE, "-o", "csv")
    wide_code, wide, _ = run(command, "-A", "-f", EXAMPLE, "-o", "wide")
    rows = _rows(out)
    head = re.split(r" {2,}", wide.splitlines()[0].strip())
    assert code == wide_code and rows[0] == head
    assert len(rows) == len(wide.splitlines()) and {len(r) for r in rows} == {len(head)}
    if command == "check":
        assert "next:" not in err, "the FIX column is there: nothing to point to"


def test_the_rows_carry_the_cells_in_full():
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "csv")
    _, data, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "json")
    rows = _rows(out)
    pod, status = rows[0].index("POD"), rows[0].index("STATUS")
    assert [(r[pod], r[status]) for r in rows[1:]] == [(i["pod"], i["status"]) for i in json.loads(data)["items"]]


def test_no_headers():
    _, out, _ = run("bindings", "-A", "-f", EXAMPLE, "-o", "csv", "--no-headers")
    _, with_head, _ = run("bindings", "-A", "-f", EXAMPLE, "-o", "csv")
    assert _rows(out) == _rows(with_head)[1:]


def test_verify_named_pods_prints_nothing_but_rows_on_stdout():
    code, out, err = run("verify", "-n", "llm-prod", "-f", EXAMPLE, "llama-long-server-0", "-o", "csv")
    rows = _rows(out)
    assert code == 1 and len(rows) == 2 and {len(r) for r in rows} == {len(rows[0])}, out
    assert "Argv" not in out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("csv") / "cluster.json"
    objs = hostile_objects() + [o.binding("b3", "=HYPERLINK(\"http://x\",\"y\")"), o.binding("b4", "@SUM(1)"),
                                o.binding("b5", "+1+1"), o.binding("b6", "-2+3")]
    path.write_text(json.dumps(o.as_list(*objs)))
    return str(path)


@pytest.mark.parametrize("command", JUDGING)
def test_cluster_text_is_escaped_and_never_a_formula(hostile, command):
    code, out, err = run(command, "-A", "-f", hostile, "-o", "csv")
    assert code in (0, 1), err
    assert_safe(out.replace("\r\n", "\n"))
    rows = _rows(out)
    assert {len(r) for r in rows} == {len(rows[0])}
    assert not [c for r in rows for c in r if c[:1] in ("=", "+", "@") or re.match(r"-(?![\d.]*$)", c)]
    if command == "bindings":
        dtypes = {r[rows[0].index("BINDING")]: r[rows[0].index("DTYPE")] for r in rows[1:]}
        assert dtypes["b3"] == "'=HYPERLINK(\"http://x\",\"y\")" and dtypes["b4"] == "'@SUM(1)"
        assert dtypes["b5"] == "'+1+1" and dtypes["b6"] == "'-2+3"
        assert "^[]0;pwned^G" in dtypes["b2"] and EVIL not in out
