"""Tables that awk reads as it reads kubectl's: every command's table and -o wide (with and
without headers, with -n and -A) piped through the real awk, on examples/cluster.json and on
generated inputs. Each field awk splits out is checked against the command's own -o json (not
against the printer's code), so a cell with a space, a cut cell or a misplaced column fails.

The rules (docs/input.md "Terminal output"): no cell but the last free-text one holds a space;
a space in cluster data is shown as \\x20 (an annotation may hold one); nothing is ever cut."""

import io
import json
import os
import random
import shutil
import subprocess

import objects as o
import pytest
import yaml

from kubectl_kvcache import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
AWK = shutil.which("awk")
NONE = "<none>"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    assert code in (0, 1), err.getvalue()
    return out.getvalue()


def awk_fields(text):
    """Each line's fields as the real awk splits them (default FS: runs of blanks)."""
    assert AWK, "awk is part of every machine kind this runs on"
    p = subprocess.run([AWK, '{ for (i = 1; i <= NF; i++) printf "%s\\037", $i; print "" }'], input=text,
                       capture_output=True, text=True, check=True)
    return [line.split("\x1f")[:-1] for line in p.stdout.splitlines()]


def word(value):
    """A non-free-text cell, as the tables promise it: <none> for nothing, \\x20 for a space."""
    if value is None or value == "":
        return NONE
    return str(value).replace(" ", "\\x20")


def words(value):
    return (str(value) if value not in (None, "") else NONE).split()


# -- what each command's columns hold, from its -o json -------------------------------------------

def _observed(seen):
    """OBSERVED from -o json's `observed`: the dtype (its torch dtype); - nothing read; <conflict>
    when its reports disagree; <not-read> when a report was seen and not read."""
    if seen is None:
        return "-"
    if seen.get("conflict"):
        return "<conflict>"
    if seen["dtype"] is None and seen["resolved"] is None:
        return "<not-read>"
    text = seen["dtype"] or seen["resolved"]
    if seen["dtype"] and seen["resolved"]:
        text += f"({seen['resolved'].removeprefix('torch.')})"
    return text


def _gpu(gpu):
    """GPU: the Node's GPU as json says it (product or family or vendor, then /major.minor)."""
    if gpu is None:
        return None
    name = gpu["product"] or gpu["family"] or gpu["vendor"] or "<unlabelled>"
    return f"{name}/{gpu['computeCapability']}" if gpu["computeCapability"] else name


def verify_rows(data, wide):
    rows = []
    for i in data["items"]:
        pod = i["pod"] if i["pod"] is not None else f"<no-pod:{i['owner']['name']}>"
        cells = [i["namespace"], pod, i["binding"], i["expected"], i["effective"], i["status"]]
        if wide:
            state = i["state"] or {}
            phase = None
            if state:
                phase = "Terminating" if state["terminating"] else (state["waiting"] or state["phase"] or "Unknown")
            owner = f"{i['owner']['kind'].lower()}/{i['owner']['name']}" if i["owner"] else None
            ready = None if state.get("ready") is None else str(state["ready"]).lower()
            cells += [i["role"], i["engine"], i["engineVersion"], i["container"], owner, phase, ready,
                      state.get("restarts"), state.get("lastExitCode"), i.get("node"), _gpu(i.get("gpu")),
                      _observed(i.get("observed"))]
            cause = i.get("cause")   # free text, last: `code: subject`, then the engine's own crash line
            said = (i.get("exitCause") or {}).get("line")
            text = "; ".join(([f"{cause['code']}: {cause['subject']}"] if cause else []) + ([said] if said else []))
            rows.append(([word(c) for c in cells], words(text or None)))
            continue
        rows.append(([word(c) for c in cells], []))
    return rows


def check_rows(data, wide):
    return [([word(f["namespace"]), f["severity"], f["code"], f"{f['kind'].lower()}/{f['name']}"],
             words(f["message"]) + (words(f["fix"]) if wide else [])) for f in data["findings"]]


VERDICTS = (("REJECTED", "REJECTED"), ("WARNING auto", "AUTO"), ("DOMAIN CLAIMED", "DOMAIN-CLAIMED"),
            ("UNUSED", "UNUSED"), ("UNKNOWN", "UNKNOWN"), ("MISSING", "MISSING"))


def bindings_rows(data, wide):
    rows = []
    for b in data["items"]:
        engines = ",".join(f"{e['engine']}:{e['version']}" for e in b["engines"]) or None
        verdict = ",".join(short for long, short in VERDICTS if long in b["verdict"]) or b["verdict"]
        cells = [b["namespace"], b["name"], b["dtype"], engines, len(b["usedBy"]), verdict]
        if wide:
            users = ",".join(u["name"] if u["kind"] == "ModelDeployment" else f"{u['kind']}/{u['name']}"
                             for u in b["usedBy"]) or None
            cells += [b["pool"], b["domain"], b["suggestedDtype"], users]
        rows.append(([word(c) for c in cells], []))
    return rows


