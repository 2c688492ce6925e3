"""A small YAML writer with random styles, so the parity cases cover the ways people really write
kubeconfigs (block and flow collections, plain/single/double-quoted scalars with escapes,
comments, CRLF, a BOM, indentation widths) while `Raw` leaves put one exact spelling in place
(a probe: the YAML text whose meaning the case asks kubectl about)."""

from __future__ import annotations

import json
import re

# goyaml.v2 resolves these plain scalars to something other than a string (YAML 1.1), so a
# string with this spelling is never written plain unless a probe does it on purpose.
_SPECIAL = {"y", "yes", "n", "no", "on", "off", "true", "false", "null", "~", ""}
_PLAIN = re.compile(r"^[A-Za-z/][A-Za-z0-9/._=+-]*(:[A-Za-z0-9/._=+@-]+)*$")


class Raw:
    """A scalar or collection written exactly as given (`block`: needs block context)."""

    def __init__(self, text: str, block: bool = False):
        self.text = text
        self.block = block or "\n" in text

    def __repr__(self):
        return f"Raw({self.text!r})"


class Style:
    """The random choices of one document."""

    def __init__(self, rng, plain_only=False):
        self.rng = rng
        self.indent = rng.choice((2, 2, 4, 3))
        self.seq_indented = rng.random() < 0.5
        self.flow = 0.0 if plain_only else rng.choice((0.0, 0.0, 0.2, 0.5))
        self.quote = 0.0 if plain_only else rng.choice((0.0, 0.3, 0.7))
        self.comments = 0.0 if plain_only else rng.choice((0.0, 0.0, 0.3))
        self.quote_keys = 0.0 if plain_only else rng.choice((0.0, 0.0, 0.2))


def _needs_quotes(s: str) -> bool:
    return (s.lower() in _SPECIAL or not _PLAIN.match(s) or re.match(r"^[-+.0-9]", s) is not None
            or re.fullmatch(r"[0-9a-fA-FxXoO_:.+-]+", s) is not None)


def _double(s: str, rng) -> str:
    out = []
    scramble = "@" not in s          # never escape inside a placeholder (tests/connection/generate.py)
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif scramble and ord(ch) < 0x7F and ch.isalnum() and rng.random() < 0.08:
            out.append(rng.choice((f"\\x{ord(ch):02x}", f"\\u{ord(ch):04x}")))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def scalar(value, style: Style, flow: bool) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    s = str(value)
    rng = style.rng
    plain_ok = not _needs_quotes(s) and not (flow and re.search(r"[,\[\]{}]", s))
    if plain_ok and rng.random() >= style.quote:
        return s
    if "\n" not in s and "'" not in s and all(ord(c) >= 0x20 for c in s) and rng.random() < 0.5:
        return "'" + s + "'"
    return _double(s, rng)


def _key(k, style):
    if style.quote_keys and style.rng.random() < style.quote_keys:
        return _double(k, style.rng) if style.rng.random() < 0.5 else "'" + k + "'"
    return k if not _needs_quotes(k) else _double(k, style.rng)


def _has_block(v) -> bool:
    if isinstance(v, Raw):
        return v.block
    if isinstance(v, dict):
        return any(_has_block(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_block(x) for x in v)
    return False


def _flow(v, style) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k, style)}: {_flow(x, style)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x, style) for x in v) + "]"
    return scalar(v, style, True)


def _comment(style):
    if style.comments and style.rng.random() < style.comments:
        return "  # " + style.rng.choice(("note", "set by hand", "x: y", "- item", "'quoted'"))
    return ""


def _block(v, style, level, lines):
    pad = " " * (style.indent * level)
    if isinstance(v, dict):
        for k, x in v.items():
            _entry(f"{pad}{_key(k, style)}:", x, style, level, lines)
    else:
        dash_pad = pad
        for x in v:
            if isinstance(x, dict) and x and not (style.flow and style.rng.random() < style.flow
                                                   and not _has_block(x)):
                sub: list[str] = []
                _block(x, style, level + 1, sub)
                first = sub[0][len(" " * (style.indent * (level + 1))):]
                lines.append(f"{dash_pad}- {first}")
                rest_pad = dash_pad + "  "
                for line in sub[1:]:
                    lines.append(rest_pad + line[len(" " * (style.indent * (level + 1))):])
            else:
                _entry(f"{dash_pad}-", x, style, level, lines, dash=True)


def _entry(prefix, x, style, level, lines, dash=False):
    rng = style.rng
    collection = isinstance(x, (dict, list)) and x
    if collection and not _has_block(x) and rng.random() < style.flow:
        lines.append(f"{prefix} {_flow(x, style)}{_comment(style)}")
    elif collection:
        if dash:
            lines.append(prefix)
            _block(x, style, level + 1, lines)
            return
        lines.append(prefix + _comment(style))
        child = level + 1 if (isinstance(x, dict) or style.seq_indented) else level
        _block(x, style, child, lines)
    elif isinstance(x, Raw) and x.block:
        text = x.text.split("\n")
        pad = " " * (style.indent * (level + 1))
        lines.append(f"{prefix} {text[0]}")
        lines.extend((pad + t) if t else "" for t in text[1:])
    else:
        lines.append(f"{prefix} {scalar(x, style, False) if not collection else _flow(x, style)}"
                     + _comment(style))


def dump(doc: dict, rng, json_chance=0.08, plain_only=False, crlf=None, bom=None) -> bytes:
    """`doc` as YAML (sometimes JSON) bytes in random styles; Raw leaves are kept as written."""
    if not _has_raw(doc) and rng.random() < json_chance:
        text = json.dumps(doc, indent=rng.choice((None, 2)), ensure_ascii=rng.random() < 0.5) + "\n"
    else:
        style = Style(rng, plain_only)
        lines: list[str] = []
        if not plain_only and rng.random() < 0.15:
            lines.append("# kubeconfig written by hand")
        if not plain_only and rng.random() < 0.15:
            lines.append("---")
        _block(doc, style, 0, lines)
        if not plain_only and rng.random() < 0.05:
            lines.append("...")
        text = "\n".join(lines) + "\n"
    if crlf if crlf is not None else (not plain_only and rng.random() < 0.1):
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if bom if bom is not None else (not plain_only and rng.random() < 0.05):
        data = b"\xef\xbb\xbf" + data
    return data


def _has_raw(v):
    if isinstance(v, Raw):
        return True
    if isinstance(v, dict):
        return any(_has_raw(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_raw(x) for x in v)
    return False
