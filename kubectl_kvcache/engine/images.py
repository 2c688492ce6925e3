"""An image reference as people write it -> the engine, its release, its platform, and why.

The release a container runs is what its image holds, so the plugin reads it from the reference
itself: a registry with a port, a mirror path, a digest, `vX.Y.Z`, `.postN`, `rcN` and suffixes such
as `-cu126`, `-rocm630-mi30x`, `-a3-openeuler`, gpustack/runner's formula tags
(`cuda12.9-vllm0.29.0`), ROCm's `rocm7.0.0_vllm_0.11.2_20251210`. The families and words are data
(`data.IMAGE_FAMILIES`, `data.IMAGE_PLATFORM_WORDS`). An image whose release cannot be read says so
(`release` None, `why`), and a pre-release names the release it leads up to (`before`), so the
caller can judge across the releases it may be and say UNKNOWN where they disagree, never assume
one in silence.
"""

from __future__ import annotations

import re

from kubectl_kvcache.engine import data
from kubectl_kvcache.engine.releases import SPEC_VERSION, Version, parse_version
from kubectl_kvcache.record import Record

PLATFORMS = ("cuda", "rocm", "cpu", "xpu", "npu")
_RELEASE = r"v?(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?P<pre>(?:rc|a|b|\.?dev)\d*)?"
_LEAD = re.compile(r"^" + _RELEASE + r"(?P<rest>(?:[-_.+].*)?)$")
_RUNNER = re.compile(r"^(?P<backend>[a-z]+)(?P<runtime>[\d.]*)(?:-(?P<variant>[a-z0-9]+))?-(?P<engine>vllm|sglang)"
                     + _RELEASE.replace("?P<version>", "?P<version>").replace("v?", "", 1) + r"(?P<rest>(?:-.*)?)$",
                     re.IGNORECASE)
_EMBEDDED = re.compile(r"(?:^|[_-])(?P<engine>vllm|sglang)[_-]v?(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)"
                       r"(?P<pre>(?:rc|\.?dev)\d*)?(?=$|[_-])", re.IGNORECASE)
_DIGEST = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")


class ImageRef(Record):
    """One reference, split as the container runtime reads it (distribution/reference)."""

    __slots__ = ("registry", "repository", "tag", "digest")

    def __init__(self, registry: str, repository: str, tag: str | None, digest: str | None):
        self.registry = registry        # '' for Docker Hub
        self.repository = repository    # `vllm/vllm-openai`; Docker Hub's `library/` dropped
        self.tag = tag
        self.digest = digest


class ImageRead(Record):
    """What an image reference says of the engine it runs."""

    __slots__ = ("ref", "engine", "release", "before", "platform", "why", "family")

    def __init__(self, ref: str, engine: str | None, release: Version | None, platform: str | None, why: str,
                 before: Version | None = None, family: str = ""):
        self.ref = ref
        self.engine = engine            # vllm | sglang | None (not an engine image the plugin knows)
        self.release = release          # None: not readable from the reference
        self.before = before            # a pre-release (rc, dev) of this release: between the one before and it
        self.platform = platform        # cuda | rocm | cpu | xpu | npu | None
        self.why = why                  # how it was read, or why it could not be
        self.family = family            # the IMAGE_FAMILIES key it matched


def split(ref: str) -> ImageRef:
    """`host:5000/a/b:tag@sha256:...` -> ImageRef(host:5000, a/b, tag, sha256:...). The first
    segment is a registry when it has a `.` or `:` or is `localhost` (the runtime's own rule)."""
    ref = (ref or "").strip()
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    name, tag = ref, None
    slash, colon = ref.rfind("/"), ref.rfind(":")
    if colon > slash:
        name, tag = ref[:colon], ref[colon + 1:]
    parts = name.split("/")
    registry = ""
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry, parts = parts[0], parts[1:]
    if len(parts) > 1 and parts[0] == "library":
        parts = parts[1:]
    return ImageRef(registry, "/".join(parts).lower(), tag or None, digest or None)


