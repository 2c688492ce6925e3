"""--contexts/--all-contexts against real API servers: two kubeconfig files merged as kubectl
merges a KUBECONFIG list, contexts on two real servers (one shared PKI), one on a server without
the operator's CRDs and one on a closed port. Each context's part of the combined report equals
`--context CTX` on its own; failing contexts are one error line each, after the others, exit 2."""

import json
import re
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

harness = sys.modules["kvcache_test_harness"]      # loaded by this folder's conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
GOOD = ("a", "b", "b-exec")
EXEC_TOKEN = "fleet-exec-token-0123456789"


def _b64(path):
    return harness._b64file(path)


def _entries(c, name, namespace=None):
    """(cluster, user, context) kubeconfig entries for harness cluster `c`'s admin, as `name`."""
    pki = os.path.join(c.workdir, "pki")
    context = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    return ({"name": name, "cluster": {"server": c.server, "certificate-authority-data": _b64(f"{pki}/ca.crt")}},
            {"name": name, "user": {"client-certificate-data": _b64(f"{pki}/admin.crt"),
                                    "client-key-data": _b64(f"{pki}/admin.key")}},
            {"name": name, "context": context})


def _write(path, entries, current):
    clusters, users, contexts = zip(*entries)
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "clusters": list(clusters), "users": list(users),
                   "contexts": list(contexts), "current-context": current}, f)
    return path


def _seed(c, setting):
    """examples/cluster.json in fresh namespaces of `c`; returns {example namespace: namespace}."""
    c.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
             "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
             "spec": {"value": setting}, "status": {"value": setting, "editable": True}})
    return c.load_example_namespaces(EXAMPLE, "fleet-")


@pytest.fixture(scope="module")
def fleet(cluster, bare_cluster, cluster_binaries, tmp_path_factory):
    second = harness.Cluster(cluster_binaries, name="fleet-b", pki_from=cluster,
                             tokens={EXEC_TOKEN: ("fleet-exec", ["system:masters"])})
    try:
        second.start()
    except harness.ClusterError as exc:
        pytest.fail(f"could not start the second test cluster: {exc}", pytrace=False)
    try:
        a_ns, b_ns = _seed(cluster, "true"), _seed(second, "false")
        closed = harness.free_port()
        folder = tmp_path_factory.mktemp("fleet")
        down = ({"name": "down", "cluster": {"server": f"http://127.0.0.1:{closed}"}},
                {"name": "down", "user": {}}, {"name": "down", "context": {"cluster": "down", "user": "down"}})
        plugin = folder / "credential-plugin"
        plugin.write_text("#!/bin/sh\necho '" + json.dumps({
            "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": EXEC_TOKEN}}) + "'\n")
        plugin.chmod(0o755)
        cl, _, _ = _entries(second, "b-exec")
        with_exec = (cl, {"name": "b-exec", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}}},
            {"name": "b-exec", "context": {"cluster": "b-exec", "user": "b-exec", "namespace": b_ns["llm-prod"]}})
        first = _write(folder / "first.json", [_entries(cluster, "a", a_ns["llm-prod"]), _entries(second, "b"),
                                               with_exec], "a")
        # the second file's "a" is never used: the first file naming a context wins (loader.go Load)
        shadow = ({"name": "a", "cluster": {"server": f"http://127.0.0.1:{closed}"}},
                  {"name": "a", "user": {}}, {"name": "a", "context": {"cluster": "down", "user": "down"}})
        cl, _, _ = _entries(cluster, "refused")      # cluster A, with a token it does not know
        refused = (cl, {"name": "refused", "user": {"token": "not-a-token-0123456789"}},
                   {"name": "refused", "context": {"cluster": "refused", "user": "refused"}})
        other = _write(folder / "second.json", [_entries(bare_cluster, "bare"), down, shadow, refused], "bare")
        env = dict(os.environ, KUBECONFIG=os.pathsep.join([str(first), str(other)]),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        yield {"env": env, "a": a_ns, "b": b_ns, "folder": folder}
    finally:
        second.stop()


def run(fleet, *argv, timeout=120):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv], env=fleet["env"], capture_output=True,
                       text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def _error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("command,key", [("verify", "items"), ("check", "findings"), ("bindings", "items"),
                                         ("roles", "items")])
