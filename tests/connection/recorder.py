"""Loopback servers that record what a client sent, byte for byte, for the kubectl parity tier.

One Recorder holds: a plain HTTP API server, a TLS API server (certificate by CA 1), a second TLS
API server (certificate by CA 2), an http proxy (CONNECT and absolute-form), an https proxy and a
socks5 proxy (RFC 1928 with RFC 1929 username/password). Each listens on 127.0.0.1 and ::1 with
the same port. Everything a client does becomes an event in `Recorder.events`: the connection
(which listener, address family, TLS, SNI, whether the handshake completed, the client
certificate's CN), each request (raw header bytes: Authorization is never decoded) and each proxy
hop. The API servers answer just enough discovery and empty lists for `kubectl get pods -A` and
`kubectl-kvcache verify -A` to send a few requests. ALPN never offers h2: both clients speak
HTTP/1.1, as a real API server behind an HTTP/1.1-only proxy would see them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import selectors
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

# Names in every TLS server certificate; ONLY_BY_SNI is a name no URL in the cases uses, so a
# handshake that verifies against it proves tls-server-name took effect.
PROXIED_NAME = "kube.proxied.test"       # resolves nowhere: reachable only through a proxy
ONLY_BY_SNI = "only-by-tls-server-name.test"
SERVER_SANS = ["IP:127.0.0.1", "IP:::1", "DNS:localhost", f"DNS:{PROXIED_NAME}", f"DNS:{ONLY_BY_SNI}"]
CLIENTS = ("alice", "bob")               # client certificates (CA 1), CN = the name


class PKI:
    """A test CA pair and the certificates the servers and the cases use, made once in `folder`
    (with the `cryptography` package when importable, else the openssl command line, as
    tests/cluster/harness.py makes its PKI)."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        if not os.path.exists(self.path("done")):
            try:
                import cryptography  # noqa: F401
                _make_with_cryptography(self)
            except ImportError:
                _make_with_openssl(self)
            with open(self.path("done"), "w"):
                pass

    def path(self, name):
        return os.path.join(self.folder, name)

    def pem(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()


def _openssl(folder, *args):
    p = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True, timeout=60)
    if p.returncode:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{p.stderr}")


def _make_with_openssl(pki):
    if not shutil.which("openssl"):
        raise RuntimeError("neither the cryptography package nor the openssl command is available")
    d = pki.folder
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "ca2"):
        _openssl(d, "req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "3650",
                 "-subj", f"/CN=kvcache-parity-{ca}", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    issue = [("server", "ca", "/CN=parity-server", "serverAuth", ",".join(SERVER_SANS)),
             ("server2", "ca2", "/CN=parity-server2", "serverAuth", ",".join(SERVER_SANS))]
    issue += [(c, "ca", f"/CN={c}", "clientAuth", None) for c in CLIENTS]
    for name, ca, subj, eku, san in issue:
        ext = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
               f"extendedKeyUsage={eku}"] + ([f"subjectAltName={san}"] if san else [])
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write("\n".join(ext) + "\n")
        _openssl(d, "req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj)
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                 "-CAcreateserial", "-days", "3650", "-extfile", f"{name}.ext", "-out", f"{name}.crt")


def _make_with_cryptography(pki):
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    later = now + datetime.timedelta(days=3650)

    def write(name, key, cert):
        with open(pki.path(f"{name}.key"), "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        with open(pki.path(f"{name}.crt"), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))

    def build(subject_cn, issuer, issuer_key, key, ca, eku=None, sans=None):
        b = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]))
             .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now).not_valid_after(later)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), True)
        else:
            b = b.add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), True)
            b = b.add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
        if sans:
            names = [x509.IPAddress(ipaddress.ip_address(s[3:])) if s.startswith("IP:") else x509.DNSName(s[4:])
                     for s in sans]
            b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    cas = {}
    for ca in ("ca", "ca2"):
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kvcache-parity-{ca}")])
        cert = build(f"kvcache-parity-{ca}", name, key, key, True)
        write(ca, key, cert)
        cas[ca] = (cert.subject, key)
    for name, ca, cn, eku, sans in ([("server", "ca", "parity-server", ExtendedKeyUsageOID.SERVER_AUTH, SERVER_SANS),
                                     ("server2", "ca2", "parity-server2", ExtendedKeyUsageOID.SERVER_AUTH, SERVER_SANS)]
                                    + [(c, "ca", c, ExtendedKeyUsageOID.CLIENT_AUTH, None) for c in CLIENTS]):
        key = ec.generate_private_key(ec.SECP256R1())
        write(name, key, build(cn, cas[ca][0], cas[ca][1], key, False, eku, sans))


