"""Cluster data never reaches a terminal raw: ESC, BEL, OSC/CSI sequences, CR, newline, tab, C1
controls and bidi overrides planted in Pod names, args, annotations, a Binding's dtype, the
Setting's description or an error message are escaped in every human format (table, wide, the
per-Pod argv view, notes, summaries, error lines), and carried exactly in -o json|yaml."""

import io
import json
import os
import re

import pytest
import yaml

import objects as o
from kubectl_kvcache import render
from kubectl_kvcache.cli import main
from kubectl_kvcache.render import setting as setting_view
from kubectl_kvcache.render.core import escape
from kubectl_kvcache.operator.records import Setting

# An OSC title change ended by BEL, a screen clear, a CR that would overwrite the row, a newline
# and a tab that would forge rows and columns, a C1 CSI, a right-to-left override.
EVIL = "x\x1b]0;pwned\x07\x1b[2J\rFORGED row\nNEXT\tcol\x9b31m\u202eend"
POD = "pod-" + EVIL
# Every control character a terminal acts on; only the line feeds the printer writes remain.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def run(*argv, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def hostile_objects():
    injected = o.injected_pod("inj-" + EVIL, "missing-" + EVIL,
                              containers=[o.container("vllm", args=["vllm", "serve", "m", "--note", EVIL])])
    injected["metadata"]["annotations"]["kvcache.gpustack.ai/role"] = EVIL
    workload = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "wl", "namespace": "team"},
                "spec": {"template": {
                    "metadata": {"labels": {"kvcache.gpustack.ai/inject": "true"},
                                 "annotations": {"kvcache.gpustack.ai/binding": "b1",
                                                 "kvcache.gpustack.ai/engine": "vLLM"}},
                    "spec": {"containers": [o.container("vllm", command=["sh", "-c", "vllm serve " + EVIL])]}}}}
    return [
        o.binding("b1", "fp8"),
        o.binding("b2", EVIL, domain="evil"),
        o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 1,
                                   "extraArgs": [f"--kv-cache-dtype={EVIL}"]}]),
        o.md_pod(POD, "md", o.vllm_argv("fp8", extra=[f"--kv-cache-dtype={EVIL}", "--served-model-name", EVIL])),
        o.deployment("md2", binding_name="b2"),
        o.md_pod("md2-0", "md2", o.vllm_argv(EVIL)),
        injected,
        workload,
        {"apiVersion": "v1", "kind": "Weird" + EVIL, "metadata": {"name": "w"}},
        o.setting("true") | {"status": {"value": "true", "description": EVIL, "editable": True}},
    ]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("escape") / "cluster.json"
    path.write_text(json.dumps(o.as_list(*hostile_objects())))
    return str(path)


def strings(data):
    if isinstance(data, dict):
        for value in data.values():
            yield from strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)
    elif isinstance(data, str):
        yield data


def assert_safe(text, rows=None):
    assert not RAW.search(text), repr(RAW.search(text))
    assert "\x1b" not in text and "pwned\x07" not in text
    if rows is not None:
        assert len(text.splitlines()) == rows, text


HUMAN = [
    (["verify", "-A"], 1 + 3),                      # header + 2 MD pods + 1 injected pod
    (["verify", "-A", "-o", "wide"], 1 + 3),
    (["verify", "-A", "--no-headers"], 3),
    (["check", "-A"], None),
    (["check", "-A", "-o", "wide"], None),
    (["bindings", "-A"], None),
    (["bindings", "-A", "-o", "wide"], None),
    (["roles", "-A"], 1 + 1),
    (["roles", "-A", "-o", "wide"], 1 + 1),
]


@pytest.mark.parametrize("argv, rows", HUMAN, ids=[" ".join(a) for a, _ in HUMAN])
def test_human_output_escapes_every_control_character(saved, argv, rows):
    code, out, err = run(*argv, "-f", saved)
    assert code in (0, 1), err
    assert_safe(out, rows)
    assert_safe(err)
    assert "^[]0;pwned^G^[[2J\\rFORGED row\\nNEXT\\tcol\\x9b31m\\u202eend" in out + err


def test_check_rows_are_one_per_finding(saved):
    _, as_json, _ = run("check", "-A", "-f", saved, "-o", "json")
    findings = json.loads(as_json)["findings"]
    _, out, _ = run("check", "-A", "-f", saved)
    assert len(out.splitlines()) == 1 + len(findings)
    _, as_json, _ = run("bindings", "-A", "-f", saved, "-o", "json")
    _, out, _ = run("bindings", "-A", "-f", saved)
    assert len(out.splitlines()) == 1 + len(json.loads(as_json)["items"])