def test_each_context_is_what_context_alone_gives(fleet, command, key):
    code, out, err = run(fleet, command, "--all-contexts", "-A", "-o", "json")
    assert code == 2, err
    data = json.loads(out)
    assert [c["context"] for c in data["contexts"]] == ["a", "b", "b-exec", "bare", "down", "refused"]   # kubectl's sorted order
    errors = _error_lines(err)
    assert len(errors) == 3, err
    assert errors[0].startswith("error: context bare: ") and "worker.gpustack.ai" in errors[0], err
    assert errors[1].startswith("error: context down: cannot reach the API server at http://127.0.0.1:"), err
    assert errors[2].startswith("error: context refused: the API server refused the credentials (401"), err
    assert err.rstrip().endswith(errors[2])           # after everything else
    assert err.splitlines()[-3:] == errors             # one line each, after every other line
    codes = {}
    for name in GOOD:
        alone_code, alone_out, alone_err = run(fleet, command, "--context", name, "-A", "-o", "json")
        alone = json.loads(alone_out)
        codes[name] = alone_code
        mine = [{k: v for k, v in i.items() if k != "context"} for i in data[key] if i["context"] == name]
        assert mine == alone[key], name
        entry = next(c for c in data["contexts"] if c["context"] == name)
        assert entry["error"] is None
        for field in ("setting", "summary"):
            if field in alone:
                assert entry[field] == alone[field], (name, field)
    assert any(i["context"] == "a" for i in data[key]) and any(i["context"] == "b" for i in data[key])
    bare_alone = run(fleet, command, "--context", "bare", "-A")
    assert bare_alone[0] == 2 and _error_lines(bare_alone[2])[0] == errors[0].replace("context bare: ", "")
    # without the failing contexts: the worst of the good ones' codes
    code, _, _ = run(fleet, command, "--contexts", "b,a,b-exec", "-A", "-o", "json")
    assert code == max(codes.values())


def test_one_table_with_the_context_first(fleet):
    code, out, err = run(fleet, "verify", "--contexts", "a,b,down", "-A")
    assert code == 2
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["CONTEXT", "NAMESPACE"]
    contexts = [line.split()[0] for line in lines[1:]]
    assert set(contexts) == {"a", "b"} and contexts == sorted(contexts, key=("a", "b").index)  # as asked
    prod_a, prod_b = fleet["a"]["llm-prod"], fleet["b"]["llm-prod"]
    assert any(line.split()[:2] == ["a", prod_a] for line in lines[1:])
    assert any(line.split()[:2] == ["b", prod_b] for line in lines[1:])
    # the summary line ("N pods: ..." or, with replicas left without a Pod by other tests on this
    # shared server, "N pods, M replicas without a Pod: ...")
    assert any(re.match(r"context a: \d+ pods[:,] ", line) for line in err.splitlines()), err
    assert _error_lines(err) == [e for e in _error_lines(err) if e.startswith("error: context down: ")]


def test_each_context_has_its_own_namespace_and_n_overrides_it(fleet):
    # no -n: a and b-exec read their own namespaces (llm-prod's copies), b its default ("default": nothing)
    code, out, err = run(fleet, "verify", "--contexts", "a,b,b-exec", "-o", "json")
    data = json.loads(out)
    assert {i["namespace"] for i in data["items"] if i["context"] == "a"} == {fleet["a"]["llm-prod"]}
    assert {i["namespace"] for i in data["items"] if i["context"] == "b-exec"} == {fleet["b"]["llm-prod"]}
    assert not [i for i in data["items"] if i["context"] == "b"]
    assert code == 1, err
    # -n: every context reads that namespace, as kubectl -n overrides each context's
    ns = fleet["b"]["llm-prod"]
    code, out, err = run(fleet, "verify", "--contexts", "a,b", "-n", ns, "-o", "json")
    data = json.loads(out)
    assert {i["namespace"] for i in data["items"]} == {ns}
    assert {i["context"] for i in data["items"]} == {"b"}
    assert "context a: No pool-attached engine pods found in " + ns + " namespace." in \
        run(fleet, "verify", "--contexts", "a,b", "-n", ns)[2]


