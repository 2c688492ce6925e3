"""The conformance tier: the model against the REAL vLLM/SGLang parsers of every release in
releases.py (see oracle.py). Marker `conformance`; skipped when the engine cache is not filled
(scripts/engine-wheels), a failure instead under KVCACHE_REQUIRE_CONFORMANCE=1 (CI)."""

import os
import sys
import threading

import pytest

import background

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the oracle, the release list and the generators of the shipped engine data: tooling, not tests
TOOLS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "enginedata")
sys.path.insert(1, TOOLS)

import wheels  # noqa: E402
from client import OracleProcess  # noqa: E402
from deps import missing_conformance_deps  # noqa: E402

from tierstats import CONNECTORS, CONNECTORS_HELDOUT, HELDOUT, REALCMDS, RELEASES_SEEN, STATS, UNKNOWN_REASONS  # noqa: E402


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in str(item.fspath):
            item.add_marker(pytest.mark.conformance)


@pytest.fixture(scope="session", autouse=True)
def _conformance_deps():
    """No tier run on an oracle that cannot import the releases (skip; a failure under CI)."""
    missing = missing_conformance_deps()
    if not missing:
        return
    reason = (f"the conformance extra is not installed ({', '.join(missing)}): "
              "pip install -e '.[conformance]'")
    if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _engine_wheels():
    """scripts/test's background download of the engine releases, waited for by the first test
    of this tier (tests/background.py); its failure is the tier's failure under CI."""
    try:
        background.wait(background.ENGINES)
        return
    except background.Failed as exc:
        reason = str(exc)
    if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":    # outside the except: no chained traceback
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


class Oracles:
    def __init__(self):
        self._procs = {}
        self._lock = threading.Lock()

    def get(self, engine, version):
        with self._lock:
            key = (engine, version)
            if key not in self._procs:
                if wheels.cached(engine, version) is None:
                    msg = f"{engine}=={version} is not in the engine cache: run scripts/engine-wheels"
                    if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":
                        pytest.fail(msg)
                    pytest.skip(msg)
                self._procs[key] = OracleProcess(engine, version)
            return self._procs[key]

    def close_one(self, engine, version):
        with self._lock:
            proc = self._procs.pop((engine, version), None)
        if proc:
            proc.close()

    def close(self):
        for proc in self._procs.values():
            proc.close()


@pytest.fixture(scope="session")
def oracles():
    o = Oracles()
    yield o
    o.close()


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if REALCMDS:
        from test_realcmds import summary_lines
        tr.section("real launch commands")
        for line in summary_lines():
            tr.write_line(line)
    if HELDOUT:
        from test_zz_heldout import summary_lines as heldout_lines
        tr.section("held-out launch commands")
        for line in heldout_lines():
            tr.write_line(line)
    for stats, module in ((CONNECTORS, "test_connectors"), (CONNECTORS_HELDOUT, "test_zz_connectors_heldout")):
        if stats:
            tr.section("KV-connector launch commands" + (", held out" if "heldout" in module else ""))
            for line in __import__(module).summary_lines():
                tr.write_line(line)
    if not STATS:
        return
    tr.section("engine conformance")
    if STATS["cases"]:
        tr.write_line(f"releases: {len(RELEASES_SEEN)} ({', '.join(sorted(RELEASES_SEEN))})")
        tr.write_line(f"cases: {STATS['cases']}  agreements: {STATS['agree']}  UNKNOWN: {STATS['unknown']}  "
                      f"definite disagreements: {STATS['disagree']}  (entry point absent in that release: "
                      f"{STATS['absent']})")
    if STATS["fuzz cases"]:
        tr.write_line(f"fuzzed: {STATS['fuzz cases']} cases, {STATS['fuzz unknown']} UNKNOWN, "
                      f"{STATS['fuzz disagree']} definite disagreements")
    for reason, count in UNKNOWN_REASONS.most_common(8):
        tr.write_line(f"  UNKNOWN x{count}: {reason}")
