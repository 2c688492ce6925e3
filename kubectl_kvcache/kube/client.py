"""The client: requests to the Kubernetes API made as kubectl makes them (kubeconfig.py says
where and as whom; transport.py carries them over HTTP/1.1 with http.client, held to Go's rules):
paged lists, discovery, merge patches. Errors become one-line PluginErrors that say what was
refused or unreachable.

The transport is client-go's, in what matters here: one keep-alive connection pool per API server;
429 and 5xx answers that carry Retry-After retried as it says (client-go's rule; at most
MAX_RETRIES times and MAX_RETRY_WAIT seconds of waiting in all, never past --request-timeout); --request-timeout bounds a whole
request, the body included; Ctrl-C closes every open connection at once.

The kubernetes client (37.0.2) is loaded only for users with an exec plugin or an auth-provider.
An auth-provider's token comes through its public API: kubernetes.config.load_kube_config_from_dict
into a Configuration of our own, read from its documented api_key. An exec plugin has no public
way that keeps kubectl's behaviour: load_kube_config_from_dict runs the plugin but catches every
error of it into the root logger (logging.error) and returns as if the user had no credentials,
so the failure, the plugin's stderr and the installHint would be lost; it hands a client
certificate back only as temporary files (tempfile.mkstemp, removed at exit) holding the private
key, where we keep it in memory (a memfd); and load_kube_config(config_file) reads the kubeconfig
its own way (KubeConfigMerger), not kubectl's, which kubeconfig.py follows. Neither knows
interactiveMode (checked here, as exec.go isInteractive does). So exec runs through
kubernetes.config.exec_provider.ExecProvider, the class those public loaders run (kube_config.py
_load_from_exec_plugin), with the ConfigNode wrapper its docstring requires: named without an
underscore, though not in kubernetes.config.__all__; nothing underscored is used. Where it still
differs from exec.go: it takes "interactive" from stdout being a terminal (exec.go: stdin, and
interactiveMode), and keeps the plugin's stderr when stdout is not one (exec.go always passes it on).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable

from kubectl_kvcache import __version__
from kubectl_kvcache.kube import gourl
from kubectl_kvcache.errors import Conflict, ExpiredContinue, Forbidden, NotFound, PluginError, secret
from kubectl_kvcache.kube.kubeconfig import Target, resolve
from kubectl_kvcache.kube.connection import DEFAULT_CHUNK_SIZE, Connection

USER_AGENT = f"kubectl-kvcache/{__version__}"
MAX_LIST_RESTARTS = 3
MAX_RETRIES = 10            # 429/503 with Retry-After, as client-go's default
MAX_RETRY_WAIT = 60.0       # seconds waited for retries of one request, in all
MAX_PAGES = 20000           # a list that pages longer than this never ends
MAX_EMPTY_PAGES = 100       # consecutive pages without items that still go on
_CHUNK = 1 << 16
# The Accept header client-go sends for discovery: the aggregated document (v2, else v2beta1), else
# whatever the server has (an older server answers its plain APIGroupList).
AGGREGATED_DISCOVERY = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                        "application/json")


def _status_message(body: bytes) -> tuple[str, str]:
    try:
        status = json.loads(body)
        return status.get("message") or "", status.get("reason") or ""
    except (ValueError, AttributeError):
        return (body or b"").decode("utf-8", "replace").strip()[:300], ""


class _Timeout(Exception):
    """The request's deadline passed."""


class _Transport:
    """Keep-alive connections to one API server (a pool of them), with TLS, credentials and the
    proxy as `target` says. transport.py makes the connections (http.client, held to Go's rules)."""

    def __init__(self, target: Target):
        from kubectl_kvcache.kube import transport

        self.target = target
        try:
            scheme, hostname, port, parts = transport.split(target.server, "the server")
        except ValueError as exc:       # a port that is not a number in 0-65535, a broken IPv6 host
            raise PluginError(f"the server {target.server!r} has an invalid port or host") from exc
        if scheme not in ("http", "https"):
            raise PluginError(f"the server {target.server!r} is not an http(s) URL")
        self.https = scheme == "https"
        self.hostname = hostname
        self.port = port
        # rest/request.go: the prefix is path.Join of the server URL's decoded Path, and the
        # request URL, built from that Path, is written by EscapedPath: /%7Eprefix goes as /~prefix
        try:
            self.prefix = gourl.go_escape_path(gourl.go_clean(gourl.go_unescape(parts.path)))
        except ValueError as exc:
            raise PluginError(f"the server {target.server!r}: {exc}") from exc
        # Go's Request.write: the Host header is the URL's host as written, without an IPv6 zone
        netloc = parts.netloc.rpartition("@")[2]
        zone = netloc.find("%")
        self.host_header = netloc if zone < 0 else netloc[:zone] + netloc[netloc.index("]", zone):]
        if not self.host_header.isascii():
            self.host_header = transport._authority(hostname, port) if parts.port else transport._host_name(hostname)
        self.proxy = _proxy(target)
        self.context = self._ssl_context() if self.https else None
        # TLS to an https:// proxy uses the same TLS config as the server's (transport.go
        # dialConn -> addTLS with the Transport's TLSClientConfig), an http:// server's too
        self.proxy_context = self.context or (self._ssl_context() if self.proxy and self.proxy[0] == "https"
                                              else None)
        self._idle: list = []
        self._active: set = set()
        # re-entrant: Ctrl-C's handler (abort) runs in the main thread, maybe while it is inside take()
        self._lock = threading.RLock()
        self.aborted = _INTERRUPTED.is_set()     # made in another thread after Ctrl-C: never connects

    def _ssl_context(self):
        t = self.target
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if t.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                if t.ca_data:
                    ctx.load_verify_locations(cadata=t.ca_data.decode("ascii", "replace"))
                elif t.ca_file:
                    ctx.load_verify_locations(cafile=t.ca_file)
                else:
                    ctx.load_default_certs()
            except (ssl.SSLError, OSError, ValueError) as exc:
                raise PluginError(f"the certificate authority for {t.server} cannot be used: {_reason(exc)}") from exc
        if t.cert_data or t.cert_file:
            _load_client_cert(ctx, t)
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    def _new(self, timeout):
        from kubectl_kvcache.kube import transport

        return transport.Connection(self.hostname, self.port, timeout, self.host_header, context=self.context,
                                    server_name=self.target.tls_server_name, proxy=self.proxy,
                                    proxy_context=self.proxy_context)

    def take(self, timeout, fresh=False):
        """An idle kept-alive connection, else a new one (`fresh`: always a new one). An idle
        connection with anything to read (an answer nobody asked for, or its end) is closed,
        never used (Go's persistConn closes on an unsolicited response)."""
        from kubectl_kvcache.kube.transport import pending

        from kubectl_kvcache.kube.transport import IDLE_CONN_TIMEOUT

        while True:
            with self._lock:
                if self.aborted:
                    raise KeyboardInterrupt
                conn = self._idle.pop() if self._idle and not fresh else None
                if conn is None:
                    conn = self._new(timeout)
                    self._active.add(conn)
                    return conn, False
                self._active.add(conn)
            # transport.go: an idle connection older than IdleConnTimeout is closed, not reused
            if time.monotonic() - getattr(conn, "idle_since", 0.0) <= IDLE_CONN_TIMEOUT and not pending(conn.sock):
                break
            self.give_back(conn, False)
        conn.sock.settimeout(timeout)
        conn.timeout = timeout
        return conn, True

    def give_back(self, conn, keep):
        with self._lock:
            self._active.discard(conn)
            if keep and not self.aborted and conn.sock is not None:
                conn.idle_since = time.monotonic()
                self._idle.append(conn)
                return
        conn.close()

    def abort(self):
        """Close every connection now (Ctrl-C): requests blocked on them fail at once."""
        with self._lock:
            self.aborted = True
            conns = list(self._active) + self._idle
            self._idle = []
        for conn in conns:
            _shutdown(conn)


