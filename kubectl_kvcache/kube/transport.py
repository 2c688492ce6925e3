"""The connections client.py sends its requests on: http.client, held to what Go's net/http client
(kubectl's) accepts where http.client is laxer or would wait forever, through the proxy the
kubeconfig names (http://, https://, socks5://, socks5h://).

http.client writes the requests and reads the bodies. Go's rules are kept in a few overrides,
each naming its Go source (go1.26 GOROOT/src/net/http unless said otherwise):
- the answer's head is read as net/http.ReadResponse and textproto.readMIMEHeader read it, and
  its framing decided as transfer.go readTransfer decides it (one Transfer-Encoding, "chunked"
  only; several Content-Lengths only when equal; a Content-Length of plain digits); interim 1xx
  answers are skipped as transport.go's readResponse skips them;
- a chunk size line is read as internal/chunked.go readChunkLine and parseHexUint read it (CRLF,
  1-16 hex digits: int(x, 16) also takes "-5", "0x5", "5_0", " 5", and a negative size made
  http.client read to the end of the connection), and a chunk must end with CRLF;
- a kept-alive connection with anything to read while idle, or bytes left over after an answer,
  is closed instead of reused (transport.go: "Unsolicited response received on idle HTTP
  channel"): no answer is ever read for the wrong request;
- header values are checked before anything is sent (transport.go roundTrip:
  httpguts.ValidHeaderFieldValue), sent as UTF-8 bytes and trimmed (header.go writeSubset);
- a text body read line by line (pods/log, pods/proxy: body_lines) is decoded as Go's client
  decodes it (gzip only, transport.go's gzipReader), boundedly: never more than is read.

Importing http.client costs ~12 ms (it imports the email package): client.py imports this module
only when it talks to a cluster; commands on files never load it.
"""

from __future__ import annotations

import base64
import http.client
import io
import socket
import ssl
from urllib.parse import unquote, urlsplit

from kubectl_kvcache.kube.gourl import go_ip

MAX_LINE = 65536            # http.client's limit of a status or header line
MAX_HEADERS = 100           # http.client's limit of an answer's headers
MAX_INTERIM = 100           # interim answers before the final one (Go bounds them by their bytes)
MAX_CHUNK_LINE = 4096       # internal/chunked.go maxLineLength

# Time bounds client-go puts on every connection, whatever --request-timeout says (client-go
# transport/cache.go: net.Dialer{Timeout: 30s, KeepAlive: 30s} and TLSHandshakeTimeout 10s;
# apimachinery pkg/util/net/http.go SetOldTransportDefaults: IdleConnTimeout from
# http.DefaultTransport, 90s). --request-timeout (rest.Config.Timeout: http.Client.Timeout)
# bounds the whole request on top of them (client.py).
DIAL_TIMEOUT = 30.0
TLS_HANDSHAKE_TIMEOUT = 10.0
KEEPALIVE = 30              # seconds idle before the first TCP keep-alive probe, and between probes
IDLE_CONN_TIMEOUT = 90.0    # a kept-alive connection idle longer than this is closed, not reused
# client-go's HTTP/2 health check closes a connection that brings no frame for ReadIdleTimeout
# (30s) and then no answer to a ping for PingTimeout (15s) (apimachinery http.go
# configureHTTP2Transport). HTTP/1.1 has no ping: silence is the only sign. The API server ends
# every request but watches within its own --request-timeout (60s by default) with an answer,
# so an answer that brings nothing for that long plus the ping's 15s is taken for dead.
READ_IDLE_TIMEOUT = 75.0

# Size bounds (the API server has none for answers, client-go neither; these are far above what
# a real server sends). An object is at most etcd's --max-request-bytes (1.5 MiB by default) as
# stored, a few times that as JSON with its managedFields: one watch event line is one object.
# A list page is --chunk-size (500) objects; real pages of Pods are a few MiB, and 500 objects
# of 512 KiB each are 250 MiB.
MAX_BODY = 256 << 20        # bytes of one answer's body (a list page, an error)
MAX_EVENT_LINE = 16 << 20   # bytes of one watch event (one JSON line)
_HEX = frozenset(b"0123456789abcdefABCDEF")
# httpguts.IsTokenRune: the bytes of a header name (no regular expressions: compiling them
# cost more at every start than the checks ever do)
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# textproto.validHeaderValueByte: VCHAR, SP, HTAB and obs-text; what is left after deleting them
# is what is refused (a control character other than tab)
_VALUE_BYTES = bytes([9, *range(0x20, 0x7F), *range(0x80, 0x100)])


