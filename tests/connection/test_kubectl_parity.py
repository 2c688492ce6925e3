"""The plugin connects exactly where and as whom the real kubectl does, on 1,000 seeded kubeconfigs.

Each case (tests/connection/generate.py) runs through `kubectl get pods -A` and `kubectl-kvcache
verify -A` against loopback recording servers (recorder.py); what reached them must agree
(runner.observe), or both must refuse without sending anything, the plugin with exit 2 and one
`error:` line. KVCACHE_PARITY_SEED / KVCACHE_PARITY_COUNT choose other cases; reproduce one with
`python -m tests.connection --seed S --case K --show`.
"""

import os
import socket
import time

import pytest

from tests.connection import generate, runner
from tests.connection.generate import Case, config, tls_cluster, url
from tests.connection.recorder import PKI, Recorder
from tests.connection.yamlout import dump

SEED = int(os.environ.get("KVCACHE_PARITY_SEED", generate.DEFAULT_SEED))
COUNT = int(os.environ.get("KVCACHE_PARITY_COUNT", generate.DEFAULT_COUNT))
SHOWN = 25          # differences in the assertion message (all of them go to stdout)


def test_kubectl_parity(parity_tools):
    kubectl, plugin = parity_tools
    start = time.monotonic()
    results = runner.run_cases(generate.cases(SEED, COUNT), kubectl, plugin, workers=2)
    seconds = time.monotonic() - start
    bad = [r for r in results if r["differences"]]
    print(runner.LEGEND + "\n")
    for r in bad:
        print(runner.describe(r) + "\n")
    table = runner.tally(results)
    print(runner.summary(results) + "\n")
    print(table)
    print(f"{len(bad)} of {len(results)} cases differ (seed {SEED}) in {seconds:.0f}s")
    empty = runner.vacuous(results)
    assert not empty, "cases where kubectl exited 0 and sent nothing prove nothing:\n" + "\n\n".join(
        runner.describe(r) for r in empty[:SHOWN])
    sent = sum(runner.sent(r["kubectl"]["obs"]) for r in results)
    assert sent >= len(results) // 3, f"only {sent} of {len(results)} cases made kubectl send anything"
    assert not bad, (f"{len(bad)} of {len(results)} cases differ from kubectl (seed {SEED}, {seconds:.0f}s):\n"
                     f"{table}\n\nclasses of differences:\n{runner.summary(results)}\n\n{runner.LEGEND}\n\n" + "\n\n".join(runner.describe(r) for r in bad[:SHOWN]))


def _self_case(k, **kw):
    import random
    rng = random.Random(k)
    doc = config({"c1": tls_cluster(), "c2": {"server": url("tls2"), "certificate-authority": "@CA2@"}},
                 {"u1": {"token": "tok-self-test"}})
    c = Case(id=-k, category="self-test", title=kw.pop("title"), files={"config": dump(doc, rng)}, env={},
             argv=["--kubeconfig", "config"])
    c.update(kw)
    return c


def test_the_tier_can_fail(parity_tools):
    """Cases where the plugin is deliberately run otherwise than kubectl: each must be reported, with
    the aspect that differs; and the unchanged case agrees."""
    kubectl, plugin = parity_tools
    cases = [
        _self_case(1, title="same flags"),
        _self_case(2, title="plugin: another token", plugin_argv=["--kubeconfig", "config", "--token", "tok-other"]),
        _self_case(3, title="plugin: another server", plugin_argv=["--kubeconfig", "config", "--cluster", "c2"]),
        _self_case(4, title="plugin: impersonating", plugin_argv=["--kubeconfig", "config", "--as", "x"]),
        _self_case(5, title="kubectl: a missing kubeconfig", argv=["--kubeconfig", "missing"],
                   plugin_argv=["--kubeconfig", "config"]),
        _self_case(6, title="plugin: a missing kubeconfig", plugin_argv=["--kubeconfig", "missing"]),
        _self_case(7, title="plugin: the plain server", plugin_argv=["--kubeconfig", "config", "-s", url("plain")]),
    ]
    results = runner.run_cases(cases, kubectl, plugin, workers=2)
    got = {r["case"]["title"]: r["differences"] for r in results}
    assert got["same flags"] == [], runner.describe(results[0])
    assert "requests differ" in got["plugin: another token"]
    assert "reached differ" in got["plugin: another server"] and "tls differ" in got["plugin: another server"]
    assert "requests differ" in got["plugin: impersonating"]
    assert got["kubectl: a missing kubeconfig"] == ["kubectl refused without sending anything, the plugin sent"]
    assert got["plugin: a missing kubeconfig"] == ["kubectl sent, the plugin refused without sending anything"]
    assert {"reached differ", "tls differ", "requests differ"} <= set(got["plugin: the plain server"])
    assert runner.sent(results[0]["kubectl"]["obs"]) and results[0]["kubectl"]["rc"] == 0


