"""Issue 16, "feels like kubectl": scope flags (-A wins, -l on check/bindings/roles), help, the
fix of a verify row and the next command, fixes that name every entry to delete, near-miss
spellings, the wording of setting and of absent objects, and tables fitted to a terminal (a
Binding reusing a claimed domain: test_check_claims.py). Through cli.main on files written by the test, and the pure parts."""

import io
import json
import os

import objects as o
import pytest
from runcli import kvcache

from kubectl_kvcache import cli
from kubectl_kvcache.judge import checks
from kubectl_kvcache.operator import api, decode, records
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.render import core
from kubectl_kvcache.render import verify as verify_view
from kubectl_kvcache.judge.nearest_dtype import nearest_spelling

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")


def labelled(obj, **labels):
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def check_json(*argv):
    code, out, err = kvcache(*argv, "-o", "json")
    return code, json.loads(out), err


def only(report, code):
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, report["findings"]
    return found[0]


# -- scope -----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["verify", "check", "bindings", "roles"])
def test_all_namespaces_wins_over_namespace_as_in_kubectl(command):
    code_a, out_a, _ = kvcache(command, "-A", "-f", EXAMPLE, "-o", "json")
    code_b, out_b, _ = kvcache(command, "-n", "llm-research", "-A", "-f", EXAMPLE, "-o", "json")
    _, out_n, _ = kvcache(command, "-n", "llm-research", "-f", EXAMPLE, "-o", "json")
    assert code_a == code_b and out_a == out_b and out_n != out_a


def _team_objects():
    return [labelled(o.binding("b1", "fp8"), team="a"), o.binding("b2", "fp8", domain="two"),
            labelled(o.deployment("md-a", binding_name="b2",
                                  roles=[{"name": "server", "kind": "server",
                                          "extraArgs": ["--kv-cache-dtype", "fp8_e5m2"]}]), team="a"),
            o.deployment("md-b", binding_name="b1",
                         roles=[{"name": "server", "kind": "server", "extraArgs": ["--kv-cache-dtype=fp8_e5m2"]}]),
            o.setting("true")]


def test_selector_on_bindings_keeps_the_verdict_of_every_user(write):
    path = write(*_team_objects())
    code, out, err = kvcache("bindings", "-A", "-l", "team=a", "-f", path, "-o", "json")
    items = json.loads(out)["items"]
    # b1 is selected; its user md-b is not labelled, yet it is read and counted: b1 is not UNUSED
    assert [i["name"] for i in items] == ["b1"] and [u["name"] for u in items[0]["usedBy"]] == ["md-b"]
    assert items[0]["verdict"] == "OK" and code == 0


def test_selector_on_roles_selects_deployments(write):
    path = write(*_team_objects())
    _, out, _ = kvcache("roles", "-A", "-l", "team=a", "-f", path, "-o", "json")
    assert [i["deployment"] for i in json.loads(out)["items"]] == ["md-a"]
    _, out, _ = kvcache("roles", "-A", "-l", "team!=a", "-f", path, "-o", "json")
    assert [i["deployment"] for i in json.loads(out)["items"]] == ["md-b"]


def test_selector_on_check_keeps_findings_about_selected_objects_and_the_setting(write):
    path = write(*_team_objects())
    code, report, _ = check_json("check", "-A", "-l", "team=a", "-f", path)
    assert sorted((f["kind"], f["name"]) for f in report["findings"]) == [
        ("ModelDeployment", "md-a"), ("Setting", api.SETTING_NAME)]
    assert code == 1    # md-a's own flag differs from its Binding: an error, and it was selected
    code, report, _ = check_json("check", "-A", "-l", "team=nobody", "-f", path)
    assert [f["code"] for f in report["findings"]] == ["setting"] and code == 1     # -l chose nothing (issue 48)
    assert [r["code"] for r in report["verdict"]["reasons"]] == ["nothing-found"]


@pytest.mark.parametrize("command", ["check", "verify"])
@pytest.mark.parametrize("selector", ["a,,b", "a=b=c", "k in (a", "=v", "a b"])
def test_a_malformed_selector_is_one_error_line(write, selector, command):
    code, out, err = kvcache(command, "-A", "-l", selector, "-f", write(*_team_objects()))
    assert code == 2 and out == "" and err.startswith("error: invalid label selector") and len(err.splitlines()) == 1


@pytest.mark.parametrize("selector", ["team", "!team", "team=a", "team==a", "team!=a", "team in (a, b)",
                                      "team notin (c),app.kubernetes.io/name=x", "example.com/team=a-1"])
