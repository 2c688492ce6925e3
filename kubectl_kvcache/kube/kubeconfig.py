"""Where requests go and as whom, decided as kubectl v1.37.2 decides it before a byte is sent. Reads
files only; client.py carries the result out. Each step is client-go@v0.37.2's:

- files (tools/clientcmd/loader.go): --kubeconfig alone (it must exist), else every path of
  $KUBECONFIG in order (duplicates and empty entries dropped, missing files skipped, no `~`
  expansion), else ~/.kube/config. A file that exists but cannot be read or decoded fails the whole
  command, as kubectl's Load does.
- decoding (goyaml.py, kubeconfig_v1.py): YAML -> JSON as sigs.k8s.io/yaml, typed v1 Config,
  defaults, names -> maps.
- merge (loader.go Load + merge.go): each cluster/user/context name from the first file that has it,
  whole; current-context from the first file that sets one; then relative paths (certificate-
  authority, client-certificate, client-key, tokenFile, an exec command with a '/') resolved against
  the directory of the file each entry came from (ResolveLocalPaths).
- flags (cli-runtime genericclioptions/config_flags.go -> ConfigOverrides; client_config.go
  getContext/getAuthInfo/getCluster; validation.go through ConfirmUsable).
- rest.Config and its transport (client_config.go ClientConfig, rest/url_utils.go, transport/).
"""

from __future__ import annotations

import base64
import os
import re
from kubectl_kvcache.kube import kubeconfig_v1 as v1
from kubectl_kvcache.errors import PluginError, secret
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.record import Record

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Target(Record):
    """One API server and one identity: what the transport sends (CONTRACT.md)."""

    __slots__ = ("server", "namespace", "authorization", "impersonation", "proxy", "ca_data", "ca_file", "insecure",
                 "tls_server_name", "cert_data", "cert_file", "key_data", "key_file", "exec", "auth_provider",
                 "cluster", "user_name", "disable_compression", "token_file")
    __hash__ = None     # mutable: not hashable

    def __init__(self, server: str, namespace: str = "default", authorization: str | None = None,
                 impersonation: list[tuple[str, str]] | None = None, proxy: str | None = None,
                 ca_data: bytes | None = None, ca_file: str | None = None, insecure: bool = False,
                 tls_server_name: str | None = None, cert_data: bytes | None = None, cert_file: str | None = None,
                 key_data: bytes | None = None, key_file: str | None = None, exec: dict | None = None,
                 auth_provider: dict | None = None, cluster: dict | None = None,
                 user_name: str = "", disable_compression: bool = False, token_file: str | None = None):
        self.server = server                    # scheme://host[:port][/prefix], no userinfo
        self.namespace = namespace
        self.authorization = authorization      # the Authorization header known without a plugin
        self.impersonation = [] if impersonation is None else impersonation   # Impersonate-* headers, in order
        self.proxy = proxy                      # proxy URL for this server; None: direct
        self.ca_data = ca_data                  # PEM
        self.ca_file = ca_file
        self.insecure = insecure
        self.tls_server_name = tls_server_name
        self.cert_data = cert_data              # PEM
        self.cert_file = cert_file
        self.key_data = key_data
        self.key_file = key_file
        self.exec = exec                        # the user's exec plugin, when kubectl would run it
        self.auth_provider = auth_provider      # the user's auth-provider, when kubectl would ask it
        self.cluster = {} if cluster is None else cluster  # the merged cluster, as v1 JSON (exec's cluster info)
        self.user_name = user_name
        self.disable_compression = disable_compression
        # the file the bearer token is re-read from while the run lasts (a tokenFile, the service
        # account's token in a Pod): client.py's FileToken, as client-go's cachingTokenSource
        self.token_file = token_file

    @property
    def tls(self) -> bool:
        return self.server.lower().startswith("https://")


# -- files --------------------------------------------------------------------------------------

