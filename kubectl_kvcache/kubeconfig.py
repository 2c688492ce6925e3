"""Where requests go and as whom, decided exactly as kubectl decides it (client-go's clientcmd:
loading rules, merge, flag overrides, validation). Reads files only; kube.py turns the result into
connections. No HTTP here, and no kubernetes client: exec and auth-provider users are resolved in
kube.py (which loads the client's code for them only).

Loading rules: --kubeconfig alone (it must exist), else every file of $KUBECONFIG (missing ones
skipped), else ~/.kube/config. Merge: for each named cluster, user and context the first file that
defines it wins; current-context from the first file that sets it. Relative paths are resolved
against the file that holds them. No kubeconfig at all: in-cluster config (service account) when
running in a Pod, else --server alone.

Overrides (config_flags.go -> ConfigOverrides, merged in client_config.go): --context picks the
context; --cluster/--user replace the context's; --server replaces the cluster's server (and its
tls-server-name); --certificate-authority replaces the CA and turns insecure off;
--insecure-skip-tls-verify clears a kubeconfig CA unless --certificate-authority is also given
(then kubectl refuses the pair); --token is merged into the user (it does not remove a client
certificate; an exec plugin is not run when a token is present); --as/--as-group/--as-uid
replace the user's as/as-groups/as-uid.
"""

from __future__ import annotations

import base64
import json
import os

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.options import Connection
from kubectl_kvcache.record import Record

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Target(Record):
    """One API server and one identity, as a rest.Config would hold them."""

    __slots__ = ("server", "namespace", "ca_data", "ca_file", "insecure", "tls_server_name", "proxy_url", "token",
                 "token_file", "username", "password", "cert_data", "cert_file", "key_data", "key_file", "exec",
                 "auth_provider", "base_dir", "cluster", "user_name", "as_user", "as_uid", "as_groups", "as_extra",
                 "authorization", "impersonation", "proxy")     # the last three: notes/CONTRACT.md
    __hash__ = None     # mutable: not hashable

    def __init__(self, server: str, namespace: str = "default", ca_data: bytes | None = None,
                 ca_file: str | None = None, insecure: bool = False, tls_server_name: str | None = None,
                 proxy_url: str | None = None, token: str | None = None, token_file: str | None = None,
                 username: str | None = None, password: str | None = None, cert_data: bytes | None = None,
                 cert_file: str | None = None, key_data: bytes | None = None, key_file: str | None = None,
                 exec: dict | None = None, auth_provider: dict | None = None, base_dir: str | None = None,
                 cluster: dict | None = None, user_name: str = "", as_user: str | None = None,
                 as_uid: str | None = None, as_groups: tuple[str, ...] = (),
                 as_extra: dict[str, list[str]] | None = None):
        self.server = server
        self.namespace = namespace
        # server identification
        self.ca_data = ca_data                             # PEM
        self.ca_file = ca_file
        self.insecure = insecure
        self.tls_server_name = tls_server_name
        self.proxy_url = proxy_url
        # user identification
        self.token = token
        self.token_file = token_file
        self.username = username
        self.password = password
        self.cert_data = cert_data                         # PEM
        self.cert_file = cert_file
        self.key_data = key_data
        self.key_file = key_file
        self.exec = exec                                   # the user's exec plugin (kube.py runs it)
        self.auth_provider = auth_provider                 # the user's auth-provider (kube.py asks the client)
        self.base_dir = base_dir                           # for relative paths of exec/auth-provider
        self.cluster = {} if cluster is None else cluster  # the merged cluster entry (exec's cluster info)
        self.user_name = user_name
        # impersonation (Impersonate-* headers)
        self.as_user = as_user
        self.as_uid = as_uid
        self.as_groups = as_groups
        self.as_extra = {} if as_extra is None else as_extra
        # what the transport sends (see _contract_fields)
        self.authorization: str | None = None
        self.impersonation: list[tuple[str, str]] = []
        self.proxy: str | None = None

    @property
    def tls(self) -> bool:
        return self.server.lower().startswith("https://")


# -- loading and merging -----------------------------------------------------------------------

def _paths(conn: Connection) -> tuple[list[str], bool]:
    """The kubeconfig files to read, and whether any path was asked for at all."""
    if conn.kubeconfig:
        path = os.path.expanduser(conn.kubeconfig)
        if not os.path.exists(path):
            raise PluginError(f"kubeconfig {conn.kubeconfig} does not exist")
        return [path], True
    env = os.environ.get("KUBECONFIG")
    if env:
        seen, paths = set(), []
        for p in env.split(os.pathsep):
            p = os.path.expanduser(p)
            if p and p not in seen:
                seen.add(p)
                paths.append(p)
        return [p for p in paths if os.path.exists(p)], True
    default = os.path.expanduser("~/.kube/config")
    return ([default] if os.path.exists(default) else []), False