def _shutdown(conn):
    from kubectl_kvcache.kube.transport import shutdown

    shutdown(conn)


def _proxy(target):
    """(scheme, host, port, URL parts) of the proxy kubectl would use for this server
    (target.proxy, decided by kubeconfig.py), or None: connect directly."""
    url = getattr(target, "proxy", None)
    if not url:
        return None
    from kubectl_kvcache.kube import transport

    try:
        scheme, host, port, parts = transport.split(url, "proxy")
    except ValueError as exc:
        raise PluginError(f"the proxy URL of the cluster is invalid: {_reason(exc)}") from None
    if scheme not in transport.DEFAULT_PORTS:
        raise PluginError(f"the proxy scheme {scheme!r} is not supported (http, https, socks5, socks5h)")
    return scheme, host, port, parts


def _load_client_cert(ctx, t):
    """ssl loads a certificate chain from files only: data from the kubeconfig (or an exec plugin)
    goes through anonymous memory files on Linux (never on disk), else through a private
    temporary folder that is removed at once."""
    fds, folder = [], None
    try:
        cert, key = t.cert_file, t.key_file
        if t.cert_data or t.key_data:
            if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
                def place(name, data):
                    fd = os.memfd_create(name, os.MFD_CLOEXEC)
                    fds.append(fd)
                    _write_all(fd, data)
                    return f"/proc/self/fd/{fd}"
            else:
                folder = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"kubectl-kvcache-{os.urandom(8).hex()}")
                os.mkdir(folder, 0o700)

                def place(name, data):
                    path = os.path.join(folder, name)
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    try:
                        _write_all(fd, data)
                    finally:
                        os.close(fd)
                    return path
            if t.cert_data:
                cert = place("client.crt", t.cert_data)
            if t.key_data:
                key = place("client.key", t.key_data)
        ctx.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise PluginError(f"the client certificate of user {t.user_name or '(none)'} cannot be used: "
                          f"{_reason(exc)}") from exc
    finally:
        for fd in fds:
            os.close(fd)
        if folder:
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)


def _write_all(fd, data: bytes):
    view = memoryview(data)
    while view:
        view = view[os.writev(fd, [view]):]


def _credentials(target: Target) -> dict[str, str]:
    """The Authorization header: the one kubeconfig.resolve decided (target.authorization), else
    an exec plugin's or auth-provider's token (resolve sets those only when kubectl would run
    them); an exec plugin that hands out a client certificate is loaded into the TLS context."""
    if target.authorization:
        return {"Authorization": target.authorization}
    if target.exec:
        return _exec_credentials(target, target.exec)
    if target.auth_provider:
        return _auth_provider_token(target, target.auth_provider)
    return {}