def test_well_formed_selectors_are_accepted(write, selector):
    code, _, err = kvcache("roles", "-A", "-l", selector, "-f", write(*_team_objects()))
    assert code in (0, 1) and "error" not in err


# -- help ------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["verify", "check", "bindings", "roles", "setting", "completion", "version"])
def test_every_command_has_a_description_and_examples(command):
    code, out, _ = kvcache(command, "--help")
    assert code == 0
    usage, _, rest = out.partition("\n\n")
    assert rest.strip() and not rest.startswith("positional") and not rest.startswith("options")
    assert "Examples:\n  kubectl kvcache " + command in out


def test_the_top_level_help_lists_each_command_once():
    _, out, _ = kvcache("--help")
    for command in ("verify", "check", "bindings", "roles", "setting", "recover", "completion", "version"):
        assert sum(1 for line in out.splitlines() if line.split()[:1] == [command]) == 1, command
    assert "Examples:" in out


@pytest.mark.parametrize("argv, help_of", [
    (["check", "--bogus"], "kubectl kvcache check"),
    (["bindings", "-A", "--nope=1"], "kubectl kvcache bindings"),
    (["setting", "on", "--forse"], "kubectl kvcache setting on"),
    (["verify", "-A", "--chunk-size", "5", "--x"], "kubectl kvcache verify"),
])
def test_an_unknown_flag_points_at_the_subcommands_help(argv, help_of):
    code, out, err = kvcache(*argv)
    assert code == 2 and out == ""
    # pflag names the flag alone (`--nope=1` is `unknown flag: --nope`): a value is never echoed;
    # between the lines, "Did you mean this?" when a flag is near (test_suggest.py)
    lines = err.splitlines()
    assert [lines[0], lines[-1]] == [f"error: unknown flag: {argv[-1].partition('=')[0]}",
                                     f"See '{help_of} --help' for usage."]
    assert sum(line.startswith("error:") for line in lines) == 1


# -- verify: the fix and the next step ---------------------------------------------------------

def _verify_objects():
    return [o.binding("b1", "fp8"), o.binding("bad", "fp8", domain="sgl"),
            o.deployment("own", binding_name="b1",
                         roles=[{"name": "server", "kind": "server", "extraArgs": ["--kv-cache-dt", "fp8_e5m2"]}]),
            o.md_pod("own-server-0", "own", o.vllm_argv("fp8", extra=["--kv-cache-dt", "fp8_e5m2"])),
            o.deployment("sgl", engine="SGLang", version="0.5.18", binding_name="bad"),
            o.md_pod("sgl-server-0", "sgl", o.sglang_argv("fp8"), image="lmsysorg/sglang:v0.5.18"),
            o.deployment("fine", binding_name="b1"), o.md_pod("fine-server-0", "fine", o.vllm_argv("fp8")),
            o.injected_pod("nb", "b1", containers=[o.container("main", command=["vllm", "serve", "m"],
                                                               args=["--kv-cache-dtype", "fp8_e5m2", "--port", "1"])]),
            o.setting("true")]


def test_every_non_ok_item_has_a_fix_and_ok_items_none(write):
    code, out, _ = kvcache("verify", "-A", "-f", write(*_verify_objects()), "-o", "json")
    items = {i["pod"]: i for i in json.loads(out)["items"]}
    assert items["fine-server-0"]["fix"] == ""
    # an ambiguous abbreviation: the word after it goes too, or it stays a stray positional
    assert items["own-server-0"]["fix"].startswith(
        "remove spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1] from ModelDeployment own")
    assert items["sgl-server-0"]["fix"].endswith("recover it: kubectl kvcache recover bad -n team")
    assert items["nb"]["fix"].startswith("remove args[0] and args[1] of container main")
    assert code == 1


def test_describe_has_the_fix_and_the_summary_names_the_next_command(write):
    path = write(*_verify_objects())
    _, out, err = kvcache("verify", "-A", "-f", path, "-o", "describe")
    assert "\nFix:        remove spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1] from ModelDeployment own" in out
    assert err.splitlines()[-1] == (f"next: kubectl kvcache check -A -f {path} -o describe   (the fix for each finding)")
    _, wide, _ = kvcache("verify", "-A", "-f", path, "-o", "wide")
    assert "FIX" not in wide.splitlines()[0].split() and "remove spec" not in wide    # prose is describe's
    _, _, err = kvcache("verify", "-n", "team", "-f", path, "fine-server-0")
    assert "next:" not in err       # all OK: nothing to do next


