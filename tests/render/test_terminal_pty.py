"""The real entry point on a pseudo-terminal at 80, 120 and 200 columns (issue 30, item 7): tables
and help fit the terminal (a longer line is one unbreakable word), no word is broken, the header
is one line, statuses are coloured on the terminal only; piped, each row is one line and there is
no colour. The terminal's size is set on the pty (TIOCSWINSZ), as a terminal emulator sets it;
COLUMNS is unset so the plugin reads the terminal itself."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "examples", "cluster.json")
SCENE = os.path.join(ROOT, "examples", "change-window", "scene.yaml")
WIDTHS = (80, 120, 200)
SGR = re.compile(r"\x1b\[[0-9;]*m")

COMMANDS = (
    ("check", "-A", "-f", CLUSTER),
    ("check", "-A", "-f", CLUSTER, "-o", "wide"),
    ("check", "-A", "-f", SCENE),
    ("verify", "-A", "-f", CLUSTER),
    ("verify", "-A", "-f", CLUSTER, "-o", "wide"),
    ("verify", "-n", "llm-prod", "-f", SCENE),
    ("bindings", "-A", "-f", CLUSTER, "-o", "wide"),
    ("roles", "-A", "-f", CLUSTER, "-o", "wide"),
    ("check", "-A", "-f", CLUSTER, "-o", "describe"),
    ("verify", "-n", "llm-prod", "-f", CLUSTER, "llama-long-server-0", "deepseek-sgl-server-0"),
)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(PYTHONPATH=ROOT, TERM="xterm", **extra)
    return env


def on_pty(args, columns, both=False, **env):
    """(exit code, stdout (and stderr: `both`) as the terminal shows it) of the entry point on a
    pty `columns` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", *args], stdin=slave, stdout=slave,
                            stderr=slave if both else subprocess.DEVNULL, env=_env(**env), close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for 30 s: {args}")
        try:
            data = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(30)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def piped(args, **env):
    done = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args], capture_output=True, text=True,
                          env=_env(**env), timeout=60)
    return done.returncode, done.stdout


def words(text):
    return set(SGR.sub("", text).split())


def assert_fits(text, columns):
    for line in SGR.sub("", text).splitlines():
        if len(line) > columns:
            # a longer line holds a word that cannot be broken and would not fit after a label (a
            # list of names, a path, a JSON argument)
            assert max(map(len, line.split())) > columns - 30, f"{len(line)} > {columns}: {line!r}"


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(x if "/" not in x else os.path.basename(x)
                                                                  for x in a))
def test_tables_fit_the_terminal(args, columns):
    code, shown = on_pty(args, columns)
    pcode, plain = piped(args)
    assert code == pcode
    assert "\x1b" not in plain                         # never colour in a pipe
    assert_fits(shown, columns)
    tty_words, pipe_words = words(shown), words(plain)
    # no word broken: every word on the terminal is a word of the piped output, but for the labels
    # of what moved under its row ("object:", "message:")
    header = plain.splitlines()[0].split() if plain else []
    labels = {w.lower() for w in header} | {w.lower() + ":" for w in header}
    assert tty_words - pipe_words - labels == set()
    # nothing lost: every piped word is on the terminal, but the headers of what moved under the row
    missing = pipe_words - tty_words
    assert all(w.isupper() for w in missing), missing
    lines = SGR.sub("", shown).splitlines()
    first = plain.splitlines()[0]
    if first.startswith(("NAMESPACE", "POD", "BINDING", "DEPLOYMENT")):     # a table: its header is one line
        assert len(lines[0]) <= columns or " " not in lines[0]
        assert lines[0].split()[0] == first.split()[0]
        assert lines[1].split()[0] == plain.splitlines()[1].split()[0]      # the next line is the first row


def test_piped_rows_are_one_line_each():
    code, plain = piped(("check", "-A", "-f", CLUSTER, "-o", "wide"))
    rows = plain.splitlines()
    assert rows[0].split()[:4] == ["NAMESPACE", "SEVERITY", "CODE", "OBJECT"]
    assert all(len(r.split()) > 5 for r in rows[1:])                  # each finding's message on its row
    assert rows[0].split()[-2:] == ["MESSAGE", "FIX"]


