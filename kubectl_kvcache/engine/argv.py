"""The argv the kubelet would exec for a container, as Kubernetes builds it.

`command` replaces the image ENTRYPOINT and `args` its CMD (an empty list counts as unset);
`$(NAME)` is expanded per element from the container's environment, `$$` escapes a `$`, an
undefined name stays literal, one element never splits. Values that only the kubelet knows
(valueFrom, envFrom) stay unknown: they are never guessed, and Secret values are never read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kubectl_kvcache.engine import releases as engines
from kubectl_kvcache.engine.cause import Cause
from kubectl_kvcache.record import Record


class Token(Record):
    """One argv element. `text` is None when it depends on values the spec does not hold."""

    __slots__ = ("text", "source", "index", "prefix", "reason", "plain", "template")

    def __init__(self, text: str | None, source: str, index: int, prefix: str = "", reason: str = "",
                 plain: bool = False, template: tuple | None = None):
        self.text = text
        self.source = source    # command | args | image | script
        self.index = index      # position in `source` (for script words: the script element)
        self.prefix = prefix    # the known leading text of an unknown element
        self.reason = reason    # why the element is unknown
        self.plain = plain      # unknown, but it does not start with '-' (see PLAIN_FIELDS)
        self.template = template  # unknown: (text, holes) when every unknown value is SCRIPT_SAFE (a shell
                                  # script reads it the same whatever the value): see script_template

    def where(self):
        return f"{self.source}[{self.index}]" if self.source != "image" else "the image ENTRYPOINT"


class EnvValue:
    """A variable that exists but whose value is not in the Pod spec. `plain`: whatever its value,
    it never starts with '-' and holds no whitespace or glob character; `nonempty`: never empty
    (PLAIN_FIELDS)."""

    __slots__ = ("reason", "plain", "nonempty", "script_safe")

    def __init__(self, reason, plain=False, nonempty=False, script_safe=False):
        self.reason = reason
        self.plain = plain
        self.nonempty = nonempty
        self.script_safe = script_safe  # SCRIPT_SAFE_FIELDS


# Downward API fields whose value, whatever it is, has a known shape when the container starts
# -> never empty. The kubelet resolves them in makeEnvironmentVariables/podFieldSelectorRuntimeValue
# (kubernetes/kubernetes@001a80e975bb880d0fe60b304d30950fe661f278 pkg/kubelet/kubelet_pods.go): a
# failure there fails the container's start, so the engine never runs without them.
# - metadata.name: a Pod name, a DNS-1123 subdomain ([a-z0-9] first; ValidatePodName), required;
# - metadata.namespace: a DNS-1123 label, always set on a stored Pod;
# - metadata.uid: the UUID the API server assigned (hex digits and '-', hex first);
# - spec.nodeName: the node the kubelet runs the Pod on (set, or it would not run), a node name is
#   a DNS-1123 subdomain;
# - status.hostIP / status.hostIPs: from getHostIPsAnyWay, an error otherwise; IP text (and ',');
# - status.podIP / status.podIPs: IP text (and ','); the code passes podIP as the runtime reported
#   it, so it is not claimed non-empty;
# - spec.serviceAccountName: a DNS-1123 subdomain when set; defaulted by the ServiceAccount
#   admission plugin, which a cluster may disable: not claimed non-empty.
# Labels and annotations (metadata.labels['k'], ...) hold any text: not here.
PLAIN_FIELDS = {
    "metadata.name": True, "metadata.namespace": True, "metadata.uid": True, "spec.nodeName": True,
    "status.hostIP": True, "status.hostIPs": True, "status.podIP": False, "status.podIPs": False,
    "spec.serviceAccountName": False,
}
# Of those, the ones whose value the kubelet may paste into a `sh -c` script without changing how the
# shell parses it: never empty, and only characters a shell word keeps as they are ([a-z0-9.:-]:
# no ',' that a bash brace could split, no '..'). Where it lands next to `$`, `$NAME` or before a
# redirection, it could still change the parse: script_template refuses those.
SCRIPT_SAFE_FIELDS = frozenset({"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                                "status.hostIP"})
HOLE = re.compile("\x1e([0-9]+)\x1f")   # a value pasted into a script template


# Variables the kubelet adds for Services in the namespace (enableServiceLinks).
_SERVICE_LINK = re.compile(r"^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$")


def _value_from_reason(name, value_from):
    for key, what in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
        ref = value_from.get(key)
        if ref:
            return f"${name} comes from {what} {ref.get('name', '?')} (key {ref.get('key', '?')})"
    if value_from.get("fieldRef"):
        return f"${name} comes from the Pod field {value_from['fieldRef'].get('fieldPath', '?')}"
    if value_from.get("resourceFieldRef"):
        return f"${name} comes from the container resource {value_from['resourceFieldRef'].get('resource', '?')}"
    return f"${name} comes from valueFrom"


class Environment(Record):
    """name -> str (known) or EnvValue (exists, value unknown); `open_reason` is set when envFrom
    may define names the spec does not list."""

    __slots__ = ("values", "open_reason")

    def __init__(self, values: dict[str, str | EnvValue], open_reason: str = ""):
        self.values = values
        self.open_reason = open_reason

    def lookup(self, name):
        """str, EnvValue, or None when the name is certainly undefined."""
        if name in self.values:
            return self.values[name]
        if self.open_reason:
            return EnvValue(f"$({name}) may be defined by {self.open_reason}")
        if _SERVICE_LINK.match(name):
            return EnvValue(f"$({name}) may be a Service variable added by the kubelet")
        return None

    def for_shell(self):
        """name -> str, ("unk", reason) or ("shape", reason, nonempty) (unknown, plain), as the shell
        module takes it."""
        return {k: (v if isinstance(v, str) else ("shape", v.reason, v.nonempty) if v.plain else ("unk", v.reason))
                for k, v in self.values.items()}


def container_environment(env: Sequence[dict], env_from: Sequence[dict]) -> Environment:
    sources = []
    for src in env_from or ():
        for key, what in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if src.get(key):
                prefix = src.get("prefix")
                sources.append(f"{what} {src[key].get('name', '?')}" + (f" (prefix {prefix})" if prefix else ""))
    open_reason = "envFrom " + ", ".join(sources) if sources else ("envFrom" if env_from else "")
    values: dict[str, str | EnvValue] = {}
    partial = Environment(values, open_reason)
    for entry in env or ():
        name = entry.get("name")
        if not name:
            continue
        if entry.get("valueFrom") is not None:
            value_from = entry["valueFrom"]
            field = value_from.get("fieldRef", {}).get("fieldPath") if isinstance(value_from, dict) else None
            shape = PLAIN_FIELDS.get(field) if isinstance(field, str) else None
            values[name] = EnvValue(_value_from_reason(name, value_from), shape is not None, bool(shape),
                                    field in SCRIPT_SAFE_FIELDS)
            continue
        text, unknown = expand(entry.get("value") or "", partial)
        values[name] = text if unknown is None else EnvValue(f"${name} is built from {unknown}")
    return Environment(values, open_reason)


def expand(text: str, env: Environment) -> tuple[str, str | None]:
    """Kubernetes `$(NAME)` expansion of one element.

    Returns (text, None) when fully known, else (known prefix, reason) for the first reference
    whose value is not known.
    """
    text, reason, _ = expand_element(text, env)
    return text, reason


def expand_element(text: str, env: Environment) -> tuple[str, str | None, bool]:
    """`expand`, and whether the first unknown value is plain (EnvValue.plain)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                # Kubernetes keeps an unclosed `$(` literally and goes on scanning after it
                # (so a later `$$` is still an escaped `$`).
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            value = env.lookup(name)
            if value is None:
                out.append(f"$({name})")
            elif isinstance(value, EnvValue):
                return "".join(out), value.reason, value.plain
            else:
                out.append(value)
            i = close + 1
        else:
            out.append(ch + nxt)
            i += 2
    return "".join(out), None, False