def test_a_hostile_pod_name_on_the_command_line_is_refused_escaped(saved):
    code, out, err = run("verify", "-n", "team", "-f", saved, POD)
    assert code == 2 and out == ""
    assert_safe(err)
    assert err.startswith("error: invalid Pod name 'pod-x\\x1b]0;pwned\\x07") and len(err.splitlines()) == 1


def test_pod_argv_view_escapes_the_elements(saved):
    code, out, err = run("verify", "-n", "team", "-f", saved, "md2-0")
    assert code == 1
    assert_safe(out)
    assert_safe(err)
    # each argv element is one line of the view, however many newlines it holds
    assert sum(1 for line in out.splitlines() if line.startswith("  command[")) == len(o.vllm_argv(EVIL))
    assert "^[]0;pwned^G" in out


@pytest.mark.parametrize("command", ["verify", "check", "bindings", "roles"])
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_structured_output_is_exact(saved, command, fmt):
    _, out, err = run(command, "-A", "-f", saved, "-o", fmt)
    assert "\x1b" not in out and "\x07" not in out     # escaped by JSON / quoted by YAML
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert any(EVIL in text for text in strings(data))
    assert_safe(err)
    if command == "verify":
        assert POD in {i["pod"] for i in data["items"]}
    if command == "bindings":
        assert EVIL in {i["dtype"] for i in data["items"] if i["name"] == "b2"}


def test_error_line_names_a_hostile_object_escaped(tmp_path):
    pod = o.md_pod(POD, "md", ["vllm", "serve", ["nested"]])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(pod))
    code, out, err = run("verify", "-f", str(path))
    assert code == 2 and out == ""
    assert_safe(err, rows=1)
    assert err.startswith("error: ") and "spec.containers[0].command[2]" in err and "pod-x^[]0;pwned^G" in err


def test_ignored_kind_note_is_escaped(saved):
    _, _, err = run("verify", "-A", "-f", saved, "-o", "json")
    assert "note: ignored objects of other kinds: Weirdx^[]0;pwned^G" in err
    assert_safe(err)


def test_setting_status_lines_are_escaped():
    record = Setting("true", "true", True, EVIL, False, "7", "cluster")
    out = io.StringIO()
    setting_view.status(record, out)
    assert_safe(out.getvalue(), rows=len(setting_view.status_lines(record)))
    assert "description: x^[]0;pwned^G" in out.getvalue()
    # the structured form keeps it exactly
    assert setting_view.status_view(record)["description"] == EVIL
    buf = io.StringIO()
    render.structured(setting_view.status_view(record), "json", buf)
    assert json.loads(buf.getvalue())["description"] == EVIL


def test_error_note_trace_and_prompt_lines_are_escaped():
    err = io.StringIO()
    render.error(err, "the server said: " + EVIL)
    render.note(err, EVIL)
    render.tracer(err)("GET /api/v1/namespaces/" + EVIL)
    render.prompt(err, EVIL)
    assert_safe(err.getvalue(), rows=4)


def test_escape_matches_kubectl_for_esc_and_cr_and_leaves_text_alone():
    assert escape("a\x1bb\rc") == "a^[b\\rc"          # printers.EscapeTerminal
    assert escape("plain ünïcode 名前 -- x=y") == "plain ünïcode 名前 -- x=y"
    assert escape("\x00\x07\x7f\x85\u2066") == "^@^G^?\\x85\\u2066"
    assert escape(escape(EVIL)) == escape(EVIL)
    assert escape("a\ud800b") == "a\\ud800b"                 # a lone surrogate from JSON's "\ud800"
    assert escape(None) == "None" and escape(3) == "3"


def test_only_render_core_writes():
    """Every byte of human output goes through render.core's escaping primitives: no other render
    module (nor any command) writes to a stream or prints itself. The data printers (-o json,
    yaml) write the data exactly: JSON escapes control characters itself, YAML quotes them."""
    from kubectl_kvcache.render.formats import FORMATS

    base = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "kubectl_kvcache")
    data_printers = {os.path.join("render", "formats", f"{f.module}.py") for f in FORMATS.values() if f.structured}
    offenders = []
    for folder, _, files in os.walk(base):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path.endswith(os.path.join("render", "core.py")):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if re.search(r"\bprint\(|\.write\(", text) and os.path.relpath(path, base) not in data_printers:
                offenders.append(os.path.relpath(path, base))
    assert offenders == []
