"""The in-cluster image (scripts/build-image) from the binary scripts/build-binary makes, marked
`packaging`: `pytest -m packaging tests/packaging/test_image.py`.

- The binary archive is cached in the user cache dir (~/.cache/kubectl-kvcache/image-binary/<key>,
  key = sha256 of what goes into it: kubectl_kvcache/, bin/, LICENSE, setup.cfg,
  scripts/build-binary, this Python), with build-binary's venv kept beside it
  (KVCACHE_BUILD_VENV); the image is built from it twice, each time from nothing.
- The layout is checked here by hand against the OCI image-spec (image-layout.md, index,
  manifest, config, descriptor: media types, digests and sizes of every blob, diff_ids the
  sha256 of the uncompressed layers) and by go-containerregistry's crane (built with Go from
  the module proxy into ~/.cache/kubectl-kvcache/tools): pushed from the layout to crane's own
  registry it keeps the digest and `crane validate` (every layer digested) passes.
- The layers unpacked into a root file system run the entrypoint in private namespaces
  (`unshare`, `chroot` as 65532:65532): `version`; and the README's path on the demo cluster
  (scripts/demo-cluster up, kubectl apply, scripts/run-image, the kubelet stand-in): the Job's
  and the CronJob's own arguments against the real API server through the in-cluster path.
"""

import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from kubectl_kvcache import __version__  # noqa: E402
from packaging_support import run, skip_unless_required  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubectl-kvcache"
CRANE = ("github.com/google/go-containerregistry/cmd/crane", "v0.22.1")
IMAGE_SPEC = ("github.com/opencontainers/image-spec", "v1.1.1")   # its schema/*.json
REPOSITORY = "registry.example/kvcache/kubectl-kvcache"
ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
MT = {"index": "application/vnd.oci.image.index.v1+json",
      "manifest": "application/vnd.oci.image.manifest.v1+json",
      "config": "application/vnd.oci.image.config.v1+json",
      "layer": "application/vnd.oci.image.layer.v1.tar+gzip"}
UID = 65532

