"""judge/admission.py: the generated ValidatingAdmissionPolicies. Deterministic, their rule count,
and every (engine, release, dtype) decision of the engine data equal to what their CEL decides,
evaluated by a real CEL implementation (tests/judge/admission_cel.py: celpy). Releases at odd
positions are held out to test_zz_admission_heldout.py."""

import json

import pytest

from kubectl_kvcache import engine
from kubectl_kvcache.judge import admission
from objects import binding, deployment, role
from admission_cel import decisions_agree, evaluate, generated, policy, releases, variables
from runcli import kvcache

OBJECTS = (binding("b-fp8", "fp8", ns="team", pool="pool-a"),
           binding("b-bf16", "bf16", ns="team", pool="pool-b"),
           deployment("v", engine="vLLM", version="0.29.0", binding_name="b-fp8"),
           deployment("s", engine="sglang", version="0.5.18", binding_name="b-bf16"),
           deployment("early", engine="vllm", version="0.29.0", binding_name="b-later"),
           deployment("own", engine="vllm", version="0.29.0", binding_name="b-fp8",
                      roles=[role(command=["vllm", "serve", "m"])]),
           deployment("unknown", engine="vllm", version="9.9.9", binding_name="b-bf16"))


def test_generation_is_deterministic(tmp_path):
    first = generated(tmp_path, *OBJECTS)
    again = generated(tmp_path, *reversed(OBJECTS))
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    code, y1, _ = kvcache("admission", "-A", "-f", str(tmp_path / "objects.json"))
    code2, y2, _ = kvcache("admission", "-A", "-f", str(tmp_path / "objects.json"))
    assert code == code2 == 0 and y1 == y2 and y1.startswith("apiVersion: v1\n")


def test_objects_and_rule_count(tmp_path):
    doc = generated(tmp_path, *OBJECTS)
    kinds = [(i["kind"], i["metadata"]["name"]) for i in doc["items"]]
    assert kinds == [("ValidatingAdmissionPolicy", admission.BINDINGS_POLICY),
                     ("ValidatingAdmissionPolicyBinding", admission.BINDINGS_POLICY),
                     ("ValidatingAdmissionPolicy", admission.DEPLOYMENTS_POLICY),
                     ("ValidatingAdmissionPolicyBinding", admission.DEPLOYMENTS_POLICY)]
    counts = {p["metadata"]["name"]: len(admission.expressions(p)) for p in doc["items"]
              if p["kind"] == "ValidatingAdmissionPolicy"}
    # bindings: 8 variables + validation + message; deployments: 2 match conditions + 10 variables + 2
    assert counts == {admission.BINDINGS_POLICY: 10, admission.DEPLOYMENTS_POLICY: 14}
    sets, index = admission.index()
    assert len(sets) < sum(len(v) for v in index.values()) / 5     # compressed: few distinct sets
    assert all(b["spec"]["validationActions"] == ["Deny"] for b in doc["items"][1::2])


def test_what_the_snapshot_says_is_written_in(tmp_path):
    v = variables(policy(generated(tmp_path, *OBJECTS), admission.BINDINGS_POLICY))
    pools = evaluate(v["pools"])
    users = evaluate(v["users"])
    # the take-over role renders no dtype; an unknown release is left to check
    assert [list(e) for e in pools["pool-a"]] == [["vllm", "0.29.0", "team/v"]]
    assert [list(e) for e in pools["pool-b"]] == [["sglang", "0.5.18", "team/s"]]
    assert [list(e) for e in users["team/b-later"]] == [["vllm", "0.29.0", "team/early"]]
    d = variables(policy(generated(tmp_path, *OBJECTS), admission.DEPLOYMENTS_POLICY))
    assert dict(evaluate(d["dtypes"])) == {"team/b-fp8": "fp8", "team/b-bf16": "bf16"}


def test_one_namespace_binds_to_it(tmp_path):
    doc = generated(tmp_path, *OBJECTS, args=("-n", "team"))
    for b in doc["items"][1::2]:
        assert b["spec"]["matchResources"]["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": "team"}}
    assert "matchResources" not in generated(tmp_path, *OBJECTS)["items"][1]["spec"]


@pytest.mark.parametrize("given,code,words", [
    (["Warn"], 0, None), (["audit,warn"], 0, None),
    (["Deny,Warn"], 2, "Deny and Warn"), (["Refuse"], 2, "'Refuse' is not one of"),
])
def test_validation_actions(tmp_path, given, code, words):
    generated(tmp_path, *OBJECTS)
    args = [a for g in given for a in ("--validation-actions", g)]
    rc, out, err = kvcache("admission", "-A", "-f", str(tmp_path / "objects.json"), "-o", "json", *args)
    assert rc == code, err
    if code == 2:
        assert err.startswith("error: ") and words in err and err.count("\n") == 1
    else:
        actions = json.loads(out)["items"][1]["spec"]["validationActions"]
        assert actions == [{"warn": "Warn", "audit": "Audit"}[w.strip().lower()] for g in given for w in g.split(",")]


def test_every_decision_agrees_with_the_engine_data(tmp_path):
    checked = decisions_agree(tmp_path, releases()[0::2], OBJECTS)
    assert checked > 1000


@pytest.mark.parametrize("text", ["fp8", "it's", "back\\slash", "new\nline", "tab\t\x7f", "ünï"])
def test_strings_are_cel_literals_of_themselves(text):
    assert str(evaluate(admission._q(text))) == text
