"""Releases added from files (what `scripts/engine-data --release` writes): each file checked
field by field, then merged into the built-in data (add_releases). The files are untrusted
input: whoever can write the user data directory, $KVCACHE_ENGINE_DATA or a file handed over
may have written one. The shape each `data` field must have is read off the built-in data (so a
field the generator adds is checked with no change here); the vocabularies the model replays
(arities, kinds, start-up outcomes) are kvparse's. A release the plugin has built in may not be
redefined: a file for it is accepted only when it says exactly what the built-in data says (see
docs/engines.md).

Every refusal is an EngineDataError whose message starts `FILE: JSON.PATH: `.
"""

from __future__ import annotations

import json
import re

from kubectl_kvcache.engine import data, knowledge, kvparse, releases
from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.releases import DISPLAY_NAMES, DTYPE_OPTION, ENGINES, _at, data_version, parse_version

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, NoReturn

# The fields of the document scripts/engine-data --release writes ("_" is its comment).
FIELDS = ("schema", "engine", "release", "data", "_")

# A release as the engines publish it: 0.34.0, 0.10.1.1, 0.5.4.post3 (no `v`, no rc/dev builds).
_RELEASE = re.compile(r"\d{1,4}\.\d{1,4}\.\d{1,4}(?:\.\d{1,4})?(?:\.post\d{1,4})?")

# kvparse's "<action> [<type>] [file]" actions (docs/engines.md, `kinds`) and start-up outcomes.
_ACTIONS = ("store", "append", "extend", "custom", "fails", "help", "version")
_NAME_MAX = 200


def is_release(text) -> bool:
    """Whether `text` is a release as a file may name it (scripts/engine-data checks its label
    with this before reading a parser)."""
    return isinstance(text, str) and bool(_RELEASE.fullmatch(text)) and parse_version(text) is not None


class EngineDataError(ValueError):
    """An added release file the plugin cannot use: the message names the file and the field."""


