"""Near-miss spellings: the one accepted spelling a user most likely meant (`FP8` -> `fp8`,
`fp8_e4m3fn` -> `fp8_e4m3`), instead of the whole list of what an engine accepts. Pure.

Only rewrites that keep the cache format are tried (case, `-` for `_`, PyTorch's dtype names
`float8_e4m3fn`/`fnuz`, the engines' own aliases of one format). Edit distance is not used:
`float16` is one letter from `bfloat16`, a different format."""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_kvcache.engine import SAME_FORMAT


def _variants(value: str):
    v = value.strip().lower().replace("-", "_")
    yield v
    if v.startswith("float8_"):
        v = "fp8_" + v[len("float8_"):]
        yield v
    for suffix in ("fnuz", "fn"):
        if v.startswith("fp8_") and v.endswith(suffix):
            yield v[:-len(suffix)]
            break


def nearest_spelling(value: str | None, accepted: Iterable[str]) -> str | None:
    """The accepted spelling of the same format as `value`, when `value` is a near miss of one;
    None when `value` is accepted, or when no rewrite that keeps the format is accepted (then
    naming every accepted value is the honest answer)."""
    accepted = set(accepted) - {"auto"}
    if not value or value in accepted:
        return None
    for v in _variants(value):
        if v in accepted:
            return v
        same = next((a for a in SAME_FORMAT.get(v, ()) if a in accepted), None)
        if same:
            return same
    return None
