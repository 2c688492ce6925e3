"""Label selectors: the one grammar (k, !k, k=v, k==v, k!=v, k in (a,b), k notin (a,b),
comma-separated and ANDed) that validates -l before any request and matches saved objects'
labels as the API server matches them (apimachinery@v0.37.2/pkg/labels/selector.go: Parse,
Requirement.Matches)."""

from __future__ import annotations

import functools
import re

from kubectl_kvcache.errors import PluginError

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s+\((?P<values>\s*{_VALUE}(\s*,\s*{_VALUE})*\s*)\)\s*")
_EQUALITY = re.compile(rf"\s*(?P<key>{_KEY})\s*(?P<op>==?|!=)\s*(?P<value>{_VALUE})\s*")
_EXISTS = re.compile(rf"\s*(?P<op>!?)(?P<key>{_KEY})\s*")


def _parts(selector):
    """A selector's comma-separated requirements (commas inside `in (a,b)` kept)."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _requirement(part):
    """(key, op, values) of one requirement, op one of in notin = != exists !; None: malformed."""
    m = _SET.fullmatch(part)
    if m:
        return m["key"], m["op"], frozenset(v.strip() for v in m["values"].split(","))
    m = _EQUALITY.fullmatch(part)
    if m:
        return m["key"], "!=" if m["op"] == "!=" else "=", frozenset((m["value"],))
    m = _EXISTS.fullmatch(part)
    if m:
        return m["key"], "!" if m["op"] else "exists", frozenset()
    return None


@functools.lru_cache(maxsize=64)    # matched against every saved object's labels
def parse(selector) -> tuple:
    """The requirements of `selector`, else one error naming it and the bad requirement."""
    parsed = []
    for part in _parts(selector):
        requirement = _requirement(part)
        if requirement is None:
            what = repr(part.strip()) if part.strip() else "an empty requirement"
            raise PluginError(f"invalid label selector {selector!r}: {what} is not k, !k, k=v, k!=v, k in (v1,v2) "
                              f"or k notin (v1,v2)")
        parsed.append(requirement)
    return tuple(parsed)


def validate(selector):
    """A malformed selector fails here, before any request carries it."""
    parse(selector)


_MATCH = {"in": lambda v, vs: v in vs, "notin": lambda v, vs: v not in vs, "=": lambda v, vs: v in vs,
          "!=": lambda v, vs: v not in vs}


def matches(labels, selector) -> bool:
    """Whether `labels` satisfy every requirement of `selector` (None or '': everything does)."""
    if not selector:
        return True
    for key, op, values in parse(selector):
        if op == "exists":
            ok = key in labels
        elif op == "!":
            ok = key not in labels
        else:
            ok = _MATCH[op](labels.get(key), values)
        if not ok:
            return False
    return True
