"""Packaging: the krew manifest (fast, always), the wheel and the PyInstaller binary (slow,
marked `packaging`: `pytest -m packaging tests/packaging/test_packaging.py`).

The wheel and the binary are each built once per module (module-scoped fixtures) from a copy
of the checkout (a copy, so no build/ or *.egg-info lands in the shared tree). kubectl for the
plugin-discovery checks: $KVCACHE_KUBECTL if it names an executable (the cluster harness
exposes one through scripts/test-binaries), else `kubectl` on PATH, else those checks skip.
"""

import collections
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kubectl_kvcache import __version__  # noqa: E402

MANIFEST = ROOT / "krew-manifest.yaml"
EXAMPLE = ROOT / "examples" / "cluster.json"
PLATFORMS = {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"),
             ("windows", "amd64")}
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()  # the manifest's placeholder for unbuilt platforms
SUBCOMMANDS = ("verify", "check", "bindings", "roles", "setting", "version")
URI_PREFIX = "https://github.com/gpustack/kubectl-kvcache/releases/download/"
IMPORT_ERRORS = ("ModuleNotFoundError", "No module named", "ImportError", "Failed to execute script")
SOURCE_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                       ".pytest_cache", ".hypothesis", ".venv", ".cache")


def host_platform():
    os_ = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}[platform.system()]
    arch = {"x86_64": "amd64", "amd64": "amd64", "AMD64": "amd64",
            "aarch64": "arm64", "arm64": "arm64", "ARM64": "arm64"}[platform.machine()]
    return os_, arch


def run(cmd, timeout=120, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def find_kubectl():
    named = os.environ.get("KVCACHE_KUBECTL")
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named
        warnings.warn(f"KVCACHE_KUBECTL={named} is not an executable file; looking for kubectl on PATH")
    assets = os.environ.get("KUBEBUILDER_ASSETS")  # scripts/test points it at the pinned kubectl
    if assets and os.access(os.path.join(assets, "kubectl"), os.X_OK):
        return os.path.join(assets, "kubectl")
    return shutil.which("kubectl")


def skip_unless_required(reason):
    """Skip, except under KVCACHE_REQUIRE_PACKAGING=1 (CI), where a packaging check that cannot
    run is a failure."""
    if os.environ.get("KVCACHE_REQUIRE_PACKAGING", "") not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (KVCACHE_REQUIRE_PACKAGING=1 is set)", pytrace=False)
    pytest.skip(reason)


def check_help(stdout):
    assert "kubectl kvcache" in stdout
    for sub in SUBCOMMANDS:
        assert re.search(rf"^\s+{sub}\s", stdout, re.M), f"--help does not list {sub!r}:\n{stdout}"


# --------------------------------------------------------------------------------------
# 1. The manifest (fast)
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def manifest():
    return yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))


def platform_entries(manifest):
    return {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]): p
            for p in manifest["spec"]["platforms"]}


def test_manifest_is_a_krew_plugin_at_the_package_version(manifest):
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    assert manifest["metadata"]["name"] == "kvcache"
    spec = manifest["spec"]
    assert spec["version"] == "v" + __version__
    assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", spec["version"])  # krew wants semver
    assert spec["homepage"] == "https://github.com/gpustack/kubectl-kvcache"
    assert 0 < len(spec["shortDescription"]) <= 50
    assert "\n" not in spec["shortDescription"].strip()
    assert len(spec["description"].strip().splitlines()) >= 3
    assert "--kv-cache-dtype" in spec["description"]


def test_manifest_caveats_are_the_rbac_the_plugin_needs(manifest):
    caveats = manifest["spec"]["caveats"]
    assert "RBAC" in caveats
    for word in ("pods", "modeldeployments", "kvcachepoolbindings", "worker.gpustack.ai", "settings",
                 "gpustack.ai", "gpustack-system", "patch", "setting on|off", "deployments",
                 "statefulsets", "daemonsets", "replicasets", "jobs", "cronjobs", "check"):
        assert word in caveats, f"caveats do not mention {word!r}"


