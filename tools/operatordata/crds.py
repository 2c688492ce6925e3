"""The test CRDs, from the GPUStack Operator's Go types: extract their facts, then generate.

Why: the cluster tier must refuse what the real operator's CRDs refuse (lowercase engine enum,
closed role kinds, a router that names itself, bounds, required fields). The operator generates its
CRDs from markers on its Go types (`+k8s:crd-gen:...`, `+k8s:validation:...`, `+listType`, ...;
its output is api/worker/v1alpha1/zz_generated.crds.go). That Go cannot be vendored or built here,
so this script works in two steps, both rerunnable:

  extract   reads Go type files from a directory a developer fills by hand and writes the FACTS
            they state (per type: fields with JSON name, Go type, markers, first doc line; per
            file: repo, path, commit) to tools/operatordata/markers.json. No Go code is kept.
  generate  turns markers.json into tests/cluster/crds/*.yaml, deterministically.

Filling the directory (default .cache/operator-go/, git-ignored): for each file named in
markers.json "files" (or a new one), read it with the search tools' read_file
(repo gpustack/gpustack-operator, the path; note the commit the answer names), save the text at
<dir>/<path>, and record {"repo", "path", "commit"} in <dir>/sources.json (a list). The extract
keeps only declarations, markers and each comment's first line, so a file saved with its long
comments trimmed yields the same facts.

Usage: python3 tools/operatordata/crds.py extract [--src DIR] [--out markers.json]
       python3 tools/operatordata/crds.py generate [--markers markers.json] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MARKERS = os.path.join(HERE, "markers.json")
SRC = os.path.join(ROOT, ".cache", "operator-go")
CRD_OUT = os.path.join(ROOT, "tests", "cluster", "crds")
LOCAL_MODULE = "gpustack.ai/gpustack/"   # the operator's Go module path (its imports)

# --------------------------------------------------------------------------------------- extract

_TYPE_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\s*$")
_TYPE_NAMED = re.compile(r"^type\s+(\w+)\s+([\w.\[\]*]+)\s*$")
_FIELD = re.compile(r"^(\w+)\s+([^\s`]+)\s+`([^`]*)`")
_EMBED = re.compile(r"^([\w.*]+)\s+`([^`]*)`")
_IMPORT = re.compile(r'^(?:(\w+)\s+)?"([^"]+)"$')
_TAG = re.compile(r'(\w+):"([^"]*)"')


def _imports(lines: list[str]) -> dict[str, str]:
    """alias -> import path, from single and grouped import declarations."""
    out: dict[str, str] = {}
    block = False
    for raw in lines:
        line = raw.strip()
        if line.startswith("import ("):
            block = True
            continue
        if block and line == ")":
            block = False
            continue
        spec = line[len("import "):].strip() if line.startswith("import ") else (
            line if block else "")
        m = _IMPORT.match(spec)
        if m:
            path = m.group(2)
            out[m.group(1) or path.rsplit("/", 1)[-1]] = path
    return out


def _comment(block: list[str]) -> tuple[str, list[str]]:
    """A comment block's first prose line and its markers (lines starting with '+')."""
    doc, markers = "", []
    for text in block:
        if text.startswith("+"):
            markers.append(text)
        elif text and not doc:
            doc = text
    return doc, markers


def extract_file(text: str, pkg: str) -> tuple[dict[str, Any], list[str]]:
    """Types declared in one Go file, keyed '<pkg>.<Name>', and the package's doc markers."""
    lines = text.splitlines()
    imports = _imports(lines)
    types: dict[str, Any] = {}
    pkg_markers: list[str] = []
    block: list[str] = []
    current: dict[str, Any] | None = None
    for raw in lines:
        line = raw.strip()
        if line.startswith("//"):
            block.append(line[2:].strip())
            continue
        if current is not None:
            if line == "}":
                current = None
            elif line:
                _field(current, line, block, imports, pkg)
            block = []   # a blank line parts a comment from what follows, as in godoc
            continue
        if line.startswith("package "):
            pkg_markers = [m for m in block if m.startswith("+")]
        m = _TYPE_STRUCT.match(line)
        n = _TYPE_NAMED.match(line)
        if m:
            doc, markers = _comment(block)
            current = {"kind": "struct", "doc": doc, "markers": markers, "fields": []}
            types[f"{pkg}.{m.group(1)}"] = current
        elif n:
            doc, markers = _comment(block)
            types[f"{pkg}.{n.group(1)}"] = {"kind": "named", "doc": doc, "markers": markers,
                                             "underlying": _resolve(n.group(2), imports, pkg)}
        block = []
    return types, pkg_markers


