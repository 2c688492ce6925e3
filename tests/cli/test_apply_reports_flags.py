"""--apply-reports' rules, checked before any request: it applies the reports of -o policyreport
or -o openreports, of one whole scope of one cluster; --yes and --dry-run go with it. Each refusal
is exit 2 with one `error:` line (the writes themselves: tests/cluster/test_policyreports_cluster.py)."""

import pytest

from runcli import kvcache as run

REFUSED = [
    (["verify", "-A", "--apply-reports"], "-o policyreport or -o openreports"),
    (["check", "-A", "-o", "json", "--apply-reports"], "-o policyreport or -o openreports"),
    (["verify", "-A", "-o", "policyreport", "--apply-reports", "-f", "examples/cluster.json"], "-f/--filename"),
    (["check", "-A", "-o", "openreports", "--apply-reports", "-l", "team=a"], "-l/--selector"),
    (["verify", "-n", "x", "-o", "policyreport", "--apply-reports", "pod-0"], "Pod names"),
    (["verify", "-A", "-o", "policyreport", "--apply-reports", "--wait"], "--watch/--wait"),
    (["verify", "-A", "-o", "policyreport", "--apply-reports", "--contexts", "a,b"], "--contexts"),
    (["verify", "-A", "-o", "policyreport", "--yes"], "go with --apply-reports"),
    (["check", "-A", "-o", "policyreport", "--dry-run=server"], "go with --apply-reports"),
]


@pytest.mark.parametrize("argv,said", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_before_any_request(argv, said):
    code, out, err = run(*argv, "--kubeconfig", "/nonexistent/kubeconfig")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], err


def test_not_offered_by_the_views_of_check():
    for view in ("bindings", "roles"):
        code, _, err = run(view, "-A", "-o", "json", "--apply-reports")
        assert code == 2 and err.startswith("error: unknown flag: --apply-reports"), err