# ---------------------------------------------------------------------------------------------
# answers

def _json(obj):
    return json.dumps(obj).encode()


_PREFIX = re.compile(r"^(.*?)(/apis?(/.*)?|/version)$")


def answer(path: str, port: int) -> tuple[int, bytes]:
    """Status and JSON body for a GET of `path` (any prefix before /api or /apis is ignored)."""
    path = path.split("?", 1)[0]
    m = _PREFIX.match(path)
    rest = m.group(2) if m else path
    if rest == "/version":
        return 200, _json({"major": "1", "minor": "37", "gitVersion": "v1.37.2", "platform": "linux/amd64"})
    if rest == "/api":
        return 200, _json({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}]})
    if rest == "/apis":
        return 200, _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
    if rest == "/api/v1":
        return 200, _json({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "shortNames": ["po"],
             "verbs": ["get", "list", "watch"]},
            {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
             "verbs": ["get", "list"]}]})
    parts = rest.strip("/").split("/")
    if rest.startswith("/api/v1/") and parts[-1] in ("pods", "namespaces") and len(parts) in (3, 5):
        kind = "PodList" if parts[-1] == "pods" else "NamespaceList"
        return 200, _json({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []})
    return 404, _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": f"the server could not find the requested resource ({rest})",
                       "reason": "NotFound", "code": 404})


def path_prefix(target: bytes) -> str:
    """The part of a request path before /api, /apis or /version (a server URL's path)."""
    path = target.decode("latin-1")
    if "://" in path:
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    m = _PREFIX.match(path.split("?", 1)[0])
    return m.group(1) if m else path


# ---------------------------------------------------------------------------------------------
# the servers

