"""scripts/engine-data --release ... --wheel FILE / --source DIR (issue 31): the parser of a release
not on PyPI, read from a local wheel or source tree, is written as the same document as the same
code read from the released wheel, but for its label and where it came from; and the plugin,
given that file, judges an argv for the new label exactly as for the released one.

The wheel and the tree are built in a tmp dir from a released wheel's files in the engine cache
(it keeps the .py files and METADATA, not the .whl): the real parser decides both sides."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import objects as o
from runcli import kvcache
from kubectl_kvcache.engine import add_releases, predict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import wheels  # noqa: E402

# A small, early release, and a label no release has. Not one far from it: engine_data.rewrites
# replays the -O rule with the plugin's built-in profile of the label (that of the release before
# it), as for any release --release adds, so the code of 0.3.3 labelled 0.99.0 gets "opaque"
# where 0.3.3 has "none"; labelled 0.3.4 its document is 0.3.3's.
ENGINE, RELEASED, LABEL = "vllm", "0.3.3", "0.3.4"


def engine_data(*args, timeout=900):
    return subprocess.run([os.path.join(ROOT, "scripts", "engine-data"), *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHON=sys.executable))


def cached_release():
    root = wheels.cached(ENGINE, RELEASED)
    if root is None:
        msg = f"{ENGINE}=={RELEASED} is not in the engine cache: run scripts/engine-wheels"
        if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return root


def _files(root):
    """(path inside the tree, file) of every file of a cached release, bytecode and marker left out."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            if rel != wheels.MARKER:
                yield rel, os.path.join(folder, name)


def build_wheel(root, path, name=ENGINE, version=LABEL + "rc1"):
    """A wheel of the cached release's files whose METADATA says `name` `version` (a release candidate)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, full in _files(root):
            if rel.endswith("/METADATA"):
                with open(full) as f:
                    text = f.read()
                text = text.replace(f"Name: {ENGINE}\n", f"Name: {name}\n", 1)
                text = text.replace(f"Version: {RELEASED}\n", f"Version: {version}\n", 1)
                zf.writestr(f"{name}-{version}.dist-info/METADATA", text)
            else:
                zf.write(full, rel)
    return str(path)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The document of the released wheel (scripts/engine-data --release, from the engine cache)."""
    cached_release()
    out = tmp_path_factory.mktemp("released") / f"{ENGINE}-{RELEASED}.json"
    done = engine_data("--release", f"{ENGINE}=={RELEASED}", "--output", str(out))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def relabelled(doc, label):
    """The document's data with its release (every span's first release) spelled `label`."""
    return json.loads(json.dumps(doc["data"]).replace(json.dumps(doc["release"]), json.dumps(label)))


def _verdicts(version):
    argvs = [["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", *extra]
             for extra in ([], ["--kv-cache-dtype", "auto"], ["--kv-cache-dtype", "fp8_e5m2"],
                           ["--kv-cache-dtype", "fp8"], ["--kv-cache-dtype", "fp8_e4m3"], ["--kv-cache-dtype"],
                           ["--kv-cache", "fp8_e5m2"], ["--no-such-option", "1"], ["--kv-cache-dtype=fp8_e5m2"])]
    argvs.append(o.vllm_argv("fp8_e5m2"))
    out = []
    for argv in argvs:
        p = predict({"name": "main", "command": argv}, "vllm", version)
        out.append((p.outcome, p.effective, p.error, p.judged_with.replace(version, "V"), p.reason.replace(version, "V")))
    return out


