"""-o markdown, read by real consumers: markdown-it-py (CommonMark with GitHub's tables and
linkify, as a ticket system renders it) must find no link, image, HTML or emphasis made of
cluster data, and tables with one row per item; pymarkdown (a GFM linter) must pass the
document; as plain text every control character stays visible and the tables line up."""

import json
import os
import re
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

import objects as o
from runcli import kvcache as run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
# Markdown, HTML, links, GitHub's autolinks (URL, www., e-mail), entities, a table break, a
# backtick run, then the terminal controls of tests/test_escape.py and XML's non-characters.
EVIL = ("<img src=x onerror=alert(1)>[click](https://evil.example/a) https://evil.example/b www.evil.example "
        "mail@evil.example **bold** _em_ &amp; <!-- c --> | pipe ``` tick `x` \\ #h "
        "\x1b]0;pwned\x07\r\nNEXT\tcol\x9b31m\u202eend\ufffe")
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
COMMANDS = ("verify", "check", "bindings", "roles")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("markdown") / "cluster.json"
    path.write_text(json.dumps(o.as_list(*o.hostile(EVIL))))
    return str(path)


def gfm():
    return MarkdownIt("gfm-like")       # tables, strikethrough, linkify (GitHub's autolinks), raw HTML on


def walk(tokens):
    for t in tokens:
        yield t
        yield from walk(t.children or ())


def outside_code(tokens):
    """The text Markdown interprets: everything but code spans and fenced blocks."""
    return " ".join(t.content for t in walk(tokens) if t.type == "text")


@pytest.mark.parametrize("command", COMMANDS)
def test_cluster_data_never_becomes_markup(hostile, command):
    code, out, err = run(command, "-A", "-f", hostile, "-o", "markdown")
    assert code in (0, 1), err
    tokens = gfm().parse(out)
    kinds = {t.type for t in walk(tokens)}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "s_open"}, kinds
    assert "evil" not in outside_code(tokens) and "onerror" not in outside_code(tokens)
    html = gfm().render(out)
    assert "<a " not in html and "<img" not in html and "<!--" not in html
    # the data is all there, as code, every control character visible
    assert "evil.example" in "".join(t.content for t in walk(tokens) if t.type in ("code_inline", "fence"))
    assert not RAW.search(out), repr(RAW.search(out))
    assert "\ufffe" not in out and "\\ufffe" in out
    if command == "verify":     # a line break in the data never splits a reason into two items
        assert out.count("\n   - Reason: ") == out.count("\n   - Fix: ") == 3
    assert "\x1b" not in out and "\\u202e" in out     # made visible (^[, or a repr's \\x1b)


@pytest.mark.parametrize("command", COMMANDS)
def test_emphasis_is_only_the_plugins_words(hostile, command):
    tokens = list(walk(gfm().parse(run(command, "-A", "-f", hostile, "-o", "markdown")[1])))
    strong = [tokens[i + 1] for i, t in enumerate(tokens) if t.type == "strong_open"]
    words = [t.content for t in strong if t.type != "code_inline"]     # a bold status of data is code
    assert words and all(re.fullmatch(r"[A-Za-z0-9 ():,-]+", s) for s in words), words
    em = {tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "em_open"}
    assert em <= {"none"}, em


@pytest.mark.parametrize("command, key", [("verify", "items"), ("bindings", "items"), ("roles", "items")])
def test_every_row_table_has_one_row_per_item(command, key):
    _, out, _ = run(command, "-A", "-f", EXAMPLE, "-o", "markdown")
    items = json.loads(run(command, "-A", "-f", EXAMPLE, "-o", "json")[1])[key]
    section = out.split("## Every row", 1)[1]
    html = gfm().render(section)
    assert html.count("<tr>") == len(items) + 1, html
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert len({len(line) for line in lines}) == 1, "the plain-text table does not line up"


def test_verify_report_says_what_was_checked_and_the_fixes():
    code, out, _ = run("verify", "-n", "llm-prod", "-f", EXAMPLE, "-o", "markdown")
    report = json.loads(run("verify", "-n", "llm-prod", "-f", EXAMPLE, "-o", "json")[1])
    assert code == 1
    assert "**Verdict: FAILED (exit code 1)**" in out
    assert "- **Namespaces:** namespace `llm-prod`" in out
    assert "- **Input:** saved objects: `" in out
    assert "- **Setting:** on" in out
    assert "`vLLM 0.29.0`" in out and "`SGLang 0.5.18`" in out       # as check writes them (one spelling)
    bad = [i for i in report["items"] if i["status"] != "OK"]
    assert out.count("   - Fix: ") == len(bad)
    for item in bad:
        assert f"`{item['fix']}`" in out or f"`` {item['fix']} ``" in out or item["fix"].replace("`", "") in out
    progress = out.split("## Progress per deployment", 1)[1].split("##", 1)[0]
    for d in report["deployments"]:
        assert f"`{d['namespace']}/{d['name']}`" in progress
    assert "kubectl kvcache verify -n llm-prod -f " in out and " -o markdown" in out


