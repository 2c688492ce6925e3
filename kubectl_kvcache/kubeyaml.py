"""Reads the YAML that kubeconfig writers emit, without PyYAML (issue #16).

Why: `import yaml` costs 13-18 ms at every start (PyYAML compiles large regular expressions when
imported), more than the rest of a 100-Pod `verify`, and most users' kubeconfigs are YAML. Yet the
writers (kubectl/client-go through go-yaml, kind, minikube, k3s, cloud CLIs, PyYAML's safe_dump)
use a small block-style subset of YAML, which this module reads in a tenth of a millisecond.

load() returns exactly what `yaml.load(text, Loader=yaml.CSafeLoader)` returns (YAML 1.1), or
UNSURE for anything outside the subset and any scalar whose type it cannot be certain of; the
caller then asks PyYAML. Correctness comes from giving up whenever in doubt, never from imitating
YAML's corners: tests/test_kubeyaml.py checks that every answer other than UNSURE equals PyYAML's.

The subset: `\\n`-separated lines of printable characters (no tab, CR, BOM), blank lines and
full-line comments; block mappings (`key: value`; `key:` then a deeper block, or a sequence at the
key's own column as go-yaml writes it) and block sequences (`- value`, `- key: value` with further
keys at the first key's column, `-` then a deeper block). Keys: plain scalars that resolve to a str,
or quoted scalars. Values: `{}`, `[]`, quoted scalars on one line (double-quoted with the escapes
\\\\ \\" \\/ \\n \\t \\r \\0 \\xXX \\uXXXX \\UXXXXXXXX) and plain scalars on one line that resolve to
a str, a bool or None. UNSURE: document markers and directives, anchors, aliases, tags, block and
multi-line scalars, non-empty flow collections, complex keys, comments after a value, and plain
scalars that could be numbers, timestamps or merge keys (first character a digit, `+`, `.`, `<`,
`=`, or `-` not followed by a letter or `-`).
"""

from __future__ import annotations


class _Sentinel:
    __slots__ = ()

    def __repr__(self):
        return "kubeyaml.UNSURE"


UNSURE = _Sentinel()
"""load()'s answer when the text is outside the subset: read it with PyYAML instead."""

MAX_DEPTH = 64              # kubeconfigs nest 5 deep; deeper documents are PyYAML's
MAX_KEY = 128               # libyaml refuses keys over 1024 characters; real keys are short


class _Unsure(Exception):
    pass


# PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1) for plain scalars not starting with one of
# "-+0123456789.<=" (those are left to PyYAML): exactly these spellings are bools or nulls, the rest strs.
_WORDS = {w: True for w in "yes Yes YES true True TRUE on On ON".split()}
_WORDS.update({w: False for w in "no No NO false False FALSE off Off OFF".split()})
_WORDS.update({w: None for w in "~ null Null NULL".split()})

_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")  # cannot begin a plain scalar (or change its meaning there)
_NUMERIC = set("+0123456789.<=")          # the int, float, timestamp, merge and value resolvers' firsts
_DASH_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")  # `-x`, `--x`: strs
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX = "0123456789abcdefABCDEF"

_DASH, _KEY, _SCALAR = "dash", "key", "scalar"
_EMPTY = object()           # a key with nothing after its colon: None, or the block below it


def load(text: str) -> dict | list | None | _Sentinel:
    """The document `text` holds, as PyYAML's CSafeLoader would return it, or UNSURE. Never raises."""
    try:
        tokens = _tokens(text)
        if not tokens:
            return None
        value, i = _node(tokens, 0, 0)
        if i != len(tokens):
            raise _Unsure
        return value
    except _Unsure:
        return UNSURE


def _tokens(text):
    """The document as (column, kind, key, value) tokens, one a line, except that each `- ` begins a
    _DASH token and the rest of its line is a token at the column where that rest begins (so that
    `- name: x` begins a mapping at column 2, as YAML reads it)."""
    tokens = []
    for line in text.split("\n"):
        if not line.isprintable():          # tab, CR, NEL, BOM, control and unassigned characters
            raise _Unsure
        content = line.lstrip(" ")
        if not content or content[0] == "#":
            continue
        col = len(line) - len(content)
        content, dashed = content.rstrip(" "), False
        while content[0] == "-" and content[1:2] in ("", " "):
            tokens.append((col, _DASH, None, None))
            rest = content[1:].lstrip(" ")
            if not rest:
                break
            col, content, dashed = col + len(content) - len(rest), rest, True
        else:
            kind, key, value = _entry(content)
            if kind is _SCALAR and not dashed and tokens:
                raise _Unsure               # a scalar on its own line: multi-line, or `key:\n  value`
            tokens.append((col, kind, key, value))
    return tokens