PWD_CRED = """#!/bin/sh
printf '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "%s"}}\\n' \\
  "exec-in-$(basename "$PWD")-$(cat where 2>/dev/null || echo nowhere)"
"""


def test_an_exec_plugin_runs_in_kubectls_directory(parity_tools):
    """client-go's exec.go runs the plugin in the directory kubectl runs in (it sets no cmd.Dir),
    not the kubeconfig's: a plugin that reads a relative path reads it there. The kubeconfig is in
    a folder of its own, holding a `where` file the plugin would read if run there."""
    import random
    kubectl, plugin = parity_tools
    rng = random.Random(31)
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1", "command": "@DIR@/bin/pwd-cred",
             "interactiveMode": "Never"}
    doc = config({"c1": tls_cluster()}, {"u1": {"exec": exec_}})
    case = Case(id=-31, category="self-test", title="exec plugin's directory",
                files={"kc/config": dump(doc, rng), "kc/where": b"kubeconfig-folder\n", "where": b"case-folder\n",
                       "bin/pwd-cred": PWD_CRED.encode()},
                env={}, argv=["--kubeconfig", "kc/config"], executable=["bin/pwd-cred"])
    [result] = runner.run_cases([case], kubectl, plugin, workers=1)
    assert runner.sent(result["kubectl"]["obs"]), runner.describe(result)
    assert "case-folder" in str(result["kubectl"]["obs"]["requests"]), runner.describe(result)
    assert result["differences"] == [], runner.describe(result)


def _run(rc, stderr, obs=None):
    return {"rc": rc, "stderr": stderr, "obs": obs or runner.observe([])}


def test_a_refusal_must_be_one_error_line_with_exit_2():
    k = _run(1, "error: no such file\n")
    assert runner.compare(k, _run(2, "error: cannot read config: no such file\n")) == []
    assert runner.compare(k, _run(1, "error: x\n")) == [
        "both sent nothing, but the plugin's refusal is malformed: exit 1, not 2"]
    assert runner.compare(k, _run(2, "usage: kubectl kvcache verify\nerror: unrecognized arguments\n")) == [
        "both sent nothing, but the plugin's refusal is malformed: stderr has 2 lines, not one `error:` line"]
    assert runner.compare(k, _run(2, "error: unknown flag: --x\nSee 'kubectl kvcache verify --help' for usage.\n")) == []
    assert runner.compare(k, _run(2, "error: unknown flag: --x\nSee the docs.\n")) == [
        "both sent nothing, but the plugin's refusal is malformed: stderr has 2 lines, not one `error:` line"]
    assert "the plugin printed a traceback" in runner.compare(
        k, _run(2, "Traceback (most recent call last):\n  File x\nKeyError: 1\n"))


def test_a_failed_handshake_is_not_sending():
    """kubectl that connects but fails its TLS handshake sent nothing: the plugin may refuse before
    connecting. When both connected, their TLS must still agree."""
    failed = runner.observe([{"kind": "conn", "server": "tls", "family": 4, "tls": True, "sni": None,
                              "handshake": False, "client_cn": None}])
    done = runner.observe([{"kind": "conn", "server": "tls", "family": 4, "tls": True, "sni": None,
                            "handshake": True, "client_cn": None}])
    k = _run(1, "Unable to connect to the server: tls: private key does not match public key\n", failed)
    assert runner.compare(k, _run(2, "error: the key does not match the certificate\n")) == []
    assert runner.compare(k, _run(2, "error: the server closed the connection\n", done)) == ["tls differ"]


def test_cases_are_seeded_and_cover_every_category():
    a, b = generate.cases(SEED, 60), generate.cases(SEED, 60)
    assert a == b
    assert generate.case(SEED, 41) == a[41]
    assert generate.cases(SEED + 1, 60) != a
    cats = {c["category"] for c in generate.cases(SEED, len(generate.CATEGORIES))}
    assert cats == set(generate.CATEGORIES)
    assert COUNT >= 1000 or "KVCACHE_PARITY_COUNT" in os.environ


