"""One verdict (issue 47 item 3): every command x every format x every fixture, the report's
verdict is the exit code. The markdown's `Verdict:` line, JUnit's failures, SARIF's error results
and its invocation's exitCode, JSON's and YAML's `verdict`, the table formats' `verdict:` line on
stderr: each says FAILED exactly when the run exits 1, and names that code.

The fixtures: the saved cluster of examples/ (as the goldens run it, with every scope and flag
they use), the change window's scene, and runs built on them where the engine's own word or the
cluster's answer decides: a replica whose engine contradicts the prediction (Item.observed, as
--observe sets it), a replica whose previous container died at start-up after its parse (the
tail of a real vLLM crash: `ValueError: No available memory for the cache blocks`, vllm
v1/core/kv_cache_utils.check_enough_kv_cache_memory, as users pasted it in vllm-project/vllm
#2248 and QwenLM/Qwen3 #12), a named Pod that does not exist, and a namespace the API server says
does not exist. The reading itself (load/, engine/words.py) is replaced at its seam only: the
judge, the verdict, the printers and the exit code are the real ones, run through cli.main."""

import io
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
import yaml

import metrics_text

from kubectl_kvcache import engine
from kubectl_kvcache.cli import main
from kubectl_kvcache.cli.flows import verify as verify_flow
from kubectl_kvcache.load import reader
from kubectl_kvcache.render import formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join("examples", "cluster.json")
SCENE = os.path.join("examples", "change-window", "scene.yaml")

# The tail of a crashed vLLM container's previous log (V0's api_server, as pasted in
# vllm-project/vllm#2248 and QwenLM/Qwen3#12): the engine dies after its parse, out of KV-cache memory.
OOM_TAIL = """INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 343, in _init_cache
    raise ValueError("No available memory for the cache blocks. "
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""

QWEN = ["-n", "llm-prod", "-f", EXAMPLE, "-l", "app.kubernetes.io/instance=qwen-chat"]   # 2 OK replicas

# name -> (argv after the command, the commands it applies to, what is changed at the reading seam)
FIXTURES = {
    "example-all": (["-A", "-f", EXAMPLE], None, None),
    "example-ns": (["-n", "llm-research", "-f", EXAMPLE], None, None),
    "example-off": (["-f", EXAMPLE, "--assume-setting", "off"], None, None),
    "example-empty-ns": (["-n", "nowhere", "-f", EXAMPLE], None, None),
    "example-strict": (["-n", "llm-research", "-f", EXAMPLE, "--strict"], ("check",), None),
    "example-selector": (["-A", "-f", EXAMPLE, "-l", "app.kubernetes.io/instance=qwen-chat"], None, None),
    "example-policy": (["-A", "-f", EXAMPLE, "--policy", os.path.join("examples", "policy.yaml")], ("check",), None),
    "example-verify-policy": (["-A", "-f", EXAMPLE, "--policy", os.path.join("examples", "verify-policy.yaml")],
                              ("verify",), None),
    "example-fail-on": (["-A", "-f", EXAMPLE, "--fail-on", "REJECTED"], ("verify",), None),
    "example-pods": (["-n", "llm-prod", "-f", EXAMPLE, "llama-long-server-0", "deepseek-sgl-server-0"], ("verify",),
                     None),
    "example-ok-pod": (["-n", "llm-prod", "-f", EXAMPLE, "qwen-chat-server-0"], ("verify",), None),
    "scene": (["-A", "-f", SCENE], None, None),
    "pod-not-found": (["-n", "llm-prod", "-f", EXAMPLE, "qwen-chat-server-0", "no-such-pod"], ("verify",), None),
    "namespace-not-found": (["-n", "nowhere", "-f", EXAMPLE], None, "namespace"),
    "namespace-not-found-strict": (["-n", "nowhere", "-f", EXAMPLE, "--strict"], ("check",), "namespace"),
    "observed-contradiction": (["-n", "llm-prod", "-f", EXAMPLE, "qwen-chat-server-0"], ("verify",), "observed"),
    "observed-contradiction-deployment": (QWEN + ["--fail-on", "REJECTED"], ("verify",), "observed"),
    "startup-oom": (["-n", "llm-prod", "-f", EXAMPLE, "qwen-chat-server-0"], ("verify",), "startup"),
    "startup-oom-deployment": (QWEN + ["--fail-on", "REJECTED"], ("verify",), "startup"),
    "rolling": (QWEN, ("verify",), "rolling"),
    "rolling-fail-on": (QWEN + ["--fail-on", "REJECTED"], ("verify",), "rolling"),
}


_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
# kubectl's formats that take an argument (-o NAME=ARGUMENT): a template every command's rows answer
ARGUMENTS = {"jsonpath": "{.items[*].metadata.name}", "jsonpath-file": os.path.join(_EXAMPLES, "kubectl", "rows.jsonpath"),
             "custom-columns": "NAME:.metadata.name", "custom-columns-file": os.path.join(_EXAMPLES, "kubectl", "columns.txt")}


def option(fmt):
    """`-o`'s value for `fmt`."""
    return f"{fmt}={ARGUMENTS[fmt]}" if formats.get(fmt).argument else fmt


