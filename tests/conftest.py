"""Shared test set-up: the tests folder is importable (tests/objects.py builds Kubernetes objects),
and under KVCACHE_NO_SKIPS=1 (.ci/run sets it) a skipped test is a failure: a tier that cannot run
under CI must not pass by skipping."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import background  # noqa: E402
from fakeserver import fake_server  # noqa: E402,F401  (the one fake API server's fixture, for every test)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """With downloads and builds still running (scripts/test on a cold machine), the tests that
    need none of them first (tests/background.py); after every folder's markers are added."""
    background.order(items)


def _no_skips():
    return os.environ.get("KVCACHE_NO_SKIPS", "") not in ("", "0", "false", "no")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _no_skips():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under KVCACHE_NO_SKIPS=1 (CI): {reason}"


# The pinned kubectl's folder, read now: some tests replace HOME before they ask for it.
_PINNED = os.path.join(os.environ.get("KVCACHE_TEST_BIN_CACHE")
                       or os.path.expanduser("~/.cache/kubectl-kvcache/test-binaries"),
                       open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                         "hack", "kube", "KUBE_VERSION")).read().strip())


@pytest.fixture(scope="session")
def pinned_kubectl():
    """The real kubectl of the pinned release, for the tests outside the cluster and connection
    tiers that hold the plugin to it. A test that uses this fixture needs scripts/test-binaries
    (tests/background.py orders it after the tests that need nothing, and it waits here for the
    background build on a cold machine). None to be had: a failure under CI, else a skip."""
    try:
        built = background.wait(background.BINARIES)
    except background.Failed as exc:
        reason = str(exc)
    else:
        for folder in (built, os.environ.get("KUBEBUILDER_ASSETS"), _PINNED):
            if folder and os.path.isfile(os.path.join(folder, "kubectl")):
                return os.path.join(folder, "kubectl")
        reason = f"no kubectl of the pinned release in {_PINNED} (scripts/test-binaries builds it)"
    if _no_skips() or os.environ.get("KVCACHE_REQUIRE_CLUSTER", "") not in ("", "0", "false", "no"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
