"""The kubeconfig file format: client-go tools/clientcmd/api/v1 (k8s.io/client-go@v0.37.2) as kubectl
decodes it: the JSON that goyaml gives, read into the typed v1 Config the way
k8s.io/apimachinery's json serializer does (sigs.k8s.io/json: case-sensitive keys, unknown keys
ignored, a wrong type is an error, null leaves the zero value, []byte from base64), then defaulted
(api/v1/defaults.go) and converted (api/v1/conversion.go: named lists -> maps, a duplicate name is an
error). `v1_json` writes the merged config back the way `kubectl config view --raw -o json` prints it.
"""

from __future__ import annotations

import base64
import binascii
import re

S, B, BYTES, RAW = "string", "bool", "[]byte", "raw"


def _struct(name, fields):
    return ("struct", name, fields)


def _list(of):
    return ("list", of)


EXTENSIONS = _list(_struct("NamedExtension", {"name": S, "extension": RAW}))
CLUSTER = _struct("Cluster", {
    "server": S, "tls-server-name": S, "insecure-skip-tls-verify": B, "certificate-authority": S,
    "certificate-authority-data": BYTES, "proxy-url": S, "disable-compression": B, "extensions": EXTENSIONS})
EXEC = ("ptr", _struct("ExecConfig", {
    "command": S, "args": _list(S), "env": _list(_struct("ExecEnvVar", {"name": S, "value": S})),
    "apiVersion": S, "installHint": S, "provideClusterInfo": B, "interactiveMode": S}))
AUTH_PROVIDER = ("ptr", _struct("AuthProviderConfig", {"name": S, "config": ("map", S)}))
AUTH_INFO = _struct("AuthInfo", {
    "client-certificate": S, "client-certificate-data": BYTES, "client-key": S, "client-key-data": BYTES,
    "token": S, "tokenFile": S, "as": S, "as-uid": S, "as-groups": _list(S), "as-user-extra": ("map", _list(S)),
    "username": S, "password": S, "auth-provider": AUTH_PROVIDER, "exec": EXEC, "extensions": EXTENSIONS})
CONTEXT = _struct("Context", {"cluster": S, "user": S, "namespace": S, "extensions": EXTENSIONS})
CONFIG = _struct("Config", {
    "kind": S, "apiVersion": S, "preferences": _struct("Preferences", {"colors": B, "extensions": EXTENSIONS}),
    "clusters": _list(_struct("NamedCluster", {"name": S, "cluster": CLUSTER})),
    "users": _list(_struct("NamedAuthInfo", {"name": S, "user": AUTH_INFO})),
    "contexts": _list(_struct("NamedContext", {"name": S, "context": CONTEXT})),
    "current-context": S, "extensions": EXTENSIONS})


class DecodeError(ValueError):
    """A value kubectl's decoder refuses: `where` is the field path (e.g. users[0].user.token)."""

    def __init__(self, where, problem):
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where = where
        self.problem = problem


def _json_kind(value):
    """encoding/json's name for a JSON value's type, as in `cannot unmarshal number into ...`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def zero(schema):
    kind = schema if isinstance(schema, str) else schema[0]
    if kind == S:
        return ""
    if kind == B:
        return False
    if kind == "struct":
        return {name: zero(field) for name, field in schema[2].items()}
    return None         # []byte, slices, maps, pointers, RawExtension


def _b64(text, where):
    """encoding/json's []byte: base64.StdEncoding (\\r and \\n skipped, padding required)."""
    data = text.replace("\r", "").replace("\n", "")
    try:
        if len(data) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", data):
            raise ValueError
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError(where, "is not valid base64") from None


def decode(schema, value, where=""):
    """`value` (JSON data) read into `schema` as encoding/json would; raises DecodeError."""
    kind = schema if isinstance(schema, str) else schema[0]
    if value is None:
        return zero(schema)             # null: the zero value (nil for slices, maps, pointers)
    if kind == RAW:
        return value                    # runtime.RawExtension keeps any JSON
    if kind == "ptr":
        return decode(schema[1], value, where)
    if kind == S:
        if isinstance(value, str):
            return value
    elif kind == B:
        if isinstance(value, bool):
            return value
    elif kind == BYTES:
        if isinstance(value, str):
            return _b64(value, where)
        if isinstance(value, list):     # encoding/json: an array of numbers also fills a []byte
            out = bytearray()
            for i, item in enumerate(value):
                if item is None:
                    out.append(0)
                elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 255:
                    out.append(item)
                else:
                    raise DecodeError(f"{where}[{i}]", f"cannot be a {_json_kind(item)} (a byte 0-255)")
            return bytes(out)
    elif kind == "list":
        if isinstance(value, list):
            return [decode(schema[1], item, f"{where}[{i}]") for i, item in enumerate(value)]
    elif kind == "map":
        if isinstance(value, dict):
            return {key: decode(schema[1], item, f"{where}.{key}" if where else key) for key, item in value.items()}
    elif kind == "struct":
        if isinstance(value, dict):
            out = zero(schema)
            for name, field in schema[2].items():   # case-sensitive (sigs.k8s.io/json); others ignored
                if name in value:
                    out[name] = decode(field, value[name], f"{where}.{name}" if where else name)
            return out
    expected = {S: "a string", B: "a boolean (true or false)", BYTES: "a base64 string", "list": "a list",
                "map": "a mapping", "struct": "a mapping"}[kind]
    raise DecodeError(where, f"must be {expected}, not a {_json_kind(value)}")


