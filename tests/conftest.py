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
