"""kubeconfig.resolve: client-go's loading rules, merge and flag overrides, on files (no server).
What each resolution does on a real API server is proven in tests/cluster/test_connection_cluster.py."""

import base64
import io
import json
import os

import pytest

from kubectl_kvcache import cli, kubeconfig, setting
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.options import Connection

CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return str(path)


def config(server="https://a:6443", user=None, cluster=None, context=None, current="c", **extra):
    return dict({"apiVersion": "v1", "kind": "Config", "current-context": current,
                 "clusters": [{"name": "c", "cluster": dict({"server": server}, **(cluster or {}))}],
                 "users": [{"name": "u", "user": user or {"token": "t0"}}],
                 "contexts": [{"name": "c", "context": dict({"cluster": "c", "user": "u"}, **(context or {}))}]},
                **extra)


@pytest.fixture(autouse=True)
def no_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def resolve(**flags):
    return kubeconfig.resolve(Connection(**flags))


def test_the_first_file_of_KUBECONFIG_wins_each_name_and_the_current_context(tmp_path, monkeypatch):
    first = write(tmp_path, "first", config(server="https://first:1", current=""))
    second = write(tmp_path, "second", dict(config(server="https://second:2", current="c2"),
                                            contexts=[{"name": "c2", "context": {"cluster": "c", "user": "u"}}]))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), first, second]))
    target = resolve()
    assert target.server == "https://first:1"      # cluster "c" from the first file, context from the second


def test_kubeconfig_flag_is_the_only_file_read_and_must_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", write(tmp_path, "env", config(server="https://env:1")))
    assert resolve(kubeconfig=write(tmp_path, "flag", config(server="https://flag:1"))).server == "https://flag:1"
    with pytest.raises(PluginError, match="does not exist"):
        resolve(kubeconfig=str(tmp_path / "nope"))