def test_setting_status_per_context(fleet):
    code, out, err = run(fleet, "setting", "status", "--contexts", "a,b", "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kind"] == "FleetSettingStatus"
    assert [(i["context"], i["value"]) for i in data["items"]] == [("a", True), ("b", False)]
    for name in ("a", "b"):
        alone = json.loads(run(fleet, "setting", "status", "--context", name, "-o", "json")[1])
        # each item is the one-context document, but for its own apiVersion (the Fleet document has it)
        assert [{k: v for k, v in i.items() if k != "context"} for i in data["items"] if i["context"] == name] \
            == [{k: v for k, v in alone.items() if k != "apiVersion"}]
    code, out, err = run(fleet, "setting", "status", "--all-contexts")
    assert code == 2
    assert out.splitlines()[0].split() == ["CONTEXT", "VALUE", "SOURCE", "EDITABLE"]
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["a", "b", "b-exec"]
    assert len(_error_lines(err)) == 3


def test_parallel_one_gives_the_same_report(fleet):
    one = run(fleet, "check", "--all-contexts", "-A", "-o", "json", "--parallel", "1")
    many = run(fleet, "check", "--all-contexts", "-A", "-o", "json")
    assert one[0] == many[0] == 2
    assert json.loads(one[1]) == json.loads(many[1])


@pytest.mark.parametrize("argv", [("verify", "--all-contexts", "-A"), ("check", "--all-contexts", "-A", "-o", "wide"),
                                  ("roles", "--all-contexts", "-A", "-o", "json"),
                                  ("setting", "status", "--all-contexts")])
def test_worker_processes_give_what_threads_give(fleet, argv):
    """Each context read in a worker process (the default) or in a thread of one process
    (KVCACHE_FLEET_WORKERS=threads): the same stdout, stderr and exit code, byte for byte."""
    processes = run(fleet, *argv)
    threads = run(dict(fleet, env=dict(fleet["env"], KVCACHE_FLEET_WORKERS="threads")), *argv)
    assert processes == threads
    assert processes[0] == 2 and len(_error_lines(processes[2])) == 3


