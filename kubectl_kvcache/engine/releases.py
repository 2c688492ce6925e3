"""Engine knowledge at one release: accepted values, `--kv...` options, parser features.

Everything here is derived from the tables in `data`; nothing is decided by if-chains
on version numbers.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kubectl_kvcache.engine import data
from kubectl_kvcache.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import TypedDict

    class _ImageEntry(TypedDict):
        engine: str | None
        entrypoint: tuple[str, ...] | None
        image: str

    class ImageEntry(_ImageEntry, total=False):
        """What image_entrypoint answers; "unpinned" (first, until) only where "entrypoint" is None."""
        unpinned: tuple[str | None, str]

ENGINES = ("vllm", "sglang")
DISPLAY_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def release_name(engine, version) -> str:
    """`SGLang 0.5.18`: the one spelling of an engine release in every message, table title and report."""
    return f"{DISPLAY_NAMES.get(engine, engine)} {version}"
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

    def _hash(self):
        return hash(self._order)

    # An attribute, as Record declares __hash__ (typed object, so that a mutable record may set
    # None): a `def __hash__` would not type-check against that declaration.
    __hash__ = _hash

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
    a, b, c, d = nums + [0] * (4 - len(nums))     # the pattern allows one to four parts
    post = int(m.group(2)) + 1 if m.group(2) is not None else 0
    return Version((a, b, c, d), post, str(text).strip().lstrip("v"))


def data_version(text) -> Version:
    """A release number the plugin's own data holds (a table row, the operator's minimum): one
    that does not parse is a bug in the data, raised as ValueError."""
    version = parse_version(text)
    if version is None:
        raise ValueError(f"{text!r} in the engine data is not a release number")
    return version


def normalise_engine(name) -> str | None:
    """`vLLM`, `vllm`, `SGLang`, `sglang` -> `vllm` / `sglang`; anything else -> None."""
    if not name:
        return None
    low = str(name).strip().lower()
    return low if low in ENGINES else None


class KvOption(Record):
    __slots__ = ("name", "takes_value")

    def __init__(self, name: str, takes_value: bool | None):
        self.name = name
        self.takes_value = takes_value


class Profile(Record):
    """What one engine release does with `--kv...` tokens."""

    __slots__ = ("engine", "version", "has_flag", "accepted", "options", "underscores", "config_file",
                 "dotted_json", "final_value_only", "platform_values", "serve_model_option",
                 "serve_model_refused", "dotted_single_dash", "dotted_typed", "serve_model_alias", "required_options",
                 "choices", "table", "entry_tables", "entry_positionals", "sampled", "judged_with",
                 "newer_than_data", "added", "fixed_choices")

    def __init__(self, engine: str, version: Version, has_flag: bool, accepted: frozenset,
                 options: tuple[KvOption, ...], underscores: bool, config_file: bool, dotted_json: bool,
                 final_value_only: bool, platform_values: bool, serve_model_option: bool = False,
                 serve_model_refused: bool = False, dotted_single_dash: bool = False, dotted_typed: bool = False,
                 serve_model_alias: bool = False, required_options: tuple[str, ...] = (),
                 choices: tuple[tuple[str, tuple[str, ...]], ...] = (), table: tuple[tuple[str, str], ...] = (),
                 entry_tables: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (),
                 entry_positionals: tuple[tuple[str, tuple[str, ...]], ...] = (), sampled: bool = False,
                 judged_with: str = "", newer_than_data: bool = False, added: bool = False,
                 fixed_choices: frozenset = frozenset()):
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
        self.dotted_typed = dotted_typed                # dotted keys kept, values read as JSON (0.10)
        self.serve_model_alias = serve_model_alias      # sglang serve reads --model as well as --model-path
        self.required_options = required_options        # "name/alias" of every required option
        self.choices = choices                          # string choices of other options
        self.fixed_choices = fixed_choices              # those of them read from a registry fixed in code
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
        return release_name(self.engine, self.version)

    @property
    def beyond_data(self):
        """Why this release is judged with another one's parser when it is newer than the data, or ''."""
        if not self.newer_than_data:
            return ""
        return (f"{self.label} is newer than the engine data: judged with {DISPLAY_NAMES[self.engine]} "
                f"{self.judged_with}'s parser (add its release: scripts/engine-data --release)")

    @property
    def not_in_data(self):
        """Why this release's verdicts are UNKNOWN, or '': a release between two the data holds
        (or before the first) was never read, and judging it as a neighbour is a guess (an option
        added or removed in it would be judged wrong). Newer ones: beyond_data."""
        first = data.parsers()[self.engine]["releases"][:1]
        if self.sampled or self.newer_than_data or not first or self.version < parse_version(first[0]):
            return ""   # older than the first release read: judged as before the flag existed
        name = DISPLAY_NAMES[self.engine]
        return (f"{self.label} is not in the engine data (its parser was never read); add it: "
                f"scripts/engine-data --release {self.engine}=={self.version} --output "
                f"~/.local/share/kubectl-kvcache/engines/{self.engine}-{self.version}.json "
                f"(nearest release in the data: {name} {self.judged_with})")

    def option(self, name) -> KvOption | None:
        return next((o for o in self.options if o.name == name), None)


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
    differs: dict = {}
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
        dotted_typed=feature("dotted_typed"),
        required_options=tuple(sorted(name for name, rows in real.get("required", {}).items()
                                      if _in_spans(at, [[True] + r for r in rows]))),
        choices=tuple(sorted((name, tuple(found.split(" "))) for name, rows in real.get("choices", {}).items()
                             for found in [_in_spans(at, rows)] if found is not None)),
        # a registry grows from release to release: its names are known only for a release read
        fixed_choices=frozenset(name for name, rows in real.get("fixed_choices", {}).items()
                                if _in_spans(at, rows) is not None and (str(at) == str(version) or at == version)),
        table=table,
        entry_tables=tuple((e, tuple(rows)) for e, rows in sorted(differs.items())),
        entry_positionals=tuple(positionals),
        sampled=str(at) == str(version) or at == version,
        judged_with=str(at),
        newer_than_data=version > parse_version(real["releases"][-1]) if real["releases"] else False,
        added=from_file,
    )


