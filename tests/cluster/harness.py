"""Start and stop a real, throwaway Kubernetes API server for tests and demos.

A "cluster" here is etcd + kube-apiserver on 127.0.0.1 (no scheduler, no
controller-manager, no kubelet: Pods stay Pending unless a test writes their
status), with its own CA, RBAC, three users (admin, read-only reader, nobody)
and, optionally, the GPUStack Operator CRDs from tests/cluster/crds/.

Stdlib (+ PyYAML) only and importable without pytest: scripts/demo-cluster
uses it too.

    from harness import Cluster, find_binaries
    c = Cluster(find_binaries())
    c.start()
    try:
        c.kubectl("get", "pods", "-A")
    finally:
        c.stop()
"""

import atexit
import base64
import ctypes
import hashlib
import importlib.util
import itertools
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

# scripts/demo-cluster and bench/ load this file by path, maybe under a Python without the plugin
# installed: the checkout's own package then comes from the repository root.
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from kubectl_kvcache.operator.api import GROUP, VERSION  # noqa: E402

try:
    import yaml
except ImportError:  # pragma: no cover - pyyaml is a project dependency
    yaml = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
CRD_DIR = os.path.join(HERE, "crds")
TEST_BINARIES = os.path.join(REPO_ROOT, "scripts", "test-binaries")
KUBE_VERSION_FILE = os.path.join(REPO_ROOT, "hack", "kube", "KUBE_VERSION")
OPERATOR_NAMESPACE = "gpustack-system"
WORKDIR_PREFIX = "kvcache-cluster-"

# Groups/versions the CRDs serve, and what discovery must list before tests run.
CRD_GROUPS = {
    f"{GROUP}/{VERSION}": {"kvcachepoolbindings", "kvcachepools",
                                    "kvcachebackends", "modeldeployments"},
    "gpustack.ai/v1": {"settings"},
}

NODE_NAME = "kvcache-node"     # the Node whose kubelet is kubelet_standin.py
READER_USER = "kvcache-reader"
NOBODY_USER = "kvcache-nobody"
ADMIN_USER = "kvcache-admin"

# RBAC for the read-only user: may read Pods and every operator kind, nothing else.
READER_RBAC = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "kvcache-reader"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["worker.gpustack.ai", "gpustack.ai"], "resources": ["*"],
             "verbs": ["get", "list", "watch"]},
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kvcache-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "kvcache-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": READER_USER}],
    },
]


class ClusterError(RuntimeError):
    """The cluster could not be started or a harness operation failed."""


class BinariesUnavailable(ClusterError):
    """kube-apiserver/etcd/kubectl could not be had (no Go, build failed...)."""


def kube_version():
    """The pinned Kubernetes release, e.g. 'v1.37.2'."""
    with open(KUBE_VERSION_FILE) as f:
        return f.read().strip()


def _log(msg):
    print(f"[kvcache-cluster] {msg}", file=sys.stderr, flush=True)


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    return "\n".join(data.splitlines()[-lines:])


def _has_binaries(d):
    return d and all(os.access(os.path.join(d, b), os.X_OK)
                     for b in ("kube-apiserver", "etcd", "kubectl"))