def test_manifest_has_each_platform_once_with_a_release_archive(manifest):
    version = manifest["spec"]["version"]
    pairs = []
    for p in manifest["spec"]["platforms"]:
        labels = p["selector"]["matchLabels"]
        assert set(labels) == {"os", "arch"}
        os_, arch = labels["os"], labels["arch"]
        pairs.append((os_, arch))
        name = f"kubectl-kvcache_{os_}_{arch}.tar.gz"
        assert p["uri"] == f"{URI_PREFIX}{version}/{name}"
        assert p["uri"].rsplit("/", 1)[1] == name and version in p["uri"]
        # a string (quoted: an all-digit sha would load as a number, which krew cannot read)
        assert isinstance(p["sha256"], str) and SHA256_RE.match(p["sha256"]), \
            f"{os_}/{arch}: sha256 {p['sha256']!r}"
        exe = "kubectl-kvcache.exe" if os_ == "windows" else "kubectl-kvcache"
        # scripts/build-binary packs the one-folder build: kubectl-kvcache/<exe> + LICENSE
        assert p["bin"] == f"kubectl-kvcache/{exe}"
        froms = {f["from"] for f in p["files"]}
        for f in p["files"]:
            assert os.path.normpath(f["to"]) == f["to"]  # krew refuses unclean paths
        assert froms & {"*", "LICENSE"}, f"{os_}/{arch}: LICENSE is not extracted"
        assert froms & {"*", "kubectl-kvcache"}, f"{os_}/{arch}: the binary's folder is not extracted"
    counts = collections.Counter(pairs)
    assert set(counts) == PLATFORMS
    assert all(n == 1 for n in counts.values()), counts


def test_manifest_linux_amd64_sha_is_a_real_build(manifest):
    sha = platform_entries(manifest)[("linux", "amd64")]["sha256"]
    assert sha not in (EMPTY_SHA256, "0" * 64)


def test_krew_manifest_helper_fills_exactly_one_platform(tmp_path, manifest):
    copy = tmp_path / "krew-manifest.yaml"
    shutil.copy(MANIFEST, copy)
    before = copy.read_text(encoding="utf-8")
    archive = tmp_path / "kubectl-kvcache_darwin_arm64.tar.gz"
    archive.write_bytes(b"not really a tarball, only its sha256 matters here")

    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", "--manifest", copy, archive])
    assert r.returncode == 0, r.stderr
    after = yaml.safe_load(copy.read_text(encoding="utf-8"))
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert sha in r.stdout
    new, old = platform_entries(after), platform_entries(manifest)
    assert new[("darwin", "arm64")]["sha256"] == sha
    assert new[("darwin", "arm64")]["uri"] == old[("darwin", "arm64")]["uri"]
    for key in PLATFORMS - {("darwin", "arm64")}:
        assert new[key] == old[key]
    assert {k: v for k, v in after.items() if k != "spec"} == \
           {k: v for k, v in manifest.items() if k != "spec"}
    changed = [a for a, b in zip(before.splitlines(), copy.read_text().splitlines()) if a != b]
    assert len(changed) == 1 and "sha256:" in changed[0]  # the rest, comments included, stays

    bad = tmp_path / "kubectl-kvcache_plan9_mips.tar.gz"
    bad.write_bytes(b"x")
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", "--manifest", copy, bad])
    assert r.returncode == 1 and "plan9_mips" in r.stderr
    assert yaml.safe_load(copy.read_text(encoding="utf-8")) == after



