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


def test_held_out_rate():
    """The held-out references: every one read as its publisher's convention says (the rate is
    printed for the report)."""
    wrong = [(ref, _got(ref), tuple(expected)) for ref, *expected in HELD_OUT if _got(ref) != tuple(expected)]
    print(f"held-out: {len(HELD_OUT) - len(wrong)}/{len(HELD_OUT)}")
    assert not wrong


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
