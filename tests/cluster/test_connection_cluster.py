"""Every connection flag takes effect exactly as in kubectl, proven on real API servers.

Two API servers (A and B) share one CA and one set of client certificates, accept the same
static tokens, and write an audit log of every request. For each combination of kubeconfig and
flags, the plugin (`verify -n <probe>`) and kubectl (`get pods -n <probe>`) are run with the same
flags, and the servers' own audit logs say which server each request reached and as whom
(authenticated user; impersonated user, groups, uid, extra). The plugin must land exactly where
kubectl lands, and where the case says.

Users in the kubeconfig: client certificates (admin, reader), a token, a tokenFile, an exec
credential plugin printing a token, one printing a client certificate, and a user with the
kubeconfig's own impersonation (as, as-groups, as-uid, as-user-extra).
"""

import base64
import io
import itertools
import json
import os
import socket
import stat
import subprocess
import sys
import threading

import pytest

from kubectl_kvcache import __version__, cli

harness = sys.modules["kvcache_test_harness"]      # loaded by this folder's conftest

TOKENS = {"alice-token-0123456789": ("alice", ["system:masters"]),
          "bob-token-0123456789": ("bob", ["system:masters"]),
          "carol-token-0123456789": ("carol", ["system:masters"]),
          "erin-token-0123456789": ("erin", ["system:masters"])}
ADMIN = harness.ADMIN_USER
READER = harness.READER_USER
SETTING_NS, SETTING = "gpustack-system", "model-deployment-kv-cache-dtype-owned"
_probe = itertools.count(1)


IMPERSONATED = ["dave", "frank"]     # may be impersonated, and may read and write anything


@pytest.fixture(scope="module")
def pair(cluster_binaries):
    a = harness.Cluster(cluster_binaries, name="conn-a", audit=True, tokens=TOKENS)
    b = harness.Cluster(cluster_binaries, name="conn-b", audit=True, tokens=TOKENS, pki_from=a)
    try:
        for c in (a, b):
            c.start()
            c.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": "impersonated-admins"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "cluster-admin"},
                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": n}
                                  for n in IMPERSONATED]}, with_status=False)
    except harness.ClusterError as exc:
        b.stop()
        a.stop()
        pytest.fail(f"could not start the test clusters: {exc}", pytrace=False)
    try:
        yield a, b
    finally:
        b.stop()
        a.stop()


def _b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def _script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return str(path)