def _exec_credentials(target: Target, config: dict) -> dict[str, str]:
    """An exec plugin's token, or its client certificate and key (into target, for the TLS
    context), run by the kubernetes client's ExecProvider (the module docstring says why not a
    public loader), with kubectl's interactiveMode check and prompt lock around it."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.exec_provider import ExecProvider
    from kubernetes.config.kube_config import ConfigNode

    command = config.get("command")
    mode = config.get("interactiveMode") or "IfAvailable"
    # client-go@v0.37.2/plugin/pkg/client/auth/exec/exec.go isInteractive: Always needs stdin to
    # be a terminal, checked before the plugin runs (Never and IfAvailable never refuse)
    if mode == "Always" and not _stdin_is_terminal():
        raise PluginError(f"the exec credential plugin {command!r} of user {target.user_name} has interactiveMode "
                          f"Always, but standard input is not a terminal (kubectl refuses it too)")
    cluster = dict(target.cluster, server=target.server)
    # several contexts at once (--all-contexts): plugins that may talk to the terminal run one at
    # a time, so that their prompts never interleave; the others run concurrently
    prompts = mode != "Never" and _stdin_is_terminal()
    try:
        # no working directory of its own: exec.go sets no cmd.Dir, so the plugin runs where kubectl
        # runs (kubeconfig.py has made a command with a '/' absolute against the kubeconfig's folder)
        with _EXEC_PROMPTS if prompts else _NO_LOCK:
            status = ExecProvider(ConfigNode("exec", config), None, ConfigNode("cluster", cluster)).run()
    except (ConfigException, OSError) as exc:
        hint = config.get("installHint")
        text = " ".join(str(exc).split())
        raise PluginError(f"the exec credential plugin {command!r} of user {target.user_name} failed: {text}"
                          + (f" ({' '.join(str(hint).split())})" if hint else "")) from exc
    if not isinstance(status, dict):
        raise PluginError(f"the exec credential plugin {command!r} of user {target.user_name} printed no status")
    if status.get("token"):
        secret(status["token"])
        return {"Authorization": f"Bearer {status['token']}"}
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        target.cert_data = status["clientCertificateData"].encode()
        target.key_data = status["clientKeyData"].encode()
        return {}
    raise PluginError(f"the exec credential plugin {command!r} of user {target.user_name} printed neither a token "
                      f"nor a client certificate and key")


class FileToken:
    """The bearer token of a file, re-read while the run lasts, as client-go's transport does for
    a tokenFile and the in-cluster service-account token (client-go transport/token_source.go,
    kubernetes/client-go master: NewCachedFileTokenSource is a cachingTokenSource over a
    fileTokenSource of period 1 minute and leeway 10 seconds): a token read more than PERIOD -
    LEEWAY ago is read again before the next request; a file that cannot be read or is empty
    keeps the token last read ("Unable to rotate token"), else the static token of the
    kubeconfig; a 401 answer forgets a token read before its request started
    (ResetTokenOlderThan), so the next request reads the file again. The kubelet rewrites a
    projected service-account token at 80% of its life (an hour by default; 10 minutes at the
    least), so a long --watch always sends a token that is still valid."""

    PERIOD = 60.0
    LEEWAY = 10.0

    def __init__(self, path, token, fallback=None, clock=time.monotonic):
        self.path, self.fallback, self.clock = path, fallback, clock
        self.token, self.read_at = token, clock() if token else None
        self._lock = threading.Lock()

    def current(self) -> str | None:
        from kubectl_kvcache.kube.kubeconfig import file_token

        with self._lock:
            now = self.clock()
            if self.token is not None and self.read_at is not None and now < self.read_at + self.PERIOD - self.LEEWAY:
                return self.token
            fresh = file_token(self.path)
            if fresh is not None:
                secret(fresh)
                self.token, self.read_at = fresh, now
            return self.token or self.fallback

    def reset_older_than(self, moment):
        with self._lock:
            if self.read_at is not None and self.read_at < moment:
                self.read_at = None


_EXEC_PROMPTS = threading.Lock()
_NO_LOCK = contextlib.nullcontext()


def may_prompt(conn) -> bool:
    """Whether the exec credential plugin of `conn`'s user could talk to the terminal (stdin is one
    and its interactiveMode is not Never): such plugins run one at a time in one process, so their
    prompts never interleave. A connection that does not resolve cannot prompt (its reading fails)."""
    if not _stdin_is_terminal():
        return False
    try:
        target = resolve(conn)
    except PluginError:
        return False
    if not target.exec:
        return False
    return (target.exec.get("interactiveMode") or "IfAvailable") != "Never"


def _stdin_is_terminal() -> bool:
    """term.IsTerminal(os.Stdin.Fd()), as exec.go asks it."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def _auth_provider_token(target: Target, provider: dict) -> dict[str, str]:
    """The token of the user's auth-provider, through the kubernetes client's public API: a one-user
    kubeconfig loaded by load_kube_config_from_dict into a Configuration of our own (never the
    default one; nothing persisted), whose api_key['BearerToken'] it sets. The cluster is only its
    server (the provider never reads the rest), so that no certificate of it is looked for or
    written to a temporary file."""
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, load_kube_config_from_dict

    name = provider.get("name")
    config = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "clusters": [{"name": "c", "cluster": {"server": target.server}}],
              "users": [{"name": "u", "user": {"auth-provider": provider}}]}
    configuration = Configuration()
    try:
        load_kube_config_from_dict(config, client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, KeyError, ValueError) as exc:
        raise PluginError(f"the auth-provider {name!r} of user {target.user_name} failed: "
                          f"{' '.join(str(exc).split())}") from exc
    token = configuration.api_key.get("BearerToken")
    if not token:
        raise PluginError(f"the auth-provider {name!r} of user {target.user_name} gave no token")
    secret(token.removeprefix("Bearer "))
    return {"Authorization": token if token.startswith("Bearer ") else f"Bearer {token}"}


_LIVE: "weakref.WeakSet[_Transport]" = weakref.WeakSet()     # the transports Ctrl-C closes
_INTERRUPTED = threading.Event()     # Ctrl-C came: transports made after it (other threads') are closed from the start