def _resolve(gotype: str, imports: dict[str, str], pkg: str) -> str:
    """A Go type expression with package aliases made absolute: 'api/v1.Condition', 'k8s.io/...'."""
    m = re.match(r"^(\*|\[\]|map\[string\])(.*)$", gotype)
    if m:
        return m.group(1) + _resolve(m.group(2), imports, pkg)
    if "." in gotype:
        alias, name = gotype.split(".", 1)
        path = imports.get(alias, alias)
        if path.startswith(LOCAL_MODULE):
            path = path[len(LOCAL_MODULE):]
        return f"{path}.{name}"
    if gotype in ("string", "bool", "int32", "int64", "float64", "byte"):
        return gotype
    return f"{pkg}.{gotype}"


def _field(struct: dict[str, Any], line: str, block: list[str], imports: dict[str, str],
           pkg: str) -> None:
    m = _FIELD.match(line)
    embedded = False
    if m:
        name, gotype, tag = m.groups()
    else:
        m = _EMBED.match(line)
        if not m:
            return
        gotype, tag = m.groups()
        name, embedded = gotype.rsplit(".", 1)[-1].lstrip("*"), True
    tags = dict(_TAG.findall(tag))
    parts = tags.get("json", "").split(",")
    if parts[0] == "-":
        return
    doc, markers = _comment(block)
    struct["fields"].append({
        "go": name, "json": parts[0], "type": _resolve(gotype, imports, pkg),
        "omitempty": "omitempty" in parts[1:], "inline": "inline" in parts[1:] or (
            embedded and not parts[0]),
        "markers": markers, "doc": doc})


def extract(src: str) -> dict[str, Any]:
    """Every Go file sources.json names under src, as facts."""
    with open(os.path.join(src, "sources.json")) as f:
        sources = json.load(f)
    files, types, packages = [], {}, {}
    for s in sorted(sources, key=lambda s: s["path"]):
        with open(os.path.join(src, s["path"])) as f:
            text = f.read()
        pkg = os.path.dirname(s["path"])
        found, pkg_markers = extract_file(text, pkg)
        if pkg_markers:
            packages[pkg] = pkg_markers
        for key in found:
            found[key]["file"] = s["path"]
        types.update(found)
        files.append({"repo": s["repo"], "path": s["path"], "commit": s["commit"],
                      "types": sorted(found)})
    return {"about": "Facts read from the GPUStack Operator's Go API types by "
                     "tools/operatordata/crds.py extract; generate turns them into "
                     "tests/cluster/crds/. Not Go code: names, types, markers, first doc lines.",
            "files": files, "packages": dict(sorted(packages.items())),
            "types": dict(sorted(types.items()))}


# -------------------------------------------------------------------------------------- generate

# Types from outside the operator's module, as its CRD generator renders them: LocalObjectReference
# and HostPathVolumeSource as seen in api/worker/v1alpha1/zz_generated.crds.go at 049325a5 (the
# ModelDeployment's kvCache.poolRef and additionalVolumes[].hostPath); Quantity and Time as the
# apimachinery types' own OpenAPI definitions. SecurityContext was not read field by field: it
# stays an open object (what it would refuse is UNKNOWN here).
_QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                     r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
EXTERNAL: dict[str, dict[str, Any]] = {
    "k8s.io/apimachinery/pkg/api/resource.Quantity": {
        "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": _QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True},
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": {"type": "string", "format": "date-time"},
    "k8s.io/apimachinery/pkg/apis/meta/v1.ConditionStatus": {"type": "string"},
    "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": {"type": "object"},
    "k8s.io/api/core/v1.PullPolicy": {"type": "string"},
    "k8s.io/api/core/v1.Protocol": {"type": "string"},
    "k8s.io/api/core/v1.HostPathType": {"type": "string"},
    "k8s.io/api/core/v1.LocalObjectReference": {
        "type": "object", "properties": {"name": {"type": "string", "default": ""}}},
    "k8s.io/api/core/v1.HostPathVolumeSource": {
        "type": "object", "required": ["path"],
        "properties": {"path": {"type": "string"}, "type": {"type": "string", "nullable": True}}},
    "k8s.io/api/core/v1.SecurityContext": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "description": "core/v1 SecurityContext: not extracted field by field (open here)."},
}
_SCALAR = {"string": {"type": "string"}, "bool": {"type": "boolean"},
           "int32": {"type": "integer", "format": "int32"},
           "int64": {"type": "integer", "format": "int64"},
           "float64": {"type": "number", "format": "double"}}