def _paths(conn: Connection) -> tuple[list[str], bool]:
    """The kubeconfig files in precedence order, and whether any path was asked for at all."""
    if conn.kubeconfig:
        if not os.path.exists(conn.kubeconfig) and not os.path.islink(conn.kubeconfig):
            raise PluginError(f"kubeconfig {conn.kubeconfig} does not exist")
        return [conn.kubeconfig], True
    env = os.environ.get("KUBECONFIG")
    if env:
        paths = []
        for p in env.split(os.pathsep):         # filepath.SplitList + deduplicate; "" skipped in Load
            if p and p not in paths:
                paths.append(p)
        return paths, True
    return [os.path.join(os.path.expanduser("~"), ".kube", "config")], False


class File(Record):
    """One kubeconfig file, decoded and converted (api.Config): entries by name."""

    __slots__ = ("path", "clusters", "users", "contexts", "current_context", "colors", "preference_extensions",
                 "extensions")
    __hash__ = None

    def __init__(self, path, clusters=None, users=None, contexts=None, current_context="", colors=False,
                 preference_extensions=None, extensions=None):
        self.path = path
        self.clusters = {} if clusters is None else clusters
        self.users = {} if users is None else users
        self.contexts = {} if contexts is None else contexts
        self.current_context = current_context
        self.colors = colors
        self.preference_extensions = {} if preference_extensions is None else preference_extensions
        self.extensions = {} if extensions is None else extensions


def _object(doc, where):
    """`users[0] "admin"`-style name of the list entry a field path is in (names are not secret)."""
    m = re.match(r"(clusters|users|contexts)\[(\d+)\]", where or "")
    if not m or not isinstance(doc, dict):
        return ""
    try:
        name = doc[m.group(1)][int(m.group(2))].get("name")
    except (AttributeError, IndexError, KeyError, TypeError):
        name = None
    kind = {"clusters": "cluster", "users": "user", "contexts": "context"}[m.group(1)]
    return f"{kind} {name!r} ({m.group(0)})" if isinstance(name, str) else m.group(0)


def read_file(path) -> File | None:
    """clientcmd.LoadFromFile: the decoded file; None when it does not exist."""
    from kubectl_kvcache.kube import goyaml

    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PluginError(f"kubeconfig {path}: {exc.strerror or exc}") from exc
    if not data:
        return File(path)
    try:
        doc = goyaml.to_json(data)
    except goyaml.YAMLError as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise PluginError(f"kubeconfig {path}: not valid YAML{where}: {exc}") from exc
    try:
        v1.check_type_meta(*v1.type_meta(doc))
        config = v1.decode(v1.CONFIG, doc)
        v1.set_defaults(config)
        return _convert(path, config)
    except v1.DecodeError as exc:
        obj = _object(doc, exc.where)
        field = exc.where[len(obj.rsplit("(", 1)[-1].rstrip(")")):].lstrip(".") if obj else exc.where
        parts = [p for p in (obj, field) if p]
        raise PluginError(f"kubeconfig {path}: {' '.join(parts) + ' ' if parts else ''}{exc.problem}") from exc


def _convert(path, config) -> File:
    """api/v1 conversion.go: named lists -> maps (a duplicate name in one file is an error)."""
    out = File(path, current_context=config["current-context"], colors=config["preferences"]["colors"])
    for key, inner, target in (("clusters", "cluster", out.clusters), ("users", "user", out.users),
                               ("contexts", "context", out.contexts)):
        target.update(v1.named_map(config[key], inner, key))
        for i, item in enumerate(config[key] or ()):
            body = item[inner]
            if isinstance(body["extensions"], list) or body["extensions"] is None:
                body["extensions"] = v1.extensions_map(body["extensions"], f"{key}[{i}].{inner}.extensions")
    out.preference_extensions = v1.extensions_map(config["preferences"]["extensions"], "preferences.extensions")
    out.extensions = v1.extensions_map(config["extensions"], "extensions")
    return out


class Merged(Record):
    """The merged config (clientcmd Load): entries by name and the file each came from."""

    __slots__ = ("clusters", "users", "contexts", "current_context", "origin", "colors", "preference_extensions",
                 "extensions")
    __hash__ = None

    def __init__(self):
        self.clusters: dict[str, dict] = {}
        self.users: dict[str, dict] = {}
        self.contexts: dict[str, dict] = {}
        self.current_context = ""
        self.origin: dict[tuple[str, str], str] = {}     # ("clusters"|"users"|"contexts", name) -> path
        self.colors = False
        self.preference_extensions: dict = {}
        self.extensions: dict = {}