def _token(name: bytes) -> bool:
    return bool(name) and _TOKEN.issuperset(name)


def _bad_value(value: bytes) -> bool:
    return bool(value.translate(None, _VALUE_BYTES))


DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}   # transport.go portMap


class ProtocolError(Exception):
    """The peer's answer is not HTTP/1.1 as Go's client reads it (one line, never a value)."""


class TooLarge(Exception):
    """An answer's body or a watch event passed its size bound (`limit` bytes): nothing more is
    read, and the connection is closed."""

    def __init__(self, what, limit):
        super().__init__(f"{what} passed {limit >> 20} MiB")
        self.limit = limit


def header_bytes(headers) -> list[tuple[str, bytes]]:
    """(name, value) pairs as Go's Transport writes them: a name must be a token and a value may
    hold no control character but tab (roundTrip: httpguts.ValidHeaderFieldName/Value, checked
    before a connection is made, the error naming the header and never its value); the value is
    sent as its UTF-8 bytes, its leading and trailing spaces and tabs trimmed (header.go
    writeSubset: textproto.TrimString)."""
    out = []
    for name, value in headers:
        if not _token(name.encode("utf-8", "replace")):
            raise ProtocolError(f"invalid header field name {name[:80]!r}")
        data = value.encode("utf-8", "surrogateescape")
        if _bad_value(data):        # UTF-8 never makes a byte below 0x80 out of other characters
            raise ProtocolError(f"invalid header field value for {name!r}: it has a control character")
        out.append((name, data.strip(b" \t")))
    return out


# -- the answer's head, as Go reads it ---------------------------------------------------------

def _line(fp, limit=MAX_LINE) -> bytes | None:
    """textproto.ReadLine: the next line without its CRLF or LF; None at the end of the
    connection (a line the end cuts short is no line)."""
    line = fp.readline(limit + 1)
    if len(line) > limit:
        raise ProtocolError(f"the answer has a line longer than {limit} bytes")
    if not line.endswith(b"\n"):
        return None
    return line[:-2] if line.endswith(b"\r\n") else line[:-1]


def read_fields(fp, what="header", first=None) -> list[tuple[str, str]]:
    """textproto.readMIMEHeader: lines of `Name: value` up to an empty line. A name is token
    bytes (a space before the colon makes it another name, as Go keeps it); a line that starts
    with a space or tab continues the one before (obs-fold, joined with a space); a value holds
    no control character but tab; the first line cannot be a continuation."""
    fields: list[list] = []
    while True:
        line, first = (_line(fp) if first is None else first), None
        if line is None:
            raise ProtocolError(f"the connection ended in the middle of the answer's {what}s")
        if not line:
            return [(k, v) for k, v in fields]
        if line[:1] in (b" ", b"\t"):
            if not fields:
                raise ProtocolError(f"malformed MIME {what} initial line: {line[:40]!r}")
            value = line.strip(b" \t\r\n")
            if _bad_value(value):
                raise ProtocolError(f"malformed MIME {what} line: a control character in a value")
            fields[-1][1] = f"{fields[-1][1]} {value.decode('latin-1')}"
            continue
        name, colon, value = line.partition(b":")
        if not colon:
            raise ProtocolError(f"malformed MIME {what}: missing colon: {line[:40]!r}")
        if not _token(name.replace(b" ", b"!")):
            raise ProtocolError(f"malformed MIME {what} line: {name[:40]!r}")
        value = value.strip(b" \t\r\n")
        if _bad_value(value):
            raise ProtocolError(f"malformed MIME {what} line: a control character in the value of {name[:40]!r}")
        if len(fields) >= MAX_HEADERS:
            raise ProtocolError(f"the answer has more than {MAX_HEADERS} {what}s")
        fields.append([name.decode("latin-1"), value.decode("latin-1")])


def _values(fields, name) -> list[str]:
    return [v for k, v in fields if k.lower() == name]


