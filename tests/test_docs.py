"""The README and docs/ hold to the plugin: every `kubectl kvcache` command in a shell block is
accepted by the command's real parser (flags as written, no abbreviation), every read-only one
runs on the saved example cluster without an error, and every output sample says where it comes
from and is what that command prints (or says why it is kept by hand)."""

import glob
import io
import os
import re
import shlex

import pytest

from kubectl_kvcache import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join("examples", "cluster.json")
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
# flags that make a command write, wait, follow a cluster or read several: parsed, never run on the example
LIVE = {"--apply", "--apply-reports", "--watch", "-w", "--wait", "--dry-run=server", "--yes", "-y", "--contexts", "--all-contexts"}


def _blocks(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return re.findall(r"^```(\w*)\n(.*?)^```", f.read(), re.S | re.M)


def _commands():
    found = []
    for page in PAGES:
        for lang, block in _blocks(page):
            if lang not in ("sh", "bash"):
                continue
            # a block that starts the demo cluster on a scene (`scripts/demo-cluster up --examples
            # DIR`) runs its commands on that scene's files, not on the example
            scene = re.search(r"scripts/demo-cluster up --examples (\S+?)\)?\"?(?:\s|$)", block)
            for line in block.splitlines():
                line = line.split(" #", 1)[0].split(" > ", 1)[0].strip()     # no comment, no redirect
                if not line.startswith("kubectl kvcache ") or "..." in line or "[" in line:
                    continue
                argv = shlex.split(line)[2:]
                if scene and "-f" not in argv and argv[0] in ("verify", "check", "bindings", "roles", "recover"):
                    argv += ["-f", scene.group(1)]
                found.append(pytest.param(argv, id=f"{page}: {line}"))
    return found


COMMANDS = _commands()


def test_the_docs_have_commands():
    assert len(COMMANDS) >= 30


def _main(argv):
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = cli.main(argv, stdin=io.StringIO(""), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_documented_command_parses(argv):
    command = argv[0]
    if command in ("--help", "version"):
        return
    cli.build_parser(command).parse_args(argv)


def _reads_only(argv):
    """verify, check, bindings, roles and recover's plan read saved objects; setting reads a cluster."""
    return argv[0] in ("verify", "check", "bindings", "roles", "recover") and not LIVE & set(argv)


READ_ONLY = [p for p in COMMANDS if _reads_only(p.values[0])]


def test_most_documented_commands_run_here():
    assert len(READ_ONLY) >= 15


@pytest.mark.parametrize("argv", READ_ONLY)
def test_every_read_only_documented_command_runs_on_the_example(argv):
    argv = [EXAMPLE if a == "saved.json" else a for a in argv]
    if "-f" not in argv:
        argv += ["-f", EXAMPLE]
    code, out, err = _main(argv)
    assert code in (0, 1), (argv, err)
    assert out and "error:" not in err, (argv, err)


# -- output samples (issue 40 item 4) ------------------------------------------------------------
#
# A block of output in the docs says where it comes from in the line before it:
#   <!-- sample: ARGV -->              the whole output (stdout, then stderr) of `kubectl kvcache
#                                      ARGV` on the example, written by the same runs as the golden
#                                      files: KVCACHE_GOLDEN_UPDATE=1 rewrites the block
#   <!-- sample: ARGV (lines 1-6, 10, last 2) -->   those lines of it (1 is the first), `...` where
#                                      some are left out; rewritten the same way
#   <!-- sample by hand: WHY -->       what no run on the example can print (several clusters, a
#                                      refusal on a live cluster), kept by hand; WHY says so
SAMPLE = re.compile(r"^<!-- sample(?P<hand> by hand)?: (?P<what>.+?) -->\n(?P<fence>```\w*)\n(?P<block>.*?)^```",
                    re.S | re.M)
TABLE_HEAD = re.compile(r"[A-Z]{3,}(?: {2,}[A-Z][A-Z ]*[A-Z])+ *")
LINES = re.compile(r"^(?P<argv>.+?) \(lines (?P<picks>[\d, -]+|[\d, -]+, last \d+|last \d+)\)$")


def _samples():
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        for m in SAMPLE.finditer(text):
            if not m.group("hand"):
                found.append(pytest.param(page, m.group("what"), m.group("block"), id=f"{page}: {m.group('what')}"))
    return found


def picked(printed: str, picks: str | None) -> str:
    """The lines `picks` names (`1-6, 10, last 2`; None: all), `...` for each run left out."""
    lines = printed.splitlines(keepends=True)
    if picks is None:
        return printed
    chosen: set = set()
    for part in (p.strip() for p in picks.split(",")):
        if part.startswith("last "):
            chosen.update(range(max(0, len(lines) - int(part[5:])), len(lines)))
        else:
            first, _, last = part.partition("-")
            chosen.update(range(int(first) - 1, int(last or first)))
    out, gap = [], False
    for i, line in enumerate(lines):
        if i in chosen:
            out.append(line)
            gap = False
        elif not gap:
            out.append("...\n")
            gap = True
    return "".join(out)


@pytest.mark.parametrize("page,what,block", _samples())
def test_each_output_sample_is_what_its_command_prints(monkeypatch, page, what, block):
    m = LINES.match(what)
    argv, picks = (m.group("argv"), m.group("picks")) if m else (what, None)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")   # as tests/cli/test_golden.py: the examples' time
    _, out, err = _main(shlex.split(argv))
    printed = picked(out + err, picks)
    if printed != block and os.environ.get("KVCACHE_GOLDEN_UPDATE"):
        path = os.path.join(ROOT, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for found in SAMPLE.finditer(text):
            if found.group("what") == what and found.group("block") == block:
                text = text[:found.start("block")] + printed + text[found.end("block"):]
                break
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    assert printed == block, f"{page}: the sample of `kubectl kvcache {what}` is not what it prints " \
                             f"(KVCACHE_GOLDEN_UPDATE=1 rewrites it)"


def test_picked_lines():
    text = "".join(f"{n}\n" for n in range(1, 11))
    assert picked(text, "1-3, 5, last 2") == "1\n2\n3\n...\n5\n...\n9\n10\n"
    assert picked(text, "last 1") == "...\n10\n" and picked(text, None) == text
    assert LINES.match("verify -A -f x (lines 1-6, last 2)").group("picks") == "1-6, last 2"


def test_every_table_in_the_docs_says_where_it_comes_from():
    """A block that starts with a table's header row is output: it is marked (SAMPLE above)."""
    unmarked = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        marked = {m.start("block") for m in SAMPLE.finditer(text)}
        for m in re.finditer(r"^```\w*\n(.*?)^```", text, re.S | re.M):
            if TABLE_HEAD.fullmatch(m.group(1).split("\n", 1)[0]) and m.start(1) not in marked:
                unmarked.append(f"{page}:{text[:m.start()].count(chr(10)) + 1}")
    assert unmarked == []


def test_the_sample_marker_is_read_as_written():
    text = "<!-- sample: verify -A -->\n```\nA  B\n```\n<!-- sample by hand: two clusters -->\n```text\nC\n```\n"
    found = [(m.group("hand"), m.group("what"), m.group("block")) for m in SAMPLE.finditer(text)]
    assert found == [(None, "verify -A", "A  B\n"), (" by hand", "two clusters", "C\n")]


# -- what help promises of -o wide (issue 30 item 6) --------------------------------------------

def _help(argv):
    code, out, err = _main(argv + ["--help"])
    assert code == 0, err
    return " ".join(out.split())


WIDE = [c for c in cli.COMMANDS if "wide" in (cli.build_parser(c)._commands[(c, None)]
                                             ._option_string_actions.get("-o", None) or object).__dict__
        .get("choices", ())]


def test_the_commands_with_wide_are_found():
    assert set(WIDE) >= {"verify", "check", "bindings", "roles"}


@pytest.mark.parametrize("command", WIDE)
def test_wide_adds_columns_to_the_plain_table(command):
    """Every -o wide is the plain table plus columns: the header grows, and each row holds more."""
    _, plain, _ = _main([command, "-A", "-f", EXAMPLE])
    _, wide, _ = _main([command, "-A", "-f", EXAMPLE, "-o", "wide"])
    plain_head, wide_head = plain.splitlines()[0].split(), wide.splitlines()[0].split()
    assert set(plain_head) < set(wide_head), (plain_head, wide_head)
    assert len(wide.splitlines()) == len(plain.splitlines())


_PROMISE = re.compile(r"(-o wide)\W+(?:adds|with) ([A-Z][A-Z ]*[A-Z]|the fix)")


@pytest.mark.parametrize("argv", [[]] + [[c] for c in cli.COMMANDS])
def test_what_help_says_wide_adds_is_there(argv):
    """`-o wide adds FIX` (check's help) and `check -A -o wide` "with the fix for each finding" (the
    top help's example): the column named is in that command's -o wide header."""
    text = _help(argv)
    promises = []
    for m in _PROMISE.finditer(text):
        promises.append((argv[0] if argv else "check", "FIX" if m.group(2) == "the fix" else m.group(2).split()[0]))
    top = re.search(r"with the fix for each finding \S+ \S+ (\w+) [^#]*-o wide", text)
    if top:
        promises.append((top.group(1), "FIX"))
    for command, column in promises:
        _, wide, _ = _main([command, "-A", "-f", EXAMPLE, "-o", "wide"])
        assert column in wide.splitlines()[0].split(), (argv, command, column)
    if argv in ([], ["check"]):
        assert ("check", "FIX") in promises
