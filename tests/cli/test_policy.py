"""`check --policy FILE`, `--ignore CODE`, `--severity CODE=LEVEL` end to end through cli.main:
the exit code in every -o format (an ignored error no longer fails, a warning raised to error
does), the policy named with its digest in every format's header, an ignored finding still
counted in machine-readable output, and a bad policy is exit 2 with one `error:` line."""

import hashlib
import json
import os
import xml.etree.ElementTree as ET

import pytest
import yaml

from runcli import kvcache
from kubectl_kvcache.judge.checks import CODES
from kubectl_kvcache.load.policy import API_VERSION
from kubectl_kvcache.operator.api import GROUP, VERSION

FORMATS = ("table", "wide", "describe", "json", "yaml", "markdown", "junit")


def md(name, binding, engine="vLLM", version="0.29.0", ns="team", labels=None):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"engine": {"name": engine, "version": version}, "kvCache": {"poolRef": {"name": binding}},
                     "roles": [{"name": "server", "kind": "server"}]}}


def kvb(name, dtype, ns="team", labels=None):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"poolRef": {"name": "p"}, "domain": {"name": name, "blockSize": 16, "dtype": dtype}}}


SETTING_OFF = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
               "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
               "spec": {"value": "false"}, "status": {"value": "false"}}


@pytest.fixture
def files(tmp_path):
    def write(name, doc):
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return str(path)
    # a warning only (a stored auto Binding), and an error only (a dtype SGLang 0.5.18 rejects)
    warning = write("warning.json", {"apiVersion": "v1", "kind": "List", "items": [
        kvb("auto", "auto"), md("m", "auto"), SETTING_OFF]})
    error = write("error.json", {"apiVersion": "v1", "kind": "List", "items": [
        kvb("fp8", "fp8", labels={"team": "research"}), md("s", "fp8", engine="SGLang", version="0.5.18"),
        SETTING_OFF]})
    return write, warning, error


def _run(*argv):
    return kvcache(*argv)


def _codes(path, fmt):
    code, out, err = _run("check", "-f", path, "-o", "json")
    return {f["code"]: f["severity"] for f in json.loads(out)["findings"]}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_ignored_error_no_longer_fails_in_any_format(files, fmt):
    _, _, error = files
    assert _codes(error, fmt)["binding-dtype-rejected"] == "error"
    assert _run("check", "-f", error, "-o", fmt)[0] == 1
    code, out, err = _run("check", "-f", error, "-o", fmt, "--ignore", "binding-dtype-rejected")
    assert code == 0, err
    assert "binding-dtype-rejected" in out + err or fmt in ("table", "wide", "describe")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_warning_raised_to_error_fails_in_any_format(files, fmt):
    _, warning, _ = files
    assert _codes(warning, fmt)["binding-auto"] == "warning"
    assert _run("check", "-f", warning, "-o", fmt)[0] == 0
    code, out, err = _run("check", "-f", warning, "-o", fmt, "--severity", "binding-auto=error")
    assert code == 1, err
    code, out, err = _run("check", "-f", warning, "-o", fmt, "--severity", "binding-auto=info", "--strict")
    assert code == 0, err


def _policy(write, rules):
    return write("policy.yaml", yaml.safe_dump({"apiVersion": API_VERSION, "kind": "Policy", "rules": rules}))


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_the_policy_its_digest_and_what_it_changed(files, fmt):
    write, _, error = files
    path = _policy(write, [{"code": "binding-dtype-rejected", "ignore": True, "reason": "tracked in JIRA-1"}])
    with open(path, "rb") as f:
        digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    code, out, err = _run("check", "-f", error, "-o", fmt, "--policy", path)
    assert code == 0, err
    header = f"{path} ({digest}): 1 finding changed, 1 of them ignored"
    if fmt in ("table", "wide", "describe"):
        assert header in err.splitlines()[-1] and "binding-dtype-rejected" not in out
    elif fmt in ("json", "yaml"):
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert data["policy"] == {"file": path, "digest": digest, "rules": 1, "changed": 1, "ignored": 1}
        (suppressed,) = data["suppressed"]
        assert suppressed["code"] == "binding-dtype-rejected" and suppressed["severity"] == "error"
        assert suppressed["policy"] == {"severity": "error", "rule": f"{path}: rules[0]", "reason": "tracked in JIRA-1"}
        assert "binding-dtype-rejected" not in {f["code"] for f in data["findings"]}
    elif fmt == "markdown":
        assert f"- **Policy:** {header}" in out
        assert "suppressed error" in out and "binding-dtype-rejected" in out
    else:
        import junit_schema

        junit_schema.schema().validate(out)
        root = ET.fromstring(out)
        props = {p.get("name"): p.get("value") for p in root.iter("property")}
        assert props["Policy"] == header and root.get("failures") == "0"
        assert any("suppressed error binding-dtype-rejected" in (s.text or "") for s in root.iter("system-out"))