def _install_interrupt():
    """Ctrl-C closes every open connection before KeyboardInterrupt unwinds, so that requests
    blocked in other threads (concurrent lists, the page fetched ahead) end at once too."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or getattr(previous, "_kvcache", False):
        return      # SIGINT ignored or left to the OS: not ours to change

    def on_interrupt(signum, frame):
        _INTERRUPTED.set()
        for transport in list(_LIVE):
            transport.abort()
        previous(signum, frame)
        raise KeyboardInterrupt

    on_interrupt._kvcache = True      # type: ignore[attr-defined]  # the mark that it is ours (checked above)
    try:
        signal.signal(signal.SIGINT, on_interrupt)
    except (ValueError, OSError):
        pass


def install_interrupt():
    """From the main thread, before requests run in other threads (several contexts at once):
    Ctrl-C then closes every connection of every client, wherever it was made."""
    _install_interrupt()


_WARM: dict[Connection, list] = {}


def warm(conn: Connection, groups, trace=None, then=None):
    """Start connecting in the background while the command's modules are still being imported:
    a Client for `conn` with its first connections open and `groups` discovered, or instead
    `then(client)` if given (its own errors are its to keep). `claim()` hands the client over once all that is
    done. Users with an exec plugin or an auth-provider are not warmed (their plugin runs when
    the command asks, in the foreground); any failure is left for the foreground to meet again."""
    if conn in _WARM:
        return
    _install_interrupt()        # in the main thread: the warm client's connections are closed by Ctrl-C too
    slot: list = [None, None]       # [the thread, the client once made]

    def run():
        try:
            target = resolve(conn)
            if target.exec or target.auth_provider:
                return
            client = Client(conn, trace, target=target)
            slot[1] = client
            if then is not None:
                then(client)        # it discovers what it needs, with its first requests already sent
            else:
                client.discover(*groups)
        except BaseException:       # noqa: B902 - the foreground meets the same failure, and reports it
            pass

    thread = threading.Thread(target=run, name="kvcache-warm", daemon=True)
    slot[0] = thread
    _WARM[conn] = slot
    thread.start()


def claim(conn: Connection) -> "Client | None":
    """The client warm() prepared for `conn` (waiting for it), or None."""
    slot = _WARM.pop(conn, None)
    if slot is None:
        return None
    slot[0].join()
    return slot[1]


_List = list    # the builtin, for annotations inside Client (where `list` is Client.list)


class Client:
    """Raw-JSON requests to the API server the connection flags and kubeconfig name."""

    def __init__(self, conn: Connection, trace: Callable[[str], None] | None = None,
                 target: Target | None = None):
        """`trace`: called with one line per request when KVCACHE_TRACE is set (render prints it)."""
        self.requests = 0
        self._lock = threading.Lock()
        target = target or resolve(conn)
        self.target = target
        self.namespace = target.namespace
        self.host = target.server
        self.timeout = conn.timeout
        from kubectl_kvcache.kube import transport

        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        headers.update(_credentials(target))    # may run an exec plugin, which may give a certificate
        try:        # checked before any connection is made, as Go's Transport checks them
            self._headers = transport.header_bytes(list(headers.items()) + list(target.impersonation))
        except transport.ProtocolError as exc:
            raise PluginError(f"refusing to send a request to {target.server}: {exc}") from None
        self._token = None
        if target.token_file and target.authorization and target.authorization.startswith("Bearer "):
            self._token = FileToken(target.token_file, target.authorization[len("Bearer "):])
        self._transport = _Transport(target)
        self.trace = trace if os.environ.get("KVCACHE_TRACE") not in (None, "", "0") else None
        self._discovery: dict[str, dict | None] = {}    # None: the group is not served
        # discovery that met no answer at all (unreachable, timed out): the same failure for every
        # later question of the run, not another wait of the same length per group
        self._undiscovered: dict[str, PluginError] = {}
        _LIVE.add(self._transport)
        _install_interrupt()

    # -- requests ------------------------------------------------------------------------

    def request(self, method, path, query=None, body=None, content_type=None, what=None, raw=False,
                accept=None, timeout=None, limit=None, sink=None):
        """Raw JSON request; returns the decoded body (`raw`: its bytes, still undecoded) or raises
        a one-line PluginError. `accept`: another Accept header than plain JSON. `timeout`: a
        shorter bound than the connection's request timeout; `limit`: bytes of the answer's body
        (beyond: a PluginError, the rest never read). `sink`: a 2xx answer's body is handed to it
        line by line instead (transport.body_lines, at most `limit` bytes; None is returned), and
        a 3xx answer is a PluginError: a redirect is never followed."""
        what = what or f"{method} {path}"
        url = self._transport.prefix + _safe_path(path)
        if query:
            url += "?" + urlencode(query)
        started = self._moment()
        headers = self._headers_now()
        if accept:
            headers = [(k, accept.encode() if k == "Accept" else v) for k, v in headers]
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        if content_type:
            headers = headers + [("Content-Type", content_type.encode())]
        bound = min(t for t in (self.timeout, timeout) if t) if (self.timeout or timeout) else None
        deadline = time.monotonic() + bound if bound else None
        waited, attempt, lost, renewed = 0.0, 0, None, False
        write = method not in ("GET", "HEAD")
        while True:
            with self._lock:
                self.requests += 1
            try:
                status, resp_headers, data = self._send(method, url, headers, body, deadline, what, limit, sink)
            except PluginError as exc:
                if lost is not None and getattr(exc, "lost", None) is None:
                    exc.lost = lost
                raise
            if self.trace:
                with self._lock:
                    self.trace(f"{method} {path}{'?' + urlencode(query) if query else ''} -> {status} "
                               f"({len(data or b'')} bytes)")
            if (status == 429 or status >= 500) and attempt < MAX_RETRIES:     # client-go's checkWait
                delay = _retry_after(resp_headers)
                if (delay is not None and (deadline is None or time.monotonic() + delay < deadline)
                        and waited + delay <= MAX_RETRY_WAIT):
                    attempt += 1
                    waited += delay
                    if write and status >= 500 and lost is None:
                        # a 5xx may come after the server acted on the write (a timeout on the
                        # way back): whatever the retry is answered, this answer is lost
                        lost = f"the API server answered {status} to the first attempt, which it may have applied"
                    time.sleep(delay)
                    continue
            if status == 401 and not renewed and self._renewed(started, headers):
                renewed = True
                headers = self._headers_now(headers)
                started = self._moment()
                continue
            break
        if status >= 400:
            error = self._error(status, data, what)
            if write and (lost is not None or status >= 500):
                error.lost = lost or f"the API server answered {status}, and may have applied it"
            raise error
        if sink is not None:
            if not 200 <= status < 300:
                # kubectl's client would follow it (client-go sets no CheckRedirect); here the
                # answer comes from whoever runs the Pod or something on the way (the API server
                # itself never redirects pods/log: PreventRedirects), and following it would
                # send this user's credentials wherever it points
                raise PluginError(f"the API server answered {status} for {what}"
                                  f"{' (a redirect, not followed)' if 300 <= status < 400 else ''}")
            return None
        return data if raw else _decode(data, what)

    def _moment(self):
        """When a request starts, on the token file's own clock (FileToken.clock): a 401 compares
        it with when the token was read, so both must come from one clock."""
        return self._token.clock() if self._token is not None else None

    def _renewed(self, started, sent) -> bool:
        """After a 401: the token read before the request is forgotten (ResetTokenOlderThan), and
        True when its file now holds another one than the request carried: the request is then
        sent once more with it (what client-go's callers, a reflector's next list, would send;
        a 401 was never acted on, so a write too)."""
        if self._token is None:
            return False
        self._token.reset_older_than(started)
        return _authorization(self._headers_now()) != _authorization(sent)

    def _headers_now(self, like=None):
        """The request's headers, with the token as its file holds it now (FileToken); `like`:
        headers already built for a request, whose Authorization is brought up to date."""
        if like is not None:
            now = dict(self._headers_now())
            return [(k, now["Authorization"]) if k == "Authorization" else (k, v) for k, v in like]
        if self._token is None:
            return self._headers
        token = self._token.current()
        from kubectl_kvcache.kube import transport

        try:
            (auth,) = transport.header_bytes([("Authorization", f"Bearer {token}")])
        except transport.ProtocolError as exc:
            raise PluginError(f"refusing to send a request to {self.host}: the token read again from "
                              f"{self._token.path}: {exc}") from None
        return [auth if k == "Authorization" else (k, v) for k, v in self._headers]

    def settle(self, send: Callable[[], object], reread: Callable[[], object], holds: Callable[[object], bool]):
        """A write (patch_merge, create, delete: `send()`) whose answer may have been lost, as
        (result, lost): `lost` None when the server answered it; else the answer was lost (a 5xx,
        retried or not, the connection gone after the request went out, a timeout) or a retry
        answered for it (409, 404), and the object is read again with `reread()`: when
        `holds(object)` says what the write asked for is so, (object, why the answer was lost) is
        returned, for the caller to report what happened. Otherwise the write's error is raised,
        saying that its answer was lost and the re-read shows the change not in place."""
        try:
            return send(), None
        except PluginError as exc:
            lost = getattr(exc, "lost", None)
            if lost is None:
                raise
            try:
                now = reread()
            except PluginError as again:
                raise type(exc)(f"{exc}; its answer was lost ({lost}) and reading the object again failed too "
                                f"({again}): check it before running again") from exc
            if holds(now):
                return now, lost
            error = type(exc)(f"{exc} (its answer was lost: {lost}; read again, the object does not show the "
                              f"change)")
            error.lost = lost
            raise error from exc

    def _send(self, method, url, headers, body, deadline, what, limit=None, sink=None):
        """One exchange: (status, headers, body). A GET on a kept-alive connection the server
        closed in the meantime is sent again once on a new connection; a write always goes on a
        new connection (it is never sent twice: the server may have acted on it). A write that
        fails after it went out whole raises a PluginError whose `lost` says so."""
        try:
            return self._exchange(method, url, headers, body, deadline, what, limit, sink)
        except PluginError as exc:
            sent = getattr(exc, "sent", False)
            if sent and method not in ("GET", "HEAD") and getattr(exc, "lost", None) is None:
                exc.lost = "the request went out whole, and the server may have applied it"
            raise

    def _exchange(self, method, url, headers, body, deadline, what, limit=None, sink=None):
        from http.client import HTTPException, RemoteDisconnected

        from kubectl_kvcache.kube.transport import (READ_IDLE_TIMEOUT, BadEncoding, DialTimeout, HandshakeTimeout,
                                                    ProtocolError, TooLarge, body_lines)

        idempotent = method in ("GET", "HEAD")
        for fresh_try in (False, True):
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(what)
            idle = READ_IDLE_TIMEOUT if remaining is None else min(remaining, READ_IDLE_TIMEOUT)
            conn, reused = self._transport.take(idle, fresh=fresh_try or not idempotent)
            watchdog = None
            if remaining is not None:
                watchdog = threading.Timer(remaining, _shutdown, (conn,))
                watchdog.daemon = True
                watchdog.start()
            keep = False
            try:
                try:
                    resp = conn.send_request(method, url, headers, body)
                    if sink is not None and 200 <= resp.status < 300:
                        sink.restart()      # a second try starts the body again
                        body_lines(resp, limit, sink)
                        data = b""
                    else:
                        data = resp.read_all() if limit is None else resp.read_all(limit)
                    if deadline is not None and time.monotonic() >= deadline:
                        raise _Timeout()
                    keep = not resp.will_close and not resp.extra and resp.isclosed()
                    return resp.status, resp.headers, data
                except _Timeout:
                    raise self._timed_out(what) from None
                except TooLarge as exc:
                    raise PluginError(f"the API server's answer to {what} is too large: {exc} (a limit far above "
                                      f"any real answer); stopped") from None
                except BadEncoding as exc:
                    raise PluginError(f"the answer to {what} is not read: {exc}") from None
                except ssl.SSLCertVerificationError as exc:
                    raise PluginError(f"TLS with the API server at {self.host} failed: the server's certificate "
                                      f"is not trusted ({exc.verify_message or _reason(exc)})") from None
                except (DialTimeout, HandshakeTimeout) as exc:
                    if deadline is not None and time.monotonic() >= deadline - 0.05:
                        raise self._timed_out(what) from None
                    raise PluginError(f"cannot reach the API server at {self.host} ({what}): {exc}") from None
                except ssl.SSLError as exc:
                    if self._transport.aborted:
                        raise KeyboardInterrupt from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise self._timed_out(what) from None
                    raise PluginError(f"TLS with the API server at {self.host} failed: {_reason(exc)}") from None
                except (RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                    if self._transport.aborted:
                        raise KeyboardInterrupt from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise self._timed_out(what) from None
                    if reused and idempotent and not fresh_try:
                        continue
                    raise PluginError(f"the API server at {self.host} closed the connection ({what}): "
                                      f"{_reason(exc)}") from None
                except (socket.timeout, TimeoutError):
                    if deadline is not None and time.monotonic() >= deadline - 0.05:
                        raise self._timed_out(what) from None
                    raise PluginError(f"the API server at {self.host} sent nothing for {READ_IDLE_TIMEOUT:g}s "
                                      f"({what}); the connection is taken for dead") from None
                except (OSError, HTTPException, ProtocolError) as exc:
                    if self._transport.aborted:
                        raise KeyboardInterrupt from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise self._timed_out(what) from None
                    raise PluginError(f"cannot reach the API server at {self.host} ({what}): {_reason(exc)}") \
                        from None
            except PluginError as exc:
                exc.sent, exc.unanswered = conn.sent, True
                raise
            finally:
                if watchdog is not None:
                    watchdog.cancel()
                self._transport.give_back(conn, keep)
        raise PluginError(f"cannot reach the API server at {self.host}")   # not reached

    def _timed_out(self, what):
        if not self.timeout:       # a bound of the read itself (request's `timeout`)
            return PluginError(f"the API server at {self.host} did not answer in time ({what})")
        return PluginError(f"the API server at {self.host} did not answer within the request timeout "
                           f"of {self.timeout:g}s ({what})")

    def close(self):
        self._transport.abort()
        _LIVE.discard(self._transport)

    def _error(self, status, data, what):
        message, reason = _status_message(data)
        if status == 401:
            return PluginError(f"the API server refused the credentials (401 Unauthorized) for {what}: "
                               f"they are missing, invalid or expired")
        if status == 403:
            return Forbidden(f"forbidden: cannot {what}: {message}")
        if status == 404:
            return NotFound(f"not found: {what}" + (f": {message}" if message else ""))
        if status == 409:
            return Conflict(f"conflict: {what}: {message}")
        if status == 410:
            return ExpiredContinue(f"gone: {what}: {message}")
        return PluginError(f"the API server answered {status} {reason or ''} for {what}: {message}".strip())

    def get(self, path, what=None):
        return self.request("GET", path, what=what)

    def pod_log(self, namespace, pod, container, limit_bytes, sink, previous=False, tail_lines=None,
                timeout=None) -> None:
        """A container's log as `kubectl logs` asks for it (pods/log: the API server proxies the
        kubelet's), streamed into `sink` line by line (transport.body_lines), never held whole;
        bounded by the server (limitBytes, tailLines) and here (the same bytes, `timeout`)."""
        query = {"container": container, "limitBytes": str(limit_bytes)}
        if previous:
            query["previous"] = "true"
        if tail_lines is not None:
            query["tailLines"] = str(tail_lines)
        what = f"get the {'previous ' if previous else ''}log of pod {pod} container {container}"
        self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query=query, what=what,
                     accept="text/plain, */*", timeout=timeout, limit=limit_bytes, sink=sink)

    def pod_proxy_get(self, namespace, pod, port, path, limit_bytes, sink, timeout=None) -> None:
        """GET `path` on the Pod's `port` through the API server's pods/proxy (as `kubectl get --raw`
        would), streamed into `sink` line by line, bounded by `limit_bytes` and `timeout`. A port
        that is no TCP port (1-65535) is a PluginError, never a request."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise PluginError(f"port {str(port)[:20]!r} of pod {pod} is not a TCP port (1-65535): {path} not read")
        what = f"get {path} of pod {pod} port {port} (pods/proxy)"
        self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/{path.lstrip('/')}",
                     what=what, accept="text/plain, */*", timeout=timeout, limit=limit_bytes, sink=sink)

    def patch_merge(self, path, body, field_manager=None, dry_run=False, what=None):
        """A JSON merge patch (RFC 7386) of one object; `dry_run` asks the server to validate and
        admit it without persisting anything (dryRun=All). Returns the object as patched."""
        query = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, query=query, body=body,
                            content_type="application/merge-patch+json", what=what)

    def apply(self, path, body, field_manager, force=False, dry_run=False, what=None):
        """Server-side apply of one object (PATCH application/apply-patch+yaml, as `kubectl apply
        --server-side` sends it: JSON is YAML): the fields `field_manager` owns are set, the
        others' left alone; a field another manager owns is a 409 Conflict unless `force`
        (kubectl's --force-conflicts: the field becomes this manager's). Creates the object when
        it does not exist. Returns it."""
        query = {"fieldManager": field_manager}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, query=query, body=body, content_type="application/apply-patch+yaml",
                            what=what)

    def create(self, collection, body, field_manager=None, dry_run=False, what=None):
        """POST one object to its collection (`dry_run`: dryRun=All, nothing persisted). Returns
        the object as created; 409 AlreadyExists raises Conflict."""
        query = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if dry_run:
            query["dryRun"] = "All"
        return self.request("POST", collection, query=query, body=body, content_type="application/json",
                            what=what)

    def delete(self, path, uid=None, resource_version=None, propagation="Background", dry_run=False,
               what=None):
        """DELETE one object with DeleteOptions: preconditions (uid, resourceVersion: 409 when
        the object is not the one read), the propagation policy, dryRun=All. Returns the answer
        (the object, marked for deletion when finalizers hold it, or a Status)."""
        options: dict = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation:
            options["propagationPolicy"] = propagation
        if dry_run:
            options["dryRun"] = ["All"]
        return self.request("DELETE", path, body=options, content_type="application/json", what=what)

    def get_or_none(self, path, what=None):
        """The object, or None when it does not exist (404)."""
        try:
            return self.get(path, what=what)
        except NotFound:
            return None

    def list(self, path, convert: Callable[[dict], object], selector=None, chunk=DEFAULT_CHUNK_SIZE,
             what=None) -> list:
        """Every item of a list, converted page by page (memory follows the records, not the
        pages); restarts from the first page when the continue token expires."""
        return self.list_versioned(path, convert, selector, chunk, what, need_version=False)[0]

    def list_versioned(self, path, convert: Callable[[dict], object], selector=None, chunk=DEFAULT_CHUNK_SIZE,
                       what=None, need_version=True, fields=None) -> tuple[_List, str | None]:
        """Every item of a list, converted, and the list's resourceVersion (where a watch of the
        same collection starts, so that it misses nothing and repeats nothing; `fields`: a field
        selector, e.g. metadata.name=NAME). A continue token
        that repeats, empty pages that never end or too many pages stop with an error.

        While one page is decoded and converted, the next is already being requested: its
        continue token is read from the head of the raw page (the API server writes a list's
        `metadata` before its `items`) and confirmed against the decoded page; when they differ,
        or the head cannot tell, the next page is requested afterwards as before."""
        what = what or f"list {path}"

        def fetch(token):
            return self.request("GET", path, query=_list_query(selector, chunk, token, fields), what=what, raw=True)

        for _attempt in range(MAX_LIST_RESTARTS + 1):
            records, version, more = [], None, False
            try:
                for items, page_version, more in _pages(fetch, chunk, what):  # noqa: B007 (`more` is read by the except)
                    for item in items:
                        record = convert(item)
                        if record is not None:
                            records.append(record)
                    version = version or page_version
            except ExpiredContinue:
                if more:            # a later page's token expired: the list starts again
                    continue
                raise
            if need_version and not version:
                raise PluginError(f"the API server answered {what} without a resourceVersion")
            return records, version
        raise PluginError(f"{what}: the continue token kept expiring; try a larger --chunk-size")

    def list_page(self, path, fields=None, limit=20, max_bytes=1 << 20, what=None) -> "tuple[_List, bool]":
        """One page of a list, selected by the server (`fields`: a field selector) and bounded:
        at most `limit` items and `max_bytes` of answer, no continue token followed. Returns the
        items as the server wrote them and whether more were left unread (the caller says so).
        For reads that only look (a controller's FailedCreate events), never for the lists a
        command judges, which read every page (list_versioned)."""
        what = what or f"list {path}"
        page = self.request("GET", path, query=_list_query(None, limit, None, fields), what=what, limit=max_bytes)
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, list):
            raise PluginError(f"the API server answered {what} without a list of items")
        meta = page.get("metadata") if isinstance(page.get("metadata"), dict) else {}
        return [i for i in items if isinstance(i, dict)], bool(meta.get("continue"))

    def watch(self, path, resource_version, selector=None, timeout_seconds=300, what=None, fields=None,
              renewed=False):
        """The events of a watch from `resource_version`, as (type, object) with type ADDED,
        MODIFIED, DELETED or BOOKMARK (bookmarks are asked for), read from the streamed JSON lines
        until the server ends the watch after `timeout_seconds`. Errors map as `request` maps them;
        410 Gone (the resourceVersion is too old), as the answer or as an ERROR event, is
        ExpiredContinue: the caller lists again. A watch has its own connection, never reused."""
        what = what or f"watch {path}"
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "timeoutSeconds": str(int(timeout_seconds))}
        if selector:
            query["labelSelector"] = selector
        if fields:
            query["fieldSelector"] = fields
        url = self._transport.prefix + _safe_path(path) + "?" + urlencode(query)
        started = self._moment()
        headers = self._headers_now()
        with self._lock:
            self.requests += 1
        # The server ends the watch after timeout_seconds; a read that waits longer than that
        # (plus slack) means the connection is gone.
        from http.client import HTTPException

        from kubectl_kvcache.kube.transport import DialTimeout, HandshakeTimeout, ProtocolError, TooLarge

        conn, _ = self._transport.take(timeout_seconds + 30, fresh=True)
        try:
            try:
                resp = conn.send_request("GET", url, headers)
            except ssl.SSLCertVerificationError as exc:
                raise PluginError(f"TLS with the API server at {self.host} failed: the server's certificate "
                                  f"is not trusted ({exc.verify_message or _reason(exc)})") from None
            except (DialTimeout, HandshakeTimeout) as exc:
                raise PluginError(f"cannot reach the API server at {self.host} ({what}): {exc}") from None
            except (OSError, HTTPException, ProtocolError) as exc:
                if self._transport.aborted:
                    raise KeyboardInterrupt from None
                raise PluginError(f"cannot reach the API server at {self.host} ({what}): {_reason(exc)}") from None
            if self.trace:
                with self._lock:
                    self.trace(f"WATCH {path}?{urlencode(query)} -> {resp.status}")
            try:
                if resp.status == 401 and not renewed and self._renewed(started, headers):
                    resp.close()
                    yield from self.watch(path, resource_version, selector, timeout_seconds, what, fields,
                                          renewed=True)
                    return
                if resp.status >= 400:
                    raise self._error(resp.status, resp.read_all(), what)
                while True:
                    line = resp.read_line()
                    if not line:
                        break
                    if line.strip():
                        yield _watch_event(line, what)
            except TooLarge as exc:
                raise PluginError(f"the API server's answer to {what} is too large: {exc} (a limit far above any "
                                  f"real object); stopped") from None
            except (OSError, HTTPException, ProtocolError) as exc:
                if self._transport.aborted:
                    raise KeyboardInterrupt from None
                raise PluginError(f"cannot reach the API server at {self.host} ({what}): {_reason(exc)}") from None
        finally:
            self._transport.give_back(conn, False)

    # -- discovery -----------------------------------------------------------------------

    def served(self, group) -> dict:
        """{'preferred': version, 'versions': {version: {plural, ...}}} or NotFound."""
        if group in self._discovery:
            found = self._discovery[group]
            if found is None:
                raise NotFound(_not_served(group))
            return found
        if group in self._undiscovered:
            raise self._undiscovered[group]
        try:
            info = self.get(f"/apis/{group}", what=f"discover the API group {group}")
            versions = {}
            for v in info.get("versions") or ():
                version = v.get("version")
                resources = self.get(f"/apis/{group}/{version}", what=f"discover {group}/{version}")
                versions[version] = {r.get("name") for r in resources.get("resources") or ()}
        except NotFound as exc:
            raise NotFound(_not_served(group)) from exc
        except PluginError as exc:
            if getattr(exc, "unanswered", False):
                self._undiscovered[group] = exc
            raise
        result = {"preferred": (info.get("preferredVersion") or {}).get("version"), "versions": versions}
        self._discovery[group] = result
        return result

    def discover(self, *groups):
        """Discover API groups before they are asked for: in one request, the aggregated discovery
        document kubectl asks for (served since Kubernetes 1.26, on by default since 1.30), else
        each group on its own, concurrently (a round trip per level instead of one per group).
        Errors are left to served() when a group is asked for."""
        missing = [g for g in groups if g not in self._discovery and g not in self._undiscovered]
        if not missing or self._discover_aggregated(missing):
            return
        interrupted = []

        def served_quietly(group):
            try:
                self.served(group)
            except PluginError:
                pass
            except KeyboardInterrupt:       # Ctrl-C closed the connections under the request
                interrupted.append(group)

        threads = [threading.Thread(target=served_quietly, args=(g,), daemon=True) for g in missing]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if interrupted:
            raise KeyboardInterrupt

    def _discover_aggregated(self, groups) -> bool:
        """Every group from GET /apis as an APIGroupDiscoveryList (a group's versions listed in
        order of preference); a group it lacks is not served. False when the server answers
        anything else (an older server's plain APIGroupList, an error, a malformed document)."""
        try:
            doc = self.request("GET", "/apis", accept=AGGREGATED_DISCOVERY, what="discover the API groups")
        except PluginError as exc:
            if not getattr(exc, "unanswered", False):
                return False        # an answer, but not this one: each group is asked on its own
            for group in groups:    # no answer at all: asking each group would only wait as long again
                self._undiscovered[group] = exc
            return True
        if not isinstance(doc, dict) or doc.get("kind") != "APIGroupDiscoveryList" \
                or not isinstance(doc.get("items"), list):
            return False
        found = {}
        for item in doc["items"]:
            entries = item.get("versions") if isinstance(item, dict) else None
            name = (item.get("metadata") or {}).get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or not isinstance(entries, list) \
                    or not all(isinstance(e, dict) and isinstance(e.get("resources") or [], list) for e in entries):
                return False
            versions = {e.get("version"): {r.get("resource") for r in e.get("resources") or () if isinstance(r, dict)}
                        for e in entries}
            found[name] = {"preferred": entries[0].get("version") if entries else None, "versions": versions}
        for group in groups:
            self._discovery[group] = found.get(group)
        return True

    def resource_version_for(self, group, plural) -> str:
        served = self.served(group)
        order = [served["preferred"]] + sorted(v for v in served["versions"] if v != served["preferred"])
        for version in order:
            if plural in served["versions"].get(version, ()):
                return version
        raise NotFound(f"the API server does not serve {plural}.{group} (is its CRD installed?)")


