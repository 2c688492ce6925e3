"""Shell completion without a cluster: the rules (completion.py) on the real command tree, the
hidden `__complete` through cli.main and the kubectl_complete-kvcache launcher, the scripts of
`completion SHELL` (bash run for real), and the bound on names from a slow cluster. Through the
built kubectl on a real API server: tests/cluster/test_completion_cluster.py."""

import configparser
import io
import os
import shutil
import subprocess
import sys
import time

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.cli import completion
from kubectl_kvcache.render import formats
from kubectl_kvcache.cli.flows import completion as completion_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = cli.completion_spec()


class Lister:
    """Stands in for the cluster: records what it was asked, with which typed flags."""

    def __init__(self, names=None):
        self.names = names or {"namespaces": ["default", "llm-prod", "llm-research"],
                               "pods": ["llama-0", "llama-1", "qwen-0"], "contexts": ["kind-a", "prod"],
                               "bindings": ["chat-fp8", "sgl-fp8"]}
        self.asked = []

    def __call__(self, kind, given):
        self.asked.append((kind, dict(given)))
        return self.names.get(kind, [])


def names(words, lister=None):
    found, directive = completion.complete(SPEC, words, lister or Lister())
    return [c.split("\t")[0] for c in found], directive


def test_subcommands_with_their_help_and_no_file_fallback():
    found, directive = completion.complete(SPEC, [""], Lister())
    assert [c.split("\t")[0] for c in found] == ["verify", "check", "bindings", "roles", "setting", "recover",
                                                 "engines", "admission", "completion", "version"]
    assert all("\t" in c for c in found) and directive == completion.DIRECTIVE_NO_FILE
    assert names(["ve"]) == (["verify", "version"], 4)
    assert names(["setting", "o"]) == (["on", "off"], 4)
    assert names(["completion", ""]) == (["bash", "zsh", "fish", "powershell"], 4)
    assert "__complete" not in cli.build_parser().format_help()


def test_flags_of_the_command_being_typed():
    assert names(["check", "--st"]) == (["--strict"], 4)
    assert names(["verify", "--st"]) == ([], 4)
    assert "--selector" in names(["bindings", "--"])[0] and "--yes" in names(["setting", "off", "--"])[0]
    assert names(["verify", "-o", ""]) == (list(formats.offered("verify")), 4) and "describe" in formats.offered("verify")
    assert names(["verify", "--output=j"]) == ([f"--output={n}" for n in formats.offered("verify") if n[0] == "j"], 4)
    assert "--output=jsonpath" in names(["verify", "--output=j"])[0]     # kubectl's own formats offered too
    assert names(["setting", "off", "--dry-run="]) == (["--dry-run=none", "--dry-run=client", "--dry-run=server"], 4)
    assert names(["setting", "status", "-o", ""])[0] == ["table", "json", "yaml"]


def test_files_fall_back_to_the_shell():
    assert names(["verify", "-f", ""]) == ([], completion.DIRECTIVE_DEFAULT)
    assert names(["check", "--kubeconfig", "/tm"]) == ([], completion.DIRECTIVE_DEFAULT)


def test_cluster_names_are_asked_with_the_flags_typed_so_far():
    lister = Lister()
    assert names(["verify", "--kubeconfig", "/k", "--context=prod", "-n", "llm"], lister) == (
        ["llm-prod", "llm-research"], 4)
    assert lister.asked == [("namespaces", {"kubeconfig": "/k", "context": "prod"})]
    lister = Lister()
    assert names(["verify", "-n", "llm-prod", "llama-0", "l"], lister) == (["llama-1"], 4)
    assert lister.asked == [("pods", {"namespace": "llm-prod"})]
    assert names(["roles", "--context", ""])[0] == ["kind-a", "prod"]
    assert names(["check", "-nllm-prod", "--as", "me", "-A", "--x"], lister)[0] == []


