"""How the engines' reports are written, read back exactly: a Python str repr, a dict or
dataclass repr (its top-level items only), a %-format or f-string line of fields in a known order
(engine/writes.json's templates), a Prometheus sample's label set. Each reader either returns what
the text says, or raises Unread saying why it cannot be read one way. Pure: text in, values out.
"""

from __future__ import annotations

import ast
import bisect
import re

MAX_STARTS = 8      # a line's start text more often than this in one line: not read (built to be slow)
MAX_SEPARATORS = 64  # one config-line separator more often than this: not read (the parse is quadratic in it)

# a Python str repr as repr() writes it: one quote character, backslash escapes, no raw line break
_LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_STRUCTURE = re.compile(r"""['"()\[\]{},]""")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)=")
# the Prometheus text format's label pair (name="value", value escapes \\ \" \n), then `,` or `}`
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*([,}])')
_SAMPLE_VALUE = re.compile(r"[ \t]+\S+(?:[ \t]+-?\d+)?[ \t]*$")


class Unread(Exception):
    """This format's line, not read: why."""


def literal(text: str) -> str | None:
    """The str a whole repr'd literal spells, or None when `text` is not exactly one."""
    text = text.strip()
    m = _LITERAL.fullmatch(text)
    if m is None:
        return None
    value = ast.literal_eval(text)
    return value if isinstance(value, str) else None


def items(text: str, i: int) -> tuple[list[str], int]:
    """The top-level items of the bracketed repr opening at text[i] (split at its own commas; a
    string literal or a nested bracket is skipped whole) and the index after its close."""
    stack = [_OPEN[text[i]]]
    items, start, j = [], i + 1, i + 1
    while True:
        m = _STRUCTURE.search(text, j)
        if m is None:
            raise Unread("it does not close (cut by the read limit, or not the engine's)")
        c, k = m.group(), m.start()
        if c in "'\"":
            lit = _LITERAL.match(text, k)
            if lit is None:
                raise Unread("a quoted value in it does not close")
            j = lit.end()
            continue
        j = k + 1
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c == ",":
            if len(stack) == 1:
                items.append(text[start:k])
                start = j
        else:
            if c != stack.pop():
                raise Unread(f"its brackets do not match at {c!r}")
            if not stack:
                items.append(text[start:k])
                return [x for x in items if x.strip()], j


def fields(found: list[str], keyed: bool) -> dict[str, str]:
    """A dict repr's items ('key': value) or a dataclass repr's (name=value) by name; a name twice
    is not a repr that Python writes."""
    out: dict[str, str] = {}
    for item in found:
        if keyed:
            m = _LITERAL.match(item.lstrip())
            rest = item.lstrip()[m.end():].lstrip() if m else ""
            if m is None or not rest.startswith(":"):
                raise Unread("an item is not 'key': value")
            name, value = ast.literal_eval(m.group()), rest[1:]
        else:
            n = _NAME.match(item)
            if n is None:
                raise Unread("an item is not name=value")
            name, value = n.group(1), item[n.end():]
        if name in out:
            raise Unread(f"it names {name!r} twice")
        out[str(name)] = value
    return out


def bracketed(line: str, start: int, keyed: bool) -> dict[str, str]:
    """The dict (`keyed`) or dataclass repr opening at line[start], which must end the line."""
    found, end = items(line, start)
    if line[end:].strip():
        raise Unread("text follows its close")
    return fields(found, keyed)


def config_values(line: str, template: list, field: str = "kv_cache_dtype") -> set[str]:
    """Every `field` value (kv_cache_dtype; engine/capacity.py: max_seq_len) some complete parse
    of `line` under the format string `template`
    ([literal, kind, literal, ..., literal]) gives. An `s` field (%s, f"{x}") may hold any text; an
    `r` field (%r, f"{x!r}") that starts with a quote is exactly one string literal. The engine's
    real line is one of the parses; when they all give one value, that is the one it wrote."""
    lits, kinds = template[0::2], template[1::2]
    key = next((i for i, lit in enumerate(lits[:-1]) if lit.endswith(f"{field}=")), None)
    if key is None:
        return set()
    end_lit = lits[-1].rstrip()
    if not line.endswith(end_lit):
        return set()
    limit = len(line) - len(end_lit)
    where: dict[str, list[int]] = {}
    for lit in set(lits[1:-1]):
        found, j = [], line.find(lit)
        while j != -1 and j < limit:
            found.append(j)
            if len(found) > MAX_SEPARATORS:
                raise Unread(f"it holds {lit!r} more than {MAX_SEPARATORS} times")
            j = line.find(lit, j + 1)
        where[lit] = found
    memo: dict[tuple[int, int], frozenset] = {}
    last = len(kinds) - 1

    def parses(i: int, p: int) -> frozenset:
        """Field i's value starts at p: the kv values of the complete parses from here ({""}:
        complete, the value already chosen before)."""
        got = memo.get((i, p))
        if got is not None:
            return got
        nxt = lits[i + 1]
        if i == last:
            ends = [limit] if limit >= p else []
        else:
            found = where[nxt]
            ends = found[bisect.bisect_left(found, p):]
        if kinds[i] == "r" and p < len(line) and line[p] in "'\"":
            m = _LITERAL.match(line, p)
            ends = [m.end()] if m is not None and m.end() in ends else []
        out: set = set()
        for e in ends:
            rest = frozenset({""}) if i == last else parses(i + 1, e + len(nxt))
            if rest:
                out |= {line[p:e]} if i == key else rest
        memo[(i, p)] = frozenset(out)
        return memo[(i, p)]

    values: set[str] = set()
    starts = [m.start() for m in re.finditer(re.escape(lits[0]), line)]
    if len(starts) > MAX_STARTS:
        raise Unread(f"it holds {lits[0]!r} {len(starts)} times")
    for s in starts:
        values |= parses(0, s + len(lits[0]))
    return values


def metric_labels(line: str, name: str) -> dict[str, str]:
    r"""The label set of one `NAME{...} value` sample line, parsed as the exposition format writes
    it (prometheus_client's text format: the escapes \\ \" \n, a trailing comma allowed)."""
    rest = line[len(name):]
    if not rest.startswith("{"):
        raise Unread("the series has no labels")
    labels: dict[str, str] = {}
    p = 1
    while True:
        if rest.startswith("}", p):      # an empty set, or a trailing comma
            p += 1
            break
        m = _LABEL.match(rest, p)
        if m is None:
            raise Unread("its label set does not parse (cut, or not the engine's)")
        if m.group(1) in labels:
            raise Unread(f"it names the label {m.group(1)} twice")
        labels[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
        p = m.end()
        if m.group(3) == "}":
            break
    if not _SAMPLE_VALUE.match(rest, p):
        raise Unread("its sample value does not follow the label set")
    return labels