def load(paths) -> Merged:
    """loader.go Load over `paths`: missing files skipped; each name, current-context and extension
    from the first file that has one (merge.go: the reverse-order merge of non-zero values)."""
    merged = Merged()
    for path in paths:
        f = read_file(path)
        if f is None:
            continue
        for key in ("clusters", "users", "contexts"):
            mine = getattr(merged, key)
            for name, body in getattr(f, key).items():
                if name not in mine:
                    mine[name] = body
                    merged.origin[(key, name)] = path
        merged.current_context = merged.current_context or f.current_context
        merged.colors = merged.colors or f.colors
        for mine, theirs in ((merged.preference_extensions, f.preference_extensions),
                             (merged.extensions, f.extensions)):
            for name, ext in theirs.items():
                mine.setdefault(name, ext)
    return merged


def _resolve_paths(merged: Merged):
    """loader.go ResolveLocalPaths: relative file references made absolute against their file's dir."""
    def fix(path, base):
        return path if not path or os.path.isabs(path) else os.path.normpath(os.path.join(base, path))

    for name, cluster in merged.clusters.items():
        base = os.path.dirname(os.path.abspath(merged.origin[("clusters", name)]))
        merged.clusters[name] = dict(cluster, **{"certificate-authority": fix(cluster["certificate-authority"],
                                                                              base)})
    for name, user in merged.users.items():
        base = os.path.dirname(os.path.abspath(merged.origin[("users", name)]))
        user = dict(user)
        for key in ("client-certificate", "client-key", "tokenFile"):
            user[key] = fix(user[key], base)
        if user["exec"] is not None and os.sep in user["exec"]["command"]:   # GetAuthInfoFileReferences
            user["exec"] = dict(user["exec"], command=fix(user["exec"]["command"], base))
        merged.users[name] = user


# -- flags and validation (client_config.go) ---------------------------------------------------

def default_server() -> str:
    """client_config.go getDefaultServer (ClusterDefaults): $KUBERNETES_MASTER, else localhost:8080."""
    return os.environ.get("KUBERNETES_MASTER") or "http://localhost:8080"


def _merge_into(dst: dict, src: dict):
    """merge.go mergeValues for one struct: every non-zero field of src replaces dst's (maps key by key)."""
    for key, value in src.items():
        if isinstance(value, dict) and key in ("as-user-extra", "extensions"):
            if value:
                dst[key] = dict(dst.get(key) or {}, **value)
        elif value:
            dst[key] = value


def _overrides(conn: Connection):
    """config_flags.go toRawKubeConfigLoader: the flags as ConfigOverrides (empty strings are not set)."""
    extra: dict[str, list[str]] = {}
    for item in conn.as_user_extra:
        if "=" in item:                         # entries without '=' are skipped, as kubectl does
            key, value = item.split("=", 1)
            extra.setdefault(key, []).append(value)
    user = {"client-certificate": conn.client_certificate or "", "client-key": conn.client_key or "",
            "token": conn.token or "", "as": conn.as_user or "", "as-uid": conn.as_uid or "",
            "as-groups": list(conn.as_groups) or None, "as-user-extra": extra or None,
            "username": conn.username or "", "password": conn.password or ""}
    cluster = {"server": conn.server or "", "tls-server-name": conn.tls_server_name or "",
               "certificate-authority": conn.certificate_authority or "",
               "insecure-skip-tls-verify": bool(conn.insecure_skip_tls_verify),
               "disable-compression": bool(conn.disable_compression), "proxy-url": conn.proxy_url or ""}
    return user, cluster


class _Chosen(Record):
    __slots__ = ("context_name", "context", "user_name", "user", "cluster_name", "cluster", "user_file",
                 "cluster_file")
    context_name: str
    context: dict
    user_name: str
    user: dict
    cluster_name: str
    cluster: dict
    user_file: str | None
    cluster_file: str | None