def test_krew_manifest_for_a_local_archive_leaves_the_committed_one(tmp_path, manifest):
    """The README's krew line from a fresh clone: a manifest written for the archive built here
    (--manifest to a new file), its sha256 that archive's; the committed manifest unchanged."""
    before = MANIFEST.read_bytes()
    archive = tmp_path / "kubectl-kvcache_linux_amd64.tar.gz"
    archive.write_bytes(b"a local build")
    out = tmp_path / "dist" / "krew-manifest.yaml"
    out.parent.mkdir()
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", archive, "--manifest", out])
    assert r.returncode == 0, r.stderr
    assert MANIFEST.read_bytes() == before
    written = platform_entries(yaml.safe_load(out.read_text(encoding="utf-8")))
    assert written[("linux", "amd64")]["sha256"] == hashlib.sha256(b"a local build").hexdigest()
    assert written[("linux", "amd64")]["bin"] == platform_entries(manifest)[("linux", "amd64")]["bin"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "scripts/krew-manifest dist/kubectl-kvcache_linux_amd64.tar.gz --manifest dist/krew-manifest.yaml" in readme
    assert "kubectl krew install --manifest=dist/krew-manifest.yaml --archive=dist/kubectl-kvcache_linux_amd64.tar.gz" \
        in readme


def test_the_onefile_archive_has_its_own_name_and_is_not_krews(tmp_path):
    text = (ROOT / "scripts" / "build-binary").read_text(encoding="utf-8")
    assert 'ARCHIVE_NAME="${NAME}-onefile_${OS}_${ARCH}.tar.gz"' in text
    onefile = tmp_path / "kubectl-kvcache-onefile_linux_amd64.tar.gz"
    onefile.write_bytes(b"x")
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", onefile, "--manifest", tmp_path / "m.yaml"])
    assert r.returncode == 1 and "--onefile archive" in r.stderr and not (tmp_path / "m.yaml").exists()

# --------------------------------------------------------------------------------------
# 2. The wheel, installed into a fresh venv (slow)
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wheel_install(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=SOURCE_IGNORE)
    r = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
             "-w", tmp / "wheels", src], timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list((tmp / "wheels").glob("*.whl"))
    assert [w.name for w in wheels] == [f"kubectl_kvcache-{__version__}-py3-none-any.whl"]

    venv = tmp / "venv"
    r = run([sys.executable, "-m", "venv", venv], timeout=300)
    assert r.returncode == 0, r.stderr
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    r = run([bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", wheels[0]],
            timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    home = tmp / "home"
    home.mkdir()
    return SimpleNamespace(wheel=wheels[0], venv=venv, bin=bindir, home=home)


def scrubbed_env(home, *path):
    env = {"PATH": os.pathsep.join(str(p) for p in path) or "/nonexistent", "HOME": str(home)}
    if os.name == "nt":
        env["SYSTEMROOT"] = os.environ.get("SYSTEMROOT", r"C:\Windows")
    return env


@pytest.mark.packaging
def test_wheel_holds_the_package_and_the_console_script(wheel_install):
    import zipfile

    with zipfile.ZipFile(wheel_install.wheel) as z:
        names = z.namelist()
        entry_points = z.read(f"kubectl_kvcache-{__version__}.dist-info/entry_points.txt").decode()
    assert "kubectl_kvcache/cli/app.py" in names and "kubectl_kvcache/__init__.py" in names
    assert not [n for n in names if n.startswith("tests/")]
    assert any(n.endswith(".dist-info/LICENSE") or "/licenses/LICENSE" in n for n in names)
    assert re.search(r"^kubectl-kvcache\s*=\s*kubectl_kvcache\.cli:run$", entry_points, re.M)


@pytest.mark.packaging
def test_wheel_console_script_runs_from_the_venv(wheel_install):
    exe = wheel_install.bin / "kubectl-kvcache"
    env = scrubbed_env(wheel_install.home, wheel_install.bin)
    # run outside the checkout, so the installed package is the one imported
    r = run([wheel_install.bin / "python", "-c", "import kubectl_kvcache; print(kubectl_kvcache.__file__)"],
            env=env, cwd=wheel_install.home)
    assert r.returncode == 0 and Path(r.stdout.strip()).is_relative_to(wheel_install.venv), r.stdout

    r = run([exe, "--help"], env=env, cwd=wheel_install.home)
    assert r.returncode == 0, r.stderr
    check_help(r.stdout)
    r = run([exe, "version"], env=env, cwd=wheel_install.home)
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr
    # the dependencies came along (the commands import them lazily)
    r = run([wheel_install.bin / "python", "-c", "import kubernetes.client, kubernetes.config, yaml, tabulate"],
            env=env, cwd=wheel_install.home)
    assert r.returncode == 0, r.stderr


@pytest.mark.packaging
def test_wheel_is_found_by_kubectl_plugin_discovery(wheel_install):
    kubectl = find_kubectl()
    if not kubectl:
        skip_unless_required("no kubectl (set KVCACHE_KUBECTL or put kubectl on PATH)")
    env = scrubbed_env(wheel_install.home, wheel_install.bin, Path(kubectl).parent)
    r = run([kubectl, "plugin", "list"], env=env, cwd=wheel_install.home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert str(wheel_install.bin / "kubectl-kvcache") in r.stdout.splitlines()

    r = run([kubectl, "kvcache", "--help"], env=env, cwd=wheel_install.home)
    assert r.returncode == 0, r.stderr
    check_help(r.stdout)
    r = run([kubectl, "kvcache", "version"], env=env, cwd=wheel_install.home)
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr


# --------------------------------------------------------------------------------------
# 3. The PyInstaller binary, built once by scripts/build-binary (slow: about a minute)
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def binary(tmp_path_factory, manifest):
    out = tmp_path_factory.mktemp("binary")
    # The script reuses this interpreter if it has PyInstaller, else makes a throwaway venv.
    env = dict(os.environ, PYTHON=sys.executable)
    r = run([ROOT / "scripts" / "build-binary", "--out", out / "dist"], env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-6000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout
    os_, arch = host_platform()
    archive = Path(lines[0])
    assert archive == out / "dist" / f"kubectl-kvcache_{os_}_{arch}.tar.gz"
    extracted = out / "x"
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        if hasattr(tarfile, "data_filter"):
            tar.extractall(extracted, filter="data")
        else:
            tar.extractall(extracted)
    entry = platform_entries(manifest)[(os_, arch)]
    home = out / "home"
    home.mkdir()
    return SimpleNamespace(archive=archive, sha=lines[1], members=members, root=extracted,
                           exe=extracted / entry["bin"], entry=entry, home=home, out=out)


@pytest.mark.packaging
def test_binary_archive_is_what_krew_and_the_manifest_expect(binary):
    data = binary.archive.read_bytes()
    assert binary.sha == hashlib.sha256(data).hexdigest()
    sha_file = binary.archive.with_name(binary.archive.name + ".sha256")
    assert sha_file.read_text() == f"{binary.sha}  {binary.archive.name}\n"

    for m in binary.members:
        # krew's tar extractor handles only directories and regular files, and refuses '..'
        assert m.isdir() or m.isreg(), f"{m.name}: type {m.type!r}"
        assert ".." not in m.name and not m.name.startswith(("/", "\\"))
    assert {m.name.split("/")[0] for m in binary.members} == {"LICENSE", "kubectl-kvcache"}
    assert (binary.root / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    # the manifest's bin and files for this platform match the archive's layout
    assert binary.exe.is_file() and os.access(binary.exe, os.X_OK), binary.entry["bin"]
    for f in binary.entry["files"]:
        assert list(binary.root.glob(f["from"])), f"files.from {f['from']!r} matches nothing"


@pytest.mark.packaging
def test_binary_runs_with_no_python_around(binary):
    env = scrubbed_env(binary.home)
    r = run([binary.exe, "--help"], env=env, cwd=binary.home)
    assert r.returncode == 0, r.stderr
    check_help(r.stdout)
    r = run([binary.exe, "version"], env=env, cwd=binary.home)
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr


@pytest.mark.packaging
@pytest.mark.parametrize("extra", [[], ["-A"]], ids=["namespace", "all-namespaces"])
def test_binary_verifies_a_saved_cluster(binary, extra):
    if not EXAMPLE.is_file():
        skip_unless_required(f"{EXAMPLE.relative_to(ROOT)} is not there")
    r = run([binary.exe, "verify", *extra, "-f", EXAMPLE, "-o", "json"], env=scrubbed_env(binary.home),
            cwd=binary.home)
    assert r.returncode in (0, 1), r.stderr
    assert not any(e in r.stderr for e in IMPORT_ERRORS), r.stderr
    report = json.loads(r.stdout)
    assert report["kind"] == "VerifyReport"


@pytest.mark.packaging
def test_binary_reaches_the_kubernetes_client_like_the_source_does(binary):
    """The live-cluster path imports the kubernetes client lazily: the frozen binary must load it
    and fail against an unreachable API server exactly as `python -m kubectl_kvcache` does."""
    kubeconfig = binary.home / "unreachable.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
    }))
    args = ["verify", "--kubeconfig", kubeconfig, "--request-timeout", "5s"]
    env = scrubbed_env(binary.home)
    frozen = run([binary.exe, *args], env=env, cwd=binary.home)
    source = run([sys.executable, "-m", "kubectl_kvcache", *args], env=dict(env, PYTHONPATH=str(ROOT)),
                 cwd=binary.home)
    assert frozen.returncode == 2, frozen.stderr
    assert not any(e in frozen.stderr for e in IMPORT_ERRORS), frozen.stderr

    def norm(text):
        return re.sub(r"0x[0-9a-f]+", "0x", text)
    assert (frozen.returncode, norm(frozen.stdout), norm(frozen.stderr)) == \
           (source.returncode, norm(source.stdout), norm(source.stderr))


@pytest.mark.packaging
def test_binary_reads_several_contexts_in_worker_processes_like_the_source(binary):
    """--all-contexts in the frozen binary: each context in a forked worker process (the binary
    forks itself; no multiprocessing start method, so no freeze_support), each failing one an
    `error: context X:` line, as the source gives it and as threads give it."""
    kubeconfig = binary.home / "fleet.yaml"
    ports = [1, 9]
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c0",
        "clusters": [{"name": f"c{i}", "cluster": {"server": f"http://127.0.0.1:{p}"}} for i, p in enumerate(ports)],
        "users": [{"name": "u", "user": {"token": "fleet-token-0123456789"}}],
        "contexts": [{"name": f"c{i}", "context": {"cluster": f"c{i}", "user": "u"}} for i in range(len(ports))],
    }))
    args = ["verify", "--all-contexts", "-A", "--kubeconfig", kubeconfig, "--request-timeout", "5s"]
    env = scrubbed_env(binary.home)
    frozen = run([binary.exe, *args], env=env, cwd=binary.home)
    threads = run([binary.exe, *args], env=dict(env, KVCACHE_FLEET_WORKERS="threads"), cwd=binary.home)
    source = run([sys.executable, "-m", "kubectl_kvcache", *args], env=dict(env, PYTHONPATH=str(ROOT)),
                 cwd=binary.home)
    assert frozen.returncode == 2 and "Traceback" not in frozen.stderr, frozen.stderr
    assert [line.split(":")[1].strip() for line in frozen.stderr.splitlines()] == ["context c0", "context c1"], \
        frozen.stderr
    assert (frozen.returncode, frozen.stdout, frozen.stderr) == (threads.returncode, threads.stdout, threads.stderr)
    assert (frozen.returncode, frozen.stdout, frozen.stderr) == (source.returncode, source.stdout, source.stderr)