def script_template(text: str, env: Environment) -> tuple[str, tuple[str, ...]] | None:
    """An element with `$(NAME)` references to SCRIPT_SAFE values, as (template, reasons): each such
    value replaced by a hole (`\x1e<k>\x1f`, see HOLE) that a shell parses as the value itself
    (ordinary word characters), so a script can be followed whatever the values are; None when
    any other reference is unknown, or a hole stands where its text could change the shell's parse
    (after `$` or `$NAME`/`${NAME`, where it would extend the name; before `<`/`>`, where digits
    would name a file descriptor)."""
    if "\x1e" in text or "\x1f" in text:
        return None
    out: list[str] = []
    holes: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and text.find(")", i + 2) >= 0:
            close = text.find(")", i + 2)
            name = text[i + 2:close]
            value = env.lookup(name)
            if value is None:
                out.append(f"$({name})")
            elif isinstance(value, EnvValue):
                before = "".join(out)
                if not value.script_safe or re.search(r"\$\{?[A-Za-z0-9_]*$", before) or text[close + 1:close + 2] in ("<", ">"):
                    return None
                out.append(f"\x1e{len(holes)}\x1f")
                holes.append(value.reason)
            else:
                out.append(value)
            i = close + 1
        else:
            out.append(text[i:i + 2] if text[i] == "$" and i + 1 < n else text[i])
            i += 2 if text[i] == "$" and i + 1 < n else 1
    return ("".join(out), tuple(holes)) if holes else None


