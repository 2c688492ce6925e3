"""kubectl's JSONPath template language (`-o jsonpath=...`, custom-columns' specs, `--sort-by`),
as k8s.io/client-go/util/jsonpath reads and runs it (client-go v0.37.2, kubectl v1.37.2's: parser.go,
jsonpath.go, node.go, and third_party/forked/golang/template's exec.go and funcs.go; its
printers are proved equal to kubectl's own on the plugin's documents by tests/render/
test_kubectl_parity.py). No Python library implements this dialect: jsonpath-ng and the
RFC 9535 libraries have no `{range}`/`{end}`, text between actions, kubectl's quoting or its error
texts. Written from the Go source's rules, each cited; none of its code is copied.

The data is what Go's unstructured JSON decoding makes of a document: dict, list, str, int
(int64), float (float64), bool, None. A value prints as Go's fmt.Fprint prints it (`go_text`)."""

from __future__ import annotations

import math
import re

from kubectl_kvcache.record import Record


class JSONPathError(Exception):
    """A template that does not parse, or that fails on the data (the Go error's text). `values`:
    what the failing Go function returned beside its error (evalArray and evalFilter return their
    input), which an `exists` filter counts (jsonpath.go evalFilter reads `lefts` before `err`)."""

    def __init__(self, message: str, values=()):
        super().__init__(message)
        self.values = list(values)


# -- nodes (client-go/util/jsonpath/node.go) ----------------------------------------------------

TEXT, ARRAY, LIST, FIELD, IDENTIFIER, FILTER, INT, FLOAT, WILDCARD, RECURSIVE, UNION, BOOL = (
    "NodeText", "NodeArray", "NodeList", "NodeField", "NodeIdentifier", "NodeFilter", "NodeInt", "NodeFloat",
    "NodeWildcard", "NodeRecursive", "NodeUnion", "NodeBool")


class Node(Record):
    """One parse-tree node: `type` a node.go NodeType name; `value` its text, name, number, bool,
    (start, end, step) params, or (left, operator, right) of a filter; `nodes` a list's or a
    union's children."""

    __slots__ = ("type", "value", "nodes")

    def __init__(self, type: str, value=None, nodes=None):
        self.type = type
        self.value = value
        self.nodes = nodes if nodes is not None else []

    def __str__(self):
        """node.go's String() methods: what `unexpected Node %v` prints."""
        if self.type in (TEXT, FIELD, IDENTIFIER):
            return f"{self.type}: {self.value}"
        if self.type == INT:
            return f"{self.type}: {self.value}"
        if self.type == BOOL:
            return f"{self.type}: {'true' if self.value else 'false'}"
        if self.type == FLOAT:
            return f"{self.type}: {self.value:f}"
        return self.type


class Param(Record):
    """parser.go's ParamsEntry: a slice bound, and whether the template gave it."""

    __slots__ = ("value", "known", "derived")

    def __init__(self, value: int = 0, known: bool = False, derived: bool = False):
        self.value = value
        self.known = known
        self.derived = derived      # `[n]`: the end is n+1, computed after n's negative form is resolved


# -- the parser (client-go/util/jsonpath/parser.go) ---------------------------------------------

_DICT_KEY = re.compile(r"^'([^']*)'$")                                   # parser.go dictKeyRex
_SLICE = re.compile(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$")             # parser.go sliceOperatorRex
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)                # parser.go parseFilter's reg
_SPACE = " \t"
_EOL = "\r\n"
_TERMINATORS = set(".,[]$@{}") | set(_SPACE) | set(_EOL)


def _alnum(ch) -> bool:
    """parser.go isAlphaNumeric: `_`, a Unicode letter or digit."""
    return ch is not None and (ch == "_" or ch.isalpha() or _digit(ch))


def _digit(ch) -> bool:
    """unicode.IsDigit: category Nd."""
    import unicodedata

    return ch is not None and unicodedata.category(ch) == "Nd"


def _terminator(ch) -> bool:
    """parser.go isTerminator (None: end of input)."""
    return ch is None or ch in _TERMINATORS