def find_binaries(timeout=None, stream=False):
    """Return the folder holding kube-apiserver, etcd and kubectl.

    Uses $KUBEBUILDER_ASSETS when it has all three, otherwise runs
    scripts/test-binaries (which builds them once into its cache; a cold build
    takes a long time). Raises BinariesUnavailable with the reason. With
    stream=True the build's progress goes to our stderr instead of being kept
    for the error message.
    """
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if _has_binaries(assets):
        return os.path.abspath(assets)
    if timeout is None:
        timeout = float(os.environ.get("KVCACHE_TEST_BIN_TIMEOUT", "5400"))
    try:
        p = subprocess.run([TEST_BINARIES], stdout=subprocess.PIPE,
                           stderr=None if stream else subprocess.PIPE,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise BinariesUnavailable(
            f"scripts/test-binaries did not finish within {timeout:.0f}s:\n"
            + "\n".join(err.splitlines()[-20:])) from None
    except OSError as e:
        raise BinariesUnavailable(f"cannot run {TEST_BINARIES}: {e}") from None
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines or not _has_binaries(lines[-1]):
        raise BinariesUnavailable(
            f"scripts/test-binaries failed (exit {p.returncode}); no kube-apiserver/etcd/"
            "kubectl for the cluster tests. Install Go (>= the version in hack/kube/go.mod) "
            "or point KUBEBUILDER_ASSETS at envtest binaries.\n"
            + "\n".join((p.stderr or "").splitlines()[-25:]))
    return lines[-1]


def free_port():
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tmp_base():
    """Prefer /dev/shm (tmpfs: etcd is fast there) over the ordinary temp dir."""
    base = os.environ.get("KVCACHE_CLUSTER_TMPDIR")
    if base:
        return base
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def cleanup_stale_workdirs():
    """Remove workdirs of test clusters whose owning process is gone."""
    for base in {_tmp_base(), tempfile.gettempdir()}:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if not name.startswith(WORKDIR_PREFIX):
                continue
            d = os.path.join(base, name)
            try:
                with open(os.path.join(d, "owner.pid")) as f:
                    owner = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if not _pid_alive(owner):
                _kill_recorded(d)
                shutil.rmtree(d, ignore_errors=True)


def _recorded_pids(workdir):
    try:
        with open(os.path.join(workdir, "pids.json")) as f:
            return {k: int(v) for k, v in json.load(f).items()}
    except (OSError, ValueError):
        return {}


def _kill_recorded(workdir, grace=0.0):
    """Stop the kube-apiserver, then the etcd recorded in a workdir's pids.json
    (only processes whose command line names that workdir): SIGTERM, then
    SIGKILL after `grace` seconds (at once when grace is 0)."""
    recorded = _recorded_pids(workdir)
    order = sorted(recorded, key=lambda k: k != "kube-apiserver")
    for key in order:
        pid = recorded[key]
        if not _is_our_process(pid, workdir):
            continue
        try:
            os.kill(pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        except OSError:
            continue
        deadline = time.monotonic() + grace
        while (grace > 0 and time.monotonic() < deadline and _is_our_process(pid, workdir)
               and not _is_zombie(pid)):
            time.sleep(0.05)
        if _is_our_process(pid, workdir) and not _is_zombie(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _is_our_process(pid, workdir):
    """True if pid is alive and its command line mentions workdir."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return workdir.encode() in f.read()
    except OSError:
        return False


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """preexec_fn: SIGKILL the child when the (test) process that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # not Linux: atexit still covers the normal case
        pass


def _openssl(*args, cwd):
    p = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args)} failed:\n{p.stderr}")


def _b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def _dump_docs(objs):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})


def parse_objects(objs_or_yaml):
    """Turn YAML/JSON text, a dict or a list of dicts into a flat list of dicts.

    `List` kinds (kubectl's) are flattened.
    """
    if isinstance(objs_or_yaml, (bytes, str)):
        text = objs_or_yaml.decode() if isinstance(objs_or_yaml, bytes) else objs_or_yaml
        if yaml is not None:
            docs = [d for d in yaml.safe_load_all(text) if d]
        else:
            docs = [json.loads(text)]
    elif isinstance(objs_or_yaml, dict):
        docs = [objs_or_yaml]
    else:
        docs = list(objs_or_yaml)
    out = []
    for d in docs:
        if isinstance(d, list):
            out.extend(parse_objects(d))
        elif str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list):
            out.extend(parse_objects(d["items"]))
        else:
            out.append(d)
    return out


_SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation",
                  "managedFields", "selfLink", "deletionTimestamp")