def read_status(fp) -> tuple[int, str, int]:
    """ReadResponse's status line: `HTTP/1.x SP 3DIGIT [SP reason]` -> (status, reason,
    version 10 or 11). 100-999 only (http.client refuses the rest too)."""
    first = fp.peek(1)[:1] if hasattr(fp, "peek") else b"?"
    line = _line(fp)
    if line is None:
        if not first:
            raise http.client.RemoteDisconnected("the server closed the connection without an answer")
        raise ProtocolError("the connection ended in the middle of the answer's status line")
    proto, space, rest = line.decode("latin-1").partition(" ")
    code, _, reason = rest.lstrip(" ").partition(" ")
    if not space or len(code) != 3 or not code.isascii() or not code.isdigit() or code < "100":
        raise ProtocolError(f"malformed HTTP status line: {line[:40]!r}")
    if proto not in ("HTTP/1.0", "HTTP/1.1"):
        raise ProtocolError(f"not an HTTP/1.1 answer: {proto[:20]!r}")
    return int(code), reason, 10 if proto == "HTTP/1.0" else 11


def _has_token(values, token) -> bool:
    """httpguts.HeaderValuesContainsToken."""
    return any(t.strip(" \t").lower() == token for v in values for t in v.split(","))


class Response(http.client.HTTPResponse):
    """http.client's answer, its head read and framed as Go's client reads it. `extra`: bytes
    came after the end of the answer (the connection is not reused)."""

    extra = False

    def __init__(self, sock, *args, **kwargs):
        super().__init__(sock, *args, **kwargs)
        self._sock = sock

    def begin(self):
        if self.headers is not None:
            return
        for _ in range(MAX_INTERIM + 1):
            status, reason, version = read_status(self.fp)
            fields = read_fields(self.fp)
            if not (100 <= status <= 199) or status == 101:
                break           # transport.go readResponse: 1xx answers but 101 are interim
        else:
            raise ProtocolError("too many 1xx informational responses")
        self.code = self.status = status
        self.reason, self.version = reason.strip(), version
        message = http.client.HTTPMessage()
        for name, value in fields:
            message[name] = value
        self.headers = self.msg = message
        self._frame(status, version, fields)

    def _frame(self, status, version, fields):
        """transfer.go readTransfer: parseTransferEncoding, fixLength, shouldClose."""
        connection = _values(fields, "connection")
        close = _has_token(connection, "close") or (version == 10 and not _has_token(connection, "keep-alive"))
        encodings = _values(fields, "transfer-encoding")
        chunked = False
        if encodings and version == 11:        # ignored in HTTP/1.0 (Go issue 12785)
            if len(encodings) != 1:
                raise ProtocolError("too many transfer encodings")
            if encodings[0].lower() != "chunked":
                raise ProtocolError(f"unsupported transfer encoding: {encodings[0][:40].encode('latin-1')!r}")
            chunked = True
        lengths = _values(fields, "content-length")
        length = None
        if lengths:
            if any(v != lengths[0] for v in lengths[1:]):
                raise ProtocolError("the answer has several different Content-Length headers")
            if not lengths[0]:
                raise ProtocolError("invalid empty Content-Length")
            if not (lengths[0].isascii() and lengths[0].isdigit()) or int(lengths[0]) >= 1 << 63:
                raise ProtocolError(f"bad Content-Length {lengths[0][:40].encode('latin-1')!r}")
            length = int(lengths[0])
        if self._method == "HEAD" or status // 100 == 1 or status in (204, 304):  # type: ignore[attr-defined]  # http.client's own
            chunked, length = False, 0
        elif chunked:
            length = None
        elif length is None:
            close = True        # the body ends with the connection
        self.chunked, self.chunk_left, self.length = chunked, None, length
        self.will_close = close or status == 101

    # -- chunked bodies: internal/chunked.go ---------------------------------------------------

    def _read_next_chunk_size(self):
        """readChunkLine + removeChunkExtension + parseHexUint."""
        line = self.fp.readline(MAX_CHUNK_LINE + 1)
        if len(line) > MAX_CHUNK_LINE:
            raise ProtocolError("a chunk size line is too long")
        if not line.endswith(b"\n"):
            raise ProtocolError("the connection ended in the middle of a chunked body")
        if line.find(b"\r") != len(line) - 2:
            raise ProtocolError("a chunk size line does not end with CRLF")
        size = line[:-2].rstrip(b" \t").split(b";", 1)[0]
        if not size or len(size) > 16 or not _HEX.issuperset(size):
            raise ProtocolError(f"invalid chunk size {size[:20]!r}")
        return int(size, 16)

    def _get_chunk_left(self):
        if self.chunk_left == 0:        # the end of a chunk: exactly CRLF (chunkedReader.Read)
            if self.fp.read(2) != b"\r\n":
                raise ProtocolError("malformed chunked encoding: a chunk does not end with CRLF")
            self.chunk_left = None
        return super()._get_chunk_left()  # type: ignore[misc]  # http.client's private step, not in the stubs

    def _read_and_discard_trailer(self):
        """transfer.go body.readTrailer: CRLF, else trailers, read as headers are, that must end
        with CRLF CRLF within 4096 bytes (seeUpcomingDoubleCRLF; Go waits for them, so a bare LF
        where they should be is refused here); the end of the connection is an error."""
        lines = []
        while True:
            line = self.fp.readline(MAX_CHUNK_LINE + 1)
            lines.append(line)
            if sum(map(len, lines)) > MAX_CHUNK_LINE:
                raise ProtocolError("suspiciously long trailer after chunked body")
            if not line.endswith(b"\n"):
                raise ProtocolError("the connection ended in the trailers of a chunked body")
            if line in (b"\r\n", b"\n"):
                break
        if not (b"".join(lines[-2:]).endswith(b"\r\n\r\n") or lines == [b"\r\n"]):
            raise ProtocolError("the trailers of a chunked body do not end with CRLF CRLF")
        if len(lines) > 1:
            read_fields(io.BytesIO(b"".join(lines)), "trailer")

    def _close_conn(self):
        """The answer is read: bytes already waiting after it mean the next answer on this
        connection might not be the next request's."""
        fp = self.fp
        if fp is not None and not self.extra:
            self.extra = pending(self._sock, fp)
        super()._close_conn()  # type: ignore[misc]  # http.client's private step, not in the stubs

    def read_all(self, limit=MAX_BODY) -> bytes:
        """The whole body; an answer cut short by the end of the connection is a ProtocolError,
        one longer than `limit` bytes is TooLarge (the rest is never read)."""
        pieces, size = [], 0
        if self.length is not None and self.length > limit:
            raise TooLarge("the answer's body", limit)
        while True:
            piece = self.read1(1 << 16)
            if not piece:
                break
            size += len(piece)
            if size > limit:
                raise TooLarge("the answer's body", limit)
            pieces.append(piece)
        if self.length:
            raise ProtocolError(f"the connection ended {self.length} bytes before the end of the body")
        self.close()
        return b"".join(pieces)

    def read_line(self, limit=MAX_EVENT_LINE) -> bytes:
        """The next line of a streamed body (a watch event), b"" at its end; a line longer than
        `limit` bytes is TooLarge."""
        line = self.readline(limit + 1)
        if len(line) > limit:
            raise TooLarge("a watch event", limit)
        return line


