"""kubectl_kvcache/engine/backends.json equals what the cached vLLM wheels say (tools/enginedata/backends_data.py)."""

import os
import sys

import pytest

import backends_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)

from kubectl_kvcache.engine import knowledge  # noqa: E402

pytestmark = pytest.mark.conformance


def test_shipped_backend_data_equals_the_wheels():
    """This run's slice of the releases (releases.TIER, every release within the rotation) and the
    two the issue names; `scripts/engine-data --backends` compares them all."""
    from releases import TIER
    VLLM_BACKENDS = knowledge.load("backends")
    versions = [v for v in dict.fromkeys(list(TIER["vllm"]) + ["0.14.1", "0.18.0"]) if v in VLLM_BACKENDS]
    assert "0.14.1" in versions and len(versions) >= 2
    for version in versions:
        root = os.path.join(backends_data.CACHE, "vllm-" + version)
        assert os.path.isdir(root), f"vllm {version} is not in the wheel cache (scripts/engine-wheels)"
        assert backends_data.describe(root, backends_data.accepted(version)) == VLLM_BACKENDS[version], version


def test_bfloat16_refused_by_every_cuda_backend_of_0_14_1_not_of_0_18_0():
    VLLM_BACKENDS = knowledge.load("backends")
    for version, refused in (("0.14.1", True), ("0.18.0", False)):
        facts = VLLM_BACKENDS[version]
        cuda = facts["platforms"]["cuda"]
        assert all(("bfloat16" in facts["backends"][b]["refuses"]) == refused for b in cuda), version