pytestmark = pytest.mark.packaging


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def source_key():
    h = hashlib.sha256(sys.version.encode())
    paths = [ROOT / "LICENSE", ROOT / "setup.cfg", ROOT / "scripts" / "build-binary"]
    for top in ("kubectl_kvcache", "bin"):
        paths += [p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    for p in sorted(paths):
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def archive():
    if platform.system() != "Linux" or ARCH is None:
        skip_unless_required(f"the image is linux/amd64|arm64; this is {platform.system()}/{platform.machine()}")
    folder = CACHE / "image-binary" / source_key()
    built = folder / f"kubectl-kvcache_linux_{ARCH}.tar.gz"
    if not built.is_file():
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        env = dict(os.environ, PYTHON=sys.executable, KVCACHE_BUILD_VENV=str(CACHE / "build-venv"))
        r = run([ROOT / "scripts" / "build-binary", "--out", tmp], env=env, timeout=1800)
        assert r.returncode == 0, r.stderr[-6000:]
        os.replace(tmp, folder)
    return built


@pytest.fixture(scope="module")
def images(archive, tmp_path_factory):
    """Two builds from the same archive, each into an empty folder."""
    out = []
    for n in (1, 2):
        folder = tmp_path_factory.mktemp(f"image{n}")
        started = time.monotonic()
        r = run([ROOT / "scripts" / "build-image", "--archive", archive, "--out", folder,
                 "--repository", REPOSITORY])
        assert r.returncode == 0, r.stderr
        layout, digest = r.stdout.splitlines()
        assert Path(layout) == folder / "image"
        out.append({"out": folder, "layout": Path(layout), "digest": digest,
                    "seconds": time.monotonic() - started})
    return out


def blob(layout, descriptor):
    """A descriptor's blob, checked: its digest is sha256 of exactly `size` bytes."""
    algo, _, hexd = descriptor["digest"].partition(":")
    assert algo == "sha256" and len(hexd) == 64, descriptor
    data = (layout / "blobs" / "sha256" / hexd).read_bytes()
    assert sha256(data) == hexd and len(data) == descriptor["size"], descriptor
    return data


def read_image(layout):
    index = json.loads((layout / "index.json").read_text())
    (desc,) = index["manifests"]
    manifest = json.loads(blob(layout, desc))
    config = json.loads(blob(layout, manifest["config"]))
    layers = [blob(layout, d) for d in manifest["layers"]]
    return index, desc, manifest, config, layers


def test_the_layout_is_an_oci_image_layout(images):
    layout = images[0]["layout"]
    assert json.loads((layout / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index, desc, manifest, config, layers = read_image(layout)
    assert (index["schemaVersion"], index["mediaType"]) == (2, MT["index"])
    assert desc["mediaType"] == MT["manifest"] and desc["digest"] == images[0]["digest"]
    assert desc["platform"] == {"architecture": ARCH, "os": "linux"}
    assert desc["annotations"]["org.opencontainers.image.ref.name"] == __version__
    assert (manifest["schemaVersion"], manifest["mediaType"]) == (2, MT["manifest"])
    assert manifest["config"]["mediaType"] == MT["config"]
    assert [d["mediaType"] for d in manifest["layers"]] == [MT["layer"]] * 2
    # every blob is referenced, none missing (blob() checked digest and size of each)
    referenced = {d["digest"][7:] for d in [desc, manifest["config"], *manifest["layers"]]}
    assert {p.name for p in (layout / "blobs" / "sha256").iterdir()} == referenced
    assert (config["os"], config["architecture"]) == ("linux", ARCH)
    assert config["rootfs"]["type"] == "layers"
    assert config["rootfs"]["diff_ids"] == ["sha256:" + sha256(gzip.decompress(g)) for g in layers]
    c = config["config"]
    assert c["User"] == f"{UID}:{UID}"
    assert c["Entrypoint"] == ["/opt/kubectl-kvcache/kubectl-kvcache"]
    path = next(e[5:] for e in c["Env"] if e.startswith("PATH="))
    assert path.split(":")[0] == "/opt/kubectl-kvcache"     # the manifests' command: [kubectl-kvcache]
    assert c["Labels"]["org.opencontainers.image.version"] == __version__
    assert len(config["history"]) == 2


def test_the_same_binary_gives_the_same_digest(images):
    a, b = images
    assert a["digest"] == b["digest"]
    files = sorted(p.relative_to(a["out"]) for p in a["out"].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b["out"]) for p in b["out"].rglob("*") if p.is_file())
    for rel in files:
        assert (a["out"] / rel).read_bytes() == (b["out"] / rel).read_bytes(), rel


def layer_members(data):
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        return tar.getmembers()


def test_the_layers_are_normalised_minimal_and_shell_free(images):
    _, _, _, config, layers = read_image(images[0]["layout"])
    base, app = (layer_members(g) for g in layers)
    base_pins = json.loads((ROOT / "deploy" / "image-base.json").read_text())["packages"][ARCH]
    assert {p["package"] for p in base_pins} == {"libc6", "zlib1g"}
    for members in (base, app):
        names = [m.name for m in members]
        assert names == sorted(names)                              # sorted, parents first
        assert len({m.mtime for m in members}) == 1
        assert not any(m.mode & 0o6000 for m in members)           # no setuid/setgid
        assert all(m.uname == m.gname == "" for m in members)
        for m in members:
            owner = UID if m.name == "home/nonroot" else 0
            assert (m.uid, m.gid) == (owner, owner), m.name
    names = {m.name for m in base} | {m.name for m in app}
    for shell in ("bin/sh", "bin/bash", "usr/bin/sh", "bin/busybox", "usr/bin/env"):
        assert shell not in names
    ld = "lib64/ld-linux-x86-64.so.2" if ARCH == "amd64" else "lib/ld-linux-aarch64.so.1"
    triplet = "x86_64-linux-gnu" if ARCH == "amd64" else "aarch64-linux-gnu"
    assert {ld, f"lib/{triplet}/libc.so.6", f"lib/{triplet}/libz.so.1", "etc/passwd", "tmp"} <= names
    exe = next(m for m in app if m.name == "opt/kubectl-kvcache/kubectl-kvcache")
    assert exe.isreg() and exe.mode == 0o755
    assert "opt/kubectl-kvcache/_internal" in names
    assert "usr/share/doc/kubectl-kvcache/LICENSE" in names
    assert not any(n.startswith("usr/share/doc/libc6/changelog") for n in names)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layers[0]))) as tar:
        passwd = tar.extractfile("etc/passwd").read().decode()
    assert f"nonroot:x:{UID}:{UID}:" in passwd


