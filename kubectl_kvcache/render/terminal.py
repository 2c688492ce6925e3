"""What a person's terminal gets that a pipe does not: its width (long text wrapped at word
boundaries onto indented lines of its own) and colour for statuses. Piped, redirected or in a
document format the output stays one row per line and colourless, as awk and grep read it.

Colour follows the ls/kubectl convention `--color auto|always|never` (auto: on a terminal only)
and https://no-color.org (a non-empty NO_COLOR turns auto off; an explicit --color=always wins,
as that page asks of a command-line flag). The escape sequences are this module's constants,
chosen by matching a cell against the plugin's own status words: nothing of the cluster's ever
picks or builds one, and the cell printed is the escaped one (render.core.escape).
"""

from __future__ import annotations

import os
import re
import textwrap

from kubectl_kvcache.record import Record

AUTO, ALWAYS, NEVER = "auto", "always", "never"
COLOR_CHOICES = (AUTO, ALWAYS, NEVER)

_RED, _GREEN, _YELLOW, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[0m"

# The plugin's status words (verify's STATUS, a verdict's words, check's SEVERITY) -> colour; a
# comma-joined cell (`REJECTED,AUTO`) takes its worst word's. Anything else is printed plain.
_COLOURS = {
    "REJECTED": _RED, "MISMATCH": _RED, "WILL-REJECT": _RED, "DOMAIN-CLAIMED": _RED, "error": _RED,
    "ERROR": _RED, "CrashLoopBackOff": _RED,
    "UNKNOWN": _YELLOW, "MISSING": _YELLOW, "NO-POD": _YELLOW, "AUTO": _YELLOW, "warning": _YELLOW,
    "WARNING": _YELLOW, "UNUSED": _YELLOW,
    "OK": _GREEN,
}
_RANK = {_RED: 3, _YELLOW: 2, _GREEN: 1}


class Terminal(Record):
    """How a stream is printed to: `width` (None: not a terminal, nothing is wrapped) and
    `color` (whether status words are coloured)."""

    __slots__ = ("width", "color")

    def __init__(self, width: int | None = None, color: bool = False):
        self.width = width
        self.color = color


PLAIN = Terminal()


def _isatty(stream):
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):      # a closed stream
        return False


def _width(stream):
    """The terminal's columns: $COLUMNS when set (as shutil.get_terminal_size reads it), else the
    stream's own terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
        if columns > 0:
            return columns
    except ValueError:
        pass
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
        if columns > 0:
            return columns
    except (AttributeError, ValueError, OSError):
        pass
    return 80


def of(stream, color: str = AUTO) -> Terminal:
    """The Terminal for `stream` and a --color value."""
    tty = _isatty(stream)
    if color == ALWAYS:
        coloured = True
    elif color == NEVER:
        coloured = False
    else:
        coloured = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    return Terminal(_width(stream) if tty else None, coloured)


def paint(text: str, term: Terminal, padded: str | None = None) -> str:
    """`padded` (or `text`), the status word `text` coloured when the terminal has colour and the
    word is one of the plugin's; the padding after the word stays outside the colour."""
    padded = text if padded is None else padded
    if not term.color:
        return padded
    colours = [_COLOURS[w] for w in text.split(",") if w in _COLOURS]
    if not colours:
        return padded
    colour = max(colours, key=lambda c: _RANK[c])
    return colour + text + _RESET + padded[len(text):]


def wrap(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """`text` on lines of at most `width` columns, broken at spaces only (a word longer than the
    line stays whole: a path, a URL, a JSON argument), each line after `indent` (the first after
    `first` when given)."""
    first = indent if first is None else first
    return textwrap.wrap(text, width=max(width, len(first) + 20), initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False, drop_whitespace=True,
                         replace_whitespace=False) or [first.rstrip()]


_SGR = re.compile("\x1b\\[[0-9;]*m")


def visible(text: str) -> str:
    """`text` without this module's colour sequences (for measuring)."""
    return _SGR.sub("", text)
