"""engine/images.py against real image references (tests/engine/image_refs.py)."""

import pytest

from kubectl_kvcache.engine.images import read, split
from tests.engine.image_refs import DEV, HELD_OUT


def _got(ref):
    found = read(ref)
    return (found.engine, str(found.release) if found.release else None,
            str(found.before) if found.before else None, found.platform)


@pytest.mark.parametrize("row", DEV, ids=[r[0] for r in DEV])
def test_dev_references(row):
    ref, *expected = row
    assert _got(ref) == tuple(expected), read(ref).why


def _rate(rows):
    return sum(1 for ref, *expected in rows if _got(ref) == tuple(expected)) / len(rows)


def test_held_out_rate():
    """The held-out references, set aside before engine/images.py was written and not tuned to:
    at least 90% read as their publisher's convention says. Measured at its first run: 21 of 22
    (nvcr.io/nvidia/vllm, NVIDIA's own build, is not a family the table knows: engine unknown)."""
    wrong = [(ref, _got(ref), tuple(expected)) for ref, *expected in HELD_OUT if _got(ref) != tuple(expected)]
    print(f"dev: {_rate(DEV):.0%} of {len(DEV)}; held-out: {_rate(HELD_OUT):.0%} of {len(HELD_OUT)}; wrong: {wrong}")
    assert _rate(HELD_OUT) >= 0.9, wrong


def test_unreadable_says_why():
    for ref in ("vllm/vllm-openai:nightly", "lmsysorg/sglang@sha256:" + "0" * 64, "ghcr.io/acme/vllm-openai:v1"):
        found = read(ref)
        assert found.release is None and found.why


def test_declared_engine_against_the_image():
    found = read("lmsysorg/sglang:v0.5.18-cu129", "vllm")
    assert found.release is None and "not the declared vllm" in found.why


def test_split():
    parts = split("localhost:5000/vllm/vllm-openai:v0.6.3@sha256:ab")
    assert (parts.registry, parts.repository, parts.tag, parts.digest) == (
        "localhost:5000", "vllm/vllm-openai", "v0.6.3", "sha256:ab")
    parts = split("library/ubuntu")
    assert (parts.registry, parts.repository, parts.tag) == ("", "ubuntu", None)
