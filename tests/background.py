"""What scripts/test started in the background on a cold machine (scripts/test-binaries: the
Kubernetes test binaries; scripts/engine-wheels: the engine releases) while the tiers that need
neither run. scripts/test sets KVCACHE_BACKGROUND to a folder where each job leaves NAME.out (its
stdout), NAME.log (its stderr) and, when it ended, NAME.rc (its exit status). A tier that needs a
job waits for it here (the first test of the tier) and gets its stdout, or Failed with its exit
status and the last lines of its log; the tier's own rules then make that a failure (CI) or a
skip. Without KVCACHE_BACKGROUND nothing is pending and wait() returns None at once."""

import os
import sys
import time

BINARIES = "test-binaries"
ENGINES = "engine-wheels"
# Tests that need a job run after those that need none, the engine wheels (minutes of downloads)
# before the binaries (a cold Go build is the longest job): see order().
NEEDS = {"conformance": ENGINES, "cluster": BINARIES, "connection": BINARIES}
RANK = {None: 0, ENGINES: 1, BINARIES: 2}


class Failed(Exception):
    """The background job ended with a non-zero status."""


def folder():
    return os.environ.get("KVCACHE_BACKGROUND") or None


def wait(job, poll=1.0, say=lambda text: print(text, file=sys.stderr, flush=True)):
    """The job's stdout once it ended with status 0 (None: no job was started in the background);
    raises Failed otherwise. Blocks while it runs, saying so once."""
    where = folder()
    if where is None or not os.path.exists(os.path.join(where, job + ".out")):
        return None
    rc_path = os.path.join(where, job + ".rc")
    started, said = time.monotonic(), False
    while not os.path.exists(rc_path):
        if not said:
            say(f"\nwaiting for scripts/{job} (running in the background since scripts/test started)")
            said = True
        time.sleep(poll)
    if said:
        say(f"scripts/{job} ended after {time.monotonic() - started:.0f}s of waiting")
    with open(rc_path) as f:
        rc = f.read().strip()
    with open(os.path.join(where, job + ".out")) as f:
        out = f.read().strip()
    if rc != "0":
        try:
            with open(os.path.join(where, job + ".log"), errors="replace") as f:
                tail = f.read().splitlines()[-25:]
        except OSError:
            tail = []
        raise Failed(f"scripts/{job} failed in the background (exit {rc}):\n" + "\n".join(tail))
    return out.splitlines()[-1] if out else ""


def needs(item):
    """The background job a collected test needs (by its markers, or the pinned_kubectl fixture
    of tests/conftest.py), or None."""
    if "pinned_kubectl" in getattr(item, "fixturenames", ()):
        return BINARIES
    for marker, job in NEEDS.items():
        if item.get_closest_marker(marker) is not None:
            return job
    return None


def order(items):
    """Only while jobs run in the background: the tests that need none first, then those that
    need the engine wheels, then those that need the binaries; file order kept within each."""
    if folder() is None:
        return
    items.sort(key=lambda item: RANK[needs(item)])