def _choose(merged: Merged, conn: Connection) -> _Chosen:
    """DirectClientConfig getAuthInfo, getContext, getCluster (in ClientConfig's order), overrides applied."""
    ov_user, ov_cluster = _overrides(conn)
    c = _Chosen()
    c.context_name = conn.context or merged.current_context
    context = v1.zero(v1.CONTEXT)
    if c.context_name in merged.contexts:
        _merge_into(context, merged.contexts[c.context_name])
    c.user_name = conn.user or context["user"]
    c.cluster_name = conn.cluster or context["cluster"]
    if conn.user and conn.user not in merged.users:
        raise PluginError(f"user {conn.user!r} does not exist in the kubeconfig (--user)")
    if conn.context and conn.context not in merged.contexts:
        raise PluginError(f"context {conn.context!r} does not exist in the kubeconfig (--context)")
    if conn.cluster and conn.cluster not in merged.clusters:
        raise PluginError(f"cluster {conn.cluster!r} does not exist in the kubeconfig (--cluster)")
    c.context = context
    user = v1.zero(v1.AUTH_INFO)
    user["extensions"] = {}
    if c.user_name in merged.users:
        _merge_into(user, merged.users[c.user_name])
    _merge_into(user, ov_user)
    if ov_user["client-key"]:                   # a key flag replaces the key data too
        user["client-key"], user["client-key-data"] = ov_user["client-key"], None
    if ov_user["client-certificate"]:
        user["client-certificate"], user["client-certificate-data"] = ov_user["client-certificate"], None
    c.user = user
    cluster = dict(v1.zero(v1.CLUSTER), server=default_server(), extensions={})   # ClusterDefaults
    if c.cluster_name in merged.clusters:
        _merge_into(cluster, merged.clusters[c.cluster_name])
    _merge_into(cluster, ov_cluster)
    if ov_cluster["insecure-skip-tls-verify"] or ov_cluster["certificate-authority"]:
        cluster["insecure-skip-tls-verify"] = ov_cluster["insecure-skip-tls-verify"]
        cluster["certificate-authority"] = ov_cluster["certificate-authority"]
        cluster["certificate-authority-data"] = None
    if ov_cluster["tls-server-name"] or ov_cluster["server"]:
        cluster["tls-server-name"] = ov_cluster["tls-server-name"]
    c.cluster = cluster
    c.user_file = merged.origin.get(("users", c.user_name))
    c.cluster_file = merged.origin.get(("clusters", c.cluster_name))
    return c


def urlsplit(text):
    """urllib.parse.urlsplit, imported when first needed (it costs milliseconds at start-up)."""
    from urllib.parse import urlsplit as split

    return split(text)


def unquote(text):
    from urllib.parse import unquote as unq

    return unq(text)


def _in(path):
    return f"kubeconfig {path}: " if path else ""


