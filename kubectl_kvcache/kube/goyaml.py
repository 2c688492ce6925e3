"""YAML -> JSON data exactly as kubectl reads a kubeconfig: sigs.k8s.io/yaml@v1.6.0 YAMLToJSON, which
decodes the first document with go.yaml.in/yaml/v2@v2.4.4 into interface{} and marshals that as
JSON. PyYAML does the scanning and parsing; the typing is go-yaml v2's (YAML 1.1 booleans such as
y/n/on/off, no base-60, timestamps kept as their text, positional merge keys, last duplicate key
wins, ...), not PyYAML's. Returns plain data: dict (str keys), list, str, int, float, bool, None.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import math
import re
import struct

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

STR, BOOL, INT, FLOAT, NULL = ("tag:yaml.org,2002:" + t for t in ("str", "bool", "int", "float", "null"))
TIMESTAMP, BINARY, MERGE = ("tag:yaml.org,2002:" + t for t in ("timestamp", "binary", "merge"))
_PLAIN = "tag:kvcache,plain"        # a plain scalar without a tag: go-yaml resolves it
_BANG = "tag:kvcache,bang"          # the non-specific tag `!`: go-yaml keeps the text as a string


class YAMLError(ValueError):
    """Not YAML kubectl can read: `line` (1-based, or None) and a message without the document's values."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


# go.yaml.in/yaml/v2@v2.4.4 resolve.go: init's resolveMapList (YAML 1.1 booleans, nulls, .inf/.nan, <<)
_MAP: dict[str, tuple[str, object]] = {}
for _value, _tag, _words in (
        (True, BOOL, "y Y yes Yes YES true True TRUE on On ON"),
        (False, BOOL, "n N no No NO false False FALSE off Off OFF"),
        (None, NULL, "~ null Null NULL"),
        (math.nan, FLOAT, ".nan .NaN .NAN"),
        (math.inf, FLOAT, ".inf .Inf .INF +.inf +.Inf +.INF"),
        (-math.inf, FLOAT, "-.inf -.Inf -.INF")):
    for _w in _words.split():
        _MAP[_w] = (_tag, _value)
_MAP[""] = (NULL, None)
_MAP["<<"] = (MERGE, "<<")
_HINT = {c: "S" for c in "+-"} | {c: "D" for c in "0123456789"} | {c: "M" for c in "yYnNtTfFoO~"} | {".": "."}
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")   # resolve.go yamlStyleFloat
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")      # what strconv.ParseFloat takes after a leading '.'
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:([Tt]| )(\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?"
                        r"(Z|[-+]\d{2}:\d{2})?)?\Z")
_RESOLVABLE = {"", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP}
_INT64 = 1 << 63


def _go_int(text):
    """strconv.ParseInt(text, 0, 64), else ParseUint (resolve.go): None when neither takes it."""
    if not _GO_INT.match(text):
        return None
    sign, body = (-1, text[1:]) if text[0] == "-" else (1, text[1:] if text[0] == "+" else text)
    low = body[:2].lower()
    base = {"0x": 16, "0o": 8, "0b": 2}.get(low)
    if base:
        value = int(body[2:], base)
    elif len(body) > 1 and body[0] == "0":
        value = int(body, 8)            # Go's base 0: a leading 0 is octal
    else:
        value = int(body, 10)
    value *= sign
    if -_INT64 <= value < _INT64:
        return value
    if sign > 0 and text[0] != "+" and value < 1 << 64:
        return value                    # ParseUint: no sign allowed
    return None


