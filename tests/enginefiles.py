"""Engine data files of added releases, as `scripts/engine-data --release` writes them, made from
the package's own data (tests/conformance/test_engine_release.py holds the script's real output
to the same slice)."""

import json

from kubectl_kvcache.engine import data, knowledge
from kubectl_kvcache.engine.releases import parse_version


def _rows_at(rows, release):
    v = parse_version(release)
    for row in rows:
        first, until = row[-2], row[-1]
        if v >= parse_version(first) and (until is None or v < parse_version(until)):
            return row
    return None


def release_slice(engine, release, as_release=None):
    """The document of one built-in release (relabelled `as_release`): each span that holds it,
    cut to that release alone."""
    label = as_release or release
    body = {"releases": [label]}
    for key, value in data.parsers()[engine].items():
        if key == "releases":
            continue
        if isinstance(value, dict):
            body[key] = {}
            for name, rows in value.items():
                row = _rows_at(rows, release)
                if row is not None:
                    body[key][name] = [row[:-2] + [label, None]]
        elif value and not isinstance(value[0], list):     # a plain list (the probes): every release's
            body[key] = list(value)
        else:
            row = _rows_at(value, release)
            body[key] = [row[:-2] + [label, None]] if row is not None else []
    return {"schema": knowledge.SCHEMA, "engine": engine, "release": label, "data": body}


def write(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)


# --- malformed files: every one must end in exit 2 with one `error:` line naming it and the field

def _case(cases, cls, label, content, *expect):
    """`content`: a document (written as JSON) or bytes (written as is); `expect`: substrings of
    the error line after the file name (the JSON path first)."""
    cases.append((f"{cls}/{label}", content, expect))


