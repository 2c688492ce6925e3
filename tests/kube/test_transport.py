"""The transport (kube.client.Client over kube/transport.py) against scripted loopback peers: the framings a
real API server never sends, held to what kubectl v1.37.2 itself reads from the same bytes;
proxies (http CONNECT and absolute-form, socks5, https) run here on loopback, recording what
arrives; header values; retries, timeouts and Ctrl-C's abort.

The framing tier's authority is the real kubectl (`kubectl get --raw /NAME/a --server
http://127.0.0.1:PORT --request-timeout=3s`, which makes exactly one GET through client-go's
transport on Go's net/http and no discovery; the tier skips without the binary): for every
framing, the plugin reads the same body kubectl prints, or refuses it with one line where kubectl
refuses it, and it never hangs (every request is bounded). `get --raw` makes one request, so
what follows on the same kept-alive connection has no oracle (`kubectl get pods` does repeat
GET /api on one connection when discovery's answer is not JSON, but back to back, with no idle
time, printing only the last answer's JSON error): there the plugin is held to Go's documented
rule (go1.26.8 net/http/transport.go, persistConn.readLoop and readLoopPeekFailLocked: a
connection whose answer was not read whole, or that sends bytes while idle, "Unsolicited
response received on idle HTTP channel", is closed, never read as the next answer), so the next
request always gets its own answer."""

import base64
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time

import pytest

from kubectl_kvcache.kube import gourl
from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.kube.connection import Connection

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB"      # the answer to /b, always well framed
INJECTED = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\ninjected"


class Peer:
    """A loopback HTTP/1.1 peer: for each request head it reads, it sends the scripted bytes of
    its path (`script[path]`: bytes, or (bytes, close after it, bytes sent 0.2 s later)), else
    B; the connection stays open unless the script says to close it. Records what arrives."""

    def __init__(self, script=None, tls=None):
        self.script = script or {}
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.tls = tls
        self.heads = []
        self.raw = []           # every request head as bytes
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
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                self.raw.append(head)
                self.heads.append(head.decode("utf-8", "replace"))
                length = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
                if length:
                    n = int(length[0].split(b":")[1])
                    while len(data) < n:
                        data += conn.recv(65536)
                    data = data[n:]
                path = head.split(b" ")[1].decode()
                path = "/" + path.split("/", 3)[3] if path.startswith("http://") else path
                answer = self.script.get(path.split("?")[0], B)
                answer, close, later = (answer, False, None) if isinstance(answer, bytes) else answer
                if answer is None:
                    return
                conn.sendall(answer)
                if later:
                    time.sleep(0.2)
                    conn.sendall(later)
                if close:
                    return
        except OSError:
            pass
        finally:
            conn.close()

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def close(self):
        self.listener.close()


@pytest.fixture
def peer():
    made = []

    def make(script=None, tls=None):
        made.append(Peer(script, tls))
        return made[-1]
    yield make
    for p in made:
        p.close()


def kubeconfig(tmp_path, server, ca=None, proxy=None, user=None, name="config"):
    """A kubeconfig for `server`; its user has a token unless `user` says otherwise (with no
    credentials at all kubectl asks for a username on an https server, and so the plugin refuses)."""
    cluster = {"server": server}
    if ca:
        cluster["certificate-authority"] = ca
    if proxy:
        cluster["proxy-url"] = proxy
    path = tmp_path / name
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": {"token": "t0ken"} if user is None else user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def client(tmp_path, server, timeout="3s", **kw):
    return kube.Client(Connection(kubeconfig=kubeconfig(tmp_path, server, **kw), request_timeout=timeout))


def ours(c, path):
    """What the plugin reads: ("ok", body) or ("error", its one line)."""
    try:
        return "ok", c.request("GET", path, raw=True).decode("utf-8", "replace")
    except PluginError as exc:
        return "error", str(exc)


# -- the framing tier, against kubectl ---------------------------------------------------------

def read_by_kubectl(result):
    """kubectl's outcome as the tier's: ("ok", the body it printed), ("ok", "") for an answer
    whose status client-go reports as an error without a body (rest/request.go
    newUnstructuredResponseError), ("ok", None) for another such status (the head and framing
    were read; the body is not printed whole), else ("error", its stderr)."""
    stderr = result.stderr.decode("utf-8", "replace")
    if result.returncode == 0:
        return "ok", result.stdout.decode("utf-8", "replace")
    if re.search(r"the server responded with the status code \d+ but did not return more information", stderr):
        return "ok", ""
    if stderr.startswith("Error from server"):
        return "ok", None
    return "error", stderr.strip()


def chunked(body):
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body