class _Conn:
    """A socket with a read buffer."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def read_head(self, limit=1 << 16):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > limit:
                return None
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head

    def read_exact(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("short read")
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def _parse_head(head: bytes):
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower(), value.strip(b" \t")))
    return parts, headers


def _header(headers, name):
    values = [v for n, v in headers if n == name]
    return values[0] if values else None


def _linger(sock):
    """Close after an answer without a reset: stop writing, read what the client still sends."""
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(1)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def _tunnel(a, b):
    """Copy bytes both ways until either side ends, on ONE thread: an SSL socket (the
    https-proxy's client side) read on one thread while another writes or shuts it down is a
    use of one OpenSSL object from two threads, which crashed the interpreter under load
    (SIGSEGV in CI). Bytes OpenSSL already decrypted do not wake select(), so they are drained
    with pending() after every read."""
    peer = {a: b, b: a}
    with selectors.DefaultSelector() as sel:
        for s in (a, b):
            sel.register(s, selectors.EVENT_READ)
        try:
            done = False
            while not done:
                ready = sel.select(timeout=10)
                if not ready:
                    break
                for key, _ in ready:
                    src = key.fileobj
                    data = src.recv(65536)
                    while data and isinstance(src, ssl.SSLSocket) and src.pending():
                        data += src.recv(src.pending())
                    if not data:
                        done = True
                        break
                    peer[src].sendall(data)
        except OSError:
            pass
    for s in (b, a):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Recorder:
    """All the servers of one worker; `events` since the last `take()`."""

    API = ("plain", "tls", "tls2")
    PROXIES = ("http-proxy", "https-proxy", "socks5")

    def __init__(self, pki: PKI):
        self.pki = pki
        self.events: list[dict] = []
        self.lock = threading.Lock()
        self.active = 0
        self.ports: dict[str, int] = {}
        self._listeners = []
        self._closed = False
        self._contexts = {"tls": self._context("server"), "tls2": self._context("server2"),
                          "https-proxy": self._context("server")}
        for name in self.API + self.PROXIES:
            self._listen(name)

    # -- set-up
    def _context(self, cert):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.pki.path(f"{cert}.crt"), self.pki.path(f"{cert}.key"))
        ctx.verify_mode = ssl.CERT_OPTIONAL           # ask for a client certificate, never require one
        ctx.load_verify_locations(self.pki.path("ca.crt"))
        ctx.set_alpn_protocols(["http/1.1"])

        def sni(sslobj, name, _ctx):
            sslobj.context_sni = name                  # read back in _handshake
        ctx.sni_callback = sni
        return ctx

    def _listen(self, name):
        for _ in range(50):
            s4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s4.bind(("127.0.0.1", 0))
            port = s4.getsockname()[1]
            s6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s6.bind(("::1", port))
            except OSError:
                s4.close()
                s6.close()
                continue
            break
        else:
            raise RuntimeError("no port free on both 127.0.0.1 and ::1")
        self.ports[name] = port
        for family, s in ((4, s4), (6, s6)):
            s.listen(64)
            self._listeners.append(s)
            threading.Thread(target=self._accept, args=(s, name, family), daemon=True).start()

    def close(self):
        self._closed = True
        for s in self._listeners:
            try:
                s.close()
            except OSError:
                pass

    # -- events
    def record(self, **event):
        with self.lock:
            self.events.append(event)

    def _backlog(self) -> int:
        """Connections the kernel completed that no accept() has taken yet (Linux reports a
        listening socket's queue length as tcp_info.tcpi_unacked). A client that connected and
        exited leaves one there; taken late, it would count in the next run."""
        total = 0
        for s in self._listeners:
            try:
                info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
            except OSError:
                continue
            total += struct.unpack_from("I", info, 24)[0]
        return total

    def take(self, settle=3.0) -> list[dict]:
        """The events since the last take, once no connection waits to be accepted and every
        handler has finished (or after `settle` seconds: the client is gone by then, so a handler
        still running is a tunnel)."""
        end = time.monotonic() + settle
        while time.monotonic() < end:
            if self._backlog() == 0:
                with self.lock:
                    if self.active == 0 and self._backlog() == 0:
                        break
            time.sleep(0.005)
        with self.lock:
            events, self.events = self.events, []
        return events

    def _accept(self, s, name, family):
        while not self._closed:
            try:
                sock, _ = s.accept()
            except OSError:
                return
            with self.lock:
                self.active += 1
            threading.Thread(target=self._serve, args=(sock, name, family), daemon=True).start()

    def _serve(self, sock, name, family):
        sock.settimeout(10)
        try:
            if name == "socks5":
                self._socks(sock, family)
            else:
                conn = _Conn(sock)
                if name in self._contexts and sock.recv(1, socket.MSG_PEEK)[:1].isalpha():
                    # plain HTTP on a TLS port: answered as Go's TLS server answers it (net/http
                    # Server.serve: "Client sent an HTTP request to an HTTPS server.")
                    self.record(kind="conn", server=name, family=family, tls=True, sni=None, handshake=False,
                                client_cn=None, error="plain HTTP request on the TLS port")
                    head = _Conn(sock).read_head()
                    if head is not None:        # it did send its headers, credentials included
                        self._record_request(name + " (plain HTTP on its TLS port)", head, proxy=False)
                    sock.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
                    _linger(sock)
                    conn = None
                elif name in self._contexts:
                    conn = self._handshake(sock, name, family)
                else:
                    self.record(kind="conn", server=name, family=family, tls=False)
                if conn is not None:
                    self._http(conn, name, proxy=name.endswith("proxy"))
        except (OSError, ssl.SSLError, ConnectionError, ValueError, IndexError):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass
            with self.lock:
                self.active -= 1

    def _handshake(self, sock, name, family):
        tls = self._contexts[name].wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        event = dict(kind="conn", server=name, family=family, tls=True, sni=None, handshake=False, client_cn=None)
        try:
            tls.do_handshake()
            event["handshake"] = True
            cert = tls.getpeercert()
            if cert:
                cn = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
                event["client_cn"] = cn[0] if cn else "?"
        except (ssl.SSLError, OSError) as exc:
            event["error"] = str(exc)[:120]
        event["sni"] = getattr(tls, "context_sni", None)
        self.record(**event)
        return _Conn(tls) if event["handshake"] else None

    def _http(self, conn, name, proxy):
        while True:
            if not conn.buf and not isinstance(conn.sock, ssl.SSLSocket):
                first = conn.sock.recv(3, socket.MSG_PEEK)
                if first[:1] == b"\x16":             # a TLS ClientHello on a plain port
                    self.record(kind="garbage", server=name, first=first.hex())
                    conn.sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    _linger(conn.sock)
                    return
            head = conn.read_head()
            if head is None:
                if conn.buf and not proxy and name == "plain":
                    self.record(kind="garbage", server=name, first=conn.buf[:3].hex())
                return
            if not head[:1].isalpha():                # a TLS ClientHello on the plain port
                self.record(kind="garbage", server=name, first=head[:3].hex())
                return
            (method, target, *_), headers = _parse_head(head)
            length = _header(headers, b"content-length")
            if length:
                conn.read_exact(int(length))
            if proxy and method == b"CONNECT":
                self._connect(conn, name, target, headers)
                return
            if proxy:
                m = re.match(rb"^[a-z]+://([^/]+)", target, re.I)
                self.record(kind="proxy", proxy=name, method="absolute", target=(m.group(1) if m else target)
                            .decode("latin-1"), proxy_authorization=_header(headers, b"proxy-authorization"))
            self._record_request(name, head, proxy)
            path = target.decode("latin-1")
            if "://" in path:
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            status, body = answer(path, self.ports.get(name, 0))
            reason = b"OK" if status == 200 else b"Not Found"
            conn.sock.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                              % (status, reason, len(body)) + body)
            if (_header(headers, b"connection") or b"").lower() == b"close":
                return

    def _record_request(self, name, head, proxy):
        (method, target, *_), headers = _parse_head(head)
        self.record(kind="request", server=name, via_proxy=proxy, target=target,
                    host=_header(headers, b"host"), authorization=_header(headers, b"authorization"),
                    impersonate=[(n, v) for n, v in headers if n.startswith(b"impersonate-")],
                    proxy_authorization=_header(headers, b"proxy-authorization") if not proxy else None)

    def _upstream(self, port):
        """A connection to one of our own API servers (a proxy reaches only those)."""
        if port not in (self.ports[n] for n in self.API):
            return None
        return socket.create_connection(("127.0.0.1", port), timeout=10)

    def _connect(self, conn, name, target, headers):
        self.record(kind="proxy", proxy=name, method="CONNECT", target=target.decode("latin-1"),
                    proxy_authorization=_header(headers, b"proxy-authorization"))
        host, _, port = target.decode("latin-1").rpartition(":")
        up = self._upstream(int(port)) if port.isdigit() else None
        if up is None:
            conn.sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        conn.sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if conn.buf:
            up.sendall(conn.buf)
        _tunnel(conn.sock, up)

    def _socks(self, sock, family):
        conn = _Conn(sock)
        ver, n = conn.read_exact(2)
        methods = list(conn.read_exact(n))
        event = dict(kind="proxy", proxy="socks5", method="socks5", version=ver, methods=methods,
                     username=None, password=None, target=None)
        try:
            if ver != 5:
                return
            if 2 in methods:
                sock.sendall(b"\x05\x02")
                _, ulen = conn.read_exact(2)
                event["username"] = conn.read_exact(ulen)
                (plen,) = conn.read_exact(1)
                event["password"] = conn.read_exact(plen)
                sock.sendall(b"\x01\x00")
            elif 0 in methods:
                sock.sendall(b"\x05\x00")
            else:
                sock.sendall(b"\x05\xff")
                return
            _, cmd, _, atyp = conn.read_exact(4)
            if atyp == 1:
                host = socket.inet_ntop(socket.AF_INET, conn.read_exact(4))
            elif atyp == 4:
                host = "[" + socket.inet_ntop(socket.AF_INET6, conn.read_exact(16)) + "]"
            else:
                (hlen,) = conn.read_exact(1)
                host = conn.read_exact(hlen).decode("latin-1")
            port = int.from_bytes(conn.read_exact(2), "big")
            event["target"] = f"{host}:{port}"
            event["atyp"] = atyp
            up = self._upstream(port) if cmd == 1 else None
            if up is None:
                sock.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            sock.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01" + port.to_bytes(2, "big"))
        finally:
            self.record(**event)
        if conn.buf:
            up.sendall(conn.buf)
        _tunnel(sock, up)


def basic(user: str, password: str) -> bytes:
    """The Authorization value Basic auth with these credentials gives (for readable reports)."""
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())