def _read(path) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise PluginError(f"kubeconfig {path}: {exc.strerror or exc}") from exc
    if not data.strip():
        return {}
    try:
        doc = json.loads(data)
    except ValueError:
        # Importing PyYAML costs 13-18 ms a start (issue #16): kubeyaml reads the YAML kubeconfig writers
        # emit exactly as PyYAML does, and says UNSURE for anything else, which PyYAML then reads.
        from kubectl_kvcache import kubeyaml

        try:
            doc = kubeyaml.load(data.decode("utf-8"))
        except UnicodeDecodeError:
            doc = kubeyaml.UNSURE
        if doc is kubeyaml.UNSURE:
            import yaml

            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            try:
                doc = yaml.load(data, Loader=loader)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 1})" if mark is not None else ""
                raise PluginError(f"kubeconfig {path}: not valid YAML{where}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise PluginError(f"kubeconfig {path}: not a kubeconfig (expected a mapping)")
    return doc


class Merged(Record):
    __slots__ = ("clusters", "users", "contexts", "current_context")
    __hash__ = None     # mutable: not hashable

    def __init__(self, clusters: dict[str, tuple[dict, str]] | None = None,
                 users: dict[str, tuple[dict, str]] | None = None, contexts: dict[str, dict] | None = None,
                 current_context: str = ""):
        self.clusters = {} if clusters is None else clusters  # name -> (entry, its file's dir)
        self.users = {} if users is None else users
        self.contexts = {} if contexts is None else contexts
        self.current_context = current_context


def load(paths) -> Merged:
    merged = Merged()
    for path in paths:
        doc = _read(path)
        base = os.path.dirname(os.path.abspath(path))
        for key, inner, target in (("clusters", "cluster", merged.clusters), ("users", "user", merged.users),
                                   ("contexts", "context", merged.contexts)):
            entries = doc.get(key) or []
            if not isinstance(entries, list):
                raise PluginError(f"kubeconfig {path}: {key} is not a list")
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise PluginError(f"kubeconfig {path}: {key}[{i}] has no name")
                body = entry.get(inner) or {}
                if not isinstance(body, dict):
                    raise PluginError(f"kubeconfig {path}: {key}[{i}].{inner} is not a mapping")
                if entry["name"] not in target:        # the first file that defines a name wins
                    target[entry["name"]] = body if key == "contexts" else (body, base)
        if not merged.current_context and isinstance(doc.get("current-context"), str):
            merged.current_context = doc["current-context"]
    return merged


# -- resolving one target -----------------------------------------------------------------------

def _abs(path, base):
    if not path:
        return None
    path = os.path.expanduser(str(path))
    return path if os.path.isabs(path) or not base else os.path.join(base, path)


def _b64(value, what):
    if not value:
        return None
    try:
        return base64.b64decode(value, validate=False)
    except (ValueError, TypeError) as exc:
        raise PluginError(f"kubeconfig: {what} is not valid base64") from exc


def resolve(conn: Connection) -> Target:
    """The target these flags and the kubeconfig name, or a one-line PluginError."""
    paths, _asked = _paths(conn)
    if not paths:
        return _contract_fields(_without_kubeconfig(conn))
    merged = load(paths)
    context_name = conn.context or merged.current_context
    context = merged.contexts.get(context_name) if context_name else None
    if context_name and context is None:
        raise PluginError(f"context {context_name!r} not found in the kubeconfig")
    context = dict(context or {})
    cluster_name = conn.cluster or context.get("cluster") or ""
    user_name = conn.user or context.get("user") or ""
    if conn.cluster and conn.cluster not in merged.clusters:
        raise PluginError(f"cluster {conn.cluster!r} not found in the kubeconfig")
    if conn.user and conn.user not in merged.users:
        raise PluginError(f"user {conn.user!r} not found in the kubeconfig")
    cluster, cluster_base = merged.clusters.get(cluster_name, ({}, None))
    user, user_base = merged.users.get(user_name, ({}, None))
    cluster, user = dict(cluster), dict(user)

    # cluster overrides (getCluster)
    if conn.server:
        cluster["server"] = conn.server
        cluster.pop("tls-server-name", None)
    if conn.insecure_skip_tls_verify or conn.certificate_authority:
        cluster["insecure-skip-tls-verify"] = bool(conn.insecure_skip_tls_verify)
        cluster.pop("certificate-authority-data", None)
        cluster["certificate-authority"] = os.path.abspath(conn.certificate_authority) \
            if conn.certificate_authority else None
        cluster_base = cluster_base if not conn.certificate_authority else None
    # user overrides (getAuthInfo: a non-empty flag replaces the field)
    if conn.token:
        user["token"] = conn.token
    if conn.as_user:
        user["as"] = conn.as_user
    if conn.as_groups:
        user["as-groups"] = list(conn.as_groups)
    if conn.as_uid:
        user["as-uid"] = conn.as_uid

    name = cluster_name or "the default cluster"
    server = cluster.get("server")
    if not server:
        raise PluginError(f"no server found for cluster {cluster_name!r}: pass --server or fix the kubeconfig"
                          if cluster_name else "the kubeconfig names no cluster with a server: pass --context, "
                                               "--cluster or --server")
    tls_hint = bool(cluster.get("certificate-authority") or cluster.get("certificate-authority-data")
                    or cluster.get("insecure-skip-tls-verify") or user.get("client-certificate")
                    or user.get("client-certificate-data"))
    target = Target(server=_server(server, tls_hint), namespace=context.get("namespace") or "default",
                    cluster=cluster, user_name=user_name, base_dir=user_base)
    _server_identity(target, cluster, cluster_base, name)
    _user_identity(target, user, user_base, user_name or "the default user")
    return _contract_fields(target)


# -- STAND-IN (transport helper): the contract's three fields computed from today's fields, as
# kube.py computed them before; the decoder's own version replaces this at merge. --------------

def _contract_fields(target):
    if target.tls and target.token:
        target.authorization = f"Bearer {target.token}"
    elif target.tls and (target.username or target.password):
        pair = f"{target.username or ''}:{target.password or ''}".encode()
        target.authorization = "Basic " + base64.b64encode(pair).decode()
    if target.as_user:
        from urllib.parse import quote

        target.impersonation = [("Impersonate-User", target.as_user)]
        if target.as_uid:
            target.impersonation.append(("Impersonate-Uid", target.as_uid))
        target.impersonation += [("Impersonate-Group", g) for g in target.as_groups]
        for key, values in sorted(target.as_extra.items()):
            target.impersonation += [("Impersonate-Extra-" + quote(key, safe=""), v) for v in values]
    target.proxy = target.proxy_url
    url = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if not target.proxy and target.tls and url:
        host = target.server.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]").lower()
        bypass = [h.strip().lstrip(".").lower() for h in (os.environ.get("NO_PROXY") or os.environ.get("no_proxy")
                                                          or "").split(",") if h.strip()]
        if host not in ("localhost", "::1") and not host.startswith("127.") and "*" not in bypass \
                and not any(host == h or host.endswith("." + h) for h in bypass):
            target.proxy = url if "://" in url else "http://" + url
    return target


