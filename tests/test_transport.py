"""http11: the HTTP/1.1 framing kube.py speaks, against a loopback peer that sends scripted bytes
(the real API server's answers are covered by tests/cluster; these are the framings and faults
it does not choose to produce)."""

import socket
import threading

import pytest

from kubectl_kvcache import http11


class Peer:
    """Accepts connections; for each request head received, sends the next scripted answer."""

    def __init__(self, answers, tunnel=None):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.answers = list(answers)
        self.tunnel = tunnel            # bytes answered to a CONNECT before the requests
        self.heads = []
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        data = b""
        first = True
        with conn:
            while self.answers or (first and self.tunnel):
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                self.heads.append(head.decode())
                if first and self.tunnel is not None:
                    first = False
                    conn.sendall(self.tunnel)
                    if not self.tunnel.startswith(b"HTTP/1.1 200"):
                        return
                    continue
                first = False
                answer = self.answers.pop(0)
                if answer is None:          # close without answering
                    return
                conn.sendall(answer)
                if answer.endswith(b"<close>"):
                    return

    def close(self):
        self.listener.close()


@pytest.fixture
def peer():
    made = []

    def make(*answers, tunnel=None):
        made.append(Peer(answers, tunnel))
        return made[-1]
    yield make
    for p in made:
        p.close()


def connect(p, **kw):
    return http11.Connection("127.0.0.1", p.port, timeout=5, **kw)


def test_content_length_answers_keep_the_connection_for_the_next_request(peer):
    p = peer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nRetry-After: 3\r\n\r\nhello",
             b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}")
    conn = connect(p)
    first = conn.request("GET", "/a?x=1", [("Accept", "application/json"), ("User-Agent", "t")])
    assert (first.status, first.read(), first.will_close) == (200, b"hello", False)
    assert first.headers.get("retry-after") == "3" and first.headers.get("RETRY-AFTER") == "3"
    second = conn.request("POST", "/b", [("Content-Length", "4")], b"body")
    assert (second.status, second.read()) == (404, b"{}")
    assert p.accepted == 1
    assert p.heads[0].split("\r\n") == ["GET /a?x=1 HTTP/1.1", f"Host: 127.0.0.1:{p.port}",
                                        "Accept: application/json", "User-Agent: t"]
    conn.close()


def test_chunked_bodies_with_extensions_and_trailers_read_whole_and_by_line(peer):
    body = b"4;ext=1\r\n{\"a\"\r\n6\r\n: 1}\n{\r\n9\r\n\"b\": 2}\n\n\r\n0\r\nX-Trailer: t\r\n\r\n"
    p = peer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body,
             b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    conn = connect(p)
    whole = conn.request("GET", "/", [])
    assert whole.read() == b'{"a": 1}\n{"b": 2}\n\n' and not whole.will_close
    lines = conn.request("GET", "/", [])
    assert [lines.readline() for _ in range(4)] == [b'{"a": 1}\n', b'{"b": 2}\n', b"\n", b""]


def test_a_body_framed_by_the_end_of_the_connection_closes_it(peer):
    p = peer(b"HTTP/1.0 200 OK\r\n\r\nuntil the end<close>")
    answer = connect(p).request("GET", "/", [])
    assert answer.will_close and answer.read() == b"until the end<close>"


def test_interim_answers_are_skipped(peer):
    p = peer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
    answer = connect(p).request("POST", "/", [("Content-Length", "0")], b"")
    assert (answer.status, answer.read()) == (201, b"")


@pytest.mark.parametrize("headers, target", [([("Authorization", "Bearer x\r\nImpersonate-User: admin")], "/"),
                                             ([("X\nY", "v")], "/"), ([], "/a b"), ([], "/a\x00")])
