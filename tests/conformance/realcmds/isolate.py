"""The sandbox every corpus shell line runs in (issue 47 item 4): a public line runs with the real
shell and only a stub PATH between it and the machine, so an absolute path (`/usr/bin/curl ... |
/bin/sh`, `/bin/rm -rf ...`) in a future entry would run. Here it runs with:

- no network: bubblewrap's own network namespace (`--unshare-all`: only a loopback of its own);
- no writes outside its temporary folder: the whole machine bind-mounted read-only (`--ro-bind /
  /`), fresh tmpfs on /tmp and /var/tmp, its work folder the one writable bind;
- not as root: under root (CI), setpriv (util-linux) first drops to nobody (65534), every
  capability and the bounding set, with no_new_privs, so bubblewrap (not setuid on Debian) makes
  an unprivileged user namespace; the line is uid 65534 inside and outside. As another user it
  runs as that user, with no capability;
- its own PID, IPC and UTS namespaces, a new session (no terminal to push input into), killed
  with its parent.

bubblewrap is Debian's `bubblewrap` package; scripts/test installs it when missing (as root with
apt-get). Without it, or where the kernel refuses user namespaces, no line runs: the tier skips,
and fails under KVCACHE_REQUIRE_CONFORMANCE=1 (CI). Cost: one bwrap start per shell run (measured
in docs/tests.md).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

NOBODY = 65534


class Unavailable(RuntimeError):
    """No sandbox on this machine: no corpus line may run."""


def _prefix() -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise Unavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap (scripts/test does, as root)")
    drop: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise Unavailable("setpriv (util-linux) is not installed: a line would run as root")
        drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs"]
    return drop + [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                   "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]


def command(argv: list[str], work: str, read_only: tuple[str, ...] = ()) -> list[str]:
    """`argv` run in the sandbox, in `work` (the one writable folder, made writable by whom the
    line runs as), with `read_only` folders visible (they are under /tmp, which it replaces)."""
    prefix = _prefix()
    if os.geteuid() == 0:
        os.chown(work, NOBODY, NOBODY)
    binds: list[str] = []
    for folder in read_only:
        binds += ["--ro-bind", folder, folder]
    return prefix + binds + ["--bind", work, work, "--chdir", work, "--"] + list(argv)


@functools.lru_cache(maxsize=1)
def problem() -> str | None:
    """Why no sandbox can be made here (None: one can): a trivial line is run in it."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="kvcache-isolate-") as work:
            p = subprocess.run(command(["/bin/sh", "-c", "id -u > out"], work), capture_output=True, text=True,
                               timeout=30, stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                return f"the sandbox does not start here: {p.stderr.strip()[:300]}"
            with open(os.path.join(work, "out"), encoding="utf-8") as f:
                uid = f.read().strip()
            if uid == "0":
                return "the sandbox runs its line as root"
    except (Unavailable, OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None


def require() -> None:
    """For the tier's tests: skip without a sandbox, fail under KVCACHE_REQUIRE_CONFORMANCE=1."""
    import pytest

    reason = problem()
    if reason is None:
        return
    reason = f"the real-command tier runs public shell lines only in a sandbox: {reason}"
    if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
