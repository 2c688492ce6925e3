"""docs/operator-rules.md: every row names a Go file and function and plugin code that exists
(`path:name`, name a def, class or assignment at the module's top level, or a method)."""

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


def test_the_table_has_rows_of_four_cells():
    # i50-holds: its new rows carry the fifth cell (Commit read) the i50-rules branch adds to every row
    found = rows()
    assert len(found) >= 20
    assert all(len(r) in (4, 5) and all(r) for r in found), [r for r in found if len(r) not in (4, 5)]


def test_every_row_names_existing_plugin_code():
    for rule, go_file, function, plugin, *_commit in rows():
        refs = re.findall(r"`([^`]+)`", plugin)
        assert refs, rule
        for ref in refs:
            path, _, name = ref.partition(":")
            assert os.path.isfile(os.path.join(ROOT, path)), (rule, ref)
            assert name in defined(path), (rule, ref)


def test_every_row_names_a_go_file_and_function():
    for rule, go_file, function, plugin, *_commit in rows():
        assert ".go" in go_file or "operator.md" in go_file, rule
        assert re.match(r"^[A-Za-z][A-Za-z0-9_.]*(, [A-Za-z][A-Za-z0-9_.]*)*$", function), (rule, function)