def test_relative_paths_are_resolved_against_the_file_that_holds_them(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_bytes(CA_PEM)
    (tmp_path / "sub" / "tok").write_text("from-file\n")
    path = write(tmp_path / "sub", "config", config(cluster={"certificate-authority": "ca.crt"},
                                                     user={"tokenFile": "tok"}))
    target = resolve(kubeconfig=path)
    assert target.ca_file == str(tmp_path / "sub" / "ca.crt")
    assert target.token == "from-file"


def test_overrides_of_server_identity(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(CA_PEM)
    data = base64.b64encode(CA_PEM).decode()
    path = write(tmp_path, "config", config(cluster={"certificate-authority-data": data,
                                                     "tls-server-name": "api.internal"}))
    assert resolve(kubeconfig=path).ca_data == CA_PEM
    assert resolve(kubeconfig=path).tls_server_name == "api.internal"
    moved = resolve(kubeconfig=path, server="https://b:1")
    assert moved.server == "https://b:1" and moved.tls_server_name is None and moved.ca_data == CA_PEM
    insecure = resolve(kubeconfig=path, insecure_skip_tls_verify=True)
    assert insecure.insecure and insecure.ca_data is None and insecure.ca_file is None
    replaced = resolve(kubeconfig=path, certificate_authority=str(ca))
    assert replaced.ca_file == str(ca) and replaced.ca_data is None and not replaced.insecure
    with pytest.raises(PluginError, match="insecure-skip-tls-verify is not allowed"):
        resolve(kubeconfig=path, certificate_authority=str(ca), insecure_skip_tls_verify=True)
    both = write(tmp_path, "both", config(cluster={"certificate-authority-data": data,
                                                   "insecure-skip-tls-verify": True}))
    with pytest.raises(PluginError, match="insecure-skip-tls-verify is not allowed"):
        resolve(kubeconfig=both)
    assert resolve(kubeconfig=both, insecure_skip_tls_verify=True).insecure     # the flag clears the CA


def test_token_flag_replaces_the_users_token_once(tmp_path):
    path = write(tmp_path, "config", config(user={"token": "kubeconfig-token"}))
    assert resolve(kubeconfig=path).token == "kubeconfig-token"
    assert resolve(kubeconfig=path, token="flag-token").token == "flag-token"


def test_token_and_basic_auth_together_are_refused_as_kubectl_does(tmp_path):
    path = write(tmp_path, "config", config(user={"username": "a", "password": "b"}))
    assert resolve(kubeconfig=path).username == "a"
    with pytest.raises(PluginError, match="more than one authentication method"):
        resolve(kubeconfig=path, token="t")


def test_no_credentials_for_a_plain_http_server_but_impersonation_stays(tmp_path):
    path = write(tmp_path, "config", config(server="http://a:8080", user={"token": "t", "as": "dave"}))
    target = resolve(kubeconfig=path)
    assert target.token is None and target.as_user == "dave"


def test_impersonation_from_the_kubeconfig_and_the_flags(tmp_path):
    user = {"client-certificate-data": "eA==", "client-key-data": "eA==", "as": "dave", "as-groups": ["g1"],
            "as-uid": "u1", "as-user-extra": {"scopes": ["a", "b"], "single": "c"}}
    path = write(tmp_path, "config", config(user=user))
    t = resolve(kubeconfig=path)
    assert (t.as_user, t.as_groups, t.as_uid, t.as_extra) == ("dave", ("g1",), "u1",
                                                               {"scopes": ["a", "b"], "single": ["c"]})
    t = resolve(kubeconfig=path, as_user="frank", as_groups=("g2", "g3"), as_uid="u2")
    assert (t.as_user, t.as_groups, t.as_uid) == ("frank", ("g2", "g3"), "u2")
    plain = write(tmp_path, "plain", config())
    with pytest.raises(PluginError, match="needs a user to impersonate"):
        resolve(kubeconfig=plain, as_groups=("g1",))


def test_unknown_names_and_a_missing_server_are_one_line_errors(tmp_path):
    path = write(tmp_path, "config", config())
    for flags, words in (({"context": "x"}, "context 'x' not found"), ({"cluster": "x"}, "cluster 'x' not found"),
                         ({"user": "x"}, "user 'x' not found")):
        with pytest.raises(PluginError, match=words):
            resolve(kubeconfig=path, **flags)
    empty = write(tmp_path, "empty", config(server=""))
    with pytest.raises(PluginError, match="no server found for cluster 'c'"):
        resolve(kubeconfig=empty)
    assert resolve(kubeconfig=empty, server="https://s:1").server == "https://s:1"


def test_a_client_certificate_needs_its_key(tmp_path):
    path = write(tmp_path, "config", config(user={"client-certificate-data": "eA=="}))
    with pytest.raises(PluginError, match="client-key"):
        resolve(kubeconfig=path)


def test_broken_files_name_the_file(tmp_path):
    path = write(tmp_path, "config", "clusters: [\n")
    with pytest.raises(PluginError, match=r"kubeconfig .*config: not valid YAML"):
        resolve(kubeconfig=path)
    path = write(tmp_path, "list", "- a\n- b\n")
    with pytest.raises(PluginError, match="not a kubeconfig"):
        resolve(kubeconfig=path)


def test_yaml_kubeconfig(tmp_path):
    path = write(tmp_path, "config", "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                     "clusters:\n- name: c\n  cluster:\n    server: https://y:1\n"
                                     "users:\n- name: u\n  user:\n    token: yt\n"
                                     "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                                     "    namespace: team\n")
    t = resolve(kubeconfig=path)
    assert (t.server, t.token, t.namespace) == ("https://y:1", "yt", "team")


def test_in_cluster_when_there_is_no_kubeconfig(tmp_path, monkeypatch):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "namespace").write_text("llm-prod")
    (sa / "ca.crt").write_bytes(CA_PEM)
    monkeypatch.setattr(kubeconfig, "SA_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    t = resolve()
    assert (t.server, t.token, t.namespace, t.ca_file) == ("https://10.0.0.1:443", "sa-token", "llm-prod",
                                                           str(sa / "ca.crt"))
    t = resolve(server="https://other:1", token="flag", as_user="dave")
    assert (t.server, t.token, t.as_user) == ("https://other:1", "flag", "dave")


def test_no_kubeconfig_and_no_cluster_is_an_error_unless_a_server_is_given(tmp_path):
    with pytest.raises(PluginError, match="no kubeconfig found"):
        resolve()
    assert resolve(server="https://s:1", token="t").token == "t"


def test_as_uid_flag_reaches_the_connection_and_the_undo_command():
    ns = cli.build_parser().parse_args(["setting", "off", "--as", "dave", "--as-uid", "u-1", "--as-group", "g"])
    conn = cli.connection(ns)
    assert (conn.as_user, conn.as_uid, conn.as_groups) == ("dave", "u-1", ("g",))
    assert "--as dave --as-uid u-1 --as-group g" in setting.reverse_command(True, conn)


def test_bad_connection_flags_are_one_error_line(tmp_path):
    err = io.StringIO()
    code = cli.main(["verify", "--kubeconfig", str(tmp_path / "nope")], stdin=io.StringIO(""),
                    stdout=io.StringIO(), stderr=err)
    assert code == 2 and err.getvalue().count("\n") == 1 and err.getvalue().startswith("error: kubeconfig")


@pytest.mark.parametrize("memfd", [True, False])
def test_client_certificate_data_is_loaded_and_nothing_is_left_behind(tmp_path, monkeypatch, memfd):
    import ssl
    import subprocess

    from kubectl_kvcache import kube

    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem"), "-days", "1",
                    "-subj", "/CN=someone"], check=True, capture_output=True)
    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    if not memfd:
        monkeypatch.delattr(kube.os, "memfd_create", raising=False)
    target = kubeconfig.Target(server="https://x:1", cert_data=(tmp_path / "c.pem").read_bytes(),
                               key_data=(tmp_path / "k.pem").read_bytes(), user_name="someone")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    kube._load_client_cert(ctx, target)
    assert list(spill.iterdir()) == []
    target.key_data = b"not a key"
    with pytest.raises(PluginError, match="client certificate of user someone cannot be used"):
        kube._load_client_cert(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), target)
    assert list(spill.iterdir()) == []


def test_a_server_without_scheme_is_https_only_with_tls_configured(tmp_path):
    path = write(tmp_path, "config", config(server="a:6443", user={"token": "t"}))
    assert resolve(kubeconfig=path).server == "http://a:6443"
    assert resolve(kubeconfig=path).token is None        # no credentials over plain http
    assert resolve(kubeconfig=path, insecure_skip_tls_verify=True).server == "https://a:6443"
    tls = write(tmp_path, "tls", config(server="a:6443", cluster={"certificate-authority-data": "eA=="}))
    assert resolve(kubeconfig=tls).server == "https://a:6443"
