"""`kubectl kvcache engines`, --engine-data FILE / $KVCACHE_ENGINE_DATA / the user data directory,
and a deployment on a release newer than the engine data, through the real entry point."""

import json
import os

import pytest
import yaml

import enginefiles
import objects as o
from runcli import kvcache as run
from kubectl_kvcache.engine import add_releases, known_releases


@pytest.fixture(autouse=True)
def no_user_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("KVCACHE_ENGINE_DATA", raising=False)
    yield
    add_releases([])


def newer_file(path):
    doc = enginefiles.release_slice("vllm", "0.34.0", "0.45.0")
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
    assert item["engineData"] == {"judgedWith": "0.34.0", "newerThanData": True}
    assert "vLLM 0.45.0 is newer than the engine data: judged with vLLM 0.34.0's parser" in item["reason"]
    assert "note: vLLM 0.45.0 is newer than the engine data: judged with vLLM 0.34.0's parser" in err


def test_check_reports_a_newer_release_as_a_finding(cluster):
    code, out, _ = run("check", "-f", cluster, "-o", "json")
    found = [f for f in json.loads(out)["findings"] if f["code"] == "engine-newer-than-data"]
    assert code == 1 and len(found) == 1
    assert found[0]["severity"] == "warning" and found[0]["name"] == "m45"
    assert "judged with vLLM 0.34.0's parser" in found[0]["message"]


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
    in_dir = str(tmp_path / "data" / "kubectl-kvcache" / "engines" / "vllm-0.45.0.json")
    source = extra[1] if how == "flag" else os.environ["KVCACHE_ENGINE_DATA"] if how == "env" else in_dir
    assert err == (f"note: vLLM 0.45.0 (and the releases after it, every later one) is judged with the engine data "
                   f"added from {source}\n")
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
    ('{"schema": 1, "engine": "vllm", "release": "0.45.0", "data": {"releases": ["x"]}}', "data.releases"),
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


MALFORMED = enginefiles.malformed()