def _server(server, tls_hint=True):
    """A bare host:port gets https:// when a CA, a client certificate or insecure is configured,
    else http:// (client-go's DefaultServerURL)."""
    server = str(server).strip()
    if "://" not in server:
        server = ("https://" if tls_hint else "http://") + server
    return server.rstrip("/")


def _server_identity(target, cluster, base, name):
    ca, ca_data = cluster.get("certificate-authority"), cluster.get("certificate-authority-data")
    target.insecure = bool(cluster.get("insecure-skip-tls-verify"))
    if target.insecure and (ca or ca_data):
        raise PluginError(f"cluster {name}: a certificate authority together with insecure-skip-tls-verify "
                          f"is not allowed (kubectl refuses it too): drop one of them")
    target.ca_data = _b64(ca_data, f"certificate-authority-data of cluster {name}")
    if ca and not ca_data:
        target.ca_file = _abs(ca, base)
        if not os.access(target.ca_file, os.R_OK):
            raise PluginError(f"cannot read the certificate-authority {target.ca_file} of cluster {name}")
    target.tls_server_name = cluster.get("tls-server-name") or None
    target.proxy_url = cluster.get("proxy-url") or None


def _user_identity(target, user, base, name):
    methods = []
    if user.get("token"):
        methods.append("token")
    if user.get("username") or user.get("password"):
        methods.append("basicAuth")
    if len(methods) > 1:
        raise PluginError(f"user {name}: more than one authentication method (token and basic auth); "
                          f"kubectl allows only one")
    if user.get("exec") and user.get("auth-provider"):
        raise PluginError(f"user {name}: an auth-provider and an exec plugin cannot be used together")
    if (user.get("as-uid") or user.get("as-groups") or user.get("as-user-extra")) and not user.get("as"):
        raise PluginError(f"user {name}: impersonating a uid, groups or extra needs a user to impersonate "
                          f"(--as or the kubeconfig's as)")
    if user.get("as"):
        target.as_user = str(user["as"])
        target.as_uid = str(user["as-uid"]) if user.get("as-uid") else None
        target.as_groups = tuple(str(g) for g in user.get("as-groups") or ())
        extra = user.get("as-user-extra") or {}
        if not isinstance(extra, dict):
            raise PluginError(f"user {name}: as-user-extra is not a mapping")
        target.as_extra = {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])]
                           for k, vs in extra.items()}
    if not target.tls:        # client-go reads credentials only for a TLS server
        return
    if user.get("token"):
        target.token = str(user["token"])
    elif user.get("tokenFile"):
        target.token_file = _abs(user["tokenFile"], base)
        try:
            with open(target.token_file) as f:
                target.token = f.read().strip()
        except OSError as exc:
            raise PluginError(f"user {name}: cannot read tokenFile {target.token_file}: "
                              f"{exc.strerror or exc}") from exc
    cert, cert_data = user.get("client-certificate"), user.get("client-certificate-data")
    if cert or cert_data:
        key, key_data = user.get("client-key"), user.get("client-key-data")
        if not (key or key_data):
            raise PluginError(f"user {name}: client-key-data or client-key must be given with a client "
                              f"certificate")
        target.cert_data = _b64(cert_data, f"client-certificate-data of user {name}")
        target.key_data = _b64(key_data, f"client-key-data of user {name}")
        if not cert_data:
            target.cert_file = _abs(cert, base)
        if not key_data:
            target.key_file = _abs(key, base)
        for path, what in ((target.cert_file, "client-certificate"), (target.key_file, "client-key")):
            if path and not os.access(path, os.R_OK):
                raise PluginError(f"user {name}: cannot read the {what} {path}")
    if user.get("username") or user.get("password"):
        target.username, target.password = str(user.get("username") or ""), str(user.get("password") or "")
    if isinstance(user.get("auth-provider"), dict):
        target.auth_provider = user["auth-provider"]
    if isinstance(user.get("exec"), dict):
        ex = user["exec"]
        if not ex.get("command") or not ex.get("apiVersion"):
            raise PluginError(f"user {name}: the exec plugin needs a command and an apiVersion")
        target.exec = ex