def judged_alike(path):
    """verify (the in-process CLI, --engine-data FILE) and the engine face judge a Pod on LABEL as
    one on RELEASED."""
    before = _verdicts(LABEL)
    argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--kv-cache-dtype", "fp8"]
    objs = [o.binding("b1", "fp8")]
    for name, version in (("old", RELEASED), ("new", LABEL)):
        objs += [o.deployment(name, version=version), o.md_pod(f"{name}-server-0", name, argv,
                                                               image=f"vllm/vllm-openai:v{version}")]
    cluster = os.path.join(os.path.dirname(path), "cluster.json")
    with open(cluster, "w") as f:
        json.dump(o.as_list(*objs), f)
    code, out, err = kvcache("verify", "-f", cluster, "-o", "json", "--engine-data", path)
    assert code == 1, err     # vLLM 0.3.3 refuses fp8
    items = {i["pod"]: json.loads(json.dumps({k: v for k, v in i.items() if k not in ("pod", "owner", "metadata")})
                                  .replace(LABEL, RELEASED)) for i in json.loads(out)["items"]}
    assert items["new-server-0"] == items["old-server-0"] and items["old-server-0"]["status"] == "REJECTED", out
    assert f"vLLM {LABEL}" in err and path in err      # the note naming the added release and its file
    try:
        with open(path) as f:
            add_releases([(path, json.load(f))])
        assert _verdicts(LABEL) == _verdicts(RELEASED) != before
    finally:
        add_releases([])