def _entry(s):
    """A line's content (after any dashes): (_KEY, key, value or _EMPTY) or (_SCALAR, None, value)."""
    if s[0] in "\"'":
        key, rest = _quoted(s)
        if not rest:
            return _SCALAR, None, key
        if rest[0] != ":" or rest[1:2] not in ("", " ") or len(s) - len(rest) > MAX_KEY:
            raise _Unsure
    else:
        colon = s.find(": ")
        if colon < 0:
            if s[-1] != ":":
                return _SCALAR, None, _value(s)
            colon = len(s) - 1
        key, rest = s[:colon], s[colon:]
        if not 0 < colon <= MAX_KEY or key[-1] == " " or not isinstance(_plain(key), str):
            raise _Unsure                   # `a : b`, or a key that is a bool or null
    rest = rest[1:].lstrip(" ")
    return _KEY, key, _value(rest) if rest else _EMPTY


def _value(s):
    """A value written on one line, up to its end."""
    if s == "{}":
        return {}
    if s == "[]":
        return []
    if s[0] in "\"'":
        value, rest = _quoted(s)
        if rest:
            raise _Unsure                   # `"a" b`, `"a" # comment`
        return value
    return _plain(s)


def _plain(s):
    """A plain scalar (no leading or trailing space): a str, True, False or None."""
    first = s[0]
    if first == "-":
        if s[1:2] not in _DASH_SAFE or s.startswith("---"):
            raise _Unsure                   # a number, or a document marker
    elif first in _INDICATORS or first in _NUMERIC:
        raise _Unsure
    if ": " in s or " #" in s or s[-1] == ":":
        raise _Unsure                       # a mapping in a scalar's place, or a comment after a value
    return _WORDS.get(s, s)


def _quoted(s):
    """A quoted scalar closed on this line: (its value, what follows the closing quote)."""
    parts, i = [], 1
    if s[0] == "'":
        while True:
            end = s.find("'", i)
            if end < 0:
                raise _Unsure               # it goes on to the next line
            parts.append(s[i:end])
            if s[end + 1:end + 2] != "'":
                return "".join(parts), s[end + 1:]
            parts.append("'")
            i = end + 2
    while True:
        end = s.find('"', i)
        if end < 0:
            raise _Unsure
        slash = s.find("\\", i, end)
        if slash < 0:
            parts.append(s[i:end])
            return "".join(parts), s[end + 1:]
        parts.append(s[i:slash])
        code = s[slash + 1]
        if code in _ESCAPES:
            parts.append(_ESCAPES[code])
            i = slash + 2
        elif code in _HEX_ESCAPES:
            i = slash + 2 + _HEX_ESCAPES[code]
            digits = s[slash + 2:i]
            if len(digits) != _HEX_ESCAPES[code] or digits.strip(_HEX):
                raise _Unsure
            point = int(digits, 16)
            if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
                raise _Unsure               # libyaml refuses these
            parts.append(chr(point))
        else:
            raise _Unsure                   # \e, \N, \_, \L, \P, an escaped line break...


def _node(tokens, i, depth):
    """The node that begins at tokens[i]: (its value, the index of the token after it)."""
    if depth > MAX_DEPTH:
        raise _Unsure
    kind = tokens[i][1]
    if kind is _DASH:
        return _sequence(tokens, i, False, depth)
    if kind is _KEY:
        return _mapping(tokens, i, depth)
    return tokens[i][3], i + 1


def _mapping(tokens, i, depth):
    """A block mapping: _KEY tokens at the column of the first, each with its value."""
    col, result, n = tokens[i][0], {}, len(tokens)
    while i < n:
        c, kind, key, value = tokens[i]
        if c < col:
            break
        if c > col or kind is not _KEY:
            raise _Unsure
        i += 1
        if value is _EMPTY:
            value = None
            if i < n and tokens[i][0] > col:
                value, i = _node(tokens, i, depth + 1)
            elif i < n and tokens[i][0] == col and tokens[i][1] is _DASH:
                value, i = _sequence(tokens, i, True, depth + 1)    # go-yaml's `key:\n- item`
        result[key] = value                 # a repeated key: the last wins, as in SafeConstructor
    return result, i


def _sequence(tokens, i, indentless, depth):
    """A block sequence: _DASH tokens at the column of the first, each followed by its item (deeper);
    an indentless one (a mapping's value at the mapping's column) ends at the mapping's next key."""
    col, result, n = tokens[i][0], [], len(tokens)
    while i < n:
        c, kind = tokens[i][:2]
        if c < col or (indentless and c == col and kind is _KEY):
            break
        if c > col or kind is not _DASH:
            raise _Unsure
        i += 1
        value = None
        if i < n and tokens[i][0] > col:
            value, i = _node(tokens, i, depth + 1)
        result.append(value)
    return result, i