def _without_kubeconfig(conn: Connection) -> Target:
    """No kubeconfig file: in-cluster (rest.InClusterConfig plus the server/token/CA flags), else
    --server alone."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    token_file = os.path.join(SA_DIR, "token")
    if host and port and os.path.exists(token_file):
        host = f"[{host}]" if ":" in host else host
        target = Target(server=_server(conn.server or f"https://{host}:{port}"))
        try:
            with open(token_file) as f:
                target.token = conn.token or f.read().strip()
            with open(os.path.join(SA_DIR, "namespace")) as f:
                target.namespace = os.environ.get("POD_NAMESPACE") or f.read().strip() or "default"
        except OSError:
            pass
        target.ca_file = conn.certificate_authority or os.path.join(SA_DIR, "ca.crt")
        target.insecure = bool(conn.insecure_skip_tls_verify)
        if target.insecure and conn.certificate_authority:
            raise PluginError("--certificate-authority together with --insecure-skip-tls-verify is not allowed "
                              "(kubectl refuses it too): drop one of them")
        if target.insecure:
            target.ca_file = None
        _impersonation_flags(target, conn)
        return target
    if conn.server:
        target = Target(server=_server(conn.server, bool(conn.certificate_authority
                                                         or conn.insecure_skip_tls_verify)))
        _server_identity(target, {"insecure-skip-tls-verify": conn.insecure_skip_tls_verify,
                                  "certificate-authority": conn.certificate_authority}, None, "of --server")
        if target.tls and conn.token:
            target.token = conn.token
        _impersonation_flags(target, conn)
        return target
    raise PluginError("no kubeconfig found: set KUBECONFIG or pass --kubeconfig (or run inside a cluster)")


def _impersonation_flags(target, conn):
    if (conn.as_groups or conn.as_uid) and not conn.as_user:
        raise PluginError("--as-group and --as-uid need --as")
    target.as_user, target.as_uid, target.as_groups = conn.as_user, conn.as_uid, tuple(conn.as_groups)