def malformed():
    """[(class/label, content, expected substrings)]: generated from a valid file of vLLM 0.45.0
    (0.33.0's data relabelled), field by field, for every table the package's data has."""
    import copy

    cases = []
    base = release_slice("vllm", "0.33.0", "0.45.0")
    good = json.dumps(base).encode()

    def changed(change):
        doc = copy.deepcopy(base)
        change(doc)
        return doc

    # syntax: not JSON at all, or JSON the plugin refuses before looking at fields
    for label, raw, expect in [
        ("empty", b"", "not JSON"), ("truncated", good[:len(good) // 2], "not JSON"),
        ("not-utf8", b'{"schema": 1, "engine": "\xff"}', "not UTF-8"),
        ("deep", b"[" * 200000 + b"]" * 200000, "not JSON"),
        ("huge-integer", b'{"schema": ' + b"9" * 5000 + b"}", "not JSON"),
        ("duplicate-key", b'{"schema": 1, "schema": 1}', "'schema' is given twice"),
        ("yaml", b"schema: 1\nengine: vllm\n", "not JSON"),
    ]:
        _case(cases, "syntax", label, raw, expect)
    # size: bounded before it is decoded (a valid document padded past the limit)
    _case(cases, "size", "padded", good[:-1] + b" " * (4 * 1024 * 1024) + b"}", "larger than 4 MiB")
    # the document's own fields
    for label, doc in [("list", []), ("string", "vllm"), ("null", None), ("number", 1)]:
        _case(cases, "top", label, json.dumps(doc).encode(), "not a JSON object")
    _case(cases, "top", "unknown-field", changed(lambda d: d.update(extra=1)), "extra: unknown field")
    for label, value in [("99", 99), ("string", "1"), ("true", True), ("float", 1.0), ("null", None)]:
        _case(cases, "schema", label, changed(lambda d, v=value: d.update(schema=v)), "schema: ")
    _case(cases, "schema", "missing", changed(lambda d: d.pop("schema")), "schema: None")
    for label, value in [("tgi", "tgi"), ("upper", "VLLM"), ("number", 1), ("null", None)]:
        _case(cases, "engine", label, changed(lambda d, v=value: d.update(engine=v)), "engine: ")
    for label, value in [("latest", "latest"), ("v-prefix", "v0.45.0"), ("two-parts", "0.45"),
                         ("rc", "0.45.0rc1"), ("dev", "0.45.0.dev0"), ("space", "0.45.0 "), ("newline", "0.45.0\n"),
                         ("number", 45), ("null", None), ("list", ["0.45.0"]), ("long", "1." * 40 + "0")]:
        _case(cases, "release", label, changed(lambda d, v=value: d.update(release=v)), "release: ")
    _case(cases, "release", "missing", changed(lambda d: d.pop("release")), "release: None")
    _case(cases, "top", "comment-not-string", changed(lambda d: d.update(_=[1])), "_: a list")
    for label, value in [("list", []), ("string", "x"), ("null", None)]:
        _case(cases, "data", label, changed(lambda d, v=value: d.update(data=v)), "data: ")
    # data.releases: exactly the file's release
    for label, value in [("empty", []), ("other", ["0.44.0"]), ("two", ["0.45.0", "0.46.0"]), ("string", "0.45.0")]:
        _case(cases, "releases", label, changed(lambda d, v=value: d["data"].update(releases=v)), "data.releases: ")
    _case(cases, "data", "unknown-field", changed(lambda d: d["data"].update(extra={})), "data.extra: unknown field")
    _case(cases, "data", "probes", changed(lambda d: d["data"]["probes"].append("x")), "data.probes: ")
    # every table, in every way its shape can be wrong
    for key, value in base["data"].items():
        if key in ("releases", "probes"):
            continue
        _case(cases, "missing", key, changed(lambda d, k=key: d["data"].pop(k)), f"data.{key}: missing")
        for label, wrong in [("string", "x"), ("null", None), ("number", 3)]:
            _case(cases, "type", f"{key}-{label}", changed(lambda d, k=key, w=wrong: d["data"].update({k: w})),
                  f"data.{key}: ")
        if isinstance(value, dict):
            name = sorted(value)[0] if value else None
            if name is None:
                continue
            rows = value[name]
            at = f'data.{key}["{name}"]' if not name.isidentifier() else f"data.{key}.{name}"

            def row(change, k=key, n=name):
                return changed(lambda d: change(d["data"][k][n]))
        else:
            if not value:
                continue
            rows, at = value, f"data.{key}"

            def row(change, k=key):
                return changed(lambda d: change(d["data"][k]))
        first = rows[0]
        _case(cases, "rows", f"{key}-not-list", row(lambda r: r.__setitem__(0, "x")), f"{at}[0]: a string")
        _case(cases, "rows", f"{key}-short", row(lambda r: r[0].pop(0)), f"{at}[0]: ")
        _case(cases, "rows", f"{key}-long", row(lambda r: r[0].insert(0, "x")), f"{at}[0]: ")
        _case(cases, "rows", f"{key}-two-spans", row(lambda r: r.append(list(r[0]))), f"{at}: 2 spans")
        bound_first, bound_until = f"{at}[0][{len(first) - 2}]", f"{at}[0][{len(first) - 1}]"
        _case(cases, "rows", f"{key}-first", row(lambda r: r[0].__setitem__(-2, "0.44.0")), bound_first)
        _case(cases, "rows", f"{key}-until", row(lambda r: r[0].__setitem__(-1, "0.46.0")), bound_until)
        _case(cases, "rows", f"{key}-first-number", row(lambda r: r[0].__setitem__(-2, 45)), bound_first)
        if len(first) == 3:
            _case(cases, "values", f"{key}-number", row(lambda r: r[0].__setitem__(0, 1)), f"{at}[0][0]: a number")
            _case(cases, "values", f"{key}-list", row(lambda r: r[0].__setitem__(0, ["1"])), f"{at}[0][0]: a list")
        if isinstance(value, dict):
            _case(cases, "names", f"{key}-empty", changed(lambda d, k=key: d["data"][k].update({"": rows})),
                  f'data.{key}[""]: not a name')
            _case(cases, "names", f"{key}-newline", changed(lambda d, k=key: d["data"][k].update({"a\nb": rows})),
                  f'data.{key}["a\\nb"]: not a name')
    # values the model reads: arities, kinds, start-up outcomes, positionals
    for key, bad in [("options", "x"), ("options", "-1"), ("options", "1.5"), ("options", ""), ("entry_options", "x"),
                     ("positionals", "x"), ("positionals", ""), ("kinds", "frob"), ("kinds", "store nosuchtype"),
                     ("kinds", "store opaque:2"), ("kinds", "store int file extra"), ("start_up", "maybe"),
                     ("value_check", "x")]:
        table = base["data"][key]
        if isinstance(table, dict):
            name = sorted(table)[0] if table else "serve --port"
            doc = changed(lambda d, k=key, n=name, b=bad: d["data"][k].update({n: [[b, "0.45.0", None]]}))
            at = (f"data.{key}.{name}" if name.isidentifier() else f'data.{key}["{name}"]') + "[0][0]"
        else:
            doc = changed(lambda d, k=key, b=bad: d["data"][k][0].__setitem__(0, b))
            at = f"data.{key}[0][0]"
        _case(cases, "vocabulary", f"{key}-{bad or 'empty'}", doc, at, "not a value this plugin's engine model reads")
    _case(cases, "names", "option-without-dash",
          changed(lambda d: d["data"]["options"].update(port=[["1", "0.45.0", None]])), "data.options.port: not a name")
    _case(cases, "names", "unknown-entry", changed(lambda d: d["data"]["start_up"].update(
        {"frob --port": [["ok", "0.45.0", None]]})), 'data.start_up["frob --port"]: not a name')
    _case(cases, "names", "unknown-behaviour", changed(lambda d: d["data"]["behaviours"].update(
        frob=[["0.45.0", None]])), "data.behaviours.frob: not a name")
    # a built-in release redefined (the engine data file's one refusal that is not about its shape)
    for engine, release, label, change, at in [
        ("sglang", "0.5.18", "accepts-fp8", lambda d: d["data"]["values"].update(fp8=[["0.5.18", None]]),
         "data.values.fp8"),
        ("sglang", "0.5.18", "drops-a-value", lambda d: d["data"]["values"].pop("fp8_e4m3"), "data.values.fp8_e4m3"),
        ("vllm", "0.29.0", "arity", lambda d: d["data"]["options"]["--kv-cache-dtype"][0].__setitem__(0, "?"),
         'data.options["--kv-cache-dtype"][0][0]'),
        ("vllm", "0.29.0", "kind", lambda d: d["data"]["kinds"].update({"--port": [["store str", "0.29.0", None]]}),
         'data.kinds["--port"]'),
        ("sglang", "0.5.18", "spelled-0.5.18.0", lambda d: (d.update(release="0.5.18.0"),
                                                           d["data"].update(releases=["0.5.18.0"]),
                                                           [r[0].__setitem__(-2, "0.5.18.0") for t in d["data"].values()
                                                            if isinstance(t, dict) for r in t.values()],
                                                           [t[0].__setitem__(-2, "0.5.18.0") for t in d["data"].values()
                                                            if isinstance(t, list) and t and isinstance(t[0], list)]),
         "release: '0.5.18.0' is SGLang 0.5.18"),
    ]:
        doc = release_slice(engine, release)
        change(doc)
        shown = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
        _case(cases, "redefines", f"{engine}-{release}-{label}", doc, at,
              f"{shown} {release}, a release the plugin has built in", "remove the file")
    return cases
