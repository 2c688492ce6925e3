"""cli/flows/workers.py: contexts read in forked worker processes. Every job runs in a child (its
own pid), at most `parallel` at once, each outcome under its own name whatever order they end in;
errors come back as the thread path gives them (PluginError by message, a bug as itself with its
traceback as a note, a child that died as a PluginError saying how); the secrets a child learned
are hidden by the parent; Ctrl-C and the parent's death leave no child behind."""

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kubectl_kvcache import errors
from kubectl_kvcache.cli.flows import workers
from kubectl_kvcache.errors import PluginError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="worker processes are Linux's")


def test_each_job_runs_in_its_own_process_bounded_and_named():
    parent = os.getpid()

    def job(name):
        start = time.monotonic()
        time.sleep({"a": 0.4, "b": 0.05, "c": 0.2, "d": 0.05, "e": 0.1}[name])
        return name.upper(), os.getpid(), start, time.monotonic()

    outcomes = workers.fan_out(["a", "b", "c", "d", "e"], job, 2)
    assert list(outcomes) != ["a", "b", "c", "d", "e"]           # they ended in another order ...
    assert {n: v[0] for n, (v, exc) in outcomes.items() if exc is None} == \
        {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"}         # ... and each is under its own name
    pids = {v[1] for v, _ in outcomes.values()}
    assert len(pids) == 5 and parent not in pids
    spans = [(v[2], v[3]) for v, _ in outcomes.values()]
    overlap = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert overlap == 2
    for pid in pids:                            # every worker reaped (no zombie left)
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


class _Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot pickle this")


def test_errors_come_back_as_the_threads_give_them():
    def job(name):
        if name == "plugin":
            raise errors.InvalidObject("Pod ns/p", "spec.containers", "missing")
        if name == "bug":
            raise ValueError("a bug in " + name)
        if name == "unpicklable":
            return _Unpicklable()
        if name == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if name == "exits":
            os._exit(3)
        return name

    outcomes = workers.fan_out(["plugin", "bug", "unpicklable", "killed", "exits", "fine"], job, 3)
    assert outcomes["fine"] == ("fine", None)
    value, exc = outcomes["plugin"]
    assert value is None and isinstance(exc, PluginError) and str(exc) == "Pod ns/p: missing spec.containers"
    exc = outcomes["bug"][1]
    assert type(exc) is ValueError and str(exc) == "a bug in bug"
    assert any("Traceback" in n and "a bug in bug" in n for n in exc.__notes__)
    exc = outcomes["unpicklable"][1]
    assert isinstance(exc, Exception) and not isinstance(exc, PluginError) and "pickle" in str(exc)
    exc = outcomes["killed"][1]
    assert isinstance(exc, PluginError) and str(exc) == "the worker process reading it was killed by SIGKILL"
    exc = outcomes["exits"][1]
    assert isinstance(exc, PluginError) and "exit code 3" in str(exc)


def test_the_secrets_a_worker_learned_are_hidden_by_the_parent():
    errors.forget_secrets()
    token = "worker-learned-token-0123456789"

    def job(name):
        errors.secret(token)
        raise PluginError(f"refused {token}")

    _, exc = workers.fan_out(["a", "b"], job, 2)["a"]
    try:
        assert errors.without_secrets(str(exc)) == f"refused {errors.HIDDEN}"
    finally:
        errors.forget_secrets()


def test_usable_only_where_fork_is_safe_and_useful(monkeypatch):
    err = sys.__stderr__
    monkeypatch.delenv("KVCACHE_FLEET_WORKERS", raising=False)
    with monkeypatch.context() as alone:    # the main thread only (earlier tests may leave threads behind)
        alone.setattr(workers.threading, "active_count", lambda: 1)
        assert workers.usable(2, 2, err)
        assert not workers.usable(1, 4, err)            # --parallel 1: one at a time, no gain
        assert not workers.usable(4, 1, err)            # one context
        assert not workers.usable(4, 4, io.StringIO())  # the children could not print its trace lines
        alone.setenv("KVCACHE_FLEET_WORKERS", "threads")
        assert not workers.usable(4, 4, err)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not workers.usable(4, 4, err)        # fork copies one thread: never with another running
    finally:
        stop.set()
        other.join()


_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from kubectl_kvcache.cli.flows import workers

    folder = sys.argv[1]

    def job(name):
        with open(os.path.join(folder, name), "w") as f:
            f.write(str(os.getpid()))
        time.sleep(600)

    try:
        workers.fan_out(["a", "b", "c"], job, 2)
    except KeyboardInterrupt:
        try:
            os.waitpid(-1, os.WNOHANG)
            print("a child is left")
        except ChildProcessError:
            print("no child left")
        sys.exit(130)
""")


def _started(folder, names, p):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = {n: (folder / n).read_text() for n in names if (folder / n).exists()}
        if len(found) == len(names) and all(found.values()):
            return {n: int(v) for n, v in found.items()}
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    pytest.fail("the workers did not start")


def _gone(pid, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _spawn(tmp_path, session=False):
    """The script, with SIGINT as a shell gives it; `session`: in a process group of its own."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def child():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if session:
            os.setsid()

    return subprocess.Popen([sys.executable, "-c", _SCRIPT, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, preexec_fn=child)


@pytest.mark.parametrize("group", [False, True], ids=["parent only", "whole process group (a terminal's Ctrl-C)"])
def test_ctrl_c_kills_and_reaps_every_worker(tmp_path, group):
    p = _spawn(tmp_path, session=group)
    try:
        pids = _started(tmp_path, ("a", "b"), p)          # two at once: c waits
        if group:
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130 and out.strip() == "no child left", (out, err)
    assert "Traceback" not in err, err
    assert all(_gone(pid) for pid in pids.values())
    assert not (tmp_path / "c").exists()                 # the waiting one never started


def test_the_parents_death_ends_the_workers(tmp_path):
    p = _spawn(tmp_path)
    try:
        pids = _started(tmp_path, ("a", "b"), p)
        p.kill()
        p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert all(_gone(pid) for pid in pids.values()), pids
