"""Several contexts read in forked worker processes, one per context, at most --parallel at once:
decoding pages, building records and judging cost CPU under the interpreter lock, so threads
of one process read N contexts on one core whatever the machine has (issue #32, bench/fleet.py).

fork, not spawn or forkserver: the child is this process as it is (the modules imported, the
engine releases --engine-data added, the secrets known), at no start-up cost; spawn would import
the plugin again in every worker (~0.3 s of CPU each, as much as judging a 1,000-Pod cluster).
Forking is safe only with one thread, so `usable()` asks for that (and Linux, where the parent's
death kills the children: PR_SET_PDEATHSIG). The child ignores SIGINT: Ctrl-C is the parent's,
which kills and reaps every running child before KeyboardInterrupt unwinds (no orphans, no
traceback in any process). A child sends back one pickle: its value, or the error it raised, and
the secrets it learned (exec plugin tokens), so that the parent's printer hides them too."""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import sys
import threading

from kubectl_kvcache import errors
from kubectl_kvcache.errors import PluginError


_PR_SET_PDEATHSIG = 1


def usable(parallel: int, count: int, stderr) -> bool:
    """Worker processes for `count` contexts: more than one at once, Linux, this process has only
    its main thread (fork copies no other), the trace printer writes to a real file the children
    share (KVCACHE_TRACE), and KVCACHE_FLEET_WORKERS is not "threads" (the bench's comparison)."""
    if os.environ.get("KVCACHE_FLEET_WORKERS", "processes") == "threads":
        return False
    if parallel < 2 or count < 2 or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if threading.active_count() != 1:
        return False
    try:
        stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def fan_out(names, job, parallel) -> dict:
    """{name: (value, None) | (None, exception)}, as fleet.fan_out: job(name) in a child process
    for every name, at most `parallel` at once. A PluginError comes back as a PluginError with its
    message; another exception as itself (or, when it cannot be pickled, a RuntimeError naming it),
    its traceback as a note (KVCACHE_DEBUG prints it); a child that died without answering is a
    PluginError saying how it ended."""
    sys.stdout.flush()
    sys.stderr.flush()
    waiting, outcomes = list(names), {}
    running: dict[int, list] = {}       # fd -> [name, pid, chunks]
    poller = select.poll()      # not select.select: no limit on the descriptors' numbers
    try:
        while waiting or running:
            while waiting and len(running) < parallel:
                name = waiting.pop(0)
                fd, pid = _start(job, name)
                running[fd] = [name, pid, []]
                poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll():
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    running[fd][2].append(chunk)
                    continue
                poller.unregister(fd)
                name, pid, chunks = running.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                outcomes[name] = _outcome(b"".join(chunks), status)
    except BaseException:
        for fd, (_, pid, _) in running.items():
            _end(fd, pid)
        raise
    return outcomes


def _start(job, name):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: never returns
        os.close(r)
        _child(job, name, w)
    os.close(w)
    return r, pid


def _child(job, name, w):
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        gc.freeze()     # what the parent made is never collected here: its pages stay shared, not copied
        _die_with_parent()
        try:
            answer = ("value", job(name))
        except PluginError as exc:
            answer = ("plugin", str(exc))
        except BaseException as exc:    # noqa: B902 - a bug: the parent reports it as for one context
            answer = ("bug", _portable(exc))
        try:
            data = pickle.dumps(answer + (tuple(errors.known_secrets()),), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:        # a value that does not pickle is a bug too
            data = pickle.dumps(("bug", _portable(exc), tuple(errors.known_secrets())), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(w, "wb") as pipe:     # the answer to the parent (a pipe, not a printed stream)
            pipe.writelines((data,))
        sys.stderr.flush()
    except BaseException:   # noqa: B902 - nothing may unwind into the parent's code in this process
        code = 70
    finally:
        os._exit(code)


def _portable(exc):
    """`exc` as it pickles, its traceback as a note (the parent's KVCACHE_DEBUG prints it)."""
    import traceback

    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
        portable = exc
    except Exception:
        portable = RuntimeError(f"{exc.__class__.__name__}: {exc}")
    portable.__traceback__ = None
    portable.__cause__ = portable.__context__ = None
    if hasattr(portable, "add_note"):
        portable.add_note(f"in the worker process:\n{text}")
    return portable


def _die_with_parent():
    """The kernel kills this child when the parent dies (even by SIGKILL): no orphan keeps reading."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:       # noqa: B902 - without it the parent still kills its children on Ctrl-C
        pass
    if os.getppid() == 1:   # the parent died before prctl took effect
        os._exit(1)


def _outcome(data, status):
    try:
        kind, payload, secrets = pickle.loads(data)
    except Exception:       # noqa: B902 - nothing (or half) was sent: the child died
        return None, PluginError(_death(status))
    for s in secrets:
        errors.secret(s)
    if kind == "value":
        return payload, None
    if kind == "plugin":
        return None, PluginError(payload)
    return None, payload


def _death(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            named = signal.Signals(sig).name
        except ValueError:
            named = str(sig)
        return f"the worker process reading it was killed by {named}"
    return f"the worker process reading it ended with exit code {os.waitstatus_to_exitcode(status)} and no answer"


def _end(fd, pid):
    for step in (lambda: os.kill(pid, signal.SIGKILL), lambda: os.waitpid(pid, 0), lambda: os.close(fd)):
        try:
            step()
        except OSError:
            pass