class _Parser:
    """parser.go's Parser: the same scanning, position by position (Go scans UTF-8 runes; a str's
    code points are the same runes)."""

    def __init__(self, text: str):
        self.input = text
        self.pos = 0
        self.start = 0
        self.root = Node(LIST)

    def next(self):
        if self.pos >= len(self.input):
            self.width = 0
            return None
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def peek(self):
        ch = self.next()
        self.backup()
        return ch

    def backup(self):
        self.pos -= self.width

    def consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def parse(self) -> Node:
        cur = self.root
        while True:             # parseText / parseLeftDelim / parseRightDelim, as a loop
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.nodes.append(Node(TEXT, self.consume()))
                self.pos += 1
                self.consume()
                action = Node(LIST)
                cur.nodes.append(action)
                self.inside(action)
                self.pos += 1               # parseRightDelim
                self.consume()
                continue
            if self.next() is None:
                break
        if self.pos > self.start:
            cur.nodes.append(Node(TEXT, self.consume()))
        return self.root

    def inside(self, cur: Node) -> None:
        """parseInsideAction, until the action's `}`."""
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                return
            if rest.startswith("[?("):
                self.filter(cur)
                continue
            if rest.startswith(".."):
                self.recursive(cur)
                continue
            ch = self.next()
            if ch is None or ch in _EOL:
                raise JSONPathError("unclosed action")
            if ch == " ":
                self.consume()
            elif ch in "@$":            # the current object: passed over
                self.consume()
            elif ch == "[":
                self.array(cur)
            elif ch in "\"'":
                self.quote(cur, ch)
            elif ch == ".":
                self.field(cur)
            elif ch in "+-" or _digit(ch):
                self.backup()
                self.number(cur)
            elif _alnum(ch):
                self.backup()
                self.identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: {_go_unicode(ch)}")

    def identifier(self, cur):
        """parseIdentifier: `range`, `end`, or a bool."""
        while True:
            if _terminator(self.next()):
                self.backup()
                break
        value = self.consume()
        cur.nodes.append(Node(BOOL, value == "true") if value in ("true", "false") else Node(IDENTIFIER, value))

    def recursive(self, cur):
        """parseRecursive."""
        if cur.nodes and cur.nodes[-1].type == RECURSIVE:
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self.consume()
        cur.nodes.append(Node(RECURSIVE))
        if _alnum(self.peek()):
            self.field(cur)

    def number(self, cur):
        """parseNumber: an int (strconv.Atoi), else a float (strconv.ParseFloat)."""
        if self.peek() in ("+", "-"):
            self.next()
        while True:
            ch = self.next()
            if ch != "." and not _digit(ch):
                self.backup()
                break
        value = self.consume()
        number = _atoi(value)
        if number is not None:
            cur.nodes.append(Node(INT, number))
            return
        real = _parse_float(value)
        if real is None:
            raise JSONPathError(f"cannot parse number {value}")
        cur.nodes.append(Node(FLOAT, real))

    def array(self, cur):
        """parseArray: `[*]`, a union `[a,b]`, a dict key `['k']` or a slice `[s:e:step]`."""
        while True:
            ch = self.next()
            if ch is None or ch == "\n":
                raise JSONPathError("unterminated array")
            if ch == "]":
                break
        text = self.consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            union = [_action(f"[{p.strip(' ')}]") for p in parts]
            cur.nodes.append(Node(UNION, nodes=union))
            return
        key = _DICT_KEY.match(text)
        if key:
            cur.nodes.extend(_action(f".{key.group(1)}").nodes)
            return
        match = _SLICE.match(text)
        if match is None:
            raise JSONPathError(f"invalid array index {text}")
        params = [Param(), Param(), Param()]
        for i, group in enumerate(match.groups()):
            group = group or ""
            if group:
                if i > 0:
                    group = group[1:]
                if i > 0 and group == "":
                    params[i] = Param(0, False)
                else:
                    number = _atoi(group)
                    if number is None:
                        raise JSONPathError(f"array index {group} is not a number")
                    params[i] = Param(number, True)
            elif i == 1:
                params[i] = Param(params[0].value + 1, True, True)     # `[n]`: the one element n
        cur.nodes.append(Node(ARRAY, params))

    def filter(self, cur):
        """parseFilter: `[?(left op right)]`, or `[?(@.x)]` (exists)."""
        self.pos += 3
        self.consume()
        begin = end = False
        pair = None
        while True:
            ch = self.next()
            if ch is None or ch == "\n":
                raise JSONPathError("unterminated filter")
            if ch in "\"'":
                if not begin:
                    begin, pair = True, ch
                    continue
                if self.input[self.pos - 2] != "\\" and ch == pair:
                    end = True
            elif ch == ")" and begin == end:
                break
        if self.next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self.consume()[:-2]
        match = _FILTER.match(text)
        if match is None:
            cur.nodes.append(Node(FILTER, (_action(text), "exists", Node(LIST))))
        else:
            cur.nodes.append(Node(FILTER, (_action(match.group(1)), match.group(2), _action(match.group(3)))))

    def quote(self, cur, end):
        """parseQuote: a quoted string, unquoted as Go's strconv (UnquoteExtend: single quotes too)."""
        while True:
            ch = self.next()
            if ch is None or ch == "\n":
                raise JSONPathError("unterminated quoted string")
            if ch == end and self.input[self.pos - 2] != "\\":
                break
        value = self.consume()
        try:
            text = _unquote(value)
        except ValueError as exc:
            raise JSONPathError(f"unquote string {value} error {exc}") from None
        cur.nodes.append(Node(TEXT, text))

    def field(self, cur):
        """parseField: up to the next terminator not escaped by `\\`; `*` is the wildcard."""
        self.consume()
        while True:
            ch = self.next()
            if ch == "\\":
                self.next()
            elif _terminator(ch):
                self.backup()
                break
        value = self.consume()
        cur.nodes.append(Node(WILDCARD) if value == "*" else Node(FIELD, value.replace("\\", "")))


