"""One fix vocabulary (judge/fixes.py): check and verify say the same thing about the same
object, computed from the objects as they are now."""

import json

import objects as o

from kubectl_kvcache.judge import checks, verify
from kubectl_kvcache.load import manifests
from kubectl_kvcache.load.scope import Scope


def snapshot(tmp_path, *objs):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return manifests.load_files([str(path)], Scope("team"))


def test_a_rejected_binding_s_fix_names_recover_in_check_and_in_verify(tmp_path):
    snap = snapshot(tmp_path, o.binding("b1", "fp8"), o.setting("true"),
                    o.deployment("chat", engine="SGLang", version="0.5.18"),
                    o.md_pod("chat-0", "chat", o.sglang_argv("fp8"), image="lmsysorg/sglang:v0.5.18"))
    (found,) = [f for f in checks.check(snap).findings if f.code == "binding-dtype-rejected"]
    (item,) = verify.verify(snap).items
    assert item.status == verify.REJECTED
    command = "recover it: kubectl kvcache recover b1 -n team"
    assert found.fix.startswith(command) and command in item.fix


def test_after_the_role_s_flag_was_removed_by_hand_no_fix_says_to_remove_it(tmp_path):
    """The replica still runs the role's own --kv-cache-dtype (rendered before the edit); the
    ModelDeployment no longer has it. verify: nothing to change, it drops it when it rolls; check:
    no finding about the role."""
    pod = o.md_pod("chat-0", "chat", o.vllm_argv("fp8", ["--max-model-len", "4096", "--kv-cache-dtype",
                                                         "fp8_e5m2"]))
    edited = o.deployment("chat", roles=[o.role(extra_args=["--max-model-len", "4096"])])
    snap = snapshot(tmp_path, o.binding("b1", "fp8"), o.setting("true"), edited, pod)
    (item,) = verify.verify(snap).items
    assert item.status == verify.MISMATCH
    assert "remove" not in item.fix and "no longer in ModelDeployment chat" in item.fix, item.fix
    assert not [f for f in checks.check(snap).findings if f.code == "role-own-flag"]
    # while the spec still has it, both say to remove it, with the same words
    still = o.deployment("chat", roles=[o.role(extra_args=["--max-model-len", "4096", "--kv-cache-dtype",
                                                           "fp8_e5m2"])])
    snap = snapshot(tmp_path, o.binding("b1", "fp8"), o.setting("true"), still, pod)
    (item,) = verify.verify(snap).items
    (found,) = [f for f in checks.check(snap).findings if f.code == "role-own-flag"]
    assert "from ModelDeployment chat (the role's own --kv-cache-dtype)" in item.fix
    assert "from ModelDeployment chat (the role's own --kv-cache-dtype)" in found.fix
