"""Saved objects without a namespace, read with -n, are in that namespace (issue 48, 1), as
kubectl's builder puts them (cli-runtime resource/visitor.go SetNamespace/RequireNamespace;
confirmed with kubectl v1.37.2: `kubectl create --dry-run=client -f x.yaml -n ns -o yaml` writes
`namespace: ns` into a namespace-less KVCachePoolBinding and ConfigMap, and leaves a cluster-scoped
object alone). The objects are examples/cluster.json's, stripped of their namespace and status as
`helm template` renders them."""

import copy
import json
import os
import sys

import pytest
import yaml

from kubectl_kvcache.render import formats

from runcli import kvcache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_verdict_matrix import option, said  # noqa: E402  (one reading of every format's verdict)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
NS = "llm-staging"
# the fp8 Binding on SGLang 0.5.18 and the role that passes its own flag, with their Bindings
CHART = (("KVCachePoolBinding", "sgl-fp8"), ("ModelDeployment", "deepseek-sgl"),
         ("KVCachePoolBinding", "chat-fp8"), ("ModelDeployment", "llama-long"))


def _example():
    with open(EXAMPLE) as f:
        return json.load(f)["items"]


def rendered(namespace=None):
    """The chart's objects as a template renders them: no status, no server fields, no namespace
    (or `namespace` when given)."""
    by = {(o["kind"], o["metadata"]["name"]): o for o in _example()}
    out = []
    for key in CHART:
        obj = copy.deepcopy(by[key])
        obj.pop("status", None)
        meta = {"name": obj["metadata"]["name"], "labels": {"app.kubernetes.io/managed-by": "Helm"}}
        if namespace is not None:
            meta["namespace"] = namespace
        obj["metadata"] = meta
        out.append(obj)
    return out


def helm_template(objects):
    """A multi-document YAML stream as `helm template` prints it (`---` and `# Source:` lines)."""
    return "".join(f"---\n# Source: llm/templates/{o['metadata']['name']}.yaml\n" + yaml.safe_dump(o)
                   for o in objects)


def run(command, *argv, stdin=""):
    code, out, err = kvcache(command, *argv, "-o", "json", stdin=stdin)
    return code, json.loads(out), err


def summary(command, report):
    """What each command found, by namespace: the facts the gate turns on."""
    if command == "check":
        return sorted((f["code"], f["namespace"], f["name"]) for f in report["findings"] if f["code"] != "setting")
    if command == "bindings":
        return sorted((b["namespace"], b["name"], b["verdict"], len(b["usedBy"])) for b in report["items"])
    if command == "roles":
        return sorted((r["namespace"], r["deployment"], r["verdict"]) for r in report["items"])
    return sorted((i["namespace"], i["owner"]["name"], i["status"]) for i in report["items"])


COMMANDS = ("check", "bindings", "roles", "verify")


@pytest.mark.parametrize("command", COMMANDS)
def test_helm_template_on_stdin_with_n_is_judged_in_that_namespace(command):
    """`helm template ... | kubectl kvcache COMMAND -f - -n llm-staging`: what the same objects
    saved with `namespace: llm-staging` give, exit 1 (before: nothing found, exit 0)."""
    code, report, _ = run(command, "-f", "-", "-n", NS, stdin=helm_template(rendered()))
    want_code, want, _ = run(command, "-f", "-", "-n", NS, stdin=helm_template(rendered(NS)))
    assert want_code == 1 and summary(command, want), "the chart must fail every gate"
    assert (code, summary(command, report)) == (want_code, summary(command, want))
    assert {ns for ns, *_ in (s[1:] if command == "check" else s for s in summary(command, report))} == {NS}


def test_check_names_the_rejected_dtype_and_the_own_flag_in_the_namespace():
    code, report, _ = run("check", "-f", "-", "-n", NS, stdin=helm_template(rendered()))
    assert code == 1
    assert summary("check", report) == [("binding-dtype-rejected", NS, "sgl-fp8"), ("role-own-flag", NS, "llama-long")]


def test_a_deployment_and_its_binding_both_without_namespace_meet_in_n():
    """The cross-reference resolves: the Binding is not MISSING, its user is the deployment."""
    code, report, _ = run("bindings", "-f", "-", "-n", NS, stdin=helm_template(rendered()))
    users = {b["name"]: [(u["namespace"], u["name"]) for u in b["usedBy"]] for b in report["items"]}
    assert users == {"sgl-fp8": [(NS, "deepseek-sgl")], "chat-fp8": [(NS, "llama-long")]}
    assert "MISSING" not in {b["verdict"] for b in report["items"]}


