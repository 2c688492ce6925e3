"""`kubectl kvcache engines`, --engine-data FILE / $KVCACHE_ENGINE_DATA / the user data directory,
and a deployment on a release newer than the engine data, through the real entry point."""

import json

import pytest
import yaml

import enginefiles
import objects as o
from runcli import kvcache as run
from kubectl_kvcache.engine import add_releases


@pytest.fixture(autouse=True)
def no_user_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("KVCACHE_ENGINE_DATA", raising=False)
    yield
    add_releases([])


def newer_file(path):
    doc = enginefiles.release_slice("vllm", "0.33.0", "0.45.0")
    doc["data"]["values"]["fp6_e3m2"] = [["0.45.0", None]]
    return enginefiles.write(path, doc)


@pytest.fixture
def cluster(tmp_path):
    objs = [o.binding("b1", "fp6_e3m2"), o.deployment("m45", version="0.45.0"),
            o.md_pod("m45-server-0", "m45", o.vllm_argv("fp6_e3m2"), image="vllm/vllm-openai:v0.45.0")]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return str(path)


def test_a_newer_release_says_so_in_reason_json_and_stderr(cluster):
    code, out, err = run("verify", "-f", cluster, "-o", "json")
    item = json.loads(out)["items"][0]
    assert code == 1 and item["status"] == "REJECTED"
    assert item["engineData"] == {"judgedWith": "0.33.0", "newerThanData": True}
    assert "vLLM 0.45.0 is newer than the engine data: judged with vLLM 0.33.0's parser" in item["reason"]
    assert "note: vLLM 0.45.0 is newer than the engine data: judged with vLLM 0.33.0's parser" in err


def test_check_reports_a_newer_release_as_a_finding(cluster):
    code, out, _ = run("check", "-f", cluster, "-o", "json")
    found = [f for f in json.loads(out)["findings"] if f["code"] == "engine-newer-than-data"]
    assert code == 1 and len(found) == 1
    assert found[0]["severity"] == "warning" and found[0]["name"] == "m45"
    assert "judged with vLLM 0.33.0's parser" in found[0]["message"]


@pytest.mark.parametrize("how", ["flag", "env", "data-dir"])
def test_an_added_release_file_changes_the_verdict(cluster, tmp_path, monkeypatch, how):
    extra = ()
    if how == "flag":
        extra = ("--engine-data", newer_file(tmp_path / "v45.json"))
    elif how == "env":
        monkeypatch.setenv("KVCACHE_ENGINE_DATA", newer_file(tmp_path / "v45.json"))
    else:
        (tmp_path / "data" / "kubectl-kvcache" / "engines").mkdir(parents=True)
        newer_file(tmp_path / "data" / "kubectl-kvcache" / "engines" / "vllm-0.45.0.json")
    code, out, err = run("verify", "-f", cluster, "-o", "json", *extra)
    item = json.loads(out)["items"][0]
    assert (code, item["status"], item["effective"]) == (0, "OK", "fp6_e3m2")
    assert "engineData" not in item and "newer than the engine data" not in err
    code, out, _ = run("check", "-f", cluster, "-o", "json", *extra)
    assert code == 0 and not [f for f in json.loads(out)["findings"] if f["code"] != "setting"]


def test_engines_lists_built_in_and_added_releases(tmp_path):
    code, out, _ = run("engines", "-o", "json")
    rows = json.loads(out)["items"]
    assert code == 0 and {"engine": "sglang", "release": "0.5.21", "source": "built-in",
                          "kvCacheDtypes": ["auto", "bf16", "bfloat16", "fp4_mx_block16", "fp8_e4m3", "fp8_e5m2",
                                            "mxfp8", "nvfp4"]} in rows
    assert not any(r["release"] == "0.45.0" for r in rows)
    path = newer_file(tmp_path / "v45.json")
    code, out, _ = run("engines", "--engine", "vllm", "-o", "yaml", "--engine-data", path)
    rows = yaml.safe_load(out)["items"]
    assert code == 0 and {r["engine"] for r in rows} == {"vllm"}
    added = [r for r in rows if r["release"] == "0.45.0"]
    assert added and added[0]["source"] == path and "fp6_e3m2" in added[0]["kvCacheDtypes"]
    code, out, _ = run("engines")
    assert code == 0 and out.splitlines()[0].split() == ["ENGINE", "RELEASE", "SOURCE", "KV-CACHE-DTYPE"]
    assert "0.45.0" not in out


@pytest.mark.parametrize("text,field", [
    ("{", "not JSON"),
    ('{"schema": 99, "engine": "vllm", "data": {}}', "schema: 99"),
    ('{"schema": 1, "engine": "vllm", "data": {"releases": ["x"]}}', "data.releases"),
])
def test_a_bad_engine_data_file_is_exit_2_with_one_error_line(tmp_path, cluster, text, field):
    path = tmp_path / "bad.json"
    path.write_text(text)
    for argv in (("verify", "-f", cluster), ("check", "-f", cluster), ("engines",)):
        code, out, err = run(*argv, "--engine-data", str(path))
        assert code == 2 and out == "", argv
        assert err.count("\n") == 1 and err.startswith(f"error: {path}: ") and field in err, err
    code, _, err = run("engines", "--engine-data", str(tmp_path / "missing.json"))
    assert code == 2 and err.startswith("error: ") and "missing.json" in err and err.count("\n") == 1