def test_next_step_on_a_cluster_is_the_recovery_of_the_one_rejected_binding(write):
    from kubectl_kvcache.judge import verify
    from kubectl_kvcache.load import manifests

    snapshot = manifests.load_files([write(*_verify_objects())], Scope())
    report = verify.verify(snapshot)
    assert verify_view.next_step(report, Scope(namespace="team")) == (
        "next: kubectl kvcache recover bad -n team   (the guide's recovery for Binding bad)")
    two = [i for i in report.items if i.recover][0]
    report.items.append(two.replace(binding="other"))
    assert verify_view.next_step(report, Scope(all_namespaces=True)).startswith(
        "next: kubectl kvcache check -A -o describe")


# -- check: fixes that leave no stray value, near misses, claimed domains -----------------------

@pytest.mark.parametrize("extra, removed", [
    (["--kv-cache-dt", "fp8_e5m2"], "spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1]"),
    (["--max-model-len", "8192", "--kv-cache-dtype", "fp8_e5m2"],
     "spec.roles[0].extraArgs[2] and spec.roles[0].extraArgs[3]"),
    (["--kv_cache_dtype", "fp8_e5m2", "--port", "1"], "spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1]"),
    (["--kv-cache-dtype=fp8_e5m2", "x"], "spec.roles[0].extraArgs[0] from"),
])
def test_role_own_flag_fix_names_the_value_too(write, extra, removed):
    _, report, _ = check_json("check", "-A", "-f", write(
        o.binding("b1", "fp8"), o.deployment("md", binding_name="b1",
                                             roles=[{"name": "server", "kind": "server", "extraArgs": extra}])))
    f = only(report, "role-own-flag")
    assert f["fix"].startswith("remove " + removed)


def test_injected_pod_and_template_fixes_name_the_value_too(write):
    tmpl = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dep", "namespace": "team"},
            "spec": {"template": {"metadata": {"labels": {"kvcache.gpustack.ai/inject": "true"},
                                               "annotations": {"kvcache.gpustack.ai/binding": "b1",
                                                               "kvcache.gpustack.ai/engine": "vLLM"}},
                                  "spec": {"containers": [o.container("main", command=["vllm", "serve", "m"],
                                                                      args=["--kv-cache-dt", "fp8"])]}}}}
    pod = o.injected_pod("nb", "b1", containers=[o.container("main", command=["vllm", "serve", "m"],
                                                             args=["--port", "1", "--kv-cache-dtype", "fp8"])])
    _, report, _ = check_json("check", "-A", "-f", write(o.binding("b1", "fp8"), tmpl, pod))
    fixes = {f["name"]: f["fix"] for f in report["findings"] if f["code"] == "injection-refused"}
    assert fixes["nb"].startswith("remove args[2] and args[3] `--kv-cache-dtype fp8`")
    assert fixes["dep"].startswith("remove args[0] and args[1] `--kv-cache-dt fp8`")


@pytest.mark.parametrize("value, accepted, nearest", [
    ("FP8", {"fp8", "fp8_e4m3", "bfloat16"}, "fp8"),
    ("fp8_e4m3fn", {"fp8_e4m3", "fp8_e5m2"}, "fp8_e4m3"),
    ("float8_e5m2", {"fp8_e4m3", "fp8_e5m2"}, "fp8_e5m2"),
    ("FP8", {"fp8_e4m3", "bf16"}, "fp8_e4m3"),         # SGLang: fp8 is spelled fp8_e4m3
    ("BF16", {"bfloat16", "float16"}, "bfloat16"),
    ("float16", {"bfloat16", "bf16", "fp8_e4m3"}, None),  # one letter from bfloat16, another format
    ("fp8", {"fp8", "auto"}, None),                       # already accepted
    ("int3", {"fp8", "auto"}, None),
])
def test_nearest_spelling_keeps_the_format(value, accepted, nearest):
    assert nearest_spelling(value, accepted) == nearest


def test_a_near_miss_binding_gets_one_spelling_not_the_list(write):
    _, report, _ = check_json("check", "-A", "-f", write(
        o.binding("b1", "fp8_e4m3fn"), o.deployment("s", engine="SGLang", version="0.5.18", binding_name="b1")))
    fix = only(report, "binding-dtype-rejected")["fix"]
    assert "the nearest accepted spelling is 'fp8_e4m3'" in fix and "one of" not in fix
    _, report, _ = check_json("check", "-A", "-f", write(
        o.binding("b1", "float16"), o.deployment("s", engine="SGLang", version="0.5.18", binding_name="b1")))
    assert "one of bf16, bfloat16" in only(report, "binding-dtype-rejected")["fix"]


