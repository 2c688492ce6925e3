"""The one way a generator of shipped engine data writes and ends.

Every file is kubectl_kvcache/engine/<name>.json, {"schema", "written_by", "data"} (the layout
engine/knowledge.py reads), laid out one entry per line down to `expand` levels so that a new
release is a reviewable diff. `--write` writes the file; without it the file is compared with
what the wheels say, and a difference names the command that rewrites it."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from kubectl_kvcache.engine import knowledge  # noqa: E402


def target(name) -> str:
    return knowledge.path(name)


def render(data, written_by, expand=2) -> str:
    """JSON text of the file: objects opened on their own lines to depth `expand`, deeper values compact."""
    def block(value, depth, indent):
        if depth >= expand or not isinstance(value, dict) or not value:
            return json.dumps(value, ensure_ascii=False)
        pad = "  " * (indent + 1)
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {block(v, depth + 1, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    head = f'{{\n  "schema": {knowledge.SCHEMA},\n  "written_by": {json.dumps(written_by)},\n  "data": '
    return head + block(data, 0, 1) + "\n}\n"


def write_or_compare(argv, name, text, script) -> int:
    path = target(name)
    if "--write" in argv:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        print(f"wrote {os.path.relpath(path, ROOT)}", file=sys.stderr)
        return 0
    try:
        with open(path, encoding="utf-8") as f:
            same = f.read() == text
    except FileNotFoundError:
        same = False
    if not same:
        print(f"{os.path.relpath(path, ROOT)} differs from the wheels: run {script} --write", file=sys.stderr)
    return 0 if same else 1