def _authorization(headers):
    return next((v for k, v in headers if k == "Authorization"), None)


def _not_served(group):
    return (f"the API server does not serve the API group {group} "
            f"(is the GPUStack Operator installed at a release that has it?)")


def _watch_event(line: bytes, what):
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise PluginError(f"the API server answered {what} with a line that is not JSON") from exc
    kind, obj = event.get("type"), event.get("object")
    if kind == "ERROR":
        obj = obj if isinstance(obj, dict) else {}
        message = obj.get("message") or ""
        if obj.get("code") == 410:
            raise ExpiredContinue(f"gone: {what}: {message}")
        raise PluginError(f"the API server ended {what} with an error ({obj.get('code')} "
                          f"{obj.get('reason') or ''}): {message}".replace("  ", " "))
    if not isinstance(obj, dict):
        raise PluginError(f"the API server answered {what} with an event without an object")
    return kind, obj


def _list_query(selector, chunk, token, fields=None):
    """A list page's query: the label and field selectors, the page size, where the last page ended."""
    query = {}
    if selector:
        query["labelSelector"] = selector
    if fields:
        query["fieldSelector"] = fields
    if chunk:
        query["limit"] = str(chunk)
    if token:
        query["continue"] = token
    return query


def _decode(data, what):
    try:
        return json.loads(data) if data else {}
    except ValueError as exc:
        raise PluginError(f"the API server answered {what} with something that is not JSON") from exc


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _after_space(text: str, i: int) -> int:
    """The index after the JSON whitespace at text[i:] (_SPACE matches everywhere, maybe nothing)."""
    space = _SPACE.match(text, i)
    return space.end() if space else i