def _timestamp(text):
    """resolve.go parseTimestamp: four digits and '-', then one of allowedTimestampFormats."""
    m = _TIMESTAMP.match(text)
    if not m:
        return False
    year, month, day = (int(g) for g in m.group(1, 2, 3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    import calendar

    if day > calendar.monthrange(year or 2000, month)[1]:       # year 0 is a leap year to Go, as 2000
        return False
    if m.group(4) is None:
        return True
    hour, minute, second = (int(g) for g in m.group(5, 6, 7))
    if hour > 23 or minute > 59 or second > 59:
        return False
    zone = m.group(9)
    if m.group(4) == " ":
        return zone is None             # "2006-1-2 15:4:5.999999999": no zone
    if zone is None:
        return False                    # the T forms need Z07:00
    if zone != "Z" and (int(zone[1:3]) > 24 or int(zone[4:6]) > 60):   # time.Parse's offset range checks
        return False
    return True


def resolve(tag, text):
    """go-yaml v2 resolve(tag, in) -> (tag, value); raises YAMLError as its failf does."""
    if tag not in _RESOLVABLE:
        return tag, text
    rtag, value = _resolve(tag, text)
    if tag in ("", rtag, STR):
        return rtag, value
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(value)
    short = lambda t: "!!" + t.rsplit(":", 1)[1]     # noqa: E731
    raise YAMLError(f"cannot decode {short(rtag)} as a {short(tag)}")


def _resolve(tag, text):
    hint = _HINT.get(text[0]) if text else "N"
    if hint and tag != STR:
        item = _MAP.get(text)
        if item is not None:
            return item
        if hint == ".":
            if _DOT_FLOAT.match(text):
                return FLOAT, float(text)
        elif hint in "DS":
            if tag in ("", TIMESTAMP) and _timestamp(text):
                return TIMESTAMP, text
            plain = text.replace("_", "")
            value = _go_int(plain) if plain else None
            if value is not None:
                return INT, value
            if _YAML_FLOAT.match(plain):
                value = float(plain)
                if not math.isinf(value):       # strconv.ParseFloat: out of range is an error
                    return FLOAT, value
    return STR, text


def _go_b64(text):
    """base64.StdEncoding.DecodeString: \\r and \\n are skipped, padding is required."""
    data = text.replace("\r", "").replace("\n", "")
    try:
        return base64.b64decode(data, validate=True) if len(data) % 4 == 0 else None
    except (binascii.Error, ValueError):
        return None


def _per_byte(exc):
    return "\ufffd", exc.start + 1


codecs.register_error("kvcache-go-utf8", _per_byte)


def go_string(data: bytes) -> str:
    """A Go string's bytes as encoding/json marshals them: each invalid UTF-8 byte is one U+FFFD."""
    return data.decode("utf-8", "kvcache-go-utf8")


def _float32_g(value):
    """strconv.FormatFloat(v, 'g', -1, 32): the shortest decimal that is the same float32, in %g form
    (exponent form when the exponent is < -4 or >= 6, as Go's shortest 'g' decides)."""
    try:
        f32 = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        f32 = math.copysign(math.inf, value)
    if math.isnan(f32):
        return "NaN"
    if math.isinf(f32):
        return "+Inf" if f32 > 0 else "-Inf"
    if f32 == 0:
        return "-0" if math.copysign(1, f32) < 0 else "0"
    for precision in range(0, 9):
        text = f"{f32:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    neg = mantissa.startswith("-")
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    sign = "-" if neg else ""
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        whole, frac = digits[:exp + 1].ljust(exp + 1, "0"), digits[exp + 1:]
    else:
        whole, frac = "0", "0" * (-exp - 1) + digits
    return sign + whole + ("." + frac if frac else "")


class _Key:
    """A mapping key as go-yaml keeps it in map[interface{}]interface{}: typed (1, "1", 1.0 and true differ)."""

    __slots__ = ("kind", "value")

    def __init__(self, value):
        self.kind = type(value).__name__ if not (isinstance(value, int) and value >= _INT64) else "uint64"
        self.value = value

    def __hash__(self):
        return hash((self.kind, self.value if not (self.kind == "float" and math.isnan(self.value)) else "nan"))

    def __eq__(self, other):
        if self.kind != other.kind:
            return False
        if self.kind == "float" and math.isnan(self.value):
            return False                # NaN != NaN: every NaN key is its own
        return self.value == other.value

    def text(self):
        """sigs.k8s.io/yaml convertToJSONableObject's key conversion."""
        v = self.value
        if self.kind == "str":
            return v
        if self.kind == "bool":
            return "true" if v else "false"
        if self.kind == "int":
            return str(v)
        if self.kind == "float":
            s = _float32_g(v)
            return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(s, s)
        shown = "<nil>" if v is None else self.kind
        raise YAMLError(f"unsupported map key of type: {shown}")


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    _Scanner = yaml.SafeLoader     # what _Blanks is mixed into (for the type checker)
else:
    _Scanner = object


class _Blanks(_Scanner):
    """libyaml's (and so scannerc.go's) white space, for PyYAML's pure-Python scanner, which takes
    only spaces where they take tabs too: yaml_parser_scan_to_next_token eats a tab in flow context
    or where no simple key may start (after `key:`, after a value: `a:\tb`, `v1\t`); a plain
    scalar's blanks (yaml_parser_scan_plain_scalar) and a block scalar's or directive's trailing
    blanks are spaces or tabs, and a tab left of the indentation in a plain scalar's line folding is
    "found a tab character that violates indentation". Without this a document the pure scanner
    reads (tags, anchors, or PyYAML built without libyaml) is refused where kubectl reads it."""

    def scan_to_next_token(self):
        if self.column == 0 and self.peek() == "\uFEFF":
            self.forward()
        while True:
            while self.peek() == " " or (self.peek() == "\t" and (self.flow_level or not self.allow_simple_key)):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0\r\n\x85\u2028\u2029":
                    self.forward()
            if not self.scan_line_break():
                return
            if not self.flow_level:
                self.allow_simple_key = True

    def scan_plain_spaces(self, indent, start_mark):
        length = 0
        while self.peek(length) in " \t":
            length += 1
        whitespaces = self.prefix(length)
        self.forward(length)
        if self.peek() not in "\r\n\x85\u2028\u2029":
            return [whitespaces] if whitespaces else []
        line_break = self.scan_line_break()
        self.allow_simple_key = True
        if self._document_boundary():
            return None
        breaks = []
        while self.peek() in " \t\r\n\x85\u2028\u2029":
            if self.peek() == "\t" and self.column < indent:
                raise yaml.scanner.ScannerError("while scanning a plain scalar", start_mark,
                                                "found a tab character that violates indentation", self.get_mark())
            if self.peek() in " \t":
                self.forward()
            else:
                breaks.append(self.scan_line_break())
                if self._document_boundary():
                    return None
        chunks = [line_break] if line_break != "\n" else [] if breaks else [" "]
        return chunks + breaks

    def _document_boundary(self):
        return self.prefix(3) in ("---", "...") and self.peek(3) in "\0 \t\r\n\x85\u2028\u2029"

    def scan_block_scalar_ignored_line(self, start_mark):
        while self.peek() in " \t":
            self.forward()
        return super().scan_block_scalar_ignored_line(start_mark)

    def scan_directive_ignored_line(self, start_mark):
        while self.peek() in " \t":
            self.forward()
        return super().scan_directive_ignored_line(start_mark)


class _Loader(*((_Blanks,) if _BASE is yaml.SafeLoader else ()), _BASE):  # type: ignore[misc, valid-type]  # a base chosen at import
    """PyYAML's scanner and parser; the tags of scalars left for go-yaml's resolve()."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else STR
        return "tag:yaml.org,2002:seq" if kind is yaml.SequenceNode else "tag:yaml.org,2002:map"


class _PyLoader(_Blanks, yaml.SafeLoader):
    """The pure-Python loader, for documents with tags, anchors or `\\/`: it sees the non-specific tag
    `!` (which go-yaml keeps as text), lets an anchor be defined again (go-yaml's later one wins) and
    has go-yaml's escapes."""

    resolve = _Loader.resolve
    # scannerc.go's double-quoted escapes: \' is one, \/ (which PyYAML and libyaml 0.2.5 take) is not
    ESCAPE_REPLACEMENTS = {k: v for k, v in yaml.SafeLoader.ESCAPE_REPLACEMENTS.items() if k != "/"} | {"'": "'"}  # type: ignore[misc]  # Final in the stubs: go-yaml's are others

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()
            if event.anchor not in self.anchors:
                raise yaml.composer.ComposerError(None, None, f"unknown anchor '{event.anchor}' referenced",
                                                  event.start_mark)
            return self.anchors[event.anchor]
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self.anchors.pop(anchor, None)
        return super().compose_node(parent, index)

    def compose_scalar_node(self, anchor):
        event = self.peek_event()
        node = super().compose_scalar_node(anchor)
        if event.tag == "!":
            node.tag = _BANG
        return node


def first_document(data: bytes):
    """The first YAML document's node (None: no document), as yaml.v2's parser reads only that one."""
    python = b"!" in data or b"&" in data or b"\\/" in data or b"\\'" in data
    loader = None
    try:
        _yaml_directive(data)
        loader = (_PyLoader if python else _Loader)(data or b"\n")
        return loader.get_node() if loader.check_node() else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "not valid YAML"
        raise YAMLError(problem, mark.line + 1 if mark is not None else None) from exc
    finally:
        if loader is not None:
            loader.dispose()


_DIRECTIVE = re.compile(rb"%YAML[ \t]+(\d+)\.(\d+)")


def _yaml_directive(data):
    """parserc.go: a %YAML directive other than 1.1 is "found incompatible YAML document" (PyYAML
    only warns about 1.2)."""
    for line in data.lstrip(b"\xef\xbb\xbf").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        if not line.startswith(b"%"):
            return
        m = _DIRECTIVE.match(line)
        if m and (int(m.group(1)), int(m.group(2))) != (1, 1):
            raise YAMLError("found incompatible YAML document")


def to_json(data: bytes):
    """sigs.k8s.io/yaml YAMLToJSON(data), as Python data (json.loads of its output)."""
    node = first_document(data)
    doc = None if node is None else _Decoder().value(node)
    _finite(doc)
    return doc


def _finite(value):
    """json.Marshal refuses NaN and Inf: checked on the converted tree, where a value whose key lost to
    a colliding one (1 and "1") is gone already."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise YAMLError(f"json: unsupported value: {'NaN' if math.isnan(value) else '+Inf' if value > 0 else '-Inf'}")
    if isinstance(value, dict):
        for item in value.values():
            _finite(item)
    elif isinstance(value, list):
        for item in value:
            _finite(item)


class _Decoder:
    """go-yaml v2 decoder.go into interface{}, then sigs.k8s.io/yaml's conversion to JSON."""

    def __init__(self):
        self.active = set()

    def value(self, node, for_key=False):
        if id(node) in self.active:
            raise YAMLError("anchor value contains itself", node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, for_key)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.value(child) for child in node.value]
            return self.mapping(node)
        finally:
            self.active.discard(id(node))

    def scalar(self, node, for_key):
        tag, text = node.tag, node.value
        if node.style == '"' and any("\ud800" <= ch <= "\udfff" for ch in text):
            raise YAMLError("found invalid Unicode character escape code", node.start_mark.line + 1)
        if tag == _PLAIN:
            tag = ""
        elif tag == _BANG:
            tag = "!"
        try:
            rtag, value = resolve(tag, text)
        except YAMLError as exc:
            exc.line = node.start_mark.line + 1
            raise
        if rtag == BINARY:
            raw = _go_b64(text)
            if raw is None:
                raise YAMLError("!!binary value contains invalid base64 data", node.start_mark.line + 1)
            return go_string(raw)
        return value

    def mapping(self, node):
        """decode.go mapping(): pairs in order, `<<` merged where it stands (a later key wins, also over
        merged ones); then convertToJSONableObject turns the typed keys into strings."""
        into: dict = {}
        self._fill(node, into)
        return {key.text(): value for key, value in into.items()}

    def _fill(self, node, into):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YAMLError("invalid map key", key_node.start_mark.line + 1)
            if key_node.value == "<<" and key_node.tag in (_PLAIN, MERGE):      # decode.go isMerge
                self.merge(value_node, into)
                continue
            into[_Key(self.scalar(key_node, True))] = self.value(value_node)

    def merge(self, node, into):
        """decode.go merge(): a mapping, an alias of one, or a sequence of those (merged last to first)."""
        nodes = list(reversed(node.value)) if isinstance(node, yaml.SequenceNode) else [node]
        for child in nodes:
            if not isinstance(child, yaml.MappingNode):
                raise YAMLError("map merge requires map or sequence of maps as the value", child.start_mark.line + 1)
            if id(child) in self.active:
                raise YAMLError("anchor value contains itself", child.start_mark.line + 1)
            self.active.add(id(child))
            try:
                self._fill(child, into)
            finally:
                self.active.discard(id(child))
