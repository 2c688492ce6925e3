"""One module per command, all alike: `run(options, io) -> exit code`, reading
load (sources) -> judge (pure) -> render -> exit code. cli.py dispatches to them."""

from dataclasses import dataclass
from typing import IO as _Stream


@dataclass(frozen=True)
class IO:
    """The streams a command reads and writes (kubectl's IOStreams): tests pass their own."""

    stdin: _Stream
    stdout: _Stream
    stderr: _Stream