class ConnectProxy:
    """A loopback HTTP CONNECT proxy that records where it was asked to tunnel."""

    def __init__(self):
        self.targets = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode()
        method, target, _ = line.split(" ", 2)
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        self.targets.append(target)
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pump(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        pump(upstream, client)

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def proxy():
    p = ConnectProxy()
    yield p
    p.close()


@pytest.fixture(scope="module")
def kc(pair, proxy, tmp_path_factory):
    """The kubeconfig of every case, and the files around it."""
    a, b = pair
    d = tmp_path_factory.mktemp("conn")
    pki = a._p("pki")
    with open(os.path.join(pki, "reader.crt")) as f:
        reader_crt = f.read()
    with open(os.path.join(pki, "reader.key")) as f:
        reader_key = f.read()
    ran = d / "exec-ran"
    token_exec = _script(d / "exec-token.sh", "#!/bin/sh\n"
                         f"printf '%s\\n' \"$KUBERNETES_EXEC_INFO\" >> {ran}\n"
                         "cat <<'EOF'\n" + json.dumps({
                             "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                             "status": {"token": "carol-token-0123456789"}}) + "\nEOF\n")
    cert_exec = _script(d / "exec-cert.sh", "#!/bin/sh\ncat <<'EOF'\n" + json.dumps({
        "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
        "status": {"clientCertificateData": reader_crt, "clientKeyData": reader_key}}) + "\nEOF\n")
    (d / "bob.token").write_text("bob-token-0123456789\n")
    ca = _b64(a.ca_file)

    def exec_user(command):
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                         "interactiveMode": "Never"}}

    def cert_user(key):
        return {"client-certificate": os.path.join(pki, f"{key}.crt"), "client-key": os.path.join(pki, f"{key}.key")}

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx-a",
        "clusters": [{"name": "a", "cluster": {"server": a.server, "certificate-authority-data": ca}},
                     {"name": "b", "cluster": {"server": b.server, "certificate-authority-data": ca}},
                     {"name": "both-ways", "cluster": {"server": a.server, "certificate-authority-data": ca,
                                                       "insecure-skip-tls-verify": True}},
                     {"name": "sni-ok", "cluster": {"server": a.server, "certificate-authority-data": ca,
                                                    "tls-server-name": "kubernetes.default.svc"}},
                     {"name": "sni-bad", "cluster": {"server": a.server, "certificate-authority-data": ca,
                                                     "tls-server-name": "not-the-apiserver.example"}},
                     {"name": "via-proxy", "cluster": {"server": a.server, "certificate-authority-data": ca,
                                                       "proxy-url": proxy.url}}],
        "users": [{"name": "admin", "user": cert_user("admin")},
                  {"name": "reader", "user": cert_user("reader")},
                  {"name": "alice", "user": {"token": "alice-token-0123456789"}},
                  {"name": "bob", "user": {"tokenFile": str(d / "bob.token")}},
                  {"name": "carol-exec", "user": exec_user(token_exec)},
                  {"name": "cert-exec", "user": exec_user(cert_exec)},
                  {"name": "impersonating", "user": dict(cert_user("admin"), **{
                      "as": "dave", "as-groups": ["g1"], "as-uid": "uid-dave",
                      "as-user-extra": {"scopes": ["s1", "s2"]}})}],
        "contexts": [{"name": "ctx-a", "context": {"cluster": "a", "user": "admin"}},
                     {"name": "ctx-b", "context": {"cluster": "b", "user": "admin"}},
                     {"name": "ctx-alice", "context": {"cluster": "a", "user": "alice"}},
                     {"name": "ctx-both-ways", "context": {"cluster": "both-ways", "user": "admin"}}],
    }
    path = d / "config"
    path.write_text(json.dumps(config))
    # a second file for KUBECONFIG lists: its own current-context (B) and a cluster "a" that
    # points at B: whichever file comes first wins both
    second = dict(config, **{"current-context": "ctx-b",
                             "clusters": [{"name": "a", "cluster": {"server": b.server,
                                                                    "certificate-authority-data": ca}},
                                          {"name": "b", "cluster": {"server": b.server,
                                                                    "certificate-authority-data": ca}}],
                             "contexts": [{"name": "ctx-b", "context": {"cluster": "b", "user": "admin"}}]})
    (d / "second").write_text(json.dumps(second))
    # a CA that signed neither server
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(d / "other.key"), "-out", str(d / "other-ca.crt"), "-days", "1",
                    "-subj", "/CN=other-ca"], check=True, capture_output=True)
    return {"path": str(path), "second": str(d / "second"), "dir": d, "exec_ran": ran,
            "other_ca": str(d / "other-ca.crt"), "ca": a.ca_file, "a": a, "b": b}


# -- who answered, and as whom -----------------------------------------------------------------

def _mark(pair):
    return [len(c.audit_events()) for c in pair]


def _seen(pair, marks, agent):
    """{(server, user, impersonated user, impersonated groups, impersonated uid, extra)} of the
    requests with this user agent since `marks`."""
    seen = set()
    for name, c, mark in zip("AB", pair, marks):
        for ev in c.audit_events()[mark:]:
            if not (ev.get("userAgent") or "").startswith(agent):
                continue
            imp = ev.get("impersonatedUser") or {}
            extra = tuple(sorted((k, tuple(v)) for k, v in (imp.get("extra") or {}).items()))
            seen.add((name, (ev.get("user") or {}).get("username"), imp.get("username"),
                      tuple(sorted(imp.get("groups") or ())) or None, imp.get("uid"), extra or None))
    return seen


