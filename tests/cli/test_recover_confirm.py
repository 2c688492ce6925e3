"""recover --apply and setting on|off ask only where the question is seen and answered (issue 39 item 6): standard
input AND standard error must be terminals; `recover --apply 2>&1 | tail` refuses at once."""

import io

import pytest

from kubectl_kvcache.cli.flows.asking import cannot_ask


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


class IO:
    def __init__(self, stdin_tty, stderr_tty):
        self.stdin, self.stderr, self.stdout = Stream(stdin_tty), Stream(stderr_tty), Stream(False)


@pytest.mark.parametrize("stdin_tty, stderr_tty, why", [
    (True, True, None),
    (False, True, "standard input is not a terminal"),
    (True, False, "standard error is not a terminal (the question would not be seen)"),
    (False, False, "standard input is not a terminal"),
])
def test_the_question_is_asked_only_on_a_terminal_both_ways(stdin_tty, stderr_tty, why):
    assert cannot_ask(IO(stdin_tty, stderr_tty)) == why


def test_a_stream_without_isatty_is_not_a_terminal():
    streams = IO(True, True)
    streams.stderr = io.BytesIO()
    streams.stderr.isatty = None
    assert cannot_ask(streams).startswith("standard error")
