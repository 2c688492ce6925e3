"""The bench's seeding and its smallest run on a real API server (issue 47 item 5): bench/seed.py
writes what the operator's CRDs (tests/cluster/crds, from its Go types) accept, so bench/run.py
and bench/observe.py start; the plugin reads the seeded cluster as the seed says it is shaped;
and bench/run.py measures verify and check against kubectl's listing end to end.

Its own API server (not the session's `cluster`): the bench seeds `kvcache-bench=true`
namespaces that `-A` runs of other tests would see."""

import collections
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import seed  # noqa: E402

harness = sys.modules["kvcache_test_harness"]     # loaded by conftest.py

PODS = 100          # one namespace of the bench's default --pods-per-namespace


@pytest.fixture(scope="module")
def bench_cluster(cluster_binaries):
    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-bench-seed")
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def seeded(bench_cluster):
    api = seed.Api.from_kubeconfig(bench_cluster.admin_kubeconfig)
    seed.ensure_setting(api, log=lambda m: None)
    made = seed.seed(api, PODS, log=lambda m: None)
    return api, made


def plugin(cluster, *args):
    env = dict(os.environ, PYTHONPATH=ROOT, KVCACHE_TRACE="1")
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def test_the_seed_writes_what_the_crds_accept(bench_cluster, seeded):
    api, made = seeded
    assert made == PODS + PODS // 10                     # the engine Pods and the injected ones
    assert seed.existing_pods(api) == PODS
    mds = api.call("GET", seed._crd_path(seed.NAMESPACE_FORMAT.format(0), "modeldeployments"))["items"]
    assert len(mds) == 35
    for md in mds:
        # every role's status is kept as written (a structural schema prunes what it does not
        # know, and refuses a role without its required fields: the 422 this test guards against)
        spec_roles = {r["name"]: r for r in md["spec"]["roles"]}
        status_roles = md["status"]["roles"]
        assert [r["name"] for r in status_roles] == list(spec_roles)
        for r in status_roles:
            assert set(r) == {"name", "desired", "ready", "quotaReserved", "unmanaged", "kind"}
            assert r["desired"] == spec_roles[r["name"]]["replicas"]
            assert r["unmanaged"] == bool(spec_roles[r["name"]].get("command"))
        assert md["status"]["kvCache"]["domain"]["dtype"] in ("fp8", "fp8_e4m3")
    bindings = api.call("GET", seed._crd_path(seed.NAMESPACE_FORMAT.format(0), "kvcachepoolbindings"))["items"]
    assert {b["status"]["phase"] for b in bindings} == {"Ready"}


def test_the_plugin_reads_the_seeded_shapes(bench_cluster, seeded):
    code, out, err = plugin(bench_cluster, "verify", "-A", "-o", "json")
    assert code == 1, err
    items = json.loads(out)["items"]
    # per 20 engine Pods: 13 OK (server x4, SGLang x3, prefill/decode x4, take-over x2; the router
    # is no engine replica), 2 MISSING (not rolled), 2 MISMATCH (own flag), 2 REJECTED (SGLang on
    # fp8); and the 10 injected Pods OK
    assert collections.Counter(i["status"] for i in items) == {"OK": 75, "MISSING": 10, "MISMATCH": 10,
                                                               "REJECTED": 10}
    crashed = [i for i in items if i["status"] == "REJECTED"]
    assert all(i["state"]["waiting"] == "CrashLoopBackOff" and i["state"]["lastExitCode"] == 2 for i in crashed)
    # the crashed replicas' previous logs: at most the cap (the seeded Node has no kubelet, so
    # the reads fail, said once), and the rest named in one note
    previous = [ln for ln in err.splitlines() if ln.startswith("trace: ") and "previous=true" in ln]
    assert 0 < len(previous) <= 8, err
    assert "2 more crashed engine containers: previous logs not read" in err, err
    code, out, err = plugin(bench_cluster, "check", "-A", "-o", "json")
    assert code == 1 and "Traceback" not in err, err
    # a consistent operator cluster: the pool and its Bindings exist and are ready, each Binding
    # claims its own domain, the injected workloads resolve; what check finds is what was seeded:
    # per cycle of 7 deployments (5 in the namespace) the role with its own flag and the take-over
    # role, the vLLM Binding's fp8 that the SGLang deployment on it rejects, and the Setting
    found = collections.Counter(f["code"] for f in json.loads(out)["findings"])
    assert found == {"role-own-flag": 5, "takeover-role": 5, "binding-dtype-rejected": 1, "setting": 1}, found


def test_bench_run_measures_its_smallest_size(bench_cluster, seeded, tmp_path):
    """bench/run.py end to end on the seeded cluster: the seed tops up nothing, every command runs
    (exit 0 or 1), the requests are counted and the table is written."""
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(bench_cluster.kubectl_path), os.environ["PATH"]]))
    out = tmp_path / "results.json"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run.py"), "--kubeconfig",
                        bench_cluster.admin_kubeconfig, "--sizes", str(PODS), "--runs", "1", "--no-binary",
                        "--plugin-bin", os.path.dirname(sys.executable), "--workdir", str(tmp_path / "work"),
                        "--keep", "--only", "verify (wheel),check (wheel),kubectl pods",
                        "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    (size,) = json.loads(out.read_text())["results"]
    assert size["pods"] == PODS
    per = size["commands"]
    assert set(per) == {"verify (wheel)", "check (wheel)", "kubectl pods"}
    for name, r in per.items():
        assert "error" not in r and "failures" not in r, (name, r)
        assert len(r["wall"]) == 1 and r["trace_requests"] > 0
    assert per["verify (wheel)"]["items"] == PODS + PODS // 10 - PODS // 20     # less the router Pods
    assert per["kubectl pods"]["items"] == 75     # the argv lines carrying the flag (grep -o)
