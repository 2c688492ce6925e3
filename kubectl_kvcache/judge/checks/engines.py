"""The engine releases a check judges against, and the questions it puts to the engine model:
what `--kv-cache-dtype X` does to a release, which tokens name the flag, which spelling to suggest."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kvcache import engine as model
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.engine import (DTYPE_OPTION, IMAGE_TAG, POD_IMAGE, ROLE_IMAGE, SAME_FORMAT, SPEC_VERSION, UNREAD,
                                    Token, Version)
from kubectl_kvcache.record import Record


OPERATOR_SOURCE = "operator"   # Token source of the operator's own --kv-cache-dtype pair
EXTRA_ARGS = "extraArgs"
_PROBE = Token("auto", "probe", 0)


class EngineAt(Record):
    """An engine release, and where the plugin read its version. `span`: the releases it may be
    when none could be read (`version` is then the newest of them, `why` says what was read);
    every question whose answer the release decides is put to each of them (`outcomes`)."""

    __slots__ = ("engine", "version", "source", "ascend", "span", "why", "platform", "gpus")

    def __init__(self, engine: str, version: Version, source: str, ascend: bool = False,
                 span: tuple[Version, ...] = (), why: str = "", platform: str | None = None, gpus: tuple = ()):
        self.engine = engine
        self.version = version
        self.source = source
        self.ascend = ascend
        self.span = span
        self.why = why
        self.platform = "npu" if ascend else platform   # cuda | rocm | cpu | xpu | npu | None: not said
        self.gpus = gpus        # the GPUs its Pods' Nodes have (engine Gpu), where read: each must start it

    @property
    def starting(self) -> set[str]:
        """The values every release it may be accepts AND starts with on its platform (the
        attention-backend check after the parse): the only ones to suggest or propose."""
        return set.intersection(*({v for v in p.accepted
                                   if all(model.starts(self.engine, p.version, v, self.platform, g)
                                          for g in (self.gpus or (None,)))}
                                  for p in self.profiles))

    @property
    def profile(self):
        """The release's profile; of an unknown release, the newest it may be (only for what the
        release does not decide: which tokens name the flag, a spelling to suggest)."""
        return model.profile(self.engine, self.version)

    @property
    def profiles(self):
        return [model.profile(self.engine, v) for v in (self.span or (self.version,))]

    @property
    def long_label(self):  # the wording of finding messages (tables use render's short label)
        """`SGLang 0.5.19 (from spec.roles[].image)`, `vLLM (release unknown: ...; judged across 0.3.3-0.33.0)`."""
        if self.span:
            return (f"{model.DISPLAY_NAMES[self.engine]} (release unknown: {self.why}; judged across "
                    f"{self.span[0]}-{self.span[-1]})")
        name = model.release_name(self.engine, self.version)
        return f"{name} (from {self.source})"

    @property
    def name(self):
        if self.span:
            return f"{model.DISPLAY_NAMES[self.engine]} (release unknown)"
        return model.release_name(self.engine, self.version)

    def to_dict(self):
        if self.span:
            return {"engine": self.engine, "version": None, "versionSource": self.source,
                    "releaseUnknown": self.why, "judgedAcross": [str(v) for v in self.span]}
        return {"engine": self.engine, "version": str(self.version), "versionSource": self.source}


def unknown_release(engine, why, before=None, ascend=False, platform=None) -> EngineAt:
    """A release that could not be read: every release the data has (a pre-release: the one
    before it and its own)."""
    span = model.releases_before(engine, before) if before else model.all_releases(engine)
    return EngineAt(engine, span[-1], UNREAD, ascend, span if len(span) > 1 else (), why, platform)


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


def role_engine(md: records.Deployment, index: int, role, pod_images: Sequence[str | None] = (),
                gpus: tuple = ()) -> EngineAt | None:
    """The engine release a role runs, as the operator picks its image
    (controllers/worker/model_deployment_render.go, renderModelDeploymentPodTemplate): the role's
    stated image ALWAYS WINS; else the image synthesized from spec.engine.name and
    spec.engine.version (model_deployment_image.go, SynthesizeModelDeploymentImage:
    gpustack/runner:<backend><runtime>[-<variant>]-<engine><version>), whose release is
    spec.engine.version. What cannot be read is an unknown release, judged across the releases."""
    engine = model.normalise_engine(md.engine)
    if engine is None:
        return None
    # each distinct image once, oldest Pod's first (a role's replicas share theirs)
    seen_pods = [model.read_image(i, engine) for i in dict.fromkeys(i for i in pod_images if i)]
    ascend = any(p.platform == "npu" for p in seen_pods)
    said = {p.platform for p in seen_pods}
    platform = said.pop() if len(said) == 1 else None   # the Pods' images agree on it
    if role.image:
        seen = model.read_image(role.image, engine)
        ascend = ascend or seen.platform == "npu"
        if seen.release is not None:
            return EngineAt(engine, seen.release, ROLE_IMAGE, ascend, platform=seen.platform, gpus=gpus)
        return unknown_release(engine, f"spec.roles[{index}].image {role.image!r}: {seen.why}", seen.before, ascend,
                               seen.platform)
    # a synthesized image's backend comes from the InstanceType's manufacturer
    # (model_deployment_image.go, SynthesizeModelDeploymentImage): only its Pods' images say it here
    if md.engine_version:
        version = model.parse_version(md.engine_version)
        if version is not None:
            return EngineAt(engine, version, SPEC_VERSION, ascend, platform=platform, gpus=gpus)
        seen = model.read_image(f"gpustack/runner:cuda-{engine}{md.engine_version}", engine)
        return unknown_release(engine, f"spec.engine.version {md.engine_version!r} is not a release number",
                               seen.before, ascend, platform)
    for read in seen_pods:     # the operator synthesizes nothing without a version; Pods made before?
        if read.release is not None:
            return EngineAt(engine, read.release, POD_IMAGE, ascend, platform=read.platform, gpus=gpus)
    return unknown_release(engine, f"spec.roles[{index}] names no image and spec.engine.version is empty, so the "
                                   f"operator can synthesize no image for it", None, ascend, platform)


def role_images(pods, md, role) -> list[str | None]:
    """The images of a role's engine Pods, oldest Pod first."""
    return [(c.pod.container(api.ENGINE_CONTAINER) or {}).get("image")
            for c in sorted(pods.of(md, role.name), key=lambda c: c.pod.created)]