def test_a_near_miss_own_flag_gets_the_nearest_spelling(write):
    _, report, _ = check_json("check", "-A", "-f", write(o.binding("b1", "fp8"), o.deployment(
        "md", binding_name="b1", roles=[{"name": "server", "kind": "server", "extraArgs": ["--kv-cache-dtype=FP8"]}])))
    assert only(report, "role-own-flag")["fix"].endswith(
        "(its value 'FP8' is not a spelling vLLM 0.29.0 accepts; the nearest is 'fp8')")


# -- wording -------------------------------------------------------------------------------------

def test_absent_objects_are_not_in_the_input_only_for_files():

    def report(source):
        s = records.Snapshot(source=source)
        s.setting = records.default_setting()
        md = decode.deployment_record(o.deployment("md", binding_name="gone", roles=[
            {"name": "server", "kind": "server", "extraArgs": ["--kv-cache-dtype", "fp8"]}]))
        s.deployments[(md.namespace, md.name)] = md
        return checks.check(s)
    assert "Binding gone is not in the input" in report("file").roles[0].reason
    assert "Binding gone was not found in namespace team" in report("cluster").roles[0].reason


def test_setting_status_takes_table_like_every_command_and_text_still_works():
    from kubectl_kvcache.cli import build_parser, options_for

    for word in ("table", "text"):
        opts = options_for(build_parser().parse_args(["setting", "status", "-o", word]))
        assert opts.output.format == "table"
    code, _, err = kvcache("setting", "status", "-o", "toml")
    assert code == 2 and "invalid choice" in err


# -- tables as kubectl prints them ------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_table_widths_are_kubectls_tabwriter_and_no_cell_is_cut():
    out = io.StringIO()
    core.table(["name", "a", "message"], [["x" * 40, "1", "y" * 300], ["b", "22", "short words"]], out, text={2})
    lines = out.getvalue().splitlines()
    # each column: its longest cell + 3, at least 6 (cli-runtime's GetNewTabWriter); the last not padded
    assert lines == ["NAME" + " " * 39 + "A     MESSAGE", "x" * 40 + "   1     " + "y" * 300,
                     "b" + " " * 42 + "22    short words"]
    out = io.StringIO()
    core.table(["name", "a"], [["b", "has space"]], out, no_headers=True)
    assert out.getvalue() == "b     has\\x20space\n"     # not free text: one word; widths from the rows alone


def test_check_on_a_terminal_wraps_the_message_under_its_row_and_cuts_nothing(monkeypatch):
    """Issue 30 item 7: on a terminal MESSAGE goes on wrapped lines under its row (every word of
    it, none broken); piped, one finding per line (tests/render/test_terminal_pty.py: a real pty)."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out, err = Terminal(), io.StringIO()
    code = cli.main(["check", "-A", "-f", EXAMPLE, "--color", "never"], io.StringIO(""), out, err)
    _, piped, piped_err = kvcache("check", "-A", "-f", EXAMPLE)
    assert code == 1 and err.getvalue() == piped_err
    shown = out.getvalue()
    assert shown != piped and len(piped.splitlines()) == 12
    # what went under the row is labelled with its header (issue 48 item 8), the message too
    assert set(shown.split()) - {"object:", "message:"} == set(piped.split()) - {"OBJECT", "MESSAGE"}
    assert all(len(x) <= 80 for x in shown.splitlines())
    assert "\u2026" not in piped and "invalid choice: 'fp8' for SGLang 0.5.18)" in piped     # never cut




def test_verify_wide_on_a_terminal_prints_no_bare_none_line(monkeypatch):
    """Issue 39 item 5: at 80 columns `verify -o wide` put the empty CAUSE column under every row
    as a bare `<none>` line. An empty free text is not printed; a filled one is."""
    monkeypatch.setenv("COLUMNS", "80")
    out, err = Terminal(), io.StringIO()
    cli.main(["verify", "-A", "-f", EXAMPLE, "-o", "wide", "--color", "never"], io.StringIO(""), out, err)
    lines = out.getvalue().splitlines()
    assert lines and all(x.strip() != "<none>" for x in lines), out.getvalue()
    assert all(len(x) <= 80 for x in lines)
    _, piped, _ = kvcache("verify", "-A", "-f", EXAMPLE, "-o", "wide")
    assert "CAUSE" in piped.splitlines()[0]