@pytest.mark.parametrize("columns", WIDTHS)
def test_colour_on_the_terminal_only(columns):
    args = ("verify", "-A", "-f", CLUSTER)
    _, shown = on_pty(args, columns)
    assert "\x1b[31mREJECTED\x1b[0m" in shown and "\x1b[32mOK\x1b[0m" in shown and "\x1b[33mMISSING\x1b[0m" in shown
    for env, flag in (({"NO_COLOR": "1"}, ()), ({}, ("--color", "never")), ({}, ("--color=never",))):
        _, plain = on_pty(args + flag, columns, **env)
        assert "\x1b[" not in plain, (env, flag)
    _, empty = on_pty(args, columns, NO_COLOR="")       # no-color.org: an empty NO_COLOR does not count
    assert "\x1b[32mOK" in empty
    _, forced = on_pty(args + ("--color", "always"), columns, NO_COLOR="1")    # the flag wins
    assert "\x1b[32mOK" in forced
    for fmt in ("json", "yaml", "markdown", "junit"):
        _, doc = on_pty(args + ("-o", fmt, "--color", "always"), columns)
        assert "\x1b" not in doc, fmt


def test_colour_reaches_a_pipe_only_when_asked():
    assert "\x1b[31mREJECTED\x1b[0m" in piped(("verify", "-A", "-f", CLUSTER, "--color", "always"))[1]
    assert "\x1b" not in piped(("verify", "-A", "-f", CLUSTER), NO_COLOR="")[1]


HELP = ((), ("verify",), ("check",), ("bindings",), ("roles",), ("setting",), ("setting", "on"),
        ("setting", "status"), ("recover",), ("engines",), ("completion",))


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("command", HELP, ids=lambda c: " ".join(c) or "top")
def test_help_is_wrapped_to_the_terminal(command, columns):
    code, shown = on_pty(command + ("--help",), columns)
    assert code == 0
    lines = shown.splitlines()
    examples = lines.index("Examples:") if "Examples:" in lines else len(lines)
    for line in lines[:examples]:                       # the examples block is kept as written
        assert len(line) <= columns or " " not in line.strip(), line
    _, wide = on_pty(command + ("--help",), 400)
    assert words(shown) == words(wide)                  # no word broken at any width
    prose = [x for x in lines[:examples] if x and not x.startswith(" ") and not x.startswith("usage")]
    if columns >= 120:                                  # filled to the width, not to ~95 columns
        assert max(map(len, prose)) > 100


def test_cluster_strings_never_pick_a_colour(tmp_path):
    """A Binding whose dtype holds an escape sequence and a status word: it stays escaped (`^[`),
    and the only escape sequences on the terminal are the plugin's, around its status words."""
    import json

    with open(CLUSTER) as f:
        data = json.load(f)
    for item in data["items"]:
        if item["kind"] == "KVCachePoolBinding" and item["metadata"]["name"] == "chat-fp8":
            item["spec"]["domain"]["dtype"] = "\x1b[32mOK"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    for args in (("verify", "-A", "-f", str(path)), ("bindings", "-A", "-f", str(path))):
        _, shown = on_pty(args, 80)
        assert "^[[32mOK" in shown
        outside = re.sub(r"\x1b\[3[123]m(OK|REJECTED|MISMATCH|MISSING|UNKNOWN|NO-POD|[A-Z,-]+)\x1b\[0m", "", shown)
        assert "\x1b" not in outside


@pytest.mark.parametrize("columns", (80, 120))
def test_diagnostic_lines_wrap_at_words_on_the_terminal(columns):
    """stderr's summary, deployment and next: lines: wrapped at spaces (continuation indented),
    not folded mid-word by the terminal; piped, one line each."""
    args = ("verify", "-A", "-f", CLUSTER)
    _, shown = on_pty(args, columns, both=True)
    done = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert_fits(shown, columns)
    assert words(shown) - {"effective:", "status:", "EFFECTIVE", "STATUS"} <= words(done.stdout + done.stderr) | \
        {"effective:", "status:"}
    assert words(done.stderr) <= words(shown)
    assert any(x.startswith("  ") for x in SGR.sub("", shown).splitlines()[-8:])     # a continuation line
