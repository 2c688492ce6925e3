"""What a release does with a --chat-template value (engine/templates.json, read from the wheels by
tools/enginedata/templates_data.py), so that only a value that names a file is left to the image.

Why (issue 52 item 2): the value is a template in the argv ("literal": vLLM takes a value holding
`{`, `}` or a newline as the template itself, 0.3.3-0.4.0.post1 any value that opens no file), a
name the release ships or registers (vLLM's built-in templates from 0.13.0; SGLang's registered
conversation templates, looked up before any file), or a path: only then does the file decide,
and whether it is in the image or a volume mounted into it is not in the Pod spec.
"""

from __future__ import annotations

from kubectl_kvcache.engine.releases import _in_spans

JINJA_CHARS = "{}\n"


def reading(engine: str, version) -> dict | None:
    """The release's {"literal", "names", "when", "source"}, or None (not in the data)."""
    from kubectl_kvcache.engine import knowledge
    spans = knowledge.load("templates").get(engine)
    return _in_spans(version, spans) if spans else None


def needs_no_file(read: dict | None, value: str | None) -> bool:
    """True when the release takes `value` without reading a file: a template in the argv, or a
    name of one it ships or registers."""
    if read is None or value is None or "\0" in value:
        return False
    if read.get("literal") == "any" and "\\" not in value:   # codecs.decode(value, "unicode_escape")
        return True
    if read.get("literal") in ("any", "jinja") and any(c in value for c in JINJA_CHARS):
        return True
    return value in (read.get("names") or ())


def file_reason(read: dict | None, shown: str) -> str:
    """Why a value that names a file is UNKNOWN, and what would decide it."""
    when = (read or {}).get("when")
    checked = ("the release checks it after parsing, before the engine starts (validate_chat_template)"
               if when == "after parsing" else "the engine reads it at start-up, after parsing")
    return (f"{shown} names a file ({checked}; it is no template in the argv nor a template name the release "
            f"ships): whether the file is in the image or in a volume mounted there decides")
