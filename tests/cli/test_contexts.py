"""--contexts/--all-contexts without a cluster: what is refused before anything is sent, the
exit code over contexts, and how the report of several contexts is put together (the real
servers: tests/cluster/test_fleet_cluster.py)."""

import io
import json

import pytest

from runcli import kvcache as run
from kubectl_kvcache import exitcodes
from kubectl_kvcache.cli.flows import fleet
from kubectl_kvcache.render import fleet as view
from kubectl_kvcache.render.core import Column, View
from kubectl_kvcache.render.output import Output

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {name: one, cluster: {server: "http://127.0.0.1:9"}}
users:
- {name: u, user: {}}
contexts:
- {name: zeta, context: {cluster: one, user: u}}
- {name: alpha, context: {cluster: one, user: u, namespace: team}}
current-context: zeta
"""


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return str(path)


@pytest.mark.parametrize("argv,says", [
    (("verify", "--contexts", "alpha", "--context", "zeta"), "--context picks one context"),
    (("check", "--contexts", "alpha", "--all-contexts"), "--contexts and --all-contexts cannot be used together"),
    (("bindings", "--all-contexts", "-f", "x.json"), "-f/--filename reads saved objects, not clusters"),
    (("verify", "--all-contexts", "some-pod"), "naming Pods picks them in one cluster"),
    (("verify", "--all-contexts", "--wait"), "--watch/--wait follow one cluster's rollout"),
    (("roles", "--parallel", "2"), "--parallel needs --contexts/--all-contexts"),
    (("verify", "--all-contexts", "--parallel", "0"), "--parallel must be 1 or more"),
    (("verify", "--contexts", " , "), "--contexts needs at least one context name"),
    (("verify", "--contexts", "alpha,nope"), "context 'nope' does not exist in the kubeconfig (--contexts)"),
    (("setting", "on", "--contexts", "alpha"), "setting on changes one cluster at a time"),
    (("setting", "off", "--all-contexts"), "setting off changes one cluster at a time"),
    (("recover", "b", "--parallel", "3"), "recover changes one cluster at a time"),
])
def test_refused_in_one_line_before_anything_is_sent(kubeconfig, argv, says):
    code, out, err = run(*argv, "--kubeconfig", kubeconfig)
    assert code == exitcodes.ERROR and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err, err


def test_every_context_fails_alone_and_is_named(kubeconfig):
    code, out, err = run("verify", "--all-contexts", "--kubeconfig", kubeconfig, "-o", "json")
    assert code == exitcodes.ERROR
    data = json.loads(out)
    assert [c["context"] for c in data["contexts"]] == ["alpha", "zeta"]      # sorted, as get-contexts
    assert all(c["error"].startswith("cannot reach the API server at http://127.0.0.1:9") for c in data["contexts"])
    assert [line.split(":")[1].strip() for line in err.splitlines()] == ["context alpha", "context zeta"]


def test_the_worst_exit_code_wins():
    assert exitcodes.worst([0, 1, 0]) == 1
    assert exitcodes.worst([1, 2, 0]) == 2
    assert exitcodes.worst([0, 0]) == 0
    assert exitcodes.worst([]) == 0


def test_fan_out_is_bounded_and_keeps_every_outcome():
    import threading
    import time

    running, peak, lock = [0], [0], threading.Lock()

    def job(name):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        if name == "bad":
            raise ValueError(name)
        return name.upper()

    outcomes = fleet.fan_out(["a", "bad", "c", "d", "e"], job, 2)
    assert peak[0] == 2
    assert outcomes["a"] == ("A", None) and outcomes["e"] == ("E", None)
    assert outcomes["bad"][0] is None and isinstance(outcomes["bad"][1], ValueError)


class _Report:
    def __init__(self, rows):
        self.rows = rows


INNER = View(columns=(Column("name", lambda r: r["name"]),), wide=(Column("why", lambda r: r["why"]),),
             rows=lambda report: report.rows,
             to_dict=lambda report: {"setting": {"value": True},
                                     "items": report.rows, "summary": {"total": len(report.rows), "OK": 1}},
             empty="things", kind="VerifyReport")


def test_the_report_of_several_contexts():
    results = (view.Result("b", _Report([{"name": "x", "why": "1"}, {"name": "y", "why": "2"}])),
               view.Result("a", error="refused"),
               view.Result("c", _Report([{"name": "z", "why": "3"}])))
    data = view.to_dict(INNER, view.Fleet(results))
    assert data["kind"] == "FleetVerifyReport"
    assert [(i["context"], i["name"]) for i in data["items"]] == [("b", "x"), ("b", "y"), ("c", "z")]
    assert data["contexts"] == [
        {"context": "b", "error": None, "setting": {"value": True}, "summary": {"total": 2, "OK": 1}},
        {"context": "a", "error": "refused"},
        {"context": "c", "error": None, "setting": {"value": True}, "summary": {"total": 1, "OK": 1}}]
    assert data["summary"] == {"total": 3, "OK": 2}
    fleet_view = view.view(INNER)
    out = io.StringIO()
    fleet_view_rows = fleet_view.cells(view.Fleet(results), True)
    assert fleet_view.headers(True) == ["context", "name", "why"]
    assert fleet_view_rows == [["b", "x", "1"], ["b", "y", "2"], ["c", "z", "3"]]
    from kubectl_kvcache.render import core

    core.show(fleet_view, view.Fleet(results), Output("table"), out)
    assert out.getvalue().splitlines()[0].split() == ["CONTEXT", "NAME"]


@pytest.mark.parametrize("word,shown", [("", ["alpha", "zeta"]), ("al", ["alpha"]), ("alpha,", ["alpha,zeta"]),
                                        ("alpha,zeta,", []), ("--contexts=zeta,a", ["--contexts=zeta,alpha"])])
def test_contexts_complete_one_name_after_another(kubeconfig, monkeypatch, word, shown):
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    words = ["verify", word] if word.startswith("--") else ["verify", "--contexts", word]
    code, out, err = run("__complete", *words)
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == shown
    assert lines[-1] == (":4" if "," not in word else ":6")


def _example_report():
    import os

    from kubectl_kvcache.judge import verify
    from kubectl_kvcache.kube.connection import Connection
    from kubectl_kvcache.load import reader
    from kubectl_kvcache.load.scope import Scope

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    snapshot = reader.read(Connection(), Scope(all_namespaces=True,
                                               files=(os.path.join(root, "examples", "cluster.json"),)))
    from kubectl_kvcache.judge import verdict

    report = verify.verify(snapshot, account=True)
    return report.replace(verdict=verdict.verify(report))       # decided, as each context's flow decides it


@pytest.mark.parametrize("fmt", ["junit", "markdown"])
def test_one_document_across_contexts(fmt):
    """-o junit|markdown with --contexts: one document, every context's cases under CONTEXT/NAMESPACE
    with the names one context gives them, a context that could not be read as an error case."""
    import xml.etree.ElementTree as ET

    import junit_schema
    from kubectl_kvcache.render import verify

    report = _example_report()
    results = (view.Result("prod-eu", report, code=report.verdict.code),
               view.Result("prod-us", error="cannot reach it", code=exitcodes.ERROR),
               view.Result("prod-ap", report, code=report.verdict.code))
    fleet_ = view.Fleet(results, exitcodes.worst(r.code for r in results))      # as flows/fleet.run makes it
    out = io.StringIO()
    view.document(verify.VIEW, fleet_, Output(fmt, command="kubectl kvcache verify --contexts x"), (), out)
    text = out.getvalue()
    if fmt == "junit":
        junit_schema.schema().validate(text)
        root = ET.fromstring(text.encode())
        names = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
        assert ("kvcache.verify.prod-eu/llm-prod", "llm-prod/qwen-chat/server/1") in names
        assert ("kvcache.verify.prod-ap/llm-prod", "llm-prod/qwen-chat/server/1") in names
        assert root.get("errors") == "1" and root.get("tests") == str(2 * len(report.items) + 1)
        assert int(root.get("failures")) == 2 * sum(1 for i in report.items if i.status != "OK")
    else:
        assert text.count("\n# ") == 0 and text.startswith("# kubectl kvcache verify across 3 contexts: ")
        assert "## Not read" in text and "`context prod-us`: `cannot reach it`" in text
        assert "**Verdict: FAILED (exit code 2)**" in text
        assert "- **Setting (prod-eu):**" in text and "- **Setting (prod-ap):**" in text


def test_every_format_is_allowed_with_contexts():
    import argparse

    from kubectl_kvcache.cli import contexts

    for fmt in ("table", "wide", "json", "yaml", "markdown", "junit"):
        ns = argparse.Namespace(contexts="a,b", all_contexts=False, parallel=None, context=None, filename=[],
                                output=fmt)
        assert contexts.wrap(ns, "verify", "verify", "inner").contexts == ("a", "b")
