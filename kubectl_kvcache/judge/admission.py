"""`admission`: a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, CEL) that refuses at
the gate what check would report as a dtype the engine rejects: a KVCachePoolBinding whose
spec.domain.dtype an engine release on its pool rejects, and a ModelDeployment whose
spec.engine.version rejects its Binding's dtype.

CEL sees only the object under admission, so what it cannot see is written into the policy when
it is generated: which engine releases run on each pool (and use each Binding), and each Binding's
dtype, read from the snapshot the command read (-A/-n/-f, as check reads them). The accepted
spellings come from the one home check uses (engine.profile(...).accepted, none where the release
has no --kv-cache-dtype), compressed to a list of distinct spelling sets and a release -> set
index. Pure: objects in, the policy's objects out (docs/admission.md says what it cannot express).
"""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.judge.checks.engines import role_engine
from kubectl_kvcache.operator import api

POLICY_API = "admissionregistration.k8s.io/v1"
BINDINGS_POLICY = "kvcache-dtype-bindings"
DEPLOYMENTS_POLICY = "kvcache-dtype-deployments"
ACTIONS = ("Deny", "Warn", "Audit")
LABELS = {"app.kubernetes.io/managed-by": "kubectl-kvcache"}


def accepted(engine: str, release: str) -> tuple[str, ...]:
    """The spellings `release` accepts, as check and `engines` read them: none when the release
    has no --kv-cache-dtype (the engine refuses the unknown argument)."""
    prof = model.profile(engine, model.parse_version(release))
    return tuple(sorted(prof.accepted)) if prof.has_flag else ()


def index():
    """(sets, releases): the distinct spelling sets, and {engine: {release: index in sets}} for
    every release the engine data holds (built in and added)."""
    sets: list[tuple[str, ...]] = []
    where: dict[tuple[str, ...], int] = {}
    releases: dict[str, dict[str, int]] = {}
    for engine in model.ENGINES:
        for release, _ in model.known_releases(engine):
            spellings = accepted(engine, release)
            if spellings not in where:
                where[spellings] = len(sets)
                sets.append(spellings)
            releases.setdefault(engine, {})[release] = where[spellings]
    return sets, releases


def _entries(snapshot, known):
    """(on_pool, users, dtypes): the engine releases [engine, release, deployment] handed each
    pool's and each Binding's dtype (roles the operator renders the dtype for: no command), and
    each Binding's dtype by namespace/name. A release the data does not hold is left out."""
    on_pool: dict[str, set] = {}
    users: dict[str, set] = {}
    dtypes = {f"{b.namespace}/{b.name}": b.dtype for b in snapshot.bindings.values() if b.dtype}
    for md in snapshot.deployments.values():
        if not md.binding:
            continue
        key = f"{md.namespace}/{md.binding}"
        binding = snapshot.bindings.get((md.namespace, md.binding))
        for i, role in enumerate(md.roles):
            if role.command:            # a take-over role: the operator renders no dtype for it
                continue
            at = role_engine(md, i, role)
            if at is None or at.span or str(at.version) not in known.get(at.engine, {}):
                continue                # no release the data holds: left to check
            entry = (at.engine, str(at.version), f"{md.namespace}/{md.name}")
            users.setdefault(key, set()).add(entry)
            if binding is not None and binding.pool:
                on_pool.setdefault(binding.pool, set()).add(entry)
    return on_pool, users, dtypes


def _q(text: str) -> str:
    """A CEL string literal, single-quoted: a quote, a backslash and a control character (a
    dtype read from a file may hold anything) escaped as CEL reads them."""
    out = []
    for ch in str(text):
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def _list(items) -> str:
    return "[" + ", ".join(items) + "]"


def _map(pairs) -> str:
    return "{" + ", ".join(f"{_q(k)}: {v}" for k, v in pairs) + "}"


def _sets(sets) -> str:
    return _list(_list(_q(s) for s in spellings) for spellings in sets)


def _releases(releases) -> str:
    return _map((e, _map((r, str(i)) for r, i in rows.items())) for e, rows in releases.items())


def _engine_lists(by_key) -> str:
    return _map((k, _list(_list(_q(x) for x in entry) for entry in sorted(v))) for k, v in sorted(by_key.items()))


_NAMES = _map((e, _q(model.DISPLAY_NAMES[e])) for e in model.ENGINES)
_SPELLINGS = ("(size(variables.sets[{i}]) == 0 ? 'none (it has no --kv-cache-dtype)' : "
              "variables.sets[{i}].join(', '))")


