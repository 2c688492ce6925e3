"""Honest scope, offline: -l means the same objects in check and verify (examples/)."""

import json
import os

from runcli import kvcache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
SELECTOR = "app.kubernetes.io/instance=llama-long"


def test_check_and_verify_select_the_same_objects_with_l():
    """The selector is on the Pods (the operator's instance label), not on the ModelDeployment:
    verify shows the replica's MISMATCH; check shows the role finding behind it."""
    code, out, err = kvcache("verify", "-A", "-f", EXAMPLE, "-l", SELECTOR, "-o", "json")
    assert code == 1
    items = json.loads(out)["items"]
    assert {(i["owner"]["name"], i["status"], i["binding"]) for i in items} == {("llama-long", "MISMATCH", "chat-fp8")}
    code, out, err = kvcache("check", "-A", "-f", EXAMPLE, "-l", SELECTOR, "-o", "json")
    assert code == 1, err
    report = json.loads(out)
    about = {(f["code"], f["kind"], f["name"]) for f in report["findings"] if f["code"] != "setting"}
    assert ("role-own-flag", "ModelDeployment", "llama-long") in about
    assert about == {("role-own-flag", "ModelDeployment", "llama-long")}
    code, out, err = kvcache("roles", "-A", "-f", EXAMPLE, "-l", SELECTOR, "-o", "json")
    assert {r["deployment"] for r in json.loads(out)["items"]} == {"llama-long"}


def test_each_command_s_help_says_what_l_selects():
    for command, says in (("check", "as verify selects Pods"), ("verify", "Pods"),
                          ("bindings", "by their own labels"),
                          ("roles", "as verify selects Pods")):
        code, out, _ = kvcache(command, "--help")
        selector = " ".join(out.split())
        assert code == 0 and "-l SELECTOR, --selector SELECTOR" in selector, command
        assert says in selector.split("--selector SELECTOR", 1)[1].split(" -", 1)[0], (command, selector)