_HEAD = 16384



def _pages(fetch, chunk, what):
    """The pages of one list, in order, each as (items, its resourceVersion, whether a continue
    token follows). While the caller converts a page, the next is already being requested: its
    continue token is read from the head of the raw page (_continue_token) and confirmed against
    the decoded page; when they differ, or the head cannot tell, it is requested afterwards. A
    token that repeats, empty pages that never end or too many pages stop with an error."""
    token, pending = None, None
    seen, pages, empty = set(), 0, 0
    try:
        while True:
            pages += 1
            if pages > MAX_PAGES:
                raise PluginError(f"{what}: the API server kept sending pages ({MAX_PAGES:,} so far); stopped")
            data = pending.result() if pending is not None else fetch(token)
            raw = isinstance(data, (bytes, bytearray))
            early = _continue_token(data) if chunk and raw else None
            pending = _Ahead(fetch, early) if early else None
            page = _decode(data, what) if raw else data
            del data
            items = page.get("items")
            if not isinstance(items, list):
                raise PluginError(f"the API server answered {what} without a list of items")
            meta = page.get("metadata") or {}
            token = meta.get("continue") if chunk else None
            empty = 0 if items else empty + 1
            if token and token in seen:
                raise PluginError(f"{what}: the API server sent the same continue token twice; "
                                  f"stopped (the list would never end)")
            if token and empty >= MAX_EMPTY_PAGES:
                raise PluginError(f"{what}: the API server sent {empty} empty pages in a row and "
                                  f"still a continue token; stopped")
            if token:
                seen.add(token)
            if token != early and pending is not None:
                _settle(pending)
                pending = None
            yield items, meta.get("resourceVersion"), bool(token)
            del page, items
            if not token:
                return
    finally:
        if pending is not None:
            _settle(pending)

