"""The kubectl printers' parity tier (issue 48 item 9): the REAL kubectl of the pinned release
prints the plugin's own -o json output with -o jsonpath/jsonpath-file/custom-columns/
custom-columns-file/name, --sort-by, --no-headers and --allow-missing-template-keys, and the
plugin's same options must print the same bytes.

How kubectl is made to print a local document with `kubectl get`'s printers: a loopback API
server (tests/fakeserver.py's Fake, raw) serves discovery for the kinds the rows name (v1 Pod,
apps/v1 workloads, the operator's kinds, the Setting) and one list resource,
`reports.kubectl-kvcache`, whose list answer is the plugin's document (check's findings as
`items`); `kubectl get reports.kubectl-kvcache -o ...` then runs printGeneric exactly as on any
cluster. (`kubectl label --local -f` prints object by object, never a List, and `create
--dry-run=client` needs the server's OpenAPI: neither is `kubectl get`.)

Cases are generated from the documents' own fields by a seeded generator (`cases`): each row's
leaf paths in every template form (fields, `[*]`, ranges with text, slices, indexes in and out of
range, filters `==` `!=` `<` `>` on strings and numbers, `exists`, recursive descent on a unique
key, whole objects and lists printed, unions, quoted keys), the custom columns made of those paths
(missing ones, arrays, the file forms), -o name, --sort-by on every leaf (strings, numbers,
missing in some rows, nowhere), and bad templates and specs. Compared: kubectl's exit 0 is the
plugin's verdict exit code (0 or 1) with stdout byte-equal; kubectl's exit 1 is the plugin's exit 2
with empty stdout and one `error:` line equal to kubectl's first error line (its `error: ` prefix
added when kubectl has none, and the object dump kubectl appends to a jsonpath execution error
left out)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess

from fakeserver import Fake
from runcli import kvcache

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "examples", "cluster.json")
COMMANDS = ("verify", "check", "bindings", "roles")
GROUP, VERSION = "kubectl-kvcache", "v1alpha1"
_DUMP = " Printing more information for debugging the template:"


SCOPE = ("-A", "-f", EXAMPLE)


def document(command: str, scope=SCOPE) -> tuple[dict, int]:
    """The plugin's -o json document of `command` on the example, and its exit code."""
    code, out, err = kvcache(command, *scope, "-o", "json")
    assert code in (0, 1), err
    return json.loads(out), code


def rows(doc: dict) -> list:
    return doc["findings"] if doc.get("kind") == "CheckReport" else doc["items"]


def _plural(kind: str) -> str:
    return kind.lower() + ("es" if kind.endswith("s") else "s")


def discovery(items) -> dict:
    """Discovery (legacy form) for every apiVersion/kind the rows carry, and the reports list."""
    groups: dict[str, set] = {}
    for item in items:
        groups.setdefault(item["apiVersion"], set()).add(item["kind"])
    groups.setdefault(f"{GROUP}/{VERSION}", set())
    paths: dict = {"/api": {"kind": "APIVersions", "versions": ["v1"]}}
    group_list = []
    for api_version, kinds in sorted(groups.items()):
        resources = [{"name": _plural(k), "singularName": k.lower(), "namespaced": True, "kind": k,
                      "verbs": ["get", "list"]} for k in sorted(kinds)]
        if api_version == f"{GROUP}/{VERSION}":
            resources.append({"name": "reports", "singularName": "report", "namespaced": False, "kind": "Report",
                              "verbs": ["get", "list"]})
        if "/" in api_version:
            group, version = api_version.split("/")
            gv = {"groupVersion": api_version, "version": version}
            group_list.append({"name": group, "versions": [gv], "preferredVersion": gv})
            paths[f"/apis/{api_version}"] = {"kind": "APIResourceList", "groupVersion": api_version,
                                            "resources": resources}
        else:
            paths[f"/api/{api_version}"] = {"kind": "APIResourceList", "groupVersion": api_version,
                                           "resources": resources}
    paths.setdefault("/api/v1", {"kind": "APIResourceList", "groupVersion": "v1", "resources": []})
    paths["/apis"] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": group_list}
    return paths


