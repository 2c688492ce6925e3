"""`verify --policy FILE`, `--ignore STATUS`, `--severity STATUS=LEVEL` end to end through cli.main,
on the front page's example (a REJECTED, two MISMATCH and a MISSING replica): the exit code in
every -o format (what is ignored or lowered no longer fails, a status --fail-on tolerates raised
to error does), the policy named in every format's header, an ignored replica still in the
machine-readable output (json/yaml `suppressed`, SARIF `suppressions`, markdown/junit notes),
the selectors, and a bad policy or a policy with --watch/--wait is exit 2 with one `error:` line."""

import hashlib
import json
import os
import xml.etree.ElementTree as ET

import pytest
import yaml

from runcli import kvcache
from kubectl_kvcache.load.policy import API_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
FORMATS = ("table", "wide", "describe", "json", "yaml", "markdown", "junit", "sarif")
NOT_OK = {"deepseek-sgl-server-0": "REJECTED", "embed-takeover-embed-0": "MISMATCH",
          "llama-long-server-0": "MISMATCH", "mistral-legacy-server-0": "MISSING"}


def verify(*argv):
    return kvcache("verify", "-A", "-f", EXAMPLE, *argv)


def _items(*argv):
    code, out, err = verify("-o", "json", *argv)
    data = json.loads(out)
    return code, data