def _readable(path):
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _confirm_usable(merged: Merged, c: _Chosen):
    """DirectClientConfig.ConfirmUsable: validation.go validateAuthInfo and validateClusterInfo; the
    first problem is the error (kubectl lists them all)."""
    if c.context_name and c.context_name not in merged.contexts:
        raise PluginError(f"context {c.context_name!r} (current-context) was not found in the kubeconfig")
    u, name, where = c.user, c.user_name, _in(c.user_file)
    who = f"user {name!r}"
    if u["client-certificate"] or u["client-certificate-data"]:
        if u["client-certificate"] and u["client-certificate-data"]:
            raise PluginError(f"{where}{who}: client-certificate-data and client-certificate are both given")
        if u["client-key"] and u["client-key-data"]:
            raise PluginError(f"{where}{who}: client-key-data and client-key are both given")
        if not (u["client-key"] or u["client-key-data"]):
            raise PluginError(f"{where}{who}: client-key-data or client-key must be given with a client certificate")
        for key in ("client-certificate", "client-key"):
            problem = u[key] and _readable(u[key])
            if problem:
                raise PluginError(f"{where}{who}: cannot read the {key} {u[key]}: {problem}")
    ex = u["exec"]
    if ex is not None:
        if u["auth-provider"] is not None:
            raise PluginError(f"{where}{who}: an auth-provider cannot be used together with an exec plugin")
        if not ex["command"]:
            raise PluginError(f"{where}{who}: exec.command must be given to use an exec plugin")
        if not ex["apiVersion"]:
            raise PluginError(f"{where}{who}: exec.apiVersion must be given to use an exec plugin")
        if any(not e["name"] for e in ex["env"] or ()):
            raise PluginError(f"{where}{who}: every exec.env entry needs a name")
        if not ex["interactiveMode"]:
            raise PluginError(f"{where}{who}: exec.interactiveMode must be given (Never, IfAvailable or Always) "
                              f"for apiVersion {ex['apiVersion']}")
        if ex["interactiveMode"] not in ("Never", "IfAvailable", "Always"):
            raise PluginError(f"{where}{who}: exec.interactiveMode {ex['interactiveMode']!r} is not Never, "
                              f"IfAvailable or Always")
    methods = (["token"] if u["token"] else []) + (["basic auth"] if u["username"] or u["password"] else [])
    if len(methods) > 1:
        raise PluginError(f"{where}{who}: more than one authentication method (token and basic auth); "
                          f"only one is allowed")
    if (u["as-uid"] or u["as-groups"] or u["as-user-extra"]) and not u["as"]:
        raise PluginError(f"{where}{who}: impersonating a uid, groups or user-extra needs a user to impersonate "
                          f"(--as or the kubeconfig's as)")
    cl, cname, cwhere = c.cluster, c.cluster_name, _in(c.cluster_file)
    what = f"cluster {cname!r}" if cname else "the default cluster"
    if not cl["server"]:
        raise PluginError(f"{cwhere}no server found for {what}")
    if cl["proxy-url"]:
        _proxy_url(cl["proxy-url"], f"{cwhere}{what}: proxy-url")
    if cl["certificate-authority"] and cl["certificate-authority-data"]:
        raise PluginError(f"{cwhere}{what}: certificate-authority-data and certificate-authority are both given")
    problem = cl["certificate-authority"] and _readable(cl["certificate-authority"])
    if problem:
        raise PluginError(f"{cwhere}{what}: cannot read the certificate-authority {cl['certificate-authority']}: "
                          f"{problem}")


def _proxy_url(text, what):
    """helpers.go parseProxyURL: http, https or socks5 (url.Parse lower-cases the scheme)."""
    try:
        scheme = urlsplit(text).scheme
    except ValueError:
        raise PluginError(f"{what} could not be parsed") from None
    if scheme not in ("http", "https", "socks5"):
        raise PluginError(f"{what} has the unsupported scheme {scheme!r}: it must be http, https or socks5")
    return text


# -- rest.Config and the transport -------------------------------------------------------------

_USERINFO_OK = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._:~!$&'()*+,;=%@")


def _go_url_error(parts) -> str | None:
    """What Go's url.Parse refuses that urlsplit takes (net/url/url.go parseAuthority,
    validUserinfo, unescape, setPath): userinfo outside RFC 3986's characters, a bad % escape in
    the user, password or path. None: Go parses it too."""
    from kubectl_kvcache.kube.gourl import go_unescape

    info = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else None
    try:
        if info is not None:
            if not set(info) <= _USERINFO_OK:
                return "net/url: invalid userinfo"
            for piece in info.partition(":")[::2]:
                try:
                    go_unescape(piece)
                except ValueError:
                    return "invalid URL escape in the userinfo"
        go_unescape(parts.path)
    except ValueError as exc:
        return str(exc)
    return None


def _shown(host):
    """The server as an error message may show it: userinfo (a password) is never printed."""
    scheme, sep, rest = host.rpartition("//")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "<userinfo>@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{path}"