def element_tokens(elements: Sequence[str], source: str, env: Environment) -> list[Token]:
    tokens = []
    for index, element in enumerate(elements):
        text, unknown, plain = expand_element(element if isinstance(element, str) else str(element), env)
        if unknown is None:
            tokens.append(Token(text, source, index))
        else:
            tokens.append(Token(None, source, index, prefix=text, reason=unknown, plain=plain,
                                template=script_template(element if isinstance(element, str) else str(element), env)))
    return tokens


class Argv(Record):
    __slots__ = ("tokens", "env", "image_engine")

    def __init__(self, tokens: tuple[Token, ...], env: Environment, image_engine: str | None = None):
        self.tokens = tokens
        self.env = env
        self.image_engine = image_engine  # engine an image's ENTRYPOINT runs, when it says


class Undecidable(Record):
    __slots__ = ("reason", "cause")

    def __init__(self, reason: str, cause=None):
        self.reason = reason
        self.cause = cause  # engine.cause.Cause: what would decide it


def build_argv(container: dict, version=None):
    """Argv (tokens) or Undecidable, for a container dict with command/args/env/envFrom/image."""
    env = container_environment(container.get("env") or (), container.get("envFrom") or ())
    command = list(container.get("command") or ())
    args = list(container.get("args") or ())
    if command:
        return Argv(tuple(element_tokens(command, "command", env) + element_tokens(args, "args", env)), env)
    image = container.get("image") or ""
    entry = engines.image_entrypoint(image, version)
    if entry is None:
        return Undecidable(f"command is not set and the ENTRYPOINT of image {image or '(none)'} is not known",
                           Cause("image", image or "(none)"))
    if not args:
        return Undecidable(f"neither command nor args is set: image {image} runs its default CMD",
                           Cause("image", image))
    if entry["entrypoint"] is None:
        first, until = entry["unpinned"]
        return Undecidable(f"command is not set, and which ENTRYPOINT {entry['image']} releases from {first} "
                           f"before {until} run (`python3 -m vllm.entrypoints.openai.api_server` or `vllm serve`) "
                           f"is not pinned: set command, or read the image's ENTRYPOINT (docker inspect)",
                           Cause("image", image))
    head = [Token(word, "image", i) for i, word in enumerate(entry["entrypoint"])]
    return Argv(tuple(head + element_tokens(args, "args", env)), env, entry["engine"])