def test_scope_by_namespace_kind_name_and_label(files):
    write, _, _ = files
    objs = write("many.json", {"apiVersion": "v1", "kind": "List", "items": [
        kvb("a", "auto", ns="one", labels={"team": "research"}), md("ma", "a", ns="one"),
        kvb("b", "auto", ns="two", labels={"team": "prod"}), md("mb", "b", ns="two"),
        kvb("c", "auto", ns="two"), md("mc", "c", ns="two"), SETTING_OFF]})

    def errors(rules):
        code, out, err = _run("check", "-A", "-f", objs, "-o", "json", "--policy", _policy(write, rules))
        assert err == "", err
        found = json.loads(out)["findings"]
        return code, sorted(f["name"] for f in found if f["code"] == "binding-auto" and f["severity"] == "error")

    rule = {"code": "binding-auto", "severity": "error"}
    assert errors([rule]) == (1, ["a", "b", "c"])
    assert errors([dict(rule, namespaces=["two"])]) == (1, ["b", "c"])
    assert errors([dict(rule, names=["c"])]) == (1, ["c"])
    assert errors([dict(rule, kinds=["ModelDeployment"])]) == (0, [])
    assert errors([dict(rule, selector="team=research")]) == (1, ["a"])
    assert errors([dict(rule, selector="team!=research")]) == (1, ["b", "c"])     # no label: != matches
    assert errors([dict(rule, selector="team")]) == (1, ["a", "b"])
    assert errors([rule, {"code": "binding-auto", "ignore": True, "namespaces": ["one"]}]) == (1, ["b", "c"])


BAD = [
    ("apiVersion: v9\nkind: Policy\n", "apiVersion"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- code: no-such-code\n  ignore: true\n", "rules[0].code"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- code: binding-auto\n  severity: fatal\n", "rules[0].severity"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- {{code: binding-auto, ignore: true, namespace: x}}\n",
     "rules[0].namespace"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- {{code: binding-auto, ignore: true, selector: 'a in'}}\n",
     "rules[0].selector"),
    ("{not json", "not valid"),
    ("a: *b\n", "aliases"),
    ("a: [\n", "not valid YAML"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text, field", BAD, ids=[b[1] for b in BAD])
def test_a_bad_policy_is_exit_2_with_one_line_naming_file_and_field(files, fmt, text, field):
    write, warning, _ = files
    path = write("bad.yaml", text)
    code, out, err = _run("check", "-f", warning, "-o", fmt, "--policy", path)
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"error: {path}: ") and field in line and "Traceback" not in err


@pytest.mark.parametrize("argv", [("--ignore", "nope"), ("--severity", "binding-auto"),
                                  ("--severity", "binding-auto=fatal"), ("--policy", "/no/such/policy.yaml")])
def test_bad_policy_flags_are_exit_2_with_one_line(files, argv):
    _, warning, _ = files
    code, out, err = _run("check", "-f", warning, *argv)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: ") and (argv[0] in line or argv[1] in line), line


def test_no_abbreviations_and_the_registry_names_every_code():
    code, out, err = _run("check", "--ignor", "binding-auto", "-f", os.devnull)
    assert code == 2
    code, out, err = _run("check", "-f", os.devnull, "--ignore", "x")
    assert all(c in err for c in CODES)


def test_the_documented_example_policy_runs():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code, out, err = _run("check", "-A", "-f", os.path.join(root, "examples", "cluster.json"), "-o", "json",
                          "--policy", os.path.join(root, "examples", "policy.yaml"))
    data = json.loads(out)
    assert data["policy"]["changed"] == 5 and data["policy"]["ignored"] == 2
    assert {f["name"] for f in data["suppressed"]} == {"legacy-auto", "unused"}


def test_describe_says_which_rule_changed_a_finding(files):
    _, warning, _ = files
    code, out, err = _run("check", "-f", warning, "-o", "describe", "--severity", "binding-auto=error")
    block = next(b for b in out.split("\n\n") if "binding-auto" in b)
    assert "Severity:   error" in block and "Policy:     --severity: was warning" in block


def test_policy_completes_file_names():
    code, out, err = _run("__complete", "check", "--policy", "")
    assert out.splitlines()[-1] == ":0"         # cobra's ShellCompDirectiveDefault: the shell's file names


def test_sarif_lists_what_the_policy_ignored_as_suppressed_results(files):
    """docs/policy.md: an ignored finding stays in -o sarif, with `suppressions` (kind external)."""
    import sarif_schema

    write, _, error = files
    path = _policy(write, [{"code": "binding-dtype-rejected", "ignore": True, "reason": "tracked in JIRA-1"}])
    code, out, err = _run("check", "-f", error, "-o", "sarif", "--policy", path)
    log = json.loads(out)
    assert code == 0 and not list(sarif_schema.validator().iter_errors(log))
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "binding-dtype-rejected"]
    assert result["suppressions"] == [{"kind": "external", "status": "accepted",
                                       "justification": f"ignored by {path}: rules[0]: tracked in JIRA-1"}]
    assert result["properties"]["failed"] is False
