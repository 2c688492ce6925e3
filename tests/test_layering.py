"""The architecture, enforced. The pipeline's packages, each allowed what LAYERS says: load/ reads
(never imports judge/), judge/ and engine/ are pure (no requests, files, printing), only render/
prints, only cli/ sees argparse; only kube/ talks HTTP (its client and transport modules import
http, socket or ssl), and a command on files loads neither http.client nor email; the operator's
API is spelled in operator/api.py only; no import cycles, function-level imports included; the
judges never load the kubernetes client; `--help`/`version` pay for none of kubernetes, yaml,
tabulate."""

import ast
import os
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "kubectl_kvcache")
PURE = ["kubectl_kvcache.engine", "kubectl_kvcache.judge.verify", "kubectl_kvcache.judge.checks",
        "kubectl_kvcache.judge.setting", "kubectl_kvcache.judge.recover", "kubectl_kvcache.judge.rollout",
        "kubectl_kvcache.judge.live", "kubectl_kvcache.judge.anchor", "kubectl_kvcache.judge.policy",
        "kubectl_kvcache.judge.referrers", "kubectl_kvcache.judge.verdict",
        "kubectl_kvcache.operator.records", "kubectl_kvcache.operator.decode", "kubectl_kvcache.operator.fields",
        "kubectl_kvcache.operator.paths", "kubectl_kvcache.operator.recovery_inputs",
        "kubectl_kvcache.operator.binding_status"]
HTTP_MODULES = ("kubernetes", "urllib3", "requests", "http", "socket", "ssl", "urllib.request")


def modules():
    """{dotted name: (path, ast)} of every module of the plugin."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                dotted = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
                with open(path, encoding="utf-8") as f:
                    found[dotted] = (path, ast.parse(f.read(), path))
    return found


MODULES = modules()


def reexports(package):
    """Names a package's __init__ binds by importing them (they shadow its submodules)."""
    entry = MODULES.get(package)
    if entry is None:
        return set()
    return {a.asname or a.name for n in ast.walk(entry[1]) if isinstance(n, ast.ImportFrom) for a in n.names}


