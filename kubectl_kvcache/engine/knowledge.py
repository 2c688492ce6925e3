"""The engine knowledge read from the released wheels, shipped as JSON files beside this module.

scripts/engine-data writes them (tools/enginedata: tooling, not the plugin); the conformance tier
proves each equals what the wheels say. JSON, not generated Python: it loads in milliseconds
where no bytecode is written (containers often set PYTHONDONTWRITEBYTECODE), it is data a
reviewer diffs, and nothing in it runs. Each file is {"schema": N, "written_by": ..., "data": ...};
a file of another schema is refused, not misread. Loaded on first use, once per process.

    parsers.json   every release's parser (engine/data.parsers, format in docs/engines.md)
    backends.json  vLLM's attention backends and the dtypes each lists (engine/attention)
    writes.json    the reports of its KV-cache dtype each release writes (engine/words)
    capacity.json  the lines and labels saying its KV-cache capacity each release writes (engine/capacity)
    crashes.json   what each release raises about the KV-cache dtype when it dies (engine/crash)
    gpus.json      which backend vLLM picks per GPU compute capability, and whether it starts (engine/attention)
    pythons.json   how argparse differs between the CPythons images run (engine/kvparse)
    kvbytes.json   bytes per KV-cache element of each dtype, per release (engine/kvbytes)
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Bumped by whoever changes the layout of what scripts/engine-data writes.
SCHEMA = 1
FILES = ("parsers", "backends", "writes", "pythons", "crashes", "capacity", "kvbytes", "gpus", "templates")
_LOADED: dict[str, Any] = {}


class KnowledgeError(RuntimeError):
    """A shipped data file is missing or not what this plugin reads: a broken install (the CLI's
    one-line internal error, exit 2; engine/ imports nothing outside itself)."""


def path(name: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.json")


def load(name: str) -> Any:
    """The "data" of `name`.json (one of FILES), read once."""
    if name in _LOADED:
        return _LOADED[name]
    where = path(name)
    try:    # through the module's loader (the package's own data, wherever it is installed or frozen)
        doc = json.loads(__loader__.get_data(where))  # type: ignore[name-defined]
    except (OSError, ValueError) as exc:
        raise KnowledgeError(f"the engine data {where} cannot be read ({exc}): reinstall kubectl-kvcache") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or "data" not in doc:
        raise KnowledgeError(f"the engine data {where} is not schema {SCHEMA}: reinstall kubectl-kvcache")
    _LOADED[name] = doc["data"]
    return doc["data"]
