"""Fixtures of the kubectl parity tier (tests/connection): the real kubectl of the pinned release
and the plugin's installed console script. Every test here is marked `connection` (deselect with
-m "not connection"). Without kubectl the tests skip with the reason; under CI
(KVCACHE_NO_SKIPS=1, or KVCACHE_REQUIRE_CLUSTER=1) that is a failure."""

import os
import sys

import pytest

import background

# `tests.connection` is importable however pytest is started (python -m pytest puts the working
# directory on sys.path; the pytest script does not), as `python -m tests.connection` needs it.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.connection import runner  # noqa: E402


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.connection)


def _required():
    return any(os.environ.get(v, "") not in ("", "0", "false", "no")
               for v in ("KVCACHE_NO_SKIPS", "KVCACHE_REQUIRE_CLUSTER"))


@pytest.fixture(scope="session")
def parity_tools():
    """(kubectl, plugin): paths of the real kubectl and of kubectl-kvcache (waiting for
    scripts/test's background build of kubectl, if one runs)."""
    try:
        built = background.wait(background.BINARIES)
        if built:
            os.environ["KUBEBUILDER_ASSETS"] = built
        return runner.find_kubectl(), runner.find_plugin()
    except background.Failed as exc:
        reason = f"the kubectl parity tier cannot run: {exc}"
    except runner.Unavailable as exc:
        reason = f"the kubectl parity tier cannot run: {exc}"
    if _required():
        pytest.fail(reason + "\n(CI: a missing kubectl is a failure)", pytrace=False)
    pytest.skip(reason)