def test_the_command_line_never_shows_a_secret(tmp_path):
    secret = "s3cr3t-T0ken"
    argv = ["verify", "-A", "-f", EXAMPLE, "--token", secret, "--password=" + "pw-" + secret,
            "--proxy-url", f"http://user:{secret}@proxy.example:3128", f"-shttps://u:{secret}@api.example",
            "-o", "markdown"]
    code, out, err = run(*argv)
    assert code == 1, err
    assert secret not in out
    fence = out.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert '--token "$KVCACHE_TOKEN"' in fence and '--password "$KVCACHE_PASSWORD"' in fence
    assert "http://REDACTED@proxy.example:3128" in fence and "-shttps://REDACTED@api.example" in fence
    from kubectl_kvcache.cli.flags import command_line     # the other spellings pflag accepts

    line = command_line(["verify", f"--token={secret}", f"--server=https://u:{secret}@h:6443/p", "--password",
                         "-" + secret, "--", "--token", "pod"])
    assert secret not in line.split(" -- ")[0], line
    assert line.startswith('kubectl kvcache verify --token "$KVCACHE_TOKEN" --server=https://REDACTED@h:6443/p '
                           '--password "$KVCACHE_PASSWORD" -- --token pod'), line


def test_a_clean_scope_passes():
    code, out, _ = run("verify", "-n", "llm-research", "-f", EXAMPLE, "-o", "markdown")
    assert code == 0
    assert "**Verdict: PASSED**" in out and "Nothing fails." in out


def test_watch_refuses_a_document_format():
    code, out, err = run("verify", "-A", "--watch", "-o", "markdown")
    assert (code, out) == (2, "") and err.startswith("error: --watch prints rows as they come")


@pytest.mark.parametrize("command", COMMANDS)
def test_pymarkdown_lints_the_report_clean(tmp_path, hostile, command):
    """pymarkdown (GFM) with its default rules; line length (md013) off: a report's lines are
    its data, and a table row cannot wrap."""
    paths = []
    for name, source in (("example", EXAMPLE), ("hostile", hostile)):
        path = tmp_path / f"{command}-{name}.md"
        path.write_text(run(command, "-A", "-f", source, "-o", "markdown")[1], encoding="utf-8")
        paths.append(str(path))
    r = subprocess.run([sys.executable, "-m", "pymarkdown", "--disable-rules", "md013", "scan", *paths],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_hostile_file_name_stays_inside_the_command_block(tmp_path):
    path = tmp_path / "x```y<b>[l](www.evil.example) www.evil.example.json"
    path.write_text(open(EXAMPLE, encoding="utf-8").read(), encoding="utf-8")
    _, out, _ = run("verify", "-n", "llm-research", "-f", str(path), "-o", "markdown")
    tokens = list(walk(gfm().parse(out)))
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].info == "sh" and "evil.example" in fences[0].content
    assert "kubectl kvcache verify -n llm-research -f " in fences[0].content
    assert "evil" not in outside_code(tokens)
    assert not {t.type for t in tokens} & {"link_open", "html_inline", "html_block"}


def test_recover_plan_for_a_change_ticket(tmp_path):
    code, out, err = run("recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "-o", "markdown")
    plan = json.loads(run("recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "-o", "json")[1])
    assert code == 0 and "Nothing was changed" in err and "Nothing was changed" in out
    tokens = gfm().parse(out)
    items = [t for t in tokens if t.type == "list_item_open" and t.level == 1 and t.markup == "."]
    assert len(items) == len(plan["steps"])
    fences = [t for t in tokens if t.type == "fence" and t.info == "yaml"]
    creates = [s["object"] for s in plan["steps"] if s["action"] == "create"]
    import yaml
    assert [yaml.safe_load(f.content) for f in fences] == creates      # the manifests, inside their steps
    assert all(f.level > 1 for f in fences)
    path = tmp_path / "plan.md"
    path.write_text(out, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "pymarkdown", "--disable-rules", "md013", "scan", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_report_counts_spelling_and_fix(monkeypatch):
    """Issue 30 item 8: plurals right, engines spelled as verify spells them, each note's fix
    outside its message's code span, the header's time and engine data."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")
    code, out, _ = run("check", "-A", "-f", EXAMPLE, "-o", "markdown")
    assert code == 1
    assert "**Verdict: FAILED (exit code 1)**: 6 errors, 2 warnings, 3 info" in out
    assert "`sglang " not in out and "`vllm " not in out and "`SGLang 0.5.18`" in out
    notes = [x for x in out.splitlines() if x.startswith("- **warning**") or x.startswith("- **info**")]
    assert notes and all(" Fix: `" in x and "Fix:" not in x.split(" Fix: `")[0] for x in notes)
    assert "- **Time:** `2026-03-10T09:00:00Z`" in out
    assert "- **Engine data:** built-in (vLLM " in out
    _, one, _ = run("check", "-n", "llm-research", "-f", EXAMPLE, "-o", "markdown")
    assert "# kubectl kvcache check: 2 errors, 0 warnings" in one
