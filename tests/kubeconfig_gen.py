"""A seeded generator of YAML kubeconfigs for holding the tests' load_merged to `kubectl config view`:
the same few fields written every way YAML allows (quoting and escapes, flow and block style, block
scalars, anchors, aliases and merge keys, comments, CRLF, a BOM, tabs, duplicate keys, several
documents, unicode, tags) with values that look like numbers, booleans, nulls and times."""

from __future__ import annotations

import base64
import random

LOOK_ALIKES = [
    "y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "TRUE", "~", "null", "Null", "NULL", "",
    "1:20", "190:20:30", "0x1F", "0X1f", "0o17", "017", "08", "0b101", "-0b11", "+12", "-7", "1_000", "1e3", "1E+3",
    ".5", "-.5", "1.", "1e400", "-1e400", "1e-400", ".inf", "-.Inf", ".NaN", "9223372036854775807",
    "9223372036854775808", "18446744073709551616", "-9223372036854775809", "2001-01-01", "2001-1-1", "2001-13-01",
    "2001-02-29", "2000-02-29", "2001-01-01T00:00:00Z", "2001-01-01t1:2:3+01:00", "2001-01-01 1:2:3",
    "2001-01-01 01:02:03.5", "2001-01-01T01:02:03", "<<", "=", "-", "a b", "a#b", "a #b", "héllo", "日本語", "😀",
    "tok:en", "a: b", "- x", "'q'", '"dq"', "back\\slash", "tab\there", "https://h:6443", "127.0.0.1:6443",
    "IfAvailable", "Never", "Always", "nel\x85here", "ls\u2028here", "nbsp\xa0", "ctl\x07", "client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1",
    "v1", "Config", "dG9rZW4=", "YWJj", "not base64!", "  lead", "trail  ", "multi\nline",
]
TAGS = ["!!str", "!!int", "!!bool", "!!float", "!!null", "!!binary", "!!timestamp", "!", "!custom", "!!merge"]


class Scalar:
    def __init__(self, text, tag=None):
        self.text, self.tag, self.quote, self.plain = text, tag, False, False


class Seq:
    def __init__(self, items):
        self.items = items


class Map:
    def __init__(self, pairs):
        self.pairs = pairs          # [(key Scalar, value node)]