# Where the test stand-in departs from the Go markers, and why (the only departures).
STANDIN = {
    # The real Setting is served by the operator's aggregated API server (api/v1/doc.go
    # +k8s:apireg-gen:service; setting.go +genclient:onlyVerbs, no create): Go decoding there
    # enforces no required field and its status is computed. Here it is a CRD the tests create and
    # whose status they write, so: a status subresource, and no required lists.
    "Setting": {"subresources": ["status"], "required": False},
}


def _marker_value(markers: list[str], key: str) -> Any:
    for m in markers:
        if m.startswith(f"+k8s:validation:{key}="):
            return json.loads(m.split("=", 1)[1])
    return None


def _has(markers: list[str], name: str) -> bool:
    return name in markers


class _Gen:
    def __init__(self, data: dict[str, Any], required: bool = True):
        self.types = data["types"]
        self.required = required

    def type_schema(self, ref: str) -> dict[str, Any]:
        if ref.startswith("*"):
            return {**self.type_schema(ref[1:]), "nullable": True}
        if ref.startswith("[]"):
            return {"type": "array", "items": self.type_schema(ref[2:]), "nullable": True}
        if ref.startswith("map[string]"):
            return {"type": "object", "additionalProperties": self.type_schema(ref[11:])}
        if ref in _SCALAR:
            return dict(_SCALAR[ref])
        if ref in EXTERNAL:
            return json.loads(json.dumps(EXTERNAL[ref]))
        t = self.types.get(ref)
        if t is None:
            raise SystemExit(f"crds.py: type {ref} is not in markers.json and not external")
        if t["kind"] == "named":
            # A named type's own markers (e.g. +enum) are Go-level: the schema markers sit on the
            # field (model_deployment.go says so of ModelDeploymentRoleKind's enum).
            return self.type_schema(t["underlying"])
        return self.struct_schema(t)

    def fields(self, t: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for f in t["fields"]:
            if f["inline"]:
                inner = self.types.get(f["type"])
                if inner is not None and inner["kind"] == "struct":
                    out += self.fields(inner)
                continue
            out.append(f)
        return out

    def struct_schema(self, t: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = {}
        required = []
        for f in self.fields(t):
            props[f["json"]] = self.field_schema(f)
            if self.required and (_has(f["markers"], "+required") or (
                    not f["omitempty"] and not _has(f["markers"], "+optional"))):
                required.append(f["json"])
        out: dict[str, Any] = {"type": "object"}
        if required:
            out["required"] = required
        out["properties"] = dict(sorted(props.items()))
        return out

    def field_schema(self, f: dict[str, Any]) -> dict[str, Any]:
        """A field's schema: its type's, then its markers (value rules go to a list's items)."""
        s = self.type_schema(f["type"])
        item = s["items"] if f["type"].startswith("[]") else s
        mk = f["markers"]
        if f["doc"]:
            s["description"] = f["doc"]
        for key in ("enum", "pattern", "format", "minimum", "maximum", "minLength", "maxLength"):
            v = _marker_value(mk, key)
            if v is not None:
                item[key] = v
        for key in ("default", "minItems", "maxItems"):
            v = _marker_value(mk, key)
            if v is not None:
                s[key] = v
        for m in mk:
            if m.startswith("+listType="):
                s["x-kubernetes-list-type"] = m.split("=", 1)[1]
            elif m.startswith("+listMapKey="):
                s.setdefault("x-kubernetes-list-map-keys", []).append(m.split("=", 1)[1])
        if item is not s:
            s["items"] = _ordered(item)
        return _ordered(s)


_ORDER = ["description", "type", "format", "anyOf", "enum", "default", "minimum", "maximum",
          "minLength", "maxLength", "pattern", "minItems", "maxItems", "required", "properties",
          "additionalProperties", "items", "nullable", "x-kubernetes-int-or-string",
          "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
          "x-kubernetes-preserve-unknown-fields"]


def _ordered(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in sorted(s, key=lambda k: (_ORDER.index(k) if k in _ORDER else 99, k))}


def _marker_args(marker: str) -> dict[str, Any]:
    """'+k8s:crd-gen:printcolumn:name="X",type="string"' -> {"name": "X", "type": "string"}."""
    body = marker.split(":", 3)[-1] if marker.count(":") >= 3 else marker
    out: dict[str, Any] = {}
    for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\])', body):
        out[m.group(1)] = json.loads(m.group(2))
    return out


