"""kubectl's JSONPath template language (render/jsonpath.py), rule by rule, each case naming the
client-go v0.37.2 function (util/jsonpath) whose rule it holds; the whole language against the
real kubectl: tests/render/test_kubectl_parity.py. Data as Go's unstructured decoding holds it."""

import pytest

from kubectl_kvcache.render import jsonpath
from kubectl_kvcache.render.jsonpath import JSONPath, JSONPathError

DATA = {"kind": "List", "items": [
    {"metadata": {"name": "a", "labels": {"x": "1"}}, "n": 3, "f": 2.5, "ok": True, "none": None, "tags": ["p", "q"]},
    {"metadata": {"name": "b"}, "n": 10, "f": 1e21, "ok": False, "none": None, "tags": []},
    {"metadata": {"name": "c"}, "n": 7, "f": 0.5, "ok": True, "none": None, "tags": ["r"]},
]}


def run(template, data=DATA, allow=False):
    return JSONPath(template, allow_missing_keys=allow).execute(data)


@pytest.mark.parametrize("template, printed", [
    ("{.kind}", "List"),                                            # evalField: a map's key
    ("{.items[*].metadata.name}", "a b c"),                         # parseArray: [*] is [:]; PrintResults: a space between
    ("{.items[0].n}{.items[1].n}", "310"),                          # Execute: the nodes' texts joined as they come
    ("{.items[-1].metadata.name}", "c"),                            # evalArray: a derived end 0 is the length
    ("{.items[0:2].metadata.name}", "a b"),                         # evalArray: a slice
    ("{.items[::2].metadata.name}", "a c"),                         # evalArray: the step
    ("{.items[0,2].metadata.name}", "a c"),                         # parseArray: a union
    ("{.items[0]['metadata']['name']}", "a"),                       # parseArray: dictKeyRex
    ("{range .items[*]}{.metadata.name}:{.n}{\"\\n\"}{end}", "a:3\nb:10\nc:7\n"),   # FindResults: {range}..{end}
    ("{range .items[*]}{.metadata.name}{end} {.kind}", "abc List"),   # evalIdentifier: `end` pops the scope
    ("{.items[?(@.n>5)].metadata.name}", "b c"),                    # evalFilter with template.Greater
    ("{.items[?(@.metadata.name==\"b\")].n}", "10"),                # parseQuote: the right side a string
    ("{.items[?(@.metadata.labels)].metadata.name}", "a"),          # parseFilter: no operator is `exists`
    ("{.items[?(@.tags[0])].metadata.name}", "a b c"),              # evalFilter: `exists` counts the input evalArray returns with its error
    ("{..name}", "a b c"),                                          # evalRecursive then evalField
    ("{.items[0].metadata}", '{"labels":{"x":"1"},"name":"a"}'),    # PrintResults: a map as json.Marshal
    ("{.items[0].tags}", '["p","q"]'),                              # PrintResults: a slice as json.Marshal
    ("{.items[0].none}", "null"),                                   # evalToText: nil is null
    ("{.items[1].f} {.items[0].f}", "1e+21 2.5"),                   # fmt.Fprint of a float64
    ("{.items[0].ok}", "true"),
    ("{true}", "true"),                                             # walk: a BoolNode (evalBool)
    ("{.kind.*}", "76 105 115 116"),                                # evalWildcard: a string's bytes
    ("x{'y'}z", "xyz"),                                             # parseText and UnquoteExtend: single quotes
    ("{\"\\t\\u00e9\"}", "\té"),                                    # UnquoteExtend: strconv's escapes
])
def test_printed_as_kubectl_prints(template, printed):
    assert run(template) == printed


@pytest.mark.parametrize("template, message", [
    ("{.kind", "unclosed action"),                                  # parseInsideAction
    ("{.items[}", "unterminated array"),                            # parseArray
    ("{.items[x]}", "invalid array index x"),                       # parseArray: sliceOperatorRex
    ("{#}", "unrecognized character in action: U+0023 '#'"),        # parseInsideAction: %#U
    ('{"abc}', "unterminated quoted string"),                       # parseQuote
    ("{....a}", "invalid multiple recursive descent"),              # parseRecursive
    ("{.items[?(@.a==1}", "unterminated filter"),                   # parseFilter
    ("{.items[?(@.a==1)}", "unclosed array expect ]"),              # parseFilter
])
def test_parse_errors(template, message):
    with pytest.raises(JSONPathError) as exc:
        jsonpath.parse(template)
    assert str(exc.value) == message


@pytest.mark.parametrize("template, message", [
    ("{.nope}", "nope is not found"),                                        # evalField without missing keys
    ("{.items[5].n}", "array index out of bounds: index 5, length 3"),       # evalArray's bounds
    ("{.items[-9].n}", "array index out of bounds: index -6, length 3"),
    ("{.items[2:1].n}", "starting index 2 is greater than ending index 1"),
    ("{.items[0:2:0].n}", "step must be > 0"),
    ("{.kind[0]}", "string is not array or slice"),
    ("{end}", "not in range, nothing to end"),                               # evalIdentifier
    ("{.items[?(@.n==\"3\")].n}", "incompatible types for comparison"),      # template.Equal: int64 and string
    ("{.items[?(@.ok<true)].n}", "invalid type for comparison"),             # template.Less on bools
    ("{.items[?(@.tags[*]==\"p\")].n}", "can only compare one element at a time"),
])
def test_execution_errors(template, message):
    with pytest.raises(JSONPathError) as exc:
        run(template)
    assert str(exc.value) == message


def test_missing_keys_allowed_print_nothing():
    """AllowMissingKeys(true), kubectl get's default (--allow-missing-template-keys)."""
    assert run("{.nope}{.items[*].nope}", allow=True) == ""
    assert run("{.items[*].metadata.labels.x}", allow=True) == "1"
    assert run("{.items[?(@.nope==1)].metadata.name}", allow=True) == ""     # evalFilter: no left side: left out


@pytest.mark.parametrize("value, text", [(3.0, "3"), (0.5, "0.5"), (1e21, "1e+21"), (1e20, "1e+20"),
                                         (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
                                         (1e-5, "1e-05"), (0.0001, "0.0001"), (-2.25, "-2.25")])
def test_go_float(value, text):
    """fmt's %v of a float64 (strconv 'g', shortest: exponent below -4 or from 6), as go1.26.8's
    fmt.Println prints them (measured)."""
    assert jsonpath.go_float(value) == text


def test_go_json_escapes_as_encoding_json():
    """json.Marshal: keys sorted, <, > and & escaped, U+2028, control characters as \\u00XX."""
    assert jsonpath.go_json({"b": "<&>", "a": "\u2028\x01"}) == '{"a":"\\u2028\\u0001","b":"\\u003c\\u0026\\u003e"}'
