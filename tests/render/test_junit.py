"""-o junit, read by real consumers: every document is valid against Jenkins' junit-10.xsd (the
schema of the xunit plugin, which pytest checks its own --junitxml output against; taken from
pytest's sdist on PyPI: tests/junit_schema.py) with xmlschema, and parses
with a strict XML parser; one testcase per replica (verify) or object judged (check), per Binding
(bindings), per role (roles); failures carry the reason and the fix; hostile cluster data (markup,
control characters, XML's non-characters) stays text."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import junit_schema
import objects as o
from runcli import kvcache as run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.json")
EVIL = ("</failure><x>&amp;]]><![CDATA[ \"quoted\" 'single' <img src=x>"
        "\x00\x01\x1b]0;pwned\x07\r\nNEXT\tcol\x7f\x9b31m\u202eend\ufffe\uffff")
# what XML 1.0 cannot carry at all (Char production)
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
COMMANDS = ("verify", "check", "bindings", "roles")


@pytest.fixture(scope="module")
def schema():
    return junit_schema.schema()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("junit") / "cluster.json"
    path.write_text(json.dumps(o.as_list(*o.hostile(EVIL))))
    return str(path)


def cases(xml):
    return ET.fromstring(xml.encode("utf-8")).iter("testcase")


@pytest.mark.parametrize("source", ["example", "hostile"])
@pytest.mark.parametrize("command", COMMANDS)
def test_valid_against_the_junit_schema(schema, hostile, command, source):
    code, out, err = run(command, "-A", "-f", EXAMPLE if source == "example" else hostile, "-o", "junit")
    assert code in (0, 1), err
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    schema.validate(out)        # raises with the offending element
    assert not NOT_XML.search(out)
    root = ET.fromstring(out.encode("utf-8"))
    testcases = list(root.iter("testcase"))
    assert int(root.get("tests")) == len(testcases)
    assert int(root.get("failures")) == sum(1 for c in testcases if c.find("failure") is not None)
    assert (int(root.get("failures")) > 0) == (code == 1)        # a failure exactly when the exit code says so
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["command"].startswith(f"kubectl kvcache {command} -A -f ")


def test_hostile_data_stays_text(hostile):
    _, out, _ = run("verify", "-A", "-f", hostile, "-o", "junit")
    root = ET.fromstring(out.encode("utf-8"))
    assert root.find(".//x") is None and root.find(".//img") is None       # no element smuggled in
    names = [c.get("name") for c in root.iter("testcase")]
    assert any("</failure><x>&amp;]]><![CDATA[" in n for n in names), names
    assert all("\x1b" not in n and "\r" not in n and "\n" not in n for n in names)
    for failure in root.iter("failure"):     # the plugin's two lines, whatever line breaks the data held
        lines = failure.text.split("\n")
        assert len(lines) == 2 and lines[0].startswith("reason: ") and lines[1].startswith("fix: "), lines


def test_verify_one_testcase_per_replica_with_reason_and_fix():
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "junit")
    report = json.loads(run("verify", "-A", "-f", EXAMPLE, "-o", "json")[1])
    testcases = list(cases(out))
    assert len(testcases) == len(report["items"])
    failures = [c.find("failure") for c in testcases if c.find("failure") is not None]
    bad = [i for i in report["items"] if i["status"] != "OK"]
    assert sorted(f.get("type") for f in failures) == sorted(i["status"] for i in bad)
    for item, failure in zip(sorted(bad, key=lambda i: i["pod"]), sorted(
            failures, key=lambda f: next(c.get("name") for c in testcases if c.find("failure") is f))):
        assert f"reason: {item['reason']}" in failure.text
        assert f"fix: {item['fix']}" in failure.text
        assert failure.get("message").startswith(item["status"] + ": Binding ")
    suites = {s.get("name") for s in ET.fromstring(out).iter("testsuite")}
    assert suites == {"kvcache verify llm-prod", "kvcache verify llm-research"}


def test_fail_on_decides_what_fails():
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "junit", "--fail-on", "REJECTED")
    types = [f.get("type") for c in cases(out) if (f := c.find("failure")) is not None]
    assert types == ["REJECTED"]


def test_check_one_testcase_per_object_judged():
    code, out, _ = run("check", "-A", "-f", EXAMPLE, "-o", "junit")
    report = json.loads(run("check", "-A", "-f", EXAMPLE, "-o", "json")[1])
    names = [c.get("name") for c in cases(out)]
    keys = [(c.get("classname"), c.get("name")) for c in cases(out)]
    assert len(keys) == len(set(keys)), "an object judged twice"
    objects = {(f["kind"], f["name"]) for f in report["findings"]}
    for kind, name in objects:
        assert f"{kind} {name}" in names
    errors = {(f["kind"], f["name"]) for f in report["findings"] if f["severity"] == "error"}
    failed = {c.get("name") for c in cases(out) if c.find("failure") is not None}
    assert failed == {f"{k} {n}" for k, n in errors}
    strict = {c.get("name") for c in cases(run("check", "-A", "-f", EXAMPLE, "-o", "junit", "--strict")[1])
              if c.find("failure") is not None}
    warned = {(f["kind"], f["name"]) for f in report["findings"] if f["severity"] == "warning"}
    assert strict == failed | {f"{k} {n}" for k, n in warned}


def test_a_clean_scope_has_no_failure(schema):
    code, out, _ = run("verify", "-n", "llm-research", "-f", EXAMPLE, "-o", "junit")
    assert code == 0
    schema.validate(out)
    assert ET.fromstring(out).get("failures") == "0" and len(list(cases(out))) == 2


def test_nothing_in_scope_is_still_a_valid_report_and_fails(schema):
    """Nothing verified in the scope asked for is one failing case saying so (issue 48), never a pass."""
    code, out, _ = run("verify", "-n", "nowhere", "-f", EXAMPLE, "-o", "junit")
    schema.validate(out)
    root = ET.fromstring(out)
    assert (code, root.get("tests"), root.get("failures")) == (1, "1", "1")
    failure = root.find("testsuite/testcase/failure")
    assert failure.get("type") == "nothing-found" and "nothing was verified there" in failure.get("message")


def test_unknown_fails_by_default_and_is_skipped_never_passed_when_tolerated(schema, tmp_path):
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps(o.as_list(o.binding("b1", "fp8"), o.deployment("md", binding_name="gone"),
                                         o.md_pod("a", "md", o.vllm_argv("fp8")),
                                         o.deployment("ok", binding_name="b1"),
                                         o.md_pod("ok-0", "ok", o.vllm_argv("fp8")), o.setting("true"))))
    code, out, _ = run("verify", "-A", "-f", str(path), "-o", "junit")
    schema.validate(out)
    by_name = {c.get("name").split("/")[1]: c for c in cases(out)}      # namespace/DEPLOYMENT/role/N
    assert code == 1 and by_name["md"].find("failure").get("type") == "UNKNOWN"
    assert "Binding gone not found" in by_name["md"].find("failure").text
    code, out, _ = run("verify", "-A", "-f", str(path), "-o", "junit", "--fail-on", "MISMATCH,REJECTED")
    schema.validate(out)
    by_name = {c.get("name").split("/")[1]: c for c in cases(out)}      # namespace/DEPLOYMENT/role/N
    assert code == 0 and by_name["md"].find("failure") is None
    skipped = by_name["md"].find("skipped")
    assert skipped is not None and "Binding gone not found" in skipped.get("message")
    assert by_name["ok"].find("skipped") is None and by_name["ok"].find("failure") is None
    assert ET.fromstring(out).find("testsuite").get("skipped") == "1"


# -- issue 30 item 8: names a CI can follow, a document when the cluster cannot be read ----------

def _moved(tmp_path):
    """examples/cluster.json after a rollout: every Pod of an ordinal role renamed... as a new
    ReplicaSet would name an injected Pod, and every ordinal Pod replaced (same ordinal, new uid)."""
    data = json.loads(Path(EXAMPLE).read_text())
    for item in data["items"]:
        if item["kind"] == "Pod":
            name = item["metadata"]["name"]
            parts = name.split("-")
            if len(parts[-1]) == 5 and not parts[-1].isdigit():       # a ReplicaSet's Pod: new hash, new suffix
                item["metadata"]["name"] = "-".join(parts[:-2] + ["7d9fb84c6", "zq2xk"])
            item["metadata"]["uid"] = item["metadata"].get("uid", "") + "-new"
    path = tmp_path / "after.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_testcase_names_outlive_the_pods(schema, tmp_path):
    """namespace/deployment/role/replica: the same names after a rollout replaced every Pod."""
    _, before, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "junit")
    _, after, _ = run("verify", "-A", "-f", _moved(tmp_path), "-o", "junit")
    schema.validate(after)
    names = [c.get("name") for c in cases(before)]
    assert names == [c.get("name") for c in cases(after)]
    assert "llm-prod/qwen-chat/server/1" in names and "llm-research/injected/notebook-vllm/0" in names
    assert not any("-server-0" in n or "x2kqp" in n for n in names)        # no Pod name
    assert len(set(names)) == len(names)


def test_an_unreachable_cluster_is_an_error_testcase(schema, tmp_path):
    import socket

    with socket.socket() as s:          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for command in COMMANDS:
        code, out, err = run(command, "-A", "-o", "junit", "--server", f"https://127.0.0.1:{port}", "--token", "t",
                             "--request-timeout", "5s")
        assert code == 2 and err.startswith("error: ")
        schema.validate(out)
        root = ET.fromstring(out.encode("utf-8"))
        assert root.get("errors") == "1" and root.get("tests") == "1"
        (case,) = list(root.iter("testcase"))
        assert case.find("error") is not None and "cannot reach" in case.find("error").get("message")


def test_the_header_says_what_was_read_and_when(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")
    _, out, _ = run("check", "-A", "-f", EXAMPLE, "-o", "junit")
    props = {p.get("name"): p.get("value") for p in next(ET.fromstring(out.encode()).iter("testsuite")).iter("property")}
    assert props["Time"] == "2026-03-10T09:00:00Z"
    assert props["Engine data"].startswith("built-in (vLLM ") and props["kubectl-kvcache"]
    assert "SGLang 0.5.18" in props["Engine releases"] and "sglang" not in props["Engine releases"]


def test_report_server_has_no_userinfo():
    from kubectl_kvcache.render.report import without_userinfo

    assert without_userinfo("https://admin:s3cret@k8s.example:6443/base") == "https://k8s.example:6443/base"
    assert without_userinfo("https://k8s.example") == "https://k8s.example"
