"""What each command does once its options are known, one module per command, all alike:
`run(options, io) -> exit code`, reading load -> judge (pure) -> render -> exit code (and the
writes: the Setting's patch, recover's executor). Imported only when the command runs
(cli/commands/<name>.py's run), after the connection started."""

from __future__ import annotations

import io as _io

from kubectl_kvcache.record import Record


class IO(Record):
    """The streams a command reads and writes (kubectl's IOStreams): tests pass their own."""

    __slots__ = ("stdin", "stdout", "stderr")

    def __init__(self, stdin: _io.TextIOBase, stdout: _io.TextIOBase, stderr: _io.TextIOBase):
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
