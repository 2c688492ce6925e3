"""-o openmetrics and -o prometheus, read back as Prometheus reads them: every output is parsed by
prometheus_client's own parsers (tests/metrics_text.py: the OpenMetrics 1.0 one, the 0.0.4
text one); the metric names and label sets are the documented contract (docs/metrics.md), listed
here so a rename fails; the counts are those of the json report of the same run; the run_failed
gauge is the exit code's decision (with --fail-on, a policy, --strict); cluster text in a label
value comes back as the same string, whatever quotes, backslashes, newlines or `# EOF` it holds.
The capacity family after --observe: tests/cli/test_capacity_cli.py; over several contexts: the
fleet test below and tests/cli/test_verdict_matrix.py."""

import io
import json
import re
from pathlib import Path

import pytest

import metrics_text
import objects as o
from runcli import kvcache as run
from kubectl_kvcache import exitcodes
from kubectl_kvcache.render import metrics

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.json")
FORMATS = metrics_text.FORMATS

# The contract (docs/metrics.md): name, type, unit, labels. A change here is a change for every
# alert rule and dashboard that reads them: say it in docs/metrics.md and the release notes.
CONTRACT = {
    "kubectl_kvcache_build": ("info", None, ("version",)),
    "kubectl_kvcache_run_failed": ("gauge", None, ("command",)),
    "kubectl_kvcache_run_exit_code": ("gauge", None, ("command",)),
    "kubectl_kvcache_run_timestamp_seconds": ("gauge", "seconds", ("command",)),
    "kubectl_kvcache_context_read": ("gauge", None, ("command", "context")),
    "kubectl_kvcache_objects_judged": ("gauge", None, ("command", "context", "kind", "outcome")),
    "kubectl_kvcache_findings": ("gauge", None, ("command", "context", "namespace", "code", "severity", "failed")),
    "kubectl_kvcache_suppressed_findings": ("gauge", None, ("command", "context", "namespace", "code")),
    "kubectl_kvcache_replicas": ("gauge", None, ("context", "namespace", "deployment", "role", "binding", "status",
                                                 "outcome")),
    "kubectl_kvcache_replica_capacity_tokens": ("gauge", "tokens", ("context", "namespace", "deployment", "role",
                                                                    "binding", "replica")),
}
VERIFY_ONLY = {"kubectl_kvcache_replicas", "kubectl_kvcache_replica_capacity_tokens"}


@pytest.fixture(autouse=True)
def fixed_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")


def test_the_families_are_the_contract():
    assert {f.name: (f.type, f.unit, f.labels) for f in metrics.FAMILIES} == CONTRACT
    for f in metrics.FAMILIES:
        assert re.fullmatch(r"kubectl_kvcache_[a-z_]+", f.name) and not f.name.endswith(("_total", "_info"))
        assert f.unit is None or f.name.endswith("_" + f.unit)
        assert ("verify" in f.commands) and (("check" in f.commands) == (f.name not in VERIFY_ONLY))