# -- a text body read line by line (pods/log, pods/proxy), never held whole ---------------------

class BadEncoding(Exception):
    """The body's Content-Encoding is not one Go's client decodes, or its gzip is broken."""


class _Gunzip(io.RawIOBase):
    """A gzip body decoded as it is read, never more at a time than the reader asks for: a small
    body that inflates to gigabytes (a decompression bomb) costs only what the reader takes (its
    byte limit), and at most `limit` compressed bytes are read. Several members are read one after
    the other, as Go's gzip.Reader reads them (multistream, its default)."""

    def __init__(self, fp, limit):
        import zlib

        self._zlib = zlib
        self.fp, self.left = fp, limit
        self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.tail = b""

    def readable(self):
        return True

    def readinto(self, buffer):
        room = len(buffer)
        try:
            while True:
                if not self.tail and self.z.eof:
                    more = self.z.unused_data or (self.fp.read1(min(1 << 16, self.left)) if self.left > 0 else b"")
                    if not more:
                        return 0
                    if not self.z.unused_data:
                        self.left -= len(more)
                    self.z, self.tail = self._zlib.decompressobj(16 + self._zlib.MAX_WBITS), more
                if not self.tail:
                    if self.left <= 0:
                        return 0        # the compressed bytes' bound: the reader sees the body end here
                    self.tail = self.fp.read1(min(1 << 16, self.left))
                    self.left -= len(self.tail)
                    if not self.tail:
                        raise BadEncoding("the gzip body ends before its end")
                out = self.z.decompress(self.tail, room)
                self.tail = self.z.unconsumed_tail
                if out:
                    buffer[:len(out)] = out
                    return len(out)
        except self._zlib.error as exc:
            raise BadEncoding(f"the gzip body is not valid gzip ({exc})") from None