def _action(text: str) -> Node:
    """parser.go parseAction: `text` parsed as one action, its list node."""
    return parse("{" + text + "}").nodes[0]


def parse(template: str) -> Node:
    """The template's root list node; JSONPathError with parser.go's message when it does not parse."""
    return _Parser(template).parse()


def _go_unicode(ch: str) -> str:
    """Go's %#U: U+0023 '#'."""
    return f"U+{ord(ch):04X} '{ch}'" if ch.isprintable() else f"U+{ord(ch):04X}"


def _atoi(text: str):
    """strconv.Atoi (a sign, ASCII digits, 64 bits), else None."""
    if re.fullmatch(r"[+-]?[0-9]+", text) is None:
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def _parse_float(text: str):
    """strconv.ParseFloat for what parseNumber collects (sign, digits, dots), else None."""
    if re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)", text) is None:
        return None
    return float(text)


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _unquote(s: str) -> str:
    """parser.go UnquoteExtend: strconv.Unquote's escapes, with single quotes as a string's too."""
    if len(s) < 2 or s[0] != s[-1] or s[0] not in "\"'":
        raise ValueError("invalid syntax")
    quote, body = s[0], s[1:-1]
    if "\\" not in body and quote not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == quote:
            raise ValueError("invalid syntax")      # strconv.UnquoteChar: the bare quote
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError("invalid syntax")
        c = body[i + 1]
        i += 2
        if c in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[c])
        elif c == quote or (c in "'\"" and c == quote):
            out.append(c)
        elif c in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[c]
            digits = body[i:i + n]
            if len(digits) < n or re.fullmatch(r"[0-9a-fA-F]+", digits) is None:
                raise ValueError("invalid syntax")
            i += n
            value = int(digits, 16)
            if c == "x":
                out.append(chr(value))        # a byte: kept as the code point (JSON data is text)
            else:
                if value > 0x10FFFF or 0xD800 <= value < 0xE000:
                    raise ValueError("invalid syntax")
                out.append(chr(value))
        elif c in "01234567":
            digits = body[i - 1:i + 2]
            if len(digits) < 3 or re.fullmatch(r"[0-7]{3}", digits) is None or int(digits, 8) > 255:
                raise ValueError("invalid syntax")
            i += 2
            out.append(chr(int(digits, 8)))
        else:
            raise ValueError("invalid syntax")
    return "".join(out)


# -- values as Go holds and prints them ---------------------------------------------------------