_SPY = """
import sys
from kubectl_kvcache.cli import app
from kubectl_kvcache.cli.flows import workers

fan_out = workers.fan_out


def spied(names, job, parallel):
    def watched(name):
        before = set(sys.modules)
        try:
            return job(name)
        finally:
            new = sorted(m for m in set(sys.modules) - before if m.startswith("kubectl_kvcache"))
            sys.stderr.write(f"imported in a worker: {new}\\n")
    return fan_out(names, watched, parallel)


workers.fan_out = spied
sys.exit(app.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("argv", [("verify", "-A"), ("check", "-A"), ("roles", "-A"), ("setting", "status")])
def test_the_workers_import_nothing_the_parent_did_not(fleet, argv):
    """The modules one context's read needs are imported before the workers fork (fleet.preload):
    a module imported in a worker is imported again in every worker."""
    p = subprocess.run([sys.executable, "-c", _SPY, *argv, "--contexts", "a,b"], env=fleet["env"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    said = [line for line in p.stderr.splitlines() if line.startswith("imported in a worker: ")]
    assert said == ["imported in a worker: []"] * 2, p.stderr


def test_writes_and_conflicting_flags_are_refused_before_anything_is_sent(fleet):
    for argv, says in ((("setting", "on", "--all-contexts", "--yes"), "setting on changes one cluster at a time"),
                       (("setting", "off", "--contexts", "a"), "setting off changes one cluster at a time"),
                       (("recover", "x", "-n", "y", "--contexts", "a"), "recover changes one cluster at a time"),
                       (("verify", "--contexts", "a", "--context", "b"), "--context picks one context"),
                       (("verify", "--contexts", "a", "--all-contexts"), "cannot be used together"),
                       (("verify", "--contexts", "a,nope"), "context 'nope' does not exist in the kubeconfig")):
        code, out, err = run(fleet, *argv)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("error: ") and says in err, err


def _children(pid):
    """The pids whose parent is `pid` (/proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.add(int(entry))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_ctrl_c_with_a_context_that_never_answers(fleet):
    """A socket that accepts connections (the kernel completes them) and never answers: Ctrl-C
    ends the run at once, exit 130, no traceback from any process, and no worker process left
    (the contexts are read in worker processes: the one stuck on the socket is one of them)."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(16)
    path = _write(fleet["folder"] / "hole.json", [
        ({"name": "hole", "cluster": {"server": f"http://127.0.0.1:{hole.getsockname()[1]}"}},
         {"name": "hole", "user": {}}, {"name": "hole", "context": {"cluster": "hole", "user": "hole"}})], "hole")
    env = dict(fleet["env"], KUBECONFIG=fleet["env"]["KUBECONFIG"] + os.pathsep + str(path))
    p = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", "check", "-A", "--contexts", "a,hole,b"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(4)
        assert p.poll() is None, p.communicate()
        workers = _children(p.pid)
        assert workers, "no worker process reads the silent context"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
        assert time.monotonic() - t0 < 5
        assert not [w for w in workers if _alive(w)]
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        hole.close()
    assert p.returncode == 130, err
    assert err.strip() == "error: interrupted", err


def _silent(fleet, name, scheme):
    """A socket that accepts connections and never answers, as context `name` (https: the TLS
    handshake never comes either), in a kubeconfig added to the fleet's."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    cluster = {"server": f"{scheme}://127.0.0.1:{hole.getsockname()[1]}"}
    if scheme == "https":
        cluster["insecure-skip-tls-verify"] = True
    path = _write(fleet["folder"] / f"{name}.json", [
        ({"name": name, "cluster": cluster}, {"name": name, "user": {"token": "silent-token-0123456789"}},
         {"name": name, "context": {"cluster": name, "user": name}})], name)
    return hole, dict(fleet["env"], KUBECONFIG=fleet["env"]["KUBECONFIG"] + os.pathsep + str(path))


def _timed(argv, env, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr, p.stderr
    return p, time.monotonic() - t0


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_silent_context_ends_in_its_error_line_and_the_others_rows_are_printed(fleet, cluster, scheme):
    """verify --all-contexts against a server that accepts and never answers: the run ends, the
    reachable contexts' rows are on stdout, the silent one is its `error: context X:` line, as
    each context's requests have their own --request-timeout. The real kubectl against the same
    socket ends too; both within a bound of the timeout (never a race between the two)."""
    hole, env = _silent(fleet, "silent", scheme)
    try:
        p, took = _timed([sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "--contexts", "a,silent,b",
                          "--request-timeout", "3s", "-o", "wide"], env)
        # one request, as the plugin's discovery is one (`kubectl get pods` asks for discovery
        # five times over: 15 s with 3 s each, 50 s without)
        theirs, kubectl_took = _timed([cluster.kubectl_path, "get", "--raw", "/api/v1/pods", "--context", "silent",
                                       "--request-timeout", "3s"], env)
    finally:
        hole.close()
    assert p.returncode == 2, p.stderr
    lines = _error_lines(p.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: context silent: ") and "request timeout of 3s" in lines[0]
    rows = [line.split()[0] for line in p.stdout.splitlines()[1:]]
    assert {"a", "b"} <= set(rows) and "silent" not in rows
    said = theirs.stderr.lower()            # Go's words for it vary: Client.Timeout, context deadline
    assert theirs.returncode == 1 and ("timeout" in said or "deadline exceeded" in said), theirs.stderr
    # each request is bounded by the timeout: the run ends well before a few of them in a row
    # (3 s each; the interpreter's start and the reachable contexts' reads are the rest)
    assert took < 3 * 3 + 15, took
    assert kubectl_took < 3 * 3 + 15, kubectl_took


def test_without_request_timeout_a_silent_https_context_ends_at_the_tls_handshake_bound(fleet, cluster):
    """No --request-timeout: client-go's TLS handshake timeout (10 s) ends the silent context, in
    the plugin as in kubectl, with the same words; the other contexts are reported."""
    hole, env = _silent(fleet, "mute", "https")
    try:
        p, took = _timed([sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "--contexts", "a,mute"], env)
        theirs, kubectl_took = _timed([cluster.kubectl_path, "get", "--raw", "/api/v1/pods", "--context", "mute"], env)
    finally:
        hole.close()
    assert p.returncode == 2
    (line,) = _error_lines(p.stderr)
    assert line.startswith("error: context mute: ") and "TLS handshake timeout" in line
    assert "TLS handshake timeout" in theirs.stderr
    assert "a" in {row.split()[0] for row in p.stdout.splitlines()[1:] if row.strip()}
    assert took < 3 * 10 + 15 and kubectl_took < 3 * 10 + 15, (took, kubectl_took)