def _bindings_policy(sets, releases, on_pool, users):
    first = "variables.rejecting[0]"
    i = f"variables.releases[{first}[0]][{first}[1]]"
    message = ("'spec.domain.dtype ' + variables.dtype + ' is rejected by ' + variables.names[" + first + "[0]] + ' '"
               " + " + first + "[1] + ' (ModelDeployment ' + " + first + "[2] + ' on pool ' + object.spec.poolRef.name"
               " + '), which accepts: ' + " + _SPELLINGS.format(i=i)
               + " + (size(variables.rejecting) > 1 ? ' (and ' + string(size(variables.rejecting) - 1) + "
                 "' more engine release(s) reject it)' : '')")
    return _policy(BINDINGS_POLICY, api.BINDING.plural, ["CREATE"], [], [
        ("sets", _sets(sets)),
        ("releases", _releases(releases)),
        ("names", _NAMES),
        ("pools", _engine_lists(on_pool)),
        ("users", _engine_lists(users)),
        ("dtype", "object.spec.domain.dtype"),
        ("engines", "(object.spec.poolRef.name in variables.pools ? variables.pools[object.spec.poolRef.name] : [])"
                    " + (request.namespace + '/' + object.metadata.name in variables.users ? "
                    "variables.users[request.namespace + '/' + object.metadata.name] : [])"),
        ("rejecting", "variables.engines.filter(e, !(variables.dtype in variables.sets[variables.releases[e[0]][e[1]]]))"),
    ], "size(variables.rejecting) == 0", message)


def _deployments_policy(sets, releases, dtypes):
    i = "variables.releases[variables.engine][variables.version]"
    message = ("'spec.engine.version ' + object.spec.engine.version + ': ' + variables.names[variables.engine] + ' '"
               " + variables.version + ' rejects --kv-cache-dtype ' + variables.dtype + ' of KVCachePoolBinding '"
               " + variables.binding + ', it accepts: ' + " + _SPELLINGS.format(i=i))
    conditions = [
        ("attached", "has(object.spec.kvCache) && object.spec.kvCache != null && has(object.spec.kvCache.poolRef) "
                     "&& has(object.spec.kvCache.poolRef.name) && object.spec.kvCache.poolRef.name != ''"),
        # an update is judged only when it changes the engine: a finalizer removed or a label
        # added to a deployment stored before the policy is never refused
        ("engine-set", "request.operation == 'CREATE' || oldObject.spec.engine != object.spec.engine"),
    ]
    return _policy(DEPLOYMENTS_POLICY, api.MODEL_DEPLOYMENT.plural, ["CREATE", "UPDATE"], conditions, [
        ("sets", _sets(sets)),
        ("releases", _releases(releases)),
        ("names", _NAMES),
        ("dtypes", _map((k, _q(v)) for k, v in sorted(dtypes.items()))),
        ("binding", "request.namespace + '/' + object.spec.kvCache.poolRef.name"),
        ("dtype", "variables.binding in variables.dtypes ? variables.dtypes[variables.binding] : ''"),
        ("engine", "object.spec.engine.name.lowerAscii()"),
        ("version", "!has(object.spec.engine.version) ? '' : object.spec.engine.version.startsWith('v') ? "
                    "object.spec.engine.version.substring(1) : object.spec.engine.version"),
        # roles the operator runs its synthesized image for (no image of their own) and renders the dtype for
        ("synthesized", "object.spec.roles.exists(r, (!has(r.image) || r.image == '') && !has(r.command))"),
        ("judged", "variables.dtype != '' && variables.synthesized && variables.engine in variables.releases "
                   "&& variables.version in variables.releases[variables.engine]"),
    ], f"!variables.judged || variables.dtype in variables.sets[{i}]", message)


def _policy(name, plural, operations, conditions, variables, expression, message):
    return {
        "apiVersion": POLICY_API, "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            # an expression error admits: the policy never refuses for a reason it cannot name
            "failurePolicy": "Ignore",
            # versions listed, not "*": kube-controller-manager's type checker gives up on a wildcard
            # (k8s.io/apiserver v0.37.2 policy/validating/typechecking.go, extractVersions); with
            # matchPolicy Equivalent a request at another version of the resource is still judged
            "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": [{
                "apiGroups": [api.GROUP], "apiVersions": list(api.VERSIONS), "operations": operations,
                "resources": [plural]}]},
            **({"matchConditions": [{"name": n, "expression": e} for n, e in conditions]} if conditions else {}),
            "variables": [{"name": n, "expression": e} for n, e in variables],
            "validations": [{"expression": expression, "messageExpression": message, "reason": "Invalid"}],
        },
    }


def _binding(policy, actions, namespace):
    spec: dict = {"policyName": policy, "validationActions": list(actions)}
    if namespace is not None:   # generated from one namespace: it judges only that one
        spec["matchResources"] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    return {"apiVersion": POLICY_API, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": policy, "labels": dict(LABELS)}, "spec": spec}


def generate(snapshot, actions=("Deny",), namespace=None):
    """The policies and their bindings, as a v1 List `kubectl apply -f -` takes. Deterministic:
    the same snapshot and engine data give the same bytes."""
    sets, releases = index()
    on_pool, users, dtypes = _entries(snapshot, releases)
    items = [_bindings_policy(sets, releases, on_pool, users), _binding(BINDINGS_POLICY, actions, namespace),
             _deployments_policy(sets, releases, dtypes), _binding(DEPLOYMENTS_POLICY, actions, namespace)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def expressions(policy) -> list[str]:
    """Every CEL expression of one generated policy (its rule count is their number)."""
    spec = policy["spec"]
    return ([c["expression"] for c in spec.get("matchConditions", ())] + [v["expression"] for v in spec["variables"]]
            + [x for v in spec["validations"] for x in (v["expression"], v["messageExpression"])])