def _decoded(resp, limit):
    """The body as Go's client hands it over: gzip decoded (it asks for gzip itself unless
    DisableCompression, and decodes only that: net/http transport.go, gzipReader); no encoding
    (or identity) as sent; any other encoding is refused here (Go would hand it over still
    encoded, where no line could be read)."""
    encodings = [e.strip().lower() for e in ",".join(resp.headers.get_all("Content-Encoding") or ()).split(",")
                 if e.strip()]
    if not encodings or encodings == ["identity"]:
        return resp
    if encodings == ["gzip"]:
        return io.BufferedReader(_Gunzip(resp, limit), 1 << 16)
    raise BadEncoding(f"the body's Content-Encoding {', '.join(encodings)[:40]!r} is not one the client "
                      f"decodes (only gzip)")


def body_lines(resp, limit, sink):
    """`resp`'s body (decoded as its Content-Encoding says) handed to `sink` as it comes, never
    held whole: sink.lines(bytes) with whole lines, each ending with its line end, as many as a
    read brought; sink.cut_line(bytes) with the start of a line not ended: longer than sink.max_line
    bytes (its first max_line bytes; the rest of it is skipped), or cut by the `limit` bytes read
    or by the body's end; then sink.end(more): the body went on past the limit (not read, and
    the connection is not reused). Blocks, not lines: a /metrics page is ten thousand lines."""
    fp = _decoded(resp, limit)
    total, max_line = 0, sink.max_line
    head: list[bytes] = []      # the start of a line not ended yet
    size, skipping = 0, False   # its bytes; inside a line already given cut, up to its end
    while total < limit:
        chunk = fp.read1(min(1 << 16, limit - total))
        if not chunk:
            break
        total += len(chunk)
        if skipping:
            i = chunk.find(b"\n")
            if i < 0:
                continue
            chunk, skipping = chunk[i + 1:], False
        end = chunk.rfind(b"\n")
        if end >= 0:
            head.append(chunk[:end + 1])
            sink.lines(b"".join(head))
            chunk, head, size = chunk[end + 1:], [], 0
        if chunk:
            head.append(chunk)
            size += len(chunk)
            if size > max_line:
                sink.cut_line(b"".join(head)[:max_line])
                head, size, skipping = [], 0, True
    if head:
        sink.cut_line(b"".join(head))
    sink.end(total >= limit and _more(fp, resp))


def _more(fp, resp) -> bool:
    """Whether the body goes on (http.client's peek would wait on the socket past its end)."""
    if resp.isclosed() or (fp is resp and not resp.chunked and resp.length is not None and resp.length <= 0):
        return False
    return bool(fp.peek(1))


def pending(sock, fp=None) -> bool:
    """Whether `sock` (or the buffered reader `fp` over it) has anything to read right now:
    bytes, or the end of the connection. Never waits."""
    if sock is None:
        return True
    previous = sock.gettimeout()
    try:
        sock.setblocking(False)
        if fp is not None:
            return bool(fp.peek(1))
        sock.recv(1)        # bytes: an answer nobody asked for; b"": the server closed it
        return True
    except (BlockingIOError, ssl.SSLWantReadError, InterruptedError):
        return False
    except OSError:
        return True
    finally:
        try:
            sock.settimeout(previous)
        except OSError:
            pass


# -- connections --------------------------------------------------------------------------------

def split(url: str, what: str):
    """(scheme, host, port, netloc) of a URL; ValueError for one Go would refuse too."""
    parts = urlsplit(url)
    port = parts.port          # ValueError for a port that is not a number in 0-65535
    host = _hostname(parts.netloc)
    if not host:
        raise ValueError(f"{what} has no host")    # never the URL: its userinfo may hold a password
    return parts.scheme.lower(), host, port or DEFAULT_PORTS.get(parts.scheme.lower()), parts