def go_text(value) -> str:
    """fmt.Fprint of a decoded JSON value: `<nil>`, `true`, 3, 1e+21, map[a:1 b:[x y]] (map keys
    sorted, as fmt prints maps)."""
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value) if -(1 << 63) <= value < (1 << 63) else go_float(float(value))
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return str(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
                 "\f": "\\f", "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                 "\u2029": "\\u2029"}
_JSON_UNSAFE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029]')


def go_json(value) -> str:
    """encoding/json.Marshal of a decoded value: compact, map keys sorted, strings with Go's
    escapes (HTML's <, > and & as \\u003c..., U+2028/2029, control characters), floats as Go
    writes them."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        return '"' + _JSON_UNSAFE.sub(lambda m: _JSON_ESCAPES.get(m.group(), "\\u%04x" % ord(m.group())), value) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(go_json(str(k)) + ":" + go_json(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return go_json(str(value))


def _json_float(value: float) -> str:
    """encoding/json's float64: 'f' form between 1e-6 and 1e21, else 'e' with a short exponent."""
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    if 1e-6 <= abs(value) < 1e21:
        from decimal import Decimal

        return format(Decimal(repr(value)), "f")
    mantissa, _, exp = repr(value).partition("e")
    mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
    sign, digits = (exp[0], exp[1:]) if exp[:1] in "+-" else ("+", exp)
    return f"{mantissa}e{sign}{int(digits)}"


def go_float(value: float) -> str:
    """fmt's %v of a float64: strconv's 'g' with the shortest digits (ftoa.go: the exponent form
    when the decimal exponent is < -4 or >= 6, the precision the shortest form decides by),
    exponent at least two digits; measured with go1.26.8, kubectl v1.37.2's."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    mantissa, _, exp_text = f"{value:.17e}".partition("e")
    digits = repr(abs(value))           # Python's repr is the shortest round-trip, as Go's -1 precision
    if "e" in digits:
        body, _, e = digits.partition("e")
        decimal_exp = int(e)
        digs = body.replace(".", "")
        point = body.index(".") if "." in body else len(body)
        decimal_exp += point
    else:
        whole, _, frac = digits.partition(".")
        frac = frac.rstrip("0")
        if whole.strip("0"):
            digs = (whole.lstrip("0") + frac)
            decimal_exp = len(whole.lstrip("0"))
        else:
            stripped = frac.lstrip("0")
            decimal_exp = -(len(frac) - len(stripped))
            digs = stripped
    digs = digs.rstrip("0") or "0"
    digs = digs.lstrip("0") or "0"
    sign = "-" if value < 0 else ""
    exp = decimal_exp - 1
    if exp < -4 or exp >= 6:
        head = digs[0] + ("." + digs[1:] if len(digs) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if decimal_exp <= 0:
        return f"{sign}0.{'0' * -decimal_exp}{digs}"
    if decimal_exp >= len(digs):
        return sign + digs + "0" * (decimal_exp - len(digs))
    return f"{sign}{digs[:decimal_exp]}.{digs[decimal_exp:]}"


def _go_type(value) -> str:
    """The Go type of a decoded value, as reflect prints it in errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return "interface {}"


# -- running a template (client-go/util/jsonpath/jsonpath.go) ----------------------------------

_NIL = object()     # a Go nil interface in the result list (JSON null): printed `<nil>`, skipped by Indirect


class _Value(Record):
    """A reflect.Value in a result list: the value, or a template's int/float/bool/text node's (for
    filters: their Go kinds are int, float64, bool, string)."""

    __slots__ = ("value", "kind")

    def __init__(self, value, kind: str | None = None):
        self.value = value
        self.kind = kind        # None: decoded data; "int", "float", "bool", "text": a template literal