@pytest.mark.packaging
@pytest.mark.skipif(os.name == "nt", reason="krew links with junctions on Windows")
def test_binary_installed_the_krew_way_runs_through_its_symlink(binary):
    """krew moves the archive's files into store/kvcache/<version>/ and symlinks bin/kubectl-kvcache
    to the manifest's `bin` (relative link): the one-folder build must find _internal/ through it."""
    store = binary.out / "krew" / "store" / "kvcache" / f"v{__version__}"
    bindir = binary.out / "krew" / "bin"
    bindir.mkdir(parents=True)
    shutil.copytree(binary.root, store)
    link = bindir / "kubectl-kvcache"
    link.symlink_to(os.path.relpath(store / binary.entry["bin"], bindir))

    env = scrubbed_env(binary.home, bindir)
    r = run([link, "version"], env=env, cwd=binary.home)
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr
    kubectl = find_kubectl()
    if not kubectl:
        skip_unless_required("no kubectl for the plugin-discovery half (set KVCACHE_KUBECTL or put kubectl on PATH)")
    env = scrubbed_env(binary.home, bindir, Path(kubectl).parent)
    r = run([kubectl, "plugin", "list"], env=env, cwd=binary.home)
    assert r.returncode == 0 and str(link) in r.stdout.splitlines(), r.stdout + r.stderr
    r = run([kubectl, "kvcache", "--help"], env=env, cwd=binary.home)
    assert r.returncode == 0, r.stderr
    check_help(r.stdout)


