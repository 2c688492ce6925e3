"""What each command does once its options are known, one module per command, all alike:
`run(options, io) -> exit code`, reading load -> judge (pure) -> render -> exit code (and the
writes: the Setting's patch, recover's executor). Imported only when the command runs
(cli/commands/<name>.py's run), after the connection started.

A read flow also has the face one context of several is run through (flows/fleet.py, the same
for every read command; nothing there knows a command's name): PRELOAD (the modules one
context's read imports lazily, imported before the workers fork), read_context(inner,
connection, trace) -> render.fleet.Result, view_of(inner) -> its render.core.View (columns,
JSON kind, items), failing(inner) (the severities or statuses that fail it, also the one-context
path's), and context_lines(result, inner, err) (each context's summary lines on stderr)."""

from __future__ import annotations

import io as _io

from kubectl_kvcache.record import Record


# Measured: sys.modules before and after a run of each command. Else every worker imports them
# again (a third of a second of CPU each).
NETWORK = ("kube.transport", "kube.proxyenv")
JUDGED = NETWORK + ("engine", "engine.shell", "operator.renderer", "judge.verify", "judge.verdict", "judge.checks",
                    "judge.checks.engines", "judge.fixes", "judge.nearest_dtype", "render.checks")


def judged_context(options, conn, trace, judged, decide):
    """read_context for a flow that judges a snapshot (verify, check): one context read as
    `--context` reads it, judged by the flow's `judged`, its verdict (and so its exit code)
    decided by the flow's `decide(options, report, snapshot)` (judge/verdict.py)."""
    from kubectl_kvcache.load import reader
    from kubectl_kvcache.render.fleet import Result

    snapshot = reader.read(conn, options.scope, None, trace)
    report = decide(options, judged(options, snapshot), snapshot)
    return Result(conn.context, report, code=report.verdict.code, notes=tuple(snapshot.notes),
                  namespace=snapshot.namespace)


class IO(Record):
    """The streams a command reads and writes (kubectl's IOStreams): tests pass their own."""

    __slots__ = ("stdin", "stdout", "stderr")

    def __init__(self, stdin: _io.TextIOBase, stdout: _io.TextIOBase, stderr: _io.TextIOBase):
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
