"""One module per command, all alike: `run(options, io) -> exit code`, reading
load (sources) -> judge (pure) -> render -> exit code. cli.py dispatches to them."""

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
