"""What -o and --no-headers asked for, and whether the rows span namespaces (the NAMESPACE
column); whether that format prints rows or data is its printer's (render/formats)."""

from __future__ import annotations

from kubectl_kvcache.record import Record
from kubectl_kvcache.render.formats import FORMATS

TABLE, WIDE, DESCRIBE, JSON, YAML = "table", "wide", "describe", "json", "yaml"


class Output(Record):
    __slots__ = ("format", "headers", "namespaces")

    def __init__(self, format: str = TABLE, headers: bool = True, namespaces: bool = True):
        self.format = format
        self.headers = headers
        self.namespaces = namespaces    # -A (or files without -n): tables show NAMESPACE, as kubectl's

    @property
    def wide(self) -> bool:
        return self.format == WIDE

    @property
    def describe(self) -> bool:
        return self.format == DESCRIBE

    @property
    def structured(self) -> bool:
        """Data (json, yaml), not rows: a command prints no human-only lines then."""
        return FORMATS[self.format]