def test_line_breaks_in_headers_and_unsafe_targets_are_refused_before_sending(peer, headers, target):
    p = peer(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises((ValueError, http11.ProtocolError)):
        connect(p).request("GET", target, headers)
    assert p.heads == []


def test_a_server_that_closes_before_answering_is_remote_disconnected(peer):
    p = peer(None)
    with pytest.raises(http11.RemoteDisconnected):
        connect(p).request("GET", "/", [])


@pytest.mark.parametrize("answer", [b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nshort<close>",
                                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort<close>",
                                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n<close>",
                                    b"SSH-2.0-OpenSSH\r\n\r\n<close>",
                                    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n<close>",
                                    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n<close>"])
def test_malformed_or_truncated_answers_are_protocol_errors(peer, answer):
    p = peer(answer)
    with pytest.raises(http11.ProtocolError):
        connect(p).request("GET", "/", []).read()


def test_a_connect_proxy_is_tunnelled_through_and_its_refusal_reported(peer):
    p = peer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", tunnel=b"HTTP/1.1 200 Connection established\r\n\r\n")
    conn = http11.Connection("api.example", 6443, timeout=5, proxy=("127.0.0.1", p.port))
    assert conn.request("GET", "/version", []).read() == b"ok"
    assert p.heads[0].split("\r\n") == ["CONNECT api.example:6443 HTTP/1.1", "Host: api.example:6443"]
    assert p.heads[1].split("\r\n")[:2] == ["GET /version HTTP/1.1", "Host: api.example:6443"]
    refused = peer(tunnel=b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
    with pytest.raises(OSError, match="Tunnel connection failed: 407 Proxy Authentication Required"):
        http11.Connection("api.example", 443, timeout=5, proxy=("127.0.0.1", refused.port)).request("GET", "/", [])


@pytest.mark.parametrize("host, port, tls, expected", [("h", 443, True, "h"), ("h", 6443, True, "h:6443"),
                                                       ("h", 80, False, "h"), ("::1", 6443, True, "[::1]:6443")])
def test_the_host_header_leaves_out_the_default_port_and_brackets_ipv6(host, port, tls, expected):
    conn = http11.Connection(host, port, context=object() if tls else None)
    assert conn._host_header == expected


# -- the URL pieces kube needs, held to urllib.parse itself -------------------------------------

from urllib.parse import quote as url_quote, unquote as url_unquote, urlencode as url_urlencode  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

URL_ALPHABET = st.sampled_from(list("abcHZ09:/?#@[]%.-_~+ é\t") + ["https://", "http://", "HTTPS://", ":6443",
                                                                   "[::1]", "user:pw@", "/prefix", "%2F", "%zz"])
URLS = st.lists(URL_ALPHABET, max_size=12).map("".join)


def urllib_split(url):
    try:
        parts = urlsplit(url)
        return parts.scheme, parts.hostname, parts.port, parts.path
    except ValueError:
        return ValueError


def our_split(url):
    try:
        return http11.split_url(url)
    except ValueError:
        return ValueError


@settings(max_examples=3000, deadline=None)
@given(URLS)
def test_split_url_reads_as_urlsplit_reads(url):
    assert our_split(url) == urllib_split(url)


@pytest.mark.parametrize("url", ["https://10.0.0.1:6443", "https://API.example.com/k8s/clusters/c-1", "http://h",
                                 "https://h:0", "https://u:p@h:443/x?y#z", "https://h:65536", "https://h:x",
                                 "https://[fe80::1%25eth0]:6443", "ftp://h", "h:6443", "https:///path"])
def test_split_url_on_server_urls(url):
    assert our_split(url) == urllib_split(url)


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20) | st.sampled_from(
    ["a/b", "%41", "%4", "%", "%%41", "%e2%82%ac", "%E2%82", "é%41", "%C3é", "..", "~x_y.z-", "a b+c"])


@settings(max_examples=2000, deadline=None)
@given(TEXT, st.sampled_from(["", "/", " "]))
def test_quote_and_unquote_are_urllibs(text, safe):
    assert http11.quote(text, safe) == url_quote(text, safe=safe)
    assert http11.unquote(text) == url_unquote(text)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(TEXT, TEXT, max_size=4))
def test_urlencode_is_urllibs(query):
    assert http11.urlencode(query) == url_urlencode(query)