def test_a_positional_named_binding_completes_bindings():
    spec = {(): completion.Node({"recover": ""}),
            ("recover",): completion.Node(flags=(completion.Flag(("-n", "--namespace"), "namespace", "required"),),
                                          positionals=(("BINDING", ()),))}
    lister = Lister()
    assert completion.complete(spec, ["recover", "-n", "prod", "s"], lister) == (["sgl-fp8"], 4)
    assert lister.asked == [("bindings", {"namespace": "prod"})]
    assert completion.complete(spec, ["recover", "sgl-fp8", ""], lister) == ([], 4)   # one Binding only


def test_hidden_complete_through_main_and_both_calling_conventions():
    for argv in (["__complete", "setting", ""], ["__complete", "__complete", "setting", ""]):
        out = io.StringIO()
        assert cli.main(argv, io.StringIO(""), out, io.StringIO()) == 0
        assert [line.split("\t")[0] for line in out.getvalue().splitlines()] == ["status", "on", "off", ":4"]


def _launcher_env(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in ("kubectl-kvcache", "kubectl_complete-kvcache"):
        (folder / name).write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT}/bin/{name} \"$@\"\n")
        (folder / name).chmod(0o755)
    return dict(os.environ, PATH=f"{folder}{os.pathsep}/usr/bin:/bin", KUBECONFIG=str(tmp_path / "none"))