def _continue_token(data: bytes) -> str | None:
    """The continue token in the head of a raw list page when its `metadata` comes before its
    `items`, as the API server writes lists; None when the head does not tell (the caller then
    waits for the decoded page, which always has the last word)."""
    head = data[:_HEAD].decode("utf-8", "ignore")
    try:
        i = _after_space(head, 0)
        if head[i] != "{":
            return None
        i += 1
        while True:
            key, i = _DECODER.raw_decode(head, _after_space(head, i))
            i = _after_space(head, i)
            if not isinstance(key, str) or head[i] != ":" or key == "items":
                return None
            value, i = _DECODER.raw_decode(head, _after_space(head, i + 1))
            if key == "metadata":
                token = value.get("continue") if isinstance(value, dict) else None
                return token if isinstance(token, str) and token else None
            i = _after_space(head, i)
            if head[i] != ",":
                return None
            i += 1
    except (ValueError, IndexError):
        return None


class _Ahead(threading.Thread):
    """A request made ahead in its own thread: the next page, while this one is decoded."""

    def __init__(self, fetch, token):
        super().__init__(name="kvcache-page-ahead", daemon=True)
        self._fetch, self._token = fetch, token
        self._value = self._error = None
        self.start()

    def run(self):
        try:
            self._value = self._fetch(self._token)
        except BaseException as exc:    # noqa: B902 - handed to the thread that asks for the page
            self._error = exc

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


