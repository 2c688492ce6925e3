"""Seeded parity cases: kubeconfig files + environment + connection flags, each small and readable.

case(seed, k) is deterministic and independent of how many cases are made, so one case can be
re-run alone (`python -m tests.connection --seed S --case K --show`). Categories take turns
(k modulo their number), so every category gets its share of any count. Nothing here says what
kubectl will do: the real kubectl is the oracle, the cases only make it say something.

Placeholders, replaced when a case runs (runner.substitute): @PLAIN@ @TLS@ @TLS2@ (ports of the
plain API server, the TLS one whose certificate CA 1 signed, the TLS one CA 2 signed),
@HTTP_PROXY@ @HTTPS_PROXY@ @SOCKS@ (proxy ports), @CA@ @CA2@ (CA files), @CA_DATA@ @CA2_DATA@
(their base64), @CA_PEM@ (CA 1's PEM text), @ALICE_CRT@ @ALICE_KEY@ @BOB_CRT@ @BOB_KEY@ (client
certificate files, CN alice/bob), @ALICE_CRT_DATA@ @ALICE_KEY_DATA@ (base64), @DIR@ (the case's
folder, also its working directory).
"""

from __future__ import annotations

import random
import string

from tests.connection.recorder import ONLY_BY_SNI, PROXIED_NAME
from tests.connection.yamlout import Raw, dump

PORTS = {"plain": "@PLAIN@", "tls": "@TLS@", "tls2": "@TLS2@"}


class Case(dict):
    """id, category, title, files {relative path: bytes}, env {name: value}, argv [flags]; and
    plugin_argv when the plugin is deliberately run with other flags (the self-test only)."""

    def __getattr__(self, name):
        return self[name]


def _tok(rng, prefix="tok"):
    return prefix + "-" + "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(8))


def url(kind="tls", host="127.0.0.1", scheme=None):
    scheme = scheme or ("http" if kind == "plain" else "https")
    return f"{scheme}://{host}:{PORTS[kind]}"


def config(clusters, users, contexts=None, current="ctx", extra=None):
    """A kubeconfig document: clusters {name: fields}, users {name: fields}, contexts {name:
    (cluster, user[, namespace])} (default: one context `ctx` of the first cluster and user)."""
    if contexts is None:
        contexts = {"ctx": (next(iter(clusters)), next(iter(users)))}
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
           "contexts": [{"name": n, "context": dict(zip(("cluster", "user", "namespace"), c))}
                        for n, c in contexts.items()],
           "users": [{"name": n, "user": u} for n, u in users.items()]}
    if current is not None:
        doc["current-context"] = current
    if extra:
        doc.update(extra)
    return doc


def tls_cluster(**extra):
    return dict({"server": url("tls"), "certificate-authority": "@CA@"}, **extra)


def _case(rng, files, env=None, argv=None, title=""):
    """Point kubectl at the files: mostly --kubeconfig, sometimes $KUBECONFIG."""
    env = dict(env or {})
    argv = list(argv or [])
    if "config" in files and "KUBECONFIG" not in env and "--kubeconfig" not in " ".join(argv):
        if rng.random() < 0.5:
            env["KUBECONFIG"] = "config" if rng.random() < 0.5 else "@DIR@/config"
        else:
            argv = ["--kubeconfig", "config"] + argv if rng.random() < 0.6 else ["--kubeconfig=@DIR@/config"] + argv
    return Case(files=files, env=env, argv=argv, title=title)


def _one(rng, cluster, user, title, files=None, **kw):
    doc = config({"c1": cluster}, {"u1": user})
    return _case(rng, dict(files or {}, config=dump(doc, rng)), title=title, **kw)


# ---------------------------------------------------------------------------------------------
# probes: YAML spellings of one value

TOKEN_PROBES = [
    "tok-plain", "'tok-single'", '"tok-double"', "'it''s-a-token'", '"tab\\there"', '"caf\\u00e9-tok"',
    "café-tok", "tok # a comment", '"tok # not a comment"', "|-\n  tok-literal", "|\n  tok-literal-clip",
    ">-\n  tok folded\n  lines", ">\n  folded-clip", "tok\n  continued", "12345", "0x1F", "1e3", "0o17",
    "012", "1_000", ".inf", "-.5", "+12", "true", "yes", "on", "y", "No", "null", "~", '""', "''",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "12:30:00", "!!str 123", "!!str true", "!!binary dG9rLWJpbg==",
    '!!int "12"', "[tok-a, tok-b]", "{a: b}", '"\\x41\\u0042-tok"', "'  padded  '", '"tok\\0nul"',
    '"tok\\r\\nX-Injected: 1"', '"\\u00a0nbsp"', '"\\U0001F600-tok"', "Bearer-tok", '"Bearer tok"', "tok:with:colons",
    "tok=,;\"", "'%41%42'", "!!null ''", "*undefined_alias", "&anch tok-anchored", "- tok-in-list",
    '"\\e-escape"', '"\\N\\_\\L\\P"', "!!float 1", "0b101", "1.0", "-0", '"\\/"', "tok\ttab-after",
]

BOOL_PROBES = ["true", "True", "TRUE", "tRUE", "yes", "Yes", "on", "ON", "y", "Y", "1", "0", "false", "no",
               "off", "n", "N", "null", "~", '"true"', "'false'", "!!bool true", "!!bool yes", "!!str true",
               "[true]", "{}", "t", "1.0", "!!bool 1"]

STRING_LIST_PROBES = ["[g-a, g-b]", "[g-a, g-a]", "g-single", "[]", "null", "[1, true]", '["g c", "g,d"]',
                      "- g-block\n- g-two", "['', g]", "[[g]]", "{g: h}", "[g-é]", "'g-str'", "[~]"]

