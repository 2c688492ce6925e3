"""What a dtype change does to the replicas' KV caches, said by the commands that change a dtype
(judge/capacity via cli/flows/capacity): recover's plan in every format, `setting off` before the
change. The capacities stand in for what helper A's reader (judge/observed.apply setting
Item.capacity) reads from each engine's log: they are injected where the flow reads them
(cli/flows/capacity.read), as engine.capacity.Capacity records with real numbers; the rest of the
path (the argv replay of --max-model-len, the release's byte sizes, the grouping, the renders) is
the real one. Without the injection nothing is read from saved objects: "not read"."""

import io
import json

import pytest
import yaml

from kubectl_kvcache.cli import main
from kubectl_kvcache.cli.flows import capacity as capacity_flow
from kubectl_kvcache.engine.capacity import TOKENS, Capacity

EXAMPLE = "examples/cluster.json"
# qwen-chat (vLLM 0.29.0, --kv-cache-dtype fp8, --max-model-len 32768) on Binding chat-fp8;
# 40,000 tokens at fp8 become about 20,000 at bfloat16: 32768 no longer fits
RECOVER = ["recover", "chat-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "bfloat16"]


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def capacities(monkeypatch):
    """Item.capacity as the reader would set it, per Pod name."""
    given: dict = {}

    def read(client, items, err):
        for item in items:
            if item.pod in given:
                item.capacity = given[item.pod]
    monkeypatch.setattr(capacity_flow, "read", read)
    return given


def test_recover_plan_warns_where_vllm_would_not_start(capacities):
    capacities.update({"qwen-chat-server-0": Capacity(40000, TOKENS), "qwen-chat-server-1": Capacity(41000, TOKENS)})
    code, out, err = _cli(RECOVER)
    assert code == 0, err
    warnings = out[out.index("Warnings:"):]
    line = next(w for w in warnings.splitlines() if "qwen-chat role server" in w)
    assert "ModelDeployment llm-prod/qwen-chat role server (Pod qwen-chat-server-0, vllm 0.29.0): fp8 -> bfloat16" in line
    assert "from 40,000 to about 20,000 tokens, below its max length 32,768 (--max-model-len)" in line
    assert "vLLM refuses to start" in line and "--max-model-len at most about 20000" in line
    # and at the step that creates its replacement, before its manifest
    lines = out.splitlines()
    at = next(n for n, x in enumerate(lines) if x.endswith("Create ModelDeployment llm-prod/qwen-chat-bfloat16"))
    assert lines[at + 1] == ("       KV cache of qwen-chat role server (Pod qwen-chat-server-0): fp8 -> bfloat16: "
                             "capacity 40,000 -> about 20,000 tokens; max length 32,768 (--max-model-len) does not "
                             "fit: vLLM refuses to start")


def test_recover_plan_where_it_fits_says_nothing_alarming(capacities):
    capacities.update({"qwen-chat-server-0": Capacity(90000, TOKENS), "qwen-chat-server-1": Capacity(90000, TOKENS)})
    code, out, _ = _cli(RECOVER + ["-o", "json"])
    plan = json.loads(out)
    qwen = [c for c in plan["capacity"] if c["deployment"] == "qwen-chat"]
    # one replica a role is read (they run one argv on one release): qwen-chat-server-0 of two
    assert [(c["pod"], c["fits"]) for c in qwen] == [("qwen-chat-server-0", True)]
    assert qwen[0]["predictedTokens"] == 45000
    assert not [w for w in plan["warnings"] if "qwen-chat" in w and "refuses" in w]


@pytest.mark.parametrize("fmt", ["json", "yaml", "markdown", "text"])
def test_every_format_carries_the_warning(capacities, fmt):
    capacities.update({"qwen-chat-server-0": Capacity(40000, TOKENS)})
    code, out, err = _cli(RECOVER + ["-o", fmt])
    assert code == 0, err
    if fmt in ("json", "yaml"):
        plan = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        entry = next(c for c in plan["capacity"] if c["pod"] == "qwen-chat-server-0")
        assert (entry["tokens"], entry["predictedTokens"], entry["maxLength"], entry["fits"]) == (40000, 20000, 32768, False)
        assert entry["consequence"] == "refuses-to-start" and entry["maxLengthSource"] == "--max-model-len"
        assert any("below its max length 32,768" in w for w in plan["warnings"])
    else:
        assert "below its max length 32,768" in out and "vLLM refuses to start" in out


def test_recover_from_saved_objects_says_capacity_not_read():
    code, out, err = _cli(RECOVER + ["-o", "json"])
    assert code == 0, err
    plan = json.loads(out)
    qwen = [c for c in plan["capacity"] if c["deployment"] == "qwen-chat"]
    assert qwen and all(c["consequence"] == "not-read" and c["predictedTokens"] is None for c in qwen)
    assert all("saved objects hold no engine logs" in c["reason"] for c in qwen)
    assert qwen[0]["maxLength"] == 32768            # the argv's, read without the engine
    assert any("qwen-chat role server" in w and "KV-cache capacity not read" in w for w in plan["warnings"])
    assert not any("refuses to start" in w for w in plan["warnings"])


def test_a_role_with_its_own_flag_is_not_moved_by_the_binding(capacities):
    # llama-long passes its own --kv-cache-dtype in extraArgs: the new Binding does not change its cache
    code, out, _ = _cli(RECOVER + ["-o", "json"])
    assert not [c for c in json.loads(out)["capacity"] if c["deployment"] == "llama-long"]


# -- setting off: the replicas roll without the operator's --kv-cache-dtype ---------------------

def _off_api(extra_args=None):
    from tests import objects as o
    from tests.fakeapi import FakeAPI, _setting_obj

    role = o.role(extra_args=extra_args)
    md = o.deployment("chat", ns="a", binding_name="b1", roles=[role])
    argv = o.vllm_argv("fp8", extra=["--max-model-len", "262144"]) + list(extra_args or ())
    pod = o.md_pod("chat-server-0", "chat", argv, ns="a")
    return FakeAPI(_setting_obj("true"), [md], [pod], bindings=[o.binding("b1", "fp8", ns="a")])


def test_setting_off_says_which_replica_would_not_start_before_the_change(capacities, monkeypatch):
    from tests.fakeapi import run_cli

    capacities["chat-server-0"] = Capacity(302921, TOKENS)
    api = _off_api()
    code, out, err = run_cli(api, ["setting", "off", "--dry-run=client"], None, monkeypatch)
    assert code == 0, err
    assert "Their KV caches after the roll" in out
    line = next(x for x in out.splitlines() if "ModelDeployment a/chat" in x)
    # the operator's flag dropped: the engine's default "auto", the model's dtype, not reported:
    # UNKNOWN, with what a 16-bit model dtype would do said as a condition
    assert "fp8 -> auto: capacity 302,921 tokens; the new one is UNKNOWN" in line
    assert "at a 16-bit model dtype it would hold about 151,460 tokens, less than the max length 262,144" in line
    assert not api.patches


def test_setting_off_to_auto_is_unknown_even_with_a_model_dtype_reported(capacities, monkeypatch):
    """auto after the roll is the model's dtype or the checkpoint's KV-cache quantization: a model
    dtype a reader reports (a `model_dtype` on Capacity) does not decide it."""
    from tests.fakeapi import run_cli

    capacities["chat-server-0"] = Capacity(302921, TOKENS)
    monkeypatch.setattr(Capacity, "model_dtype", "torch.bfloat16", raising=False)
    code, out, err = run_cli(_off_api(), ["setting", "off", "--dry-run=client"], None, monkeypatch)
    assert code == 0, err
    line = next(x for x in out.splitlines() if "ModelDeployment a/chat" in x)
    assert "the new one is UNKNOWN" in line and "refuses to start" not in line


def test_setting_off_not_read_says_so(monkeypatch):
    from tests.fakeapi import run_cli

    monkeypatch.setattr(capacity_flow, "read", lambda client, items, err: None)
    code, out, err = run_cli(_off_api(), ["setting", "off", "--dry-run=client"], None, monkeypatch)
    assert code == 0, err
    assert "ModelDeployment a/chat role server: KV-cache capacity not read" in out


def test_setting_off_leaves_a_role_with_its_own_flag_alone(capacities, monkeypatch):
    from tests.fakeapi import run_cli

    capacities["chat-server-0"] = Capacity(302921, TOKENS)
    code, out, err = run_cli(_off_api(["--kv-cache-dtype", "fp8_e5m2"]), ["setting", "off", "--dry-run=client"],
                             None, monkeypatch)
    assert code == 0, err
    assert "Their KV caches after the roll" not in out


# -- check --observe: removing a role's own flag moves its replicas to the Binding's dtype ---------

def _own_flag_api(own="fp8", binding_dtype="bfloat16"):
    from tests import objects as o
    from tests.fakeapi import FakeAPI, _setting_obj

    extra = ["--max-model-len", "262144", "--kv-cache-dtype", own]
    md = o.deployment("chat", ns="a", binding_name="b1", roles=[o.role(extra_args=extra)])
    pod = o.md_pod("chat-server-0", "chat", o.vllm_argv(binding_dtype) + extra, ns="a")
    return FakeAPI(_setting_obj("true"), [md], [pod], bindings=[o.binding("b1", binding_dtype, ns="a")])


def test_check_observe_says_the_own_flag_fix_would_stop_vllm(capacities, monkeypatch):
    from tests.fakeapi import run_cli

    capacities["chat-server-0"] = Capacity(302921, TOKENS)
    code, out, err = run_cli(_own_flag_api(), ["check", "-A", "--observe", "-o", "json"], None, monkeypatch)
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "role-own-flag")
    assert "its KV cache then: ModelDeployment a/chat role server (Pod chat-server-0, vllm 0.29.0): fp8 -> bfloat16" \
        in finding["fix"]
    assert "from 302,921 to about 151,460 tokens, below its max length 262,144" in finding["fix"]
    assert "vLLM refuses to start" in finding["fix"]