@pytest.mark.parametrize("shape", ["list", "json-stream", "yaml-files", "directory"])
def test_every_input_shape_takes_n(shape, tmp_path):
    objects = rendered()
    if shape == "list":
        (tmp_path / "a.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        paths = ["-f", str(tmp_path / "a.json")]
    elif shape == "json-stream":
        (tmp_path / "a.json").write_text("\n".join(json.dumps(o) for o in objects))
        paths = ["-f", str(tmp_path / "a.json")]
    else:
        for i, o in enumerate(objects):
            (tmp_path / f"{i}.yaml").write_text(yaml.safe_dump(o))
        paths = ["-f", str(tmp_path)] if shape == "directory" else \
            [a for i in range(len(objects)) for a in ("-f", str(tmp_path / f"{i}.yaml"))]
    code, report, _ = run("check", *paths, "-n", NS)
    assert code == 1
    assert summary("check", report) == [("binding-dtype-rejected", NS, "sgl-fp8"), ("role-own-flag", NS, "llama-long")]


def test_an_empty_namespace_field_is_no_namespace():
    objects = rendered("")
    code, report, _ = run("roles", "-f", "-", "-n", NS, stdin=helm_template(objects))
    assert (code, summary("roles", report)) == (1, [(NS, "llama-long", "MISMATCH")])


def test_without_n_a_namespace_less_object_is_in_default():
    """No -n: every namespace of the input is read, and an object without one is in `default`
    (kubectl would name the kubeconfig context's namespace; -f reads no kubeconfig: docs/input.md)."""
    code, report, _ = run("roles", "-f", "-", stdin=helm_template(rendered()))
    assert (code, summary("roles", report)) == (1, [("default", "llama-long", "MISMATCH")])


def test_an_object_of_another_namespace_stays_out_of_n():
    """A saved object that names another namespace is not moved into -n: -n selects from the
    input as from a cluster (kubectl get -f -n refuses such a file instead: docs/input.md)."""
    objects = rendered("llm-prod")
    code, report, err = run("bindings", "-f", "-", "-n", NS, stdin=helm_template(objects))
    assert report["items"] == []
    assert code == 1, "nothing of the kinds read is in -n: nothing was checked there (issue 48, 2)"


def test_cluster_scoped_and_unread_kinds_keep_no_namespace():
    """Only the namespaced kinds the snapshot reads take -n: a KVCachePool (cluster-scoped) and
    the Setting (known by its name) are left as written; the input object is never changed."""
    from kubectl_kvcache.load.manifests import in_namespace

    pool = next(o for o in _example() if o["kind"] == "KVCachePool")
    pool = {**pool, "metadata": {"name": "h100-pool"}}
    assert in_namespace(pool, NS) is pool
    setting = {"apiVersion": "gpustack.ai/v1", "kind": "Setting", "metadata": {"name": "x"}}
    assert in_namespace(setting, NS) is setting
    binding = rendered()[0]
    moved = in_namespace(binding, NS)
    assert moved["metadata"]["namespace"] == NS and "namespace" not in binding["metadata"]
    assert in_namespace(binding, None) is binding
    other = rendered("llm-prod")[0]
    assert in_namespace(other, NS) is other


@pytest.mark.parametrize("fmt,failed", [("markdown", lambda out: "Verdict: FAILED" in out.replace("**", "")),
                                        ("junit", lambda out: 'failures="0"' not in out.split("<testsuite", 1)[0]),
                                        ("sarif", lambda out: json.loads(out)["runs"][0]["invocations"][0]["exitCode"] == 1)])
def test_every_report_of_the_chart_fails(fmt, failed):
    for command in ("check",) if fmt == "sarif" else ("check", "bindings", "roles"):     # sarif: check's
        code, out, _ = kvcache(command, "-f", "-", "-n", NS, "-o", fmt, stdin=helm_template(rendered()))
        assert code == 1 and failed(out), (command, fmt, out[:400])


# -- issue 48, 2: nothing of ours in -n is no pass, in any format ------------------------------

def _every_format():
    from kubectl_kvcache.render import formats

    return [(c, f) for c in COMMANDS for f in formats.offered(c)]


@pytest.mark.parametrize("command,fmt", _every_format())
def test_a_chart_rendered_into_another_namespace_fails_every_gate_in_every_format(command, fmt):
    """The chart names `llm-prod`; the gate asked about `llm-staging`: nothing was read there.
    Every format's verdict is FAILED with exit code 1 (before: PASSED, exit 0)."""
    code, out, err = kvcache(command, "-f", "-", "-n", NS, "-o", option(fmt), stdin=helm_template(rendered("llm-prod")))
    assert code == 1, (out, err)
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1), (fmt, out[:600], err)
    assert "PASSED" not in out
    words = "pool-attached engine pods" if command == "verify" else \
        "KVCachePoolBindings, pool-attached ModelDeployments or injection opt-ins"
    message = f"no {words} found in the input (namespace {NS}): nothing was verified there"
    if fmt in ("json", "yaml"):
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert [(r["code"], r["message"], r["fails"]) for r in data["verdict"]["reasons"]] == [
            ("nothing-found", message, True)]
    elif fmt in ("openmetrics", "prometheus"):      # a label holds no sentence: the reason is a failing finding
        import metrics_text

        assert metrics_text.value(fmt, out, "kubectl_kvcache_findings", code="nothing-found", failed="true") == 1
    elif fmt in ("table", "wide", "describe", "csv") or formats.get(fmt).kind == formats.LIST:   # stderr's line
        assert f"verdict: FAILED (exit code 1): {message}" in err.splitlines()
    else:
        assert message in out


def test_strict_adds_warnings_only():
    """--strict keeps its one meaning: the scope not read fails without it, and with it the same."""
    stdin = helm_template(rendered("llm-prod"))
    plain = kvcache("check", "-f", "-", "-n", NS, "-o", "json", stdin=stdin)
    strict = kvcache("check", "-f", "-", "-n", NS, "-o", "json", "--strict", stdin=stdin)
    assert plain[0] == strict[0] == 1
    assert json.loads(plain[1])["verdict"]["reasons"] == json.loads(strict[1])["verdict"]["reasons"]
