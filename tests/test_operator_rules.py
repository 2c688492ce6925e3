"""docs/operator-rules.md: every row names a Go file and function, plugin code that exists
(`path:name`, name a def, class or assignment at the module's top level, or a method), and the
commit of the Go file read for it (40 hex digits, several separated by ", ", or `not in index`)."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "operator-rules.md")


def rows():
    with open(DOC, encoding="utf-8") as f:
        lines = [ln for ln in f if ln.startswith("| ") and not ln.startswith("| Rule |")]
    out = []
    for ln in lines:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]]
        out.append(cells)
    return out


def defined(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


COMMIT = re.compile(r"^[0-9a-f]{40}$")


def test_the_table_has_rows_of_five_cells():
    found = rows()
    assert len(found) >= 39
    assert all(len(r) == 5 and all(r) for r in found), [r for r in found if len(r) != 5 or not all(r)]


def commit_cell_ok(cell):
    """`not in index` (with the row saying so), or one or more full commits, ", "-separated."""
    if cell == "not in index":
        return True
    return all(COMMIT.match(c) for c in cell.split(", "))


def test_every_row_records_the_commit_read():
    for rule, go_file, function, plugin, commit in rows():
        assert commit_cell_ok(commit), (rule, commit)
        if commit == "not in index":
            assert "not in the index" in rule or "not in index" in rule, rule


def test_the_commit_cell_is_checked():
    # the control: what the column must refuse
    assert commit_cell_ok("6678d71d3c725c4ec79d4c06992cf621f1df8b5a")
    assert commit_cell_ok("6678d71d3c725c4ec79d4c06992cf621f1df8b5a, 08b7e187de74753e042476fcd23529a692fc4f10")
    for bad in ("6678d71", "unknown", "", "6678D71D3C725C4EC79D4C06992CF621F1DF8B5A",
                "6678d71d3c725c4ec79d4c06992cf621f1df8b5a,08b7e187de74753e042476fcd23529a692fc4f10"):
        assert not commit_cell_ok(bad), bad


def test_every_row_names_existing_plugin_code():
    for rule, go_file, function, plugin, _commit in rows():
        refs = re.findall(r"`([^`]+)`", plugin)
        assert refs, rule
        for ref in refs:
            path, _, name = ref.partition(":")
            assert os.path.isfile(os.path.join(ROOT, path)), (rule, ref)
            assert name in defined(path), (rule, ref)


def test_every_row_names_a_go_file_and_function():
    for rule, go_file, function, plugin, _commit in rows():
        assert ".go" in go_file or "operator.md" in go_file, rule
        assert re.match(r"^[A-Za-z][A-Za-z0-9_.]*(, [A-Za-z][A-Za-z0-9_.]*)*$", function), (rule, function)
