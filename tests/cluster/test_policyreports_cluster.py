"""--apply-reports on a real kube-apiserver of its own (the operator's CRDs, and at first none of
the report CRDs): a missing CRD is one `error:` line naming it, exit 2, nothing written; without a
terminal and without --yes nothing is written; once the published CRDs of deploy/crds/ are
installed, check's OpenReports and verify's PolicyReports are stored side by side, each command
replacing only its own (the labels), and a stored Report is what was printed."""

import json
import os
import subprocess
import sys

import pytest

harness = sys.modules["kvcache_test_harness"]      # loaded by this folder's conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(ROOT, "bin", "kubectl-kvcache")
CRDS = os.path.join(ROOT, "deploy", "crds")


@pytest.fixture(scope="module")
def own(cluster_binaries):
    """A cluster of this module's own: the shared one has the report CRDs once another test installed them."""
    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-polr")
    try:
        c.start()
    except harness.ClusterError as e:
        pytest.fail(f"could not start the test cluster: {e}", pytrace=False)
    try:
        c.scene = c.load_example_namespaces(os.path.join(ROOT, "examples", "cluster.json"), "own-")
        yield c
    finally:
        c.stop()


def plugin(cluster, *args):
    p = subprocess.run([sys.executable, PLUGIN, *args, "--kubeconfig", cluster.admin_kubeconfig],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                       env=cluster.env(cluster.admin_kubeconfig), text=True)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def stored(cluster, path):
    status, body = cluster.request("GET", path)
    return None if status == 404 else body


def test_a_missing_crd_is_one_error_line_and_nothing_else(own):
    prod = own.scene["llm-prod"]
    code, out, err = plugin(own, "verify", "-n", prod, "-o", "policyreport", "--apply-reports", "--yes")
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: the API server does not serve policyreports.wgpolicyk8s.io/v1alpha2: its CRD is not "
                      "installed (the published CRDs are in deploy/crds/; Kyverno installs them too)"], err
    assert json.loads(out)["items"][0]["kind"] == "PolicyReport"       # printed before the write was tried
    code, out, err = plugin(own, "check", "-A", "-o", "openreports", "--apply-reports", "--yes")
    assert code == 2 and "reports.openreports.io/v1alpha1" in err.splitlines()[-1], err


def test_without_a_terminal_it_asks_for_yes_and_writes_nothing(own):
    own.install_crds(CRDS)
    prod = own.scene["llm-prod"]
    code, out, err = plugin(own, "verify", "-n", prod, "-o", "policyreport", "--apply-reports")
    assert code == 2 and err.splitlines()[-1].startswith("error: refusing to write the reports without "
                                                         "confirmation: standard input is not a terminal"), err
    assert f"apply policyreport.wgpolicyk8s.io/kubectl-kvcache-verify -n {prod} (" in err      # shown first
    assert stored(own, f"/apis/wgpolicyk8s.io/v1alpha2/namespaces/{prod}/policyreports/kubectl-kvcache-verify") \
        is None


def test_each_command_keeps_and_replaces_only_its_own(own):
    own.install_crds(CRDS)
    prod = own.scene["llm-prod"]
    code, out, err = plugin(own, "verify", "-A", "-o", "policyreport", "--apply-reports", "--yes")
    assert code == 1 and "error:" not in err, err
    code, out, err = plugin(own, "check", "-A", "-o", "openreports", "--apply-reports", "--yes")
    assert code == 1 and "error:" not in err, err
    printed = next(i for i in json.loads(out)["items"] if i["metadata"].get("namespace") == prod)
    report = stored(own, f"/apis/openreports.io/v1alpha1/namespaces/{prod}/reports/kubectl-kvcache-check")
    assert report["kind"] == "Report" and report["source"] == "kubectl-kvcache"
    assert report["results"] == printed["results"] and report["summary"] == printed["summary"]
    assert any(r["result"] == "fail" for r in report["results"])
    cluster_report = stored(own, "/apis/openreports.io/v1alpha1/clusterreports/kubectl-kvcache-check")
    assert cluster_report["kind"] == "ClusterReport"
    # check's run left verify's reports alone (another command's label), and verify's run check's
    verify = stored(own, f"/apis/wgpolicyk8s.io/v1alpha2/namespaces/{prod}/policyreports/kubectl-kvcache-verify")
    assert verify is not None and verify["metadata"]["labels"]["kubectl-kvcache/command"] == "verify"
    code, out, err = plugin(own, "verify", "-n", prod, "-o", "policyreport", "--apply-reports", "--yes")
    assert code == 1 and "deleted" not in err, err
    assert stored(own, f"/apis/openreports.io/v1alpha1/namespaces/{prod}/reports/kubectl-kvcache-check")