def roles_rows(data, wide):
    rows = []
    for r in data["items"]:
        after = "auto" if r["afterUpgrade"] == "auto (engine default)" else r["afterUpgrade"]
        cells = [r["namespace"], r["deployment"], r["role"], r["dtype"], after, r["verdict"]]
        text = words(r["today"])
        if wide:
            engine = f"{r['engine']}:{r['engineVersion']}" if r["engine"] else None
            cells += [r["type"], engine, r["binding"]]
            flags = "; ".join((f["text"] if "=" in f["text"] or f.get("value") is None else f"{f['text']} {f['value']}")
                              + f" ({f['path'].split('.', 1)[1]})" for f in r["flags"])
            text += words(flags or ("none in its command" if r["type"] == "take-over" else None))
        rows.append(([word(c) for c in cells], text))
    return rows


ROWS = {"verify": verify_rows, "check": check_rows, "bindings": bindings_rows, "roles": roles_rows}


def check_awk(command, scope, fmt):
    """The table of `command` (with and without headers) split by awk, against its -o json."""
    data = json.loads(run(command, *scope, "-o", "json"))
    expected = ROWS[command](data, fmt == "wide")
    if "-A" not in scope and "-n" in scope:         # one namespace: no NAMESPACE column, as kubectl
        expected = [(cells[1:], text) for cells, text in expected]
    for headers in (False, True):
        out = run(command, *scope, "-o", fmt, *([] if headers else ["--no-headers"]))
        lines = out.splitlines()
        got = awk_fields(out)
        if headers and got:
            header, got, lines = got[0], got[1:], lines[1:]
            assert header[0] == ("NAMESPACE" if "-A" in scope or "-n" not in scope else header[0])
        assert len(got) == len(expected), out
        for fields, (cells, text), line in zip(got, expected, lines):
            assert fields == cells + text, line
            assert "\u2026" not in line          # never cut
    return len(expected)


@pytest.mark.parametrize("command", sorted(ROWS))
@pytest.mark.parametrize("fmt", ["table", "wide"])
@pytest.mark.parametrize("scope", [["-A"], ["-n", "llm-prod"], ["-n", "llm-research"], []])
def test_the_example_through_awk(command, fmt, scope):
    check_awk(command, [*scope, "-f", EXAMPLE], fmt)


def test_the_issue_examples_through_awk():
    """bindings' last field is the verdict (it was `0.5.18` of `REJECTED by sglang 0.5.18`); verify's
    second is a Pod (it was `<no` of `<no pod: ...>`)."""
    out = run("bindings", "-A", "-f", EXAMPLE, "--no-headers")
    assert [f[-1] for f in awk_fields(out)] == ["OK", "AUTO,UNUSED", "OK", "REJECTED", "UNUSED", "OK", "OK"]


# -- generated inputs -----------------------------------------------------------------------

DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2", "bf16", "bfloat16", "auto", "float16", "int8")
ENGINES = (("vLLM", "0.29.0"), ("vLLM", "0.10.2"), ("SGLang", "0.5.18"), ("SGLang", "0.5.3"))


def _name(rng, stem):
    return f"{stem}-{rng.choice(['a', 'bb', 'long-name-x', 'q'])}{rng.randrange(100)}"


def generated(seed):
    """A random cluster from the shared builders: Bindings of every kind of dtype, deployments
    of both engines with missing replicas and roles passing the flag, injected Pods whose role
    annotation holds spaces (cluster data a cell must not split on)."""
    rng = random.Random(seed)
    objs, namespaces = [o.setting("true")], rng.sample(["team", "ml-prod", "x"], rng.randint(1, 2))
    for ns in namespaces:
        bindings = [_name(rng, "kvb") for _ in range(rng.randint(1, 3))]
        for i, b in enumerate(dict.fromkeys(bindings)):
            objs.append(o.binding(b, rng.choice(DTYPES), ns=ns, domain=f"d{i}"))
        for d in range(rng.randint(1, 3)):
            md = f"md{d}-{rng.randrange(1000)}"
            engine, version = rng.choice(ENGINES)
            argv = o.vllm_argv if engine == "vLLM" else o.sglang_argv
            roles = [o.role(r, replicas=rng.randint(1, 3),
                            extra_args=["--kv-cache-dtype", rng.choice(DTYPES)] if rng.random() < 0.3 else None)
                     for r in rng.sample(["server", "prefill", "decode"], rng.randint(1, 2))]
            binding = rng.choice(bindings + ["gone"])
            objs.append(o.deployment(md, engine=engine, version=version, binding_name=binding, ns=ns, roles=roles))
            for r in roles:
                for k in range(rng.randint(0, r["replicas"])):
                    dtype = rng.choice(DTYPES + (None,))
                    objs.append(o.md_pod(f"{md}-{r['name']}-{k}", md, argv(dtype), ns=ns, role=r["name"],
                                         exit_code=2 if rng.random() < 0.2 else None))
        for p in range(rng.randint(0, 2)):
            objs.append(o.injected_pod(f"nb-{p}-{rng.randrange(1000)}", rng.choice(bindings), ns=ns,
                                       extra_ann={"kvcache.gpustack.ai/role": "my role  x"},
                                       containers=[o.container("main", command=["vllm", "serve", "m"],
                                                               args=["--kv-cache-dtype", rng.choice(DTYPES)])]))
    return objs, namespaces