def _server_url(host, default_tls, what="the server"):
    """rest/url_utils.go DefaultServerURL: a host without scheme://host gets http:// (https:// only
    with a CA, client certificate or insecure in the rest.Config). A URL Go's url.Parse refuses
    takes that second path too, and its error (or that one's) is kubectl's. A control byte is
    refused before anything else (url.go Parse: stringContainsCTLByte), where urlsplit would
    strip tabs and newlines and lstrip C0 bytes."""
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in host):
        raise PluginError(f"{what} {_shown(host)!r} cannot be parsed: net/url: invalid control character in URL")
    try:
        parts = urlsplit(host)
        ok = bool(parts.scheme and parts.netloc) and _go_url_error(parts) is None
    except ValueError:
        ok = False
    if not ok:
        parts = urlsplit(("https://" if default_tls else "http://") + host)
        problem = _go_url_error(parts)
        if problem:
            if "@" in host:         # Go's message quotes the escape, maybe a piece of a password
                problem = "invalid URL escape"
            raise PluginError(f"{what} {_shown(host)!r} cannot be parsed: {problem}")
        if not parts.netloc or parts.path not in ("", "/"):
            raise PluginError(f"{what} {_shown(host)!r} must be a URL or a host:port pair")
    if parts.scheme not in ("http", "https"):
        raise PluginError(f"{what} {_shown(host)!r} is not an http:// or https:// URL")
    netloc = parts.netloc.rpartition("@")[2]
    try:
        _ = parts.port
    except ValueError as exc:
        raise PluginError(f"{what} {_shown(host)!r} has an invalid port") from exc
    userinfo = None
    if "@" in parts.netloc:
        info = parts.netloc.rpartition("@")[0]
        user, _, password = info.partition(":")
        userinfo = (unquote(user), unquote(password))
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}", userinfo


def _basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def file_token(path):
    """transport/token_source.go fileTokenSource: the file's content trimmed; None if unreadable or empty."""
    from kubectl_kvcache.kube.goyaml import go_string

    try:
        with open(path, "rb") as f:
            token = go_string(f.read()).strip()
    except OSError:
        return None
    return token or None


