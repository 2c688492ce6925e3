"""kubectl_kvcache/engine/gpus.json equals what the cached vLLM wheels say (tools/enginedata/
gpus_data.py), and the static reading agrees with the wheels' own code run: each backend's
supports_compute_capability, compiled alone from the wheel's source with DeviceCapability as
vllm/platforms/interface.py defines it (a NamedTuple of major, minor), is called on every
capability and compared with what the reader decided (a body that needs more than that is left to
the reader: counted, never guessed)."""

import ast
import os
import typing

import pytest

import backends_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
import gpus_data  # noqa: E402

from kubectl_kvcache.engine import knowledge  # noqa: E402

pytestmark = pytest.mark.conformance


class DeviceCapability(typing.NamedTuple):      # vllm/platforms/interface.py, as each release defines it
    major: int
    minor: int


def _sample(gpus):
    from releases import TIER
    return [v for v in dict.fromkeys(list(TIER["vllm"]) + ["0.11.0", "0.16.0", "0.24.0"]) if v in gpus]


def test_shipped_gpu_data_equals_the_wheels():
    gpus = knowledge.load("gpus")
    versions = _sample(gpus)
    assert {"0.11.0", "0.16.0", "0.24.0"} <= set(versions)
    for version in versions:
        root = os.path.join(backends_data.CACHE, "vllm-" + version)
        assert gpus_data.describe(root, backends_data.accepted(version)) == gpus[version], version


def test_releases_before_0_11_are_not_modelled_and_0_11_on_are():
    gpus = knowledge.load("gpus")
    assert min(gpus, key=lambda v: tuple(map(int, v.split(".")))) == "0.11.0"
    assert "0.10.2" not in gpus
    assert gpus_data._falls_back_to_v0(os.path.join(backends_data.CACHE, "vllm-0.10.2"))
    assert not gpus_data._falls_back_to_v0(os.path.join(backends_data.CACHE, "vllm-0.11.0"))


def _run_alone(fn_node, cc):
    """The method's body compiled alone (a classmethod: cls unused) and called; None when it
    needs a name beyond DeviceCapability."""
    fn = ast.FunctionDef(name="f", args=fn_node.args, body=fn_node.body, decorator_list=[], returns=None,
                         type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    scope = {"DeviceCapability": DeviceCapability}
    exec(compile(module, "<wheel>", "exec"), scope)     # noqa: S102  (the wheel's own expression)
    try:
        return scope["f"](None, DeviceCapability(*cc))
    except NameError:
        return None


def test_the_static_reading_of_supports_compute_capability_agrees_with_running_it():
    compared = 0
    for version in _sample(knowledge.load("gpus")):
        root = os.path.join(backends_data.CACHE, "vllm-" + version)
        layout = next(p for p in backends_data.LAYOUTS if os.path.exists(os.path.join(root, p[0])))
        registry = backends_data._registry(root, layout[1])
        base = (layout[0], "AttentionBackend")
        for name in backends_data.platform_candidates(root, "cuda.py") or ():
            where = gpus_data._class_of(root, registry, name)
            found = where and gpus_data._classmethod(root, *where, "supports_compute_capability", base)
            if not found:
                continue
            for cap in gpus_data.CAPABILITIES:
                cc = tuple(int(p) for p in cap.split("."))
                ran = _run_alone(found[1], cc)
                if ran is None:
                    continue
                assert gpus_data.supports_capability(root, *where, cc, base) == ran, (version, name, cap)
                compared += 1
    assert compared > 100
