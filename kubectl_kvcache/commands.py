"""Each command: gather a snapshot, judge it, render it, pick the exit code."""

from dataclasses import dataclass
from typing import IO as _Stream


@dataclass
class IO:
    stdin: _Stream
    stdout: _Stream
    stderr: _Stream


def run(opts, io):
    raise NotImplementedError(opts.command)
