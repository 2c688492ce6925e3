"""HTTP/1.1 on one kept-alive socket, as kube.py uses it: a request with its headers and body, then
the answer's status, headers and body (framed by Content-Length, chunked, or by the end of the
connection), read whole or line by line (a watch).

Why not http.client: importing it imports the email package, ~10-15 ms at every start, more than
a 100-Pod verify's own work. The API server speaks plain HTTP/1.1 and kube.py needs this much of
the protocol only. Like http.client, header names and values with CR or LF and request targets
with spaces or control characters are refused before anything is sent, and a CONNECT proxy is
tunnelled through.
"""

from __future__ import annotations

import re
import socket

MAX_LINE = 65536            # a status or header line longer than this is not an API server's
MAX_HEADERS = 100
_UNSAFE_TARGET = re.compile(r"[\x00-\x20\x7f]")
_UNSAFE_HEADER = re.compile(r"[\r\n\x00]")


# -- URLs: what kube needs of urllib.parse (whose import, with ipaddress, costs ~3 ms at every start)

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_ASCII_RUNS = re.compile("([\x00-\x7f]+)")


def split_url(url):
    """(scheme, hostname, port, path) as urllib.parse.urlsplit(url) gives them (ValueError for a
    port that is not a number in 0-65535). Plain ASCII URLs are split here; any other (IPv6
    brackets, spaces or controls, non-ASCII) by urllib.parse itself, whose checks they need."""
    if not url.isascii() or "[" in url or "]" in url or any(c <= " " or c == "\x7f" for c in url):
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        return parts.scheme, parts.hostname, parts.port, parts.path
    scheme = ""
    colon = url.find(":")
    if colon > 0 and url[0].isalpha() and all(c in _SCHEME_CHARS for c in url[:colon]):
        scheme, url = url[:colon].lower(), url[colon + 1:]
    netloc = ""
    if url[:2] == "//":
        end = min([i for i in (url.find(c, 2) for c in "/?#") if i >= 0] or [len(url)])
        netloc, url = url[2:end], url[end:]
    path = url.split("#", 1)[0].split("?", 1)[0]
    host, _, port = netloc.rpartition("@")[2].partition(":")
    number = None
    if port:
        if not port.isdigit():
            raise ValueError(f"Port could not be cast to integer value as {port!r}")
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError("Port out of range 0-65535")
    name, percent, zone = host.partition("%")      # an IPv6 zone keeps its case, as urlsplit's
    return scheme, (name.lower() + percent + zone) or None, number, path


def quote(text, safe=""):
    """urllib.parse.quote(text, safe): UTF-8, every byte but letters, digits, `_.-~` and `safe`
    as %XX."""
    keep = _UNRESERVED.union(safe.encode("ascii")) if safe else _UNRESERVED
    data = text.encode("utf-8")
    if all(b in keep for b in data):
        return text
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in data)


def unquote(text):
    """urllib.parse.unquote(text): %XX sequences decoded as UTF-8 (invalid bytes replaced)."""
    if "%" not in text:
        return text
    runs = _ASCII_RUNS.split(text)
    out = [runs[0]]
    for i in range(1, len(runs), 2):
        pieces = runs[i].split("%")
        data = bytearray(pieces[0].encode("ascii"))
        for piece in pieces[1:]:
            if len(piece) >= 2 and piece[0] in _HEX_DIGITS and piece[1] in _HEX_DIGITS:
                data.append(int(piece[:2], 16))
                data += piece[2:].encode("ascii")
            else:
                data += b"%" + piece.encode("ascii")
        out += [data.decode("utf-8", "replace"), runs[i + 1]]
    return "".join(out)


def urlencode(query):
    """urllib.parse.urlencode(query) of a dict of strings."""
    return "&".join(_quote_plus(str(k)) + "=" + _quote_plus(str(v)) for k, v in query.items())


def _quote_plus(text):
    return quote(text, " ").replace(" ", "+")


class ProtocolError(Exception):
    """The peer's answer is not HTTP/1.1 as framed here, or ended in the middle."""


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection before answering (a kept-alive connection it dropped)."""


class Headers:
    """An answer's headers: the first value of each name, looked up case-insensitively."""

    __slots__ = ("_values",)

    def __init__(self):
        self._values = {}

    def add(self, name, value):
        self._values.setdefault(name.lower(), value)

    def get(self, name, default=None):
        return self._values.get(name.lower(), default)