def resources(data: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(type key, type, resource marker args) for every type carrying a resource marker."""
    out = []
    for key, t in data["types"].items():
        for m in t["markers"]:
            if m.startswith(("+k8s:crd-gen:resource:", "+k8s:apireg-gen:resource:")):
                out.append((key, t, _marker_args(m)))
    return out


def crd(data: dict[str, Any], key: str, t: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    pkg, kind = key.rsplit(".", 1)
    pmarkers = data["packages"].get(pkg, [])
    group = next(m.split("=", 1)[1] for m in pmarkers if m.startswith("+groupName="))
    version = next(m.split("=", 1)[1] for m in pmarkers if m.startswith("+versionName="))
    standin = STANDIN.get(kind, {})
    plural = kind.lower() if kind.endswith("s") else kind.lower() + "s"
    gen = _Gen(data, required=standin.get("required", True))
    schema = gen.struct_schema(t)
    for meta in ("apiVersion", "kind"):
        schema["properties"][meta] = {"type": "string"}
    schema["properties"]["metadata"] = {"type": "object"}
    schema["properties"] = dict(sorted(schema["properties"].items()))
    schema["properties"].pop("", None)
    if t["doc"]:
        schema = {"description": t["doc"], **schema}
    names: dict[str, Any] = {"kind": kind, "listKind": kind + "List", "plural": plural,
                             "singular": kind.lower()}
    if res.get("shortName"):
        names["shortNames"] = res["shortName"]
    if res.get("categories"):
        names["categories"] = res["categories"]
    version_doc: dict[str, Any] = {"name": version, "served": True, "storage": True}
    subresources = standin.get("subresources", res.get("subResources", []))
    if "status" in subresources:
        version_doc["subresources"] = {"status": {}}
    cols = [_marker_args(m) for m in t["markers"] if m.startswith("+k8s:crd-gen:printcolumn:")]
    if cols:
        version_doc["additionalPrinterColumns"] = [
            {k: c[k] for k in ("name", "type", "jsonPath") if k in c} for c in cols]
    version_doc["schema"] = {"openAPIV3Schema": schema}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "names": names, "scope": res.get("scope", "Namespaced"),
                     "versions": [version_doc]}}


def _source_line(data: dict[str, Any], key: str) -> str:
    path = data["types"][key]["file"]
    f = next(x for x in data["files"] if x["path"] == path)
    return f"{f['repo']} {f['path']} at {f['commit']}"


def render(data: dict[str, Any]) -> dict[str, str]:
    """File name -> YAML text for every resource type in the markers data."""
    out = {}
    for key, t, res in sorted(resources(data)):
        obj = crd(data, key, t, res)
        kind = key.rsplit(".", 1)[1]
        head = ["# GENERATED by tools/operatordata/crds.py generate from tools/operatordata/"
                "markers.json;", "# do not edit. The Go type: " + _source_line(data, key) + "."]
        if kind in STANDIN:
            head.append("# Test stand-in departures (crds.py STANDIN): "
                        + ", ".join(f"{k}={v}" for k, v in sorted(STANDIN[kind].items())) + ".")
        text = "\n".join(head) + "\n" + yaml.safe_dump(obj, sort_keys=False, width=100,
                                                       allow_unicode=True)
        out[f"{obj['spec']['group']}_{obj['spec']['names']['plural']}.yaml"] = text
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("--src", default=SRC)
    e.add_argument("--out", default=MARKERS)
    g = sub.add_parser("generate")
    g.add_argument("--markers", default=MARKERS)
    g.add_argument("--out", default=CRD_OUT)
    args = ap.parse_args(argv)
    if args.cmd == "extract":
        data = extract(args.src)
        with open(args.out, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False, ensure_ascii=False)
            f.write("\n")
        sys.stderr.write(f"crds.py: {len(data['types'])} types from {len(data['files'])} files "
                         f"-> {args.out}\n")
        return 0
    with open(args.markers) as f:
        data = json.load(f)
    for name, text in render(data).items():
        with open(os.path.join(args.out, name), "w") as f:
            f.write(text)
        sys.stderr.write(f"crds.py: wrote {os.path.join(args.out, name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
