"""tests/background.py: a tier waits for the job scripts/test runs in the background, gets its
stdout, or Failed with its exit status and log; with jobs pending, the tests that need none run
first, the engine wheels' tier before the binaries' ones."""

import os
import threading
import time

import pytest

import background


def _job(folder, name, out="", log="", rc=None):
    (folder / f"{name}.out").write_text(out)
    (folder / f"{name}.log").write_text(log)
    if rc is not None:
        (folder / f"{name}.rc").write_text(f"{rc}\n")


def test_nothing_pending_without_scripts_test(monkeypatch, tmp_path):
    monkeypatch.delenv("KVCACHE_BACKGROUND", raising=False)
    assert background.wait(background.BINARIES) is None
    monkeypatch.setenv("KVCACHE_BACKGROUND", str(tmp_path))
    assert background.wait(background.ENGINES) is None         # this job was not started


def test_a_finished_job_gives_its_last_stdout_line(monkeypatch, tmp_path):
    monkeypatch.setenv("KVCACHE_BACKGROUND", str(tmp_path))
    _job(tmp_path, background.BINARIES, out="/cache/test-binaries/v1.37.2\n", rc=0)
    assert background.wait(background.BINARIES) == "/cache/test-binaries/v1.37.2"


def test_a_failed_job_is_its_status_and_log(monkeypatch, tmp_path):
    monkeypatch.setenv("KVCACHE_BACKGROUND", str(tmp_path))
    _job(tmp_path, background.ENGINES, log="\n".join(f"line {i}" for i in range(40)) + "\npip: no network", rc=4)
    with pytest.raises(background.Failed) as caught:
        background.wait(background.ENGINES)
    text = str(caught.value)
    assert text.startswith("scripts/engine-wheels failed in the background (exit 4):")
    assert text.endswith("pip: no network") and "line 16" in text and "line 15" not in text   # the last 25 lines


def test_a_running_job_is_waited_for_and_said_once(monkeypatch, tmp_path):
    monkeypatch.setenv("KVCACHE_BACKGROUND", str(tmp_path))
    _job(tmp_path, background.BINARIES)
    said = []
    done = threading.Timer(0.5, lambda: ((tmp_path / "test-binaries.out").write_text("/built\n"),
                                         (tmp_path / "test-binaries.rc").write_text("0\n")))
    done.start()
    t0 = time.monotonic()
    try:
        assert background.wait(background.BINARIES, poll=0.05, say=said.append) == "/built"
    finally:
        done.cancel()
    assert time.monotonic() - t0 >= 0.45
    assert len(said) == 2 and said[0].strip().startswith("waiting for scripts/test-binaries")


class _Item:
    def __init__(self, name, *markers):
        self.name, self.markers = name, markers

    def get_closest_marker(self, name):
        return name if name in self.markers else None


def test_the_tests_that_need_no_job_run_first(monkeypatch, tmp_path):
    items = [_Item("cluster1", "cluster"), _Item("unit1"), _Item("conf1", "conformance"),
             _Item("parity", "connection"), _Item("unit2"), _Item("cluster2", "cluster"), _Item("conf2", "conformance")]
    monkeypatch.delenv("KVCACHE_BACKGROUND", raising=False)
    kept = list(items)
    background.order(kept)
    assert kept == items                                        # nothing pending: file order
    monkeypatch.setenv("KVCACHE_BACKGROUND", str(tmp_path))
    background.order(items)
    assert [i.name for i in items] == ["unit1", "unit2", "conf1", "conf2", "cluster1", "parity", "cluster2"]


def test_a_test_with_the_pinned_kubectl_waits_for_the_binaries(monkeypatch, tmp_path):
    item = _Item("tabs")
    item.fixturenames = ("tmp_path", "pinned_kubectl")
    assert background.needs(item) == background.BINARIES
    assert background.needs(_Item("unit")) is None


def test_the_real_collection_puts_the_kubectl_tests_last(tmp_path):
    """The suite as collected on a cold machine (CI once ran tests/kube's kubectl tests before the
    Go build ended: each skipped, so failed): every test that uses the pinned kubectl comes after
    every test of its files that does not."""
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, KVCACHE_BACKGROUND=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        os.path.join(here, "kube", "test_transport.py"), os.path.join(here, "kube", "test_kubeconfig.py")],
                       capture_output=True, text=True, env=env, cwd=os.path.dirname(here), timeout=300)
    ids = [line for line in p.stdout.splitlines() if "::" in line]
    assert ids, p.stdout + p.stderr
    uses = [i for i, t in enumerate(ids) if any(name in t for name in (
        "test_decoding_matches_the_real_kubectl", "test_tabs_are_read_as_the_real_kubectl_reads_them",
        "test_each_framing_is_read_as_kubectl_reads_it", "test_the_request_line_and_the_certificate_check_are_kubectls"))]
    plain = [i for i, t in enumerate(ids) if "test_an_unsupported_proxy_scheme_is_one_line" in t
             or "test_a_control_character_in_the_server_is_refused" in t]
    assert uses and plain and max(plain) < min(uses), "\n".join(ids)