def test_the_docs_list_every_family_with_its_type_and_labels():
    """docs/metrics.md's table: one row per family, its type and its labels as the code has them."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    rows = {m.group(1): (m.group(2), tuple(re.findall(r"`(\w+)`", m.group(3))))
            for m in re.finditer(r"^\| `(kubectl_kvcache_\w+)` \| (\w+) \| ([^|]*) \|", text, re.M)}
    assert rows == {name: (kind, labels) for name, (kind, _, labels) in CONTRACT.items()}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", ["verify", "check"])
def test_every_family_parses_with_help_type_and_its_labels(fmt, command):
    code, out, err = run(command, "-A", "-f", EXAMPLE, "-o", fmt)
    assert code == exitcodes.FINDINGS, err
    found = metrics_text.families(fmt, out)
    expected = [f for f in metrics.FAMILIES if command in f.commands]
    for f in expected:
        name = f.name if fmt == "openmetrics" or f.type != "info" else f.name + "_info"
        family = found[name]
        assert family.documentation == f.help
        assert family.type == (f.type if fmt == "openmetrics" else "gauge")
        if fmt == "openmetrics":
            assert family.unit == (f.unit or "")
        for sample in family.samples:
            assert tuple(sample.labels) == f.labels, (f.name, sample)
            assert sample.timestamp is None         # a textfile collector skips a file with timestamps
    names = {f.name if fmt == "openmetrics" or f.type != "info" else f.name + "_info" for f in expected}
    assert set(found) == names


def _json(command, *argv):
    code, out, err = run(command, *argv, "-o", "json")
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("argv", [("-A",), ("-n", "llm-prod"), ("-A", "--fail-on", "REJECTED"),
                                  ("-A", "--policy", "examples/verify-policy.yaml")])
def test_the_replica_counts_are_the_json_reports(fmt, argv, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, report = _json("verify", *argv, "-f", EXAMPLE)
    got, out, _ = run("verify", *argv, "-f", EXAMPLE, "-o", fmt)
    assert got == code
    replicas = metrics_text.samples(fmt, out, "kubectl_kvcache_replicas")
    items = report["items"]
    by_status: dict = {}
    for labels, value in replicas:
        by_status[labels["status"]] = by_status.get(labels["status"], 0) + value
    judged = {}
    for i in items:
        judged[i["status"]] = judged.get(i["status"], 0) + 1
    ignored = [labels for labels, _ in metrics_text.samples(fmt, out, "kubectl_kvcache_suppressed_findings")]
    # every replica the json lists, by status; a replica the policy ignored is counted too (passed)
    assert sum(by_status.values()) == len(items) + sum(
        v for _, v in metrics_text.samples(fmt, out, "kubectl_kvcache_suppressed_findings"))
    for status, n in judged.items():
        assert by_status[status] >= n
    if not ignored:
        assert by_status == judged
    failing = sum(v for labels, v in replicas if labels["outcome"] == "failed")
    assert failing == report["verdict"]["failing"]
    # per namespace, ModelDeployment, role and Binding: as the json's items name them
    if not ignored:
        def md(i):
            return i["owner"]["name"] if i["owner"] and i["owner"]["kind"] == "ModelDeployment" else ""
        for labels, value in replicas:
            assert value == sum(1 for i in items if (i["namespace"], md(i), i["role"] or "", i["binding"] or "",
                                                     i["status"]) == tuple(labels[k] for k in (
                                                         "namespace", "deployment", "role", "binding", "status")))

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("argv", [("-A",), ("-A", "--strict"), ("-A", "--policy", "examples/policy.yaml"),
                                  ("-n", "llm-research")])
def test_the_finding_counts_are_the_json_reports(fmt, argv, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, report = _json("check", *argv, "-f", EXAMPLE)
    got, out, _ = run("check", *argv, "-f", EXAMPLE, "-o", fmt)
    assert got == code
    found = metrics_text.samples(fmt, out, "kubectl_kvcache_findings")
    by_severity: dict = {}
    for labels, value in found:
        by_severity[labels["severity"]] = by_severity.get(labels["severity"], 0) + value
    assert {s: n for s, n in report["summary"].items() if n} == by_severity
    assert sum(v for labels, v in found if labels["failed"] == "true") == report["verdict"]["failing"]
    for labels, value in found:
        assert value == sum(1 for f in report["findings"] if (f["code"], f["severity"], f.get("namespace") or "") ==
                            (labels["code"], labels["severity"], labels["namespace"]))


PASSING = ("-n", "llm-prod", "-f", EXAMPLE, "-l", "app.kubernetes.io/instance=qwen-chat")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command,argv", [
    ("verify", PASSING), ("verify", ("-A", "-f", EXAMPLE)), ("verify", ("-A", "-f", EXAMPLE, "--fail-on", "NO-POD")),
    ("verify", ("-n", "llm-prod", "-f", EXAMPLE, "--ignore", "MISMATCH,MISSING,REJECTED")),
    ("verify", ("-n", "llm-prod", "-f", EXAMPLE, "--severity", "MISMATCH=warning")),
    ("check", PASSING), ("check", ("-n", "llm-research", "-f", EXAMPLE)), ("check", ("-A", "-f", EXAMPLE)),
    ("check", ("-A", "-f", EXAMPLE, "--ignore", "binding-dtype-rejected,binding-auto")),
    ("check", ("-A", "-f", EXAMPLE, "--ignore", "binding-dtype-rejected,binding-auto", "--strict")),
])
def test_run_failed_is_the_exit_codes_decision(fmt, command, argv):
    code, out, err = run(command, *argv, "-o", fmt)
    assert code in (0, 1), err
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_failed", command=command) == (code != 0)
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_exit_code", command=command) == code
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_timestamp_seconds", command=command) == 1773133200


def test_the_scenes_cover_both_decisions():
    """The table above holds passing and failing runs of both commands (never all one way)."""
    codes = {(c, run(c, *argv, "-o", "openmetrics")[0]) for c, argv in (
        ("verify", PASSING), ("verify", ("-A", "-f", EXAMPLE)), ("check", PASSING),
        ("check", ("-A", "-f", EXAMPLE)))}
    assert codes == {("verify", 0), ("verify", 1), ("check", 0), ("check", 1)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_that_judged_nothing_says_it_failed(fmt, tmp_path):
    code, out, err = run("verify", "-f", str(tmp_path / "absent.json"), "-o", fmt)
    assert code == exitcodes.ERROR and err.startswith("error: ") and err.count("\n") == 1
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_failed", command="verify") == 1
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_exit_code", command="verify") == 2
    assert metrics_text.samples(fmt, out, "kubectl_kvcache_replicas") == []


# cluster text that would end a label value, a line or the exposition if it were not escaped
EVIL = 'a"b\\c\n# EOF\nkubectl_kvcache_run_failed{command="verify"} 0\n}\\n,x="y" \\"'
NAME = "n" + EVIL


def _hostile_scene(tmp_path):
    objs = [o.binding(NAME, "fp8", ns=NAME), o.deployment("md" + EVIL, binding_name=NAME, ns=NAME),
            o.md_pod("md-0", "md" + EVIL, o.vllm_argv("fp8"), ns=NAME),
            o.deployment("bad", binding_name=NAME, ns=NAME), o.md_pod("bad-0", "bad", o.vllm_argv("bf16"), ns=NAME),
            o.binding("spare", "fp8", ns=NAME),         # nobody uses it: check's binding-unused, in namespace NAME
            o.setting("true")]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return str(path)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", ["verify", "check"])
def test_cluster_text_in_a_label_comes_back_the_same(fmt, command, tmp_path):
    code, out, err = run(command, "-A", "-f", _hostile_scene(tmp_path), "-o", fmt)
    assert code in (0, 1), err
    assert out.count("# EOF\n") == (fmt == "openmetrics") and out.endswith("# EOF\n") == (fmt == "openmetrics")
    failed = metrics_text.samples(fmt, out, "kubectl_kvcache_run_failed")
    assert failed == [({"command": command}, float(code != 0))]        # no second sample smuggled in
    values = {v for family in metrics_text.families(fmt, out).values() for s in family.samples
              for v in s.labels.values()}
    assert NAME in values
    if command == "verify":
        replicas = metrics_text.samples(fmt, out, "kubectl_kvcache_replicas")
        assert {(ls["namespace"], ls["binding"], ls["deployment"]) for ls, _ in replicas} >= {(NAME, NAME, "md" + EVIL)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_characters_are_made_visible_and_the_rest_kept(fmt):
    from kubectl_kvcache.render.formats.openmetrics import label_value

    assert label_value('q"\\\n') == 'q\\"\\\\\\n'
    text = label_value("a\x1b]0;x\x07\rb\ud800")
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    text.encode("utf-8")        # a lone surrogate is never written: Prometheus reads UTF-8 only


def test_several_contexts_label_each_one_and_name_the_unread():
    """One exposition over three contexts (as cli/flows/fleet.run builds it): every replica counted
    under its context, the context not read as context_read 0, the run failed with the worst code."""
    from kubectl_kvcache.judge import verdict, verify
    from kubectl_kvcache.kube.connection import Connection
    from kubectl_kvcache.load import reader
    from kubectl_kvcache.load.scope import Scope
    from kubectl_kvcache.render import fleet as view, verify as verify_view
    from kubectl_kvcache.render.output import Output

    snapshot = reader.read(Connection(), Scope(namespace="llm-prod", files=(EXAMPLE,)))
    report = verify.verify(snapshot, account=True)
    report = report.replace(verdict=verdict.verify(report))
    results = (view.Result("prod-eu", report, code=report.verdict.code),
               view.Result("prod-us", error="cannot reach it", code=exitcodes.ERROR),
               view.Result("prod-ap", report, code=report.verdict.code))
    fleet = view.Fleet(results, exitcodes.worst(r.code for r in results))
    for fmt in FORMATS:
        out = io.StringIO()
        view.document(verify_view.VIEW, fleet, Output(fmt, command="kubectl kvcache verify --contexts x"), (), out)
        text = out.getvalue()
        read = {ls["context"]: v for ls, v in metrics_text.samples(fmt, text, "kubectl_kvcache_context_read")}
        assert read == {"prod-eu": 1, "prod-us": 0, "prod-ap": 1}
        replicas = metrics_text.samples(fmt, text, "kubectl_kvcache_replicas")
        for context in ("prod-eu", "prod-ap"):
            assert sum(v for ls, v in replicas if ls["context"] == context) == len(report.items)
            assert sum(v for ls, v in replicas if ls["context"] == context and ls["outcome"] == "failed") == \
                sum(1 for i in report.items if i.status != "OK")
        assert metrics_text.value(fmt, text, "kubectl_kvcache_run_exit_code", command="verify") == 2
        assert metrics_text.value(fmt, text, "kubectl_kvcache_run_failed", command="verify") == 1
