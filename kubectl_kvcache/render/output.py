"""What -o and --no-headers asked for; whether that format prints rows or data is its printer's
(render/formats)."""

from __future__ import annotations

from kubectl_kvcache.record import Record
from kubectl_kvcache.render.formats import FORMATS

TABLE, WIDE, JSON, YAML = "table", "wide", "json", "yaml"


class Output(Record):
    __slots__ = ("format", "headers")

    def __init__(self, format: str = TABLE, headers: bool = True):
        self.format = format
        self.headers = headers

    @property
    def wide(self) -> bool:
        return self.format == WIDE

    @property
    def structured(self) -> bool:
        """Data (json, yaml), not rows: a command prints no human-only lines then."""
        return FORMATS[self.format]