EXTRA_PROBES = ["{scopes: [a, b]}", '{"k/with/slash": [v]}', "{Key-Upper: [v]}", "{k: v-string}",
                "{k%: [v]}", "{'': [v]}", "{k: []}", "{k: [1]}", "[a]", "null", "{dotted.key: [a, a]}",
                '{"sp ace": ["v w"]}', "{é: [ü]}", "{k: null}"]


def _probe(rng, probes):
    text = rng.choice(probes)
    return Raw(text), text


# ---------------------------------------------------------------------------------------------
# categories

def c_token(rng):
    raw, text = _probe(rng, TOKEN_PROBES)
    doc = config({"c1": tls_cluster()}, {"u1": {"token": raw}})
    if text.startswith("&anch"):
        doc["users"].append({"name": "u2", "user": {"token": Raw("*anch")}})
        doc["contexts"][0]["context"]["user"] = rng.choice(("u1", "u2"))
    return _case(rng, {"config": dump(doc, rng)}, title=f"token: {text}")


def c_basic(rng):
    odd = rng.random() < 0.4
    user = {"username": Raw(rng.choice(TOKEN_PROBES[:30] if odd else ["alice", "'al:ice'", '"\\u00e9l"'])),
            "password": Raw(rng.choice(["pw", "'p:w'", '"p\\u00e9w"'] + (["12", "''", "null", "true"] if odd else [])))}
    if rng.random() < 0.3:
        del user[rng.choice(("username", "password"))]
    cluster = tls_cluster() if rng.random() < 0.8 else {"server": url("plain")}
    return _one(rng, cluster, user, title="basic auth " + ", ".join(f"{k}: {v.text}" for k, v in user.items()))


def c_impersonation(rng):
    user = {"token": _tok(rng)}
    fields = rng.sample(["as", "as-groups", "as-uid", "as-user-extra"], rng.randint(1, 4))
    odd = rng.choice(fields) if rng.random() < 0.4 else None      # at most one odd spelling a case
    for f in fields:
        if f == "as-groups":
            user[f] = Raw(rng.choice(STRING_LIST_PROBES if f == odd else STRING_LIST_PROBES[:2]))
        elif f == "as-user-extra":
            user[f] = Raw(rng.choice(EXTRA_PROBES if f == odd else EXTRA_PROBES[:3]))
        else:
            user[f] = Raw(rng.choice(["12", "''", "null", "[dave]", "'  dave  '", "true", '"uid-\\t1"', "~"]
                                     if f == odd else ["dave", "'dave'", "system:admin", '"d\\u00e4ve"']))
    argv = []
    if rng.random() < 0.3:
        argv += rng.choice((["--as", "erin"], ["--as-group", "flag-g"], ["--as-uid", "u-9"], ["--as="],
                            ["--as", "erin", "--as-group", "g1", "--as-group", "g2"]))
    title = "impersonation " + ", ".join(f"{k}: {user[k].text}" for k in fields)
    return _one(rng, tls_cluster(), user, title=title + (f" flags {argv}" if argv else ""), argv=argv)


def c_insecure(rng):
    raw, text = _probe(rng, BOOL_PROBES)
    server = rng.choice(("tls2", "tls2", "tls"))
    cluster = {"server": url(server), "insecure-skip-tls-verify": raw}
    ca = rng.choice((None, "@CA@", "@CA2@", "data"))
    if ca == "data":
        cluster["certificate-authority-data"] = "@CA_DATA@"
    elif ca:
        cluster["certificate-authority"] = ca
    argv = rng.choice(([], [], ["--insecure-skip-tls-verify"], ["--insecure-skip-tls-verify=false"],
                       ["--certificate-authority", "@CA2@"]))
    return _one(rng, cluster, {"token": _tok(rng)}, argv=argv,
                title=f"insecure-skip-tls-verify: {text} ({server}, CA {ca}) {argv}")


SERVER_SPELLINGS = [
    "https://127.0.0.1:@TLS@", "https://127.0.0.1:@TLS@/", "https://127.0.0.1:@TLS@/prefix",
    "https://127.0.0.1:@TLS@/pre/fix/", "127.0.0.1:@TLS@", "localhost:@TLS@", "127.0.0.1:@PLAIN@",
    "http://127.0.0.1:@PLAIN@", "HTTPS://127.0.0.1:@TLS@", "Http://127.0.0.1:@PLAIN@", "https://LOCALHOST:@TLS@",
    "' https://127.0.0.1:@TLS@ '", "https://127.0.0.1:@TLS@?x=y", "https://127.0.0.1:@TLS@#frag",
    "http://127.0.0.1:@TLS@", "https://127.0.0.1:@PLAIN@", "https://[::1]:@TLS@", "[::1]:@TLS@",
    "http://[::1]:@PLAIN@", "https://[0:0:0:0:0:0:0:1]:@TLS@", "https://127.0.0.1:0@TLS@", "https://127.0.0.1",
    "//127.0.0.1:@TLS@", "https:127.0.0.1:@TLS@", "tcp://127.0.0.1:@TLS@", "https://127.0.0.1:@TLS@/%7Eprefix",
    "''", "null", "!!str https://127.0.0.1:@TLS@", "https://localhost.:@TLS@", "https://127.000.000.001:@TLS@",
    "https://[::ffff:127.0.0.1]:@TLS@", "https://127.0.0.1:@TLS@/api", "unix:///tmp/none.sock",
]