def type_meta(doc):
    """apimachinery's DefaultMetaFactory.Interpret: apiVersion and kind read with the standard (case-
    insensitive) encoding/json, whose last matching key in the marshalled (sorted) text wins."""
    if doc is None:
        return "", ""
    if not isinstance(doc, dict):
        raise DecodeError("", f"is a {_json_kind(doc)}, not a mapping")
    found = {"apiversion": "", "kind": ""}
    for key in sorted(doc):
        folded = key.lower()
        if folded in found:
            value = doc[key]
            if value is not None and not isinstance(value, str):
                raise DecodeError(key, f"must be a string, not a {_json_kind(value)}")
            found[folded] = value or ""
    return found["apiversion"], found["kind"]


def check_type_meta(api_version, kind):
    """The versioning codec's checks: apiVersion v1 (or none), kind Config (or none)."""
    if api_version.count("/") > 1:
        raise DecodeError("apiVersion", "is not a group/version")
    group, _, version = api_version.rpartition("/") if "/" in api_version else ("", "", api_version)
    if not group and not version:
        version = "v1"
    if group or version != "v1":
        raise DecodeError("apiVersion", "must be v1 (kubectl knows no other kubeconfig version)")
    if kind not in ("", "Config"):
        raise DecodeError("kind", "must be Config")


def set_defaults(config):
    """api/v1 defaults.go SetDefaults_ExecConfig: interactiveMode IfAvailable for v1alpha1/v1beta1."""
    for named in config["users"] or ():
        ex = named["user"]["exec"]
        if ex is not None and not ex["interactiveMode"] and ex["apiVersion"] in (
                "client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1alpha1"):
            ex["interactiveMode"] = "IfAvailable"


def named_map(items, inner, what):
    """conversion.go Convert_Slice_v1_Named*_To_Map: a name seen twice in one file is an error."""
    out = {}
    for i, item in enumerate(items or ()):
        name = item["name"]
        if name in out:
            raise DecodeError(f"{what}[{i}]", f"duplicate name {name!r} in the list")
        out[name] = item[inner]
    return out


def extensions_map(items, what):
    """Convert_Slice_v1_NamedExtension_To_Map_string_To_runtime_Object: an earlier entry with a null
    extension does not count, the later one replaces it."""
    out: dict = {}
    for i, item in enumerate(items or ()):
        name = item["name"]
        if out.get(name) is not None:
            raise DecodeError(f"{what}[{i}]", f"duplicate name {name!r} in the list")
        out[name] = item["extension"]
    return out


# -- back to v1 JSON, as `kubectl config view --raw -o json` prints it ------------------------

def _b64_out(data):
    return base64.b64encode(data).decode("ascii")


def _extensions_out(ext):
    return [{"name": name, "extension": ext[name]} for name in sorted(ext)]


def cluster_json(c):
    out = {"server": c["server"]}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "certificate-authority"):
        if c[key]:
            out[key] = c[key]
    if c["certificate-authority-data"]:
        out["certificate-authority-data"] = _b64_out(c["certificate-authority-data"])
    for key in ("proxy-url", "disable-compression"):
        if c[key]:
            out[key] = c[key]
    if c["extensions"]:
        out["extensions"] = _extensions_out(c["extensions"])
    return out


def user_json(u):
    out = {}
    for key in ("client-certificate", "client-certificate-data", "client-key", "client-key-data", "token",
                "tokenFile", "as", "as-uid", "as-groups", "as-user-extra", "username", "password"):
        value = u[key]
        if value:
            out[key] = _b64_out(value) if isinstance(value, bytes) else value
    if u["auth-provider"] is not None:
        out["auth-provider"] = {"name": u["auth-provider"]["name"], "config": u["auth-provider"]["config"]}
    if u["exec"] is not None:
        ex = u["exec"]
        out["exec"] = {"command": ex["command"], "args": ex["args"], "env": ex["env"]}
        for key in ("apiVersion", "installHint"):
            if ex[key]:
                out["exec"][key] = ex[key]
        out["exec"]["provideClusterInfo"] = ex["provideClusterInfo"]
        if ex["interactiveMode"]:
            out["exec"]["interactiveMode"] = ex["interactiveMode"]
    if u["extensions"]:
        out["extensions"] = _extensions_out(u["extensions"])
    return out


def context_json(c):
    out = {"cluster": c["cluster"], "user": c["user"]}
    if c["namespace"]:
        out["namespace"] = c["namespace"]
    if c["extensions"]:
        out["extensions"] = _extensions_out(c["extensions"])
    return out


def v1_json(clusters, users, contexts, current_context, colors, preference_extensions, extensions):
    """The internal config (maps by name) as v1 JSON: names sorted, empty lists null, omitempty."""
    def named(entries, inner, fn):
        return [{"name": name, inner: fn(entries[name])} for name in sorted(entries)] or None

    out: dict = {"kind": "Config", "apiVersion": "v1"}
    if colors or preference_extensions:                    # preferences: omitzero
        out["preferences"] = dict({"colors": True} if colors else {},
                                  **({"extensions": _extensions_out(preference_extensions)}
                                     if preference_extensions else {}))
    out["clusters"] = named(clusters, "cluster", cluster_json)
    out["users"] = named(users, "user", user_json)
    out["contexts"] = named(contexts, "context", context_json)
    out["current-context"] = current_context
    if extensions:
        out["extensions"] = _extensions_out(extensions)
    return out