def run_plugin(monkeypatch, flags, env=None, command=("verify",)):
    probe = f"probe-{next(_probe)}"
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    out, err = io.StringIO(), io.StringIO()
    argv = list(command) + (["-n", probe] if command == ("verify",) else []) + list(flags)
    code = cli.main(argv, stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def reached(code, err):
    """The plugin reached the server and read: exit 0, or exit 1 because the probe's namespace does
    not exist there, or holds nothing verify reads (a user who may not get namespaces is not told
    it is missing) (verify's answer for a scope with nothing read; kubectl get says "No resources
    found" with 0, the plugin makes a gate fail: issue 48)."""
    return code == 0 or (code == 1 and ("does not exist: nothing in it was read" in err
                                        or err.rstrip().endswith(": nothing was verified there"))
                         and "error:" not in err)


def run_kubectl(pair, flags, env=None):
    probe = f"probe-{next(_probe)}"
    e = dict(os.environ)
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    e["KUBECACHEDIR"] = pair[0].cache_dir
    p = subprocess.run([pair[0].kubectl_path, "get", "pods", "-n", probe, *flags], capture_output=True, text=True,
                       env=e, timeout=60)
    return p.returncode, p.stdout, p.stderr


def both(pair, monkeypatch, flags, env=None):
    """(what the plugin reached, what kubectl reached) with the same flags and environment."""
    marks = _mark(pair)
    code, out, err = run_plugin(monkeypatch, flags, env)
    plugin_seen = _seen(pair, marks, "kubectl-kvcache/")
    marks = _mark(pair)
    kcode, kout, kerr = run_kubectl(pair, flags, env)
    kubectl_seen = _seen(pair, marks, "kubectl/")
    return (code, err, plugin_seen), (kcode, kerr, kubectl_seen)


def identity(server, user, as_user=None, groups=None, uid=None, extra=None):
    """The API server adds system:authenticated to an impersonated user's groups."""
    groups = tuple(sorted(set(groups or ()) | {"system:authenticated"})) if as_user else None
    return {(server, user, as_user, groups, uid, extra)}


CASES = [
    # (id, flags, env, expected identity)
    ("kubeconfig-current-context", lambda k: ["--kubeconfig", k["path"]], None, identity("A", ADMIN)),
    ("server", lambda k: ["--kubeconfig", k["path"], "--server", k["b"].server], None, identity("B", ADMIN)),
    ("short-s", lambda k: ["--kubeconfig", k["path"], "-s", k["b"].server], None, identity("B", ADMIN)),
    ("context", lambda k: ["--kubeconfig", k["path"], "--context", "ctx-b"], None, identity("B", ADMIN)),
    ("cluster", lambda k: ["--kubeconfig", k["path"], "--cluster", "b"], None, identity("B", ADMIN)),
    ("user-token", lambda k: ["--kubeconfig", k["path"], "--user", "alice"], None, identity("A", "alice")),
    ("user-tokenfile", lambda k: ["--kubeconfig", k["path"], "--user", "bob"], None, identity("A", "bob")),
    ("token-replaces-a-token-user", lambda k: ["--kubeconfig", k["path"], "--context", "ctx-alice",
                                               "--token", "erin-token-0123456789"], None, identity("A", "erin")),
    ("token-with-server", lambda k: ["--kubeconfig", k["path"], "--user", "alice", "--server", k["b"].server],
     None, identity("B", "alice")),
    ("exec-token", lambda k: ["--kubeconfig", k["path"], "--user", "carol-exec"], None, identity("A", "carol")),
    ("exec-cert", lambda k: ["--kubeconfig", k["path"], "--user", "cert-exec"], None, identity("A", READER)),
    ("token-instead-of-exec", lambda k: ["--kubeconfig", k["path"], "--user", "carol-exec",
                                         "--token", "erin-token-0123456789"], None, identity("A", "erin")),
    ("as-flags", lambda k: ["--kubeconfig", k["path"], "--as", "dave", "--as-group", "g1", "--as-group", "g2",
                            "--as-uid", "uid-9"], None, identity("A", ADMIN, "dave", ["g1", "g2"], "uid-9")),
    ("kubeconfig-impersonation", lambda k: ["--kubeconfig", k["path"], "--user", "impersonating"], None,
     identity("A", ADMIN, "dave", ["g1"], "uid-dave", (("scopes", ("s1", "s2")),))),
    ("as-overrides-kubeconfig-as", lambda k: ["--kubeconfig", k["path"], "--user", "impersonating",
                                              "--as", "frank"], None,
     identity("A", ADMIN, "frank", ["g1"], "uid-dave", (("scopes", ("s1", "s2")),))),
    ("as-group-overrides-kubeconfig-groups", lambda k: ["--kubeconfig", k["path"], "--user", "impersonating",
                                                        "--as-group", "g3"], None,
     identity("A", ADMIN, "dave", ["g3"], "uid-dave", (("scopes", ("s1", "s2")),))),
    ("KUBECONFIG-list-first-wins", lambda k: [], lambda k: {"KUBECONFIG": f"{k['path']}:{k['second']}"},
     identity("A", ADMIN)),
    ("KUBECONFIG-list-other-order", lambda k: [], lambda k: {"KUBECONFIG": f"{k['second']}:{k['path']}"},
     identity("B", ADMIN)),
    ("KUBECONFIG-list-missing-files-skipped", lambda k: ["--context", "ctx-a"],
     lambda k: {"KUBECONFIG": f"/nonexistent/x:{k['second']}:{k['path']}"}, identity("B", ADMIN)),
    ("kubeconfig-flag-beats-KUBECONFIG", lambda k: ["--kubeconfig", k["path"]],
     lambda k: {"KUBECONFIG": k["second"]}, identity("A", ADMIN)),
    ("insecure-clears-the-kubeconfig-ca", lambda k: ["--kubeconfig", k["path"], "--insecure-skip-tls-verify"],
     None, identity("A", ADMIN)),
    ("certificate-authority", lambda k: ["--kubeconfig", k["path"], "--certificate-authority", k["ca"],
                                         "--server", k["b"].server], None, identity("B", ADMIN)),
    ("tls-server-name", lambda k: ["--kubeconfig", k["path"], "--cluster", "sni-ok"], None, identity("A", ADMIN)),
    ("server-clears-tls-server-name", lambda k: ["--kubeconfig", k["path"], "--cluster", "sni-bad",
                                                 "--server", k["b"].server], None, identity("B", ADMIN)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_flag_reaches_the_server_and_identity_kubectl_reaches(pair, kc, monkeypatch, case):
    _, flags, env, expected = case
    if os.path.exists(kc["exec_ran"]):
        os.unlink(kc["exec_ran"])
    (code, err, plugin_seen), (kcode, kerr, kubectl_seen) = both(pair, monkeypatch, flags(kc),
                                                                 env(kc) if env else None)
    assert reached(code, err), err
    assert kcode == 0, kerr
    assert kubectl_seen == expected
    assert plugin_seen == expected


def test_a_token_flag_does_not_run_the_exec_plugin(pair, kc, monkeypatch):
    if os.path.exists(kc["exec_ran"]):
        os.unlink(kc["exec_ran"])
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--user", "carol-exec",
                                              "--token", "erin-token-0123456789"])
    assert reached(code, err), err
    assert not os.path.exists(kc["exec_ran"])
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--user", "carol-exec"])
    assert reached(code, err), err
    with open(kc["exec_ran"]) as f:
        info = json.loads(f.readline())
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == "client.authentication.k8s.io/v1"


def test_token_flag_with_a_client_certificate_user_is_what_kubectl_does(pair, kc, monkeypatch):
    """client-go merges --token into the user: the certificate is still presented, and the API
    server's authenticators try the certificate first, so kubectl runs as the certificate's user;
    so does the plugin."""
    (code, err, plugin_seen), (kcode, kerr, kubectl_seen) = both(
        pair, monkeypatch, ["--kubeconfig", kc["path"], "--token", "erin-token-0123456789"])
    assert reached(code, err) and kcode == 0, (err, kerr)
    assert plugin_seen == kubectl_seen == identity("A", ADMIN)


def test_every_request_carries_the_plugins_user_agent(pair, kc, monkeypatch):
    marks = _mark(pair)
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"]])
    assert reached(code, err), err
    agents = {ev.get("userAgent") for ev in pair[0].audit_events()[marks[0]:]
              if "/namespaces/probe-" in ev.get("requestURI", "") or "gpustack" in ev.get("requestURI", "")}
    assert agents == {f"kubectl-kvcache/{__version__}"}


# -- refusals, as kubectl refuses ----------------------------------------------------------------

def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "ApiException" not in err
    return lines[0]


def test_a_tls_server_name_the_certificate_does_not_have_fails_as_in_kubectl(pair, kc, monkeypatch):
    (code, err, plugin_seen), (kcode, kerr, kubectl_seen) = both(
        pair, monkeypatch, ["--kubeconfig", kc["path"], "--cluster", "sni-bad"])
    assert kcode != 0 and "certificate" in kerr
    assert code == 2 and plugin_seen == set() == kubectl_seen
    line = one_error_line(err)
    assert pair[0].server in line and "not trusted" in line and "not-the-apiserver.example" in line, line


def test_the_clusters_proxy_url_carries_the_requests_as_in_kubectl(pair, kc, proxy, monkeypatch):
    before = len(proxy.targets)
    (code, err, plugin_seen), (kcode, kerr, kubectl_seen) = both(
        pair, monkeypatch, ["--kubeconfig", kc["path"], "--cluster", "via-proxy"])
    assert reached(code, err) and kcode == 0, (err, kerr)
    assert plugin_seen == kubectl_seen == identity("A", ADMIN)
    address = pair[0].server.split("://", 1)[1]
    assert proxy.targets[before:] and set(proxy.targets[before:]) == {address}


REFUSALS = [
    ("ca-and-insecure-flags", lambda k: ["--kubeconfig", k["path"], "--insecure-skip-tls-verify",
                                         "--certificate-authority", k["ca"]], "insecure-skip-tls-verify"),
    ("ca-and-insecure-in-the-kubeconfig", lambda k: ["--kubeconfig", k["path"], "--context", "ctx-both-ways"],
     "insecure-skip-tls-verify"),
    ("unknown-context", lambda k: ["--kubeconfig", k["path"], "--context", "nope"], "context 'nope'"),
    ("unknown-cluster", lambda k: ["--kubeconfig", k["path"], "--cluster", "nope"], "cluster 'nope'"),
    ("unknown-user", lambda k: ["--kubeconfig", k["path"], "--user", "nope"], "user 'nope'"),
    ("as-group-without-any-as", lambda k: ["--kubeconfig", k["path"], "--as-group", "g1"], "impersonat"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_what_kubectl_refuses_is_refused_before_any_request(pair, kc, monkeypatch, case):
    _, flags, words = case
    (code, err, plugin_seen), (kcode, kerr, kubectl_seen) = both(pair, monkeypatch, flags(kc))
    assert kcode != 0 and kubectl_seen == set(), kerr
    assert code == 2
    assert words in one_error_line(err)
    assert plugin_seen == set()


def test_an_untrusted_server_certificate_is_one_line_naming_the_server_and_why(pair, kc, monkeypatch):
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--certificate-authority",
                                              kc["other_ca"]])
    assert code == 2
    line = one_error_line(err)
    assert pair[0].server in line and "certificate" in line and "not trusted" in line
    kcode, _, kerr = run_kubectl(pair, ["--kubeconfig", kc["path"], "--certificate-authority", kc["other_ca"]])
    assert kcode != 0 and "certificate" in kerr


def test_insecure_prints_no_warning(pair, kc, monkeypatch):
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--insecure-skip-tls-verify"])
    assert reached(code, err), err
    # (the one warning expected: the probe's namespace does not exist on this server)
    others = [line for line in err.splitlines() if not line.endswith("does not exist: nothing in it was read")]
    assert not any("arning" in line or "InsecureRequest" in line for line in others), err


def test_request_timeout_applies_to_the_real_server(pair, kc, monkeypatch):
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--request-timeout", "1ms"])
    assert code == 2
    line = one_error_line(err)
    assert "request timeout" in line and pair[0].server in line
    code, out, err = run_plugin(monkeypatch, ["--kubeconfig", kc["path"], "--request-timeout", "30s"])
    assert reached(code, err), err


# -- a write goes where the flags say, and its undo command says the same ---------------------------

def test_setting_off_with_server_patches_that_server_and_the_undo_names_it(pair, kc, monkeypatch):
    a, b = pair
    for c in pair:
        c.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                 "metadata": {"name": SETTING, "namespace": SETTING_NS},
                 "spec": {"value": "true"},
                 "status": {"value": "true", "editable": True, "description": "d", "sensitive": False}})
    marks = _mark(pair)
    code, out, err = run_plugin(monkeypatch, ["off", "--yes", "--kubeconfig", kc["path"], "--server", b.server,
                                              "--as-uid", "uid-x", "--as", "dave"], command=("setting",))
    assert code == 0, err
    assert a.get("settings.gpustack.ai", SETTING, namespace=SETTING_NS)["spec"]["value"] == "true"
    assert b.get("settings.gpustack.ai", SETTING, namespace=SETTING_NS)["spec"]["value"] == "false"
    seen = _seen(pair, marks, "kubectl-kvcache/")
    assert {s[0] for s in seen} == {"B"} and {(s[1], s[2], s[4]) for s in seen} == {(ADMIN, "dave", "uid-x")}
    patches = [ev for ev in b.audit_events()[marks[1]:] if ev.get("verb") == "patch"]
    assert len(patches) == 1 and patches[0]["impersonatedUser"]["username"] == "dave"
    undo = [ln for ln in (out + err).splitlines() if "kubectl kvcache setting on --yes" in ln]
    assert undo, out + err
    assert f"--server {b.server}" in undo[0] and "--as-uid uid-x" in undo[0] and "--as dave" in undo[0]
