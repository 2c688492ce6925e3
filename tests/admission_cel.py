"""The generated policies' CEL, evaluated by a real CEL implementation (cel-python's celpy,
pure Python, from PyPI): the literals (`sets`, `releases`) and the validation expressions as
written, with `variables` given as the API server would compute them. celpy has no Kubernetes
strings extension (lowerAscii, join, substring), so the expressions using it (the engine name,
the version, the message) are evaluated only through the real API server
(tests/cluster/test_admission_cluster.py)."""

import json

import celpy
from celpy import celtypes

from kubectl_kvcache import engine
from kubectl_kvcache.judge import admission
from objects import as_list
from runcli import kvcache

ENV = celpy.Environment()


def _cel(**values):
    """`variables` as the API server hands them to an expression: a CEL map."""
    return celtypes.MapType({celtypes.StringType(k): v if isinstance(v, (celtypes.ListType, celtypes.MapType))
                             else celpy.json_to_cel(v) for k, v in values.items()})


def evaluate(expression, **activation):
    return ENV.program(ENV.compile(expression)).evaluate(activation)


def generated(tmp_path, *objects, args=("-A",)):
    path = tmp_path / "objects.json"
    path.write_text(json.dumps(as_list(*objects)))
    code, out, err = kvcache("admission", *args, "-f", str(path), "-o", "json")
    assert code == 0, err
    return json.loads(out)


def policy(document, name):
    return next(i for i in document["items"] if i["kind"] == "ValidatingAdmissionPolicy" and i["metadata"]["name"] == name)


def variables(pol):
    return {v["name"]: v["expression"] for v in pol["spec"]["variables"]}


def spellings():
    """Every spelling any release accepts, and ones none does (another engine's, case, a near miss)."""
    found = {s for e in engine.ENGINES for r, _ in engine.known_releases(e) for s in admission.accepted(e, r)}
    return sorted(found | {"bf16", "fp8", "FP8", "float16", "fp8-e4m3", "int8", ""})


def releases():
    return [(e, r) for e in engine.ENGINES for r, _ in engine.known_releases(e)]


def decisions_agree(tmp_path, chosen, objects):
    """Each (engine, release, dtype) of `chosen` releases: the CEL of both policies decides as the
    engine data does (dtype in the release's accepted spellings). Returns the number checked."""
    doc = generated(tmp_path, *objects)
    bv, dv = variables(policy(doc, admission.BINDINGS_POLICY)), variables(policy(doc, admission.DEPLOYMENTS_POLICY))
    sets, index = evaluate(bv["sets"]), evaluate(bv["releases"])
    assert evaluate(dv["sets"]) == sets and evaluate(dv["releases"]) == index
    deny = policy(doc, admission.DEPLOYMENTS_POLICY)["spec"]["validations"][0]["expression"]
    deny_program = ENV.program(ENV.compile(deny))
    rejecting = ENV.program(ENV.compile(bv["rejecting"]))
    checked = 0
    for e, r in chosen:
        for dtype in spellings():
            want = dtype in admission.accepted(e, r)
            want_profile = engine.profile(e, engine.parse_version(r))
            assert want == (want_profile.has_flag and dtype in want_profile.accepted)
            admitted = deny_program.evaluate({"variables": _cel(
                judged=True, dtype=dtype, engine=e, version=r, sets=sets, releases=index)})
            refused_by = rejecting.evaluate({"variables": _cel(
                engines=celpy.json_to_cel([[e, r, "team/x"]]), dtype=dtype, sets=sets, releases=index)})
            assert bool(admitted) == want, (e, r, dtype)
            assert (len(refused_by) == 0) == want, (e, r, dtype)
            checked += 1
    return checked