def test_a_wheel_file_is_the_release_it_was_built_from_labelled_and_sourced(released, tmp_path):
    wheel = build_wheel(cached_release(), tmp_path / f"{ENGINE}-{LABEL}rc1-py3-none-any.whl")
    out = tmp_path / f"{ENGINE}-{LABEL}.json"
    done = engine_data("--release", f"{ENGINE}=={LABEL}", "--wheel", wheel, "--output", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert (doc["schema"], doc["engine"], doc["release"]) == (released["schema"], ENGINE, LABEL)
    assert relabelled(doc, RELEASED) == released["data"]
    with open(wheel, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    assert os.path.basename(wheel) in doc["_"] and f"sha256 {sha}" in doc["_"] and "--wheel" in doc["_"]
    assert "released wheel" in released["_"] and "--wheel" not in released["_"]
    judged_alike(str(out))


def test_a_source_tree_is_the_release_it_holds(released, tmp_path):
    tree = tmp_path / "vllm-checkout"
    shutil.copytree(os.path.join(cached_release(), ENGINE), tree / ENGINE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "pyproject.toml").write_text('[project]\nname = "vllm"\ndynamic = ["version"]\n')   # as vLLM's own
    out = tmp_path / f"{ENGINE}-{LABEL}.json"
    done = engine_data("--release", f"{ENGINE}=={LABEL}", "--source", str(tree), "--output", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["release"] == LABEL and relabelled(doc, RELEASED) == released["data"]
    assert f"the source tree {tree}" in doc["_"] and "--source" in doc["_"]
    assert not list(tree.rglob("__pycache__"))     # the user's tree is read, never written to
    judged_alike(str(out))


def test_sglangs_repository_layout_is_read_from_python(tmp_path):
    """SGLang's repository keeps the package and its pyproject.toml (static version) in python/."""
    root = wheels.cached("sglang", "0.2.14")
    if root is None:
        if os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") == "1":
            pytest.fail("sglang==0.2.14 is not in the engine cache: run scripts/engine-wheels")
        pytest.skip("sglang==0.2.14 is not in the engine cache: run scripts/engine-wheels")
    shutil.copytree(os.path.join(root, "sglang"), tmp_path / "sglang-checkout" / "python" / "sglang",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "sglang-checkout" / "python" / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nversion = "0.2.15rc1"\n')
    docs = {}
    for label, extra in (("0.2.14", ()), ("0.2.15", ("--source", str(tmp_path / "sglang-checkout")))):
        done = engine_data("--release", f"sglang=={label}", *extra, "--output", str(tmp_path / f"{label}.json"))
        assert done.returncode == 0, done.stderr
        docs[label] = json.loads((tmp_path / f"{label}.json").read_text())
    assert relabelled(docs["0.2.15"], "0.2.14") == docs["0.2.14"]["data"]
    assert "(sglang 0.2.15rc1)" in docs["0.2.15"]["_"]


def _refused(tmp_path, *args):
    out = tmp_path / "out.json"
    done = engine_data(*args, "--output", str(out), timeout=120)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert [ln for ln in lines if "error:" in ln] == [lines[-1]] and lines[-1].startswith(("error:", "scripts/"))
    assert not out.exists() and not done.stdout
    return lines[-1]


def _tiny_wheel(path, name, version, package=ENGINE):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{package}/__init__.py", "")
    return str(path)


def test_refusals_are_one_error_line(tmp_path):
    not_zip = tmp_path / "vllm-0.99.0-py3-none-any.whl"
    not_zip.write_text("not a zip")
    assert "not a wheel (not a zip archive)" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", str(not_zip))
    no_meta = tmp_path / "empty.whl"
    with zipfile.ZipFile(no_meta, "w") as zf:
        zf.writestr("vllm/__init__.py", "")
    assert "no single *.dist-info/METADATA" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", str(no_meta))
    other = _tiny_wheel(tmp_path / "vllm_ascend-0.99.0-py3-none-any.whl", "vllm_ascend", "0.99.0")
    assert "is the project 'vllm_ascend', not vllm" in _refused(tmp_path, "--release", "vllm==0.99.0",
                                                                 "--wheel", other)
    sglang = _tiny_wheel(tmp_path / "sglang-0.99.0-py3-none-any.whl", "sglang", "0.99.0", "sglang")
    assert "is the project 'sglang', not vllm" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", sglang)
    older = _tiny_wheel(tmp_path / "vllm-0.20.0-py3-none-any.whl", "vllm", "0.20.0")
    assert "is vllm 0.20.0, not a build of 0.99.0 (label it --release vllm==0.20.0)" in _refused(
        tmp_path, "--release", "vllm==0.99.0", "--wheel", older)
    no_code = _tiny_wheel(tmp_path / "vllm-0.99.0rc1-py3-none-any.whl", "vllm", "0.99.0rc1", "other")
    assert "has no vllm/__init__.py" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", no_code)
    assert "no such file" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", str(tmp_path / "none.whl"))
    for bad in ("0.34.0rc1", "v0.34.0", "0.34.0.dev3", "0.34", "latest"):
        assert f"{bad!r} is not a release number" in _refused(tmp_path, "--release", f"vllm=={bad}",
                                                              "--wheel", older)
    assert "no such directory" in _refused(tmp_path, "--release", "sglang==0.5.99", "--source",
                                           str(tmp_path / "missing"))
    fork = tmp_path / "fork"
    (fork / "python" / "sglang").mkdir(parents=True)
    (fork / "python" / "sglang" / "__init__.py").write_text("")
    assert "names no project" in _refused(tmp_path, "--release", "sglang==0.5.99", "--source", str(fork))
    (fork / "python" / "pyproject.toml").write_text('[project]\nname = "sglang-router"\nversion = "0.5.99"\n')
    assert "is the project 'sglang-router', not sglang" in _refused(tmp_path, "--release", "sglang==0.5.99",
                                                                    "--source", str(fork))
    (fork / "python" / "pyproject.toml").write_text('[project]\nname = "sglang"\nversion = "0.5.23"\n')
    assert "is sglang 0.5.23, not a build of 0.5.99" in _refused(tmp_path, "--release", "sglang==0.5.99",
                                                                 "--source", str(fork))
    assert "not a source tree of vllm" in _refused(tmp_path, "--release", "vllm==0.99.0", "--source", str(fork))
    assert "not allowed with argument --wheel" in _refused(tmp_path, "--release", "vllm==0.99.0", "--wheel", older,
                                                           "--source", str(fork))
    assert "unrecognized arguments: --whe" in _refused(tmp_path, "--release", "vllm==0.99.0", "--whe", older)