def _cases():
    for name, (argv, commands, _) in FIXTURES.items():
        for command in commands or formats.JUDGING:
            for fmt in formats.offered(command):
                yield pytest.param(name, command, fmt, id=f"{name}-{command}-{fmt}")


CASES = list(_cases())


@pytest.fixture(autouse=True)
def report_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")


def _seam(monkeypatch, change):
    """Replace the reading only: the snapshot as a cluster would answer (a namespace it says does
    not exist, a replica not ready yet), or the engines' own word as --observe reads it."""
    if change is None:
        return
    real = reader.read

    def read(connection, scope, *args, **kwargs):
        snapshot = real(connection, scope, *args, **kwargs)
        snapshot.source = "cluster"             # as read from an API server: the engines' words are read
        if change == "namespace":
            snapshot.missing_namespaces = (scope.namespace,)
        return snapshot

    monkeypatch.setattr(reader, "read", read)

    def listen(options, items, err, client=None):
        if change == "namespace":
            return
        ok = [i for i in items if i.status == "OK" and i.pod is not None and i.effective]
        assert ok, "the fixture has an OK replica to contradict"
        item = ok[0]
        if change == "rolling":               # not ready yet: OK as rendered, still rolling
            item.state = dict(item.state or {}, ready=False)
        elif change == "observed":
            other = "fp8_e5m2" if item.effective != "fp8_e5m2" else "fp8_e4m3"
            line = f"non-default args: {{'kv_cache_dtype': '{other}'}}"
            item.observed = engine.Observed(other, None, "log", "args", line)
        else:
            cause = engine.exit_cause(OOM_TAIL)
            assert cause is not None and cause.kind == "startup", cause
            item.exit_cause = cause
            item.state = dict(item.state or {}, lastExitCode=1, restarts=3)

    monkeypatch.setattr(verify_flow, "listen", listen)


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(argv, stdin=io.StringIO(""), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


_MARKDOWN = re.compile(r"^\*\*Verdict: (PASSED|FAILED)(?: \(exit code (\d+)\))?\*\*", re.M)
_LINE = re.compile(r"^verdict: (PASSED|FAILED)(?: \(exit code (\d+)\))?", re.M)


def said(fmt, out, err):
    """(fails, exit code) as the report says them (None: it names no code)."""
    if fmt == "markdown":
        m = _MARKDOWN.search(out)
        assert m, out[:300]
        return m.group(1) == "FAILED", int(m.group(2)) if m.group(2) else 0
    if fmt == "junit":
        root = ET.fromstring(out.encode())
        return int(root.get("failures")) + int(root.get("errors")) > 0, None
    if fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        errors = [r for r in run_["results"] if r["level"] == "error" and not r.get("suppressions")]
        errors += run_["invocations"][0].get("toolExecutionNotifications", [])     # a context not read
        code = run_["invocations"][0].get("exitCode")
        assert (run_["properties"]["verdict"] == "failed") == bool(errors), run_["properties"]
        return bool(errors), code
    if fmt in ("policyreport", "openreports"):      # fail results; the run's exit code on each report
        items = json.loads(out)["items"]
        fails = any(r["result"] == "fail" for i in items for r in i["results"])
        codes = {i["metadata"]["annotations"]["kubectl-kvcache/exit-code"] for i in items}
        assert len(codes) <= 1 and {i["metadata"]["annotations"]["kubectl-kvcache/verdict"] for i in items} <= \
            {"failed" if fails else "passed"}, items
        return fails, int(codes.pop()) if codes else None
    if fmt in metrics_text.FORMATS:       # the run_failed gauge and the exit code gauge (docs/metrics.md)
        command = metrics_text.samples(fmt, out, "kubectl_kvcache_run_failed")[0][0]["command"]
        failed = metrics_text.value(fmt, out, "kubectl_kvcache_run_failed", command=command)
        return failed == 1, int(metrics_text.value(fmt, out, "kubectl_kvcache_run_exit_code", command=command))
    if fmt in ("json", "yaml"):
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        verdict = data.get("verdict")
        assert verdict is not None, "no verdict in the data"
        return verdict["result"] == "FAILED", verdict["exitCode"]
    found = _LINE.findall(err)                    # table, wide, describe, csv: the verdict line on stderr
    assert len(found) <= 1, err
    if not found:
        return False, 0
    word, code = found[0]
    return word == "FAILED", int(code) if code else 0


@pytest.mark.parametrize("name,command,fmt", CASES)
def test_the_report_says_the_exit_code(name, command, fmt, monkeypatch):
    argv, _, change = FIXTURES[name]
    _seam(monkeypatch, change)
    code, out, err = run([command] + argv + ["-o", option(fmt)])
    assert code in (0, 1), err
    fails, named = said(fmt, out, err)
    assert fails == (code == 1), (code, out[:2000], err)
    if named is not None:
        assert named == code, (code, out[:2000], err)


def test_the_matrix_covers_every_command_format_and_case():
    """Every judging command with every format it offers, each fixture where it applies; the
    constructed cases fail the run (they are what the issue found printed as PASSED)."""
    seen = {(c.values[1], c.values[2]) for c in CASES}
    assert seen == {(c, f) for c in formats.JUDGING for f in formats.offered(c)}
    for name in ("observed-contradiction", "startup-oom", "pod-not-found"):
        assert {c.values[2] for c in CASES if c.values[0] == name} == set(formats.offered("verify"))


# -- several contexts (--contexts): one document, the worst exit code ---------------------------

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {name: one, cluster: {server: "http://127.0.0.1:9"}}
users:
- {name: u, user: {}}
contexts:
- {name: zeta, context: {cluster: one, user: u}}
- {name: alpha, context: {cluster: one, user: u}}
current-context: zeta
"""

# what each context's API server answers: "ok" (the example), "namespace" (the namespace asked
# for does not exist), "error" (it cannot be read: exit 2)
FLEETS = {"both-read": ("ok", "ok"), "one-namespace-missing": ("ok", "namespace"), "one-unread": ("ok", "error")}
FLEET_CASES = [pytest.param(name, command, fmt, id=f"{name}-{command}-{fmt}") for name in FLEETS
               for command in formats.JUDGING for fmt in formats.for_fleet(command)]


def _fleet_seam(monkeypatch, tmp_path, answers):
    from kubectl_kvcache.errors import PluginError
    from kubectl_kvcache.kube.connection import Connection

    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    real = reader.read
    by_context = dict(zip(("zeta", "alpha"), answers))

    def read(connection, scope, *args, **kwargs):
        answer = by_context[connection.context]
        if answer == "error":
            raise PluginError("the server could not be reached")
        snapshot = real(Connection(), scope.replace(files=(os.path.join(ROOT, EXAMPLE),)))
        snapshot.source = "cluster"
        if answer == "namespace":
            snapshot.missing_namespaces = (scope.namespace,)
        return snapshot

    monkeypatch.setattr(reader, "read", read)


@pytest.mark.parametrize("name,command,fmt", FLEET_CASES)
def test_a_report_over_contexts_says_the_worst_exit_code(name, command, fmt, monkeypatch, tmp_path):
    _fleet_seam(monkeypatch, tmp_path, FLEETS[name])
    code, out, err = run([command, "--contexts", "zeta,alpha", "-n", "llm-prod", "-l",
                          "app.kubernetes.io/instance=qwen-chat", "-o", fmt])
    assert code in (0, 1, 2), err
    if fmt in ("table", "wide", "csv"):
        failing = re.findall(r"^(?:context \S+: verdict: FAILED \(exit code (\d)\)|error: context )", err, re.M)
        assert bool(failing) == (code != 0), (code, err)
        return
    fails, named = said(fmt, out, err)
    assert fails == (code != 0), (code, out[:2000], err)
    if named is not None:
        assert named == code, (code, out[:2000], err)


# -- the endings of --wait and --watch ------------------------------------------------------------

def _example_snapshot(namespace="llm-prod"):
    from kubectl_kvcache.kube.connection import Connection
    from kubectl_kvcache.load.scope import Scope

    return reader.read(Connection(), Scope(namespace=namespace, files=(os.path.join(ROOT, EXAMPLE),)))


ENDINGS = ("complete", "timeout", "settled", "rejected", "watch-timeout", "pending-timeout")


WAIT_FORMATS = formats.streaming("verify") + ("json", "yaml", "markdown", "junit", "sarif", "openmetrics", "prometheus")   # --wait -o X
ENDING_CASES = [pytest.param(e, f, id=f"{e}-{f}") for e in ENDINGS for f in WAIT_FORMATS
                if e != "watch-timeout" or f in formats.streaming("verify")]     # --watch prints rows only


@pytest.mark.parametrize("ending,fmt", ENDING_CASES)
def test_a_wait_or_watch_ends_with_the_report_of_its_exit_code(ending, fmt):
    """verify --wait/--watch's last report (cli/flows/verify._end, as the follow loop calls it) on
    the example's llm-prod (REJECTED, MISMATCH, MISSING and OK replicas): whatever the rollout
    ended on, the report printed says the exit code it returns. `complete` is given the OK
    deployment only (the rollout's own condition for it); so is `pending-timeout`, a wait that
    timed out while the Setting's status had not reported its spec yet (every replica done:
    the wait still fails, and its report must say so)."""
    from kubectl_kvcache.cli import app
    from kubectl_kvcache.cli.flows import IO
    from kubectl_kvcache.judge import rollout, verify

    snapshot = _example_snapshot()
    report = verify.verify(snapshot)
    if ending in ("complete", "pending-timeout"):
        keep = {("llm-prod", "qwen-chat")}
        report = report.replace(items=[i for i in report.items if (i.namespace, i.deployment) in keep],
                                deployments=[d for d in report.deployments if (d.namespace, d.name) in keep])
    now = rollout.progress(report, snapshot.deployments)
    if ending == "pending-timeout":
        now = now.replace(pending=True)
    outcome = {"pending-timeout": rollout.TIMEOUT, "complete": rollout.COMPLETE, "timeout": rollout.TIMEOUT, "settled": rollout.SETTLED,
               "rejected": rollout.REJECTED, "watch-timeout": rollout.TIMEOUT}[ending]
    if ending == "complete":
        assert now.outcome == rollout.COMPLETE
    flag = "--watch" if ending == "watch-timeout" else "--wait"
    options = app.options_for(app.build_parser().parse_args(["verify", "-n", "llm-prod", flag, "-o", fmt]))
    options = options.replace(output=options.output.about(snapshot))
    out, err = io.StringIO(), io.StringIO()
    code = verify_flow._end(options, IO(io.StringIO(), out, err), report, now, outcome, 3.0, None, options.scope)
    assert code == (0 if ending == "complete" else 1)
    fails, named = said(fmt, out.getvalue(), err.getvalue())
    assert fails == (code == 1), (code, out.getvalue()[:2000], err.getvalue())
    if named is not None:
        assert named == code


@pytest.mark.parametrize("fmt", ("json", "yaml", "markdown", "junit", "sarif"))
def test_a_wait_on_a_namespace_that_does_not_exist_still_reports_it(fmt, monkeypatch):
    """`verify -n nowhere --wait -o FMT`: nothing to wait for, exit 1, and the document says so
    (it printed nothing before: an empty file beside exit 1)."""
    from kubectl_kvcache.load import scope as load_scope

    monkeypatch.setattr(reader, "open_client", lambda *a, **k: object())
    monkeypatch.setattr(load_scope, "resolve_namespace", lambda scope, client: scope.namespace)
    monkeypatch.setattr(verify_flow, "namespace_missing", lambda client, namespace: namespace == "nowhere")
    code, out, err = run(["verify", "-n", "nowhere", "--wait", "-o", fmt])
    assert code == 1 and "namespace nowhere does not exist: nothing to wait for" in err
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1), out
    assert "nowhere" in out