def _settle(ahead: _Ahead):
    """Wait for a request made ahead that is not wanted after all; its outcome does not matter."""
    ahead.join()


def _reason(exc):
    if type(exc).__name__ == "IncompleteRead":     # http.client's, for a chunk the connection cut short
        return "the connection ended in the middle of the body"
    if isinstance(exc, ssl.SSLError) and getattr(exc, "reason", None):
        return str(getattr(exc, "verify_message", None) or exc.reason).replace("_", " ").lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) or exc.__class__.__name__
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if m:
        return m.group(1).strip()
    m = re.search(r"(Connection refused|Name or service not known|timed out|certificate verify failed[^'\")]*)",
                  text)
    return m.group(1) if m else text.splitlines()[0][:200]


def quote(text, safe=""):
    """urllib.parse.quote, imported when first needed (commands on files never load it)."""
    from urllib.parse import quote as url_quote

    return url_quote(text, safe=safe)


def unquote(text):
    from urllib.parse import unquote as url_unquote

    return url_unquote(text)


def urlencode(query):
    from urllib.parse import urlencode as url_urlencode

    return url_urlencode(query)


def collection_path(group, version, plural, namespace=None):
    base = "/api/v1" if group == "" else f"/apis/{quote(group, safe='')}/{quote(version, safe='')}"
    if namespace:
        return f"{base}/namespaces/{quote(namespace, safe='')}/{quote(plural, safe='')}"
    return f"{base}/{quote(plural, safe='')}"


def object_path(group, version, plural, namespace, name):
    """The path of one object; every segment quoted (a name can never add a segment or a query)."""
    return f"{collection_path(group, version, plural, namespace)}/{quote(name, safe='')}"


def _safe_path(path: str) -> str:
    """Every segment of `path` percent-encoded once (already encoded ones are kept); `.` and `..`
    segments are refused: a path can never climb out of the resource it names."""
    segments = path.split("/")
    out = []
    for seg in segments:
        plain = unquote(seg)
        if plain in (".", ".."):
            raise PluginError(f"refusing a request path with a {plain!r} segment: {path!r}")
        out.append(quote(plain, safe=":"))  # Go keeps a path's ":" (url.shouldEscape)
    return "/".join(out)


def _retry_after(headers) -> float | None:
    """Seconds the server asks to wait, as client-go reads Retry-After (integer seconds); None:
    absent or not a number, and then the answer is not retried (client-go's rule too)."""
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(max(int(str(value).strip()), 0)) if value is not None else None
    except ValueError:
        return None


def kubeconfig_names(conn: Connection, key: str) -> list[str]:
    """The names of the kubeconfig's `contexts`, `clusters` or `users` (merged as kubectl merges
    KUBECONFIG's paths); [] when there is no kubeconfig. For shell completion: never raises a
    config error, sends nothing."""
    from kubectl_kvcache.kube import kubeconfig

    try:
        merged = kubeconfig.load(kubeconfig._paths(conn)[0])
    except PluginError:     # a broken kubeconfig completes nothing; the command itself reports it
        return []
    return sorted(getattr(merged, key))