def path_of(parts) -> str:
    """`data.options["--kv-cache-dtype"][0][1]`: a JSON path, keys that are not plain words quoted
    (as JSON strings: control characters escaped, so the error stays one line)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += ("." if out else "") + part
        else:
            text = json.dumps(part)
            out += "[" + (text if len(text) <= 80 else text[:76] + '..."') + "]"
    return out


def _shown(value, limit=60) -> str:
    """A value from the file as the error line shows it: repr (control characters escaped), cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _type(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _fail(name, parts, what) -> NoReturn:
    raise EngineDataError(f"{name}: {path_of(parts)}: {what}")


def _builtin() -> dict[str, dict[str, Any]]:
    """The built-in data alone ({engine: tables}), never a merge of earlier added files."""
    return data.builtin_parsers()


def _row_length(key):
    """2 (presence spans: [first, until]) or 3 ([value, first, until]) for a table of the built-in
    data, from whichever engine's data has rows for it; None when neither has any."""
    for engine_data in _builtin().values():
        value = engine_data.get(key)
        tables = value.values() if isinstance(value, dict) else [value] if isinstance(value, list) else []
        for rows in tables:
            for row in rows if isinstance(rows, list) else ():
                if isinstance(row, list):
                    return len(row)
    return None


def _entries():
    """The entry points the model knows (the parsers' names in positionals, entry_options, start_up)."""
    names = {entry for _, entry in data.ENTRY_PROGRAMS.values()}
    names |= {entry for _, _, entry in data.ENTRY_MODULES.values()}
    for engine_data in _builtin().values():
        names |= set(engine_data.get("positionals", {}))
    return names


def _arity_ok(text, removal=False):
    return (text in kvparse._NARGS or text == "0" or (text.isdigit() and len(text) <= 2)
            or (removal and text == "-"))


def _kind_ok(text, probes):
    words = text.split(" ")
    if words[0] not in _ACTIONS or len(words) > 3:
        return False
    rest = words[1:]
    if rest and rest[-1] == "file":
        rest = rest[:-1]
    if not rest:
        return True
    kind = rest[0]
    if kind.startswith("opaque:"):
        answers = kind[len("opaque:"):]
        return len(answers) == len(probes) and set(answers) <= {"0", "1"}
    return kind in kvparse.TYPES


def _value_ok(key, value, probes):
    """Whether `value` (a span's value) means something for the table `key`; tables the model
    does not interpret take any string."""
    if key == "options":
        return _arity_ok(value)
    if key == "entry_options":
        return _arity_ok(value, removal=True)
    if key == "positionals":
        return bool(value) and all(a == "-" or _arity_ok(a) for a in value.split(" "))
    if key == "kinds":
        return _kind_ok(value, probes)
    if key == "start_up":
        return value in ("ok", "reads") or value.startswith("dies: ")
    if key == "value_check":
        return value in ("parse", "start")
    return True


def _name_ok(key, name, entries, behaviours):
    if not name or len(name) > _NAME_MAX or name != name.strip() or "\n" in name:
        return False
    if key in ("options", "kinds", "choices", "fixed_choices", "required"):
        return name.startswith("-") and " " not in name
    if key in ("entry_options", "start_up", "start_up_values"):
        entry, _, option = name.partition(" ")
        return entry in entries and option.startswith("-") and " " not in option
    if key == "positionals":
        return name in entries
    if key == "values":
        return " " not in name and "\t" not in name
    if key == "behaviours":
        return name in behaviours
    return True


def _check_rows(name, parts, rows, length, release, value_ok):
    if not isinstance(rows, list):
        _fail(name, parts, f"{_type(rows)}, not a list of spans ([value, {release!r}, null])")
    if len(rows) > 1:
        _fail(name, parts, f"{len(rows)} spans: a file of one release holds at most one")
    for i, row in enumerate(rows):
        here = parts + [i]
        if not isinstance(row, list):
            _fail(name, here, f"{_type(row)}, not a span ([value, first, until])")
        if length is not None and len(row) != length:
            shape = "[first, until]" if length == 2 else "[value, first, until]"
            _fail(name, here, f"{len(row)} entries, not {length} ({shape})")
        if len(row) not in (2, 3):
            _fail(name, here, f"{len(row)} entries, not a span ([value, first, until] or [first, until])")
        if row[-2] != release:
            _fail(name, here + [len(row) - 2], f"{_shown(row[-2])}, not the file's release {release!r}")
        if row[-1] is not None:
            _fail(name, here + [len(row) - 1], f"{_shown(row[-1])}, not null (a file of one release "
                                               f"holds spans from it on)")
        if len(row) == 3:
            if not isinstance(row[0], str):
                _fail(name, here + [0], f"{_type(row[0])}, not a string")
            if not value_ok(row[0]):
                _fail(name, here + [0], f"{_shown(row[0])} is not a value this plugin's engine model reads")


def check_body(name, engine, release, body):
    """Every field of `data` against the built-in data's shape and the model's vocabularies."""
    builtin = _builtin()[engine]
    if body.get("releases") != [release]:
        _fail(name, ["data", "releases"], f"{_shown(body.get('releases'))}, not [{release!r}] (the file's release)")
    for key in body:
        if key not in builtin:
            _fail(name, ["data", key], f"unknown field (this plugin's engine data has "
                                       f"{', '.join(sorted(builtin))})")
    for key in builtin:
        if key not in body:
            _fail(name, ["data", key], "missing (write the file again with this plugin's scripts/engine-data)")
    probes = list(builtin.get("probes", ()))
    if body.get("probes", probes) != probes:
        _fail(name, ["data", "probes"], "not the values this plugin's data was probed with (write the file "
                                        "again with this plugin's scripts/engine-data)")
    entries = _entries()
    behaviours = {n for d in _builtin().values() for n in d.get("behaviours", {})}
    for key, value in body.items():
        if key in ("releases", "probes"):
            continue
        parts = ["data", key]
        length = _row_length(key)

        def value_ok(v, key=key):
            return _value_ok(key, v, probes)

        if isinstance(builtin[key], dict):
            if not isinstance(value, dict):
                _fail(name, parts, f"{_type(value)}, not an object of spans")
            for entry, rows in value.items():
                if not _name_ok(key, entry, entries, behaviours):
                    _fail(name, parts + [entry], "not a name this table holds")
                _check_rows(name, parts + [entry], rows, length, release, value_ok)
        elif isinstance(builtin[key], list) and (not builtin[key] or isinstance(builtin[key][0], list)):
            _check_rows(name, parts, value, length, release, value_ok)
        elif value != builtin[key]:
            _fail(name, parts, "not this plugin's (write the file again with this plugin's scripts/engine-data)")


def check_document(name, doc):
    """(engine, release, data) of one added release file, or EngineDataError naming the field."""
    _builtin()
    if not isinstance(doc, dict):
        raise EngineDataError(f"{name}: {_type(doc)}, not a JSON object (write it with scripts/engine-data "
                              f"--release)")
    for key in doc:
        if key not in FIELDS:
            _fail(name, [key], f"unknown field (an engine data file has {', '.join(FIELDS[:-1])})")
    schema = doc.get("schema")
    if type(schema) is not int or schema != knowledge.SCHEMA:
        _fail(name, ["schema"], f"{_shown(schema)}, this plugin reads schema {knowledge.SCHEMA} (write it "
                                f"again with this plugin's scripts/engine-data)")
    engine = doc.get("engine")
    if not isinstance(engine, str) or engine not in ENGINES:
        _fail(name, ["engine"], f"{_shown(engine)} is not one of {', '.join(ENGINES)}")
    release = doc.get("release")
    if not is_release(release):
        _fail(name, ["release"], f"{_shown(release)} is not a release number as the engines publish them "
                                 f"(0.34.0, 0.10.1.1, 0.5.4.post3)")
    if not isinstance(doc.get("_", ""), str):
        _fail(name, ["_"], f"{_type(doc['_'])}, not a string (the comment scripts/engine-data writes)")
    body = doc.get("data")
    if not isinstance(body, dict):
        _fail(name, ["data"], f"{_type(body)}, not an object")
    check_body(name, engine, release, body)
    builtin_release = next((r for r in _builtin()[engine]["releases"]
                            if parse_version(r) == parse_version(release)), None)
    if builtin_release is not None and builtin_release != release:
        _fail(name, ["release"], f"{release!r} is {DISPLAY_NAMES[engine]} {builtin_release}, a release the plugin has "
                                 f"built in, spelled otherwise; {_ADD_ONLY}")
    if builtin_release is not None:
        _check_not_redefined(name, engine, builtin_release, release, body)
    return engine, release, body


def builtin_slice(engine, release) -> dict:
    """The built-in data of one built-in release, cut to it alone: what scripts/engine-data
    --release writes for it (tests/conformance/test_engine_release.py holds the two equal)."""
    at = parse_version(release)

    def row_at(rows):
        for row in rows:
            if _at(at, row[-2]) and (row[-1] is None or not _at(at, row[-1])):
                return row[:-2] + [release, None]
        return None

    out: dict[str, Any] = {"releases": [release]}
    for key, value in _builtin()[engine].items():
        if key == "releases":
            continue
        if isinstance(value, dict):
            out[key] = {n: [row] for n, rows in value.items() for row in [row_at(rows)] if row is not None}
        elif value and not isinstance(value[0], list):
            out[key] = list(value)
        else:
            row = row_at(value)
            out[key] = [row] if row is not None else []
    return out


def _first_difference(mine, theirs, parts):
    """The path of the first place two JSON values differ (in key order), else None."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in sorted(set(mine) | set(theirs)):
            if key not in mine or key not in theirs:
                return parts + [key]
            found = _first_difference(mine[key], theirs[key], parts + [key])
            if found:
                return found
        return None
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            found = _first_difference(a, b, parts + [i])
            if found:
                return found
        return None
    return None if mine == theirs and type(mine) is type(theirs) else parts


def _check_not_redefined(name, engine, builtin_release, release, body):
    """A release the plugin has built in: the file must say what the built-in data says, or
    it is refused (no silent override of what was read from the released wheel)."""
    theirs = builtin_slice(engine, builtin_release)
    differs = _first_difference(body, theirs, ["data"])
    if differs is None:
        return
    mine_at: object = body
    theirs_at: object = theirs
    for part in differs[1:]:
        mine_at = mine_at[part] if isinstance(mine_at, (dict, list)) and _has(mine_at, part) else _MISSING
        theirs_at = theirs_at[part] if isinstance(theirs_at, (dict, list)) and _has(theirs_at, part) else _MISSING
    if theirs_at is _MISSING:
        what = "its built-in data has no such entry"
    elif mine_at is _MISSING:
        what = f"the file leaves out its built-in {_shown(theirs_at)}"
    else:
        what = f"the file has {_shown(mine_at)} where its built-in data has {_shown(theirs_at)}"
    raise EngineDataError(
        f"{name}: {path_of(differs)}: redefines {DISPLAY_NAMES[engine]} {builtin_release}, a release the plugin has "
        f"built in (read from its released wheel): {what}; {_ADD_ONLY}")


_MISSING = object()
_ADD_ONLY = ("an engine data file may add releases the plugin does not have, never change one it has: remove the "
             "file (or report the built-in data as wrong)")


def _has(container, part):
    if isinstance(container, dict):
        return part in container
    return isinstance(part, int) and 0 <= part < len(container)


# --- merging an added release into the data -------------------------------------------------

def _is_rows(value):
    """Spans as parsers.json stores them: [[value, first, until], ...] or [[first, until], ...]."""
    return isinstance(value, list) and all(
        isinstance(r, list) and len(r) >= 2 and isinstance(r[-2], str) and (r[-1] is None or isinstance(r[-1], str))
        for r in value)


def _rows_at(rows, release):
    for row in rows:
        first, until = row[-2], row[-1]
        if _at(release, first) and (until is None or not _at(release, until)):
            return row[0] if len(row) > 2 else True
    return None


def _merge_rows(old_rows, old_releases, new_rows, new_releases, union):
    presence = any(len(r) == 2 for r in list(old_rows) + list(new_rows))
    per = {r: _rows_at(old_rows, parse_version(r)) for r in old_releases}
    per.update({r: _rows_at(new_rows, parse_version(r)) for r in new_releases})
    rows, current = [], None
    for release in union:
        value = per.get(release)
        if current is not None and current[0] != value:
            current[2], current = release, None
        if value is not None and current is None:
            current = [value, release, None]
            rows.append(current)
    return [r[1:] for r in rows] if presence else rows


def _merge(builtin, added):
    """One engine's data with an added release's merged in, key by key, whatever keys the
    generator writes: {name: spans} tables and span lists are re-spanned over the union of the
    releases (the added release's own facts win for it); other values stay the built-in ones."""
    old_releases, new_releases = list(builtin["releases"]), list(added["releases"])
    union = sorted(set(old_releases) | set(new_releases), key=data_version)   # check_document refused any that does not parse
    out: dict[str, Any] = {"releases": union}
    for key in sorted(set(builtin) | set(added)):
        if key == "releases":
            continue
        old, new = builtin.get(key), added.get(key)
        if isinstance(old, dict) or isinstance(new, dict):
            old, new = old or {}, new or {}
            out[key] = {name: merged for name in sorted(set(old) | set(new))
                        for merged in [_merge_rows(old.get(name, []), old_releases, new.get(name, []),
                                                   new_releases, union)] if merged}
        elif _is_rows(old) or _is_rows(new):
            out[key] = _merge_rows(old or [], old_releases, new or [], new_releases, union)
        else:
            out[key] = old if key in builtin else new
    return out


def add_releases(documents):
    """The engine data becomes the built-in data with these added releases merged in, in order (a
    later file wins for the same release); `documents` is [(file name, decoded JSON)], [] for the
    built-in data alone. Each file is checked field by field first (releasefile: a built-in
    release may not be redefined). Raises EngineDataError naming the file and field of the first
    bad one; then the data is left as it was."""
    merged = {e: dict(_builtin()[e]) for e in releases.ENGINES}
    added: dict[str, dict[str, str]] = {e: {} for e in releases.ENGINES}     # engine -> {release: its file}
    spelled: dict = {}     # (engine, Version) -> (release text, file): one release, one spelling
    for name, doc in documents:
        engine, release, body = check_document(name, doc)
        earlier = spelled.setdefault((engine, parse_version(release)), (release, name))
        if earlier[0] != release:
            raise EngineDataError(f"{name}: release: {release!r} is the release {earlier[0]!r} of {earlier[1]}: "
                                  f"spell it the same way")
        try:
            merged[engine] = _merge(merged[engine], body)
        except Exception as exc:    # untrusted input the checks let through: still one line, naming it
            raise EngineDataError(f"{name}: data: not what scripts/engine-data writes ({exc.__class__.__name__})") from exc
        added[engine][release] = name
    previous = (data._MERGED, releases._ADDED)
    _use(*((merged, added) if documents else (None, {})))
    for engine, found in added.items():
        for release, name in found.items():
            try:
                _try(releases.profile(engine, parse_version(release)))
            except Exception as exc:
                _use(*previous)
                raise EngineDataError(f"{name}: data: release {release} cannot be judged with it "
                                      f"({exc.__class__.__name__}: {str(exc)[:120]!r})") from exc


def _use(merged, added):
    """Judge with this data from now on, nothing derived from the data before kept (profiles,
    kvparse's facts)."""
    releases.use_added(merged, added)
    kvparse._FACTS.clear()


def _try(prof):
    """Replay a few argvs on an added release, so that data the checks let through but the model
    cannot use fails here, naming its file, and not later as an internal error."""
    kvparse.facts(prof)
    for words in ((DTYPE_OPTION, "auto"), (DTYPE_OPTION,), ("--kv", "x"), ("m", "--port", "1", "--x.y", "2")):
        for entry in (None,) + tuple(e for e, _ in prof.entry_positionals):
            kvparse.parse([Token(w, "args", i) for i, w in enumerate(words)], prof, entry=entry)