class Connection:
    """One connection to `host`:`port` (TLS when `context` is given, checked against
    `server_name` or the host; through the http:// CONNECT proxy `proxy` = (host, port) if any),
    opened by its first request. `sock` is the socket in use (shut down to abort a request)."""

    def __init__(self, host, port, timeout=None, context=None, server_name=None, proxy=None):
        self.host, self.port, self.timeout = host, port, timeout
        self.context, self.server_name, self.proxy = context, server_name, proxy
        self.sock = None
        self._file = None
        default = 443 if context is not None else 80
        name = f"[{host}]" if ":" in host else host
        self._host_header = name if port == default else f"{name}:{port}"
        self._authority = f"{name}:{port}"

    def _connect(self):
        host, port = self.proxy or (self.host, self.port)
        sock = socket.create_connection((_ascii(host), port), self.timeout)
        self.sock = sock        # the TCP socket: shutting it down aborts the handshake too
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.proxy:
                self._tunnel(sock)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=_ascii(self.server_name or self.host))
                self.sock = sock
        except BaseException:
            self.close()
            raise
        self._file = sock.makefile("rb")

    def _tunnel(self, sock):
        target = self._authority
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("ascii"))
        raw = sock.makefile("rb", buffering=0)     # unbuffered: TLS bytes must stay in the socket
        status, reason, _, _ = _head(raw)
        if status != 200:
            raise OSError(f"Tunnel connection failed: {status} {reason}".strip())

    def request(self, method, target, headers, body=None) -> Response:
        """Send one request (`headers`: (name, value) pairs; a body's Content-Length is the
        caller's) and read the head of its answer; the body is read from the Response."""
        if _UNSAFE_TARGET.search(target):
            raise ProtocolError(f"the request target {target[:80]!r} has spaces or control characters")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}"]
        for name, value in headers:
            if _UNSAFE_HEADER.search(name) or _UNSAFE_HEADER.search(value):
                raise ValueError(f"invalid value of the header {name!r}: it has a line break")
            lines.append(f"{name}: {value}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if self.sock is None:
            self._connect()
        self.sock.sendall(head + body if body else head)
        while True:
            status, _, version, answer = _head(self._file, first=True)
            if not 100 <= status < 200:
                return Response(self._file, method, status, answer, version)

    def close(self):
        file, sock, self._file, self.sock = self._file, self.sock, None, None
        if file is not None:
            file.close()
        if sock is not None:
            sock.close()


def _ascii(host):
    """An ASCII host name as bytes: given a str, socket and ssl encode it with the IDNA codec, whose
    import (stringprep, unicodedata) costs ~1.3 ms; the bytes are the same for an ASCII name."""
    return host.encode("ascii") if host.isascii() else host


def _line(file):
    """The next line of `file`, its line break included; b"" at the end of the connection."""
    line = file.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ProtocolError("a status or header line is too long")
    return line


def _head(file, first=False):
    """(status, reason, version, Headers) of an answer's head."""
    line = _line(file)
    if not line:
        if first:
            raise RemoteDisconnected("the server closed the connection without an answer")
        raise ProtocolError("the connection ended before an answer")
    parts = line.decode("latin-1").rstrip("\r\n").split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.1 status line: {line[:80]!r}")
    headers = Headers()
    for _ in range(MAX_HEADERS + 1):
        line = _line(file)
        if line in (b"\r\n", b"\n", b""):
            return int(parts[1]), parts[2] if len(parts) > 2 else "", parts[0], headers
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name.strip():
            raise ProtocolError(f"not a header line: {line[:80]!r}")
        headers.add(name.strip(), value.strip())
    raise ProtocolError(f"more than {MAX_HEADERS} headers")


class Response:
    """An answer's status, headers and body. `will_close`: the connection cannot carry another
    request (the server says so, or the body ends with the connection)."""

    def __init__(self, file, method, status, headers, version):
        self.status, self.headers = status, headers
        self._file = file
        self._chunked = "chunked" in (headers.get("transfer-encoding") or "").lower()
        self._chunk_left = 0
        self._left = None           # bytes of a Content-Length body still to read
        self._pending = b""         # read by readline() beyond its line
        self._done = False
        if method == "HEAD" or status in (204, 304):
            self._chunked, self._done = False, True
        elif not self._chunked and headers.get("content-length") is not None:
            length = headers.get("content-length").strip()
            if not length.isdigit():
                raise ProtocolError(f"Content-Length {length[:40]!r} is not a number")
            self._left = int(length)
            self._done = self._left == 0
        connection = (headers.get("connection") or "").lower()
        self.will_close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection) \
            or (not self._chunked and self._left is None and not self._done)

    def read1(self, n) -> bytes:
        """Some of the body, at most `n` bytes; b"" at its end."""
        if self._pending:
            piece, self._pending = self._pending[:n], self._pending[n:]
            return piece
        if self._done:
            return b""
        if self._chunked:
            return self._chunk(n)
        piece = self._file.read1(n if self._left is None else min(n, self._left))
        if self._left is None:
            self._done = not piece
            return piece
        if not piece:
            raise ProtocolError(f"the connection ended {self._left} bytes before the end of the body")
        self._left -= len(piece)
        self._done = self._left == 0
        return piece

    def _chunk(self, n):
        if self._chunk_left == 0:
            line = _line(self._file)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"not a chunk size: {line[:40]!r}") from None
            if size == 0:
                while _line(self._file) not in (b"\r\n", b"\n", b""):
                    pass                    # trailers: none are used
                self._done = True
                return b""
            self._chunk_left = size
        piece = self._file.read1(min(n, self._chunk_left))
        if not piece:
            raise ProtocolError("the connection ended in the middle of a chunk")
        self._chunk_left -= len(piece)
        if self._chunk_left == 0 and _line(self._file) not in (b"\r\n", b"\n"):
            raise ProtocolError("a chunk does not end with CRLF")
        return piece

    def close(self):
        """Done with this answer: a body not read to its end leaves the connection unusable."""
        if not self._done:
            self.will_close = True

    def read(self) -> bytes:
        """The rest of the body."""
        pieces = []
        while True:
            piece = self.read1(1 << 16)
            if not piece:
                return b"".join(pieces)
            pieces.append(piece)

    def readline(self) -> bytes:
        """The body's next line, its b"\\n" included (the last one may lack it); b"" at the end."""
        pieces = []
        while True:
            piece = self.read1(1 << 16)
            if not piece:
                return b"".join(pieces)
            cut = piece.find(b"\n")
            if cut >= 0:
                self._pending = piece[cut + 1:] + self._pending
                pieces.append(piece[:cut + 1])
                return b"".join(pieces)
            pieces.append(piece)
