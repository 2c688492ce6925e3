"""kubeconfig: the YAML typing, decoding, merge, flag overrides and rest/transport rules of kubectl
v1.37.2, on files (no server). The tables' expected values were each CONFIRMED with the real kubectl
v1.37.2 (`kubectl config view --raw -o json` for typing and merge; `kubectl get pods -A -v=9` against
a loopback recording server for what is sent); test_decoding_matches_the_real_kubectl holds the
decoder to that binary on a few hundred generated documents."""

import base64
import io
import json
import os
import subprocess
import sys

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.kube import kubeconfig
from kubectl_kvcache.cli.flows import setting
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.kube import kubeconfig_v1


def load_merged(paths) -> dict:
    """The merged config of `paths` as plain data, shaped as `kubectl config view --raw -o json`
    prints it (which resolves no relative paths); only these tests compare it with kubectl's."""
    m = kubeconfig.load(paths)
    return kubeconfig_v1.v1_json(m.clusters, m.users, m.contexts, m.current_context, m.colors,
                                 m.preference_extensions, m.extensions)


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



# -- typing and decoding: (document, expected current-context / cluster / user, or a refusal) ----------
# Each row CONFIRMED with kubectl v1.37.2 `config view --raw -o json`.
REFUSED = "refused"
TYPING = [
    ("current-context: 1:20\n", {"current-context": "1:20"}),                  # no YAML 1.1 base 60
    ("current-context: 2001-01-01\n", {"current-context": "2001-01-01"}),      # timestamps keep their text
    ("current-context: 2001-1-2 3:04:05\n", {"current-context": "2001-1-2 3:04:05"}),
    ("current-context: !!binary dG9rZW4=\n", {"current-context": "token"}),
    ("current-context: ! 12\n", {"current-context": "12"}),
    ("current-context: \"a\\'b\"\n", {"current-context": "a'b"}),
    ("current-context: \"a\\/b\"\n", REFUSED),                              # go-yaml has no \/ escape
    ("current-context: 1e400\n", {"current-context": "1e400"}),                # out of range: a string
    ("current-context: \"0x1F\"\n", {"current-context": "0x1F"}),
    ("current-context: 0x1F\n", REFUSED),                                      # a number where a string belongs
    ("current-context: n\n", REFUSED),                                         # a boolean
    ("current-context: [a, b]\n", REFUSED),
    ("current-context: ~\n", {"current-context": ""}),
    ("current-context: .inf\n", REFUSED),                                      # JSON has no Inf
    ("x: .nan\ncurrent-context: a\n", REFUSED),                              # ... even in an unknown field
    ("Current-Context: a\n", {"current-context": ""}),                        # keys are case-sensitive
    ("current-context: a\ncurrent-context: b\n", {"current-context": "b"}),   # the last duplicate wins
    ('{"current-context": "a", "current-context": "b"}\n', {"current-context": "b"}),
    ("current-context: a\n---\ncurrent-context: b\n", {"current-context": "a"}),   # the first document only
    ("current-context: a\n---\n\t: [\n", {"current-context": "a"}),
    ("a: &x {current-context: m}\ncurrent-context: z\n<<: *x\n", {"current-context": "m"}),  # merged where it stands
    ("a: &x {current-context: m}\n<<: *x\ncurrent-context: z\n", {"current-context": "z"}),
    ("a: &x {current-context: m}\nb: &y {current-context: n}\n<<: [*x, *y]\n", {"current-context": "m"}),
    ("kind: Foo\n", REFUSED),
    ("apiVersion: v2\n", REFUSED),
    ("clusters:\n- {name: c, cluster: {server: s, insecure-skip-tls-verify: n}}\n", {"cluster": {"server": "s"}}),
    ("clusters:\n- {name: c, cluster: {server: s, insecure-skip-tls-verify: !!bool n}}\n",
     {"cluster": {"server": "s"}}),
    ("clusters:\n- {name: c, cluster: {server: s, insecure-skip-tls-verify: on}}\n",
     {"cluster": {"server": "s", "insecure-skip-tls-verify": True}}),
    ("clusters:\n- {name: c, cluster: {server: s, insecure-skip-tls-verify: \"false\"}}\n", REFUSED),
    ("users:\n- {name: u, user: {as-groups: admins}}\n", REFUSED),
    ("users:\n- {name: u, user: {token: [a, b]}}\n", REFUSED),
    ("users:\n- {name: u, user: {token: 12}}\n", REFUSED),
    ("users:\n- {name: u}\n- {name: u}\n", REFUSED),                         # a duplicate name in one file
    ("users:\n- {name: u, user: {exec: {command: c, apiVersion: client.authentication.k8s.io/v1beta1}}}\n",
     {"user": {"exec": {"command": "c", "args": None, "env": None, "provideClusterInfo": False,
                        "apiVersion": "client.authentication.k8s.io/v1beta1", "interactiveMode": "IfAvailable"}}}),
    ("users:\n- {name: u, user: {exec: {command: c, apiVersion: client.authentication.k8s.io/v1}}}\n",
     {"user": {"exec": {"command": "c", "args": None, "env": None, "provideClusterInfo": False,
                        "apiVersion": "client.authentication.k8s.io/v1"}}}),
]


