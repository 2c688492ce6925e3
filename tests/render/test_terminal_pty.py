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
    heads = done.stdout.splitlines()[0].split()      # the labels of what moved under a row, and its header
    assert words(shown) - set(heads) <= words(done.stdout + done.stderr) | {h.lower() + ":" for h in heads}
    assert words(done.stderr) <= words(shown)
    assert any(x.startswith("  ") for x in SGR.sub("", shown).splitlines()[-8:])     # a continuation line


# -- issue 48 item 8: the README's change window at 80 and 120 columns ------------------------------

STATUS_WORDS = {"OK", "MISMATCH", "MISSING", "WILL-REJECT", "REJECTED", "UNKNOWN", "NO-POD"}


@pytest.mark.parametrize("columns", (80, 120))
@pytest.mark.parametrize("args", (("verify", "-A", "-f", CLUSTER), ("verify", "-A", "-f", SCENE, "--assume-setting", "on"),
                                  ("verify", "-n", "llm-prod", "-f", CLUSTER, "-o", "wide")),
                         ids=("cluster", "scene", "wide"))
def test_status_stays_on_its_row(args, columns):
    """A table folded for the terminal keeps STATUS on each row (the verdict is read on the row,
    never under it); what moved under the row is labelled."""
    _, shown = on_pty(args, columns)
    _, plain = piped(args)
    lines = SGR.sub("", shown).splitlines()
    assert "STATUS" in lines[0].split()
    col = lines[0].split().index("STATUS")
    rows = [ln for ln in lines[1:] if not ln.startswith(" ")]
    piped_rows = plain.splitlines()[1:]
    assert len(rows) == len(piped_rows)
    for row, full in zip(rows, piped_rows, strict=True):
        assert row.split()[col] in STATUS_WORDS, row
        assert row.split()[col] in full.split()
    assert all(re.match(r" {4}[a-z]+: ", ln) for ln in lines[1:] if ln.startswith(" ") and ln.strip()), shown


@pytest.mark.parametrize("columns", (80, 120))
def test_text_under_a_row_says_its_column(columns):
    """roles' TODAY under its row at 80 columns is labelled `today:` (not a bare value)."""
    _, shown = on_pty(("roles", "-A", "-f", CLUSTER), columns)
    under = [ln for ln in SGR.sub("", shown).splitlines() if ln.startswith(" ")]
    if columns == 80:
        assert under, shown
    assert all(ln.startswith("    today: ") for ln in under), shown


def _scene_with_uids(tmp_path):
    import yaml

    with open(SCENE) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        if d["kind"] in ("KVCachePoolBinding", "ModelDeployment"):
            d["metadata"]["uid"] = f"5c1e8a52-0c6e-4a9e-9d3f-{len(d['metadata']['name']):012d}"
    path = tmp_path / "scene-uids.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _manifests(text):
    """The plan's first manifest (its indented YAML under step 1), as YAML reads it."""
    import yaml

    lines = SGR.sub("", text).splitlines()
    start = next(n for n, ln in enumerate(lines) if ln.strip().startswith("1. Create"))
    block = []
    for ln in lines[start + 1:]:
        if not ln.startswith("       "):
            break
        block.append(ln[7:])
    return yaml.safe_load("\n".join(block)), block


@pytest.mark.parametrize("columns", (80, 120))
def test_plan_yaml_never_folds_a_value(tmp_path, columns):
    """The plan's manifest at 80 columns: a `key: value` row longer than the terminal goes on two
    rows of the same YAML, so the terminal never breaks a uid in its middle; piped, one row each."""
    args = ("recover", "sgl-fp8", "-n", "llm-prod", "-f", _scene_with_uids(tmp_path))
    code, shown = on_pty(args, columns)
    pcode, plain = piped(args)
    assert code == pcode == 0
    on_terminal, block = _manifests(shown)
    assert on_terminal == _manifests(plain)[0]                      # the same YAML
    uid = on_terminal["metadata"]["annotations"]["kvcache.gpustack.ai/recovered-from-uid"]
    assert all(len(ln) + 7 <= columns for ln in block), block
    assert any(ln.strip() == uid for ln in block) if columns == 80 else any(ln.endswith(": " + uid) for ln in block)


@pytest.mark.parametrize("columns", (80, 120))
def test_error_lines_stay_one_line_as_kubectls(columns):
    """kubectl writes an error as one line on a terminal too (cmdutil.CheckErr -> fatal: fmt.Fprint
    to stderr, no wrapping; its klog lines alike): a script's grep and a copy into a ticket read
    one line; the terminal soft-wraps it. The plugin's `error:` lines do the same."""
    path = "/nonexistent/" + "a-rather-long-folder-name/" * 5 + "saved.yaml"
    code, shown = on_pty(("verify", "-f", path), columns, both=True)
    assert code == 2
    errors = [ln for ln in shown.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and len(errors[0]) > columns and errors[0].endswith("no such file or directory")
