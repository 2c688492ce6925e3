"""The README and docs/ hold to the plugin: every `kubectl kvcache` command in a shell block is
accepted by the command's real parser (flags as written, no abbreviation), every read-only one
runs on the saved example cluster without an error, and the sample output on the README front
page is what the plugin prints."""

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
LIVE = {"--apply", "--watch", "-w", "--wait", "--dry-run=server", "--yes", "-y", "--contexts", "--all-contexts"}


def _blocks(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return re.findall(r"^```(\w*)\n(.*?)^```", f.read(), re.S | re.M)


def _commands():
    found = []
    for page in PAGES:
        for lang, block in _blocks(page):
            if lang not in ("sh", "bash"):
                continue
            for line in block.splitlines():
                line = line.split(" #", 1)[0].split(" > ", 1)[0].strip()     # no comment, no redirect
                if not line.startswith("kubectl kvcache ") or "..." in line or "[" in line:
                    continue
                found.append(pytest.param(shlex.split(line)[2:], id=f"{page}: {line}"))
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


def test_the_front_pages_sample_is_what_verify_prints():
    sample = next(b for lang, b in _blocks("README.md") if not lang and "NAMESPACE" in b)
    code, out, err = _main(["verify", "-A", "-f", EXAMPLE])
    lines = (out + err).splitlines()
    shown = [line for line in sample.splitlines() if line and line != "..."]
    assert shown and all(line in lines for line in shown), "\n".join(set(shown) - set(lines))


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