def _view(merged):
    """The parts of a `config view` the TYPING rows name."""
    out = {"current-context": merged["current-context"]}
    if merged["clusters"]:
        out["cluster"] = merged["clusters"][0]["cluster"]
    if merged["users"]:
        out["user"] = merged["users"][0]["user"]
    return out


@pytest.mark.parametrize("text,expected", TYPING, ids=[t for t, _ in TYPING])
def test_typing_is_kubectls(tmp_path, text, expected):
    path = write(tmp_path, "config", text)
    if expected == REFUSED:
        with pytest.raises(PluginError, match=r"^kubeconfig .*config: "):
            load_merged([path])
        return
    got = _view(load_merged([path]))
    assert {k: got.get(k, "") for k in expected} == expected


def test_a_refusal_names_the_file_the_object_and_the_field_but_no_secret(tmp_path):
    path = write(tmp_path, "config", "users:\n- name: admin\n  user:\n    token: [s3cret]\n")
    with pytest.raises(PluginError) as info:
        load_merged([path])
    message = str(info.value)
    assert path in message and "'admin'" in message and "user.token" in message and "s3cret" not in message
    assert "\n" not in message


# -- loading and merging -----------------------------------------------------------------------

def test_the_first_file_wins_each_name_and_a_broken_file_fails_the_whole_load(tmp_path, monkeypatch):
    first = write(tmp_path, "first", config(server="https://first:1", current=""))
    second = write(tmp_path, "second", dict(config(server="https://second:2", current="c2"),
                                            contexts=[{"name": "c2", "context": {"cluster": "c", "user": "u"}}]))
    merged = load_merged([first, str(tmp_path / "missing"), second])
    assert merged["current-context"] == "c2"
    assert [c["cluster"]["server"] for c in merged["clusters"]] == ["https://first:1"]
    broken = write(tmp_path, "broken", "clusters: 5\n")
    with pytest.raises(PluginError, match="broken"):
        load_merged([first, broken])