class Cluster:
    """etcd + kube-apiserver on 127.0.0.1 with CRDs, users and kubeconfigs.

    Attributes (after start()):
      server              https://127.0.0.1:<port>
      kube_version        what the server's /version reports, e.g. 'v1.37.2'
      pinned_version      hack/kube/KUBE_VERSION (same unless KUBEBUILDER_ASSETS
                          supplied other binaries: see from_kubebuilder_assets)
      bin_dir             folder with kube-apiserver, etcd, kubectl
      kubectl_path        the pinned kubectl
      admin_kubeconfig    system:masters client cert
      reader_kubeconfig   CN=kvcache-reader: get/list/watch pods + operator kinds
      nobody_kubeconfig   CN=kvcache-nobody: no bindings at all
      kubeconfig          same as admin_kubeconfig
      ca_file             the throwaway CA (PEM)
      workdir             all state (certs, etcd data, logs)
      with_crds           whether the operator CRDs are installed
    """

    def __init__(self, bin_dir, workdir=None, with_crds=True, crd_dir=CRD_DIR,
                 detached=False, name="kvcache", start_timeout=None, pki_from=None,
                 audit=False, tokens=None):
        """pki_from: another Cluster whose CA and client certificates this one shares (its
        kubeconfig users then work here too; a second server for --server/--context/--cluster).
        audit: write an audit log (every request: user, impersonated user, user agent, URI);
        read it with audit_events(). tokens: {token: (user, [groups])} accepted as bearer tokens
        (--token-auth-file), for users with a token or an exec plugin that prints one."""
        self.bin_dir = os.path.abspath(bin_dir)
        self.kubectl_path = os.path.join(self.bin_dir, "kubectl")
        self.apiserver_path = os.path.join(self.bin_dir, "kube-apiserver")
        self.etcd_path = os.path.join(self.bin_dir, "etcd")
        self.with_crds = with_crds
        self.crd_dir = crd_dir
        self.detached = detached
        self.name = name
        self.pinned_version = kube_version()
        self.kube_version = self.pinned_version  # replaced by /version's after start()
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        self.from_kubebuilder_assets = bool(
            assets and os.path.realpath(assets) == os.path.realpath(self.bin_dir))
        self.start_timeout = float(start_timeout or os.environ.get(
            "KVCACHE_CLUSTER_START_TIMEOUT", "90"))
        self._own_workdir = workdir is None
        self.workdir = workdir
        self.server = None
        self.port = None
        self.etcd_port = None
        self._procs = {}
        self._ns_counter = itertools.count(1)
        self._ssl = {}
        self._started = False
        self.pki_from = pki_from
        self.audit = audit
        self.tokens = dict(tokens or {})

    # ------------------------------------------------------------------ paths
    def _p(self, *parts):
        return os.path.join(self.workdir, *parts)

    @property
    def admin_kubeconfig(self):
        return self._p("admin.kubeconfig")

    kubeconfig = admin_kubeconfig

    @property
    def reader_kubeconfig(self):
        return self._p("reader.kubeconfig")

    @property
    def nobody_kubeconfig(self):
        return self._p("nobody.kubeconfig")

    @property
    def ca_file(self):
        return self._p("pki", "ca.crt")

    @property
    def cache_dir(self):
        """kubectl's discovery/http cache for this cluster (KUBECACHEDIR)."""
        return self._p("kube-cache")

    @property
    def etcd_log(self):
        return self._p("etcd.log")

    @property
    def apiserver_log(self):
        return self._p("kube-apiserver.log")

    # -------------------------------------------------------------- lifecycle
    def start(self):
        if self._started:
            return self
        cleanup_stale_workdirs()
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=_tmp_base())
        else:
            os.makedirs(self.workdir, exist_ok=True)
        self.workdir = os.path.abspath(self.workdir)
        if not self.detached:
            with open(self._p("owner.pid"), "w") as f:
                f.write(str(os.getpid()))
            atexit.register(self.stop)
        self._started = True
        t0 = time.monotonic()
        try:
            self._make_pki()
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfigs()
            self.kube_version = self.request_ok("GET", "/version")["gitVersion"]
            self._bootstrap()
        except BaseException:
            self.stop()
            raise
        if self.detached:
            with open(self._p("state.json"), "w") as f:
                json.dump(self.state(), f, indent=2)
        _log(f"cluster {self.name} ready at {self.server} in {time.monotonic() - t0:.1f}s "
             f"(workdir {self.workdir})")
        return self

    def stop(self, remove=None):
        """Kill etcd and kube-apiserver, remove the workdir (unless remove=False)."""
        if remove is None:
            remove = self._own_workdir or self.detached
        for key in ("kube-apiserver", "etcd"):
            p = self._procs.pop(key, None)
            if p is None:
                continue
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
            for fh in (p.stdout, p.stderr):
                if fh:
                    fh.close()
        if self.workdir:
            _kill_recorded(self.workdir, grace=10)  # processes of a detached start (demo)
            if remove:
                shutil.rmtree(self.workdir, ignore_errors=True)
        self._started = False
        try:
            atexit.unregister(self.stop)
        except Exception:
            pass

    @classmethod
    def attach(cls, workdir):
        """A Cluster object for a detached cluster started earlier in workdir
        (scripts/demo-cluster). stop() on it stops that cluster."""
        with open(os.path.join(workdir, "state.json")) as f:
            st = json.load(f)
        c = cls(st["bin_dir"], workdir=workdir, detached=True, name=st["name"],
                with_crds=st.get("with_crds", True))
        c.server = st["server"]
        c.port = int(st["server"].rsplit(":", 1)[1])
        c._started = True
        return c

    def processes_alive(self):
        """True if the recorded etcd and kube-apiserver processes still run."""
        pids = _recorded_pids(self.workdir)
        return bool(pids) and all(_is_our_process(p, self.workdir) and not _is_zombie(p)
                                  for p in pids.values())

    def ready(self):
        """True if /readyz answers 200."""
        try:
            return self.request("GET", "/readyz", timeout=5)[0] == 200
        except OSError:
            return False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ------------------------------------------------------------------- PKI
    @property
    def audit_log(self):
        return self._p("audit.log")

    def audit_events(self):
        """The audit log's events (ResponseComplete stage), oldest first."""
        if not os.path.exists(self.audit_log):
            return []
        events = []
        with open(self.audit_log) as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("stage") == "ResponseComplete":
                    events.append(ev)
        return events

    def _make_pki(self):
        pki = self._p("pki")
        if self.pki_from is not None:
            shutil.copytree(self.pki_from._p("pki"), pki, dirs_exist_ok=True)
            return
        os.makedirs(pki, exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
                 "-subj", f"/CN={self.name}-test-ca",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", cwd=pki)
        certs = {
            "apiserver": ("/CN=kube-apiserver", "serverAuth",
                          "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,"
                          "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
                          "DNS:kubernetes.default.svc.cluster.local"),
            "admin": (f"/O=system:masters/CN={ADMIN_USER}", "clientAuth", None),
            "reader": (f"/CN={READER_USER}", "clientAuth", None),
            "nobody": (f"/CN={NOBODY_USER}", "clientAuth", None),
            # the API server's client certificate towards kubelets (--kubelet-client-certificate),
            # and the serving certificate of the kubelet stand-in (kubelet_standin.py) it verifies
            # with --kubelet-certificate-authority, as kubeadm issues both
            "kubelet-client": ("/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client",
                               "clientAuth", None),
            "kubelet": (f"/CN=system:node:{NODE_NAME}", "serverAuth",
                        f"subjectAltName=IP:127.0.0.1,DNS:{NODE_NAME}"),
        }
        for name, (subj, eku, san) in certs.items():
            self._issue_cert(name, subj, eku, san)
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", "sa.key", cwd=pki)
        _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)

    def _issue_cert(self, name, subj, eku, san=None):
        pki = self._p("pki")
        ext = ["basicConstraints=critical,CA:FALSE",
               "keyUsage=critical,digitalSignature,keyEncipherment",
               f"extendedKeyUsage={eku}"]
        if san:
            ext.append(san)
        with open(os.path.join(pki, f"{name}.ext"), "w") as f:
            f.write("\n".join(ext) + "\n")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=pki)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "3650", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=pki)

    def add_user(self, name, groups=()):
        """Issue a client certificate for user `name` (CN) in `groups` (O) and
        return the path of a kubeconfig for it. It has no RBAC bindings yet:
        apply a Role/ClusterRole and binding for User `name` to grant rights."""
        if not re.fullmatch(r"[A-Za-z0-9._:@-]+", name) or name in ("admin", "reader", "nobody"):
            raise ValueError(f"bad user name {name!r}")
        key = "user-" + re.sub(r"[^A-Za-z0-9._-]", "_", name)
        subj = "".join(f"/O={g}" for g in groups) + f"/CN={name}"
        self._issue_cert(key, subj, "clientAuth")
        path = self._p(f"{key}.kubeconfig")
        self._write_kubeconfig(path, name, key)
        return path

    # ------------------------------------------------------------- processes
    def _popen(self, key, argv, logfile):
        log = open(logfile, "ab")
        kw = {}
        if self.detached:
            kw["start_new_session"] = True
        else:
            kw["preexec_fn"] = _die_with_parent
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             cwd=self.workdir, **kw)
        log.close()
        self._procs[key] = p
        self._record_pids()
        return p

    def _record_pids(self):
        with open(self._p("pids.json"), "w") as f:
            json.dump({k: p.pid for k, p in self._procs.items()}, f)

    def _start_etcd(self):
        last = None
        for _attempt in range(3):
            self.etcd_port, peer = free_port(), free_port()
            data = self._p("etcd-data")
            shutil.rmtree(data, ignore_errors=True)
            p = self._popen("etcd", [
                self.etcd_path,
                "--name", "kvcache-test",
                "--data-dir", data,
                "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"kvcache-test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--quota-backend-bytes", str(2 * 1024 ** 3),
                "--log-level", "warn",
            ], self.etcd_log)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if p.poll() is not None:
                    break
                try:
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{self.etcd_port}/health", timeout=2) as r:
                        if json.load(r).get("health") == "true":
                            return
                except (OSError, ValueError):
                    pass
                time.sleep(0.1)
            last = _tail(self.etcd_log)
            if p.poll() is None:
                p.kill()
                p.wait()
            self._procs.pop("etcd", None)
        raise ClusterError(f"etcd did not become healthy; tail of {self.etcd_log}:\n{last}")

    def _start_apiserver(self):
        pki = self._p("pki")
        last = None
        for _attempt in range(3):
            self.port = free_port()
            self.server = f"https://127.0.0.1:{self.port}"
            p = self._popen("kube-apiserver", [
                self.apiserver_path,
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--etcd-prefix=/registry",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self._p('apiserver-certs')}",
                f"--tls-cert-file={pki}/apiserver.crt",
                f"--tls-private-key-file={pki}/apiserver.key",
                f"--client-ca-file={pki}/ca.crt",
                f"--service-account-key-file={pki}/sa.pub",
                f"--service-account-signing-key-file={pki}/sa.key",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                "--disable-admission-plugins=ServiceAccount",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                # ConfigMaps bypass the watch cache, so a test can expire a continue token by
                # compacting etcd (the cache would otherwise serve the old snapshot).
                "--watch-cache-sizes=configmaps#0",
                "--v=1",
                # pods/log goes to the Node's kubelet, pods/proxy to the Pod IP, both through the
                # "cluster" egress selector: an HTTP CONNECT proxy on a Unix socket that
                # kubelet_standin.py serves (dialling loopback), see egress_selector_config()
                f"--kubelet-client-certificate={pki}/kubelet-client.crt",
                f"--kubelet-client-key={pki}/kubelet-client.key",
                f"--kubelet-certificate-authority={pki}/ca.crt",
                "--kubelet-preferred-address-types=InternalIP",
                f"--egress-selector-config-file={self.egress_selector_config()}",
            ] + self._optional_apiserver_flags(), self.apiserver_log)
            try:
                self._wait_ready(p)
                return
            except ClusterError as e:
                last = e
                if p.poll() is None:
                    p.kill()
                    p.wait()
                self._procs.pop("kube-apiserver", None)
                if "address already in use" not in _tail(self.apiserver_log, 200):
                    break
        raise last

    @property
    def egress_socket(self):
        """The Unix socket of the "cluster" egress (HTTP CONNECT): kubelet_standin.py listens
        here; with nothing listening, pods/log and pods/proxy fail as with an unreachable node.
        A Unix socket's path holds at most 107 bytes: a deep workdir gets one in the temp folder,
        named after it (so attach() finds the same)."""
        path = self._p("egress.sock")
        if len(path.encode()) <= 100:
            return path
        digest = hashlib.sha256(self.workdir.encode()).hexdigest()[:16]
        return os.path.join(tempfile.gettempdir(), f"kvcache-egress-{digest}.sock")

    def egress_selector_config(self):
        """Write the EgressSelectorConfiguration (apiserver.k8s.io/v1beta1) and return its path.
        Only "cluster" traffic (kubelets, Pod/Service proxy, webhooks by Service) goes through it;
        etcd and the control plane dial directly."""
        path = self._p("egress-selector.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "apiserver.k8s.io/v1beta1",
                       "kind": "EgressSelectorConfiguration",
                       "egressSelections": [{"name": "cluster", "connection": {
                           "proxyProtocol": "HTTPConnect",
                           "transport": {"uds": {"udsName": self.egress_socket}}}}]}, f)
        return path

    def _optional_apiserver_flags(self):
        flags = []
        if self.tokens:
            path = self._p("tokens.csv")
            with open(path, "w") as f:
                for token, (user, groups) in self.tokens.items():
                    f.write(f'{token},{user},uid-{user},"{",".join(groups)}"\n')
            flags.append(f"--token-auth-file={path}")
        if self.audit:
            policy = self._p("audit-policy.json")
            with open(policy, "w") as f:
                json.dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                           "omitStages": ["RequestReceived"], "rules": [{"level": "Metadata"}]}, f)
            flags += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                      "--audit-log-mode=blocking", "--audit-log-format=json"]
        return flags

    def _wait_ready(self, p):
        deadline = time.monotonic() + self.start_timeout
        last = ""
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise ClusterError(
                    f"kube-apiserver exited with {p.returncode} before becoming ready; "
                    f"tail of {self.apiserver_log}:\n{_tail(self.apiserver_log)}")
            try:
                status, body = self.request("GET", "/readyz", timeout=5)
                if status == 200:
                    return
                last = f"HTTP {status}: {body}"
            except OSError as e:
                last = str(e)
            time.sleep(0.25)
        raise ClusterError(
            f"kube-apiserver at {self.server} not ready within {self.start_timeout:.0f}s "
            f"(last: {str(last)[-2000:]}); tail of {self.apiserver_log}:\n"
            f"{_tail(self.apiserver_log)}")

    # ------------------------------------------------------------ kubeconfig
    def _write_kubeconfigs(self):
        os.makedirs(self.cache_dir, exist_ok=True)
        for user, path, key in ((ADMIN_USER, self.admin_kubeconfig, "admin"),
                                (READER_USER, self.reader_kubeconfig, "reader"),
                                (NOBODY_USER, self.nobody_kubeconfig, "nobody")):
            self._write_kubeconfig(path, user, key)

    def _write_kubeconfig(self, path, user, key):
        pki = self._p("pki")
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.name, "cluster": {
                "server": self.server,
                "certificate-authority-data": _b64file(f"{pki}/ca.crt")}}],
            "users": [{"name": user, "user": {
                "client-certificate-data": _b64file(f"{pki}/{key}.crt"),
                "client-key-data": _b64file(f"{pki}/{key}.key")}}],
            "contexts": [{"name": f"{self.name}-{key}",
                          "context": {"cluster": self.name, "user": user,
                                      "namespace": "default"}}],
            "current-context": f"{self.name}-{key}",
            "preferences": {},
        }
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        os.chmod(path, 0o600)

    def env(self, kubeconfig=None, base=None):
        """Environment for running kubectl or the plugin against this cluster:
        KUBECONFIG, a per-cluster KUBECACHEDIR, and the pinned kubectl first on PATH."""
        env = dict(os.environ if base is None else base)
        env["KUBECONFIG"] = kubeconfig or self.admin_kubeconfig
        env["KUBECACHEDIR"] = self.cache_dir
        env["PATH"] = self.bin_dir + os.pathsep + env.get("PATH", "")
        return env

    # ---------------------------------------------------------------- kubectl
    def kubectl(self, *args, kubeconfig=None, input=None, check=False, timeout=120):
        """Run the pinned kubectl (admin unless kubeconfig= is given).

        Returns subprocess.CompletedProcess with text stdout/stderr. With
        check=True a failure raises ClusterError carrying stderr.
        """
        argv = [self.kubectl_path, f"--kubeconfig={kubeconfig or self.admin_kubeconfig}",
                *[str(a) for a in args]]
        p = subprocess.run(argv, input=input, capture_output=True, text=True,
                           timeout=timeout, env=self.env(kubeconfig),
                           stdin=None if input is not None else subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise ClusterError(f"{' '.join(argv[2:])} failed (exit {p.returncode}):\n"
                               f"{p.stderr}{p.stdout}")
        return p

    def kubectl_json(self, *args, kubeconfig=None, input=None):
        """Run kubectl with -o json and return the parsed output; raises on failure."""
        p = self.kubectl(*args, "-o", "json", kubeconfig=kubeconfig, input=input, check=True)
        return json.loads(p.stdout)

    def get(self, resource, name=None, namespace=None, kubeconfig=None):
        """`kubectl get` as a dict (an object, or a List when name is None)."""
        args = ["get", resource] + ([name] if name else [])
        args += ["-n", namespace] if namespace else []
        return self.kubectl_json(*args, kubeconfig=kubeconfig)

    # -------------------------------------------------------------- REST API
    def _ssl_context(self, user):
        ctx = self._ssl.get(user)
        if ctx is None:
            pki = self._p("pki")
            ctx = ssl.create_default_context(cafile=f"{pki}/ca.crt")
            if user is not None:
                ctx.load_cert_chain(f"{pki}/{user}.crt", f"{pki}/{user}.key")
            self._ssl[user] = ctx
        return ctx

    def request(self, method, path, body=None, user="admin", content_type=None,
                timeout=30, query=None):
        """Raw HTTPS request to the API server as 'admin', 'reader', 'nobody' or None
        (anonymous). Returns (status, parsed JSON or text)."""
        url = self.server + path
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type or "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(user),
                                        timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def request_ok(self, method, path, body=None, **kw):
        status, out = self.request(method, path, body, **kw)
        if status >= 300:
            raise ClusterError(f"{method} {path}: HTTP {status}: {out}")
        return out

    # ------------------------------------------------------------- bootstrap
    def _bootstrap(self):
        self.apply(READER_RBAC, with_status=False)
        if self.with_crds:
            self.install_crds()
        self.ensure_namespace(OPERATOR_NAMESPACE)

    def install_crds(self, crd_dir=None):
        crd_dir = crd_dir or self.crd_dir
        self.kubectl("apply", "-f", crd_dir, check=True)
        names = []
        for fn in sorted(os.listdir(crd_dir)):
            if fn.endswith((".yaml", ".yml", ".json")):
                with open(os.path.join(crd_dir, fn)) as f:
                    names += [o["metadata"]["name"] for o in parse_objects(f.read())]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     *[f"crd/{n}" for n in names], check=True)
        self.wait_discovery(CRD_GROUPS)

    def wait_discovery(self, groups=None, timeout=60):
        """Poll /apis/<group>/<version> until each lists the given resources."""
        groups = groups or CRD_GROUPS
        deadline = time.monotonic() + timeout
        missing = dict(groups)
        while True:
            for gv, want in list(missing.items()):
                status, body = self.request("GET", f"/apis/{gv}")
                if status == 200 and isinstance(body, dict):
                    have = {r["name"] for r in body.get("resources", [])}
                    if set(want) <= have:
                        del missing[gv]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"discovery does not serve {missing} after {timeout}s")
            time.sleep(0.2)

    def ensure_namespace(self, name):
        status, out = self.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status not in (201, 409):
            raise ClusterError(f"create namespace {name}: HTTP {status}: {out}")
        return name

    def new_namespace(self, prefix="test"):
        """Create a fresh, uniquely named namespace and return its name."""
        prefix = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:40] or "test"
        suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        name = f"{prefix}-{next(self._ns_counter)}-{suffix}"
        return self.ensure_namespace(name)

    # ------------------------------------------------------------ objects
    def apply(self, objs_or_yaml, namespace=None, with_status=True, kubeconfig=None,
              fix_owner_uids=True):
        """Create/update objects (YAML/JSON text, a dict, a list of dicts or a `List`).

        - Namespaces named by the objects are created first.
        - Server-set metadata (uid, resourceVersion, ...) in the input is dropped.
        - Objects with ownerReferences come after the others, and an owner
          reference naming an object created in the same call gets its real uid.
        - `status` is written through the status subresource afterwards
          (pods/status for Pods), since create/apply ignores it.
        Returns the list of resulting objects (dicts) in input order.
        """
        objs = parse_objects(objs_or_yaml)
        if not objs:
            return []
        prepared = []
        for o in objs:
            o = json.loads(json.dumps(o))  # deep copy
            md = o.setdefault("metadata", {})
            for k in _SERVER_FIELDS:
                md.pop(k, None)
            ann = md.get("annotations") or {}
            ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
            if "annotations" in md and not ann:
                del md["annotations"]
            status = o.pop("status", None)
            prepared.append((o, status))

        namespaces = []
        for o, _ in prepared:
            if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1":
                continue
            ns = o["metadata"].get("namespace")
            if ns and ns not in namespaces:
                namespaces.append(ns)
        if namespace and namespace not in namespaces:
            namespaces.append(namespace)

        def run_apply(batch):
            if not batch:
                return []
            args = ["apply", "-f", "-", "-o", "json"]
            if namespace:
                args += ["-n", namespace]
            out = self.kubectl(*args, kubeconfig=kubeconfig, input=_dump_docs(batch),
                               check=True)
            res = json.loads(out.stdout)
            return res.get("items", [res]) if res.get("kind", "").endswith("List") else [res]

        results = {}
        ns_first = [i for i, (o, _) in enumerate(prepared)
                    if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1"]
        for i, r in zip(ns_first, run_apply([prepared[i][0] for i in ns_first])):
            results[i] = r
        for ns in namespaces:
            if kubeconfig in (None, self.admin_kubeconfig):
                self.ensure_namespace(ns)
        plain = [i for i, (o, _) in enumerate(prepared)
                 if i not in results and not o["metadata"].get("ownerReferences")]
        owned = [i for i, (o, _) in enumerate(prepared)
                 if i not in results and o["metadata"].get("ownerReferences")]
        for i, r in zip(plain, run_apply([prepared[i][0] for i in plain])):
            results[i] = r
        if fix_owner_uids:
            uids = {(r.get("kind"), r["metadata"].get("namespace"), r["metadata"]["name"]):
                    r["metadata"]["uid"] for r in results.values()}
            for i in owned:
                o = prepared[i][0]
                for ref in o["metadata"]["ownerReferences"]:
                    key = (ref.get("kind"), o["metadata"].get("namespace") or namespace,
                           ref.get("name"))
                    uid = uids.get(key) or uids.get((ref.get("kind"), None, ref.get("name")))
                    if uid:
                        ref["uid"] = uid
                    elif not ref.get("uid"):
                        ref["uid"] = "00000000-0000-4000-8000-" + format(
                            random.getrandbits(48), "012x")
        for i, r in zip(owned, run_apply([prepared[i][0] for i in owned])):
            results[i] = r
        if with_status:
            for i, (o, status) in enumerate(prepared):
                if status:
                    results[i] = self.set_status(results[i], status=status,
                                                 kubeconfig=kubeconfig)
        return [results[i] for i in range(len(prepared))]

    def set_status(self, resource, name=None, status=None, namespace=None, kubeconfig=None):
        """Merge-patch `status` through the status subresource and return the object.

        `resource` is either an object dict (apiVersion/kind/metadata), or a kubectl
        resource string ('setting', 'kvcpb', 'pods', 'modeldeployments.worker.gpustack.ai')
        together with name= (and namespace= for namespaced kinds).
        """
        if status is None:
            raise ValueError("status is required")
        if isinstance(resource, dict):
            md = resource.get("metadata", {})
            api_version = resource["apiVersion"]
            group, _, version = api_version.rpartition("/")
            kind = resource["kind"]
            resource = f"{kind}.{version}.{group}" if group else kind
            name = name or md["name"]
            namespace = namespace or md.get("namespace")
        args = ["patch", resource, name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": status}), "-o", "json"]
        if namespace:
            args += ["-n", namespace]
        return json.loads(self.kubectl(*args, kubeconfig=kubeconfig, check=True).stdout)

    def delete(self, *args, kubeconfig=None):
        """`kubectl delete --wait=false --ignore-not-found <args>` (raises on failure)."""
        return self.kubectl("delete", "--ignore-not-found", "--wait=false", *args,
                            kubeconfig=kubeconfig, check=True)

    def load_examples(self, folder):
        """Apply every *.yaml/*.yml/*.json file in folder (sorted), statuses included. The plugin's
        own files there (a `--policy` file: apiVersion kubectl-kvcache/...) are no API objects and
        are left out."""
        loaded = []
        for fn in sorted(os.listdir(folder)):
            if fn.endswith((".yaml", ".yml", ".json")):
                with open(os.path.join(folder, fn)) as f:
                    objs = [o for o in parse_objects(f.read())
                            if not str(o.get("apiVersion", "")).startswith("kubectl-kvcache/")]
                if objs:
                    loaded += self.apply(objs)
        return loaded

    def load_example_namespaces(self, path, prefix=""):
        """The namespaced objects of a saved List (examples/cluster.json) in fresh namespaces, one
        per namespace of the file (`prefix` + its name + a counter), so that tests sharing this
        server do not see each other's copies; its Setting and cluster-scoped objects are left
        out. Returns {namespace in the file: namespace here}."""
        with open(path) as f:
            items = json.load(f)["items"]
        mapping, objs = {}, []
        for obj in items:
            if obj["kind"] == "Setting" or "namespace" not in obj["metadata"]:
                continue
            old = obj["metadata"]["namespace"]
            if old not in mapping:
                mapping[old] = self.new_namespace(prefix + old)
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["namespace"] = mapping[old]
            objs.append(obj)
        self.apply(objs)
        return mapping

    # ------------------------------------------------- the operator's stand-in
    def operator_standin(self, namespaces=None, interval=0.2, kubelet=None):
        """A StandInOperator (tests/cluster/operator_standin.py) on this cluster: a small controller
        that plays the GPUStack Operator's dtype behaviour. Not started: use `with` (a thread), or
        call reconcile()/settle() to step it."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "operator_standin.py")
        mod = sys.modules.get("kvcache_operator_standin")
        if mod is None:
            spec = importlib.util.spec_from_file_location("kvcache_operator_standin", path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["kvcache_operator_standin"] = mod
            spec.loader.exec_module(mod)
        return mod.StandInOperator(self, namespaces, interval, kubelet=kubelet)

    # ---------------------------------------------------------------- misc
    def state(self):
        """JSON-able description (used by scripts/demo-cluster)."""
        return {
            "name": self.name, "server": self.server, "workdir": self.workdir,
            "with_crds": self.with_crds,
            "bin_dir": self.bin_dir, "kube_version": self.kube_version,
            "admin_kubeconfig": self.admin_kubeconfig,
            "reader_kubeconfig": self.reader_kubeconfig,
            "nobody_kubeconfig": self.nobody_kubeconfig,
            "pids": {k: p.pid for k, p in self._procs.items()},
        }

    def __repr__(self):
        return f"<Cluster {self.name} {self.server} {self.workdir}>"


# -- faults around the real server ---------------------------------------------------------------

class AnswerLosingProxy:
    """A loopback TLS proxy before the real API server (its serving certificate, so the
    cluster's CA trusts it): each request goes on as the harness admin and the real server acts
    on it; `lose(method, path)` decides whether its answer reaches the plugin (a dry run's always
    does): None relays it,
    "500" answers 500 with Retry-After instead (the write was applied all the same), "drop"
    closes the connection instead. The faults a real server cannot be made to produce, with the
    real server's own state and answers around them."""

    def __init__(self, cluster, lose):
        import http.client
        import ssl
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        pki = os.path.join(cluster.workdir, "pki")
        upstream = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        upstream.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"))
        self.forwarded = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(proxy_self):
                length = int(proxy_self.headers.get("Content-Length") or 0)
                body = proxy_self.rfile.read(length) if length else None
                headers = {k: v for k, v in proxy_self.headers.items()
                           if k.lower() not in ("authorization", "host", "connection", "content-length")}
                conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=upstream, timeout=30)
                conn.request(proxy_self.command, proxy_self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self.forwarded.append((proxy_self.command, proxy_self.path.split("?")[0], resp.status))
                # a dry run changes nothing: its answer is always relayed
                dry = "dryRun=" in proxy_self.path.partition("?")[2] or b'"dryRun"' in (body or b"")
                what = None if dry else lose(proxy_self.command, proxy_self.path.split("?")[0])
                if what == "drop":
                    proxy_self.close_connection = True
                    return
                if what == "500":
                    status, data = 500, json.dumps({"kind": "Status", "code": 500, "reason": "InternalError",
                                                    "message": "etcdserver: request timed out"}).encode()
                    extra = {"Retry-After": "0"}
                else:
                    status, extra = resp.status, {}
                proxy_self.send_response(status)
                proxy_self.send_header("Content-Type", "application/json")
                proxy_self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    proxy_self.send_header(k, v)
                proxy_self.end_headers()
                proxy_self.wfile.write(data)

            do_GET = do_PATCH = do_POST = do_DELETE = forward

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.socket = serving.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.kubeconfig = os.path.join(cluster.workdir, f"lossy-{self.server.server_address[1]}.json")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "lossy",
                       "clusters": [{"name": "lossy", "cluster": {
                           "server": f"https://127.0.0.1:{self.server.server_address[1]}",
                           "certificate-authority": os.path.join(pki, "ca.crt")}}],
                       "users": [{"name": "lossy", "user": {"token": "proxy-admin-token-0123456789"}}],
                       "contexts": [{"name": "lossy", "context": {"cluster": "lossy", "user": "lossy"}}]}, f)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