class Alias:
    def __init__(self, name):
        self.name = name


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.anchors = {}           # name -> node kind ("map"|"other")
        self.risky = self.r.random() < 0.5      # values of any type, tags, broken base64, tabs

    def chance(self, p):
        return self.r.random() < p

    # -- content ----------------------------------------------------------------------------
    def value(self, kind="string"):
        """A value for a field of this kind; in a risky document also of another type, or tagged."""
        r, risky = self.r, self.risky
        if self.chance(0.04 if risky else 0.01) and self.anchors:
            return Alias(r.choice(list(self.anchors)))
        if risky and self.chance(0.15):
            kind = r.choice(["string", "bool", "list", "b64"])
        if kind == "bool":
            words = ["true", "false", "y", "n", "N", "Y", "yes", "no", "on", "off", "True", "FALSE", "~", ""]
            b = Scalar(r.choice(words + (['"false"', "1", "!!bool n", "!!str true"] if risky else [])))
            b.plain = True      # written as is: a plain scalar that go-yaml types
            return b
        if kind == "list":
            return Seq([self.value() for _ in range(r.randint(0, 3))])
        if kind == "b64":
            data = base64.b64encode(r.choice([b"pem", b"-----BEGIN-----", b"\xff\xfe", b"", b"ab"])).decode()
            return Scalar(data, tag="!!str" if self.chance(0.05) else None) if not (risky and self.chance(0.2)) \
                else Scalar(r.choice(["not base64!", "YQ", "YQ==YQ==", "Y Q =="]))
        if self.chance(0.1 if risky else 0.03):
            return Scalar(r.choice(LOOK_ALIKES), tag=r.choice(TAGS if risky else ["!!str", "!"]))
        if self.chance(0.5):
            text = r.choice(LOOK_ALIKES)
            s = Scalar(text)
            s.quote = not risky         # a clean document quotes look-alikes: they stay strings
            return s
        return Scalar(r.choice(["a", "admin", "tok-" + str(r.randint(0, 99)), "kind-kind", "x.y", "/tmp/f",
                                "1:20", "2001-01-01", "a b c", "ünï"]))

    def mapping(self, fields):
        pairs = []
        for key, kind in fields:
            if self.chance(0.35):
                value = self.value(kind) if kind not in ("exec", "auth", "extra") else getattr(self, kind)()
                pairs.append((Scalar(key), value))
        if self.chance(0.05 if self.risky else 0.02) and pairs:
            pairs.append(pairs[self.r.randrange(len(pairs))][:1] + (self.value(),))    # a duplicate key
        if self.chance(0.05):
            pairs.append((Scalar(self.r.choice(["Token", "unknown", "1", "true"])), self.value()))
        return Map(pairs)

    def exec(self):
        return self.mapping([("command", "string"), ("apiVersion", "string"), ("args", "list"),
                             ("interactiveMode", "string"), ("provideClusterInfo", "bool"), ("installHint", "string")])

    def auth(self):
        return self.mapping([("name", "string")] + ([("config", "extra")] if self.chance(0.5) else []))

    def extra(self):
        # distinct texts: "1" and 1 in one mapping are one JSON key, which Go's map order picks at random
        return Map([(Scalar(key), self.value("list"))
                    for key in self.r.sample(["k", "scopes", "a b", "1", "true"], self.r.randint(0, 2))])

    def named(self, inner, fields, names):
        items = []
        for name in self.r.sample(names, self.r.randint(0, 3)):
            body = self.mapping(fields)
            if self.chance(0.15):
                name = f"a{self.r.randint(0, 9)}"
                self.anchors[name] = "map"
                body.anchor = name
            pairs = [(Scalar("name"), Scalar(name) if self.chance(0.95) else self.value()),
                     (Scalar(inner), body)]
            if self.chance(0.1) and self.anchors:
                body.pairs.insert(0, (Scalar("<<"), Alias(self.r.choice(list(self.anchors)))))
            items.append(Map(pairs))
        return Seq(items)

    def document(self):
        names = ["c", "u", "x", "kind-kind", "1", "yes", "", "prod", "dev", "a b", "ü", "n1", "n2", "n3", "n4"]
        top = [
            (Scalar("apiVersion"), Scalar("v1") if self.chance(0.97) else self.value()),
            (Scalar("kind"), Scalar("Config") if self.chance(0.97) else self.value()),
            (Scalar("clusters"), self.named("cluster", [
                ("server", "string"), ("insecure-skip-tls-verify", "bool"), ("certificate-authority", "string"),
                ("certificate-authority-data", "b64"), ("tls-server-name", "string"), ("proxy-url", "string"),
                ("disable-compression", "bool")], names)),
            (Scalar("users"), self.named("user", [
                ("token", "string"), ("tokenFile", "string"), ("as", "string"), ("as-uid", "string"),
                ("as-groups", "list"), ("as-user-extra", "extra"), ("username", "string"), ("password", "string"),
                ("client-certificate-data", "b64"), ("client-key", "string"), ("exec", "exec"),
                ("auth-provider", "auth")], names)),
            (Scalar("contexts"), self.named("context", [("cluster", "string"), ("user", "string"),
                                                       ("namespace", "string")], names)),
            (Scalar("current-context"), self.value()),
        ]
        if self.chance(0.1):
            top.append((Scalar("preferences"), Map([(Scalar("colors"), self.value("bool"))])))
        self.r.shuffle(top)
        return Map(top)

    # -- text -------------------------------------------------------------------------------
    def scalar_text(self, s: Scalar, flow, indent):
        r, t = self.r, s.text
        tag = (s.tag + " ") if s.tag else ""
        if s.plain:
            return tag + t
        plain_ok = t and t == t.strip() and not any(c in t for c in "\n\t\\'\"#:,[]{}&*!|>%@`") \
            and t[0] not in "-?" and not t.startswith("<<") or t in ("<<", "1:20", "190:20:30", "127.0.0.1:6443",
                                                                    "tok:en", "https://h:6443")
        style = r.random()
        if plain_ok and style < 0.55 and not s.quote:
            return tag + t
        if style < 0.75 and "\n" not in t and "\t" not in t:
            return tag + "'" + t.replace("'", "''") + "'"
        if not flow and style < 0.82 and t and t == t.strip() and "\t" not in t:
            body = t.split("\n")
            pad = " " * (indent + 2)
            return tag + r.choice(["|", "|-", ">", ">-", "|+"]) + "\n" + "\n".join(pad + line for line in body)
        out = []
        for ch in t:
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append(r.choice(["\\t", "\t"]))
            elif ord(ch) > 127 and self.chance(0.5):
                out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
            elif ch == "/" and self.chance(0.3):
                out.append("\\/")        # PyYAML takes it, go-yaml v2 refuses it
            elif ch == "'" and self.chance(0.5):
                out.append("\\'")
            elif ch == "a" and self.chance(0.1):
                out.append("\\x61")
            else:
                out.append(ch)
        return tag + '"' + "".join(out) + '"'

    def anchor(self, node):
        name = getattr(node, "anchor", None)
        return f"&{name} " if name else ""

    def flow(self, node):
        if isinstance(node, Alias):
            return f"*{node.name}"
        if isinstance(node, Scalar):
            return self.scalar_text(node, True, 0)
        if isinstance(node, Seq):
            return self.anchor(node) + "[" + ", ".join(self.flow(i) for i in node.items) + "]"
        return self.anchor(node) + "{" + ", ".join(f"{self.flow(k)}: {self.flow(v)}" for k, v in node.pairs) + "}"

    def block(self, node, indent, lines, prefix):
        """Append `node` as block YAML; `prefix` is what starts its first line ("key:" or "-")."""
        pad = " " * indent
        if isinstance(node, (Scalar, Alias)) or self.chance(0.12) or \
                (isinstance(node, (Seq, Map)) and not (node.items if isinstance(node, Seq) else node.pairs)):
            text = self.flow(node) if not isinstance(node, Scalar) else self.scalar_text(node, False, indent)
            comment = "  # note" if self.chance(0.05) and not text.endswith(("|", "|-", ">")) else ""
            lines.append(f"{pad}{prefix} {text}{comment}".rstrip() if prefix else f"{pad}{text}")
            return
        lines.append(f"{pad}{prefix} {self.anchor(node)}".rstrip() if prefix else pad + self.anchor(node).rstrip())
        if not prefix and not self.anchor(node):
            lines.pop()
        step = self.r.choice([2, 2, 4])
        if isinstance(node, Seq):
            for item in node.items:
                self.block(item, indent + (step if prefix else 0), lines, "-")
        else:
            for k, v in node.pairs:
                key = self.flow(k)
                if self.chance(0.03):           # an explicit key: "? key" then ": value"
                    lines.append(" " * (indent + (step if prefix else 0)) + "? " + key)
                    self.block(v, indent + (step if prefix else 0), lines, ":")
                    continue
                self.block(v, indent + (step if prefix else 0), lines, key + ":")

    def json(self, node):
        """JSON text (YAML to go-yaml): strings through json.dumps, plain scalars as they are."""
        import json

        if isinstance(node, Alias):
            return '"alias"'
        if isinstance(node, Scalar):
            if node.plain or node.text in ("true", "false", "null") or (self.risky and self.chance(0.1)):
                return node.text or '""'
            return json.dumps(node.text, ensure_ascii=self.chance(0.5))
        if isinstance(node, Seq):
            return "[" + ", ".join(self.json(i) for i in node.items) + "]"
        return "{" + ", ".join(f"{self.json(k)}: {self.json(v)}" for k, v in node.pairs) + "}"

    def text(self):
        doc = self.document()
        if self.chance(0.1):
            return (self.json(doc) + "\n").encode("utf-8")
        lines = []
        if self.chance(0.05):
            lines.append(self.r.choice(["%YAML 1.1", "%YAML 1.2", "%TAG !e! tag:example.com,2000:"]))
            lines.append("---")
        if self.chance(0.1):
            lines.append("# generated")
        if self.chance(0.15):
            lines.append("---")
        self.block(doc, 0, lines, "")
        if self.chance(0.1):
            lines += ["---", "kind: Config", "current-context: second"]
        elif self.chance(0.05):
            lines += ["...", "# after the end"]
        if self.risky and self.chance(0.05):
            lines.insert(self.r.randrange(len(lines) + 1), "\tbad: tab")
        text = "\n".join(lines) + "\n"
        if self.chance(0.1):
            text = text.replace("\n", "\r\n")
        data = text.encode("utf-8")
        if self.chance(0.05):
            data = b"\xef\xbb\xbf" + data
        return data


def documents(seed, count):
    return [Gen(seed * 100003 + i).text() for i in range(count)]