@pytest.mark.parametrize("i", range(len(MALFORMED)), ids=[label for label, _, _ in MALFORMED])
def test_every_malformed_engine_data_file_is_exit_2_naming_file_and_field(tmp_path, cluster, monkeypatch, i):
    """The generated corpus (tests/enginefiles.py malformed()): read from each place a file can
    come from, by each command that reads them, in turn."""
    label, content, expect = MALFORMED[i]
    how = ("flag", "env", "data-dir")[i % 3]
    argv = (("verify", "-f", cluster), ("check", "-f", cluster, "-o", "json"), ("engines",))[(i // 3) % 3]
    folder = tmp_path / "data" / "kubectl-kvcache" / "engines" if how == "data-dir" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (label.replace("/", "-").replace(":", "-") + ".json")   # KVCACHE_ENGINE_DATA splits at ":"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    extra = ("--engine-data", str(path)) if how == "flag" else ()
    if how == "env":
        monkeypatch.setenv("KVCACHE_ENGINE_DATA", str(path))
    code, out, err = run(*argv, *extra)
    assert (code, out) == (2, ""), (argv, how, err)
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert "internal error" not in err and "Traceback" not in err
    for part in expect:
        assert part in err, (part, err)
    # nothing of the file was kept: without it, the next run has the built-in data alone
    path.unlink()
    monkeypatch.delenv("KVCACHE_ENGINE_DATA", raising=False)
    assert all(not source for e in ("vllm", "sglang") for _, source in known_releases(e))


def test_a_pipe_or_a_folder_in_the_data_directory_is_refused_not_waited_on(tmp_path, cluster):
    folder = tmp_path / "data" / "kubectl-kvcache" / "engines"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "a-pipe.json")
    code, out, err = run("verify", "-f", cluster)
    assert (code, out) == (2, "")
    assert err == (f"error: {folder / 'a-pipe.json'}: not a regular file (an engine data file is the JSON file "
                   f"scripts/engine-data --release writes)\n")
    os.unlink(folder / "a-pipe.json")
    (folder / "a-folder.json").mkdir()
    code, out, err = run("engines")
    assert (code, out) == (2, "") and err.startswith(f"error: {folder / 'a-folder.json'}: ") and err.count("\n") == 1


def test_a_built_in_release_redefined_is_refused_and_the_same_data_is_not(tmp_path, cluster):
    """Issue 28 item 8: SGLang 0.5.18 made to accept `fp8` in the user data directory. The file
    is refused (exit 2, one line naming it, the release and the field) by every command that
    judges; a file that says what the built-in data says (scripts/engine-data --release of a
    release the plugin has) changes nothing."""
    folder = tmp_path / "data" / "kubectl-kvcache" / "engines"
    folder.mkdir(parents=True)
    objs = [o.binding("b1", "fp8"), o.deployment("s18", engine="SGLang", version="0.5.18"),
            o.md_pod("s18-server-0", "s18", o.sglang_argv("fp8"), image="lmsysorg/sglang:v0.5.18")]
    (tmp_path / "sgl.json").write_text(json.dumps(o.as_list(*objs)))
    manifests = str(tmp_path / "sgl.json")
    code, out, _ = run("verify", "-f", manifests, "-o", "json")
    assert code == 1 and json.loads(out)["items"][0]["status"] == "REJECTED"
    same = enginefiles.release_slice("sglang", "0.5.18")
    enginefiles.write(folder / "sglang-0.5.18.json", same)
    code, out, _ = run("verify", "-f", manifests, "-o", "json")
    assert code == 1 and json.loads(out)["items"][0]["status"] == "REJECTED"
    same["data"]["values"]["fp8"] = [["0.5.18", None]]
    path = enginefiles.write(folder / "sglang-0.5.18.json", same)
    for argv in (("verify", "-f", manifests), ("verify", "-f", manifests, "-o", "junit"),
                 ("check", "-f", manifests, "-o", "markdown"), ("bindings", "-f", manifests),
                 ("roles", "-f", manifests), ("engines",), ("setting", "on", "--yes")):
        code, out, err = run(*argv)
        assert (code, out) == (2, ""), (argv, out, err)
        assert err == (f"error: {path}: data.values.fp8: redefines SGLang 0.5.18, a release the plugin has built in "
                       f"(read from its released wheel): its built-in data has no such entry; an engine data file may "
                       f"add releases the plugin does not have, never change one it has: remove the file (or report "
                       f"the built-in data as wrong)\n"), argv


def test_a_release_added_between_built_in_ones_is_never_judged_silently(tmp_path):
    """SGLang 0.5.18.1 (not on PyPI; the plugin has 0.5.18 and 0.5.19) added from a file that accepts `fp8`:
    allowed, since the plugin never read 0.5.18.1, and every judging command names the file."""
    objs = [o.binding("b1", "fp8"), o.deployment("s181", engine="SGLang", version="0.5.18.1"),
            o.md_pod("s181-server-0", "s181", o.sglang_argv("fp8"), image="lmsysorg/sglang:v0.5.18.1")]
    (tmp_path / "sgl.json").write_text(json.dumps(o.as_list(*objs)))
    manifests = str(tmp_path / "sgl.json")
    doc = enginefiles.release_slice("sglang", "0.5.18", "0.5.18.1")
    doc["data"]["values"]["fp8"] = [["0.5.18.1", None]]
    path = enginefiles.write(tmp_path / "sglang-0.5.18.1.json", doc)
    code, out, _ = run("verify", "-f", manifests, "-o", "json")
    assert json.loads(out)["items"][0]["status"] == "UNKNOWN"   # not in the data: no interpolation
    note = (f"note: SGLang 0.5.18.1 (and the releases after it, before 0.5.19) is judged with the engine data added "
            f"from {path}\n")
    for argv in (("verify", "-f", manifests, "-o", "json"), ("check", "-f", manifests), ("bindings", "-f", manifests),
                 ("roles", "-f", manifests, "-o", "yaml")):
        code, out, err = run(*argv, "--engine-data", path)
        assert code in (0, 1) and out and note in err, (argv, err)
    code, out, _ = run("verify", "-f", manifests, "-o", "json", "--engine-data", path)
    assert code == 0 and json.loads(out)["items"][0]["status"] == "OK"


def test_the_files_together_are_bounded_too(tmp_path, monkeypatch):
    from kubectl_kvcache.load import added_releases

    monkeypatch.setattr(added_releases, "MAX_TOTAL", 3 * 1024 * 1024)
    folder = tmp_path / "data" / "kubectl-kvcache" / "engines"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (folder / f"{name}.json").write_bytes(b" " * (1024 * 1024) + b"{}")
    code, out, err = run("engines")
    assert (code, out) == (2, "") and err.startswith(f"error: {folder / 'c.json'}: the engine data files read so far "
                                                     f"hold more than 3 MiB") and err.count("\n") == 1