def imports(tree):
    """Every module an AST imports, at any level (`if TYPE_CHECKING:` ones included): `from pkg
    import sub` counts as `pkg.sub` when that is a module of the plugin (and not a name pkg's
    __init__ re-exports), else as `pkg`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                names.add(sub if sub in MODULES and a.name not in reexports(node.module) else node.module)
    return names


def calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


def outside(prefix):
    return {m: v for m, v in MODULES.items() if not (m == prefix or m.startswith(prefix + "."))}


def test_the_walk_sees_the_layout():
    assert {"kubectl_kvcache.cli", "kubectl_kvcache.cli.app", "kubectl_kvcache.cli.commands.verify",
            "kubectl_kvcache.cli.flows.verify", "kubectl_kvcache.kube.client", "kubectl_kvcache.render.core",
            "kubectl_kvcache.render.formats.json", "kubectl_kvcache.engine.kvparse", "kubectl_kvcache.load.cluster",
            "kubectl_kvcache.judge.checks.roles", "kubectl_kvcache.operator.api"} <= set(MODULES)


P = "kubectl_kvcache."
# (and the package itself: its __init__ holds only __version__)
LEAVES = {P + "errors", P + "record", P + "kube.names", P + "kube.selector", P + "exitcodes",
          P + "masking"}    # the one masking of cluster text (a leaf: test_masking_imports_nothing)
# package -> the plugin's modules (or packages) it may import besides itself and LEAVES
LAYERS = {
    P + "engine": set(),
    P + "kube": set(),
    P + "operator": {P + "kube"},                    # api.py's paths: kube.collection_path, imported when asked
    P + "judge": {P + "engine", P + "operator"},
    P + "load": {P + "operator", P + "kube"},
    P + "render": {P + "engine", P + "operator", P + "judge"},
}


def _inside(module, package):
    return module == package or module.startswith(package + ".")


def _plugin_imports(package):
    """{module of `package`: plugin modules it imports from outside the package}."""
    return {m: {i for i in imports(tree) if i.startswith(P) and not _inside(i, package)}
            for m, (_, tree) in MODULES.items() if _inside(m, package)}


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_each_layer_imports_only_what_it_may(package):
    allowed = LAYERS[package] | LEAVES
    offenders = {m: sorted(i for i in found if i != P[:-1] and not any(_inside(i, a) for a in allowed))
                 for m, found in _plugin_imports(package).items()}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_the_layer_rule_sees_an_upward_import():
    """The rule above can fail: a judge that read the cluster is an offender."""
    tree = ast.parse("from kubectl_kvcache.load import reader")
    assert not any(_inside(i, a) for i in imports(tree) for a in LAYERS[P + "judge"] | LEAVES)


def test_load_never_imports_judge():
    assert {m for m, found in _plugin_imports(P + "load").items() if any(_inside(i, P + "judge") for i in found)} \
        == set()


@pytest.mark.parametrize("package", [P + "judge", P + "engine"])
def test_judge_and_engine_are_pure(package):
    """No requests (kube, sockets), no files opened, no streams written, no environment read."""
    for m, (_, tree) in MODULES.items():
        if _inside(m, package):
            assert not (calls(tree, "open") or calls(tree, "write") or calls(tree, "print")), m
            assert not {i for i in imports(tree) if i.split(".")[0] in HTTP_MODULES or i == P + "kube"}, m


def test_nothing_imports_the_command_line_but_its_entry_points():
    users = {m for m, (_, tree) in MODULES.items() if not _inside(m, P + "cli")
             and any(_inside(i, P + "cli") for i in imports(tree))}
    assert users == {P + "__main__"}


def test_only_render_prints():
    offenders = [f"{m}:{c.lineno}" for m, (_, tree) in outside("kubectl_kvcache.render").items()
                 for c in calls(tree, "print") + calls(tree, "write")]
    assert offenders == []


TRANSPORT = ("kubectl_kvcache.kube.client", "kubectl_kvcache.kube.transport")


def test_only_kube_talks_http():
    offenders = {m: sorted(i for i in imports(tree) if i.split(".")[0] in HTTP_MODULES or i in HTTP_MODULES)
                 for m, (_, tree) in MODULES.items() if m not in TRANSPORT}
    assert {m: i for m, i in offenders.items() if i} == {}
    assert all(imports(MODULES[m][1]) & {"http.client", "socket", "ssl"} for m in ("kubectl_kvcache.kube.transport",))


def test_only_kube_uses_the_connections():
    users = {m for m, (_, tree) in MODULES.items() if "kubectl_kvcache.kube.transport" in imports(tree)}
    assert users == {"kubectl_kvcache.kube.client"}


def test_kube_loads_its_connections_only_when_it_talks_to_a_cluster():
    """kube/transport.py (http.client, and with it the email package) is imported inside the
    client's functions, never at the top of a module."""
    for m, (_, tree) in MODULES.items():
        top = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names} | \
              {f"{n.module}.{a.name}" for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
               for a in n.names} | {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        if m != "kubectl_kvcache.kube.transport":
            assert not top & {"kubectl_kvcache.kube.transport", "http.client", "http", "urllib.parse"}, m


def test_engine_imports_nothing_outside_itself():
    stdlib = set(sys.stdlib_module_names)
    for m, (_, tree) in MODULES.items():
        if m.startswith("kubectl_kvcache.engine"):
            for name in imports(tree):
                assert name.startswith("kubectl_kvcache.engine") or name in ("kubectl_kvcache.record",
                                                                             "kubectl_kvcache.masking") \
                    or name.split(".")[0] in stdlib, (m, name)


def test_masking_imports_nothing():
    """The masking of cluster text is a leaf every layer may use: only the standard library."""
    assert imports(MODULES["kubectl_kvcache.masking"][1]) <= set(sys.stdlib_module_names)


def test_record_imports_nothing():
    """engine/ may use the value-class base because it is a leaf: no imports at all."""
    assert imports(MODULES["kubectl_kvcache.record"][1]) == set()


def test_the_rest_uses_the_engine_through_its_face():
    for m, (_, tree) in outside("kubectl_kvcache.engine").items():
        inner = [i for i in imports(tree) if i.startswith("kubectl_kvcache.engine.")]
        assert inner == [], (m, inner)


def test_nothing_below_cli_touches_argparse():
    for m, (path, tree) in MODULES.items():
        if m == "kubectl_kvcache.cli" or m.startswith("kubectl_kvcache.cli."):
            continue
        assert "argparse" not in imports(tree), m
        with open(path, encoding="utf-8") as f:
            assert "getattr(opts" not in f.read(), m


def test_no_import_cycles_function_level_and_type_only_imports_included():
    """A cycle the type checker alone follows still ties two modules together (issue 40): the
    options live in cli/options.py, which commands build and flows read."""
    graph = {m: {i for i in imports(tree) if i in MODULES and i != m}
             for m, (_, tree) in MODULES.items()}
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def loaded_after(code, site=True):
    """The modules loaded once `code` ran in a fresh interpreter (site=False: without site, so
    without what an editable install's finder or .pth files load at every start)."""
    flags, env = ([], None) if site else (["-S"], dict(os.environ, PYTHONPATH=os.pathsep.join(
        {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})))   # the dependencies, no .pth
    out = subprocess.run([sys.executable, *flags, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout.split()
    return set(out)


@pytest.mark.parametrize("module", PURE)
def test_pure_layers_do_not_import_the_kubernetes_client(module):
    modules = loaded_after(f"import {module}")
    assert not {m for m in modules if m == "kubernetes" or m.startswith(("kubernetes.", "urllib3"))}


@pytest.mark.parametrize("argv", [["--help"], ["version"], ["verify", "--help"]])
def test_help_and_version_import_neither_kubernetes_nor_yaml(argv):
    modules = loaded_after("import io, contextlib\nfrom kubectl_kvcache.cli import main\n"
                           f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})")
    assert "kubernetes" not in modules and "yaml" not in modules and "tabulate" not in modules


# What a command line's start-up must not load (issue #16: `verify -n` on 100 Pods at most as
# slow as the kubectl one-liner): each costs milliseconds at every start, more than the work.
START_UP_FORBIDDEN = {
    "dataclasses": "record.Record instead (~1 ms a class, plus inspect)",
    "typing": "builtin annotations under `from __future__ import annotations`",
    "inspect": "pulled in by dataclasses",
    "http.client": "only when a command talks to a cluster (kube/client.py imports kube/transport.py then; it imports email)",
    "email": "pulled in by http.client",
    "concurrent.futures": "threads (it imports logging)",
    "logging": "pulled in by concurrent.futures",
    "urllib.parse": "only when a command talks to a cluster (it imports ipaddress)",
    "queue": "only --watch and --wait",
    "yaml": "only for YAML input and output, and for reading a kubeconfig (goyaml)",
    "kubernetes": "only for exec and auth-provider users",
}


@pytest.mark.parametrize("command", ["verify", "check", "bindings", "roles", "setting status"])
def test_a_commands_start_up_loads_nothing_it_does_not_need(command):
    """Every module verify and check load on a cluster (the command, its judges and views, the
    transport), without a cluster: what is imported is the same either way."""
    modules = loaded_after(
        "import kubectl_kvcache.cli, kubectl_kvcache.load.reader, kubectl_kvcache.load.recovery\n"
        "import kubectl_kvcache.kube.client, kubectl_kvcache.kube.kubeconfig\n"
        f"import kubectl_kvcache.cli.flows.{command.split()[0].replace('bindings', 'check').replace('roles', 'check')}\n"
        "import kubectl_kvcache.render.verify, kubectl_kvcache.render.checks, kubectl_kvcache.engine.shell\n"
        "import kubectl_kvcache.judge.nearest_dtype, kubectl_kvcache.engine.knowledge\n"
        f"kubectl_kvcache.cli.build_parser({command.split()[0]!r}).parse_args({command.split()!r})", site=False)
    modules -= loaded_after("pass", site=False)
    loaded = {m: why for m, why in START_UP_FORBIDDEN.items()
              if m in modules or any(x.startswith(m + ".") for x in modules)}
    assert loaded == {}


EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
RUN = ("import io, contextlib\nfrom kubectl_kvcache.cli import main\n"
       "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
       "    main({argv!r})")


@pytest.mark.parametrize("argv", [["verify", "-A", "-f", EXAMPLE, "-o", "json"], ["check", "-A", "-f", EXAMPLE, "-o", "json"],
                                  ["verify", "-A", "-f", EXAMPLE]])
def test_a_command_on_files_loads_neither_http_client_nor_email(argv):
    """Tables included: kubectl's layout is printed without tabulate (which loads email through
    wcwidth -> importlib.metadata)."""
    modules = loaded_after(RUN.format(argv=argv), site=False)
    assert "kubectl_kvcache.judge.verify" in modules or "kubectl_kvcache.judge.checks" in modules
    ours = {"kubectl_kvcache.kube.transport", "http", "http.client", "urllib.parse", "tabulate"} & modules
    email = {m for m in modules if m.split(".")[0] == "email"}
    assert not ours | email
    if "json" not in argv:
        assert "kubectl_kvcache.render.formats.table" in modules        # the table did get printed


def test_a_command_on_a_cluster_may_load_them(tmp_path):
    """The same check tells: a command that talks to an API server (here one that is not there)
    loads the transport and http.client."""
    s = __import__("socket").socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    config = tmp_path / "config"
    config.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "c", '
                      f'"clusters": [{{"name": "c", "cluster": {{"server": "http://127.0.0.1:{port}"}}}}], '
                      '"contexts": [{"name": "c", "context": {"cluster": "c"}}]}')
    modules = loaded_after(RUN.format(argv=["verify", "-n", "x", "--kubeconfig", str(config)]), site=False)
    assert {"kubectl_kvcache.kube.transport", "http.client", "email"} <= modules


OPERATOR_API = "kubectl_kvcache.operator.api"


def _literals(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_operators_api_is_spelled_in_operator_api_only():
    """Its groups, versions and resources: a new API version or resource is an edit of
    operator/api.py (kube/client.py builds paths from what it is given)."""
    from kubectl_kvcache.operator import api

    words = {*api.OPERATOR_GROUPS, *api.VERSIONS, *(r.plural for r in api.RESOURCES.values() if r.operators)}
    words |= {f"{g}/{v}" for g in api.OPERATOR_GROUPS for v in api.VERSIONS}
    offenders = sorted(f"{m}:{c.lineno}:{c.value}" for m, (_, tree) in MODULES.items()
                       if m not in (OPERATOR_API, "kubectl_kvcache.kube.client")
                       for c in _literals(tree) if c.value in words or "/apis/" in c.value)
    assert offenders == []



def test_verify_without_a_policy_loads_no_policy_module():
    """verify reads and judges a policy only when one is given: its start-up pays for neither the
    policy file's reader nor check's registry that judge/policy.py carries."""
    modules = loaded_after(RUN.format(argv=["verify", "-A", "-f", EXAMPLE, "-o", "json"]), site=False)
    assert "kubectl_kvcache.judge.verify" in modules
    assert not {"kubectl_kvcache.judge.policy", "kubectl_kvcache.load.policy"} & modules


def test_verify_and_check_share_one_policy_matcher():
    """One home for what a policy means: the flows apply judge/policy.py, nothing else matches rules."""
    users = {name for name, (_, tree) in MODULES.items() if "kubectl_kvcache.judge.policy" in imports(tree)}
    assert {"kubectl_kvcache.cli.flows.verify", "kubectl_kvcache.cli.flows.check"} <= users
    assert all(n.startswith(("kubectl_kvcache.cli.", "kubectl_kvcache.judge.")) for n in users), users