def c_server(rng):
    text = rng.choice(SERVER_SPELLINGS)
    cluster = {"server": Raw(text)}
    if rng.random() < 0.7:
        cluster["certificate-authority"] = "@CA@"
    argv = []
    if rng.random() < 0.25:
        argv = ["--server", rng.choice(SERVER_SPELLINGS[:12]).strip("' ")]
        argv = argv if rng.random() < 0.5 else ["-s", argv[1]]
    return _one(rng, cluster, {"token": _tok(rng)}, argv=argv, title=f"server: {text} {argv}")


def _wrapped(b64, width):
    return "\n".join(b64[i:i + width] for i in range(0, len(b64), width))


def c_ca_data(rng):
    form = rng.choice(["plain", "quoted", "literal", "folded", "binary", "pem", "nopad", "both-file",
                       "both-file2", "flag", "spaces", "urlsafe", "empty", "ca2", "list"])
    cluster = {"server": url("tls")}
    if form == "plain":
        cluster["certificate-authority-data"] = "@CA_DATA@"
    elif form == "quoted":
        cluster["certificate-authority-data"] = Raw('"@CA_DATA@"')
    elif form in ("literal", "folded"):
        cluster["certificate-authority-data"] = Raw(("|\n" if form == "literal" else ">\n") + "  @CA_DATA@")
    elif form == "binary":
        cluster["certificate-authority-data"] = Raw("!!binary @CA_DATA@")
    elif form == "pem":
        cluster["certificate-authority-data"] = Raw("|\n  " + "@CA_PEM_INDENTED@")
    elif form == "nopad":
        cluster["certificate-authority-data"] = Raw("@CA_DATA_NOPAD@")
    elif form == "both-file":
        cluster["certificate-authority-data"] = "@CA2_DATA@"
        cluster["certificate-authority"] = "@CA@"
    elif form == "both-file2":
        cluster["certificate-authority-data"] = "@CA_DATA@"
        cluster["certificate-authority"] = "@CA2@"
    elif form == "flag":
        cluster["certificate-authority-data"] = rng.choice(("@CA_DATA@", "@CA2_DATA@"))
    elif form == "spaces":
        cluster["certificate-authority-data"] = Raw('" @CA_DATA@ "')
    elif form == "urlsafe":
        cluster["certificate-authority-data"] = Raw("@CA_DATA_URLSAFE@")
    elif form == "empty":
        cluster["certificate-authority-data"] = Raw(rng.choice(("''", "null", "~")))
        cluster["certificate-authority"] = rng.choice(("@CA@", "@CA2@"))
    elif form == "ca2":
        cluster["server"] = url("tls2")
        cluster["certificate-authority-data"] = "@CA2_DATA@"
    else:
        cluster["certificate-authority-data"] = Raw("[@CA_DATA@]")
    argv = ["--certificate-authority", rng.choice(("@CA@", "@CA2@"))] if form == "flag" else []
    return _one(rng, cluster, {"token": _tok(rng)}, argv=argv, title=f"certificate-authority-data as {form} {argv}")


def c_tls_server_name(rng):
    name = rng.choice([ONLY_BY_SNI, "wrong.example.test", "localhost", "127.0.0.1", "'ONLY-BY-TLS-SERVER-NAME.TEST'",
                       "''", PROXIED_NAME, "null", "[::1]"])
    host = rng.choice(("127.0.0.1", "localhost", "[::1]"))
    cluster = {"server": url(rng.choice(("tls", "tls", "tls2")), host), "tls-server-name": Raw(name)}
    if rng.random() < 0.8:
        cluster["certificate-authority"] = "@CA@"
    if rng.random() < 0.2:
        cluster["insecure-skip-tls-verify"] = True
    argv = []
    if rng.random() < 0.3:
        argv = ["--tls-server-name", rng.choice((ONLY_BY_SNI, "other.test", "localhost"))]
    return _one(rng, cluster, {"token": _tok(rng)}, argv=argv, title=f"tls-server-name: {name} host {host} {argv}")


