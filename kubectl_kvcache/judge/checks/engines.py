"""The engine releases a check judges against, and the questions it puts to the engine model:
what `--kv-cache-dtype X` does to a release, which tokens name the flag, which spelling to suggest."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kvcache import engine as model
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.engine import (DTYPE_OPTION, IMAGE_TAG, MINIMUM, POD_IMAGE, SAME_FORMAT, SPEC_IMAGE, Token,
                                    Version)
from kubectl_kvcache.record import Record


OPERATOR_SOURCE = "operator"   # Token source of the operator's own --kv-cache-dtype pair
EXTRA_ARGS = "extraArgs"
_PROBE = Token("auto", "probe", 0)


class EngineAt(Record):
    """An engine release, and where the plugin read its version."""

    __slots__ = ("engine", "version", "source", "ascend")

    def __init__(self, engine: str, version: Version, source: str, ascend: bool = False):
        self.engine = engine
        self.version = version
        self.source = source
        self.ascend = ascend

    @property
    def profile(self):
        return model.profile(self.engine, self.version)

    @property
    def long_label(self):  # the wording of finding messages (tables use render's short label)
        """`SGLang 0.5.19 (from spec.engine.image)`, `vLLM 0.29.0 (version unknown: the operator minimum)`."""
        name = model.release_name(self.engine, self.version)
        if self.source == MINIMUM:
            return f"{name} (version unknown: the operator minimum)"
        return f"{name} (from {self.source})"

    @property
    def name(self):
        return model.release_name(self.engine, self.version)

    def to_dict(self):
        return {"engine": self.engine, "version": str(self.version), "versionSource": self.source}


class FlagToken(Record):
    """A token naming --kv-cache-dtype as one engine release reads it."""

    __slots__ = ("source", "index", "text", "value", "ambiguous", "value_at", "next_text")

    def __init__(self, source: str, index: int, text: str, value: str | None, ambiguous: str = "",
                 value_at: tuple[str, int] | None = None, next_text: str | None = None):
        self.source = source
        self.index = index
        self.text = text
        self.value = value          # None: no value follows
        self.ambiguous = ambiguous  # the options an ambiguous abbreviation could mean
        self.value_at = value_at    # (source, index) of the separate value it takes
        self.next_text = next_text

    @property
    def where(self):
        return f"{self.source}[{self.index}]"

    @property
    def value_text(self):
        """The separate value after it: the parsed one, or the word an ambiguous abbreviation would take."""
        return self.value if self.value is not None else self.next_text

    @property
    def shown(self):
        if self.value_at is None:
            return self.text
        return f"{self.text} {self.value_text}"

    def removal(self, path=None):
        """`args[0] and args[1]`: every entry to delete with it, so that no value is left behind
        as a stray positional (`path` turns a (source, index) into the object's path)."""
        path = path or (lambda source, index: f"{source}[{index}]")
        first = path(self.source, self.index)
        return f"{first} and {path(*self.value_at)}" if self.value_at else first


def deployment_engines(md: records.Deployment, pod_images: Sequence[str]) -> tuple[EngineAt, ...]:
    """The engine releases a deployment runs: spec.engine.version, else spec.engine.image's tag,
    else the tags of its Pods' images (oldest Pod first), else the operator's minimum."""
    engine = model.normalise_engine(md.engine)
    if engine is None:
        return ()
    found = model.resolve_versions(engine, md.engine_version,
                                   ((SPEC_IMAGE, (md.image,)), (POD_IMAGE, tuple(pod_images))))
    return tuple(EngineAt(engine, version, source) for version, source in found)


def injected_engine(annotations, container) -> EngineAt | None:
    """The engine an injection opt-in declares, at its image's version, else the minimum."""
    engine = model.normalise_engine(annotations.get(api.ANNOTATION_PREFIX + "engine"))
    if engine is None:
        return None
    image = (container or {}).get("image") or ""
    ascend = (annotations.get(api.ANNOTATION_PREFIX + "manufacturer") or "").lower() == "ascend" \
        or model.is_ascend_image(image)
    version, source = model.resolve_versions(engine, None, ((IMAGE_TAG, (image,)),))[0]
    return EngineAt(engine, version, source, ascend)


def operator_tokens(dtype) -> list[Token]:
    """The two entries the operator (and the webhook) hand the engine."""
    return [Token(DTYPE_OPTION, OPERATOR_SOURCE, 0), Token(dtype, OPERATOR_SOURCE, 1)]


def dtype_outcome(dtype, at: EngineAt) -> model.Parse:
    """What `--kv-cache-dtype <dtype>` does to that engine release."""
    return model.parse(operator_tokens(dtype), at.profile, platform_may_extend=at.ascend)


def plain(reason, operator=""):
    """A kvparse reason with the operator's pseudo-position spelled out as `operator` (or dropped)."""
    return reason.replace(f" ({OPERATOR_SOURCE}[0])", f" ({operator})" if operator else "").replace(
        f"{OPERATOR_SOURCE}[0]", operator or "the operator's --kv-cache-dtype")


def _could_abbreviate_dtype(text, profile):
    name = text.split("=", 1)[0]
    if profile.underscores:
        name = name.replace("_", "-")
    return len(name) > 2 and DTYPE_OPTION.startswith(name)


def flag_tokens(tokens: Sequence[Token], profile) -> list[FlagToken]:
    """Every token the release's parser reads as --kv-cache-dtype: exact, `=value`, vLLM's
    underscores, unique abbreviations, `--kv-cache-dtype.key`; and abbreviations that are
    ambiguous at that release but could mean it. Each token is put to `kvparse` followed by a
    probe value: it names the flag exactly when the parse records an occurrence for it."""
    found = []
    for j, tok in enumerate(tokens):
        if tok.text is None or not tok.text.startswith("--"):
            continue
        probe = model.parse([tok, _PROBE], profile)
        after = tokens[j + 1] if j + 1 < len(tokens) else None
        if probe.occurrences:
            actual = model.parse([tok] + list(tokens[j + 1:j + 2]), profile)
            value = actual.occurrences[0].value if actual.occurrences else None
            took = after if after is not None and value is not None and "=" not in tok.text \
                and after.text == value else None
            found.append(FlagToken(tok.source, tok.index, tok.text, value,
                                   value_at=(took.source, took.index) if took is not None else None,
                                   next_text=took.text if took is not None else None))
        elif probe.error == model.AMBIGUOUS and _could_abbreviate_dtype(tok.text, profile):
            # the word after it was meant as its value: removing the flag alone leaves it a stray positional
            took = after if (after is not None and "=" not in tok.text and after.text is not None
                             and not after.text.startswith("-")) else None
            found.append(FlagToken(tok.source, tok.index, tok.text, None, ambiguous=probe.reason,
                                   value_at=(took.source, took.index) if took is not None else None,
                                   next_text=took.text if took is not None else None))
    return found


def accepted_since(engine, value) -> str | None:
    """The first release of `engine` that accepts `value` (and still does), built in or added:
    the engine model's answer, so that a release added from a file counts (issue 31)."""
    return model.accepted_since(engine, value)


def suggest_dtype(dtype, profiles) -> str | None:
    """A spelling of the same cache format that every given release accepts, if there is one."""
    for candidate in (dtype,) + SAME_FORMAT.get(dtype, ()):
        if all(candidate in p.accepted for p in profiles):
            return candidate
    return None
