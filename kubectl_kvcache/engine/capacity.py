"""A replica's KV-cache capacity in its engine's own words: how many tokens its cache holds, and
the longest request it serves (max length), read from its start-up log and /metrics as each
release writes them (writes.json's capacity formats, generated from the wheels). Pure: text in,
a Capacity out. (Skeleton: the record the helpers share; the readers land with issue 49.)
"""

from __future__ import annotations

from kubectl_kvcache.record import Record

TOKENS, BLOCKS = "tokens", "blocks"     # Capacity.basis: the engine's own token figure, or blocks x block size


class Capacity(Record):
    """One replica's KV-cache capacity as its engine reported it (None fields: not reported)."""

    __slots__ = ("tokens", "basis", "blocks", "block_size", "max_len", "concurrency", "source", "format",
                 "line", "conflict", "unread")

    def __init__(self, tokens: int | None, basis: str, blocks: int | None = None, block_size: int | None = None,
                 max_len: int | None = None, concurrency: float | None = None, source: str = "log",
                 format: str = "", line: str = "", conflict: str = "", unread: tuple = ()):
        self.tokens = tokens            # tokens the KV cache holds (None: not reported)
        self.basis = basis              # TOKENS: the engine's own figure; BLOCKS: blocks x block_size
        self.blocks = blocks            # vLLM's num_gpu_blocks, where reported
        self.block_size = block_size    # tokens per block, where reported
        self.max_len = max_len          # the longest request the engine serves, as it logged it
        self.concurrency = concurrency  # vLLM: "Maximum concurrency for N tokens per request: X x"
        self.source = source            # "log" or "metrics"
        self.format = format            # the capacity format's id (writes.json)
        self.line = line                # the matched part of the line, redacted and cut
        self.conflict = conflict        # not "": its reports disagree, each named with what it said
        self.unread = unread            # why a report seen was not read (cut, ambiguous)

    def to_dict(self):
        return {"tokens": self.tokens, "basis": self.basis, "blocks": self.blocks, "blockSize": self.block_size,
                "maxLength": self.max_len, "concurrency": self.concurrency, "source": self.source,
                "format": self.format, "line": self.line} | (
            {"conflict": self.conflict} if self.conflict else {}) | (
            {"notRead": list(self.unread)} if self.unread else {})