def test_relative_paths_are_resolved_against_the_file_that_holds_them(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_bytes(CA_PEM)
    (tmp_path / "sub" / "tok").write_text("from-file\n")
    path = write(tmp_path / "sub", "config", config(cluster={"certificate-authority": "ca.crt"},
                                                     user={"tokenFile": "tok"}))
    target = resolve(kubeconfig=path)
    assert target.ca_file == str(tmp_path / "sub" / "ca.crt")
    assert target.authorization == "Bearer from-file"
    assert load_merged([path])["clusters"][0]["cluster"]["certificate-authority"] == "ca.crt"


# -- what is sent: each row CONFIRMED with kubectl v1.37.2 `get pods -A -v=9` on a loopback server ----

def test_a_readable_token_file_wins_over_the_token_and_over_the_token_flag(tmp_path):
    (tmp_path / "tok").write_text("filetok\n")
    path = write(tmp_path, "config", config(server="https://127.0.0.1:1", cluster={"insecure-skip-tls-verify": True},
                                            user={"token": "tok", "tokenFile": str(tmp_path / "tok")}))
    assert resolve(kubeconfig=path).authorization == "Bearer filetok"
    assert resolve(kubeconfig=path, token="flagtok").authorization == "Bearer filetok"
    (tmp_path / "tok").unlink()
    assert resolve(kubeconfig=path).authorization == "Bearer tok"


def test_userinfo_in_the_server_url_is_sent_as_basic_auth_first(tmp_path):
    user = {"token": "tok", "as": "me", "as-groups": ["g1", "g2"], "as-user-extra": {"b k": ["v1"], "a": ["v2", "v3"]}}
    path = write(tmp_path, "config", config(server="https://admin:p%40w@127.0.0.1:1",
                                            cluster={"insecure-skip-tls-verify": True}, user=user))
    t = resolve(kubeconfig=path)
    assert t.server == "https://127.0.0.1:1"
    assert t.authorization == "Basic " + base64.b64encode(b"admin:p@w").decode()
    assert t.impersonation == [("Impersonate-User", "me"), ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2"),
                               ("Impersonate-Extra-A", "v2"), ("Impersonate-Extra-A", "v3"),
                               ("Impersonate-Extra-B%20k", "v1")]


def test_a_server_without_scheme_is_plain_http_without_credentials(tmp_path):
    path = write(tmp_path, "config", config(server="127.0.0.1:6443", cluster={"insecure-skip-tls-verify": True},
                                            user={"token": "t", "as": "dave"}))
    t = resolve(kubeconfig=path)
    assert (t.server, t.authorization, t.insecure) == ("http://127.0.0.1:6443", None, False)
    assert t.impersonation == [("Impersonate-User", "dave")]      # impersonation does not need TLS
    assert resolve(kubeconfig=path, server="127.0.0.1:7443").server == "http://127.0.0.1:7443"


def test_a_cluster_without_server_and_no_kubeconfig_at_all_mean_localhost_8080(tmp_path, monkeypatch):
    path = write(tmp_path, "config", config(server=""))
    assert resolve(kubeconfig=path).server == "http://localhost:8080"
    assert resolve().server == "http://localhost:8080"
    monkeypatch.setenv("KUBERNETES_MASTER", "http://m:1")
    assert resolve().server == "http://m:1"
    assert resolve(server="https://s:1", token="t").authorization == "Bearer t"


def test_https_without_credentials_is_refused_where_kubectl_would_prompt(tmp_path):
    path = write(tmp_path, "config", config(server="https://127.0.0.1:1", cluster={"insecure-skip-tls-verify": True},
                                            user={"as": "x"}))
    with pytest.raises(PluginError, match="would ask for a username and password"):
        resolve(kubeconfig=path)


def test_the_clusters_proxy_url_is_used_for_http_servers_too(tmp_path, monkeypatch):
    path = write(tmp_path, "config", config(server="http://10.255.255.1:1",
                                            cluster={"proxy-url": "http://u:p@127.0.0.1:3128"}))
    monkeypatch.setenv("HTTP_PROXY", "http://env:1")
    assert resolve(kubeconfig=path).proxy == "http://u:p@127.0.0.1:3128"


# CONFIRMED with kubectl v1.37.2 (get pods -A through a recording proxy, with insecure-skip-tls-verify)
@pytest.mark.parametrize("env,server,expected", [
    ({"HTTPS_PROXY": "http://127.0.0.1:3128"}, "https://127.0.0.1:1", None),     # loopback goes direct
    ({"HTTPS_PROXY": "http://127.0.0.1:3128"}, "https://localhost:1", None),
    ({"HTTPS_PROXY": "http://up:1", "https_proxy": "http://low:1"}, "https://a.example:1", "http://up:1"),
    ({"https_proxy": "proxy:3128"}, "https://a.example:1", "http://proxy:3128"),
    ({"HTTPS_PROXY": "http://p:1"}, "https://LOCALHOST:1", "http://p:1"),          # compared as written
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example"}, "https://a.example:1", None),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "xexample"}, "https://a.example:1", "http://p:1"),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "010.0.0.0/8"}, "https://10.1.2.3:1", None),   # client-go's CIDRs
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example"}, "https://a.example:1", None),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "a.example:2"}, "https://a.example:1", "http://p:1"),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "https://10.1.2.3:1", None),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://a.example:1", None),
    ({"HTTP_PROXY": "http://p:1"}, "https://a.example:1", None),                 # https asks HTTPS_PROXY only
])
def test_proxies_from_the_environment_as_go_reads_them(tmp_path, monkeypatch, env, server, expected):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                 "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = write(tmp_path, "config", config(server=server, cluster={"insecure-skip-tls-verify": True}))
    assert resolve(kubeconfig=path).proxy == expected


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
    named = resolve(kubeconfig=path, server="https://b:1", tls_server_name="other")
    assert named.tls_server_name == "other"
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


def test_credential_flags(tmp_path):
    path = write(tmp_path, "config", config(user={"token": "kubeconfig-token"}))
    assert resolve(kubeconfig=path).authorization == "Bearer kubeconfig-token"
    assert resolve(kubeconfig=path, token="flag-token").authorization == "Bearer flag-token"
    with pytest.raises(PluginError, match="more than one authentication method"):
        resolve(kubeconfig=path, username="a", password="b")
    basic = write(tmp_path, "basic", config(user={"username": "a", "password": "b"}))
    assert resolve(kubeconfig=basic).authorization == "Basic " + base64.b64encode(b"a:b").decode()
    assert resolve(kubeconfig=basic, username="c").authorization == "Basic " + base64.b64encode(b"c:b").decode()


def test_impersonation_from_the_kubeconfig_and_the_flags(tmp_path):
    user = {"client-certificate-data": "eA==", "client-key-data": "eA==", "as": "dave", "as-groups": ["g1"],
            "as-uid": "u1", "as-user-extra": {"scopes": ["a", "b"]}}
    path = write(tmp_path, "config", config(user=user))
    assert resolve(kubeconfig=path).impersonation == [
        ("Impersonate-User", "dave"), ("Impersonate-Uid", "u1"), ("Impersonate-Group", "g1"),
        ("Impersonate-Extra-Scopes", "a"), ("Impersonate-Extra-Scopes", "b")]
    t = resolve(kubeconfig=path, as_user="frank", as_groups=("g2", "g3"), as_uid="u2", as_user_extra=("k=v", "bad"))
    assert t.impersonation == [("Impersonate-User", "frank"), ("Impersonate-Uid", "u2"), ("Impersonate-Group", "g2"),
                               ("Impersonate-Group", "g3"), ("Impersonate-Extra-K", "v"),
                               ("Impersonate-Extra-Scopes", "a"), ("Impersonate-Extra-Scopes", "b")]
    plain = write(tmp_path, "plain", config())
    with pytest.raises(PluginError, match="needs a user to impersonate"):
        resolve(kubeconfig=plain, as_groups=("g1",))


def test_unknown_names_are_one_line_errors(tmp_path):
    path = write(tmp_path, "config", config())
    for flags, words in (({"context": "x"}, "context 'x' does not exist"),
                         ({"cluster": "x"}, "cluster 'x' does not exist"),
                         ({"user": "x"}, "user 'x' does not exist")):
        with pytest.raises(PluginError, match=words):
            resolve(kubeconfig=path, **flags)


def test_a_client_certificate_needs_its_key_and_exec_needs_an_interactive_mode(tmp_path):
    path = write(tmp_path, "config", config(user={"client-certificate-data": "eA=="}))
    with pytest.raises(PluginError, match="client-key"):
        resolve(kubeconfig=path)
    path = write(tmp_path, "exec", config(user={"exec": {"command": "x", "apiVersion":
                                                         "client.authentication.k8s.io/v1"}}))
    with pytest.raises(PluginError, match="interactiveMode must be given"):
        resolve(kubeconfig=path)


def test_exec_runs_only_without_a_token_basic_auth_or_client_certificate(tmp_path):
    ex = {"command": "x", "apiVersion": "client.authentication.k8s.io/v1beta1"}
    path = write(tmp_path, "config", config(user={"exec": ex}))
    assert resolve(kubeconfig=path).exec["interactiveMode"] == "IfAvailable"
    assert resolve(kubeconfig=path, token="t").exec is None


def test_broken_files_name_the_file(tmp_path):
    path = write(tmp_path, "config", "clusters: [\n")
    with pytest.raises(PluginError, match=r"kubeconfig .*config: not valid YAML"):
        resolve(kubeconfig=path)
    path = write(tmp_path, "list", "- a\n- b\n")
    with pytest.raises(PluginError, match="not a mapping"):
        resolve(kubeconfig=path)


def test_in_cluster_when_there_is_no_kubeconfig(tmp_path, monkeypatch):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token\n")
    (sa / "namespace").write_text("llm-prod")
    (sa / "ca.crt").write_bytes(CA_PEM)
    monkeypatch.setattr(kubeconfig, "SA_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    t = resolve()
    assert (t.server, t.authorization, t.namespace, t.ca_file) == ("https://10.0.0.1:443", "Bearer sa-token",
                                                                   "llm-prod", str(sa / "ca.crt"))
    t = resolve(token="flag")
    assert (t.server, t.authorization) == ("https://10.0.0.1:443", "Bearer flag")
    t = resolve(server="https://other:1", token="flag", as_user="dave")      # not the default config: direct
    assert (t.server, t.authorization, t.impersonation) == ("https://other:1", "Bearer flag",
                                                            [("Impersonate-User", "dave")])


# -- held to the real kubectl --------------------------------------------------------------------

def _config_view(kubectl, paths, home):
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "KUBECONFIG": os.pathsep.join(paths)}
    p = subprocess.run([kubectl, "config", "view", "--raw", "-o", "json"], capture_output=True, text=True, env=env)
    return json.loads(p.stdout) if p.returncode == 0 else None


def _mine(paths):
    try:
        return load_merged(paths)
    except PluginError:
        return None


def test_decoding_matches_the_real_kubectl(tmp_path, pinned_kubectl):
    """A few hundred generated documents (tests/kubeconfig_gen.py), alone and merged in pairs: what
    kubectl prints for each, or that it refuses it, is what load_merged gives."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import kubeconfig_gen

    kubectl = pinned_kubectl
    samples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kubeconfig_samples")
    files = [os.path.join(samples, f) for f in sorted(os.listdir(samples))]
    for i, data in enumerate(kubeconfig_gen.documents(seed=16, count=300)):
        path = tmp_path / f"k{i:03d}.yaml"
        path.write_bytes(data)
        files.append(str(path))
    cases = [[f] for f in files] + [[files[i], files[i + 1]] for i in range(0, 60, 2)]
    accepted, mismatches = 0, []
    for paths in cases:
        expected = _config_view(kubectl, paths, tmp_path)
        accepted += expected is not None
        if _mine(paths) != expected:
            mismatches.append(paths)
    assert mismatches == []
    assert accepted > len(cases) // 5          # the documents are not all refusals


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

    from kubectl_kvcache.kube import client as kube

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




def test_kubectls_connection_flags_parse_complete_and_are_never_abbreviated(tmp_path):
    from kubectl_kvcache.cli import completion, connection_flags

    ns = cli.build_parser().parse_args(["verify", "--tls-server-name", "n", "--client-certificate", "c.pem",
                                        "--client-key", "k.pem", "--username", "a", "--password", "b",
                                        "--proxy-url", "http://p:1", "--disable-compression",
                                        "--as", "me", "--as-user-extra", "k=v", "--as-user-extra", "k=w"])
    conn = cli.connection(ns)
    assert (conn.tls_server_name, conn.client_certificate, conn.client_key, conn.username, conn.password,
            conn.proxy_url, conn.disable_compression, conn.as_user_extra) == (
        "n", "c.pem", "k.pem", "a", "b", "http://p:1", True, ("k=v", "k=w"))
    spec = cli.completion_spec()
    assert completion.complete(spec, ["verify", "--client-certificate", "/tm"], lambda k, g: [])[1] == \
        completion.DIRECTIVE_DEFAULT                        # file names
    assert connection_flags.from_completion({"client_key": "k.pem", "username": "a"}, "2s").client_key == "k.pem"
    err = io.StringIO()
    code = cli.main(["verify", "--client-cert", "c.pem"], stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err)
    assert code == 2 and "unknown flag: --client-cert" in err.getvalue()


def test_the_undo_command_keeps_the_new_connection_flags_but_no_secret():
    ns = cli.build_parser().parse_args(["setting", "off", "--tls-server-name", "api", "--client-certificate", "c.pem",
                                        "--client-key", "k.pem", "--username", "a", "--password", "s3cret",
                                        "--proxy-url", "http://p:1", "--as", "me", "--as-user-extra", "k=v",
                                        "--disable-compression"])
    command = setting.reverse_command(True, cli.connection(ns))
    assert ("--tls-server-name api --client-certificate c.pem --client-key k.pem --username a --proxy-url "
            "http://p:1 --as me --as-user-extra k=v --password \"$KVCACHE_PASSWORD\" --disable-compression") in command
    assert "s3cret" not in command


def test_a_token_file_and_a_username_are_refused_and_an_empty_token_file_too(tmp_path):
    # CONFIRMED with kubectl v1.37.2: "username/password or bearer token may be set, but not both",
    # and "read empty token from file" (also when the server URL carries userinfo)
    (tmp_path / "empty").write_text("")
    https = {"insecure-skip-tls-verify": True}
    both = write(tmp_path, "both", config(cluster=https, user={"tokenFile": str(tmp_path / "empty"), "username": "u"}))
    with pytest.raises(PluginError, match="both set"):
        resolve(kubeconfig=both)
    empty = write(tmp_path, "empty.yaml", config(server="https://a:b@127.0.0.1:1", cluster=https,
                                                 user={"tokenFile": str(tmp_path / "empty")}))
    with pytest.raises(PluginError, match="holds no token"):
        resolve(kubeconfig=empty)


# -- refusals held to the real kubectl (nothing listens on 127.0.0.1:1: a kubectl that tried to
# connect would say "connection refused", not the refusal expected) --------------------------------

V1 = "client.authentication.k8s.io/v1"
REFUSALS = [
    # client-go@v0.37.2/plugin/pkg/client/auth/exec/exec.go newAuthenticator: v1beta1 and v1 only,
    # asked for any exec config (rest/transport.go TransportConfig), a token set too
    ("https://127.0.0.1:1", {"token": "t", "exec": {"command": "true", "apiVersion": V1 + "alpha1"}},
     'exec plugin: invalid apiVersion "client.authentication.k8s.io/v1alpha1"', "not supported"),
    # exec.go isInteractive: Always with stdin not a terminal, before the plugin runs
    ("https://127.0.0.1:1", {"exec": {"command": "true", "apiVersion": V1, "interactiveMode": "Always"}},
     "standard input is not a terminal", "standard input is not a terminal"),
    # net/url url.go parseAuthority: userinfo is unescaped (and DefaultServerURL's second try fails too)
    ("http://%zz:p@127.0.0.1:1", {"token": "t"}, 'invalid URL escape "%zz"', "invalid URL escape"),
    # validUserinfo refuses the space; "http://" + it has a path: rest/url_utils.go DefaultServerURL
    ("http://u:p w@127.0.0.1:1", {"token": "t"}, "host must be a URL or a host:port pair",
     "must be a URL or a host:port pair"),
    # Go's ParseIP takes no leading zeros: the host is a name, and no resolver knows it
    ("http://127.000.000.001:1", {"token": "t"}, "lookup 127.000.000.001", "no such host"),
]


@pytest.mark.parametrize("server,user,kubectl_says,plugin_says", REFUSALS, ids=[r[2][:30] for r in REFUSALS])
def test_what_kubectl_refuses_before_sending_the_plugin_refuses(tmp_path, server, user, kubectl_says, plugin_says,
                                                                pinned_kubectl):
    from kubectl_kvcache.kube import client as kube

    path = write(tmp_path, "config", config(server=server, user=user))
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([pinned_kubectl, "get", "pods", "--kubeconfig", path, "--request-timeout", "5s"],
                       capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and kubectl_says in p.stderr, p.stderr
    with open(os.devnull) as devnull:
        saved = os.dup(0)
        os.dup2(devnull.fileno(), 0)        # stdin is not a terminal, as for kubectl above
        try:
            with pytest.raises(PluginError, match=plugin_says) as caught:
                kube.Client(Connection(kubeconfig=path, request_timeout="5s")).request("GET", "/api")
        finally:
            os.dup2(saved, 0)
            os.close(saved)
    assert "connection refused" not in str(caught.value).lower()
    assert "\n" not in str(caught.value) and "p w" not in str(caught.value) and "%zz:p" not in str(caught.value)


@pytest.mark.parametrize("server", ["https://127.0.0.1:1\t", "\x01https://127.0.0.1:1", "https://127.0.0.1:1/a\nb",
                                    "https://127.0.0.1:1/\x7f", "https://user:pa\x02ss@127.0.0.1:1"])
def test_a_control_character_in_the_server_is_refused_as_go_url_parse_refuses_it(tmp_path, server):
    """net/url Parse refuses any byte < 0x20 or 0x7f (stringContainsCTLByte); urlsplit would drop tabs and
    newlines and strip leading C0 bytes, and connect. The error shows the byte escaped, never a password."""
    path = write(tmp_path, "config", config(server=server, cluster={"insecure-skip-tls-verify": True},
                                            user={"token": "t"}))
    with pytest.raises(Exception) as err:
        resolve(kubeconfig=path)
    message = str(err.value)
    assert "invalid control character in URL" in message
    assert "pa\x02ss" not in message and "pa\\x02ss" not in message
    assert not any(ord(c) < 0x20 for c in message)


_TABS_BASE = """apiVersion: v1
kind: Config
current-context: ctx  # the one
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
contexts:
- context:
    cluster: c1
    user: u1
    namespace: ns1
  name: ctx
users:
- name: u1
  user: {token: TOKEN, username: x}
preferences: {}
"""


def _tab_documents(token, rng, count):
    """The base kubeconfig with tabs put at random blanks (before, after or instead of a space, at a
    line's end) and lines of blanks, tabs and comments put between its lines."""
    base = _TABS_BASE.replace("TOKEN", token)
    blanks = [i for i, c in enumerate(base) if c in " \n"]
    lines = base.splitlines(True)
    docs = []
    for _ in range(count):
        if rng.random() < 0.8:
            pos = rng.choice(blanks)
            tab = rng.choice(["\t", " \t", "\t ", "\t\t"])
            docs.append(base[:pos] + tab + base[pos + (base[pos] == " " and rng.random() < 0.5):])
        else:
            i = rng.randrange(len(lines) + 1)
            docs.append("".join(lines[:i]) + rng.choice(["\t\n", "\t# c\n", "  \t\n", "\t  # c\n"]) + "".join(lines[i:]))
    return docs


@pytest.mark.parametrize("token", ["abc", '"a&b"', "&t abc"], ids=["libyaml", "pure-python-loader", "anchor"])
def test_tabs_are_read_as_the_real_kubectl_reads_them(tmp_path, token, pinned_kubectl):
    """Tabs where kubectl (go-yaml v2's scanner, libyaml's) takes them: after `key:`, after a value, in
    blank lines, and where it refuses them. An `&` (a token, an anchor) sends the document through
    PyYAML's pure-Python scanner, which took only spaces there: 178 of 544 such documents were refused
    where kubectl connects."""
    import random

    kubectl = pinned_kubectl
    rng = random.Random(f"tabs-{token}")
    mismatches, accepted = [], 0
    for i, text in enumerate(_tab_documents(token, rng, 120)):
        path = tmp_path / f"t{i:03d}.yaml"
        path.write_text(text)
        expected = _config_view(kubectl, [str(path)], tmp_path)
        accepted += expected is not None
        if _mine([str(path)]) != expected:
            mismatches.append(text)
    assert mismatches == []
    assert 0 < accepted < 120       # both kinds: read and refused