_TOKEN_CHARS = frozenset("!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _header_key_escape(key):
    """transport/round_trippers.go headerKeyEscape: bytes that are not token characters, and '%', as %XX."""
    return "".join(chr(b) if chr(b) in _TOKEN_CHARS else f"%{b:02X}" for b in key.encode())


def _canonical(name):
    """net/textproto CanonicalMIMEHeaderKey, as http.Header.Add applies it."""
    out, upper = [], True
    for ch in name:
        out.append(ch.upper() if upper and "a" <= ch <= "z" else ch.lower() if not upper and "A" <= ch <= "Z"
                   else ch)
        upper = ch == "-"
    return "".join(out)


def impersonation_headers(user, uid, groups, extra) -> list[tuple[str, str]]:
    """impersonatingRoundTripper: User, Uid (when set), each Group, each Extra value (keys sorted here;
    Go's map order is random, and Go writes headers sorted by name anyway)."""
    headers = [("Impersonate-User", user)]
    if uid:
        headers.append(("Impersonate-Uid", uid))
    headers += [("Impersonate-Group", g) for g in groups or ()]
    for key in sorted(extra or {}):
        name = _canonical("Impersonate-Extra-" + _header_key_escape(key))
        headers += [(name, v) for v in extra[key] or ()]
    return headers


def resolve(conn: Connection) -> Target:
    """The target these flags and the kubeconfig name, or a one-line PluginError."""
    paths, _asked = _paths(conn)
    merged = load(paths)
    _resolve_paths(merged)
    c = _choose(merged, conn)
    _confirm_usable(merged, c)
    cl, u = c.cluster, c.user
    # ClientConfig: Host, proxy, compression, timeout and impersonation before the TLS question
    host = cl["server"]
    try:
        parts = urlsplit(host)
        if parts.scheme and parts.netloc and len(parts.path) > 1:     # ParseRequestURI: query/fragment dropped
            host = host.split("#", 1)[0].split("?", 1)[0]
    except ValueError:
        pass
    impersonating = bool(u["as"])
    server_what = f"{_in(c.cluster_file)}cluster {c.cluster_name!r}: server"
    tls = _server_url(host, False, server_what)[0].startswith("https://")         # IsConfigTransportTLS (no CA etc. yet)
    # loader.go IsDefaultConfig: the rest.Config equals the default one. (client-go also counts a
    # --request-timeout as a difference; the plugin does not, as completion sets one of its own.)
    is_default = (host == default_server() and not impersonating and not cl["proxy-url"]
                  and not cl["disable-compression"] and not tls)
    if is_default and _in_cluster_possible():                          # merged_client_builder.go ClientConfig
        return _in_cluster(conn)
    has_ca = bool(cl["certificate-authority"] or cl["certificate-authority-data"]) if tls else False
    has_cert = bool(u["client-certificate"] or u["client-certificate-data"]) if tls else False
    server, userinfo = _server_url(host, has_ca or has_cert or (tls and cl["insecure-skip-tls-verify"]),
                                    server_what)
    for value in (u["token"], u["password"], u["client-key-data"], userinfo and userinfo[1]):
        secret(value)           # never printed, whatever error line might quote it
    for value in ((u["auth-provider"] or {}).get("config") or {}).values():
        secret(value)
    target = Target(server=server, namespace=_namespace(c), cluster=v1.cluster_json(cl),
                    user_name=c.user_name, disable_compression=cl["disable-compression"])
    if impersonating:
        target.impersonation = impersonation_headers(u["as"], u["as-uid"], u["as-groups"], u["as-user-extra"])
    if userinfo is not None:        # net/http Client.send sets Basic from the URL first: it wins
        target.authorization = _basic(*userinfo)
    if tls:
        _user_identity(target, u, c, userinfo is not None)
        target.insecure = cl["insecure-skip-tls-verify"]
        target.ca_data = cl["certificate-authority-data"]
        target.ca_file = cl["certificate-authority"] or None
        target.tls_server_name = cl["tls-server-name"] or None
        if target.insecure and (target.ca_data or target.ca_file):     # transport.TLSConfigFor
            raise PluginError(f"{_in(c.cluster_file)}cluster {c.cluster_name!r}: a certificate authority together "
                              f"with insecure-skip-tls-verify is not allowed (kubectl refuses it too)")
    target.proxy = _proxy(target, cl)
    return target


EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1")


def _user_identity(target, u, c, has_userinfo):
    """getUserIdentificationPartialConfig, then transport round trippers: token (a readable tokenFile
    wins, re-read per request), else basic auth; exec only without a token, basic auth or client
    certificate (exec.go UpdateTransportConfig); kubectl prompts when nothing identifies the user."""
    where, who = _in(c.user_file), f"user {c.user_name!r}"
    bearer, bearer_file = u["token"], u["tokenFile"]
    if not bearer and bearer_file:
        try:
            with open(bearer_file, "rb") as f:
                from kubectl_kvcache.kube.goyaml import go_string

                bearer = go_string(f.read())
        except OSError as exc:
            raise PluginError(f"{where}{who}: cannot read the tokenFile {bearer_file}: {exc.strerror or exc}") \
                from exc
    token_auth = bool(bearer or bearer_file)
    basic_auth = bool(u["username"])
    if token_auth and basic_auth:           # transport/round_trippers.go HTTPWrappersForConfig
        raise PluginError(f"{where}{who}: a username and a bearer token (token or tokenFile) are both set; "
                          f"kubectl allows only one")
    if token_auth:                          # the round tripper is built (and can fail) under userinfo too
        token = (file_token(bearer_file) if bearer_file else None) or bearer
        secret(token)
        if not token:
            raise PluginError(f"{where}{who}: the tokenFile {bearer_file} holds no token")
        if target.authorization is None and bearer_file:
            target.token_file = bearer_file     # NewBearerAuthWithRefreshRoundTripper: re-read, it wins
        target.authorization = target.authorization or "Bearer " + token
    elif basic_auth and target.authorization is None:
        target.authorization = _basic(u["username"], u["password"])
    if u["client-certificate"] or u["client-certificate-data"]:
        target.cert_data = u["client-certificate-data"]
        target.cert_file = u["client-certificate"] or None
        target.key_data = u["client-key-data"]
        target.key_file = u["client-key"] or None
    cert_auth = bool(target.cert_data or target.cert_file) and bool(target.key_data or target.key_file)
    if u["exec"] is not None and u["exec"]["apiVersion"] not in EXEC_API_VERSIONS:
        # rest/transport.go TransportConfig calls exec.GetAuthenticator for any exec config (a
        # token or certificate too); exec.go newAuthenticator knows only v1beta1 and v1
        raise PluginError(f"{where}{who}: exec.apiVersion {u['exec']['apiVersion']!r} is not supported (kubectl "
                          f"accepts {' or '.join(EXEC_API_VERSIONS)})")
    if u["exec"] is not None and not (token_auth or basic_auth or cert_auth or has_userinfo):
        target.exec = v1.user_json({**v1.zero(v1.AUTH_INFO), "exec": u["exec"], "extensions": {}})["exec"]
    if u["auth-provider"] is not None and target.authorization is None:
        target.auth_provider = {"name": u["auth-provider"]["name"], "config": dict(u["auth-provider"]["config"] or {})}
    can_identify = (basic_auth or bool(target.cert_data or target.cert_file) or bool(bearer)
                    or u["auth-provider"] is not None or u["exec"] is not None)
    if not can_identify:            # client_config.go: kubectl would ask for a username and password on stdin
        raise PluginError(f"{who} has no credentials for the https server {target.server} (kubectl would ask for a "
                          f"username and password): give --token, --username/--password, a client certificate "
                          f"or credentials in the kubeconfig")


def _proxy(target, cl):
    """The cluster's proxy-url (http.ProxyURL: every request, loopback too), else the environment."""
    if cl["proxy-url"]:
        return cl["proxy-url"]
    from kubectl_kvcache.kube import proxyenv

    parts = urlsplit(target.server)
    hostname = parts.netloc.rpartition("@")[2]
    hostname = hostname[1:hostname.index("]")] if hostname.startswith("[") else hostname.rsplit(":", 1)[0]
    custom = bool(target.ca_data or target.ca_file or target.insecure or target.tls_server_name or target.exec
                  or ((target.cert_data or target.cert_file) and (target.key_data or target.key_file)))
    proxy = proxyenv.proxy_for(parts.scheme, hostname, str(parts.port or ""), custom)   # case kept
    if proxy is not None:
        scheme = urlsplit(proxy).scheme
        if scheme not in ("http", "https", "socks5", "socks5h"):
            raise PluginError(f"the proxy from the environment has the unsupported scheme {scheme!r}")
    return proxy


def _namespace(c):
    """merged_client_builder.go Namespace: the context's, else in a Pod the service account's, else default."""
    if c.context["namespace"]:
        return c.context["namespace"]
    if _in_cluster_possible():
        return _in_cluster_namespace()
    return "default"


# -- in-cluster (rest.InClusterConfig, inClusterClientConfig) -----------------------------------

def _in_cluster_possible():
    token = os.path.join(SA_DIR, "token")
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.exists(token) and not os.path.isdir(token))