def _policy(tmp_path, rules, name="policy.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"apiVersion": API_VERSION, "kind": "Policy", "rules": rules}))
    return str(path)


def test_the_example_fails_as_the_tests_below_assume():
    code, data = _items()
    assert code == 1 and {i["pod"]: i["status"] for i in data["items"] if i["status"] != "OK"} == NOT_OK
    assert "policy" not in data and "suppressed" not in data


@pytest.mark.parametrize("fmt", FORMATS)
def test_ignoring_every_failing_status_passes_in_any_format(fmt):
    assert verify("-o", fmt)[0] == 1
    code, out, err = verify("-o", fmt, "--ignore", "REJECTED,MISMATCH", "--ignore", "missing")
    assert code == 0, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_lowering_passes_and_raising_what_fail_on_tolerates_fails_in_any_format(fmt):
    code, out, err = verify("-o", fmt, "--severity", "REJECTED=warning,MISMATCH=info", "--severity", "MISSING=warning")
    assert code == 0, err
    assert verify("-o", fmt, "--fail-on", "UNKNOWN")[0] == 0
    code, out, err = verify("-o", fmt, "--fail-on", "UNKNOWN", "--severity", "MISSING=error")
    assert code == 1, err
    assert verify("-o", fmt, "--fail-on", "MISSING", "--ignore", "MISSING")[0] == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_the_policy_and_keeps_what_it_ignored(tmp_path, fmt):
    path = _policy(tmp_path, [{"code": "MISMATCH", "ignore": True, "reason": "tracked in JIRA-2"},
                              {"code": "REJECTED", "ignore": True},
                              {"code": "MISSING", "severity": "warning"}])
    with open(path, "rb") as f:
        digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    code, out, err = verify("-o", fmt, "--policy", path)
    assert code == 0, err
    header = f"{path} ({digest}): 4 results changed, 3 of them ignored"
    if fmt in ("table", "wide", "describe"):
        assert header in err and "policy " + header in err.splitlines()[-2]      # the summary, then next:
        assert "llama-long-server-0" not in out and "deepseek-sgl-server-0" not in out
        assert "mistral-legacy-server-0" in out
    elif fmt in ("json", "yaml"):
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert data["policy"] == {"file": path, "digest": digest, "rules": 3, "changed": 4, "ignored": 3}
        assert sorted((s["pod"], s["status"]) for s in data["suppressed"]) == sorted(
            (p, s) for p, s in NOT_OK.items() if s != "MISSING")
        llama = next(s for s in data["suppressed"] if s["pod"] == "llama-long-server-0")
        assert llama["policy"] == {"severity": "error", "rule": f"{path}: rules[0]", "reason": "tracked in JIRA-2"}
        (missing,) = [i for i in data["items"] if i["status"] == "MISSING"]
        assert missing["severity"] == "warning" and missing["policy"]["severity"] == "error"
        assert data["summary"]["MISMATCH"] == 0 and data["summary"]["total"] == 7
    elif fmt == "markdown":
        assert f"- **Policy:** {header}" in out and "Nothing fails." in out
        assert "- **suppressed error** MISMATCH `llm-prod/llama-long/server/0`" in out
    elif fmt == "junit":
        import junit_schema

        junit_schema.schema().validate(out)
        root = ET.fromstring(out)
        props = {p.get("name"): p.get("value") for p in root.iter("property")}
        assert props["Policy"] == header and root.get("failures") == "0"
        assert any((s.text or "").startswith("suppressed error REJECTED: ") for s in root.iter("system-out"))
    else:
        import sarif_schema

        log = json.loads(out)
        assert not list(sarif_schema.validator().iter_errors(log))
        (run,) = log["runs"]
        assert run["invocations"][0]["exitCode"] == 0
        suppressed = {r["ruleId"]: r["suppressions"] for r in run["results"] if "suppressions" in r}
        assert set(suppressed) == {"MISMATCH", "REJECTED"}
        assert [r["ruleId"] for r in run["results"] if "suppressions" not in r] == ["MISSING"]
        assert suppressed["MISMATCH"][0]["justification"] == f"ignored by {path}: rules[0]: tracked in JIRA-2"
        assert all(r["level"] != "error" for r in run["results"] if "suppressions" not in r)


def test_describe_says_which_rule_changed_a_replica():
    code, out, err = verify("-o", "describe", "--severity", "MISSING=info")
    block = next(b for b in out.split("\n\n") if "mistral-legacy-server-0" in b)
    assert "Policy:     --severity: was error, now info" in block
    assert code == 1        # the others still fail


def test_selectors_namespaces_kinds_names_and_the_pods_labels(tmp_path):
    def left(rule):
        code, data = _items("--policy", _policy(tmp_path, [dict(rule, ignore=True)]))
        return code, sorted(s["pod"] for s in data["suppressed"])

    assert left({"code": "MISMATCH"}) == (1, ["embed-takeover-embed-0", "llama-long-server-0"])
    assert left({"code": "MISMATCH", "namespaces": ["llm-research"]}) == (1, [])
    assert left({"code": "MISMATCH", "kinds": ["ModelDeployment"]}) == (1, [])     # they have Pods
    assert left({"code": "MISMATCH", "kinds": ["Pod"], "names": ["llama-long-server-0"]}) == (
        1, ["llama-long-server-0"])
    assert left({"code": "MISMATCH", "selector": "app.kubernetes.io/instance=embed-takeover"}) == (
        1, ["embed-takeover-embed-0"])
    assert left({"code": "MISMATCH", "selector": "app.kubernetes.io/instance!=embed-takeover"}) == (
        1, ["llama-long-server-0"])
    # the last matching rule wins; the flags come after the file
    path = _policy(tmp_path, [{"code": "MISSING", "ignore": True}, {"code": "MISSING", "severity": "error"}])
    code, data = _items("--policy", path)
    assert data["suppressed"] == [] and data["policy"]["changed"] == 0
    code, data = _items("--policy", path, "--ignore", "MISSING")
    assert [s["pod"] for s in data["suppressed"]] == ["mistral-legacy-server-0"]
    assert data["suppressed"][0]["policy"]["rule"] == "--ignore"


BAD = [
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- code: binding-auto\n  ignore: true\n", "rules[0].code"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- code: OK\n  severity: error\n", "rules[0].code"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- {{code: MISMATCH, ignore: true, kinds: [Deployment]}}\n",
     "rules[0].kinds"),
    (f"apiVersion: {API_VERSION}\nkind: Policy\nrules:\n- code: MISMATCH\n  severity: fatal\n", "rules[0].severity"),
    ("apiVersion: v9\nkind: Policy\n", "apiVersion"),
    ("a: [\n", "not valid YAML"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text, field", BAD, ids=[b[1] + str(n) for n, b in enumerate(BAD)])
def test_a_bad_policy_is_exit_2_with_one_line_naming_file_and_field(tmp_path, fmt, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out, err = verify("-o", fmt, "--policy", str(path))
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"error: {path}: ") and field in line and "Traceback" not in err


@pytest.mark.parametrize("argv", [("--ignore", "binding-auto"), ("--ignore", "OK"), ("--severity", "MISMATCH"),
                                  ("--severity", "MISMATCH=fatal"), ("--policy", "/no/such/policy.yaml")])
def test_bad_policy_flags_are_exit_2_with_one_line(argv):
    code, out, err = verify(*argv)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: ") and (argv[0] in line or argv[1] in line), line


@pytest.mark.parametrize("follow", ["--wait", "--watch"])
@pytest.mark.parametrize("argv", [("--ignore", "MISSING"), ("--severity", "MISSING=warning"),
                                  ("--policy", "/no/such/policy.yaml")])
def test_a_policy_never_judges_a_rollout(follow, argv):
    """--wait's `done` is the rollout's: a policy is refused with it before anything is read."""
    code, out, err = kvcache("verify", "-n", "llm-prod", follow, *argv, "--kubeconfig", os.devnull)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: --policy/--ignore/--severity judge a report, not a rollout") and follow in line


def test_the_documented_example_policy_runs():
    code, data = _items("--policy", os.path.join(ROOT, "examples", "verify-policy.yaml"))
    assert code == 1 and data["policy"]["changed"] == 2 and data["policy"]["ignored"] == 1
    assert [s["pod"] for s in data["suppressed"]] == ["embed-takeover-embed-0"]


def test_policy_completes_file_names():
    code, out, err = kvcache("__complete", "verify", "--policy", "")
    assert out.splitlines()[-1] == ":0"
