"""kube/client.py's may_prompt: several contexts are read in worker processes unless an exec
credential plugin could talk to the terminal (stdin is one and its interactiveMode is not Never,
as client-go's exec.go decides), whose prompts must run one at a time in one process."""

import base64
import json

import pytest

from kubectl_kvcache.errors import PluginError, forget_secrets, without_secrets
from kubectl_kvcache.kube import client
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.kube.kubeconfig import resolve


def _kubeconfig(tmp_path, user):
    path = tmp_path / "config"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "c", "user": user if "token" in user else {"exec": user}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}]}))
    return str(path)


EXEC = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "get-token"}   # v1 must name its mode


@pytest.mark.parametrize("user,terminal,prompts", [
    (dict(EXEC), True, True),                                   # IfAvailable (the default) on a terminal
    (dict(EXEC, interactiveMode="Always"), True, True),
    (dict(EXEC, interactiveMode="IfAvailable"), False, False),  # no terminal: nothing to ask on
    (dict(EXEC, interactiveMode="Never"), True, False),
    ({"token": "a-token-0123456789"}, True, False),             # no exec plugin
])
def test_may_prompt(tmp_path, monkeypatch, user, terminal, prompts):
    monkeypatch.setattr(client, "_stdin_is_terminal", lambda: terminal)
    assert client.may_prompt(Connection(kubeconfig=_kubeconfig(tmp_path, user))) is prompts


def test_a_context_that_does_not_resolve_cannot_prompt(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "_stdin_is_terminal", lambda: True)
    assert client.may_prompt(Connection(kubeconfig=_kubeconfig(tmp_path, dict(EXEC)), context="nope")) is False


def _jwt(payload):
    part = lambda doc: base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")  # noqa: E731
    return f"{part({'alg': 'none'})}.{part(payload)}.signature"


def _auth_provider_target(tmp_path, provider):
    """A user with `provider`, of a cluster whose CA is a path relative to the kubeconfig (the
    loader must never look for it: the directory it runs in is another)."""
    (tmp_path / "ca").mkdir(exist_ok=True)
    (tmp_path / "ca" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    path = tmp_path / "config"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                               "certificate-authority": "ca/ca.crt"}}],
        "users": [{"name": "u", "user": {"auth-provider": provider}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return resolve(Connection(kubeconfig=str(path)))


def test_an_auth_providers_token_comes_through_the_public_loader_and_is_a_secret(tmp_path):
    from kubernetes.client import Configuration

    forget_secrets()
    token = _jwt({"sub": "alice", "exp": 4102444800})          # valid until 2100: not refreshed
    target = _auth_provider_target(tmp_path, {"name": "oidc", "config": {"id-token": token}})
    assert client._credentials(target) == {"Authorization": f"Bearer {token}"}
    assert without_secrets(token) != token
    assert Configuration._default is None           # the client's default configuration is left alone


@pytest.mark.parametrize("provider,error", [
    ({"name": "azure", "config": {}}, "the auth-provider 'azure' of user u gave no token"),
    ({"name": "oidc", "config": {"id-token": "not-a-jwt"}}, "the auth-provider 'oidc' of user u gave no token"),
    ({"name": "oidc", "config": {}}, "the auth-provider 'oidc' of user u failed: Invalid kube-config file. Expected "
                                     "key id-token in kube-config/users[name=u]/user/auth-provider/config"),
    ({"name": "gcp", "config": {"access-token": "a-token-0123", "expiry": "soon"}},
     "the auth-provider 'gcp' of user u failed: Invalid RFC3339 datetime: 'soon'"),
])
def test_an_auth_provider_without_a_token_is_one_error_line(tmp_path, provider, error):
    with pytest.raises(PluginError) as caught:
        client._credentials(_auth_provider_target(tmp_path, provider))
    assert str(caught.value).startswith(error) and "\n" not in str(caught.value)