def _in_cluster_namespace():
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open(os.path.join(SA_DIR, "namespace")) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def _in_cluster(conn) -> Target:
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    host = f"[{host}]" if ":" in host else host
    token_file = os.path.join(SA_DIR, "token")
    try:
        with open(token_file, "rb") as f:
            f.read()
    except OSError as exc:
        raise PluginError(f"in-cluster config: cannot read {token_file}: {exc.strerror or exc}") from exc
    sa_ca_file = os.path.join(SA_DIR, "ca.crt")
    try:
        with open(sa_ca_file, "rb") as f:
            ca_ok = b"-----BEGIN CERTIFICATE-----" in f.read()
    except OSError:
        ca_ok = False
    ca_file = conn.certificate_authority or (sa_ca_file if ca_ok else None)
    server, userinfo = _server_url(conn.server or f"https://{host}:{port}", bool(ca_file))
    target = Target(server=server, namespace=_in_cluster_namespace(), ca_file=ca_file)
    if userinfo is not None:
        target.authorization = _basic(*userinfo)
    elif conn.token:
        target.authorization = "Bearer " + conn.token
    else:
        token = file_token(token_file)
        if token is None:
            raise PluginError(f"in-cluster config: {token_file} holds no token")
        secret(token)
        target.authorization = "Bearer " + token
        target.token_file = token_file      # rest.InClusterConfig sets BearerTokenFile: re-read as it rotates
    target.proxy = _proxy(target, {"proxy-url": ""})
    return target


def context_names(conn: Connection) -> list[str]:
    """Every context of the merged kubeconfig (loader.go Load: the first file naming a context
    wins), sorted as `kubectl config get-contexts` lists them; a broken file fails as kubectl's
    Load does. --contexts/--all-contexts read each of them as --context would."""
    return sorted(load(_paths(conn)[0]).contexts)


def names(conn: Connection, key: str) -> list[str]:
    """The merged kubeconfig's context, cluster or user names (for completion); [] when broken."""
    try:
        return sorted(getattr(load(_paths(conn)[0]), key))
    except PluginError:
        return []
