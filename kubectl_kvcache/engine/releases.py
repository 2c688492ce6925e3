"""Engine knowledge at one release: accepted values, `--kv...` options, parser features.

Everything here is derived from the tables in `engine_data`; nothing is decided by if-chains
on version numbers.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kubectl_kvcache.engine import data
from kubectl_kvcache.record import Record

ENGINES = ("vllm", "sglang")
DISPLAY_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
DTYPE_OPTION = "--kv-cache-dtype"

_VERSION_RE = re.compile(r"^v?(\d+(?:\.\d+){0,3})(?:\.?post(\d+))?$")


class _Ordered(Record):
    """The slot of Version's comparison key, (parts, post), built once: versions are compared
    many times while judging (`_at`, `_in_spans`). Kept out of Version's own `__slots__`, which
    are its fields (repr, replace)."""

    __slots__ = ("_order",)


class Version(_Ordered):
    """A release number: up to four numeric parts and an optional `.postN` (after the release)."""

    __slots__ = ("parts", "post", "text")
    _uncompared = ("text",)

    def __init__(self, parts: tuple[int, int, int, int], post: int = 0, text: str = ""):
        self.parts = parts
        self.post = post
        self.text = text  # not compared
        self._order = (parts, post)

    def _key(self):
        return self._order

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._order == other._order

    def __hash__(self):
        return hash(self._order)

    def __lt__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._order < other._order

    def __le__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._order <= other._order

    def __gt__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._order > other._order

    def __ge__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._order >= other._order

    def __str__(self):
        return self.text


@lru_cache(maxsize=None)
def parse_version(text) -> Version | None:
    """`0.29.0`, `v0.5.4.post3`, `0.10.1.1` -> Version; anything else (rc, dev, words) -> None."""
    if not text:
        return None
    m = _VERSION_RE.match(str(text).strip())
    if not m:
        return None
    nums = [int(x) for x in m.group(1).split(".")]
    nums += [0] * (4 - len(nums))
    post = int(m.group(2)) + 1 if m.group(2) is not None else 0
    return Version(tuple(nums), post, str(text).strip().lstrip("v"))


def normalise_engine(name) -> str | None:
    """`vLLM`, `vllm`, `SGLang`, `sglang` -> `vllm` / `sglang`; anything else -> None."""
    if not name:
        return None
    low = str(name).strip().lower()
    return low if low in ENGINES else None


class KvOption(Record):
    __slots__ = ("name", "takes_value", "uncertain")

    def __init__(self, name: str, takes_value: bool | None, uncertain: bool = False):
        self.name = name
        self.takes_value = takes_value
        self.uncertain = uncertain  # kept for compatibility: every option is now read from a real parser


class Profile(Record):
    """What one engine release does with `--kv...` tokens."""

    __slots__ = ("engine", "version", "has_flag", "accepted", "options", "underscores", "config_file",
                 "dotted_json", "final_value_only", "platform_values", "serve_model_option",
                 "serve_model_refused", "dotted_single_dash", "serve_model_alias", "required_options",
                 "choices", "table", "entry_tables", "entry_positionals", "sampled", "judged_with",
                 "newer_than_data", "added")

    def __init__(self, engine: str, version: Version, has_flag: bool, accepted: frozenset,
                 options: tuple[KvOption, ...], underscores: bool, config_file: bool, dotted_json: bool,
                 final_value_only: bool, platform_values: bool, serve_model_option: bool = False,
                 serve_model_refused: bool = False, dotted_single_dash: bool = False,
                 serve_model_alias: bool = False, required_options: tuple[str, ...] = (),
                 choices: tuple[tuple[str, tuple[str, ...]], ...] = (), table: tuple[tuple[str, str], ...] = (),
                 entry_tables: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (),
                 entry_positionals: tuple[tuple[str, tuple[str, ...]], ...] = (), sampled: bool = False,
                 judged_with: str = "", newer_than_data: bool = False, added: bool = False):
        self.engine = engine
        self.version = version
        self.has_flag = has_flag
        self.accepted = accepted
        self.options = options
        self.underscores = underscores
        self.config_file = config_file
        self.dotted_json = dotted_json
        self.final_value_only = final_value_only
        self.platform_values = platform_values
        self.serve_model_option = serve_model_option    # vllm serve moves `--model M` to the model positional
        self.serve_model_refused = serve_model_refused  # vllm serve dies on a `--model` token
        self.dotted_single_dash = dotted_single_dash    # dotted JSON also for `-x.y` tokens (and `-1.5`)
        self.serve_model_alias = serve_model_alias      # sglang serve reads --model as well as --model-path
        self.required_options = required_options        # "name/alias" of every required option
        self.choices = choices                          # string choices of other options
        self.table = table                              # every option of the parser: (name, arity)
        self.entry_tables = entry_tables                # entry -> differing rows
        self.entry_positionals = entry_positionals      # entry -> positional arities
        self.sampled = sampled                          # this release's own parser was read
        self.judged_with = judged_with                  # the release whose parser stands for this one
        self.newer_than_data = newer_than_data          # later than every release the data has
        self.added = added                              # judged_with comes from an added release file

    def options_for(self, entry=None):
        """{option name: arity} of the parser `entry` runs (the primary entry's when None)."""
        table = dict(self.table)
        for name, arity in dict(self.entry_tables).get(entry, ()):
            if arity == "-":
                table.pop(name, None)
            else:
                table[name] = arity
        return table

    def positionals(self, entry):
        """The positional arities of `entry`'s parser, or None when not known."""
        return dict(self.entry_positionals).get(entry)

    @property
    def label(self):
        return f"{DISPLAY_NAMES[self.engine]} {self.version}"

    @property
    def beyond_data(self):
        """Why this release is judged with another one's parser when it is newer than the data, or ''."""
        if not self.newer_than_data:
            return ""
        return (f"{self.label} is newer than the engine data: judged with {DISPLAY_NAMES[self.engine]} "
                f"{self.judged_with}'s parser (add its release: scripts/engine-data --release)")

    def option(self, name) -> KvOption | None:
        return next((o for o in self.options if o.name == name), None)

    def prefix_matches(self, prefix) -> tuple[KvOption, ...]:
        return tuple(o for o in self.options if o.name.startswith(prefix))


def _at(version, since) -> bool:
    return version >= parse_version(since)


def _in_spans(version, spans):
    """The value of the span ([value, first, until]) holding `version`, else None."""
    for value, first, until in spans:
        if _at(version, first) and (until is None or not _at(version, until)):
            return value
    return None


def _sample(engine, version):
    """The sampled release whose parser stands for `version`: the latest one at or before it (the
    first one for older releases; those have has_flag False or behave like it)."""
    sampled = data.parsers()[engine]["releases"]
    best = sampled[0]
    for release in sampled:
        if _at(version, release):
            best = release
    return parse_version(best)


@lru_cache(maxsize=None)
def profile(engine: str, version: Version) -> Profile:
    accepted = set()
    for since, added, removed in data.ACCEPTED_VALUES[engine]:
        if _at(version, since):
            accepted |= set(added)
            accepted -= set(removed)
    real = data.parsers()[engine]
    at = _sample(engine, version)
    from_file = str(at) in _ADDED.get(engine, ())
    if from_file:   # an added release: its own parser's values (ACCEPTED_VALUES ends at the built-in data)
        accepted = {value for value, rows in real["values"].items() if _in_spans(at, [[True] + r for r in rows])}
    table = tuple(sorted((name, arity) for name, rows in real["options"].items()
                         for arity in [_in_spans(at, rows)] if arity is not None))
    differs = {}
    for key, rows in real["entry_options"].items():
        entry, name = key.split(" ", 1)
        arity = _in_spans(at, rows)
        if arity is not None:
            differs.setdefault(entry, []).append((name, arity))
    positionals = []
    for entry, rows in real["positionals"].items():
        # an entry point older releases do not have (vllm serve before 0.5.3) is judged as it first was
        found = _in_spans(at, rows) if _in_spans(at, rows) is not None else rows[0][0]
        if found is not None:
            positionals.append((entry, tuple(a for a in found.split() if a != "-")))
    if not _at(version, data.FLAG_SINCE[engine]):
        table = tuple(row for row in table if row[0] != DTYPE_OPTION)   # older than the flag itself
    options = tuple(KvOption(name, arity != "0") for name, arity in table if name.startswith("--kv"))
    features = data.FEATURES.get(engine, {})

    def feature(name):
        return name in features and _at(version, features[name])

    return Profile(
        engine=engine,
        version=version,
        has_flag=_at(version, data.FLAG_SINCE[engine]),
        accepted=frozenset(accepted),
        options=tuple(options),
        underscores=feature("underscores"),
        config_file=feature("config_file"),
        dotted_json=feature("dotted_json"),
        final_value_only=feature("final_value_only"),
        platform_values=feature("platform_values"),
        serve_model_option=feature("serve_model_option"),
        serve_model_refused=feature("serve_model_refused") and not feature("serve_model_option"),
        serve_model_alias=feature("serve_model_alias"),
        dotted_single_dash=feature("dotted_single_dash"),
        required_options=tuple(sorted(name for name, rows in real.get("required", {}).items()
                                      if _in_spans(at, [[True] + r for r in rows]))),
        choices=tuple(sorted((name, tuple(found.split(" "))) for name, rows in real.get("choices", {}).items()
                             for found in [_in_spans(at, rows)] if found is not None)),
        table=table,
        entry_tables=tuple((e, tuple(rows)) for e, rows in sorted(differs.items())),
        entry_positionals=tuple(positionals),
        sampled=str(at) == str(version) or at == version,
        judged_with=str(at),
        newer_than_data=version > parse_version(real["releases"][-1]) if real["releases"] else False,
        added=from_file,
    )


# --- releases added from files ------------------------------------------------------------

class EngineDataError(ValueError):
    """An added release file the plugin cannot use: the message names the file and the field."""


_ADDED: dict[str, dict[str, str]] = {}   # engine -> {release: the file it came from}


def _is_rows(value):
    """Spans as parsers.py stores them: [[value, first, until], ...] or [[first, until], ...]."""
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
    union = sorted(set(old_releases) | set(new_releases), key=parse_version)
    out = {"releases": union}
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


def _check_document(name, doc):
    """The engine and the engine data of one added release file, or EngineDataError."""
    if not isinstance(doc, dict):
        raise EngineDataError(f"{name}: not a JSON object (write it with scripts/engine-data --release)")
    if doc.get("schema") != data.ENGINE_DATA_SCHEMA:
        raise EngineDataError(f"{name}: schema: {doc.get('schema')!r}, this plugin reads schema "
                              f"{data.ENGINE_DATA_SCHEMA} (write it again with this plugin's scripts/engine-data)")
    engine = doc.get("engine")
    if engine not in ENGINES:
        raise EngineDataError(f"{name}: engine: {engine!r} is not one of {', '.join(ENGINES)}")
    body = doc.get("data")
    if not isinstance(body, dict):
        raise EngineDataError(f"{name}: data: not an object")
    found = body.get("releases")
    if not isinstance(found, list) or not found or not all(isinstance(r, str) and parse_version(r) for r in found):
        raise EngineDataError(f"{name}: data.releases: not a list of release numbers")
    for key, value in body.items():
        if key == "probes":
            # the values each option's type answers were probed with (kinds' answers index into
            # them): the same list as the built-in data's, or the answers would be misread
            if value != list(data.parsers()[engine].get("probes", ())):
                raise EngineDataError(f"{name}: data.probes: not the values this plugin's data was probed with "
                                      f"(write it again with this plugin's scripts/engine-data)")
            continue
        if key != "releases" and not (isinstance(value, dict) and all(_is_rows(v) for v in value.values())
                                      or _is_rows(value)):
            raise EngineDataError(f"{name}: data.{key}: not spans of releases as scripts/engine-data writes them")
    return engine, body


def add_releases(documents):
    """The engine data becomes the built-in data with these added releases merged in, in order (a
    later file wins for the same release); `documents` is [(file name, decoded JSON)], [] for the
    built-in data alone. Raises EngineDataError naming the file and field of the first bad one;
    then the data is left as it was."""
    global _ADDED
    data.parsers()
    merged = {e: dict(data._PARSERS[e]) for e in ENGINES}
    added = {e: {} for e in ENGINES}
    for name, doc in documents:
        engine, body = _check_document(name, doc)
        try:
            merged[engine] = _merge(merged[engine], body)
        except (TypeError, KeyError, AttributeError, IndexError) as exc:
            raise EngineDataError(f"{name}: data: not what scripts/engine-data writes ({exc.__class__.__name__})")
        for release in body["releases"]:
            added[engine][release] = name
    previous = (data._MERGED, _ADDED)
    data._MERGED, _ADDED = (merged, added) if documents else (None, {})
    profile.cache_clear()
    for engine, releases in added.items():
        for release, name in releases.items():
            try:
                profile(engine, parse_version(release))
            except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
                data._MERGED, _ADDED = previous
                profile.cache_clear()
                raise EngineDataError(f"{name}: data: release {release} cannot be judged with it "
                                      f"({exc.__class__.__name__}: {exc})")


def known_releases(engine):
    """[(release, the file it was added from, or '' when built in)] in release order."""
    return [(r, _ADDED.get(engine, {}).get(r, "")) for r in data.parsers()[engine]["releases"]]


def image_pythons(engine, version) -> tuple[str, ...]:
    """The CPython minor releases (`3.12`) the images of this engine release may run."""
    found = ()
    for since, minors in data.IMAGE_PYTHONS.get(engine, ()):
        if _at(version, since) or not found:
            found = minors
    return tuple(found)


def minimum_version(engine) -> Version:
    return parse_version(data.OPERATOR_MINIMUM[engine])


# --- where a version comes from -----------------------------------------------------------

# The one vocabulary for where the plugin read an engine version, in the order it is tried.
SPEC_VERSION, SPEC_IMAGE, POD_IMAGE, IMAGE_TAG, MINIMUM = (
    "spec.engine.version", "spec.engine.image", "Pod image", "image tag", "operator minimum")


def resolve_versions(engine, declared=None, images=()) -> tuple[tuple[Version, str], ...]:
    """The releases of `engine` to judge against, each with where it was read: the declared
    version; else the tags of the first group of `images` ((source, [image refs]) in order)
    that names any (all distinct ones, in order); else the operator's minimum."""
    if declared:
        parsed = parse_version(declared)
        if parsed:
            return ((parsed, SPEC_VERSION),)
    for source, refs in images:
        found = []
        for ref in refs:
            hit = version_from_image(ref, engine) if ref else None
            if hit and (hit[1], source) not in found:
                found.append((hit[1], source))
        if found:
            return tuple(found)
    return ((minimum_version(engine), MINIMUM),)


# --- images -------------------------------------------------------------------------------

class Image(Record):
    __slots__ = ("repository", "tag")

    def __init__(self, repository: str, tag: str | None):
        self.repository = repository  # without registry host, e.g. `vllm/vllm-openai`
        self.tag = tag


def parse_image(ref) -> Image:
    """`docker.io/vllm/vllm-openai:v0.29.0@sha256:...` -> Image('vllm/vllm-openai', 'v0.29.0')."""
    ref = (ref or "").split("@", 1)[0]
    name, tag = ref, None
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        name, tag = ref[:colon], ref[colon + 1:]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if parts and parts[0] == "library":
        parts = parts[1:]
    return Image("/".join(parts), tag)


def _matches_repo(repository, key):
    return repository == key or repository.endswith("/" + key)


def version_from_image(ref, engine=None) -> tuple[str, Version] | None:
    """(engine or None, version) read from a well-known image's tag, else None."""
    image = parse_image(ref)
    if not image.tag:
        return None
    for key, pattern in data.IMAGE_VERSION_PATTERNS:
        if not _matches_repo(image.repository, key):
            continue
        m = re.search(pattern, image.tag)
        if not m:
            continue
        found_engine = m.groupdict().get("engine")
        if engine and found_engine and found_engine != engine:
            continue
        version = parse_version(m.group("version"))
        if version:
            return found_engine, version
    return None


def image_entrypoint(ref, version=None) -> dict | None:
    """The ENTRYPOINT of a well-known image as {'engine', 'entrypoint'}; None when not known."""
    image = parse_image(ref)
    for key, entry in data.IMAGE_ENTRYPOINTS.items():
        if _matches_repo(image.repository, key):
            entrypoint = entry["entrypoint"]
            before = entry.get("entrypoint_before")
            if before and version is not None and version < parse_version(before[0]):
                entrypoint = before[1]
            return {"engine": entry["engine"], "entrypoint": tuple(entrypoint), "image": key}
    return None


def is_ascend_image(ref) -> bool:
    return "ascend" in parse_image(ref).repository
