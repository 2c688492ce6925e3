"""Engine knowledge at one release: accepted values, `--kv...` options, parser features.

Everything here is derived from the tables in `engine_data`; nothing is decided by if-chains
on version numbers.
"""

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional, Tuple

from kubectl_kvcache.engine import data

ENGINES = ("vllm", "sglang")
DISPLAY_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
DTYPE_OPTION = "--kv-cache-dtype"

_VERSION_RE = re.compile(r"^v?(\d+(?:\.\d+){0,3})(?:\.?post(\d+))?$")


@dataclass(frozen=True, order=True)
class Version:
    """A release number: up to four numeric parts and an optional `.postN` (after the release)."""

    parts: Tuple[int, int, int, int]
    post: int = 0
    text: str = field(default="", compare=False)

    def __str__(self):
        return self.text


@lru_cache(maxsize=None)
def parse_version(text) -> Optional[Version]:
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


def normalise_engine(name) -> Optional[str]:
    """`vLLM`, `vllm`, `SGLang`, `sglang` -> `vllm` / `sglang`; anything else -> None."""
    if not name:
        return None
    low = str(name).strip().lower()
    return low if low in ENGINES else None


@dataclass(frozen=True)
class KvOption:
    name: str
    takes_value: Optional[bool]
    uncertain: bool  # only approximately dated at this release: a token naming it is not judged


@dataclass(frozen=True)
class Profile:
    """What one engine release does with `--kv...` tokens."""

    engine: str
    version: Version
    has_flag: bool
    accepted: frozenset
    options: Tuple[KvOption, ...]
    underscores: bool
    config_file: bool
    dotted_json: bool
    final_value_only: bool
    platform_values: bool

    @property
    def label(self):
        return f"{DISPLAY_NAMES[self.engine]} {self.version}"

    def option(self, name) -> Optional[KvOption]:
        return next((o for o in self.options if o.name == name), None)

    def prefix_matches(self, prefix) -> Tuple[KvOption, ...]:
        return tuple(o for o in self.options if o.name.startswith(prefix))


def _at(version, since) -> bool:
    return version >= parse_version(since)


@lru_cache(maxsize=None)
def profile(engine: str, version: Version) -> Profile:
    accepted = set()
    for since, added, removed in data.ACCEPTED_VALUES[engine]:
        if _at(version, since):
            accepted |= set(added)
            accepted -= set(removed)
    uncertain = data.UNCERTAIN_OPTIONS.get(engine, {})
    options = []
    for since, name, takes_value in data.KV_OPTIONS[engine]:
        window = uncertain.get(name)
        in_window = bool(window) and _at(version, window[0]) and not _at(version, window[1])
        if _at(version, since) or in_window:
            options.append(KvOption(name, takes_value, in_window))
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
    )


def minimum_version(engine) -> Version:
    return parse_version(data.OPERATOR_MINIMUM[engine])


# --- where a version comes from -----------------------------------------------------------

# The one vocabulary for where the plugin read an engine version, in the order it is tried.
SPEC_VERSION, SPEC_IMAGE, POD_IMAGE, IMAGE_TAG, MINIMUM = (
    "spec.engine.version", "spec.engine.image", "Pod image", "image tag", "operator minimum")


def resolve_versions(engine, declared=None, images=()) -> Tuple[Tuple[Version, str], ...]:
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

@dataclass(frozen=True)
class Image:
    repository: str  # without registry host, e.g. `vllm/vllm-openai`
    tag: Optional[str]


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


def version_from_image(ref, engine=None) -> Optional[Tuple[str, Version]]:
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


def image_entrypoint(ref, version=None) -> Optional[dict]:
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