def test_the_manifests_carry_the_digest_built(images):
    out, digest = images[0]["out"], images[0]["digest"]
    for name in ("job.yaml", "cronjob.yaml"):
        (ours,) = yaml.safe_load_all((ROOT / "deploy" / name).read_text())
        (got,) = yaml.safe_load_all((out / "deploy" / name).read_text())
        spec = got["spec"]["jobTemplate"]["spec"] if got["kind"] == "CronJob" else got["spec"]
        (container,) = spec["template"]["spec"]["containers"]
        assert container["image"] == f"{REPOSITORY}@{digest}"
        container["image"] = "-"
        spec = ours["spec"]["jobTemplate"]["spec"] if ours["kind"] == "CronJob" else ours["spec"]
        spec["template"]["spec"]["containers"][0]["image"] = "-"
        assert got == ours                                          # nothing else changed


def test_the_checked_in_manifests_name_the_release_repository():
    text = (ROOT / "scripts" / "build-image").read_text()
    repository = text.split('DEFAULT_REPOSITORY = "', 1)[1].split('"', 1)[0]
    for name in ("job.yaml", "cronjob.yaml"):
        (obj,) = yaml.safe_load_all((ROOT / "deploy" / name).read_text())
        spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
        (container,) = spec["template"]["spec"]["containers"]
        assert container["image"] in (f"{repository}:{__version__}",) or \
            container["image"].startswith(f"{repository}@sha256:"), container["image"]
    assert not (ROOT / "deploy" / "Dockerfile").exists()       # one image, the binary's


def test_write_deploy_rewrites_only_the_image_lines(archive, tmp_path):
    tree = tmp_path / "clone"
    for part in ("scripts", "deploy", "kubectl_kvcache"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    r = run([tree / "scripts" / "build-image", "--archive", archive, "--out", tmp_path / "dist",
             "--repository", REPOSITORY, "--write-deploy"])
    assert r.returncode == 0, r.stderr
    digest = r.stdout.splitlines()[1]
    for name in ("job.yaml", "cronjob.yaml"):
        before = (ROOT / "deploy" / name).read_text().splitlines()
        after = (tree / "deploy" / name).read_text().splitlines()
        assert len(before) == len(after)
        changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
        assert len(changed) == 1, changed
        assert changed[0][1].strip() == f"image: {REPOSITORY}@{digest}"
    r = run([tree / "scripts" / "build-image", "--archive", archive, "--out", tmp_path / "dist",
             "--repository", "Not A/Repo:tag"])
    assert (r.returncode, r.stdout) == (2, ""), r.stderr


# --- the image-spec's own JSON schemas ---------------------------------------------------

@pytest.fixture(scope="module")
def oci_schemas():
    """opencontainers/image-spec's schema/ (the Go module, from the module proxy into Go's module
    cache), loaded as its Go validator loads them: every $ref by file name (schema/loader.go)."""
    go = shutil.which("go")
    if not go:
        skip_unless_required("no Go toolchain to fetch the image-spec module")
    r = run([go, "mod", "download", "-json", f"{IMAGE_SPEC[0]}@{IMAGE_SPEC[1]}"], timeout=600,
            env=dict(os.environ, GOFLAGS="-mod=mod"))
    assert r.returncode == 0, r.stdout + r.stderr
    folder = Path(json.loads(r.stdout)["Dir"]) / "schema"
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    def load(name):
        return json.loads((folder / name).read_text())

    registry = Registry(retrieve=lambda uri: Resource.from_contents(load(uri.rsplit("/", 1)[-1].split("#")[0]),
                                                                    default_specification=DRAFT4))

    def validate(name, doc):
        schema = load(name)
        jsonschema.Draft4Validator(schema, registry=registry,
                                   format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(doc)
    return validate


def test_the_layout_passes_the_image_specs_schemas(images, oci_schemas):
    import jsonschema
    layout = images[0]["layout"]
    index, _, manifest, config, _ = read_image(layout)
    oci_schemas("image-layout-schema.json", json.loads((layout / "oci-layout").read_text()))
    oci_schemas("image-index-schema.json", index)
    oci_schemas("image-manifest-schema.json", manifest)
    oci_schemas("config-schema.json", config)
    # and they can fail: a descriptor without its digest, a config without rootfs
    bad = json.loads(json.dumps(manifest))
    del bad["layers"][0]["digest"]
    with pytest.raises(jsonschema.ValidationError):
        oci_schemas("image-manifest-schema.json", bad)
    with pytest.raises(jsonschema.ValidationError):
        oci_schemas("config-schema.json", {k: v for k, v in config.items() if k != "rootfs"})


# --- crane: a well-kept reader of the format -----------------------------------------

@pytest.fixture(scope="module")
def crane():
    folder = CACHE / "tools" / f"crane-{CRANE[1]}"
    exe = folder / "crane"
    if not exe.is_file():
        go = shutil.which("go")
        if not go:
            skip_unless_required("no Go toolchain to build crane")
        folder.mkdir(parents=True, exist_ok=True)
        r = run([go, "install", f"{CRANE[0]}@{CRANE[1]}"], timeout=1200,
                env=dict(os.environ, GOBIN=str(folder), GOFLAGS="-mod=mod"))
        assert r.returncode == 0, r.stderr[-4000:]
    return exe


@pytest.fixture
def registry(crane, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "registry.log", "wb")
    p = subprocess.Popen([crane, "registry", "serve", "--address", f"127.0.0.1:{port}"],
                         stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        p.terminate()
        p.wait(timeout=10)
        log.close()


def test_crane_pushes_the_layout_keeping_the_digest_and_validates_it(images, crane, registry):
    layout, digest = images[0]["layout"], images[0]["digest"]
    ref = f"{registry}/kubectl-kvcache:{__version__}"
    r = run([crane, "push", "--insecure", layout, ref])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{registry}/kubectl-kvcache@{digest}"
    assert run([crane, "digest", "--insecure", ref]).stdout.strip() == digest
    r = run([crane, "validate", "--insecure", "--remote", f"{registry}/kubectl-kvcache@{digest}"])
    assert r.returncode == 0 and r.stdout.startswith("PASS"), r.stdout + r.stderr
    _, _, manifest, _, _ = read_image(layout)
    config = run([crane, "config", "--insecure", ref]).stdout.encode()
    assert sha256(config) == manifest["config"]["digest"][7:]
    # the docker-load tar: crane reads it as `docker load` does (manifest.json), layers intact
    tar = images[0]["out"] / f"kubectl-kvcache-image_linux_{ARCH}.tar"
    r = run([crane, "validate", "--tarball", tar])
    assert r.returncode == 0 and r.stdout.startswith("PASS"), r.stdout + r.stderr


# --- running it ----------------------------------------------------------------------

def _namespaces_work():
    if os.geteuid() != 0:
        return "not root: chroot and mount need it"
    for tool in ("unshare", "chroot"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    p = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c",
                        "mount -t tmpfs none /mnt && umount /mnt"], capture_output=True, text=True)
    return None if p.returncode == 0 else f"no private mount/PID namespace here: {p.stderr.strip()}"


@pytest.fixture(scope="module")
def rootfs(images, tmp_path_factory):
    why = _namespaces_work()
    if why:
        skip_unless_required(why)
    root = tmp_path_factory.mktemp("rootfs")
    root.chmod(0o755)                          # the image's / (mktemp made it 0700)
    _, _, _, _, layers = read_image(images[0]["layout"])
    for g in layers:
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(g))) as tar:
            tar.extractall(root, numeric_owner=True)
    (root / "proc").mkdir()
    return root