# --- releases added from files ------------------------------------------------------------

_ADDED: dict[str, dict[str, str]] = {}   # engine -> {release: the file it came from}


def use_added(merged, added):
    """Judge with `merged` (the built-in data with added releases merged in; None: the built-in
    data alone), `added` naming each added release's file (releasefile.add_releases sets it)."""
    global _ADDED
    data._MERGED, _ADDED = merged, added
    profile.cache_clear()


def accepted_since(engine, value) -> str | None:
    """The first release of `engine` that accepts `value` and every release after it does, read
    from every release the data has, built in and added (None: the latest does not accept it)."""
    since = None
    for release, _ in known_releases(engine):
        if value in profile(engine, parse_version(release)).accepted:
            since = since or release
        else:
            since = None
    return since


def known_releases(engine):
    """[(release, the file it was added from, or '' when built in)] in release order."""
    return [(r, _ADDED.get(engine, {}).get(r, "")) for r in data.parsers()[engine]["releases"]]


def image_pythons(engine, version) -> tuple[str, ...]:
    """The CPython minor releases (`3.12`) the images of this engine release may run."""
    found: tuple[str, ...] = ()
    for since, minors in data.IMAGE_PYTHONS.get(engine, ()):
        if _at(version, since) or not found:
            found = minors
    return tuple(found)


def minimum_version(engine) -> Version:
    return data_version(data.OPERATOR_MINIMUM[engine])


# --- where a version comes from -----------------------------------------------------------

# The one vocabulary for where the plugin read an engine version. The operator runs a role's
# stated image, else one it synthesizes from spec.engine.name and spec.engine.version
# (controllers/worker/model_deployment_render.go: renderModelDeploymentPodTemplate, "A STATED
# IMAGE ALWAYS WINS"; model_deployment_image.go: SynthesizeModelDeploymentImage). There is no
# spec.engine.image. UNREAD: no release could be read, so the release is judged across every
# release the data has (`span`), never assumed to be the operator's minimum.
SPEC_VERSION, ROLE_IMAGE, POD_IMAGE, IMAGE_TAG, UNREAD = (
    "spec.engine.version", "spec.roles[].image", "Pod image", "image tag", "release unknown")
SPEC_IMAGE = ROLE_IMAGE     # the name older callers use
MINIMUM = "operator minimum"    # kept for saved reports' labels; no longer a source the plugin picks


def all_releases(engine) -> tuple[Version, ...]:
    """Every release of `engine` the data has (built in and added), oldest first."""
    return tuple(data_version(r) for r, _ in known_releases(engine))


def releases_before(engine, version) -> tuple[Version, ...]:
    """The releases a pre-release of `version` may behave as: the last sampled release before it
    and `version` itself (judged with the sample at or before it)."""
    every = all_releases(engine)
    earlier = [r for r in every if r < version]
    found = ([earlier[-1]] if earlier else []) + [version]
    return tuple(dict.fromkeys(found))


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


def version_from_image(ref, engine=None) -> tuple[str | None, Version] | None:
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


def image_entrypoint(ref, version=None) -> ImageEntry | None:
    """The ENTRYPOINT of a well-known image as {'engine', 'entrypoint', 'image'}; None when the
    image is not known; 'entrypoint' None (with 'unpinned', the span) where the image's releases
    between two known ENTRYPOINTs are not pinned to one. An unknown version is the newest image's."""
    image = parse_image(ref)
    for key, entry in data.IMAGE_ENTRYPOINTS.items():
        if _matches_repo(image.repository, key):
            found: ImageEntry = {"engine": entry["engine"], "entrypoint": tuple(entry["entrypoint"]), "image": key}
            for first, until, entrypoint in entry.get("entrypoint_spans", ()):
                if version is not None and (first is None or version >= parse_version(first)) \
                        and version < parse_version(until):
                    found["entrypoint"] = tuple(entrypoint) if entrypoint is not None else None
                    if entrypoint is None:
                        found["unpinned"] = (first, until)
            return found
    return None


def is_ascend_image(ref) -> bool:
    return "ascend" in parse_image(ref).repository