class JSONPath:
    """One parsed template. `allow_missing_keys`: a missing field gives no result instead of the
    error `X is not found` (jsonpath.go AllowMissingKeys; kubectl get's default is true)."""

    def __init__(self, template: str, allow_missing_keys: bool = False):
        self.root = parse(template)
        self.allow_missing_keys = allow_missing_keys

    def find(self, data) -> list[list]:
        """FindResults: the result lists of each top-level node (range bodies once per element)."""
        self._stack: list = []
        self._begin = self._in = self._end = 0
        return [[r.value for r in results] for results in self._find(data, self.root.nodes)]

    def _find(self, data, nodes) -> list[list[_Value]]:
        """jsonpath.go FindResults over `nodes` (what Root.Nodes holds at that depth)."""
        self._cur = [_Value(data)]
        full: list[list[_Value]] = []
        i = 0
        while i < len(nodes):
            results = self._walk(self._cur, nodes[i])
            if self._end > 0 and self._end <= self._in:        # an {end}: the current block ends
                self._end -= 1
                break
            if self._begin > 0:                                  # a {range}: loop over its results
                self._begin -= 1
                self._in += 1
                for k, value in enumerate(results):
                    if k == len(results) - 1:
                        self._in -= 1
                    full.extend(self._find(value.value, nodes[i + 1:]))
                break
            full.append(results)
            i += 1
        return full

    def execute(self, data) -> str:
        """Execute and PrintResults: every result printed, a space between the results of one
        node; a map, a list or null as JSON (encoding/json.Marshal), anything else as fmt.Fprint
        (kubectl v1.37.2, measured: null prints `null`, a map `{"a":1}`)."""
        return "".join(" ".join(go_json(v) if isinstance(v, (dict, list)) or v is None else go_text(v)
                                for v in results) for results in self.find(data))

    def _walk(self, values, node):
        t = node.type
        if t == LIST:
            return self._list(values, node)
        if t == TEXT:
            return [_Value(node.value, "text")]
        if t == FIELD:
            return self._field(values, node)
        if t == ARRAY:
            return self._array(values, node)
        if t == FILTER:
            return self._filter(values, node)
        if t == INT:
            return [_Value(node.value, "int") for _ in values]
        if t == BOOL:           # kubectl v1.37.2 prints a bool literal (measured; older walk() had no case)
            return [_Value(node.value, "bool") for _ in values]
        if t == FLOAT:
            return [_Value(node.value, "float") for _ in values]
        if t == WILDCARD:
            return self._wildcard(values)
        if t == RECURSIVE:
            return self._recursive(values)
        if t == UNION:          # evalUnion: an error returns the input beside it
            out = []
            for sub in node.nodes:
                try:
                    out += self._list(values, sub)
                except JSONPathError as exc:
                    raise JSONPathError(str(exc), values) from None
            return out
        if t == IDENTIFIER:
            return self._identifier(values, node)
        raise JSONPathError(f"unexpected Node {node}")

    def _list(self, values, node):
        for sub in node.nodes:
            values = self._walk(values, sub)
        return values

    def _identifier(self, values, node):
        """evalIdentifier: `range` pushes the scope, `end` ends a block or pops it."""
        if node.value == "range":
            self._stack.append(self._cur)
            self._begin += 1
            return values
        if node.value == "end":
            if self._end < self._in:
                self._end += 1
                return []
            if self._stack:
                self._cur = self._stack.pop()
                return []
            raise JSONPathError("not in range, nothing to end")
        raise JSONPathError(f"unrecognized identifier {node.value}")

    def _field(self, values, node):
        """evalField: a map's key (a struct never occurs in decoded JSON); no result anywhere is
        `X is not found` unless missing keys are allowed."""
        if not values:
            return []
        results = []
        for v in values:
            if v.kind is None and isinstance(v.value, dict) and node.value in v.value:
                results.append(_Value(v.value[node.value]))
        if not results and not self.allow_missing_keys:
            raise JSONPathError(f"{node.value} is not found")
        return results

    def _array(self, values, node):
        """evalArray: a slice of each list (nil skipped); bounds as the Go code checks them."""
        out: list[_Value] = []
        for v in values:
            data = v.value
            if data is None and v.kind is None:
                continue
            if not isinstance(data, list) or v.kind is not None:
                raise JSONPathError(f"{_kind_type(v)} is not array or slice", values)
            start, end, step = node.value
            length = len(data)
            # a copy of the node's params (Go copies the [3]ParamsEntry array), defaults filled in
            lo = start.value if start.known else 0
            if lo < 0:
                lo += length
            hi = end.value if end.known else length
            if hi < 0 or (hi == 0 and end.derived):     # `[-1]`: its end, 0, is the length
                hi += length
            if hi == lo:            # zero elements asked for: evalArray returns what it has, at once
                return out
            if lo >= length or lo < 0:
                raise JSONPathError(f"array index out of bounds: index {lo}, length {length}", values)
            if hi > length or hi < 0:
                raise JSONPathError(f"array index out of bounds: index {hi - 1}, length {length}", values)
            if lo > hi:
                raise JSONPathError(f"starting index {lo} is greater than ending index {hi}", values)
            if step.known and step.value <= 0:
                raise JSONPathError("step must be > 0", values)
            out += [_Value(x) for x in data[lo:hi:step.value if step.known else 1]]
        return out

    def _wildcard(self, values):
        """evalWildcard: a map's values (in Go's map order: unordered; sorted here, see docs), a
        list's elements, a string's bytes."""
        out = []
        for v in values:
            data = v.value
            if data is None:
                continue
            out += _children(v)
        return out

    def _recursive(self, values):
        """evalRecursive: each value that has children, then its descendants, depth first."""
        out = []
        for v in values:
            if v.value is None:
                continue
            children = _children(v)
            if children:
                out.append(v)
                out += self._recursive(children)
        return out

    def _filter(self, values, node):
        """evalFilter: the elements of each list for which `left op right` holds (or `left` exists)."""
        left_node, op, right_node = node.value
        out = []
        for v in values:
            data = v.value
            if not isinstance(data, list) or v.kind is not None:
                raise JSONPathError(f"{_go_value(v)} is not array or slice and cannot be filtered", values)
            for element in data:
                item = [_Value(element)]
                try:
                    lefts = self._list(item, left_node)
                    left_error = None
                except JSONPathError as exc:
                    lefts, left_error = exc.values, exc
                if op == "exists":
                    if lefts:
                        out.append(_Value(element))
                    continue
                if left_error is not None:
                    raise JSONPathError(str(left_error), values)
                if not lefts:               # nothing to compare: the element is left out
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time", values)
                try:
                    rights = self._list(item, right_node)
                except JSONPathError as exc:
                    raise JSONPathError(str(exc), values) from None
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time", values)
                if _compare(op, lefts[0], rights[0]):
                    out.append(_Value(element))
        return out