class Kubectl:
    """The pinned kubectl against a loopback server whose `reports` list is `doc`'s rows."""

    def __init__(self, binary: str, doc: dict, folder: str):
        self.binary = binary
        listing = {key: value for key, value in doc.items() if key != "findings"}
        listing["items"] = rows(doc)
        paths = discovery(listing["items"])

        def route(req):
            if req["path"] in paths:
                return 200, {}, paths[req["path"]]
            if req["path"] == f"/apis/{GROUP}/{VERSION}/reports":
                return 200, {}, listing
            return 404, {}, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                             "code": 404, "message": "not found"}

        self.fake = Fake(route)
        self.kubeconfig = os.path.join(folder, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                       "clusters": [{"name": "fake", "cluster": {"server": self.fake.url}}],
                       "users": [{"name": "u", "user": {}}],
                       "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}, f)
        self.home = folder

    def run(self, options) -> tuple[int, bytes, bytes]:
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home, "KUBECONFIG": self.kubeconfig}
        done = subprocess.run([self.binary, "get", f"reports.{VERSION}.{GROUP}", *options], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return done.returncode, done.stdout, done.stderr

    def close(self):
        self.fake.close()


# -- the generator ----------------------------------------------------------------------------

def leaves(value, path=""):
    """(path, value) of every scalar under `value` (lists through their first element, as [0])."""
    if isinstance(value, dict):
        for key, sub in value.items():
            if key.replace("_", "").isalnum():
                yield from leaves(sub, f"{path}.{key}")
    elif isinstance(value, list):
        if value:
            yield from leaves(value[0], f"{path}[0]")
    else:
        yield path, value


def _literal(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and '"' not in value and "\\" not in value and ")" not in value:
        return '"' + value + '"'
    return None


BAD_TEMPLATES = ["{.items[*].metadata.name", "{.items[}", "{.items[x]}", "{#}", '{"abc}', "{....a}",
                 "{end}", "{range .items[*]}{.kind}{end}{end}", "{.items[0]..}", "{.items[?(@.kind)}",
                 "{.items[*].metadata.name}}{", "{.items[1:x]}", "{@.kind[}", "{.items[?(@.kind==\"Pod\"]}",
                 "", "{.items[99].kind}", "{.items[-99].kind}", "{.kind[0]}", "{.items[?(@.metadata)].x.y}",
                 "{.items[?(@.metadata.name<3)]}", "{.items[?(@.metadata==\"x\")]}", "{true}",
                 "{.items[*].metadata.name[*]}"]
BAD_COLUMNS = ["NAME", "", "A:{.x}{.y}", "A:.items[", "A:.metadata.name,B", "A:.metadata.name,:", "A:{range}"]


def cases(doc: dict, seed: int, count: int) -> list[list[str]]:
    """`count` option lists for `doc`, drawn with `seed` from its rows' own leaf paths."""
    rng = random.Random(seed)
    items = rows(doc)
    paths: dict[str, list] = {}
    for item in items:
        for path, value in leaves(item):
            paths.setdefault(path, []).append(value)
    names = sorted(paths)
    scalar = [p for p in names if "[0]" not in p]
    numeric = [p for p in scalar if any(isinstance(v, int) and not isinstance(v, bool) for v in paths[p])]
    objects = sorted({k for item in items for k, v in item.items() if isinstance(v, (dict, list))})
    n = len(items)
    out: list[list[str]] = []

    def pick(pool):
        return rng.choice(pool) if pool else ".metadata.name"

    forms = []

    def form(f):
        forms.append(f)
        return f

    @form
    def star():
        return ["-o", f"jsonpath={{.items[*]{pick(scalar)}}}"]

    @form
    def ranged():
        a, b = pick(scalar), pick(names)
        sep = rng.choice(['{"\\t"}', "{\" \"}", ",", "{'|'}", "\t"])
        return ["-o", f'jsonpath={{range .items[*]}}{{{a}}}{sep}{{{b}}}{{"\\n"}}{{end}}']

    @form
    def index():
        i = rng.randint(-n - 1, n)
        return ["-o", f"jsonpath={{.items[{i}]{pick(names)}}}"]

    @form
    def sliced():
        a, b = rng.randint(-n, n), rng.randint(-n, n + 1)
        return ["-o", f"jsonpath={{.items[{a}:{b}].metadata.name}}"]

    @form
    def filtered():
        path = pick(scalar)
        values = [v for v in paths.get(path, []) if _literal(v) is not None]
        if not values:
            return ["-o", f"jsonpath={{.items[?(@{path})].metadata.name}}"]
        op = rng.choice(["==", "!=", "==", "<", ">"]) if path in numeric else rng.choice(["==", "!="])
        return ["-o", f"jsonpath={{.items[?(@{path}{op}{_literal(rng.choice(values))})].metadata.name}}"]

    @form
    def exists():
        return ["-o", f"jsonpath={{.items[?(@{pick(names + ['.nope'])})].metadata.name}}"]

    @form
    def whole():
        return ["-o", f"jsonpath={{.items[{rng.randrange(max(n, 1))}].{pick(objects)}}}"]

    @form
    def recursive():
        # on a key only the rows hold: Go visits a map's values in random order, so a key found
        # at several depths of one row prints in no fixed order (kubectl's output varies run to run)
        return ["-o", rng.choice(["jsonpath={..metadata.name}", "jsonpath={.items[*]..metadata.namespace}"])]

    @form
    def union():
        return ["-o", f"jsonpath={{.items[0,{rng.randrange(max(n, 1))}]{pick(scalar)}}}"]

    @form
    def quoted():
        key = pick(scalar).lstrip(".").split(".")[0]
        return ["-o", f"jsonpath={{.items[*]['{key}']}}"]

    @form
    def missing():
        options = ["-o", f"jsonpath={{.items[*]{pick(scalar)}.nope}}"]
        return options + (["--allow-missing-template-keys=false"] if rng.random() < 0.6 else [])

    @form
    def top():
        return ["-o", rng.choice(["jsonpath={.kind} {.apiVersion} {.metadata}", "jsonpath={.items[0].metadata}",
                                  "jsonpath={.metadata.resourceVersion}{.items[*].kind}"])]

    @form
    def columns():
        chosen = rng.sample(names + [".nope", ".metadata", ".items"], rng.randint(1, 4))
        spec = ",".join(f"C{i}:{p if rng.random() < 0.7 else '{' + p + '}'}" for i, p in enumerate(chosen))
        return ["-o", f"custom-columns={spec}"] + (["--no-headers"] if rng.random() < 0.3 else [])

    @form
    def columns_star():
        path = pick(scalar)
        return ["-o", f"custom-columns=NAME:.metadata.name,ALL:.{pick(objects)}[*]{path}"]

    @form
    def name():
        return ["-o", "name"]

    @form
    def sort():
        key = pick(scalar + [".nope"])
        shown = rng.choice([["-o", "name"], ["-o", "jsonpath={.items[*].metadata.name}"],
                            ["-o", f"custom-columns=N:.metadata.name,K:{key}"]])
        return shown + ["--sort-by", key if rng.random() < 0.8 else "{" + key + "}"]

    @form
    def bad_template():
        return ["-o", f"jsonpath={rng.choice(BAD_TEMPLATES)}"]

    @form
    def bad_columns():
        return ["-o", f"custom-columns={rng.choice(BAD_COLUMNS)}"]

    for _ in range(count):
        out.append(rng.choice(forms)())
    return out


def compare(kubectl: Kubectl, command: str, verdict: int, options: list[str], scope=SCOPE) -> str | None:
    """None when the plugin prints what kubectl prints with `options`; else what differs."""
    k_code, k_out, k_err = kubectl.run(options)
    code, out, err = kvcache(command, *scope, *options)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    if k_code == 0:
        if code != verdict or out.encode("utf-8", "surrogateescape") != k_out:
            return (f"kubectl exit 0, stdout {k_out!r}\nplugin exit {code} (verdict {verdict}), stdout {out!r}, "
                    f"stderr {err!r}")
        return None
    first = k_err.decode("utf-8", "replace").split("\n", 1)[0]
    first = re.sub(r"^[FEW]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] ", "", first)      # klog.Exitf's header (--sort-by)
    first = first[:-len(_DUMP)] if first.endswith(_DUMP) else first
    want = first if first.startswith("error: ") else "error: " + first
    if code != 2 or out.encode("utf-8", "surrogateescape") != k_out or errors != [want]:
        return f"kubectl exit {k_code}, stderr {k_err!r}, stdout {k_out!r}\nplugin exit {code}, stdout {out!r}, stderr {err!r}"
    return None


def run(binary: str, seed: int, count: int, folder: str) -> tuple[int, list[str]]:
    """Every command's `count` cases: (cases run, failures described)."""
    failures, total = [], 0
    for command in COMMANDS:
        doc, verdict = document(command)
        kubectl = Kubectl(binary, doc, folder)
        try:
            for options in cases(doc, seed, count):
                total += 1
                diff = compare(kubectl, command, verdict, options)
                if diff is not None:
                    failures.append(f"{command} {options!r}:\n{diff}")
        finally:
            kubectl.close()
    return total, failures
