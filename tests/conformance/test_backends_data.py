"""kubectl_kvcache/engine/backends.py equals what the cached vLLM wheels say (backends_data.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import backends_data  # noqa: E402

pytestmark = pytest.mark.conformance


def test_shipped_backend_data_equals_the_wheels():
    from kubectl_kvcache.engine.backends import VLLM_BACKENDS
    built = backends_data.build()
    for version, facts in VLLM_BACKENDS.items():
        if os.path.isdir(os.path.join(backends_data.CACHE, "vllm-" + version)):
            assert built.get(version) == facts, version


def test_bfloat16_refused_by_every_cuda_backend_of_0_14_1_not_of_0_18_0():
    from kubectl_kvcache.engine.backends import VLLM_BACKENDS
    for version, refused in (("0.14.1", True), ("0.18.0", False)):
        facts = VLLM_BACKENDS[version]
        cuda = facts["platforms"]["cuda"]
        assert all(("bfloat16" in facts["backends"][b]["refuses"]) == refused for b in cuda), version