@pytest.fixture(scope="module")
def recorder(tmp_path_factory):
    rec = Recorder(PKI(str(tmp_path_factory.mktemp("pki"))))
    yield rec
    rec.close()


def test_the_recorder_keeps_header_bytes(recorder):
    """Authorization is recorded as bytes (never decoded), Impersonate-* with their multiplicity."""
    with socket.create_connection(("::1", recorder.ports["plain"])) as s:
        s.sendall(b"GET /prefix/api/v1/pods HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \xff\xc3\xa9\r\n"
                  b"IMPERSONATE-GROUP: a\r\nImpersonate-Group: a\r\nConnection: close\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 200 OK")
    obs = runner.observe(recorder.take())
    assert obs["reached"] == ("plain over IPv6",)
    assert obs["requests"] == ("plain: Host h, path prefix '/prefix', Authorization b'Bearer \\xff\\xc3\\xa9', "
                               "Impersonate [('impersonate-group', 'a'), ('impersonate-group', 'a')]",)


def test_the_socks5_proxy_records_credentials(recorder):
    with socket.create_connection(("127.0.0.1", recorder.ports["socks5"])) as s:
        s.sendall(b"\x05\x02\x00\x02")
        assert s.recv(2) == b"\x05\x02"
        s.sendall(b"\x01\x01u\x02pw")
        assert s.recv(2) == b"\x01\x00"
        s.sendall(b"\x05\x01\x00\x03\x04host" + recorder.ports["plain"].to_bytes(2, "big"))
        assert s.recv(10)[:2] == b"\x05\x00"
        s.sendall(b"GET /api HTTP/1.1\r\nHost: host\r\nConnection: close\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 200")
    obs = runner.observe(recorder.take())
    assert obs["proxy"] == (f"socks5 to host:{recorder.ports['plain']} (address type 3), username u, password pw",)
    assert obs["requests"][0].startswith("plain: Host host, path prefix ''")


def test_plain_http_on_the_tls_port_is_a_request(recorder):
    """A client that speaks plain HTTP to the TLS port has sent its headers: they are recorded
    (and it gets Go's 400, so it does not retry for long)."""
    with socket.create_connection(("127.0.0.1", recorder.ports["tls"])) as s:
        s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.0 400 Bad Request")
    obs = runner.observe(recorder.take())
    assert obs["tls"] == ("tls: SNI -, handshake NOT completed, client certificate -",)
    assert obs["requests"] == ("tls (plain HTTP on its TLS port): Host x, path prefix '', Authorization Bearer t, "
                               "Impersonate -",)
    assert runner.sent(obs)


def test_a_tls_client_hello_on_the_plain_port_is_seen(recorder):
    import ssl
    ctx = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", recorder.ports["plain"])) as s:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(s, server_hostname="localhost")
    obs = runner.observe(recorder.take())
    assert any("not HTTP (first bytes 1603" in r for r in obs["reached"]), obs
    assert not runner.sent(obs)


def test_a_handshake_abandoned_beside_a_finished_one_is_not_a_tls_outcome():
    conn = {"kind": "conn", "server": "tls", "family": 4, "tls": True, "sni": "LOCALHOST", "client_cn": None}
    both = runner.observe([dict(conn, handshake=True), dict(conn, handshake=False)])
    assert both == runner.observe([dict(conn, handshake=True)])
    other = runner.observe([dict(conn, handshake=True), dict(conn, handshake=False, sni="localhost")])
    assert len(other["tls"]) == 2       # another SNI's failure still counts
    # kubectl through an HTTPS proxy, once in CI: the abandoned dial never reached its certificate
    alice = runner.observe([dict(conn, handshake=True, client_cn="alice"), dict(conn, handshake=False)])
    assert alice == runner.observe([dict(conn, handshake=True, client_cn="alice")])
    alone = runner.observe([dict(conn, handshake=False)])
    assert alone["tls"] == ("tls: SNI LOCALHOST, handshake NOT completed, client certificate -",)
    server = runner.observe([dict(conn, handshake=True), dict(conn, handshake=False, server="tls2")])
    assert len(server["tls"]) == 2      # another server's failure still counts