OK = b"HTTP/1.1 200 OK\r\n"
CLOSE = object()
# id -> the answer to /a: bytes (the connection stays open), or (bytes, CLOSE), or (bytes, LATER
# bytes sent 0.2 s after the answer, while the connection is idle)
FRAMINGS = {
    "content-length": OK + b"Content-Length: 5\r\n\r\nhello",
    "content-length-zero": OK + b"Content-Length: 0\r\n\r\n",
    "content-length-padded": OK + b"Content-Length:   5 \t\r\n\r\nhello",
    "content-length-twice-same": OK + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    "content-length-twice-different": OK + b"Content-Length: 2\r\nContent-Length: 5\r\n\r\nhello",
    "content-length-plus": OK + b"Content-Length: +2\r\n\r\nok",
    "content-length-hex": OK + b"Content-Length: 0x2\r\n\r\nok",
    "content-length-underscore": OK + b"Content-Length: 1_0\r\n\r\n0123456789",
    "content-length-superscript": OK + "Content-Length: 1²\r\n\r\nok".encode(),
    "content-length-negative": OK + b"Content-Length: -1\r\n\r\nok",
    "content-length-empty": OK + b"Content-Length:\r\n\r\nok",
    "content-length-list": OK + b"Content-Length: 2, 2\r\n\r\nok",
    "content-length-huge": OK + b"Content-Length: 99999999999999999999\r\n\r\nok",
    "content-length-short": (OK + b"Content-Length: 20\r\n\r\nshort", CLOSE),
    "content-length-space-before-colon": (OK + b"Content-Length : 5\r\n\r\nhello, and on", CLOSE),
    "content-length-space-before-colon-then-real": OK + b"Content-Length : 5\r\nContent-Length: 2\r\n\r\nok",
    "obs-fold": OK + b"X-A: 1\r\n Content-Length: 9\r\nContent-Length: 2\r\n\r\nok",
    "obs-fold-tab": OK + b"X-A: 1\r\n\tmore\r\nContent-Length: 2\r\n\r\nok",
    "obs-fold-first-line": OK + b" X-A: 1\r\nContent-Length: 2\r\n\r\nok",
    "until-close-http10": (b"HTTP/1.0 200 OK\r\n\r\nuntil the end", CLOSE),
    "until-close-http11": (OK + b"\r\nuntil the end", CLOSE),
    "http10-keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    "connection-close": (OK + b"Connection: close\r\nContent-Length: 2\r\n\r\nok", CLOSE),
    "chunked": chunked(b"4;ext=1\r\nwxyz\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "chunked-uppercase": OK + b"Transfer-Encoding: CHUNKED\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "chunked-hex-upper": chunked(b"A\r\n0123456789\r\n0\r\n\r\n"),
    "chunked-size-trailing-space": chunked(b"2 \r\nok\r\n0\r\n\r\n"),
    "chunked-size-extension-then-space": chunked(b"2;x \r\nok\r\n0\r\n\r\n"),
    "chunked-size-space-then-extension": chunked(b"2 ;x\r\nok\r\n0\r\n\r\n"),
    "chunked-size-leading-space": chunked(b" 2\r\nok\r\n0\r\n\r\n"),
    "chunked-size-negative": chunked(b"-5\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-0x": chunked(b"0x5\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-underscore": chunked(b"5_0\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-plus": chunked(b"+5\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-17-digits": chunked(b"00000000000000005\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-16-digits": chunked(b"0000000000000005\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-not-hex": (chunked(b"zz\r\nhello\r\n0\r\n\r\n"), CLOSE),
    "chunked-size-empty": chunked(b"\r\nhello\r\n0\r\n\r\n"),
    "chunked-size-bare-lf": chunked(b"5\nhello\r\n0\r\n\r\n"),
    "chunked-size-cr-inside": chunked(b"5\r;x\r\nhello\r\n0\r\n\r\n"),
    "chunked-data-not-crlf": chunked(b"5\r\nhelloXX0\r\n\r\n"),
    "chunked-data-bare-lf": chunked(b"5\r\nhello\n0\r\n\r\n"),
    "chunked-truncated": (chunked(b"10\r\nshort"), CLOSE),
    "chunked-no-last-chunk": (chunked(b"5\r\nhello\r\n"), CLOSE),
    "chunked-trailer-eof": (chunked(b"5\r\nhello\r\n0\r\n"), CLOSE),
    "chunked-trailer-bare-lf": (chunked(b"5\r\nhello\r\n0\r\n\n"), CLOSE),
    "chunked-trailers-bare-lf": (chunked(b"5\r\nhello\r\n0\r\nX-T: 1\n\n"), CLOSE),
    "chunked-trailers-never-end": chunked(b"5\r\nhello\r\n0\r\n" + b"X-T: 1\r\n" * 600),
    "chunked-and-content-length": OK + b"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "chunked-http10-ignored": (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", CLOSE),
    "xchunked-with-content-length": OK + b"Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\nhello",
    "chunked-identity": OK + b"Transfer-Encoding: chunked, identity\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "transfer-encoding-twice": OK + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "transfer-encoding-identity": (OK + b"Transfer-Encoding: identity\r\n\r\nok", CLOSE),
    "status-no-reason": b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
    "status-two-spaces": b"HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-two-digits": b"HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-below-100": b"HTTP/1.1 099 Odd\r\nContent-Length: 2\r\n\r\nok",
    "status-signed": b"HTTP/1.1 +20 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-http2": b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-four-digits": b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-letters": b"HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok",
    "status-tab": b"HTTP/1.1\t200 OK\r\nContent-Length: 2\r\n\r\nok",
    "status-not-http": (b"ICY 200 OK\r\nContent-Length: 2\r\n\r\nok", CLOSE),
    "status-ssh": (b"SSH-2.0-OpenSSH_9.6\r\n", CLOSE),
    "status-bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    "interim-100": b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 2\r\n\r\nok",
    "interim-103": b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + OK + b"Content-Length: 2\r\n\r\nok",
    "interim-six": b"HTTP/1.1 103 Early Hints\r\n\r\n" * 6 + OK + b"Content-Length: 2\r\n\r\nok",
    "header-no-colon": OK + b"no colon here\r\nContent-Length: 2\r\n\r\nok",
    "header-bad-name": OK + b"X(a): 1\r\nContent-Length: 2\r\n\r\nok",
    "header-empty-name": OK + b": 1\r\nContent-Length: 2\r\n\r\nok",
    "header-control-in-value": OK + b"X-A: a\x01b\r\nContent-Length: 2\r\n\r\nok",
    "header-nul-in-value": OK + b"X-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    "header-del-in-value": OK + b"X-A: a\x7fb\r\nContent-Length: 2\r\n\r\nok",
    "header-obs-text-value": OK + "X-A: café\r\nContent-Length: 2\r\n\r\nok".encode(),
    "header-eof": (OK + b"Content-Length: 2\r\n", CLOSE),
    "headers-101": OK + b"".join(b"X-%d: 1\r\n" % i for i in range(101)) + b"Content-Length: 2\r\n\r\nok",
    "header-line-64k": OK + b"X-Long: " + b"a" * 65536 + b"\r\nContent-Length: 2\r\n\r\nok",
    "nothing-at-all": (b"", CLOSE),
    "204-with-bytes-after": b"HTTP/1.1 204 No Content\r\nContent-Length: 8\r\n\r\n" + INJECTED,
    "304-with-content-length": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
    "bytes-after-the-answer": OK + b"Content-Length: 2\r\n\r\nok" + INJECTED,
    "bytes-after-a-chunked-answer": chunked(b"2\r\nok\r\n0\r\n\r\n") + INJECTED,
    "bytes-while-idle": (OK + b"Content-Length: 2\r\n\r\nok", INJECTED),
}
# Where the plugin refuses what Go reads (http.client's own refusals, kept), and why.
STRICTER = {
    "status-below-100": "a status below 100: http.client refuses it; Go reads status 99",
    "status-signed": "a status that is not 3 digits: http.client refuses it; Go's strconv.Atoi reads +20 as 20",
    "status-http2": "not HTTP/1.x: http.client refuses it; Go parses any HTTP/d.d version on an HTTP/1 connection",
    "headers-101": "more than 100 headers: http.client refuses them; Go bounds the head by its bytes (10 MB)",
    "header-line-64k": "a line over 65536 bytes: http.client refuses it; Go bounds the head by its bytes (10 MB)",
}


@pytest.fixture(scope="module")
def framing_peer():
    script = {}
    for i, (name, answer) in enumerate(FRAMINGS.items()):
        if isinstance(answer, tuple):
            answer = (answer[0], True, None) if answer[1] is CLOSE else (answer[0], False, answer[1])
        script[f"/{name}/a"] = answer
    p = Peer(script)
    yield p
    p.close()


@pytest.fixture(scope="module")
def kubectl_reads(framing_peer, tmp_path_factory, pinned_kubectl):
    """What kubectl reads for each framing (/NAME/a), eight kubectl processes at a time, each
    with an empty HOME and no kubeconfig or proxy from the environment."""
    kubectl = pinned_kubectl
    home = str(tmp_path_factory.mktemp("home"))
    env = {k: v for k, v in os.environ.items() if k.lower() not in (
        "kubeconfig", "http_proxy", "https_proxy", "no_proxy", "all_proxy")}
    env["HOME"] = home
    results = {}

    def run(name):
        p = subprocess.run([kubectl, "get", "--raw", f"/{name}/a", "--server", framing_peer.url,
                            "--request-timeout=3s"], capture_output=True, env=env, timeout=60)
        results[name] = read_by_kubectl(p)

    names = list(FRAMINGS)
    for i in range(0, len(names), 8):
        threads = [threading.Thread(target=run, args=(n,)) for n in names[i:i + 8]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    asked = [h.split(" ")[1].split("?")[0] for h in framing_peer.heads]
    return results, asked


def test_kubectl_sends_one_get_per_framing_and_no_discovery(kubectl_reads):
    """The tier rests on `get --raw` making exactly one request: no discovery, no retry."""
    _, asked = kubectl_reads
    assert sorted(asked) == sorted(f"/{name}/a" for name in FRAMINGS)


@pytest.mark.parametrize("name", list(FRAMINGS))
def test_each_framing_is_read_as_kubectl_reads_it(kubectl_reads, framing_peer, tmp_path, name):
    c = client(tmp_path, framing_peer.url)
    t0 = time.monotonic()
    first = ours(c, f"/{name}/a")
    took = time.monotonic() - t0
    time.sleep(0.5)
    second = ours(c, f"/{name}/b")
    theirs = kubectl_reads[0][name]
    assert theirs[0] == "ok" or not re.search("Client.Timeout|deadline exceeded", theirs[1]), \
        f"kubectl waits on {name}: not a case for this tier"
    assert "request timeout" not in first[1] and took < 2.5, (name, first, took)     # never waits
    assert first[0] == "ok" or "\n" not in first[1]
    assert second == ("ok", "B"), (name, second)        # the next request gets its own answer (Go's rule)
    if name in STRICTER:
        assert theirs[0] == "ok" and first[0] == "error", (name, first, theirs)
        return
    assert first[0] == theirs[0], (name, first, theirs)
    if first[0] == "ok":
        assert theirs[1] is not None, (name, "kubectl reported a status without its body")
        assert first[1] == theirs[1], (name, first, theirs)
    else:
        assert first[1].startswith((f"cannot reach the API server at {framing_peer.url}",
                                    f"the API server at {framing_peer.url} closed the connection")), first


def test_kubectl_tells_the_framings_apart(kubectl_reads):
    """The tier means something only if kubectl both reads and refuses some of these."""
    verdicts = {kubectl_reads[0][n][0] for n in FRAMINGS}
    assert verdicts == {"ok", "error"}


def test_a_kept_alive_connection_is_reused_when_nothing_came_after_the_answer(peer, tmp_path):
    p = peer({"/a": OK + b"Content-Length: 2\r\n\r\nok"})
    c = client(tmp_path, p.url)
    assert ours(c, "/a") == ("ok", "ok") and ours(c, "/b") == ("ok", "B") and ours(c, "/a") == ("ok", "ok")
    assert p.accepted == 1


def test_bytes_after_an_answer_close_the_connection(peer, tmp_path):
    p = peer({"/a": OK + b"Content-Length: 2\r\n\r\nok" + INJECTED})
    c = client(tmp_path, p.url)
    assert ours(c, "/a") == ("ok", "ok") and ours(c, "/b") == ("ok", "B")
    assert p.accepted == 2


# -- what is sent: the request line and headers as Go writes them --------------------------------

def test_the_request_head(peer, tmp_path):
    p = peer()
    c = client(tmp_path, p.url + "/prefix")
    c.request("GET", "/api/v1/namespaces/a b/pods", query={"labelSelector": "x in (a,b)"}, raw=True)
    lines = p.heads[0].split("\r\n")
    assert lines[0] == "GET /prefix/api/v1/namespaces/a%20b/pods?labelSelector=x+in+%28a%2Cb%29 HTTP/1.1"
    assert lines[1] == f"Host: 127.0.0.1:{p.port}"
    assert [ln.split(":")[0] for ln in lines[2:]] == ["Accept", "User-Agent"]


def test_header_values_are_utf8_and_trimmed_as_go_writes_them(peer, tmp_path):
    p = peer()
    c = kube.Client(Connection(kubeconfig=kubeconfig(tmp_path, p.url), as_user="  José\t", as_groups=("g 1",)))
    c.request("GET", "/x", raw=True)
    assert b"\r\nImpersonate-User: Jos\xc3\xa9\r\n" in p.raw[0] + b"\r\n"
    assert b"\r\nImpersonate-Group: g 1" in p.raw[0]


@pytest.mark.parametrize("value", ["a\rb", "a\nImpersonate-Group: system:masters", "a\x00", "a\x7f", "a\x1b[0m"])
def test_a_control_character_in_a_value_is_refused_before_any_connection(peer, tmp_path, value):
    p = peer()
    with pytest.raises(PluginError) as caught:
        kube.Client(Connection(kubeconfig=kubeconfig(tmp_path, p.url), as_user=value)).request("GET", "/x")
    line = str(caught.value)
    assert "Impersonate-User" in line and "control character" in line and "\n" not in line
    assert value not in line and repr(value)[1:-1] not in line
    assert p.accepted == 0


def test_a_token_with_a_control_character_is_refused_without_printing_it(peer, tmp_path):
    p = peer(tls=None)
    with pytest.raises(PluginError) as caught:
        kube.Client(Connection(kubeconfig=kubeconfig(tmp_path, "https://127.0.0.1:1", user={"token": "sec\x01ret"}),
                               insecure_skip_tls_verify=True))
    assert "Authorization" in str(caught.value) and "sec" not in str(caught.value)


# -- retries, timeouts, abort -----------------------------------------------------------------------

def test_a_get_on_a_connection_the_server_dropped_is_sent_again_once_a_write_never(peer, tmp_path):
    # the server closes every connection after its answer without saying so
    p = peer({"/a": (OK + b"Content-Length: 2\r\n\r\nok", True, None),
              "/w": (OK + b"Content-Length: 2\r\n\r\n{}", True, None)})
    c = client(tmp_path, p.url)
    assert ours(c, "/a") == ("ok", "ok")
    time.sleep(0.2)
    assert ours(c, "/a") == ("ok", "ok")        # the stale connection is seen idle-closed, or retried
    assert c.request("POST", "/w", body={}) == {}
    assert sum(h.startswith("POST") for h in p.heads) == 1


def test_the_request_timeout_bounds_a_body_that_never_ends(peer, tmp_path):
    p = peer({"/slow": OK + b"Content-Length: 100\r\n\r\nonly a part"})
    c = client(tmp_path, p.url, timeout="1s")
    t0 = time.monotonic()
    kind, line = ours(c, "/slow")
    assert kind == "error" and "did not answer within the request timeout of 1s" in line
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("tls", [False, True])
def test_abort_ends_a_request_blocked_in_another_thread_at_once(peer, pki, tmp_path, tls):
    p = peer({"/hang": OK + b"Content-Length: 100\r\n\r\npart"}, tls=pki["server"] if tls else None)
    c = client(tmp_path, p.url, timeout="0", ca=pki["ca"] if tls else None)
    outcome = []

    def call():
        try:
            c.request("GET", "/hang")
        except BaseException as exc:        # noqa: B902 - what the thread ended with is the point
            outcome.append(exc)
    t = threading.Thread(target=call, daemon=True)
    t.start()
    while not p.heads:
        time.sleep(0.02)
    time.sleep(0.2)
    t0 = time.monotonic()
    c._transport.abort()
    t.join(3)
    assert not t.is_alive() and time.monotonic() - t0 < 1
    assert isinstance(outcome[0], KeyboardInterrupt)


# -- proxies ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate (127.0.0.1, localhost) and a proxy certificate (127.0.0.1)."""
    d = tmp_path_factory.mktemp("pki")

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
        "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca")
    for name, san in (("server", "IP:127.0.0.1,DNS:localhost"), ("proxy", "IP:127.0.0.1")):
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "1", "-extfile", f"{name}.ext")
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
        "other.key", "-out", "other.crt", "-days", "1", "-subj", "/CN=other", "-addext", "subjectAltName=IP:127.0.0.1")

    def context(name):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(d / f"{name}.crt", d / f"{name}.key")
        return ctx
    return {"ca": str(d / "ca.crt"), "server": context("server"), "proxy": context("proxy"),
            "other": context("other")}


class Proxy:
    """A loopback proxy: `kind` http (CONNECT, or absolute-form requests forwarded), https (the
    same behind TLS) or socks5 (RFC 1928/1929). Records what arrives."""

    def __init__(self, kind, tls=None, credentials=None, refuse=False):
        self.kind, self.tls, self.credentials, self.refuse = kind, tls, credentials, refuse
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen = []
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, userinfo=""):
        scheme = {"http": "http", "https": "https", "socks5": "socks5"}[self.kind]
        return f"{scheme}://{userinfo}127.0.0.1:{self.port}"

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            if self.kind == "socks5":
                upstream = self._socks(conn)
            else:
                upstream = self._http(conn)
            if upstream is not None:
                self._pump(conn, upstream)
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def _http(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(1)
            if not chunk:
                return None
            head += chunk
        lines = head.decode().split("\r\n")
        self.seen.append(lines[:-2])
        if self.refuse:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return None
        method, target, _ = lines[0].split(" ")
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host.strip("[]"), int(port)))
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            return upstream
        host = target.split("/")[2]
        h, port = host.rsplit(":", 1)
        upstream = socket.create_connection((h, int(port)))
        path = "/" + target.split("/", 3)[3]
        upstream.sendall((f"{method} {path} HTTP/1.1\r\n" + "\r\n".join(lines[1:])).encode())
        return upstream

    def _socks(self, conn):
        def exactly(n):
            data = b""
            while len(data) < n:
                piece = conn.recv(n - len(data))
                if not piece:
                    raise OSError("closed")
                data += piece
            return data
        version, count = exactly(2)
        methods = list(exactly(count))
        record = {"methods": methods}
        self.seen.append(record)
        if self.credentials is not None or (self.refuse and 2 in methods):
            conn.sendall(b"\x05\x02")
            _, ulen = exactly(2)
            user = exactly(ulen)
            plen = exactly(1)[0]
            record["auth"] = (user, exactly(plen))
            ok = self.credentials is None or record["auth"] == self.credentials
            conn.sendall(b"\x01\x00" if ok else b"\x01\x01")
            if not ok:
                return None
        else:
            conn.sendall(b"\x05\x00")
        _, cmd, _, kind = exactly(4)
        if kind == 3:
            host = exactly(exactly(1)[0]).decode()
        else:
            host = socket.inet_ntop(socket.AF_INET if kind == 1 else socket.AF_INET6, exactly(4 if kind == 1 else 16))
        port = int.from_bytes(exactly(2), "big")
        record["target"] = (kind, host, port)
        if self.refuse:
            conn.sendall(b"\x05\x05\x00\x01" + bytes(6))
            return None
        upstream = socket.create_connection((host, port))
        conn.sendall(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")
        return upstream

    def _pump(self, conn, upstream):
        def copy(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        threading.Thread(target=copy, args=(upstream, conn), daemon=True).start()
        copy(conn, upstream)

    def close(self):
        self.listener.close()


@pytest.fixture
def proxies():
    made = []

    def make(*args, **kw):
        made.append(Proxy(*args, **kw))
        return made[-1]
    yield make
    for p in made:
        p.close()


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_an_http_proxy_tunnels_to_an_https_server_with_connect(peer, proxies, pki, tmp_path):
    server = peer(tls=pki["server"])
    proxy = proxies("http")
    c = client(tmp_path, server.url, ca=pki["ca"], proxy=proxy.url("us%40er:p%3Ass@"))
    assert ours(c, "/a") == ("ok", "B") and ours(c, "/b") == ("ok", "B")
    assert proxy.seen == [[f"CONNECT 127.0.0.1:{server.port} HTTP/1.1", f"Host: 127.0.0.1:{server.port}",
                           "User-Agent: Go-http-client/1.1", f"Proxy-Authorization: {basic('us@er', 'p:ss')}"]]
    assert [h.split("\r\n")[0] for h in server.heads] == ["GET /a HTTP/1.1", "GET /b HTTP/1.1"]
    assert not any("Proxy-Authorization" in h for h in server.heads)


def test_an_http_proxy_gets_absolute_form_requests_for_an_http_server(peer, proxies, tmp_path):
    server = peer()
    proxy = proxies("http")
    c = client(tmp_path, server.url, proxy=proxy.url("u:p@"))
    assert ours(c, "/a") == ("ok", "B")
    assert proxy.seen[0][0] == f"GET http://127.0.0.1:{server.port}/a HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}" in proxy.seen[0] and f"Proxy-Authorization: {basic('u', 'p')}" in \
        proxy.seen[0]


def test_a_proxy_that_refuses_the_tunnel_is_one_line(proxies, pki, tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))

    def refuse():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        time.sleep(1)
        conn.close()
    threading.Thread(target=refuse, daemon=True).start()
    c = client(tmp_path, "https://127.0.0.1:1", ca=pki["ca"], proxy=f"http://127.0.0.1:{listener.getsockname()[1]}")
    kind, line = ours(c, "/a")
    listener.close()
    assert kind == "error" and "407 Proxy Authentication Required" in line and "\n" not in line


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_a_socks5_proxy_is_sent_the_host_name_and_the_credentials(peer, proxies, pki, tmp_path, monkeypatch, scheme):
    """socks5 from the cluster's proxy-url; socks5h only from the environment (kubectl refuses it
    in proxy-url: client-go clientcmd's parseProxyURL takes http, https and socks5)."""
    server = peer(tls=pki["server"])
    proxy = proxies("socks5", credentials=(b"al ice", b"s3:cret"))
    url = proxy.url("al%20ice:s3%3Acret@").replace("socks5://", f"{scheme}://")
    for k in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(k, raising=False)
    if scheme == "socks5h":
        monkeypatch.setenv("HTTPS_PROXY", url)      # localhost is proxied only when written in other case
    host = "LOCALHOST" if scheme == "socks5h" else "localhost"
    c = client(tmp_path, f"https://{host}:{server.port}", ca=pki["ca"], proxy=None if scheme == "socks5h" else url)
    assert ours(c, "/a") == ("ok", "B")
    assert proxy.seen == [{"methods": [0, 2], "auth": (b"al ice", b"s3:cret"), "target": (3, host, server.port)}]
    assert server.heads[0].split("\r\n")[1] == f"Host: {host}:{server.port}"


def test_a_socks5_proxy_without_credentials_and_an_ip_address(peer, proxies, tmp_path):
    server = peer()
    proxy = proxies("socks5")
    c = client(tmp_path, server.url, proxy=proxy.url())
    assert ours(c, "/a") == ("ok", "B")
    assert proxy.seen == [{"methods": [0], "target": (1, "127.0.0.1", server.port)}]


def test_a_socks5_proxy_refusing_the_password_is_one_line(proxies, tmp_path):
    proxy = proxies("socks5", credentials=(b"u", b"right"))
    c = client(tmp_path, "http://127.0.0.1:1", proxy=proxy.url("u:wrong@"))
    kind, line = ours(c, "/a")
    assert kind == "error" and "refused the username and password" in line and "wrong" not in line


def test_an_https_proxy_is_verified_with_the_clusters_tls_config_then_tunnels_tls_inside(
        peer, proxies, pki, tmp_path):
    """transport.go dialConn: TLS to an https proxy uses the Transport's TLS config (the
    cluster's CA), named as the proxy; then CONNECT; then TLS to the server inside it."""
    server = peer(tls=pki["server"])
    proxy = proxies("https", tls=pki["proxy"])
    c = client(tmp_path, server.url, ca=pki["ca"], proxy=proxy.url())
    assert ours(c, "/a") == ("ok", "B") and ours(c, "/b") == ("ok", "B")
    assert proxy.seen[0][0] == f"CONNECT 127.0.0.1:{server.port} HTTP/1.1" and len(proxy.seen) == 1


def test_through_an_https_proxy_an_answer_that_ends_with_the_connection_is_read_whole(peer, proxies, pki, tmp_path):
    server = peer({"/close": (OK + b"Connection: close\r\n\r\n" + b"x" * 100000, True, None)}, tls=pki["server"])
    proxy = proxies("https", tls=pki["proxy"])
    c = client(tmp_path, server.url, ca=pki["ca"], proxy=proxy.url())
    assert ours(c, "/close") == ("ok", "x" * 100000) and ours(c, "/b") == ("ok", "B")
    assert server.accepted == 2


def test_an_https_proxy_for_an_http_server_is_verified_without_the_clusters_ca(peer, proxies, pki, tmp_path):
    """For an http:// server kubectl reads no server identification at all (client-go
    clientcmd/client_config.go ClientConfig: only `if restclient.IsConfigTransportTLS`), so an https
    proxy is verified against the system roots alone, which do not know the test CA."""
    server = peer()
    proxy = proxies("https", tls=pki["proxy"])
    c = client(tmp_path, server.url, ca=pki["ca"], proxy=proxy.url("u:p@"))
    kind, line = ours(c, "/a")
    assert kind == "error" and "not trusted" in line and "\n" not in line
    assert proxy.seen == [] and server.accepted == 0


def test_an_https_proxy_the_clusters_ca_does_not_trust_is_one_line(peer, proxies, pki, tmp_path):
    server = peer(tls=pki["server"])
    proxy = proxies("https", tls=pki["other"])
    c = client(tmp_path, server.url, ca=pki["ca"], proxy=proxy.url())
    kind, line = ours(c, "/a")
    assert kind == "error" and "not trusted" in line and "\n" not in line
    assert proxy.seen == [] and server.accepted == 0


def test_an_unsupported_proxy_scheme_is_one_line(tmp_path):
    with pytest.raises(PluginError, match="proxy-url has the unsupported scheme 'ftp'"):
        client(tmp_path, "http://127.0.0.1:1", proxy="ftp://127.0.0.1:21")


# -- what a proxy receives, from kubectl and from the plugin ----------------------------------------

@pytest.mark.parametrize("kind, server", [("http", "https://localhost:{port}"), ("http", "http://localhost:{port}"),
                                          ("socks5", "https://localhost:{port}"),
                                          ("socks5h-env", "https://10.1.2.3:{port}")],
                         ids=["http-connect", "http-absolute-form", "socks5", "socks5h-env-ip"])
def test_a_proxy_receives_from_the_plugin_what_it_receives_from_kubectl(proxies, tmp_path, monkeypatch, pinned_kubectl, kind,
                                                                        server):
    """The same kubeconfig (a proxy-url with userinfo; socks5h from HTTPS_PROXY: kubectl refuses
    it in a proxy-url) for both; the proxy records the first thing each sends, then refuses."""
    kubectl = pinned_kubectl
    proxy = proxies("socks5" if kind.startswith("socks") else "http", refuse=True)
    url = proxy.url("us%40er:p%3Ass@").replace("socks5://", f"{kind.split('-')[0]}://")
    server = server.format(port=1)
    user = {"token": "t0ken"}
    from_env = kind.endswith("-env")
    path = kubeconfig(tmp_path, server, proxy=None if from_env else url, user=user)
    config = json.loads(open(path).read())
    if server.startswith("https"):
        config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    with open(path, "w") as f:
        json.dump(config, f)
    env = dict(os.environ, KUBECACHEDIR=str(tmp_path / "cache"))
    for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy", "KUBECONFIG"):
        env.pop(k, None)
        monkeypatch.delenv(k, raising=False)
    if from_env:
        env["HTTPS_PROXY"] = url
        monkeypatch.setenv("HTTPS_PROXY", url)
    p = subprocess.run([kubectl, "--kubeconfig", path, "get", "--raw", "/x"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode != 0 and proxy.seen, p.stderr
    theirs = proxy.seen[0]
    del proxy.seen[:]
    c = kube.Client(Connection(kubeconfig=path, request_timeout="5s"))
    assert ours(c, "/x")[0] == "error" and proxy.seen
    mine = proxy.seen[0]
    if kind == "http" and server.startswith("https"):
        assert mine == theirs       # CONNECT, Host, User-Agent, Proxy-Authorization: all of it
    elif kind == "http":
        fields = lambda lines: [lines[0]] + sorted(ln for ln in lines if ln.startswith(("Host:", "Proxy-Auth")))
        assert fields(mine) == fields(theirs)
    else:
        assert mine == theirs       # the methods offered, the username and password, the target


@pytest.mark.parametrize("cert", ["proxy", "other"])
def test_an_https_proxy_is_trusted_by_the_clusters_ca_as_kubectl_trusts_it(proxies, pki, tmp_path, monkeypatch, cert,
                                                                            pinned_kubectl):
    """kubectl verifies an https:// proxy with the cluster's own TLS config (its CA): a proxy
    certificate that CA signed gets the CONNECT, another does not; the plugin does the same."""
    kubectl = pinned_kubectl
    proxy = proxies("https", tls=pki[cert], refuse=True)
    path = kubeconfig(tmp_path, "https://localhost:1", ca=pki["ca"], proxy=proxy.url("u:p@"), user={"token": "t"})
    env = dict(os.environ, KUBECACHEDIR=str(tmp_path / "cache"))
    for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "KUBECONFIG"):
        env.pop(k, None)
        monkeypatch.delenv(k, raising=False)
    p = subprocess.run([kubectl, "--kubeconfig", path, "get", "--raw", "/x"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode != 0
    theirs, proxy.seen[:] = list(proxy.seen), []
    kind, line = ours(kube.Client(Connection(kubeconfig=path, request_timeout="5s")), "/x")
    assert kind == "error" and "\n" not in line
    assert proxy.seen[:1] == theirs[:1]
    assert bool(theirs) == (cert == "proxy"), p.stderr


# -- the server URL as Go reads it, held to kubectl ------------------------------------------------

@pytest.mark.parametrize("host,prefix", [("[::ffff:127.0.0.1]", "/%7Eprefix"), ("127.0.0.1", "/a%20b/../c!(x)")])
def test_the_request_line_and_the_certificate_check_are_kubectls(peer, pki, tmp_path, monkeypatch, host, prefix,
                                                                 pinned_kubectl):
    """A certificate for IP 127.0.0.1 is good for [::ffff:127.0.0.1] (crypto/x509 verify.go
    VerifyHostname compares with net.IP.Equal); the prefix is sent as rest/request.go URL builds
    it (path.Join of the decoded Path, written by url.URL.EscapedPath): kubectl and the plugin
    send the same request line."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = peer(tls=pki["server"])
    path = kubeconfig(tmp_path, f"https://{host}:{server.port}{prefix}", ca=pki["ca"])
    p = subprocess.run([pinned_kubectl, "--kubeconfig", path, "get", "--raw", "/x"], capture_output=True,
                       text=True, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=30)
    assert p.returncode == 0, p.stderr
    theirs = server.heads[-1].split("\r\n")[0]
    assert ours(kube.Client(Connection(kubeconfig=path, request_timeout="5s")), "/x") == ("ok", "B")
    assert server.heads[-1].split("\r\n")[0] == theirs


def test_go_escape_path_and_ip_parsing():
    # url.URL{Path: p}.EscapedPath(), net.ParseIP (go1 of kubectl v1.37.2, run by hand)
    assert gourl.go_escape_path("/~a b!'()*$&+,;=:@%") == "/~a%20b%21%27%28%29*$&+,;=:@%25"
    assert gourl.go_ip("127.000.000.001") is None and gourl.go_ip("127.0.0.1") is not None
    assert gourl.go_ip("fe80::1%eth0") is not None and gourl.go_ip("0x7f.1") is None
    with pytest.raises(ValueError, match='invalid URL escape "%zz"'):
        gourl.go_unescape("/%zz")