def test_the_entrypoint_runs_as_65532_from_the_layers_alone(images, rootfs):
    _, _, _, config, _ = read_image(images[0]["layout"])
    entry = config["config"]["Entrypoint"]
    # who it runs as: the same saved objects, one copy only 65532 may read, one only root may
    for owner, name in ((UID, "mine.json"), (0, "roots.json")):
        copy = rootfs / "home" / name
        shutil.copy(ROOT / "examples" / "cluster.json", copy)
        os.chown(copy, owner, owner)
        copy.chmod(0o400)
    # no host file reaches it: a chroot into exactly the layers, /proc its own, the root read-only
    script = ('set -e; R=$1; shift; mount --bind "$R" "$R"; mount -t proc proc "$R/proc"; '
              'mount -o remount,ro,bind "$R"; exec chroot --userspec=65532:65532 "$R" "$@"')

    def in_image(*args):
        return run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", script,
                    "sh", rootfs, *entry, *args], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, timeout=60)
    r = in_image("version")
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr
    r = in_image("check", "-f", "/home/mine.json", "-o", "json")
    assert r.returncode == 1 and json.loads(r.stdout)["kind"] == "CheckReport", r.stderr
    r = in_image("check", "-f", "/home/roots.json", "-o", "json")
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("error:") and "ermission denied" in r.stderr and "Traceback" not in r.stderr


def test_run_image_exec_is_the_image_alone(images):
    why = _namespaces_work()
    if why:
        skip_unless_required(why)
    r = run([ROOT / "scripts" / "run-image", "--layout", images[0]["layout"], "--exec", "--", "version"],
            timeout=120)
    assert (r.returncode, r.stdout) == (0, f"kubectl-kvcache {__version__}\n"), r.stderr


