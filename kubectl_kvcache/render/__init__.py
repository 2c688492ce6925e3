"""The only layer that prints. `core`: the View type, tables and the diagnostic lines every
command shares; `formats`: one printer per -o format; `output`: what -o asked for; one module per
command family for its views and messages (`verify`, `checks`, `setting`, `recover`).

`render.line`, `render.show` and the rest of core's face resolve on first use, so that the
command line can read `render.output` and `render.formats` without loading core (~ms at start)."""

_FACE = ("NONE", "Column", "View", "document", "error", "failed_document", "line", "note", "notes", "nothing_found", "prompt", "record",
         "show", "structured", "table", "tracer", "verdict_line")
__all__ = list(_FACE)


def __getattr__(name):
    if name in _FACE:
        from kubectl_kvcache.render import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