def _children(v: _Value) -> list[_Value]:
    data = v.value
    if isinstance(data, dict):
        return [_Value(data[k]) for k in sorted(data)]
    if isinstance(data, list):
        return [_Value(x) for x in data]
    if isinstance(data, str):
        return [_Value(b, "int") for b in data.encode("utf-8")]       # reflect indexes a string's bytes
    return []


def _kind_type(v: _Value) -> str:
    return {"int": "int", "float": "float64", "bool": "bool", "text": "string"}.get(v.kind or "", _go_type(v.value))


def _go_value(v: _Value) -> str:
    return go_text(v.value)


def _basic(v: _Value):
    """funcs.go basicKind: ('bool'|'int'|'float'|'string', value); a map, list or nil is an
    invalid type for comparison."""
    if v.kind == "int":
        return "int", v.value
    if v.kind == "float":
        return "float", v.value
    if v.kind == "text":
        return "string", v.value
    if v.kind == "bool":
        return "bool", v.value
    value = v.value
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int", value
    if isinstance(value, float):
        return "float", value
    if isinstance(value, str):
        return "string", value
    raise JSONPathError("invalid type for comparison")


def _compare(op, left: _Value, right: _Value) -> bool:
    """template.Equal/Less/... (funcs.go): both sides of one basic kind; ints and floats do not
    compare with each other; `<` on bools is an invalid type."""
    if op not in ("<", ">", "==", "!=", "<=", ">="):
        raise JSONPathError(f"unrecognized filter operator {op}")
    k1, a = _basic(left)
    k2, b = _basic(right)
    if k1 != k2:
        raise JSONPathError("incompatible types for comparison")

    def less():
        if k1 == "bool":
            raise JSONPathError("invalid type for comparison")
        return a < b

    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return less()
    if op == "<=":
        return less() or a == b
    if op == ">":
        return not (less() or a == b)
    return not less()