@pytest.mark.parametrize("seed", range(12))
def test_generated_inputs_through_awk(tmp_path, seed):
    objs, namespaces = generated(seed)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    rows = 0
    for command in sorted(ROWS):
        for fmt in ("table", "wide"):
            for scope in (["-A"], ["-n", namespaces[0]]):
                rows += check_awk(command, [*scope, "-f", str(path)], fmt)
    assert rows > 0


def test_a_space_in_cluster_data_is_one_field():
    objs = [o.setting("true"), o.binding("b1", "fp8"),
            o.injected_pod("nb", "b1", extra_ann={"kvcache.gpustack.ai/role": "my role"},
                           containers=[o.container("main", command=["vllm", "serve", "m"], args=[])])]
    out = io.StringIO()
    from kubectl_kvcache.judge import verify as judge
    from kubectl_kvcache.load import manifests
    from kubectl_kvcache.load.scope import Scope
    from kubectl_kvcache.render import show, verify as view
    from kubectl_kvcache.render.output import Output

    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(yaml.safe_dump_all(objs))
    try:
        report = judge.verify(manifests.load_files([f.name], Scope()))
    finally:
        os.unlink(f.name)
    show(view.VIEW, report, Output("wide", headers=False, namespaces=False), out)
    fields, = awk_fields(out.getvalue())
    assert fields[5] == "my\\x20role"          # the ROLE column: one field, the space shown as \x20


@pytest.mark.parametrize("ns", ["llm-prod", "llm-research"])
@pytest.mark.parametrize("command", ["verify", "bindings", "roles", "check"])
def test_the_default_table_fits_80_columns_with_a_namespace(command, ns):
    """Before: check's MESSAGE cut to `dtype 'fp8'…` and still ~130 wide; bindings' ENGINES cut to
    `sglang 0.5.…`. Now every table of the example fits 80 columns with -n, nothing cut; check's
    MESSAGE, free text, is last and whole (the terminal folds it), its columns before it fit."""
    out = run(command, "-n", ns, "-f", EXAMPLE)
    lines = out.splitlines()
    if not lines:
        return                          # no roles in llm-research: nothing printed, as kubectl
    if command == "check":
        # SEVERITY (11) + CODE (25) + OBJECT: 48 for the Setting's row, whose name alone is 37
        # characters (`setting/model-deployment-kv-cache-dtype-owned`); every other OBJECT is <= 34
        start = lines[0].index("MESSAGE")
        assert start <= 11 + 25 + len("setting/model-deployment-kv-cache-dtype-owned") + 3
        assert all(len(line[:start].rstrip()) < start for line in lines)
        data = json.loads(run(command, "-n", ns, "-f", EXAMPLE, "-o", "json"))
        assert [line[start:] for line in lines[1:]] == [f["message"] for f in data["findings"]]
    else:
        assert max(len(line) for line in lines) <= 80, out


def test_watch_prints_rows_only_so_describe_is_refused():
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["verify", "--watch", "-o", "describe"], stdin=io.StringIO(""), stdout=out, stderr=err) == 2
    assert err.getvalue().startswith("error: --watch prints rows as they come: use -o table or -o wide or -o json or -o yaml")


@pytest.mark.parametrize("command,column", [("verify", "EFFECTIVE"), ("check", "F_MESSAGE"), ("bindings", "B_DTYPE"),
                                            ("roles", "R_AFTER")])
def test_a_column_renamed_in_its_one_line_is_renamed_everywhere_people_read_it(monkeypatch, command, column):
    """Issue 40: renaming a column is one code line: the table, -o wide, -o csv and -o describe follow."""
    from kubectl_kvcache.render import checks, verify

    col = getattr(verify if command == "verify" else checks, column)
    old = col.label
    monkeypatch.setattr(col, "header", "renamed here")
    for fmt, shown, gone in (("table", "RENAMED HERE", old.upper()), ("wide", "RENAMED HERE", old.upper()),
                             ("csv", "RENAMED HERE", old.upper()), ("describe", "Renamed here:", old + ":")):
        out = run(command, "-A", "-f", EXAMPLE, "-o", fmt)
        assert shown in out and gone not in out, fmt
