"""The only layer that prints. `core`: the View type, tables, JSON/YAML and the diagnostic lines
every command shares; one module per command family for its views and messages (`verify`,
`checks`, `setting`). Import the family module you need: this face stays light for --help."""

from kubectl_kvcache.render.core import (NONE, Column, View, document, error, line, note, notes, nothing_found,
                                         prompt, record, show, structured, table, tracer)

__all__ = ["Column", "NONE", "View", "document", "error", "line", "note", "notes", "nothing_found", "prompt",
           "record", "show", "structured", "table", "tracer"]