def _numeric_to_libc(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
        return True
    except (socket.gaierror, UnicodeError, ValueError):
        return False


def _hostname(netloc: str) -> str:
    """The host of a URL's netloc as written: Go's url.URL.Hostname keeps its case (SNI, Host,
    CONNECT and SOCKS all carry `LOCALHOST` as typed), where urllib's .hostname lowers it."""
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    return host.partition(":")[0]


def _host_name(host: str) -> str:
    """A host name as sent on the wire: IDNA for a non-ASCII name (Go: idnaASCII)."""
    return host if host.isascii() else host.encode("idna").decode("ascii")


def _wire(host: str) -> bytes:
    """The host as bytes for socket and ssl: given a str they encode it with the IDNA codec,
    whose import (stringprep, unicodedata) costs ~1.3 ms at every start."""
    return _host_name(host).encode("ascii")


def _authority(host, port) -> str:
    host = _host_name(host).partition("%")[0]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Connection(http.client.HTTPConnection):
    """One connection to the API server at `host`:`port` (TLS with `context` when given, checked
    against `server_name` or the host), through `proxy` (a URL, or None), opened by the first
    request. `raw` is the TCP socket under every layer: shutting it down aborts a request."""

    response_class = Response

    def __init__(self, host, port, timeout, host_header, context=None, server_name=None, proxy=None,
                 proxy_context=None):
        """`timeout`: seconds each read may wait (the request's time left, else READ_IDLE_TIMEOUT);
        the dial and each TLS handshake have their own bounds as client-go's."""
        super().__init__(_host_name(host), port, timeout)
        self.sent = False           # the request went out whole: the server may have acted on it
        self.context, self.server_name, self.proxy = context, server_name, proxy
        self.proxy_context = proxy_context or context
        self.host_header = host_header
        self.raw = None
        self.absolute = None        # "http://host:port" when requests go to an http proxy in absolute form
        if proxy is not None and context is None and proxy[0] in ("http", "https"):
            self.absolute = "http://" + host_header

    def connect(self):
        """transport.go dialConn: the first hop (the proxy, else the server), TLS to it when it
        is https, then the proxy's step (SOCKS5 handshake, CONNECT for an https server), then
        TLS to the server."""
        target = _authority(self.host, self.port)
        if self.proxy is None:
            self._dial(self.host, self.port)
        else:
            scheme, host, port, parts = self.proxy
            self._dial(host, port)
            if scheme == "https":       # addTLS with the server's own TLS config, named as the proxy
                self.sock = self._tls(self.sock, self.server_name or host, self.proxy_context)
            if scheme in ("socks5", "socks5h"):
                socks5_connect(self.sock, self.host, self.port, parts)
            elif self.context is not None:
                self._connect_tunnel(target, parts)
        if self.context is not None:
            self.sock = self._tls(self.sock, self.server_name or self.host, self.context)
        self.sock.settimeout(self.timeout)

    def _bounded(self, bound):
        return bound if self.timeout is None else min(self.timeout, bound)

    def _dial(self, host, port):
        if go_ip(host) is None and _numeric_to_libc(host):
            # Go's ParseIP refuses it, so Go looks it up as a name (net/ipsock.go, dnsclient); no
            # resolver knows a name of digits and dots: kubectl fails with "no such host"
            raise socket.gaierror(socket.EAI_NONAME, f"lookup {host}: no such host")
        try:
            # bytes: getaddrinfo takes them (the stubs say str), and a str would import the IDNA codec
            sock = socket.create_connection((_wire(host), port), self._bounded(DIAL_TIMEOUT))  # type: ignore[arg-type]
        except (socket.timeout, TimeoutError):
            raise DialTimeout(f"dial tcp {_authority(host, port)}: i/o timeout "
                              f"(no connection within {self._bounded(DIAL_TIMEOUT):g}s)") from None
        self.raw = self.sock = sock     # from here on, abort() can end the connection
        sock.settimeout(self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            keepalive(sock)
        except OSError:
            pass

    def _tls(self, sock, name, context):
        ip = go_ip(name)
        if ip is not None and ip.version == 6 and ip.ipv4_mapped is not None:
            # crypto/x509 verify.go VerifyHostname compares with net.IP.Equal, for which
            # ::ffff:a.b.c.d equals a.b.c.d; OpenSSL compares the bytes. No SNI for either.
            name = str(ip.ipv4_mapped)
        bound = self._bounded(TLS_HANDSHAKE_TIMEOUT)
        sock.settimeout(bound)
        try:
            if isinstance(sock, ssl.SSLSocket):
                inner = TLSInTLS(sock, context, name)
                sock.settimeout(self.timeout)
                return inner
            sock = context.wrap_socket(sock, server_hostname=_wire(name), do_handshake_on_connect=False)
            self.raw = sock         # the TCP socket's descriptor is the SSLSocket's now
            sock.do_handshake()
        except (socket.timeout, TimeoutError):
            raise HandshakeTimeout(f"TLS handshake timeout (no handshake within {bound:g}s)") from None
        sock.settimeout(self.timeout)
        return sock

    def _connect_tunnel(self, target, parts):
        """The CONNECT request Go writes (HTTP/1.1, Host, Go's User-Agent, Proxy-Authorization
        from the proxy URL's userinfo), its answer read as any answer; not 200 is the proxy's
        refusal, its status text the error. Not http.client's set_tunnel: it writes HTTP/1.0
        without a Host (and, before 3.12, an IPv6 address without brackets), reads the answer
        as laxly as above, and cannot tunnel through TLS to an https proxy."""
        head = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", "User-Agent: Go-http-client/1.1"]
        auth = proxy_authorization(parts)
        if auth:
            head.append(f"Proxy-Authorization: {auth}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("ascii"))
        # unbuffered: the server's TLS bytes must stay in the socket (the proxy sends nothing
        # after its answer before the client speaks)
        fp = self.sock.makefile("rb", buffering=0)
        try:
            status, reason, _ = read_status(fp)
            read_fields(fp)
        finally:
            fp.close()
        if status != 200:
            raise ProtocolError(f"the proxy refused the tunnel: {status} {reason}".strip())

    def send_request(self, method, path, headers, body=None) -> Response:
        """One request: `headers` (name, bytes) pairs already checked by header_bytes()."""
        target = self.absolute + path if self.absolute else path
        self.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        self.putheader("Host", self.host_header)
        for name, value in headers:
            self.putheader(name, value)
        if self.absolute and self.proxy:
            auth = proxy_authorization(self.proxy[3])
            if auth:            # transport.go: mutateHeaderFunc sets it on every request
                self.putheader("Proxy-Authorization", auth)
        if body is not None:
            self.putheader("Content-Length", str(len(body)))
        self.sent = False
        self.endheaders(body)
        self.sent = True
        return self.getresponse()  # type: ignore[return-value]  # a Response: our response_class


class DialTimeout(TimeoutError):
    """No TCP connection within DIAL_TIMEOUT (or the request's time left): nothing was sent."""


class HandshakeTimeout(TimeoutError):
    """No TLS handshake within TLS_HANDSHAKE_TIMEOUT: nothing was sent."""


def keepalive(sock):
    """TCP keep-alive as Go's net.Dialer{KeepAlive: 30s} sets it: the first probe after 30s of
    idleness, then one every 30s (the count is the system's)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name in ("TCP_KEEPIDLE", "TCP_KEEPINTVL"):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), KEEPALIVE)
    if not hasattr(socket, "TCP_KEEPIDLE") and hasattr(socket, "TCP_KEEPALIVE"):     # macOS
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPALIVE, KEEPALIVE)


def proxy_authorization(parts) -> str | None:
    """transport.go connectMethod.proxyAuth: Basic of the proxy URL's userinfo, decoded."""
    if "@" not in parts.netloc:
        return None
    user, _, password = parts.netloc.rpartition("@")[0].partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode("utf-8")
    return "Basic " + base64.b64encode(pair).decode("ascii")


# -- SOCKS5 (RFC 1928, username/password RFC 1929) ---------------------------------------------

def socks5_connect(sock, host, port, parts):
    """The SOCKS5 CONNECT Go's client makes (x/net/internal/socks, bundled as net/http
    socks_bundle.go): the host name is sent to the proxy for both socks5 and socks5h (an IP
    address as its address type); with userinfo it offers no-auth and username/password. A
    dozen lines of the protocol instead of PySocks (unmaintained, and it monkeypatches socket)."""
    user: bytes | None = None
    password = b""
    if "@" in parts.netloc:
        name, _, word = parts.netloc.rpartition("@")[0].partition(":")
        user, password = unquote(name).encode("utf-8"), unquote(word).encode("utf-8")
    sock.sendall(b"\x05\x02\x00\x02" if user is not None else b"\x05\x01\x00")
    version, method = _exactly(sock, 2)
    if version != 5:
        raise ProtocolError(f"the SOCKS proxy answered an unexpected protocol version {version}")
    if method == 0xFF:
        raise ProtocolError("the SOCKS proxy accepts none of the authentication methods offered")
    if method == 2 and user is not None:
        if not user or len(user) > 255 or len(password) > 255:
            raise ProtocolError("the SOCKS proxy's username or password is empty or too long")
        sock.sendall(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
        if _exactly(sock, 2)[1] != 0:
            raise ProtocolError("the SOCKS proxy refused the username and password")
    elif method != 0:
        raise ProtocolError(f"the SOCKS proxy asked for an authentication method not offered ({method})")
    import ipaddress

    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
        address = (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    except ValueError:
        name = _host_name(host).encode("ascii")
        if len(name) > 255:
            raise ProtocolError("the host name is too long for SOCKS") from None
        address = bytes([3, len(name)]) + name
    sock.sendall(b"\x05\x01\x00" + address + port.to_bytes(2, "big"))
    version, reply, reserved, kind = _exactly(sock, 4)
    if version != 5:
        raise ProtocolError(f"the SOCKS proxy answered an unexpected protocol version {version}")
    if reply != 0:
        raise ProtocolError(f"the SOCKS proxy could not connect: {SOCKS_REPLIES.get(reply, f'reply {reply}')}")
    if reserved != 0:
        raise ProtocolError("the SOCKS proxy's answer has a non-zero reserved field")
    if kind not in (1, 3, 4):
        raise ProtocolError(f"the SOCKS proxy answered an unknown address type {kind}")
    size = {1: 4, 4: 16}.get(kind) or _exactly(sock, 1)[0]
    _exactly(sock, size + 2)       # the bound address and port: not used


SOCKS_REPLIES = {1: "general failure", 2: "connection not allowed by ruleset", 3: "network unreachable",
                 4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
                 8: "address type not supported"}


def _exactly(sock, n) -> bytes:
    data = b""
    while len(data) < n:
        piece = sock.recv(n - len(data))
        if not piece:
            raise ProtocolError("the proxy closed the connection during its handshake")
        data += piece
    return data


# -- TLS inside TLS (an https:// proxy before an https server) -----------------------------------

class TLSInTLS:
    """TLS to the server through the TLS connection to an https:// proxy. ssl cannot wrap an
    SSLSocket, so the inner TLS runs on memory buffers (ssl.SSLObject) fed from the outer
    connection, in the calling thread only (an SSL connection must not be read and written from
    two threads). Has what http.client and this module use of a socket."""

    def __init__(self, outer, context, name):
        self.outer = outer
        self._refs, self._closed = 0, False       # as socket's: closed once its files are closed too
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._feed = self._in.write     # the bytes the outer connection brings (not output)
        self._tls = context.wrap_bio(self._in, self._out, server_hostname=_wire(name))
        self._io(self._tls.do_handshake)

    def _io(self, op, *args):
        while True:
            try:
                result = op(*args)
            except ssl.SSLWantReadError:
                self._flush()
                data = self.outer.recv(1 << 16)
                if data:
                    self._feed(data)
                else:
                    self._in.write_eof()
                continue
            self._flush()
            return result

    def _flush(self):
        data = self._out.read()
        if data:
            self.outer.sendall(data)

    def recv_into(self, buffer, nbytes=0, flags=0):
        try:
            return self._io(self._tls.read, nbytes or len(buffer), buffer)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return 0

    def recv(self, n, flags=0):
        buffer = bytearray(n)
        return bytes(buffer[:self.recv_into(buffer)])

    def sendall(self, data, flags=0):
        view = memoryview(data)
        while view:
            view = view[self._io(self._tls.write, view):]

    send = sendall

    def makefile(self, mode="rb", buffering=None, **_):
        self._refs += 1
        raw = socket.SocketIO(self, "rb")  # type: ignore[arg-type]  # a socket to it: recv_into and _decref_socketios
        return raw if buffering == 0 else io.BufferedReader(raw)

    def _decref_socketios(self):
        self._refs -= 1
        if self._closed and self._refs <= 0:
            self.outer.close()

    def pending(self):
        return self._tls.pending()

    def settimeout(self, value):
        self.outer.settimeout(value)

    def gettimeout(self):
        return self.outer.gettimeout()

    def setblocking(self, flag):
        self.outer.setblocking(flag)

    def fileno(self):
        return self.outer.fileno()

    def close(self):
        self._closed = True
        if self._refs <= 0:
            self.outer.close()


def shutdown(conn):
    """End `conn` now, from any thread: a read or write blocked on it fails at once."""
    sock = conn.raw
    if sock is not None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass
