"""tests/background.py: a tier waits for the job scripts/test runs in the background, gets its
stdout, or Failed with its exit status and log; with jobs pending, the tests that need none run
first, the engine wheels' tier before the binaries' ones."""

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
