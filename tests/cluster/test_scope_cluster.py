"""Honest scope on the real API server: a namespace that does not exist is said (one warning
line on stderr), and it fails the gate, `--strict` or not (issue 48); one that exists but is
empty, or one RBAC does not let the user ask about, is not called missing (and fails as a scope
with nothing read: tests/cluster/test_unread_scope_cluster.py)."""

import io

import pytest

from kubectl_kvcache.cli import main


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


WARNING = "warning: namespace 'llm-porod' does not exist: nothing in it was read"


@pytest.mark.parametrize("command", ["check", "verify", "bindings", "roles"])
def test_a_namespace_that_does_not_exist_is_said(cluster, command):
    code, out, err = plugin(cluster.admin_kubeconfig, command, "-n", "llm-porod")
    assert err.splitlines().count(WARNING) == 1, err
    assert [x for x in err.splitlines() if x.startswith("warning:")] == [WARNING]
    assert "error:" not in err and code in (0, 1)


def test_check_fails_on_a_namespace_that_does_not_exist_strict_or_not(cluster):
    code, out, err = plugin(cluster.admin_kubeconfig, "check", "-n", "llm-porod", "--strict")
    assert code == 1 and WARNING in err.splitlines()
    code, out, err = plugin(cluster.admin_kubeconfig, "check", "-n", "llm-porod")
    assert code == 1 and WARNING in err.splitlines()     # issue 48: before, exit 0 without --strict


def test_an_empty_namespace_or_one_rbac_hides_is_not_called_missing(cluster):
    ns = cluster.new_namespace("empty")
    code, out, err = plugin(cluster.admin_kubeconfig, "check", "-n", ns, "--strict")
    assert "warning:" not in err and "was not found" not in err, err
    assert code == 1 and "nothing was verified there" in err.splitlines()[-1], err    # nothing read (issue 48)
    # the reader may list Pods and the operator's kinds, not get namespaces: not known, so not said
    # missing; nothing was read there all the same
    code, out, err = plugin(cluster.reader_kubeconfig, "verify", "-n", "llm-porod")
    assert "warning:" not in err and "error:" not in err, err
    assert code == 1 and err.splitlines()[-1] == ("verdict: FAILED (exit code 1): no pool-attached engine pods found "
                                                  "in namespace llm-porod: nothing was verified there"), err


def test_verify_of_a_namespace_that_does_not_exist_is_not_green(cluster):
    """Issue 39 item 4: `verify -n llm-porod` verified nothing; it was exit 0 "No ... found". Now
    exit 1 (as a named Pod that does not exist), with the warning and where to look next."""
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", "llm-porod")
    assert code == 1 and WARNING in err.splitlines(), (code, err)
    assert "next: kubectl kvcache verify -A   (every namespace)" in err.splitlines(), err


def test_verify_of_an_empty_namespace_says_where_to_look_and_is_not_green(cluster):
    """Issue 48: nothing verified there is no pass either (exit 1, the verdict says why)."""
    ns = cluster.new_namespace("empty-verify")
    code, out, err = plugin(cluster.admin_kubeconfig, "verify", "-n", ns)
    assert code == 1 and "warning:" not in err, err
    assert err.splitlines()[-2:] == ["next: kubectl kvcache verify -A   (every namespace)",
                                     f"verdict: FAILED (exit code 1): no pool-attached engine pods found in namespace "
                                     f"{ns}: nothing was verified there"], err


def test_recover_without_n_names_the_namespace_where_the_binding_is(cluster):
    """Issue 39 item 4: `recover sgl-fp8` without -n said "not found in namespace default" and
    stopped: a dead end. The one error line now names where it is and the command."""
    import objects as o

    ns = cluster.new_namespace("recover-where")
    cluster.apply([o.binding("where-fp8", "fp8", ns=ns)], namespace=ns)
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "where-fp8")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, err)
    assert err.startswith("error: KVCachePoolBinding 'where-fp8' not found in namespace default; it exists in "
                          f"namespace {ns}: kubectl kvcache recover where-fp8 -n {ns}"), err
    code, out, err = plugin(cluster.admin_kubeconfig, "recover", "where-nope")
    assert code == 2 and "no other namespace has one of that name either" in err, err
