"""The one way a generator of shipped engine data ends: `--write` writes the file; without it the
file is compared with what the wheels say, and a difference names the command that rewrites it."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_or_compare(argv, target, text, script) -> int:
    if "--write" in argv:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    with open(target, encoding="utf-8") as f:
        same = f.read() == text
    if not same:
        print(f"{os.path.relpath(target, ROOT)} differs from the wheels: run {script} --write", file=sys.stderr)
    return 0 if same else 1