def _family(repository: str):
    """The IMAGE_FAMILIES row whose repository the reference ends with (any mirror path before it),
    or whose last segment it is alone (`registry:5000/vllm-openai`: a mirror that dropped the owner;
    `ghcr.io/acme/vllm-openai` names another owner's build and is not read)."""
    for key, engine, platform, form in data.IMAGE_FAMILIES:
        if repository == key or repository.endswith("/" + key) or repository == key.rsplit("/", 1)[-1]:
            return key, engine, platform, form
    return None


def _platform_of(words, default):
    for word in words:
        for pattern, platform in data.IMAGE_PLATFORM_WORDS:
            if re.match(pattern, word.lower()):
                return platform
    return default


def _release(version_text, pre):
    """(release, before): a final release, or the release a pre-release leads up to."""
    version = parse_version(version_text)
    if version is None:
        return None, None
    return (None, version) if pre else (version, None)


def read(ref: str, engine: str | None = None) -> ImageRead:
    """What `ref` says of the engine it runs; `engine` (the one declared) is checked against the
    image's own when the image names one."""
    text = ref or ""
    if not text.strip():
        return ImageRead(text, None, None, None, "no image")
    parts = split(text)
    found = _family(parts.repository)
    if found is None:
        return ImageRead(text, None, None, None, f"{parts.repository} is not an engine image the plugin knows: "
                                                f"its tag does not say the engine's release")
    key, fam_engine, platform, form = found
    tag = parts.tag
    pin = f" (pinned by digest {parts.digest[:19]}...)" if parts.digest else ""
    if not tag:
        return ImageRead(text, fam_engine, None, platform,
                         f"{key} without a tag{pin}: the release is not in the reference", family=key)
    release = before = None
    if form == "runner":
        m = _RUNNER.match(tag)
        if not m:
            return ImageRead(text, None, None, None, f"gpustack/runner tag {tag!r} is not the runner's "
                                                     f"<backend><runtime>-<engine><release> form", family=key)
        fam_engine = m.group("engine").lower()
        backend = m.group("backend").lower()
        platform = _platform_of([backend], None)
        if backend in data.RUNNER_OTHER_BACKENDS:
            platform = None
        release, before = _release(m.group("version"), m.group("pre"))
    elif form == "embedded":
        m = _EMBEDDED.search(tag)
        if m and m.group("engine").lower() == fam_engine:
            release, before = _release(m.group("version"), m.group("pre"))
            platform = _platform_of(re.split(r"[-_]", tag), platform)
    else:
        m = _LEAD.match(tag)
        if m:
            release, before = _release(m.group("version"), m.group("pre"))
            platform = _platform_of([w for w in re.split(r"[-_]", m.group("rest")) if w], platform)
    if engine and fam_engine and engine != fam_engine:
        return ImageRead(text, fam_engine, None, platform,
                         f"{key} runs {fam_engine}, not the declared {engine}", family=key)
    if release is not None:
        return ImageRead(text, fam_engine, release, platform, f"release {release} from the tag of {key}{pin}",
                         family=key)
    if before is not None:
        return ImageRead(text, fam_engine, None, platform,
                         f"tag {tag!r} of {key} is a pre-release of {before}{pin}", before=before, family=key)
    return ImageRead(text, fam_engine, None, platform,
                     f"tag {tag!r} of {key} names no release{pin} (a moving tag, a branch or a private build)",
                     family=key)


def resolve_versions(engine, declared=None, images=()) -> tuple[tuple[Version, str], ...]:
    """The releases of `engine` to judge against, each with where it was read: the declared
    version; else the releases the first group of `images` ((source, [image refs]) in order)
    names (all distinct ones, in order); else () -- the caller judges across every release
    (`all_releases`) and says the release is unknown."""
    if declared:
        parsed = parse_version(declared)
        if parsed:
            return ((parsed, SPEC_VERSION),)
    for source, refs in images:
        found = []
        for ref in refs:
            hit = read(ref, engine).release if ref else None
            if hit and (hit, source) not in found:
                found.append((hit, source))
        if found:
            return tuple(found)
    return ()