def c_yaml_structure(rng):
    t1, t2 = _tok(rng, "one"), _tok(rng, "two")
    form = rng.choice(["anchors", "merge", "dupkey", "docs", "tab-indent", "tab-value", "crlf", "bom",
                       "json", "flow", "comments", "tags", "explicit-key", "dup-names", "unicode-names",
                       "folded-server", "empty-docs", "yaml-directive", "bom-json", "nested-flow",
                       "tab-anchor", "tab-blank-lines", "control-server"])
    srv = "https://127.0.0.1:@TLS@"
    base = ("apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
            "contexts:\n- name: ctx\n  context: {cluster: c1, user: u1}\n")
    text = None
    if form == "anchors":
        text = (base + f"clusters:\n- name: c1\n  cluster: &c\n    server: {srv}\n    certificate-authority: @CA@\n"
                f"users:\n- name: u0\n  user: &u {{token: {t1}}}\n- name: u1\n  user: *u\n")
    elif form == "merge":
        text = (base + f"x-defaults: &d\n  certificate-authority: @CA@\n  server: https://127.0.0.1:@TLS2@\n"
                f"clusters:\n- name: c1\n  cluster:\n    <<: *d\n    server: {srv}\n"
                f"users:\n- name: u1\n  user:\n    <<: [{{token: {t1}}}, {{token: {t2}}}]\n")
    elif form == "dupkey":
        text = (base + f"clusters:\n- name: c1\n  cluster:\n    server: {srv}\n    certificate-authority: @CA@\n"
                f"users:\n- name: u1\n  user:\n    token: {t1}\n    token: {t2}\n")
    elif form == "docs":
        text = (base + f"clusters:\n- name: c1\n  cluster: {{server: '{srv}', certificate-authority: @CA@}}\n"
                f"users:\n- name: u1\n  user: {{token: {t1}}}\n---\n" + base.replace("ctx", "ctx")
                + f"users:\n- name: u1\n  user: {{token: {t2}}}\n")
    elif form == "tab-indent":
        text = (base + f"clusters:\n- name: c1\n  cluster:\n\tserver: {srv}\n"
                f"users:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "tab-value":
        text = (base + f"clusters:\n- name: c1\n  cluster:\n    server:\t{srv}\n    certificate-authority:\t@CA@\n"
                f"users:\n- name: u1\n  user:\n    token:\t{t1}\t\n")
    elif form == "tab-anchor":      # an anchor sends the document through PyYAML's pure-Python scanner
        text = (base + f"clusters:\n- name:\tc1\n  cluster: &c\n    server:\t{srv}\t\n"
                f"    certificate-authority: \t@CA@\nusers:\n- name: u1\n  user:\n    token:\t{t1}\t# tab\n")
    elif form == "tab-blank-lines":
        text = (base + f"\t\nclusters:\n- name: c1\n  cluster:\n  \t\n    server: {srv}\n\t# a comment after a tab\n"
                f"    certificate-authority: @CA@\nusers:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "control-server":  # Go's url.Parse refuses any control byte; urlsplit strips some
        ctl = rng.choice(["\\t", "\\x01", "\\x7f", "\\n", "\\r"])
        where = rng.choice(["end", "start", "path"])
        server = {"end": f"{srv}{ctl}", "start": f"{ctl}{srv}", "path": f"{srv}/a{ctl}b"}[where]
        text = (base + f"clusters:\n- name: c1\n  cluster:\n    server: \"{server}\"\n    certificate-authority: @CA@\n"
                f"users:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "explicit-key":
        text = (base + f"clusters:\n- name: c1\n  cluster:\n    ? server\n    : {srv}\n    ? certificate-authority\n"
                f"    : @CA@\nusers:\n- ? name\n  : u1\n  user: {{? token : {t1}}}\n")
    elif form == "tags":
        text = (base + f"clusters: !!seq\n- !!map\n  name: !!str c1\n  cluster: !!map {{server: !!str '{srv}', "
                f"certificate-authority: @CA@}}\nusers:\n- name: u1\n  user: !!map\n    !!str token: !!str {t1}\n")
    elif form == "dup-names":
        text = (base + f"clusters:\n- name: c1\n  cluster: {{server: '{srv}', certificate-authority: @CA@}}\n"
                f"- name: c1\n  cluster: {{server: 'https://127.0.0.1:@TLS2@', certificate-authority: @CA@}}\n"
                f"users:\n- name: u1\n  user: {{token: {t1}}}\n- name: u1\n  user: {{token: {t2}}}\n")
    elif form == "unicode-names":
        text = (f"apiVersion: v1\nkind: Config\ncurrent-context: \"k\\u00f6ntext\"\ncontexts:\n- name: köntext\n"
                f"  context: {{cluster: clüster, user: üser}}\nclusters:\n- name: clüster\n  cluster: "
                f"{{server: '{srv}', certificate-authority: @CA@}}\nusers:\n- name: üser\n  user: {{token: {t1}}}\n")
    elif form == "folded-server":
        text = (base + f"clusters:\n- name: c1\n  cluster:\n    server: >-\n      https://127.0.0.1:@TLS@\n"
                f"    certificate-authority: @CA@\nusers:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "empty-docs":
        text = ("---\n# nothing\n---\n" + base + f"clusters:\n- name: c1\n  cluster: {{server: '{srv}', "
                f"certificate-authority: @CA@}}\nusers:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "yaml-directive":
        text = ("%YAML 1.1\n---\n" + base + f"clusters:\n- name: c1\n  cluster: {{server: '{srv}', "
                f"certificate-authority: @CA@}}\nusers:\n- name: u1\n  user: {{token: {t1}}}\n")
    elif form == "nested-flow":
        text = (f"{{apiVersion: v1, kind: Config, current-context: ctx, contexts: [{{name: ctx, context: "
                f"{{cluster: c1, user: u1}}}}], clusters: [{{name: c1, cluster: {{server: '{srv}', "
                f"certificate-authority: @CA@}}}}], users: [{{name: u1, user: {{token: {t1}}}}}]}}\n")
    if text is not None:
        data = text.encode()
        if rng.random() < 0.2:
            data = data.replace(b"\n", b"\r\n")
        return _case(rng, {"config": data}, title=f"yaml {form}")
    doc = config({"c1": tls_cluster()}, {"u1": {"token": t1}})
    kw = {"crlf": form == "crlf" or None, "bom": form in ("bom", "bom-json") or None}
    data = dump(doc, rng, json_chance=1.0 if form in ("json", "bom-json") else 0.0, **kw)
    return _case(rng, {"config": data}, title=f"yaml {form}")


WRONG_TYPES = [
    ("clusters", "{c1: {server: x}}"), ("users", "null"), ("users", "{}"), ("contexts", "[]"),
    ("current-context", "[ctx]"), ("current-context", "12"), ("kind", "Pod"), ("apiVersion", "v2"),
    ("apiVersion", "null"), ("kind", "null"), ("preferences", "[]"), ("preferences", "{colors: yes}"),
    ("extensions", "{}"), ("unknown-top", "1"),
    ("cluster.server", "8080"), ("cluster.server", "[https://127.0.0.1:@TLS@]"), ("cluster.certificate-authority", "12"),
    ("cluster.proxy-url", "{}"), ("cluster.tls-server-name", "7"), ("cluster.insecure-skip-tls-verify", "'yes'"),
    ("cluster.disable-compression", "'true'"), ("cluster.unknown", "x"), ("cluster", "null"), ("cluster", "[]"),
    ("user.token", "[a]"), ("user.token", "123"), ("user.tokenFile", "[]"), ("user.as-groups", "grp"),
    ("user.as", "{}"), ("user.username", "42"), ("user", "null"), ("user", "'str'"), ("user.unknown-field", "1"),
    ("context.namespace", "5"), ("context.cluster", "null"), ("context.user", "[u1]"), ("context", "null"),
    ("name", "7"), ("name", "null"), ("cluster.server", "true"), ("user.token", "1.5"),
]


def c_yaml_types(rng):
    where, raw = rng.choice(WRONG_TYPES)
    doc = config({"c1": tls_cluster()}, {"u1": {"token": _tok(rng)}})
    part, _, field = where.partition(".")
    if part in ("cluster", "user", "context"):
        holder = doc[part + ("s" if part != "cluster" else "s")][0]
        if field:
            holder[part][field] = Raw(raw)
        else:
            holder[part] = Raw(raw)
    elif part == "name":
        doc["users"][0]["name"] = Raw(raw)
        doc["contexts"][0]["context"]["user"] = "7"
    else:
        doc[part] = Raw(raw)
    return _case(rng, {"config": dump(doc, rng)}, title=f"wrong type {where}: {raw}")


def _file_doc(rng, tag, clusters_used, current=True):
    """One of several merged files: cluster/user/context names that collide across files."""
    def cluster(kind):
        return {"tls": tls_cluster(), "plain": {"server": url("plain")},
                "tls2": {"server": url("tls2"), "certificate-authority-data": "@CA2_DATA@"}}[kind]
    clusters = {"shared": cluster(rng.choice(clusters_used)), f"c-{tag}": cluster(rng.choice(clusters_used))}
    users = {"shared": {"token": f"tok-{tag}-shared"}, f"u-{tag}": {"token": f"tok-{tag}-own"}}
    contexts = {"shared": ("shared", "shared"), f"ctx-{tag}": (f"c-{tag}", rng.choice(("shared", f"u-{tag}"))),
                "mixed": (rng.choice(("shared", f"c-{tag}")), rng.choice(("shared", f"u-{tag}")))}
    cur = rng.choice(("shared", f"ctx-{tag}", "mixed", "ctx-a", "ctx-b")) if current else None
    return config(clusters, users, contexts, current=cur)


def c_merge(rng):
    n = rng.choice((2, 3))
    tags = "abc"[:n]
    files, paths = {}, []
    for i, tag in enumerate(tags):
        name = rng.choice((f"{tag}.yaml", f"sub/{tag}.yaml", f"{tag}"))
        files[name] = dump(_file_doc(rng, tag, ["tls", "tls2", "plain"], current=rng.random() < 0.7), rng)
        paths.append(rng.choice((name, "@DIR@/" + name)) if not name.startswith("sub/") else
                     rng.choice((name, "./" + name, "sub/../" + name)))
    if rng.random() < 0.3:
        paths.insert(rng.randint(0, len(paths)), rng.choice(("missing.yaml", "@DIR@/nope/none", "")))
    if rng.random() < 0.15:
        paths.append(paths[0])
    env = {"KUBECONFIG": ":".join(paths)}
    argv = []
    if rng.random() < 0.5:
        argv += rng.choice((["--context", "mixed"], ["--context", "ctx-b"], ["--context", "shared"],
                            ["--user", "u-c"], ["--cluster", "c-a"], ["--context=nope"], ["--user", "shared"]))
    return _case(rng, files, env=env, argv=argv, title=f"KUBECONFIG={env['KUBECONFIG']} {argv}")


def c_kubeconfig_flag(rng):
    form = rng.choice(["missing", "relative-sub", "dir", "empty-file", "empty-value", "both-env", "dot",
                       "colon-list", "relative-ca", "home-default"])
    doc = config({"c1": tls_cluster()}, {"u1": {"token": _tok(rng)}})
    files = {"config": dump(doc, rng)}
    env, argv = {}, []
    if form == "missing":
        argv = ["--kubeconfig", "nope.yaml"]
    elif form == "relative-sub":
        files = {"sub/dir/kc": files["config"]}
        argv = ["--kubeconfig", "sub/dir/kc"]
    elif form == "dir":
        files["sub/x"] = b""
        argv = ["--kubeconfig", "sub"]
    elif form == "empty-file":
        files["empty"] = rng.choice((b"", b"\n", b"---\n", b"# only a comment\n", b"{}\n"))
        argv = ["--kubeconfig", "empty", "-s", url("plain")]
    elif form == "empty-value":
        argv = ["--kubeconfig=", "-s", url("plain")]
        env = {"KUBECONFIG": "config"}
    elif form == "both-env":
        other = config({"c1": {"server": url("plain")}}, {"u1": {"token": "tok-env-file"}})
        files["other"] = dump(other, rng)
        env = {"KUBECONFIG": "other"}
        argv = ["--kubeconfig", "config"]
    elif form == "dot":
        argv = ["--kubeconfig", "./config"]
    elif form == "colon-list":
        argv = ["--kubeconfig", "config:config"]
    elif form == "relative-ca":
        doc = config({"c1": {"server": url("tls"), "certificate-authority": rng.choice(("ca.crt", "./ca.crt",
                                                                                         "../ca.crt"))}},
                     {"u1": {"token": _tok(rng)}})
        files = {"kube/config": dump(doc, rng), "kube/ca.crt": b"@CA_PEM@", "ca.crt": b"@CA2_PEM@"}
        argv = ["--kubeconfig", "kube/config"]
    else:
        files = {"home/.kube/config": files["config"]}
        env = {"HOME": "@DIR@/home"}
    return Case(files=files, env=env, argv=argv, title=f"kubeconfig {form}")


def _two_of_everything(rng):
    doc = config({"c-tls": tls_cluster(), "c-plain": {"server": url("plain")},
                  "c-tls2": {"server": url("tls2"), "certificate-authority": "@CA2@"}},
                 {"u-tok": {"token": "tok-u-tok"}, "u-other": {"token": "tok-u-other"},
                  "u-cert": {"client-certificate": "@ALICE_CRT@", "client-key": "@ALICE_KEY@"}},
                 {"ctx": ("c-tls", "u-tok"), "ctx-plain": ("c-plain", "u-other", "ns-x"),
                  "ctx-tls2": ("c-tls2", "u-cert")},
                 current=rng.choice(("ctx", "ctx-plain", "ctx-tls2")))
    return doc


FLAG_CHOICES = [
    ["--context", "ctx-plain"], ["--context", "ctx-tls2"], ["--context=ctx"], ["--cluster", "c-plain"],
    ["--cluster", "c-tls2"], ["--user", "u-other"], ["--user", "u-cert"], ["--user=nope"], ["--context", "nope"],
    ["--server", "https://127.0.0.1:@TLS@"], ["-s", "http://127.0.0.1:@PLAIN@"], ["--server", "127.0.0.1:@PLAIN@"],
    ["--server", "localhost:@TLS@"], ["--server=https://[::1]:@TLS2@"], ["--token", "tok-flag"], ["--token="],
    ["--as", "dave"], ["--as-group", "g1", "--as-group", "g2"], ["--as", "dave", "--as-group", "g1"],
    ["--as-uid", "uid-1"], ["--as", "dave", "--as-uid", "uid-1"], ["--as-group=g,h"],
    ["--certificate-authority", "@CA@"], ["--certificate-authority", "@CA2@"], ["--insecure-skip-tls-verify"],
    ["--insecure-skip-tls-verify=true"], ["--insecure-skip-tls-verify=false"], ["-n", "ns-flag"],
    ["--namespace=other"], ["--tls-server-name", ONLY_BY_SNI], ["--client-certificate", "@BOB_CRT@",
                                                                "--client-key", "@BOB_KEY@"],
    ["--username", "un", "--password", "pw"], ["--request-timeout", "5s"], ["--as-user-extra", "scopes=a"],
    ["--proxy-url", "http://127.0.0.1:@HTTP_PROXY@"], ["--disable-compression"], ["--as-user-extra", "k/x=v1",
                                                                                  "--as-user-extra", "k/x=v2"],
]


def c_flags(rng):
    argv = []
    for choice in rng.sample(FLAG_CHOICES, rng.randint(1, 4)):
        argv += choice
    return _case(rng, {"config": dump(_two_of_everything(rng), rng)}, argv=argv, title=f"flags {argv}")


def c_flag_syntax(rng):
    form = rng.choice([["-s", url("plain")], ["-s" + url("plain")], ["--server=" + url("plain")],
                       ["--token=tok=with=equals"], ["--token", "tok with space"], ["--token", "-dash-tok"],
                       ["--token=-dash-tok"], ["--as", ""],
                       ["--insecure-skip-tls-verify=1"], ["--insecure-skip-tls-verify=yes"], ["--as-group="],
                       ["-n=ns"], ["-nns"], ["--namespace", ""], ["--context", ""], ["--server", ""],
                       ["--token", "t\u00e9k"], ["--user", ""], ["--cluster="], ["--certificate-authority="],
                       ["--token", "a", "--token", "b"], ["-s", url("tls"), "-s", url("plain")],
                       ["--as", "a", "--as", "b"], ["--as-uid=", "--as", "x"]])
    return _case(rng, {"config": dump(_two_of_everything(rng), rng)}, argv=form, title=f"flag syntax {form}")


PROXY_VALUES = {
    "http": ["http://127.0.0.1:@HTTP_PROXY@", "127.0.0.1:@HTTP_PROXY@", "http://u:p%40ss@127.0.0.1:@HTTP_PROXY@",
             "http://localhost:@HTTP_PROXY@", "HTTP://127.0.0.1:@HTTP_PROXY@", "http://[::1]:@HTTP_PROXY@",
             "http://user@127.0.0.1:@HTTP_PROXY@", "http://127.0.0.1:@HTTP_PROXY@/path"],
    "socks5": ["socks5://127.0.0.1:@SOCKS@", "socks5://u:p@127.0.0.1:@SOCKS@", "socks5h://127.0.0.1:@SOCKS@"],
    "https": ["https://localhost:@HTTPS_PROXY@", "https://127.0.0.1:@HTTPS_PROXY@", "https://u:p@localhost:@HTTPS_PROXY@"],
    "bad": ["ftp://127.0.0.1:@HTTP_PROXY@", "http://127.0.0.1:notaport", "://x", ""],
}
NO_PROXY_FORMS = [PROXIED_NAME, "." + PROXIED_NAME.split(".", 1)[1], PROXIED_NAME.split(".", 1)[1], "*",
                  f"{PROXIED_NAME}:@TLS@", f"{PROXIED_NAME}:1", "127.0.0.0/8", "other.test", f" {PROXIED_NAME} ",
                  PROXIED_NAME.upper(), f"other.test,{PROXIED_NAME}", "localhost", "LOCALHOST", "*.proxied.test",
                  ".test", "::1", "[::1]"]


def _proxy_value(rng):
    kind = rng.choice(("http", "http", "http", "socks5", "https", "bad"))
    return rng.choice(PROXY_VALUES[kind])


def c_proxy_env(rng):
    host = rng.choice((PROXIED_NAME, PROXIED_NAME, "LOCALHOST", "localhost", "127.0.0.1", "[::1]", "Localhost"))
    kind = rng.choice(("tls", "tls", "plain"))
    cluster = {"server": url(kind, host)}
    if kind == "tls":
        cluster["certificate-authority"] = "@CA@"
    env = {}
    for name in rng.sample(["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"],
                           rng.randint(1, 3)):
        env[name] = _proxy_value(rng)
    if rng.random() < 0.5:
        env[rng.choice(("NO_PROXY", "no_proxy"))] = rng.choice(NO_PROXY_FORMS)
    if rng.random() < 0.15:
        env["NO_PROXY"], env["no_proxy"] = rng.sample(NO_PROXY_FORMS, 2)
    if rng.random() < 0.1:
        env["REQUEST_METHOD"] = "GET"
    if rng.random() < 0.1:
        env[rng.choice(("HTTPS_PROXY", "HTTP_PROXY"))] = ""
    if rng.random() < 0.15:
        cluster["proxy-url"] = _proxy_value(rng)
    return _one(rng, cluster, {"token": _tok(rng)}, env=env,
                title=f"proxy env for {cluster['server']}: {env}" + (f" proxy-url {cluster.get('proxy-url')}"
                                                                    if "proxy-url" in cluster else ""))


def c_proxy_url(rng):
    host = rng.choice((PROXIED_NAME, "127.0.0.1", "localhost", "[::1]"))
    kind = rng.choice(("tls", "tls", "plain", "tls2"))
    cluster = {"server": url(kind, host), "proxy-url": Raw(rng.choice(
        [v for vs in PROXY_VALUES.values() for v in vs] + ["null", "''", "[x]"]) or "''")}
    if kind != "plain":
        cluster["certificate-authority"] = "@CA@" if kind == "tls" else rng.choice(("@CA@", "@CA2@"))
    user = {"token": _tok(rng)} if rng.random() < 0.8 else {"client-certificate-data": "@ALICE_CRT_DATA@",
                                                           "client-key-data": "@ALICE_KEY_DATA@"}
    env = {}
    if rng.random() < 0.3:
        env["HTTPS_PROXY"] = rng.choice(PROXY_VALUES["http"])
    if rng.random() < 0.2:
        env["NO_PROXY"] = "*"
    argv = ["--proxy-url", rng.choice(PROXY_VALUES["http"] + PROXY_VALUES["socks5"])] if rng.random() < 0.15 else []
    return _one(rng, cluster, user, env=env, argv=argv,
                title=f"proxy-url {cluster['proxy-url'].text} for {cluster['server']} env {env} {argv}")


def c_token_file(rng):
    content = rng.choice([b"tok-file\n", b"tok-file", b"  tok-file  \n", b"tok-file\r\n", b"\n", b"",
                          b"tok\nsecond-line\n", b"\xef\xbb\xbftok-bom\n", "tök-file\n".encode(), b"tok\tfile\n"])
    files = {"token.txt": content}
    path = rng.choice(("token.txt", "@DIR@/token.txt", "./token.txt", "missing-token.txt", "sub/../token.txt"))
    user = {"tokenFile": path}
    if rng.random() < 0.4:
        user["token"] = Raw(rng.choice(("tok-inline", "''", "null")))
    if rng.random() < 0.15:
        user["username"], user["password"] = "un", "pw"
    argv = ["--token", "tok-flag"] if rng.random() < 0.15 else []
    return _one(rng, tls_cluster(), user, files=files, argv=argv, title=f"tokenFile {path} = {content!r} user {list(user)} {argv}")


def c_userinfo(rng):
    userinfo = rng.choice(("u:p", "u", "u:", ":p", "us%40er:p%3Ass", "u:p@x", "%zz:p", "u:p w"))
    kind = rng.choice(("tls", "plain"))
    cluster = {"server": f"{'https' if kind == 'tls' else 'http'}://{userinfo}@127.0.0.1:{PORTS[kind]}"}
    if kind == "tls":
        cluster["certificate-authority"] = "@CA@"
    user = rng.choice(({"token": "tok-with-userinfo"}, {"username": "un", "password": "pw"}, {},
                       {"client-certificate": "@ALICE_CRT@", "client-key": "@ALICE_KEY@"}))
    argv = rng.choice(([], [], ["--token", "tok-flag"], ["-s", "https://f:g@127.0.0.1:@TLS@"]))
    return _one(rng, cluster, user, argv=argv, title=f"userinfo {cluster['server']} user {list(user)} {argv}")


def c_client_cert(rng):
    form = rng.choice(["data", "files", "relative-files", "data-and-files", "cert-only", "key-only",
                       "cert-and-token", "swapped", "flags-override", "wrong-key", "pem-inline"])
    files = {}
    user = {}
    if form == "data":
        user = {"client-certificate-data": "@ALICE_CRT_DATA@", "client-key-data": "@ALICE_KEY_DATA@"}
    elif form == "files":
        user = {"client-certificate": "@ALICE_CRT@", "client-key": "@ALICE_KEY@"}
    elif form == "relative-files":
        files = {"certs/a.crt": b"@ALICE_CRT_PEM@", "certs/a.key": b"@ALICE_KEY_PEM@"}
        user = {"client-certificate": "certs/a.crt", "client-key": "./certs/a.key"}
    elif form == "data-and-files":
        user = {"client-certificate-data": "@ALICE_CRT_DATA@", "client-key-data": "@ALICE_KEY_DATA@",
                "client-certificate": "@BOB_CRT@", "client-key": "@BOB_KEY@"}
    elif form == "cert-only":
        user = {"client-certificate": "@ALICE_CRT@"}
    elif form == "key-only":
        user = {"client-key-data": "@ALICE_KEY_DATA@", "token": "tok-key-only"}
    elif form == "cert-and-token":
        user = {"client-certificate": "@ALICE_CRT@", "client-key": "@ALICE_KEY@", "token": "tok-and-cert"}
    elif form == "swapped":
        user = {"client-certificate": "@ALICE_KEY@", "client-key": "@ALICE_CRT@"}
    elif form == "flags-override":
        user = {"client-certificate": "@ALICE_CRT@", "client-key": "@ALICE_KEY@"}
    elif form == "wrong-key":
        user = {"client-certificate": "@ALICE_CRT@", "client-key": "@BOB_KEY@"}
    else:
        user = {"client-certificate-data": "@ALICE_CRT_DATA@", "client-key-data": "@ALICE_KEY_DATA@",
                "as": "dave"}
    argv = ["--client-certificate", "@BOB_CRT@", "--client-key", "@BOB_KEY@"] if form == "flags-override" else []
    server = rng.choice(("tls", "tls", "tls2"))
    cluster = {"server": url(server), "certificate-authority": "@CA@" if server == "tls" else "@CA2@"}
    doc = config({"c1": cluster}, {"u1": user})
    files["config"] = dump(doc, rng)
    return _case(rng, files, argv=argv, title=f"client certificate {form} ({server})")


EXEC_SCRIPT = """#!/bin/sh
printf '{"apiVersion": "%s", "kind": "ExecCredential", "status": {"token": "exec-%s-%s-%s"}}\\n' \\
  "$PARITY_OUT_VERSION" "${PARITY_VAR:-none}" "${1:-noarg}" "${2:-noarg}"
"""


def c_exec(rng):
    version = rng.choice(("client.authentication.k8s.io/v1",) * 3 + ("client.authentication.k8s.io/v1beta1",) * 3
                         + (None, "client.authentication.k8s.io/v1alpha1"))
    out_version = rng.choice((version, version, version, "client.authentication.k8s.io/v1beta1")) or \
        "client.authentication.k8s.io/v1"
    files = {"bin/cred": EXEC_SCRIPT.encode()}
    exec_ = {"command": rng.choice(("@DIR@/bin/cred", "./bin/cred", "bin/cred", "cred"))}
    if version:
        exec_["apiVersion"] = version
    mode = rng.choice((None, "Never", "Never", "IfAvailable", "IfAvailable", "Always", "never"))
    if mode:
        exec_["interactiveMode"] = mode
    env = [{"name": "PARITY_OUT_VERSION", "value": out_version}]
    if rng.random() < 0.6:
        env.append({"name": "PARITY_VAR", "value": rng.choice(("v1", "x-y", "12"))})
    exec_["env"] = env
    if rng.random() < 0.6:
        exec_["args"] = rng.sample(["a1", "b2", "c3"], rng.randint(1, 2))
    if rng.random() < 0.2:
        exec_["provideClusterInfo"] = rng.choice((True, False))
    if rng.random() < 0.2:
        exec_["installHint"] = "install cred"
    user = {"exec": exec_}
    if rng.random() < 0.2:
        user["token"] = "tok-beats-exec"
    process_env = {"PARITY_OUT_VERSION": "client.authentication.k8s.io/v1beta1"}
    if exec_["command"] == "cred":
        process_env["PATH"] = "@DIR@/bin:/usr/bin:/bin"
    cluster = tls_cluster() if rng.random() < 0.85 else {"server": url("plain")}
    c = _one(rng, cluster, user, env=process_env,
             title=f"exec {exec_['command']} apiVersion {version} out {out_version} mode {mode} "
                   f"args {exec_.get('args')} token {'token' in user}")
    c["files"].update(files)      # the script
    c["executable"] = ["bin/cred"]
    return c


def c_hosts(rng):
    host = rng.choice(("127.0.0.1", "localhost", "[::1]", "LOCALHOST", "127.0.0.2", "[::ffff:127.0.0.1]"))
    kind = rng.choice(("tls", "plain", "tls2"))
    cluster = {"server": url(kind, host)}
    if kind != "plain":
        cluster["certificate-authority"] = rng.choice(("@CA@", "@CA2@"))
    return _one(rng, cluster, {"token": _tok(rng)}, title=f"host {cluster['server']} CA {cluster.get('certificate-authority')}")


CATEGORIES = {
    "scalar/token": c_token, "scalar/basic": c_basic, "scalar/impersonation": c_impersonation,
    "scalar/insecure": c_insecure, "scalar/server": c_server, "scalar/ca-data": c_ca_data,
    "scalar/tls-server-name": c_tls_server_name, "yaml/structure": c_yaml_structure, "yaml/types": c_yaml_types,
    "merge/KUBECONFIG": c_merge, "merge/--kubeconfig": c_kubeconfig_flag, "flags/override": c_flags,
    "flags/syntax": c_flag_syntax, "proxy/env": c_proxy_env, "proxy/proxy-url": c_proxy_url,
    "auth/tokenFile": c_token_file, "auth/userinfo": c_userinfo, "auth/client-cert": c_client_cert,
    "auth/exec": c_exec, "hosts": c_hosts,
}
_NAMES = list(CATEGORIES)


def case(seed: int, k: int) -> Case:
    name = _NAMES[k % len(_NAMES)]
    rng = random.Random(f"parity/{seed}/{k}")
    c = CATEGORIES[name](rng)
    c["id"], c["category"] = k, name
    return c


def cases(seed: int, count: int) -> list[Case]:
    return [case(seed, k) for k in range(count)]


DEFAULT_SEED = 20          # issue #20
DEFAULT_COUNT = 1000