def deployment_engines(md: records.Deployment, pods=None) -> tuple[EngineAt, ...]:
    """The engine releases a deployment's roles run (role_engine), each distinct one once: of the
    roles the operator renders for when there are any (take-over roles receive no dtype)."""
    rendered = [(i, r) for i, r in enumerate(md.roles) if not r.command] or list(enumerate(md.roles))
    found: list[EngineAt] = []
    for i, role in rendered:
        at = role_engine(md, i, role, role_images(pods, md, role) if pods is not None else [],
                         pods.gpus_of(md, role.name) if pods is not None else ())
        if at is None:
            return ()
        if all((at.version, at.span, at.gpus) != (f.version, f.span, f.gpus) for f in found):
            found.append(at)
    if not found:
        engine = model.normalise_engine(md.engine)
        if engine is None:
            return ()
        version = model.parse_version(md.engine_version) if md.engine_version else None
        found.append(EngineAt(engine, version, SPEC_VERSION) if version else
                     unknown_release(engine, "no roles and no spec.engine.version"))
    return tuple(found)


def injected_engine(annotations, container) -> EngineAt | None:
    """The engine an injection opt-in declares, at its image's release (unknown: judged across them)."""
    engine = model.normalise_engine(annotations.get(api.ANNOTATION_PREFIX + "engine"))
    if engine is None:
        return None
    image = (container or {}).get("image") or ""
    seen = model.read_image(image, engine)
    ascend = (annotations.get(api.ANNOTATION_PREFIX + "manufacturer") or "").lower() == "ascend" \
        or model.is_ascend_image(image) or seen.platform == "npu"
    if seen.release is not None:
        return EngineAt(engine, seen.release, IMAGE_TAG, ascend, platform=seen.platform)
    return unknown_release(engine, f"image {image!r}: {seen.why}" if image else "no image", seen.before, ascend,
                           seen.platform)


def operator_tokens(dtype) -> list[Token]:
    """The two entries the operator (and the webhook) hand the engine."""
    return [Token(DTYPE_OPTION, OPERATOR_SOURCE, 0), Token(dtype, OPERATOR_SOURCE, 1)]


def dtype_outcome(dtype, at: EngineAt) -> model.Parse:
    """What `--kv-cache-dtype <dtype>` does to that engine release (of an unknown release: what
    every release it may be does, UNKNOWN where they disagree). Memoised: a Binding is put to
    each of its deployments' releases, and they are few (a Parse is immutable)."""
    key = (dtype, at)
    try:
        found = _OUTCOMES.get(key)
    except TypeError:   # an unhashable value: not cached
        return outcomes(operator_tokens(dtype), at)
    if found is None:
        if len(_OUTCOMES) >= _OUTCOMES_KEPT:
            _OUTCOMES.clear()
        found = _OUTCOMES[key] = outcomes(operator_tokens(dtype), at)
    return found


_OUTCOMES: dict = {}
_OUTCOMES_KEPT = 512


def forget() -> None:
    """A new judgement starts from nothing memoised: the engine data in force may have changed
    since the last one (--engine-data, an added release file; tests run many in one process)."""
    _OUTCOMES.clear()


def outcomes(tokens, at: EngineAt) -> model.Parse:
    """The parse of `tokens` at the release, or across the releases an unknown one may be."""
    results = [_worst([model.after_parse(model.parse(tokens, p, platform_may_extend=at.ascend), at.engine, p.version,
                                         at.platform, gpu=g) for g in (at.gpus or (None,))]) for p in at.profiles]
    return model.across(results, at.span or (at.version,), at.engine, at.why)


def _worst(results):
    """Of one release's outcomes on each GPU its Pods run on: a refusal on one, else UNKNOWN, else the first."""
    return next((r for r in results if r.outcome == model.REJECTED),
                next((r for r in results if r.outcome == model.UNKNOWN), results[0]))


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


def suggest_dtype(dtype, ats: Sequence[EngineAt]) -> str | None:
    """A spelling of the same cache format that every given engine accepts and starts with, if any."""
    for candidate in (dtype,) + SAME_FORMAT.get(dtype, ()):
        if all(candidate in at.starting for at in ats):
            return candidate
    return None
