"""No secret in any line the plugin prints (errors.py's registry, and the paths that echo argv):
a token, password or key typed on the command line, a flag mistyped before its value, a
kubeconfig's token, password or key data, however malformed the rest is. Every path is run as a
user runs it (cli.main) and the whole of stdout and stderr is searched for the secret."""

import io
import json

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.errors import HIDDEN, forget_secrets, secret, without_secrets

S = "S3CRETvalue42"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


COMMANDS = (["verify"], ["check"], ["bindings"], ["roles"], ["setting", "status"], ["setting", "on"],
            ["setting", "off"], ["recover", "b"])
# the command line's every way to type a secret wrong: a mistyped flag (any spelling, with = or
# a space), an unknown shorthand, a value glued to a bool shorthand, a secret flag before the
# command, a secret that is the value of a bad duration, a secret in a server URL
TYPOS = (["--toke=" + S], ["--toke", S], ["--tokenn", S], ["--passwor=" + S], ["--passwd", S], ["-t", S],
         ["-x" + S], ["-A" + S], ["--client-kye", S], ["--password=" + S, "--pasword", S])


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("typo", TYPOS, ids=" ".join)
def test_a_mistyped_flag_never_echoes_what_follows_it(command, typo):
    code, text = run(*command, *typo)
    assert code == 2
    assert S not in text
    assert text.startswith("error: ")


@pytest.mark.parametrize("command", COMMANDS[:2], ids=" ".join)
def test_a_secret_flag_before_the_command_is_an_unknown_flag_and_not_echoed(command):
    code, text = run("--token", S, *command)
    assert code == 2 and S not in text and "unknown flag: --token" in text


BAD_VALUES = (["--token", S, "--request-timeout", S], ["--token", S + "\x01"], ["--token", S, "--username", "u"],
              ["--password", S, "--token", "x" * 8], ["--client-key", S], ["--client-key", "/dev/null", "--token", S],
              ["--server", f"https://u:{S}@127.0.0.1:99999"], ["--server", f"https://u:{S}@[::1"],
              ["--proxy-url", f"http://u:{S}@127.0.0.1:1", "--server", "https://127.0.0.1:1", "--token", S],
              ["--token", S, "--server", "ftp://x"], ["--token", S, "-n", S], ["--token", S, "--chunk-size", S],
              ["--token", S, "-o", S], ["--password", S, "--username", S])


@pytest.mark.parametrize("command", COMMANDS[:1] + COMMANDS[5:6], ids=" ".join)
@pytest.mark.parametrize("values", BAD_VALUES, ids=range(len(BAD_VALUES)))
def test_bad_values_next_to_a_secret_never_echo_it(command, values, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    code, text = run(*command, *values, "--request-timeout", "1s") if "--request-timeout" not in values \
        else run(*command, *values)
    assert code == 2, text
    assert S not in text


def _kubeconfig(tmp_path, user, server="https://127.0.0.1:1"):
    path = tmp_path / "config"
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": {"server": server}}],
           "users": [{"name": "u", "user": user}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path.write_text(json.dumps(doc) if isinstance(user, dict) else user)
    return str(path)


KUBECONFIG_USERS = (
    {"token": [S]}, {"token": {S: 1}}, {"token": S + "\x01"}, {"token": S, "username": "x", "password": S},
    {"client-certificate-data": S, "client-key-data": S}, {"username": "x", "password": 7, "token": S},
    {"token": S, "exec": {"apiVersion": "nope/v1", "command": "x"}},
    {"auth-provider": {"name": "oidc", "config": {"id-token": S, "client-secret": S}}},
    {"tokenFile": "/nonexistent", "token": S, "as-user-extra": {"k": S}},
    # YAML that does not parse, around the secret
    f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {S}: x\n",
    f"apiVersion: v1\nusers:\n- name: u\n  user:\n    token: '{S}\n  \t- x\n",
    f"apiVersion: v1\nkind: Config\nusers: [{{name: u, user: {{password: !!int {S}}}}}]\n",
    f"apiVersion: v1\nkind: Config\nusers: [{{name: u, user: {{token: {S}, token: {S}}}}}]\ncurrent-context: [\n",
    f"apiVersion: v1\nkind: {S}\n",
)


@pytest.mark.parametrize("user", KUBECONFIG_USERS, ids=range(len(KUBECONFIG_USERS)))
def test_kubeconfig_error_lines_never_hold_its_secrets(user, tmp_path):
    code, text = run("verify", "--kubeconfig", _kubeconfig(tmp_path, user), "--request-timeout", "1s")
    assert code == 2, text
    assert S not in text


def test_a_tokenfile_that_holds_a_bad_token_is_not_echoed(tmp_path):
    token = tmp_path / "token"
    token.write_text(S + "\x7f\x01\n")
    code, text = run("verify", "--kubeconfig", _kubeconfig(tmp_path, {"tokenFile": str(token)}),
                     "--request-timeout", "1s")
    assert code == 2 and S not in text


def test_the_registry_hides_every_secret_of_the_run_and_forgets_them_at_the_next():
    forget_secrets()
    secret(S)
    secret(b"  bytes-secret \n")
    secret("ab")                        # too short to tell from a word: not hidden
    assert without_secrets(f"a {S} b bytes-secret ab") == f"a {HIDDEN} b {HIDDEN} ab"
    run("version")
    assert without_secrets(S) == S


@pytest.mark.parametrize("word", [f"--token{S}", f"--password{S}", f"--tokens{S}=x"])
def test_a_value_glued_to_a_secret_flags_name_is_not_echoed(word):
    code, text = run("verify", word)
    assert code == 2 and S not in text and "unknown flag: --" in text