def test_check_without_observe_reads_no_log_and_says_nothing(monkeypatch):
    from tests.fakeapi import run_cli

    called = []
    monkeypatch.setattr(capacity_flow, "read", lambda *a: called.append(a))
    code, out, err = run_cli(_own_flag_api(), ["check", "-A", "-o", "json"], None, monkeypatch)
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "role-own-flag")
    assert "KV cache" not in finding["fix"] and not called


def test_check_observe_a_larger_cache_fits_and_the_fix_stands(capacities, monkeypatch):
    from tests.fakeapi import run_cli

    capacities["chat-server-0"] = Capacity(302921, TOKENS)
    api = _own_flag_api(own="bfloat16", binding_dtype="fp8")
    code, out, err = run_cli(api, ["check", "-A", "--observe", "-o", "json"], None, monkeypatch)
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "role-own-flag")
    assert "KV cache" not in finding["fix"]


def test_check_observe_from_saved_objects_says_not_read():
    code, out, err = _cli(["check", "-n", "llm-prod", "-f", EXAMPLE, "--observe"])
    assert "--observe reads the engines' logs from a cluster" in err


# -- the real read path: pods/log through the plugin's client ---------------------------------------

# vLLM 0.29.0's start-up line as its code writes it (vllm/v1/core/kv_cache_utils.py:
# "GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx", both counts
# f"{n:,}"), behind its logger's prefix, with the numbers of mitchross/talos-argocd-proxmox PR 1995's
# boot log (302,921 tokens) at --max-model-len 262144 (302921 / 262144 = 1.16x)
V1_LOG = ("(EngineCore_DP0 pid=211) INFO 08-16 10:02:11 [kv_cache_utils.py:2032] GPU KV cache size: 302,921 tokens, "
          "Maximum concurrency for 262,144 tokens per request: 1.16x\n")


