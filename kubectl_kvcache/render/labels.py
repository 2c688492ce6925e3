"""How an engine release is named in views and reports (`vLLM 0.29.0 (image tag)`,
`sglang:0.5.18`): apart from the views, so that the report model (render/report.py) names
releases as the tables do without importing them (render.core prints reports)."""

from kubectl_kvcache.engine import (DISPLAY_NAMES, IMAGE_TAG, MINIMUM, POD_IMAGE, ROLE_IMAGE, SPEC_VERSION, UNREAD,
                                    release_name)

_SHORT_SOURCE = {SPEC_VERSION: "", ROLE_IMAGE: "role image", POD_IMAGE: "the Pods' image", IMAGE_TAG: "image tag",
                 MINIMUM: "version unknown: operator minimum", UNREAD: "release unknown"}
_LONG_SOURCE = {SPEC_VERSION: "spec.engine.version", ROLE_IMAGE: "spec.roles[].image", POD_IMAGE: "the Pods' image",
                IMAGE_TAG: "the image tag", MINIMUM: "unknown: the operator's minimum",
                UNREAD: "nowhere: release unknown"}


def engine_label(at):
    """`vLLM 0.29.0`, `SGLang 0.5.19 (image tag)`: an engine release and where its version was
    read, when not spec.engine.version (report titles and facts: verify's and check's alike)."""
    if getattr(at, "span", ()):
        return f"{DISPLAY_NAMES.get(at.engine, at.engine)} (release unknown)"
    return release_label(at.engine, at.version, at.source)


def release_label(engine, version, source):
    short = _SHORT_SOURCE.get(source, source)
    return release_name(engine, version) + (f" ({short})" if short else "")


def engine_token(at):
    """`sglang:0.5.18`: an engine release as one word (name:version, as kubectl's IMAGES column)."""
    return f"{at.engine}:{'?' if getattr(at, 'span', ()) else at.version}"


def engine_source(at):
    """`vllm:0.29.0 (version from spec.engine.version)`: a release and where its version was read."""
    if getattr(at, "span", ()):
        return f"{at.engine}:? (release unknown: {at.why})"
    return release_source(at.engine, at.version, at.source)


def release_source(engine, version, source):
    return f"{engine}:{version} (version from {_LONG_SOURCE.get(source, source)})"


def engine_said(item) -> str | None:
    """The engine's own line for a replica that crashed: its error as its previous log has it
    (ExitCause.line: masked by kubectl_kvcache/masking.py and cut at engine.words.MAX_LINE with a
    visible `…` where it was read, engine/crash.py). The one home every view (render/verify.py)
    and report (render/report.py) reads it from: -o wide's CAUSE, csv, describe, markdown, junit,
    sarif (json and yaml: `exitCause.line`)."""
    return item.exit_cause.line if item.exit_cause is not None and item.exit_cause.line else None
