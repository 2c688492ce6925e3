"""load/policy.py: a policy file is untrusted input. Every way a generated file can be wrong is one
PluginError naming the file and the field (the CLI's exit 2 with one line); a good file's rules
and digest are what it says."""

import hashlib
import json

import pytest
import yaml

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.judge import policy as judge_policy
from kubectl_kvcache.load import policy

GOOD = {"apiVersion": policy.API_VERSION, "kind": "Policy", "rules": [
    {"code": "binding-unused", "ignore": True, "reason": "spare"},
    {"code": "binding-auto", "severity": "error", "namespaces": ["llm-prod"], "kinds": ["KVCachePoolBinding"],
     "names": ["legacy-auto"], "selector": "team in (a,b),!tier"}]}


def _write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize("dump", [json.dumps, yaml.safe_dump], ids=["json", "yaml"])
def test_a_good_file(tmp_path, dump):
    path = _write(tmp_path, dump(GOOD))
    got = policy.read(path)
    with open(path, "rb") as f:
        assert got.digest == "sha256:" + hashlib.sha256(f.read()).hexdigest()
    assert [r["code"] for r in got.rules] == ["binding-unused", "binding-auto"]
    assert got.rules[0]["severity"] is None and got.rules[1]["severity"] == "error"
    assert got.rules[1]["where"] == f"{path}: rules[1]"
    rules = judge_policy.from_file(got).rules
    assert rules[1].namespaces == frozenset({"llm-prod"}) and rules[1].selector == "team in (a,b),!tier"


def _mutations():
    """(name, document or raw text, the field the error must name)."""
    def rule(**change):
        r = dict(GOOD["rules"][1], **change)
        return dict(GOOD, rules=[GOOD["rules"][0], {k: v for k, v in r.items() if v is not ...}])
    yield "not an object", [1], "a policy file is one object"
    yield "unknown top key", dict(GOOD, spec={}), "spec: unknown field"
    yield "no apiVersion", {k: v for k, v in GOOD.items() if k != "apiVersion"}, "apiVersion:"
    yield "other apiVersion", dict(GOOD, apiVersion="v1"), "apiVersion:"
    yield "other kind", dict(GOOD, kind="List"), "kind:"
    yield "rules not a list", dict(GOOD, rules={}), "rules:"
    yield "rule not an object", dict(GOOD, rules=["x"]), "rules[0]:"
    yield "unknown rule key", rule(scope="x"), "rules[1].scope: unknown field"
    yield "no code", rule(code=...), "rules[1].code: missing"
    yield "code not a string", rule(code=3), "rules[1].code:"
    yield "unknown code", rule(code="binding-typo"), "rules[1].code: unknown finding code"
    yield "both severity and ignore", rule(ignore=True), "rules[1]: give exactly one"
    yield "neither", rule(severity=...), "rules[1]: give exactly one"
    yield "bad severity", rule(severity="fatal"), "rules[1].severity:"
    yield "severity ignore", rule(severity="ignore"), "rules[1].severity:"
    yield "ignore false", rule(severity=..., ignore=False), "rules[1].ignore:"
    yield "namespaces a string", rule(namespaces="llm-prod"), "rules[1].namespaces:"
    yield "namespaces empty", rule(namespaces=[]), "rules[1].namespaces:"
    yield "bad namespace", rule(namespaces=["Bad_NS"]), "rules[1].namespaces:"
    yield "bad name", rule(names=["a/b"]), "rules[1].names:"
    yield "unknown kind", rule(kinds=["Service"]), "rules[1].kinds: unknown kind"
    yield "bad selector", rule(selector="a=(b"), "rules[1].selector:"
    yield "selector not a string", rule(selector={"a": "b"}), "rules[1].selector:"
    yield "reason not a string", rule(reason=["x"]), "rules[1].reason:"
    yield "reason too long", rule(reason="x" * 5000), "rules[1].reason:"
    yield "too many rules", dict(GOOD, rules=[GOOD["rules"][0]] * (policy.MAX_RULES + 1)), "rules:"
    yield "empty", "", "empty"
    yield "not JSON", '{"apiVersion": ', "not valid JSON"
    yield "NaN", '{"apiVersion": NaN}', "not valid JSON"
    yield "duplicate JSON key", '{"kind": "Policy", "kind": "Policy"}', "'kind' is given twice"
    yield "duplicate YAML key", "kind: Policy\nkind: Policy\n", "'kind' is given twice"
    yield "YAML alias", "a: &x [1]\nb: *x\n", "aliases"
    yield "two YAML documents", "kind: Policy\n---\nkind: Policy\n", "several YAML documents"
    yield "bad YAML", "a: [\n", "not valid YAML"
    yield "a python tag", "!!python/object:os.system {}\n", "not valid YAML"
    yield "not UTF-8", b"\xff\xfe\x00", "not UTF-8"
    yield "too big", "#" * (policy.MAX_BYTES + 1), "larger than"
    yield "deep", "[" * 100000, "not valid JSON"


MUTATIONS = list(_mutations())


@pytest.mark.parametrize("name, doc, field", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_bad_file_is_one_error_naming_the_file_and_field(tmp_path, name, doc, field):
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    path = _write(tmp_path, text)
    with pytest.raises(PluginError) as exc:
        judge_policy.from_file(policy.read(path))
    message = str(exc.value)
    assert message.startswith(f"{path}: ") and field in message and "\n" not in message, message


def test_a_directory_or_a_missing_file(tmp_path):
    for path in (str(tmp_path), str(tmp_path / "missing.yaml")):
        with pytest.raises(PluginError, match=f"^{path}: "):
            policy.read(path)
