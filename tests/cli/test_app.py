"""The command line's registry and run: a command is one module under cli/commands/ plus one
line in COMMANDS; the executables connect ahead (load the first snapshot while the command's
modules import) because command_line() asks for it, not because argv was left out."""

import io
import sys

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.cli import app
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load import reader

SERVER = ["--server", "http://127.0.0.1:1"]     # nothing listens there: a request fails at once


@pytest.mark.parametrize("name", app.COMMANDS)
def test_every_registered_command_is_one_module_with_help_flags_options_and_run(name):
    module = app.command_module(name)
    assert module.NAME == name
    assert set(module.HELP) == {"help", "description", "examples"} and module.HELP["examples"]
    assert all(callable(getattr(module, f)) for f in ("add", "options", "run"))
    assert all(e.split()[0] == name for e in module.HELP["examples"])


def test_the_help_lists_the_registry_in_its_order():
    out = io.StringIO()
    assert cli.main(["--help"], stdout=out) == 0
    block = out.getvalue().split("commands:\n")[1].split("\n\n")[0].splitlines()[1:]
    listed = [line.split()[0] for line in block if line.startswith("    ") and line[4] != " "]
    assert listed == list(app.COMMANDS)


class Stop(PluginError):
    pass


@pytest.fixture
def warmed(monkeypatch):
    """reader.warm recorded, and stopped there (no connection is made)."""
    calls = []

    def warm(connection, trace=None, scope=None):
        calls.append((connection, scope))
        raise Stop("stopped at warm")
    monkeypatch.setattr(reader, "warm", warm)
    return calls


def run(argv, **kw):
    out, err = io.StringIO(), io.StringIO()
    return cli.main(argv, io.StringIO(""), out, err, **kw), err.getvalue()


@pytest.mark.parametrize("argv, first", [(["verify", "-n", "team"], "scope"),
                                         (["verify", "-n", "team", "--wait"], None),
                                         (["check", "-A"], "scope"), (["setting", "status"], None)])
def test_connect_ahead_starts_the_connection_with_the_commands_first_snapshot(warmed, argv, first):
    code, err = run(argv + SERVER, connect_ahead=True)
    assert (code, err) == (2, "error: stopped at warm\n")
    (connection, scope), = warmed
    assert connection.server == "http://127.0.0.1:1"
    if first is None:
        assert scope is None
    else:
        assert scope.namespace == ("team" if "-n" in argv else None) and scope.all_namespaces == ("-A" in argv)


def test_without_connect_ahead_nothing_is_started_early(warmed):
    code, err = run(["verify", "-n", "team"] + SERVER)
    assert code == 2 and warmed == [] and err.startswith("error: ") and "stopped at warm" not in err


def test_files_are_never_connected_for(warmed):
    code, _ = run(["check", "-A", "-f", "examples/cluster.json", "-o", "json"], connect_ahead=True)
    assert code in (0, 1) and warmed == []


def test_the_executables_command_line_connects_ahead(warmed, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["kubectl-kvcache", "check", "-n", "team"] + SERVER)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert app.command_line() == 2
    assert len(warmed) == 1 and warmed[0][1].namespace == "team"


# spf13/pflag, kubectl's flag parser (bool.go, flag.go parseLongArg and parseSingleShortArg), as
# `kubectl get pods --insecure-skip-tls-verify=... --token ...` v1.37.2 reads these command lines
@pytest.mark.parametrize("words, insecure, token", [
    (["--insecure-skip-tls-verify=false"], False, None),
    (["--insecure-skip-tls-verify=true"], True, None),
    (["--insecure-skip-tls-verify=1"], True, None),
    (["--insecure-skip-tls-verify=F"], False, None),
    (["--insecure-skip-tls-verify", "--insecure-skip-tls-verify=FALSE"], False, None),     # the last wins
    (["--insecure-skip-tls-verify=0", "--insecure-skip-tls-verify"], True, None),
    (["--token", "-starts-with-a-dash"], False, "-starts-with-a-dash"),
])
def test_flags_are_read_as_kubectls_pflag_reads_them(words, insecure, token):
    ns = cli.build_parser().parse_args(["verify", *words])
    assert (ns.insecure_skip_tls_verify, ns.token) == (insecure, token)


def test_a_bool_flag_with_a_value_go_does_not_parse_is_a_usage_error():
    err = io.StringIO()
    code = cli.main(["verify", "--insecure-skip-tls-verify=yes"], stdout=io.StringIO(), stderr=err)
    assert code == 2
    assert err.getvalue().splitlines()[0] == ('error: invalid argument "yes" for "--insecure-skip-tls-verify" flag: '
                                              'strconv.ParseBool: parsing "yes": invalid syntax')


def test_already_done_is_a_result_and_exit_0(monkeypatch):
    """errors.AlreadyDone (what a command would bring about is already so: README "Exit codes",
    `0 done, or already in that state`) is printed on stdout as the result, exit 0, no `error:`."""
    import io

    from kubectl_kvcache.cli import app
    from kubectl_kvcache.cli.commands import version
    from kubectl_kvcache.errors import AlreadyDone

    def run(options, io_):
        raise AlreadyDone("KVCachePoolBinding team/b1 has dtype 'fp8' and no engine rejects it: nothing to recover")

    monkeypatch.setattr(version, "run", run)
    out, err = io.StringIO(), io.StringIO()
    assert app.main(["version"], io.StringIO(""), out, err) == 0
    assert out.getvalue() == "KVCachePoolBinding team/b1 has dtype 'fp8' and no engine rejects it: nothing to recover\n"
    assert err.getvalue() == ""
