"""Whether a write may ask its question: it is read from standard input and written to standard
error, so both must be a terminal (`recover --apply 2>&1 | tail` would wait on a question nobody
sees; issue 39 item 6). Without one, --yes is the only way, as the refusal says."""

from __future__ import annotations


def cannot_ask(io) -> str | None:
    """Why the question cannot be asked, or None."""
    for name, stream in (("input", io.stdin), ("error", io.stderr)):
        isatty = getattr(stream, "isatty", None)
        if not (isatty and isatty()):
            return f"standard {name} is not a terminal" + (" (the question would not be seen)" if name == "error" else "")
    return None
