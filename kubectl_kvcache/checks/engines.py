"""The engine releases a check judges against, and the questions it puts to the engine model:
what `--kv-cache-dtype X` does to a release, which tokens name the flag, which spelling to suggest."""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from kubectl_kvcache import engine as model, snapshot as snap
from kubectl_kvcache.engine import (DTYPE_OPTION, IMAGE_TAG, MINIMUM, POD_IMAGE, SAME_FORMAT, SPEC_IMAGE, Token,
                                    Version)


OPERATOR_SOURCE = "operator"   # Token source of the operator's own --kv-cache-dtype pair
EXTRA_ARGS = "extraArgs"
_PROBE = Token("auto", "probe", 0)


@dataclass(frozen=True)
class EngineAt:
    """An engine release, and where the plugin read its version."""

    engine: str
    version: Version
    source: str
    ascend: bool = False

    @property
    def profile(self):
        return model.profile(self.engine, self.version)

    @property
    def long_label(self):  # the wording of finding messages (tables use render's short label)
        """`SGLang 0.5.19 (from spec.engine.image)`, `vLLM 0.29.0 (version unknown: the operator minimum)`."""
        name = f"{model.DISPLAY_NAMES[self.engine]} {self.version}"
        if self.source == MINIMUM:
            return f"{name} (version unknown: the operator minimum)"
        return f"{name} (from {self.source})"

    @property
    def name(self):
        return f"{model.DISPLAY_NAMES[self.engine]} {self.version}"

    def to_dict(self):
        return {"engine": self.engine, "version": str(self.version), "versionSource": self.source}


@dataclass(frozen=True)
class FlagToken:
    """A token naming --kv-cache-dtype as one engine release reads it."""

    source: str
    index: int
    text: str
    value: Optional[str]      # None: no value follows
    ambiguous: str = ""       # the options an ambiguous abbreviation could mean

    @property
    def where(self):
        return f"{self.source}[{self.index}]"

    @property
    def shown(self):
        if self.value is None or "=" in self.text:
            return self.text
        return f"{self.text} {self.value}"


def deployment_engines(md: snap.Deployment, pod_images: Sequence[str]) -> Tuple[EngineAt, ...]:
    """The engine releases a deployment runs: spec.engine.version, else spec.engine.image's tag,
    else the tags of its Pods' images (oldest Pod first), else the operator's minimum."""
    engine = model.normalise_engine(md.engine)
    if engine is None:
        return ()
    found = model.resolve_versions(engine, md.engine_version,
                                   ((SPEC_IMAGE, (md.image,)), (POD_IMAGE, tuple(pod_images))))
    return tuple(EngineAt(engine, version, source) for version, source in found)


def injected_engine(annotations, container) -> Optional[EngineAt]:
    """The engine an injection opt-in declares, at its image's version, else the minimum."""
    engine = model.normalise_engine(annotations.get(snap.ANNOTATION_PREFIX + "engine"))
    if engine is None:
        return None
    image = (container or {}).get("image") or ""
    ascend = (annotations.get(snap.ANNOTATION_PREFIX + "manufacturer") or "").lower() == "ascend" \
        or model.is_ascend_image(image)
    version, source = model.resolve_versions(engine, None, ((IMAGE_TAG, (image,)),))[0]
    return EngineAt(engine, version, source, ascend)


def operator_tokens(dtype) -> List[Token]:
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


def flag_tokens(tokens: Sequence[Token], profile) -> List[FlagToken]:
    """Every token the release's parser reads as --kv-cache-dtype: exact, `=value`, vLLM's
    underscores, unique abbreviations, `--kv-cache-dtype.key`; and abbreviations that are
    ambiguous at that release but could mean it. Each token is put to `kvparse` followed by a
    probe value: it names the flag exactly when the parse records an occurrence for it."""
    found = []
    for j, tok in enumerate(tokens):
        if tok.text is None or not tok.text.startswith("--"):
            continue
        probe = model.parse([tok, _PROBE], profile)
        if probe.occurrences:
            actual = model.parse([tok] + list(tokens[j + 1:j + 2]), profile)
            value = actual.occurrences[0].value if actual.occurrences else None
            found.append(FlagToken(tok.source, tok.index, tok.text, value))
        elif probe.error == model.AMBIGUOUS and _could_abbreviate_dtype(tok.text, profile):
            found.append(FlagToken(tok.source, tok.index, tok.text, None, ambiguous=probe.reason))
    return found


def accepted_since(engine, value) -> Optional[str]:
    """The first release of `engine` that accepts `value` (and still does), from the engine data."""
    since = None
    for release, added, removed in model.ACCEPTED_VALUES[engine]:
        if value in added:
            since = since or release
        if value in removed:
            since = None
    return since


def suggest_dtype(dtype, profiles) -> Optional[str]:
    """A spelling of the same cache format that every given release accepts, if there is one."""
    for candidate in (dtype,) + SAME_FORMAT.get(dtype, ()):
        if all(candidate in p.accepted for p in profiles):
            return candidate
    return None