def test_setting_off_a_forbidden_log_is_one_note_and_not_read(monkeypatch):
    from tests.fakeapi import run_cli

    api = _off_api()
    api.forbidden.add(("GET", "pods/log"))
    api.logs[("a", "chat-server-0")] = V1_LOG
    code, out, err = run_cli(api, ["setting", "off", "--dry-run=client"], None, monkeypatch)
    assert code == 0, err
    assert err.count("not allowed to get pods/log") == 1
    assert "ModelDeployment a/chat role server: KV-cache capacity not read" in out
    logs = [c for c in api.calls if c.path.endswith("/log")]
    assert len(logs) == 1 and logs[0].query["container"] == "main"      # the one replica, its engine container


def test_recover_reads_one_log_head_a_role_bounded(monkeypatch):
    from tests.fakeapi import run_cli

    api = _off_api()
    api.logs[("a", "chat-server-0")] = V1_LOG
    run_cli(api, ["setting", "off", "--dry-run=client"], None, monkeypatch)
    logs = [c for c in api.calls if c.path.endswith("/log")]
    assert len(logs) == 1 and int(logs[0].query["limitBytes"]) > 0 and "previous" not in logs[0].query


def test_setting_off_from_the_engine_s_own_log(monkeypatch):
    """Needs helper A's reader (engine/capacity.reports, judge/observed.apply setting Item.capacity)."""
    from kubectl_kvcache.engine import capacity as reader_module
    from tests.fakeapi import run_cli

    if not hasattr(reader_module, "reports"):
        pytest.skip("the capacity reader (issue 49 item 1, helper A) is not in this tree")
    api = _off_api()
    api.logs[("a", "chat-server-0")] = V1_LOG
    code, out, err = run_cli(api, ["setting", "off", "--dry-run=client"], None, monkeypatch)
    assert code == 0, err
    # to auto, the model's dtype: the 16-bit case said as a condition, from the capacity read
    assert "fp8 -> auto: capacity 302,921 tokens; the new one is UNKNOWN" in out
    assert "at a 16-bit model dtype it would hold about 151,460 tokens, less than the max length 262,144" in out