@pytest.fixture(scope="module")
def demo(images, tmp_path_factory):
    """The README's in-cluster commands: scripts/demo-cluster up in its own state directory."""
    why = _namespaces_work()
    if why:
        skip_unless_required(why)
    state = tmp_path_factory.mktemp("xdg")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(state))
    env.pop("KUBECONFIG", None)
    up = run([ROOT / "scripts" / "demo-cluster", "up"], env=env, timeout=300)
    if up.returncode != 0:
        run([ROOT / "scripts" / "demo-cluster", "down"], env=env)
        pytest.fail(f"scripts/demo-cluster up: {up.stderr[-3000:]}")
    try:
        exports = run(["sh", "-c", up.stdout + '\nprintf "%s\\n%s" "$KUBECONFIG" "$PATH"'], env=env)
        kubeconfig, path = exports.stdout.split("\n")
        env.update(KUBECONFIG=kubeconfig, PATH=path)
        yield env
    finally:
        run([ROOT / "scripts" / "demo-cluster", "down"], env=env, timeout=120)


# What the README and docs/in-cluster.md tell a fresh clone to run; the tests below run exactly
# these (with --out/--layout in a temporary folder instead of dist/).
DOCUMENTED = ["scripts/build-image", 'eval "$(scripts/demo-cluster up)"',
              "kubectl apply -f deploy/rbac.yaml -f dist/deploy/job.yaml -f dist/deploy/cronjob.yaml",
              "scripts/run-image dist/deploy/job.yaml", "scripts/run-image dist/deploy/cronjob.yaml",
              "scripts/demo-cluster down"]


@pytest.mark.parametrize("page, heading", [("README.md", "## In the cluster: the Job's image"),
                                           ("docs/in-cluster.md", "## Trying it on the demo cluster")])
def test_the_docs_give_the_commands_tested_here(page, heading):
    section = (ROOT / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("  #", 1)[0].split(" > ", 1)[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c in DOCUMENTED] == DOCUMENTED, commands


@pytest.mark.parametrize("name, kind", [("job.yaml", "CheckReport"), ("cronjob.yaml", "VerifyReport")])
def test_the_readme_path_runs_the_jobs_image_on_the_demo_cluster(images, demo, name, kind):
    out = images[0]["out"]
    r = run(["kubectl", "apply", "-f", ROOT / "deploy" / "rbac.yaml", "-f", out / "deploy" / "job.yaml",
             "-f", out / "deploy" / "cronjob.yaml"], env=demo)
    assert r.returncode == 0, r.stderr
    r = run([ROOT / "scripts" / "run-image", "--layout", images[0]["layout"], out / "deploy" / name],
            env=demo, timeout=300)
    assert r.returncode == 1, r.stderr            # the examples' cluster has findings: 1, never 2
    assert "error:" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    (obj,) = yaml.safe_load_all((out / "deploy" / name).read_text())
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    args = spec["template"]["spec"]["containers"][0]["args"]
    # the container's own output: the JSON report when its args ask for -o json
    if "-o" in args and args[args.index("-o") + 1] == "json":
        report = json.loads(r.stdout)
        assert report["kind"] == kind and report["setting"]
    else:
        assert r.stdout.strip(), "the container printed nothing"


def test_run_image_refuses_a_digest_the_layout_does_not_hold(images, demo, tmp_path):
    out = images[0]["out"]
    other = "sha256:" + "0" * 64
    text = (out / "deploy" / "job.yaml").read_text().replace(images[0]["digest"], other)
    (tmp_path / "job.yaml").write_text(text)
    r = run(["kubectl", "apply", "-f", ROOT / "deploy" / "rbac.yaml", "-f", tmp_path / "job.yaml"], env=demo)
    if r.returncode != 0 and "field is immutable" in r.stderr:      # a Job's template cannot change
        run(["kubectl", "delete", "-f", tmp_path / "job.yaml", "--wait"], env=demo)
        r = run(["kubectl", "apply", "-f", tmp_path / "job.yaml"], env=demo)
    assert r.returncode == 0, r.stderr
    r = run([ROOT / "scripts" / "run-image", "--layout", images[0]["layout"], tmp_path / "job.yaml"], env=demo)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == (f"error: image {other} is not in {images[0]['layout']} (it holds "
                        f"{images[0]['digest']}): build it with scripts/build-image\n")
