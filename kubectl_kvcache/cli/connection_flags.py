"""kubectl's connection flags, in one place: their registration on a command's parser, their
conversion to options.Connection (validated before anything is sent; also from the words
completion parsed), and back to argv for the command lines the plugin prints (the undo and
resume commands)."""

from __future__ import annotations

import shlex

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.kube.connection import DEFAULT_CHUNK_SIZE, Connection


def add(p):
    """The connection flags, as kubectl names them."""
    g = p.add_argument_group("connection (as kubectl)")
    g.add_argument("--kubeconfig", metavar="FILE", help="path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    g.add_argument("--context", help="the kubeconfig context to use")
    g.add_argument("--cluster", help="the kubeconfig cluster to use")
    g.add_argument("--user", help="the kubeconfig user to use")
    g.add_argument("-s", "--server", help="the address of the Kubernetes API server")
    g.add_argument("--token", help="bearer token for authentication")
    g.add_argument("--certificate-authority", metavar="FILE", help="path to a CA file for the server's certificate")
    g.add_argument("--insecure-skip-tls-verify", action="store_true", help="do not verify the server's certificate")
    g.add_argument("--tls-server-name", help="server name to check the server's certificate against "
                                             "(default: the server's host name)")
    g.add_argument("--client-certificate", metavar="FILE", help="path to a client certificate file for TLS")
    g.add_argument("--client-key", metavar="FILE", help="path to a client key file for TLS")
    g.add_argument("--username", help="username for basic authentication")
    g.add_argument("--password", help="password for basic authentication")
    g.add_argument("--proxy-url", help="proxy URL for requests to the API server")
    g.add_argument("--disable-compression", action="store_true",
                   help="do not ask the server for compressed responses")
    g.add_argument("--as", dest="as_user", help="username to impersonate")
    g.add_argument("--as-group", action="append", default=[], help="group to impersonate (repeatable)")
    g.add_argument("--as-uid", help="UID to impersonate")
    g.add_argument("--as-user-extra", action="append", default=[], metavar="KEY=VALUE",
                   help="user extra to impersonate (repeatable; one key may be given several values)")
    g.add_argument("--request-timeout", default="0",
                   help="time to wait for one request (e.g. 10s, 1m; 0 waits forever)")
    g.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE,
                   help="objects per page when listing (0 lists without paging)")


def connection(ns) -> Connection:
    """The parsed flags as a Connection. --as-group/--as-uid without --as are judged with the
    kubeconfig's `as` (kubeconfig.py), as kubectl does."""
    conn = Connection(kubeconfig=ns.kubeconfig, context=ns.context, cluster=ns.cluster, user=ns.user,
                      server=ns.server, token=ns.token, certificate_authority=ns.certificate_authority,
                      insecure_skip_tls_verify=ns.insecure_skip_tls_verify, as_user=ns.as_user,
                      as_groups=tuple(ns.as_group), as_uid=ns.as_uid, as_user_extra=tuple(ns.as_user_extra),
                      tls_server_name=ns.tls_server_name, client_certificate=ns.client_certificate,
                      client_key=ns.client_key, username=ns.username, password=ns.password,
                      proxy_url=ns.proxy_url, disable_compression=ns.disable_compression,
                      request_timeout=ns.request_timeout, chunk_size=ns.chunk_size)
    _ = conn.timeout  # a bad --request-timeout fails before anything is sent
    if conn.chunk_size < 0:
        raise PluginError(f"--chunk-size must be 0 or more, not {conn.chunk_size}")
    return conn


def from_completion(given, request_timeout) -> Connection:
    """The Connection the flags typed so far describe, as completion parsed them (`given`: dest ->
    value; flags not typed: kubectl's defaults), each request bounded by `request_timeout`."""
    def text(key):
        value = given.get(key)
        return value if isinstance(value, str) and value else None
    groups = given.get("as_group")
    extra = given.get("as_user_extra")
    return Connection(kubeconfig=text("kubeconfig"), context=text("context"), cluster=text("cluster"),
                      user=text("user"), server=text("server"), token=text("token"),
                      certificate_authority=text("certificate_authority"),
                      insecure_skip_tls_verify=given.get("insecure_skip_tls_verify") is True,
                      as_user=text("as_user"), as_groups=(groups,) if isinstance(groups, str) else (),
                      as_uid=text("as_uid"), as_user_extra=(extra,) if isinstance(extra, str) else (),
                      tls_server_name=text("tls_server_name"), client_certificate=text("client_certificate"),
                      client_key=text("client_key"), username=text("username"), password=text("password"),
                      proxy_url=text("proxy_url"), disable_compression=given.get("disable_compression") is True,
                      request_timeout=request_timeout)


# -- back to argv -------------------------------------------------------------------------------

TOKEN_VARIABLE = "KVCACHE_TOKEN"
PASSWORD_VARIABLE = "KVCACHE_PASSWORD"
SECRET_REFERENCES = ("$" + TOKEN_VARIABLE, "$" + PASSWORD_VARIABLE)     # written in double quotes
_VALUE_FLAGS = (("kubeconfig", "--kubeconfig"), ("context", "--context"), ("cluster", "--cluster"),
                ("user", "--user"), ("server", "--server"),
                ("certificate_authority", "--certificate-authority"), ("tls_server_name", "--tls-server-name"),
                ("client_certificate", "--client-certificate"), ("client_key", "--client-key"),
                ("username", "--username"), ("proxy_url", "--proxy-url"), ("as_user", "--as"),
                ("as_uid", "--as-uid"))


def connection_args(conn: Connection) -> tuple[str, ...]:
    """The connection flags the user gave, as argv (the token and password themselves are never
    echoed: they are referenced as $KVCACHE_TOKEN and $KVCACHE_PASSWORD)."""
    args = []
    for attr, flag in _VALUE_FLAGS:
        value = getattr(conn, attr)
        if value:
            args += [flag, value]
    for group in conn.as_groups:
        args += ["--as-group", group]
    for extra in conn.as_user_extra:
        args += ["--as-user-extra", extra]
    if conn.token:
        args += ["--token", "$" + TOKEN_VARIABLE]
    if conn.password:
        args += ["--password", "$" + PASSWORD_VARIABLE]
    if conn.insecure_skip_tls_verify:
        args.append("--insecure-skip-tls-verify")
    if conn.disable_compression:
        args.append("--disable-compression")
    if str(conn.request_timeout or "0") != "0":
        args += ["--request-timeout", str(conn.request_timeout)]
    if conn.chunk_size != DEFAULT_CHUNK_SIZE:
        args += ["--chunk-size", str(conn.chunk_size)]
    return tuple(args)


def shell_command(argv) -> str:
    """argv as one shell line; the token's and password's variables stay (double-quoted) references."""
    return " ".join(f'"{a}"' if a in SECRET_REFERENCES else shlex.quote(a) for a in argv)
