"""One container in, one prediction out: the dtype its engine runs with, or why it dies, or why
that cannot be known. Pure: no cluster, no files, no `kubernetes` import."""

from __future__ import annotations

from collections import OrderedDict

from kubectl_kvcache.engine import attention, releases as engines, kvparse
from kubectl_kvcache.engine.argv import Undecidable, build_argv
from kubectl_kvcache.engine.cause import Cause
from kubectl_kvcache.engine.images import read as read_image, resolve_versions
from kubectl_kvcache.engine.launch import Launch, find_launch
from kubectl_kvcache.record import Record


class Prediction(Record):
    __slots__ = ("outcome", "effective", "error", "reason", "engine", "version", "version_source",
                 "occurrences", "winner", "via", "judged_with", "newer_than_data", "cause", "parsed")

    def __init__(self, outcome: str, effective: str | None, error: str | None, reason: str,
                 engine: str | None, version: str | None, version_source: str | None,
                 occurrences: tuple[kvparse.Occurrence, ...] = (), winner: int | None = None, via: str = "",
                 judged_with: str | None = None, newer_than_data: bool = False, cause: Cause | None = None,
                 parsed: kvparse.Parse | None = None):
        self.outcome = outcome                # ok | rejected | unknown
        self.effective = effective
        self.error = error
        self.reason = reason
        self.engine = engine                  # lower case
        self.version = version                # the version judged against
        self.version_source = version_source  # where the version was read (releases.SPEC_VERSION, ...)
        self.occurrences = occurrences
        self.winner = winner
        self.via = via
        self.judged_with = judged_with        # the release whose parser judged it (engine data)
        self.newer_than_data = newer_than_data  # the release is newer than every one the data has
        self.cause = cause                    # unknown: what would decide it (engine/cause.py)
        self.parsed = parsed                  # the parser's own verdict, when a check after it changed it


def _releases(engine, declared_version, image):
    """(releases, source, note): the one release declared or read from the image's tag; else every
    release it may be (a pre-release: the one before and its own; unreadable: every release the
    data has), judged across, never one assumed in silence."""
    note = ""
    if declared_version and not engines.parse_version(declared_version):
        note = f"engine version {declared_version!r} is not a release number; "
    found = resolve_versions(engine, declared_version, ((engines.IMAGE_TAG, (image,)),))
    if found:
        return (found[0][0],), found[0][1], note
    seen = read_image(image, engine)
    span = engines.releases_before(engine, seen.before) if seen.before else engines.all_releases(engine)
    note += (f"release unknown ({seen.why}): judged across {engines.DISPLAY_NAMES[engine]} "
             f"{span[0]}-{span[-1]}")
    return span, engines.UNREAD, note


def across(results, span, engine, image) -> kvparse.Parse:
    """One answer for several releases: theirs when they all agree, else UNKNOWN naming which
    releases do what (the release decides, and it could not be read)."""
    first = results[0]
    if all((r.outcome, r.effective, r.error) == (first.outcome, first.effective, first.error) for r in results):
        return first
    runs: list[list] = []     # [said, first, last]: consecutive releases that do the same
    for version, r in zip(span, results, strict=True):
        said = r.outcome if r.outcome != kvparse.OK else f"runs {r.effective or 'auto'}"
        if runs and runs[-1][0] == said:
            runs[-1][2] = version
        else:
            runs.append([said, version, version])
    told = "; ".join(f"{engines.DISPLAY_NAMES[engine]} {first}" + (f"-{last}" if last != first else "") + f": {said}"
                     for said, first, last in runs)
    return kvparse.Parse(kvparse.UNKNOWN, None, None, f"the release decides and it is not known: {told}",
                         cause=Cause("image", image or "the image"))


def predict(container: dict, declared_engine=None, declared_version=None, manufacturer=None) -> Prediction:
    engine = engines.normalise_engine(declared_engine)
    image = container.get("image") or ""
    pre_version = None
    if engine:
        span = _releases(engine, declared_version, image)[0]
        pre_version = span[0] if len(span) == 1 else None
    argv = build_argv(container, pre_version)
    if isinstance(argv, Undecidable):
        return Prediction(kvparse.UNKNOWN, None, None, argv.reason, engine, None, None, cause=argv.cause)
    launch = find_launch(argv.tokens, argv.env)
    if isinstance(launch, Undecidable):
        return Prediction(kvparse.UNKNOWN, None, None, launch.reason, engine, None, None, cause=launch.cause)
    assert isinstance(launch, Launch)
    if engine and launch.engine != engine:
        return Prediction(kvparse.UNKNOWN, None, None,
                          f"declared engine is {engine} but the argv starts {launch.engine} ({launch.via})",
                          engine, None, None, via=launch.via, cause=Cause("engine", launch.engine))
    engine = launch.engine
    span, source, note = _releases(engine, declared_version, image)
    ascend = (manufacturer or "").lower() == "ascend" or read_image(image).platform == "npu" \
        or engines.is_ascend_image(image)
    parses = [kvparse.parse(launch.args, engines.profile(engine, v), platform_may_extend=ascend, entry=launch.entry)
              for v in span]
    platform = "npu" if ascend else read_image(image, engine).platform
    backend = attention.forced_backend(argv.env, launch.args)
    results = [attention.after_parse(r, engine, v, platform, backend) for r, v in zip(parses, span, strict=True)]
    result = across(results, span, engine, image)
    parsed = across(parses, span, engine, image) if results != parses else None
    version = span[-1]
    profile = engines.profile(engine, version)
    if profile.newer_than_data:
        note += ("; " if note else "") + profile.beyond_data
    missing = profile.not_in_data
    if missing and result.outcome != kvparse.UNKNOWN:   # no interpolation: never definite for it
        return Prediction(kvparse.UNKNOWN, None, None, missing + (f"; {note}" if note else ""), engine,
                          str(version), source, result.occurrences, None, launch.via, profile.judged_with,
                          False, Cause("release", f"{engine}=={version}"))
    reason = result.reason + (f"; {note}" if note else "")
    return Prediction(result.outcome, result.effective, result.error, reason, engine,
                      str(version) if len(span) == 1 else None, source,
                      result.occurrences, result.winner, launch.via, profile.judged_with, profile.newer_than_data,
                      result.cause, parsed)


class CachedPredict:
    """`predict` memoised for one judging run: replicas of one role share their container spec,
    so each distinct (container, engine, version, manufacturer) is parsed once. Bounded LRU of
    `size` entries (callers judge Pods sorted by namespace and name, so replicas come together).
    Safe because `predict` is pure and a Prediction is immutable; the cache keeps a reference to
    each cached container, so the repr key (which may hold ids) cannot be reused while cached."""

    def __init__(self, size=256):
        self.size = size
        self._entries: OrderedDict[tuple, tuple[dict, Prediction]] = OrderedDict()
        self.hits = self.misses = 0

    def __call__(self, container: dict, declared_engine=None, declared_version=None, manufacturer=None):
        try:
            key = (repr(container), declared_engine, declared_version, manufacturer)
            entry = self._entries.get(key)
        except TypeError:  # an unhashable declared value: no caching
            return predict(container, declared_engine, declared_version, manufacturer)
        if entry is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return entry[1]
        self.misses += 1
        result = predict(container, declared_engine, declared_version, manufacturer)
        self._entries[key] = (container, result)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return result
