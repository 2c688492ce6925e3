"""Issue 36 item 3: the attention-backend check after the parse, through the real entry point.

vLLM 0.14.1's parser takes `--kv-cache-dtype bfloat16`, but none of its CUDA attention backends
lists it (engine/backends.json, read from the wheels by tools/enginedata/backends_data.py; the
conformance test holds the data to the wheels): the replica exits at start-up. From 0.15 the base
class lists bfloat16. Each case fails on the code before engine/attention.py (OK, no finding, and
recover proposing or accepting bfloat16)."""

import json

import objects as ob
import pytest

from kubectl_kvcache import engine
from kubectl_kvcache.engine import attention
from runcli import kvcache


def _files(tmp_path, version, dtype="bfloat16", image=True, pods=True, binding_name="b1"):
    img = f"vllm/vllm-openai:v{version}"
    md = ob.deployment("md", version=version, binding_name=binding_name, image=img if image else None)
    objs = [ob.binding(binding_name, dtype), md, ob.setting("true")]
    if pods:
        objs.append(ob.md_pod("md-0", "md", ob.vllm_argv(dtype), image=img))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(*objs)))
    return str(path)


@pytest.mark.parametrize("version, refused", [("0.14.1", True), ("0.13.0", True), ("0.18.0", False)])
def test_check_flags_bfloat16_where_no_backend_takes_it(tmp_path, version, refused):
    code, out, err = kvcache("check", "-f", _files(tmp_path, version), "-o", "json")
    doc = json.loads(out)
    codes = [f["code"] for f in doc["findings"]]
    assert ("binding-dtype-rejected" in codes) == refused, (codes, err)
    if refused:
        found = next(f for f in doc["findings"] if f["code"] == "binding-dtype-rejected")
        assert "exits at start-up" in found["message"] and "attention backends" in found["message"]
        assert code == 1
        assert "'bfloat16'" not in found.get("fix", "").split("a new Binding")[-1][:80], found["fix"]


def test_check_without_image_or_pods_says_the_platform_decides(tmp_path):
    """spec.engine.version only, no Pods: the operator synthesizes the image from the InstanceType's
    manufacturer, which the plugin does not read: UNKNOWN naming CUDA's refusal, never OK."""
    code, out, err = kvcache("check", "-f", _files(tmp_path, "0.14.1", image=False, pods=False), "-o", "json")
    doc = json.loads(out)
    unchecked = [f for f in doc["findings"] if f["code"] == "unchecked"]
    assert any("CUDA" in f["message"] and "platform" in f["message"] for f in unchecked), doc["findings"]


@pytest.mark.parametrize("version, status", [("0.14.1", "REJECTED"), ("0.18.0", "OK")])
def test_verify_a_bfloat16_replica(tmp_path, version, status):
    code, out, err = kvcache("verify", "-f", _files(tmp_path, version), "-o", "json")
    item = json.loads(out)["items"][0]
    assert item["status"] == status, item
    if status == "REJECTED":
        assert "No valid attention backend found" in item["reason"]
        assert "recover" in (item.get("fix") or ""), item
        assert code == 1


def test_recover_never_proposes_a_dtype_that_does_not_start(tmp_path):
    """A `bf16` Binding on vLLM 0.14.1: its parser takes bfloat16, the same format, but no backend
    starts with it; the plan must not propose it, and --dtype bfloat16 is refused (exit 2)."""
    path = _files(tmp_path, "0.14.1", dtype="bf16", binding_name="b-bf16")
    code, out, err = kvcache("recover", "b-bf16", "-n", "team", "-f", path, "-o", "json")
    if code == 0:
        assert json.loads(out)["target"]["dtype"] != "bfloat16"
    else:
        assert code == 2 and "bfloat16" not in err.split("error:")[-1].split("did you mean")[-1][:40], err
    code, out, err = kvcache("recover", "b-bf16", "-n", "team", "-f", path, "--dtype", "bfloat16")
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, out, err)
    assert "attention backends" in err and "bfloat16" in err
    code, out, err = kvcache("recover", "b-bf16", "-n", "team", "-f", _files(tmp_path, "0.18.0", dtype="bf16",
                                                                              binding_name="b-bf16"), "-o", "json")
    assert code == 0 and json.loads(out)["target"]["dtype"] == "bfloat16", (code, err)


@pytest.mark.parametrize("version, platform, dtype, verdict", [
    ("0.14.1", "cuda", "bfloat16", attention.REFUSED),
    ("0.14.1", "rocm", "bfloat16", attention.STARTS),    # rocm.py does not check the dtype at selection
    ("0.14.1", None, "bfloat16", attention.UNDECIDED),   # the platform decides
    ("0.18.0", "cuda", "bfloat16", attention.STARTS),
    ("0.14.1", "cuda", "fp8_e4m3", attention.STARTS),
    ("0.14.1", "cuda", "fp8_e5m2", attention.UNDECIDED),  # MLA backends refuse it: the model decides
    ("0.10.2", "cuda", "fp8", attention.STARTS),          # before the per-backend lists
])
def test_check_per_platform(version, platform, dtype, verdict):
    assert attention.check(engine.parse_version(version), dtype, platform).verdict == verdict


def test_a_forced_backend_is_judged_alone():
    c = {"name": "c", "image": "vllm/vllm-openai:v0.14.1", "command": ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]}
    assert engine.predict(c).outcome == engine.OK
    forced = dict(c, env=[{"name": "VLLM_ATTENTION_BACKEND", "value": "FLEX_ATTENTION"}])
    assert engine.predict(forced).outcome == engine.REJECTED             # FLEX_ATTENTION lists only auto
    argv = dict(c, command=c["command"] + ["--attention-backend", "TRITON_ATTN"])
    assert engine.predict(argv).outcome == engine.OK
    secret = dict(c, env=[{"name": "VLLM_ATTENTION_BACKEND",
                           "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
    assert engine.predict(secret).outcome == engine.UNKNOWN


def test_every_release_from_the_first_with_lists_is_in_the_backend_data():
    """No gaps: a release between the first modelled one and the newest would be UNKNOWN (cause
    release); scripts/engine-data --backends --write regenerates engine/backends.json."""
    first = min(attention._facts())
    held = [v for v in engine.all_releases("vllm") if v >= first]
    assert [str(v) for v in held if v not in attention._facts()] == []