# --------------------------------------------------------------------------------------
# 4. Shell completion as installed: kubectl (1.26+) runs kubectl_complete-kvcache from PATH
# --------------------------------------------------------------------------------------

def _kubectl_completes(kubectl, env, cwd):
    r = run([kubectl, "__complete", "kvcache", "setting", "o"], env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["on", "off", ":4"], r.stdout


@pytest.mark.packaging
def test_wheel_installs_the_completion_helper_kubectl_runs(wheel_install):
    helper = wheel_install.bin / "kubectl_complete-kvcache"
    assert helper.is_file() and os.access(helper, os.X_OK)
    kubectl = find_kubectl()
    if not kubectl:
        skip_unless_required("no kubectl (set KVCACHE_KUBECTL or put kubectl on PATH)")
    _kubectl_completes(kubectl, scrubbed_env(wheel_install.home, wheel_install.bin, Path(kubectl).parent),
                       wheel_install.home)


@pytest.mark.packaging
@pytest.mark.skipif(os.name == "nt", reason="the sh helper is not shipped on Windows")
def test_binary_archive_ships_the_completion_helper_kubectl_runs(binary):
    helper = binary.root / "kubectl-kvcache" / "kubectl_complete-kvcache"
    assert helper.is_file() and os.access(helper, os.X_OK)
    bindir = binary.out / "completion-bin"
    bindir.mkdir()
    (bindir / "kubectl-kvcache").symlink_to(binary.exe)        # as krew links the plugin
    (bindir / "kubectl_complete-kvcache").symlink_to(helper)   # as the caveats say to link the helper
    kubectl = find_kubectl()
    if not kubectl:
        skip_unless_required("no kubectl (set KVCACHE_KUBECTL or put kubectl on PATH)")
    _kubectl_completes(kubectl, scrubbed_env(binary.home, bindir, Path(kubectl).parent), binary.home)