def test_the_kubectl_complete_launcher_answers_as_kubectl_calls_it(tmp_path):
    env = _launcher_env(tmp_path)
    p = subprocess.run(["kubectl_complete-kvcache", "check", "--no-h"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.splitlines() == ["--no-headers\ttables without the header row", ":4"]
    assert p.stderr == ""
    # no kubeconfig: namespaces cannot be listed, nothing is offered and nothing is printed on stderr
    p = subprocess.run(["kubectl_complete-kvcache", "verify", "-n", ""], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout == ":4\n" and p.stderr == ""


def test_the_console_script_and_the_shipped_helper_are_declared():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    scripts = cfg.get("options.entry_points", "console_scripts")
    assert "kubectl_complete-kvcache = kubectl_kvcache.cli:run_complete" in scripts
    with open(os.path.join(ROOT, "bin", "kubectl_complete-kvcache.sh")) as f:
        assert 'exec kubectl-kvcache __complete "$@"' in f.read()
    with open(os.path.join(ROOT, "scripts", "build-binary")) as f:
        assert "kubectl_complete-kvcache.sh" in f.read()
    assert os.access(os.path.join(ROOT, "bin", "kubectl_complete-kvcache"), os.X_OK)


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o bashdefault -F _kubectl_kvcache kubectl-kvcache"),
                                           ("zsh", "#compdef kubectl-kvcache"),
                                           ("fish", "complete -c kubectl-kvcache"),
                                           ("powershell", "Register-ArgumentCompleter -Native")])
def test_completion_prints_the_script_of_each_shell(shell, marker):
    out = io.StringIO()
    assert cli.main(["completion", shell], io.StringIO(""), out, io.StringIO()) == 0
    assert marker in out.getvalue() and "kubectl-kvcache __complete" in out.getvalue()


def test_completion_needs_a_known_shell():
    err = io.StringIO()
    assert cli.main(["completion", "tcsh"], io.StringIO(""), io.StringIO(), err) == 2
    assert "invalid choice" in err.getvalue()


BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def _bash_complete(tmp_path, line, preamble=""):
    """COMPREPLY of the bash script for `line` (the cursor at its end), in a real bash."""
    script = tmp_path / "kvcache.bash"
    out = io.StringIO()
    cli.main(["completion", "bash"], io.StringIO(""), out, io.StringIO())
    script.write_text(out.getvalue())
    words = line.split(" ")
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"{preamble}source {script}\nCOMP_WORDS=({quoted})\nCOMP_CWORD={len(words) - 1}\nCOMP_LINE='{line}'\n"
               f"COMP_POINT={len(line)}\n_kubectl_kvcache\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                       env=_launcher_env(tmp_path))
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_completes_in_bash(tmp_path):
    assert _bash_complete(tmp_path, "kubectl-kvcache ver") == ["verify", "version"]
    assert _bash_complete(tmp_path, "kubectl-kvcache verify -o w") == ["wide"]
    assert _bash_complete(tmp_path, "kubectl-kvcache check --stri") == ["--strict"]
    assert _bash_complete(tmp_path, "kubectl-kvcache setting off --dry-run=cl") in (["client"], ["--dry-run=client"])


@pytest.mark.skipif(not os.path.exists(BASH_COMPLETION) or shutil.which("bash") is None,
                    reason="the bash-completion package is not installed")
def test_the_bash_script_with_bash_completion_keeps_flag_equals_values_whole(tmp_path):
    preamble = f"source {BASH_COMPLETION}\n"
    assert _bash_complete(tmp_path, "kubectl-kvcache setting off --dry-run=cl", preamble) == ["client"]
    assert _bash_complete(tmp_path, "kubectl-kvcache verify -o w", preamble) == ["wide"]


def test_names_from_a_slow_cluster_are_abandoned_in_time():
    def slow(kind, given):
        time.sleep(5)
        return ["late"]
    start = time.monotonic()
    assert completion_command.bounded(slow, 0.3)("pods", {}) == []
    assert time.monotonic() - start < 3


def test_errors_of_the_cluster_complete_nothing():
    def refused(kind, given):
        raise RuntimeError("forbidden")
    assert completion_command.bounded(refused, 1)("pods", {}) == []


def test_typed_connection_flags_become_the_connection():
    from kubectl_kvcache.cli import connection_flags

    conn = connection_flags.from_completion({"kubeconfig": "/k", "context": "c", "server": "https://x",
                                             "insecure_skip_tls_verify": True, "as_user": "me", "namespace": "n"},
                                            f"{completion_command.DEFAULT_TIMEOUT:g}s")
    assert (conn.kubeconfig, conn.context, conn.server, conn.insecure_skip_tls_verify, conn.as_user) == (
        "/k", "c", "https://x", True, "me")
    assert conn.timeout == completion_command.DEFAULT_TIMEOUT


class _Client:
    """The answers of a cluster's lists (the parsed JSON a real server returns) by path and selector."""

    def __init__(self, pods, deployments):
        self.pods, self.deployments, self.asked = pods, deployments, []

    def request(self, method, path, query=None):
        self.asked.append((path, (query or {}).get("labelSelector")))
        if path.endswith("/pods"):
            key, _, value = (query or {}).get("labelSelector", "").partition("=")
            return {"items": [p for p in self.pods if p["metadata"]["labels"].get(key) == value]}
        return {"items": self.deployments}


def test_pods_offered_are_the_ones_verify_judges(monkeypatch):
    import objects as o
    from kubectl_kvcache.judge import verify
    from kubectl_kvcache.operator import api, decode, records

    monkeypatch.setattr(api, "collection_path", lambda client, res, ns: f"/{ns}/{res.plural}")
    pods = [o.md_pod("llama-server-0", "llama", o.vllm_argv("fp8")),
            o.md_pod("llama-router-0", "llama", ["router"], role="router"),      # no role of the spec
            o.md_pod("plain-server-0", "plain", o.vllm_argv(None)),              # no kvCache: not attached
            o.md_pod("gone-server-0", "gone", o.vllm_argv("fp8")),               # its deployment is not there
            o.injected_pod("notebook", "b1", containers=[o.container("main", command=["vllm", "serve", "m"])])]
    deployments = [o.deployment("llama"), o.deployment("plain", binding_name=None)]
    client = _Client(pods, deployments)
    offered = completion_command.judged_pods(client, "team", {"limit": "500"})
    assert offered == ["gone-server-0", "llama-server-0", "notebook"]
    snapshot = records.Snapshot(pods=[decode.pod_record(p) for p in pods],
                                deployments={("team", d["metadata"]["name"]): decode.deployment_record(d)
                                             for d in deployments})
    assert offered == sorted(i.pod for i in verify.verify(snapshot).items if i.pod)   # what verify lists
    assert ("/team/modeldeployments", None) in client.asked
    client = _Client([p for p in pods if p["metadata"]["name"] == "notebook"], deployments)
    assert completion_command.judged_pods(client, "team", {}) == ["notebook"]
    assert all(path.endswith("/pods") for path, _ in client.asked)     # no deployment to ask about
